"""nodecli.cli.exporter's parts in process (issue 33 item 2: its mutation run): what one
refresh asks a node and counts (over HTTPS to the emulator), the page made from the
snapshots, and /metrics served over a real socket by MetricsServer with snapshots the
test holds (a refresh it ends when it wants: no timing window). The exporter as a whole
process is in tests/test_exporter*.py."""

from __future__ import annotations

import socket
import time
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from nodecli.http.client import Auth, open_client
from nodecli.node.health import CRITICAL, OK, WARNING, Check, Thresholds

# The server's loop has no stop but the end of the process: the tests end it by
# cancelling its tasks, which its thread reports as an exception.
pytestmark = pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnhandledThreadExceptionWarning")


def _admin(emulator):
    return open_client(emulator.endpoint(Auth("basic", username="admin",
                                              password="admin-pass"), max_attempts=1))


# -- NodeProbe: one refresh of one node -------------------------------------------------


def test_a_probe_counts_each_event_once_under_its_most_specific_type(emulator, log):
    from nodecli.cli.exporter import NodeProbe

    with _admin(emulator) as client:
        probe = NodeProbe({"emu": client}, {}, {})
        assert probe.event_counts() == {"emu": {}}
        first = probe("emu")
        assert first["reached"] is True and first["active"] == []
        assert first["checks"][0].name == "reachable"
        assert probe.event_counts() == {"emu": {}}  # counting starts with the exporter
        log.append({"user_id": "a", "types": ["upload.started", "transfer.started"],
                    "data": {}})
        log.append({"user_id": "a", "types": ["transfer.ended", "download.ended"],
                    "data": {}})
        log.append({"user_id": "a", "types": ["file.created"], "data": {}})
        probe("emu")
        assert probe.event_counts() == {"emu": {"upload.started": 1, "download.ended": 1,
                                                "file.created": 1}}
        log.append({"user_id": "a", "types": ["file.created"], "data": {}})
        probe("emu")  # added to what was counted, from where the last refresh stopped
        assert probe.event_counts() == {"emu": {"upload.started": 1, "download.ended": 1,
                                                "file.created": 2}}
        counts = probe.event_counts()
        counts["emu"]["file.created"] = 99  # a copy: the page cannot change the counters
        assert probe.event_counts()["emu"]["file.created"] == 2


def test_a_refresh_that_cannot_read_the_events_keeps_the_counts_and_its_place(emulator,
                                                                             log):
    from nodecli.cli.exporter import NodeProbe
    from nodecli.emulator.server import Reply

    with _admin(emulator) as client:
        probe = NodeProbe({"emu": client}, {}, {})
        probe("emu")
        log.append({"user_id": "a", "types": ["file.created"], "data": {}})
        probe("emu")
        log.append({"user_id": "a", "types": ["file.deleted"], "data": {}})
        # the health check's GET /events, then the count's: both refused
        log.push_reply(*[Reply(500, {"error": {"code": 500, "reason": "down"}})] * 2)
        answer = probe("emu")
        assert answer["reached"] is True
        assert probe.event_counts() == {"emu": {"file.created": 1}}
        probe("emu")  # the event is counted once the node answers again, and only once
        assert probe.event_counts() == {"emu": {"file.created": 1, "file.deleted": 1}}


def test_a_node_not_reached_is_asked_nothing_more(emulator, log, served):
    from nodecli.cli.exporter import NodeProbe

    with _admin(emulator) as client:
        probe = NodeProbe({"emu": client}, {}, {})
        probe("emu")
        log.append({"user_id": "a", "types": ["file.created"], "data": {}})
        served.clear()
        emulator.faults.path_prefix = "/info"
        emulator.faults.push("500")  # the health check's GET /info fails
        answer = probe("emu")
        assert answer["reached"] is False and answer["active"] is None
        assert answer["checks"][0].name == "reachable"
        assert answer["checks"][0].state == CRITICAL
        assert [line.split()[2].split("?")[0] for line in served] == ["/info"]
        assert probe.event_counts() == {"emu": {}}
        emulator.faults.clear()
        assert probe("emu")["reached"] is True
        assert probe.event_counts() == {"emu": {"file.created": 1}}  # not lost


def test_a_probe_reads_the_active_transfers_or_says_none(emulator):
    from nodecli.cli.exporter import NodeProbe
    from nodecli.emulator.transfers import book_of

    book = book_of(emulator.state)
    book.seconds = 3600
    book.start("alice", None, {"target_rate_kbps": 1000})
    book.start("bob", None, {"target_rate_kbps": 1000}).cancelled = time.time()  # ended
    with _admin(emulator) as client:
        probe = NodeProbe({"emu": client}, {}, {})
        active = probe("emu")["active"]
        assert [t["status"] for t in active] == ["running"]
        emulator.faults.path_prefix = "/ops/transfers"
        emulator.faults.push("500", "500")  # the health check's read, then the list's
        answer = probe("emu")
        assert answer["reached"] is True and answer["active"] is None


def test_a_probe_uses_the_nodes_own_thresholds_and_local_key(emulator):
    from nodecli.cli.exporter import NodeProbe

    strict = Thresholds()
    strict.warn["failed"] = 0.0  # no failed transfer is already a warning
    with _admin(emulator) as client:
        states = {n: {c.name: c.state for c in NodeProbe({n: client}, {}, t)(n)["checks"]}
                  for n, t in (("own", {"own": strict}), ("none", {"other": strict}))}
    assert states["own"]["failed transfers"] == WARNING
    assert states["none"]["failed transfers"] == OK
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.tokens.keys import key_fingerprint

    mine = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    pem = mine.public_bytes(serialization.Encoding.PEM,
                            serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    emulator.state.create_access_key("admin", {"id": "ak1", "secret": "ak1-secret",
                                               "storage": {"type": "local", "path": "/"},
                                               "token_verification_key": pem})
    auth = Auth("basic", username="ak1", password="ak1-secret", access_key="ak1")
    with open_client(emulator.endpoint(auth, max_attempts=1)) as client:
        probe = NodeProbe({"ak": client, "other": client}, {"ak": mine}, {})
        checks = {n: {c.name: c for c in probe(n)["checks"]} for n in ("ak", "other")}
    # the node's key is looked up with the profile's access key, against its local key
    assert (checks["ak"]["verification key"].state,
            checks["ak"]["verification key"].reason) == (
        OK, f"ak1: {key_fingerprint(mine)} matches the local key")
    assert checks["other"]["verification key"].reason == "no local key pair for ak1"


# -- FleetCollector: the page from the snapshots ------------------------------------------


def _page(view: dict, counts: dict | None = None, within: float = 7.5) -> str:
    from prometheus_client import CollectorRegistry, generate_latest

    from nodecli.cli.exporter import FleetCollector

    snapshots = SimpleNamespace(view=lambda: view, within=within)
    probe = SimpleNamespace(event_counts=lambda: counts or {})
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(snapshots, probe))
    return generate_latest(registry).decode()


def test_the_page_says_each_nodes_state_age_transfers_and_events():
    from nodecli.cli.health import VALUE_GAUGES
    from nodecli.errors import RemoteError

    fine = {"reached": True, "active": [{"current_rate_kbps": 250},
                                        {"current_rate_kbps": 1000},
                                        {"current_rate_kbps": True},  # no rate
                                        {"current_rate_kbps": 2.5}, {}],
            "checks": [Check("reachable", OK, "fine"),
                       Check("clock", WARNING, "3 s ahead", 3.0, "s")]}
    down = {"reached": False, "active": None,
            "checks": [Check("reachable", CRITICAL, "refused")]}
    late = {"reached": True, "active": [],
            "checks": [Check("reachable", OK, "fine"), Check("clock", OK, "0 s", 0.25)]}
    view = {"a": (fine, 1.23449, False), "b": (down, 2.0, False), "c": (late, 99.0, True),
            "d": (RemoteError("x" * 300), None, False), "e": (None, None, True)}
    page = _page(view, {"a": {"z.last": 2, "file.created": 1}, "b": {}})
    # (the help of the checks' value gauges is cli.health's: left out here)
    gauges = tuple(f"# HELP {name} " for name, _ in VALUE_GAUGES.values())
    page = "".join(line for line in page.splitlines(keepends=True)
                   if not line.startswith(gauges))
    assert page == """\
# HELP nodecli_up 1 when the node's last answer came in time and it was reached
# TYPE nodecli_up gauge
nodecli_up{node="a"} 1.0
nodecli_up{node="b"} 0.0
nodecli_up{node="c"} 0.0
nodecli_up{node="d"} 0.0
nodecli_up{node="e"} 0.0
# HELP nodecli_scrape_age_seconds Age of the node's values (its last complete answer)
# TYPE nodecli_scrape_age_seconds gauge
nodecli_scrape_age_seconds{node="a"} 1.234
nodecli_scrape_age_seconds{node="b"} 2.0
nodecli_scrape_age_seconds{node="c"} 99.0
# HELP nodecli_health_state Check state: 0 ok, 1 warning, 2 critical, 3 unknown
# TYPE nodecli_health_state gauge
nodecli_health_state{check="reachable",node="a"} 0.0
nodecli_health_state{check="clock",node="a"} 1.0
nodecli_health_state{check="reachable",node="b"} 2.0
nodecli_health_state{check="reachable",node="c"} 2.0
nodecli_health_state{check="clock",node="c"} 0.0
nodecli_health_state{check="reachable",node="d"} 2.0
nodecli_health_state{check="reachable",node="e"} 2.0
# TYPE nodecli_certificate_days_left gauge
# TYPE nodecli_clock_offset_seconds gauge
nodecli_clock_offset_seconds{node="a"} 3.0
nodecli_clock_offset_seconds{node="c"} 0.25
# TYPE nodecli_failed_transfers_last_hour gauge
# TYPE nodecli_token_seconds_left gauge
# HELP nodecli_active_transfers Running transfers
# TYPE nodecli_active_transfers gauge
nodecli_active_transfers{node="a"} 5.0
nodecli_active_transfers{node="c"} 0.0
# HELP nodecli_transfer_rate_kbps Aggregate current rate of the running transfers
# TYPE nodecli_transfer_rate_kbps gauge
nodecli_transfer_rate_kbps{node="a"} 1250.0
nodecli_transfer_rate_kbps{node="c"} 0.0
# HELP nodecli_events_total Events by their most specific type since the exporter started
# TYPE nodecli_events_total counter
nodecli_events_total{node="a",type="file.created"} 1.0
nodecli_events_total{node="a",type="z.last"} 2.0
"""
    # (the reasons, "no answer within 7.5 s" for a late node, are not on the page)


# -- MetricsServer: /metrics over a real socket ------------------------------------------


class Snaps:
    """Snapshots as the server sees them: an age the test sets, refreshes it ends."""

    def __init__(self, age: float | None, instant: bool = False) -> None:
        self._age, self.within, self.instant = age, 60.0, instant
        self.refreshes: list[Future] = []
        self.pending: Future | None = None

    def age(self) -> float | None:
        return self._age

    def refresh(self) -> Future:
        if self.pending is None or self.pending.done():
            self.pending = Future()
            if self.instant:  # a refresh done as soon as it is asked for
                self.pending.set_result(None)
            self.refreshes.append(self.pending)
        return self.pending

    def view(self) -> dict:
        return {}


@pytest.fixture
def serve(tmp_path, monkeypatch):
    """Start MetricsServer(snapshots, within, max_age) on a free port (its page from
    ``collector``, by default one line); stopped after."""
    import asyncio

    from prometheus_client import CollectorRegistry
    from prometheus_client.core import GaugeMetricFamily

    from nodecli.cli.exporter import MetricsServer

    note = tmp_path / "note"
    monkeypatch.setenv("NODECLI_TEST_SCRAPE_NOTE", str(note))
    servers: list = []

    class One:
        def collect(self):
            g = GaugeMetricFamily("nodecli_up", "up", labels=["node"])
            g.add_metric(["n"], 1)
            return [g]

    def start(snapshots, within: float = 60.0, max_age: float = 0.0, port: int = 0,
              collector=None):
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector or One())
        server = MetricsServer(registry, snapshots, within, max_age)
        server.start("127.0.0.1", port)
        servers.append(server)
        server.note_file = note
        return server

    yield start
    for server in servers:
        for f in (server.snapshots.refreshes if isinstance(server.snapshots, Snaps) else []):
            f.done() or f.set_result(None)

        def cancel_all() -> None:
            for task in asyncio.all_tasks():
                task.cancel()

        server.loop.call_soon_threadsafe(cancel_all)
    import threading

    for thread in threading.enumerate():
        if thread.name == "nodecli-metrics":
            thread.join(60)


def _ask(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as c:
        c.sendall(request)
        return _read_all(c)


def _read_all(c: socket.socket) -> bytes:
    got = b""
    while chunk := c.recv(65536):
        got += chunk
    return got


def _notes(server) -> list[str]:
    return server.note_file.read_text().splitlines() if server.note_file.exists() else []


TEXT = "text/plain; version=0.0.4; charset=utf-8"


def test_metrics_are_served_to_get_and_head_and_nothing_else(serve, caplog):
    snaps = Snaps(age=5.0)
    server = serve(snaps, max_age=30.0)
    port = server.port
    body = (b'# HELP nodecli_up up\n# TYPE nodecli_up gauge\nnodecli_up{node="n"} 1.0\n')
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: {TEXT}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    assert _ask(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == head + body
    assert _ask(port, b"GET /metrics?name[]=up HTTP/1.1\r\n\r\n") == head + body
    assert _ask(port, b"GET /metrics?a=1?b HTTP/1.1\r\n\r\n") == head + body
    assert _ask(port, b"HEAD /metrics HTTP/1.1\r\n\r\n") == head  # its length, no body
    wrong = (b"HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\n"
             b"Content-Length: 13\r\nConnection: close\r\n\r\nGET /metrics\n")
    for request in (b"POST /metrics HTTP/1.1\r\n\r\n", b"GET /metrics\r\n\r\n",
                    b"GET /metrics HTTP/1.1 x\r\n\r\n", b"get /metrics HTTP/1.1\r\n\r\n",
                    b"GET  /metrics HTTP/1.1\r\n\r\n"):
        assert _ask(port, request) == wrong, request
    elsewhere = _ask(port, b"GET /metrics/ HTTP/1.1\r\n\r\n")
    assert elsewhere == (b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
                         b"Content-Length: 28\r\nConnection: close\r\n\r\n"
                         b"the metrics are at /metrics\n")
    assert _notes(server) == ["snapshot"] * 4  # only the four pages: each answered at once
    # every connection ended without an error (asyncio logs one a handler raises)
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []


def test_the_openmetrics_format_when_the_scraper_accepts_it(serve):
    server = serve(Snaps(age=0.0), max_age=30.0)
    for name, before in (("Accept", b"Host: x\r\n"), ("ACCEPT", b"Host: x\r\n"),
                         (" accept ", b""), ("Accept", b"")):  # (the first header too)
        got = _ask(server.port, b"GET /metrics HTTP/1.1\r\n" + before + name.encode() +
                   b":  application/openmetrics-text; version=1.0.0 \r\n\r\n")
        head, _, body = got.partition(b"\r\n\r\n")
        assert b"Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8" \
            in head, name
        assert body.endswith(b"# EOF\n")


def test_a_young_snapshot_is_served_at_once_and_starts_a_refresh(serve):
    snaps = Snaps(age=29.5)
    server = serve(snaps, max_age=30.0)
    assert b" 200 OK" in _ask(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")
    assert _notes(server) == ["snapshot"]
    done: Future = Future()  # (the refresh starts on the loop, before this)
    server.loop.call_soon_threadsafe(done.set_result, None)
    done.result(timeout=60)
    assert len(snaps.refreshes) == 1 and not snaps.refreshes[0].done()


@pytest.mark.parametrize("age", [30.0, None])
def test_a_snapshot_max_age_old_or_none_waits_for_the_refresh(serve, age):
    snaps = Snaps(age=age)
    server = serve(snaps, max_age=30.0)
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as c:
        c.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        _wait_for_notes(server, ["waiting"])
        c.settimeout(0)
        with pytest.raises(BlockingIOError):
            c.recv(1)  # nothing before the refresh is done
        snaps.refreshes[0].set_result(None)
        c.settimeout(60)
        assert b" 200 OK" in _read_all(c)
    assert len(snaps.refreshes) == 1


def test_a_refresh_already_done_is_not_waited_for_and_not_said(serve):
    snaps = Snaps(age=None, instant=True)
    server = serve(snaps, max_age=30.0)
    assert b" 200 OK" in _ask(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")
    assert _notes(server) == []


def test_a_scrape_that_gives_up_leaves_the_refresh_to_the_others(serve):
    snaps = Snaps(age=None)
    server = serve(snaps, within=0.2, max_age=30.0)  # a refresh that never ends
    assert b" 200 OK" in _ask(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")
    assert len(snaps.refreshes) == 1
    assert not snaps.refreshes[0].cancelled()  # still under way for the next scrape


def _wait_for_notes(server, want: list[str]) -> None:
    import time

    deadline = time.monotonic() + 60
    while _notes(server) != want:
        assert time.monotonic() < deadline, _notes(server)
        time.sleep(0.01)


def test_connections_beyond_the_limit_are_closed_at_once(serve):
    from nodecli.cli.exporter import MAX_CONNECTIONS

    snaps = Snaps(age=None)
    server = serve(snaps, max_age=30.0)
    held: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS):  # each waits for the refresh the test holds
            c = socket.create_connection(("127.0.0.1", server.port), timeout=60)
            c.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
            held.append(c)
        _wait_for_notes(server, ["waiting"] * MAX_CONNECTIONS)
        for _ in range(2):  # one too many, and again once it is counted out
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as extra:
                extra.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
                try:  # closed unanswered (its request unread: maybe a reset)
                    assert _read_all(extra) == b""
                except ConnectionResetError:
                    pass
        snaps.refreshes[0].set_result(None)
        for c in held:
            assert b" 200 OK" in _read_all(c)
    finally:
        for c in held:
            c.close()
    # every connection closed is counted out: the next ones are served again
    snaps.instant = True
    for _ in range(2):
        assert b" 200 OK" in _ask(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")


def test_notes_and_the_file_clock(tmp_path):
    from nodecli.cli.exporter import _file_clock, _note

    note = tmp_path / "note"
    _note(None, "nothing")
    _note("", "nothing")
    assert not note.exists()
    _note(str(note), "waiting")
    _note(str(note), "snapshot")
    assert note.read_text() == "waiting\nsnapshot\n"
    clock = tmp_path / "clock"
    clock.write_text("1029.9990234375")
    assert _file_clock(str(clock)) == 1029.9990234375


def test_the_server_listens_on_the_port_given(serve):
    with socket.socket() as probe:  # a port the kernel says is free
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert serve(Snaps(age=None), port=port).port == port


def test_a_request_head_is_read_up_to_16_kib(serve):
    from nodecli.cli.exporter import MAX_HEAD

    server = serve(Snaps(age=0.0), max_age=30.0)
    start = b"GET /metrics HTTP/1.1\r\nX-Pad: "
    for blank_at, answered in ((MAX_HEAD, True), (MAX_HEAD + 1, False)):
        # the blank line that ends the head starts at byte blank_at
        head = start + b"a" * (blank_at - len(start)) + b"\r\n\r\n"
        assert head.index(b"\r\n\r\n") == blank_at
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as c:
            c.sendall(head)
            try:
                got = _read_all(c)
            except ConnectionResetError:  # cut with part of its head unread
                got = b""
        assert got.startswith(b"HTTP/1.1 200 OK\r\n") is answered, blank_at


def test_an_answer_the_scraper_does_not_take_is_given_up_and_its_place_freed(serve,
                                                                            monkeypatch):
    """A scraper that reads the status line of a page and then nothing more: the page
    (about 400 KiB) cannot be written past the socket buffers (the scraper's receive
    buffer and the server's send buffer set small), so the write is given up after the
    client's seconds (here 0.5 s instead of 5) and the connection counted out: with one
    place (MAX_CONNECTIONS 1 here), the next scrape is answered. The test waits for the
    first connection's handler to end (an event), not for a time; a write never given up
    leaves it waiting (60 s, then it fails)."""
    import threading

    from prometheus_client.core import GaugeMetricFamily

    from nodecli.cli import exporter

    monkeypatch.setattr(exporter, "CLIENT_SECONDS", 0.5)
    monkeypatch.setattr(exporter, "MAX_CONNECTIONS", 1)

    class Big:
        def collect(self):
            g = GaugeMetricFamily("nodecli_up", "up", labels=["node"])
            for n in range(6000):
                g.add_metric([f"node-{n:06d}-" + "x" * 40], 1)
            return [g]

    ended = threading.Event()
    handle = exporter.MetricsServer._client

    async def watched(self, reader, writer):
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        try:
            await handle(self, reader, writer)
        finally:
            ended.set()

    monkeypatch.setattr(exporter.MetricsServer, "_client", watched)
    server = serve(Snaps(age=0.0), max_age=30.0, collector=Big())
    stuck = socket.socket()
    try:
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.settimeout(60)
        stuck.connect(("127.0.0.1", server.port))
        stuck.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        got = b""
        while len(got) < 17:  # the answer has begun; then nothing more is read
            got += stuck.recv(17 - len(got))
        assert got == b"HTTP/1.1 200 OK\r\n"
        assert ended.wait(60), "the write to a scraper that reads nothing was never given up"
        ended.clear()
        answer = _ask(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b" 1.0\n")
        assert len(answer) > 400_000
    finally:
        stuck.close()
