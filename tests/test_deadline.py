"""One deadline per command (--deadline, NODECLI_DEADLINE) and the watchdog that holds a
request to it, over real sockets and real TLS: a node that accepts and never answers, and
one that drips its headers a byte at a time. What is asserted is what the server saw (a
request that never reached it, a connection closed long before its own end), never how
long something took."""

from __future__ import annotations

import json
import select
import socket
import ssl
import subprocess
import threading

import pytest

from nodecli.errors import RemoteError
from nodecli.http.client import Endpoint, open_client
from tests.conftest import nodecli_cmd, subprocess_env
from tests.scripted_server import ScriptedServer, Seen, certificates


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    return certificates(tmp_path_factory.mktemp("tls"))


class HungNode:
    """An HTTPS node that takes each request (TLS handshake done, request read) and never
    answers it; ``arrived`` is set at each request, ``targets`` are what reached it."""

    def __init__(self, certs: tuple[str, str, str]) -> None:
        self.release = threading.Event()
        self.arrived = threading.Condition()
        self.server = ScriptedServer(self._hang, tls=(certs[1], certs[2]))

    def _hang(self, seen: Seen) -> list[bytes]:
        with self.arrived:
            self.arrived.notify_all()
        self.release.wait(120)
        return []

    @property
    def targets(self) -> list[str]:
        return [s.target.split("?")[0] for s in self.server.seen]

    def wait_for(self, target: str, count: int = 1, timeout: float = 60) -> bool:
        with self.arrived:
            return self.arrived.wait_for(lambda: self.targets.count(target) >= count,
                                         timeout)

    def close(self) -> None:
        self.release.set()
        self.server.close()


@pytest.fixture
def hung(certs, monkeypatch, home):
    node = HungNode(certs)
    monkeypatch.setenv("NODECLI_CACERT", certs[0])
    monkeypatch.setenv("NODECLI_PASSWORD", "pw")
    try:
        yield node
    finally:
        node.close()


# -- one-shot commands: one deadline for everything they send -----------------------------------

def test_events_list_gets_one_deadline_for_info_and_events(hung, invoke):
    """/info takes the whole deadline: /events is never sent (per request, it would get a
    deadline of its own and reach the node)."""
    r = invoke("--deadline", "1s", "events", "list", "--url", hung.server.url(),
               "--user", "admin")
    assert r.exit_code == 6, r
    assert "within the command's deadline of 1 s (--deadline, NODECLI_DEADLINE)" in r.stderr
    assert "/events" not in hung.targets
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr


def test_nodecli_deadline_sets_it_and_the_flag_wins(hung, invoke):
    r = invoke("node", "info", "--url", hung.server.url(), "--user", "admin",
               env={"NODECLI_DEADLINE": "1s"})
    assert r.exit_code == 6 and "command's deadline of 1 s" in r.stderr, r
    r = invoke("--deadline", "2s", "node", "info", "--url", hung.server.url(), "--user",
               "admin", env={"NODECLI_DEADLINE": "1s"})
    assert r.exit_code == 6 and "command's deadline of 2 s" in r.stderr, r


def test_node_health_is_bounded_by_the_deadline(hung, invoke):
    r = invoke("--deadline", "1s", "node", "health", "-o", "nagios", "--url",
               hung.server.url(), "--user", "admin")
    assert r.exit_code == 2, r  # CRITICAL: the node did not answer within the deadline
    assert "command's deadline of 1 s" in r.stdout


@pytest.mark.parametrize("bad", ["0s", "abc", "5", "2w", "-1s", "1e400s"])
def test_a_bad_deadline_is_one_line_and_exit_2(invoke, home, bad):
    for args, env in (((f"--deadline={bad}",), None), ((), {"NODECLI_DEADLINE": bad})):
        r = invoke(*args, "user", "list", env=env)
        assert r.exit_code == 2, (bad, r)
        assert r.stderr.startswith("nodecli: error: --deadline (NODECLI_DEADLINE): ")
        assert len(r.stderr.strip().splitlines()) <= 2 and "Traceback" not in r.stderr


def test_the_deadline_bounds_at_exactly_one_second_and_a_week(invoke, home):
    for ok in ("1s", "1w", "168h"):
        assert invoke("--deadline", ok, "user", "list").exit_code == 0, ok
    assert invoke("--deadline", "604801s", "user", "list").exit_code == 2


# -- following commands: each request within the deadline --------------------------------------

def test_tail_follow_gives_each_request_the_deadline(hung, certs):
    """tail -f tries again after a request cut at the deadline: that request reaches the
    node (under one deadline for the whole run it would be cut before it is sent)."""
    proc = subprocess.Popen(
        nodecli_cmd("--deadline", "1s", "events", "tail", "-f", "--url", hung.server.url(),
                    "--user", "admin", "--interval", "0.1"),
        env=subprocess_env({"NODECLI_CACERT": certs[0], "NODECLI_PASSWORD": "pw"}),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert hung.wait_for("/events", count=2), hung.targets
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_transfer_watch_timeout_bounds_its_requests_and_exits_8(hung, certs):
    """Against a node that never answers, --timeout ends the watch (exit 8), not the
    deadline of 120 s (exit 6). The --timeout counts from the watch's start, before the
    first request is on its way: 4 s, not 1, so that a start on a machine loaded tenfold
    (a first loaded run saw no request within 1 s) still reaches the node first."""
    proc = subprocess.Popen(
        nodecli_cmd("transfer", "watch", "t1", "t2", "--timeout", "4s", "--url",
                    hung.server.url(), "--user", "admin"),
        env=subprocess_env({"NODECLI_CACERT": certs[0], "NODECLI_PASSWORD": "pw"}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 8, err
    assert err.strip() == ("nodecli: error: no answer from the node within --timeout "
                           "about: t1, t2")
    assert hung.targets == ["/ops/transfers/t1"]


# -- the watchdog: it watches the TLS socket, and again after it fired ---------------------------

class DripNode:
    """An HTTPS server that sends a status line, then a header one byte at a time (a byte
    every 0.1 s, ``total`` of them: its own end is far past the deadline), watching
    between bytes for the client to close. For each connection it records whether the
    client closed it before the server's end (``cut``) and how many bytes it had sent."""

    def __init__(self, certs: tuple[str, str, str], total: int = 200) -> None:
        self.total = total
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(certs[1], certs[2])
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.results: list[tuple[bool, int]] = []
        self.ended = threading.Condition()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self) -> str:
        return f"https://localhost:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, raw: socket.socket) -> None:
        cut, sent = False, 0
        try:
            conn = self.ctx.wrap_socket(raw, server_side=True)
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                request += chunk
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
            while sent < self.total:
                conn.sendall(b"a")
                sent += 1
                # the client's close makes the socket readable (EOF): wait for that or
                # for the next byte's turn
                if select.select([conn], [], [], 0.1)[0] and not conn.recv(1):
                    cut = True
                    break
                if self.stop.is_set():
                    return
            if not cut:
                conn.sendall(b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        except (OSError, ssl.SSLError):
            cut = True
        finally:
            raw.close()
            with self.ended:
                self.results.append((cut, sent))
                self.ended.notify_all()

    def wait_results(self, n: int) -> list[tuple[bool, int]]:
        with self.ended:
            self.ended.wait_for(lambda: len(self.results) >= n, timeout=120)
        return list(self.results)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def drip(certs):
    node = DripNode(certs)
    try:
        yield node
    finally:
        node.close()


def test_the_watchdog_cuts_a_dripping_https_server_at_the_deadline(drip, certs):
    """The client closes the TLS connection while the server still has most of its bytes
    to drip: the command ended because of the deadline, not because the server gave up."""
    ep = Endpoint(drip.url(), cacert=certs[0], deadline=1.0, read_timeout=5, max_attempts=1)
    with open_client(ep) as client, pytest.raises(RemoteError,
                                                  match=r"within the deadline of 1 s"):
        client.request("GET", "/info")
    [(cut, sent)] = drip.wait_results(1)
    assert cut and 0 < sent < drip.total, (cut, sent)


def test_the_watchdog_is_armed_again_after_it_fired(drip, certs):
    """The same client, a second dripping request after the first was cut: it is sent,
    the server starts to answer, and it is cut too."""
    ep = Endpoint(drip.url(), cacert=certs[0], deadline=1.0, read_timeout=5, max_attempts=1)
    with open_client(ep) as client:
        for _ in range(2):
            with pytest.raises(RemoteError, match=r"within the deadline of 1 s"):
                client.request("GET", "/info")
    results = drip.wait_results(2)
    assert [cut for cut, _ in results] == [True, True], results
    assert all(0 < sent < drip.total for _, sent in results), results


def test_a_one_shot_command_cuts_a_dripping_node_at_its_deadline(drip, certs, invoke,
                                                                monkeypatch, home):
    monkeypatch.setenv("NODECLI_CACERT", certs[0])
    r = invoke("--deadline", "1s", "api", "/info", "--url", drip.url(), "--user",
               "admin", env={"NODECLI_PASSWORD": "pw"})
    assert r.exit_code == 6 and "command's deadline of 1 s" in r.stderr, r
    results = drip.wait_results(1)
    assert all(cut and 0 < sent < drip.total for cut, sent in results), results


# -- transfer watch: its timeout and its failures ----------------------------------------------

@pytest.fixture
def book(emulator):
    from nodecli.emulator.transfers import book_of

    return book_of(emulator.state)


def test_a_failure_seen_with_a_timeout_exits_1(book, emulator, invoke, node_env):
    """One transfer failed, the other still runs when --timeout passes: the failure wins."""
    book.seconds = 600
    running = book.start("admin", None, {"remote_host": "demo"})
    book.fail_next = True
    failed = book.start("admin", None, {"remote_host": "demo"})
    failed.start -= 10_000
    failed.changed -= 10_000  # it failed long ago
    r = invoke("transfer", "watch", running.id, failed.id, "--timeout", "1s", "--interval",
               "0.2", env=node_env)
    assert r.exit_code == 1, r
    assert f"transfer {failed.id} failed: error 13" in r.stderr


@pytest.mark.parametrize(("timeout", "naps"), [(10.0, [3.0, 3.0, 3.0, 1.0]),
                                               (9.0, [3.0, 3.0, 3.0])])
def test_the_last_sleep_of_a_watch_ends_at_its_timeout(book, emulator, timeout, naps):
    """A clock that moves only when the watch sleeps: polls at 0, 3, 6, 9 and a last
    sleep of 1 to end at 10 s; at 9 s exactly (a multiple of the interval) no extra sleep."""
    from nodecli.http.client import Auth
    from nodecli.node.transfers import watch_transfers

    book.seconds = 600
    tid = book.start("admin", None, {"remote_host": "demo"}).id
    auth = Auth("basic", username="admin", password="admin-pass")
    now = [100.0]
    slept: list[float] = []

    def nap(s: float) -> None:
        slept.append(s)
        now[0] += s

    polls: list[float] = []  # the watch's time at each round of requests
    with open_client(emulator.endpoint(auth)) as client:
        last, timed_out = watch_transfers(client, [tid], interval=3.0, timeout=timeout,
                                          sleep=nap, clock=lambda: now[0],
                                          on_update=lambda _, at: polls.append(at))
    assert timed_out and last[tid]["status"] == "running"
    assert slept == naps
    assert sum(slept) == timeout
    assert polls == [sum(naps[:i]) for i in range(len(naps) + 1)]


def test_watch_json_of_a_timeout_still_says_what_was_seen(book, emulator, invoke, node_env):
    book.seconds = 600
    tid = book.start("admin", None, {"remote_host": "demo"}).id
    r = invoke("transfer", "watch", tid, "--timeout", "1s", "--interval", "0.3", "-o", "json",
               env=node_env)
    assert r.exit_code == 8, r
    assert json.loads(r.stdout)["status"] == "running"


# -- following commands outlive the deadline: each request has it ------------------------------

def test_a_transfer_watch_longer_than_the_deadline_ends_well(book, emulator, invoke,
                                                              node_env):
    """A transfer of 2 s watched with a deadline of 1 s: every poll is a request of its
    own (under one deadline for the whole watch, the polls after 1 s would be cut)."""
    book.seconds = 2.0
    tid = book.start("admin", None, {"remote_host": "demo"}).id
    r = invoke("--deadline", "1s", "transfer", "watch", tid, "--interval", "0.4",
               env=node_env)
    assert r.exit_code == 0, r
    assert "1 transfer(s) completed" in r.stderr


def test_an_operation_watch_longer_than_the_deadline_ends_well(emulator, invoke):
    from nodecli.emulator.operations import add_operation, mint_service_token

    # 7 polls 0.4 s apart outlast the deadline of 2 s; each request has the whole 2 s
    # (1 s was too little for one request on a loaded machine)
    token = mint_service_token(emulator.state, "u1", "user:all")
    op = add_operation(emulator.state, parent_id="100", polls=7)
    r = invoke("--deadline", "2s", "operations", "watch", op.id, "--workspace", "100",
               "--interval", "0.4", "-o", "json",
               env={"NODECLI_SERVICE_URL": emulator.url, "NODECLI_TOKEN": token})
    assert r.exit_code == 0, r
    assert json.loads(r.stdout)["status"] == "success"


def test_resolve_asks_a_person_without_spending_the_deadline(emulator):
    """The answer comes after the deadline of 1 s has passed since the first request
    (the test waits for that moment to be behind it): the PUT that follows still goes."""
    import re
    import sys
    import time

    import pexpect

    from nodecli.emulator.operations import add_operation, mint_service_token, service_state
    from tests.conftest import REPO_ROOT

    op = add_operation(emulator.state, status="stopped", folder_name="alpha",
                       parent_id="100")
    token = mint_service_token(emulator.state, "u1", "user:all")
    env = subprocess_env({"NODECLI_SERVICE_URL": emulator.url, "NODECLI_TOKEN": token,
                          "TERM": "xterm"})
    child = pexpect.spawn(sys.executable, ["-m", "nodecli", "--deadline", "1s", "operations",
                                           "resolve", "--workspace", "100", "--interval",
                                           "0.01"],
                          env=env, cwd=str(REPO_ROOT), encoding="utf-8", timeout=30,
                          dimensions=(40, 120))
    try:
        child.expect(re.escape("[u]se existing folder, [r]ename, re[t]ry, [s]kip: "))
        asked = time.monotonic()
        while time.monotonic() - asked < 1.5:  # the person thinks longer than the deadline
            time.sleep(0.1)
        child.sendline("u")
        child.expect(re.escape("Apply this choice to all remaining conflicts? [y/N]: "))
        child.sendline("n")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    assert service_state(emulator.state).put_bodies == [
        (op.id, {"use_existing": True, "retry": True, "apply_to_all": False})]


def test_a_proxy_that_never_answers_connect_is_bounded_by_the_deadline(invoke, home,
                                                                      certs):
    """The proxy takes the connection and never answers CONNECT: the watchdog cuts the
    proxy's connection at the command's deadline (not the read timeout of 30 s)."""
    proxy = socket.create_server(("127.0.0.1", 0))
    taken: list[socket.socket] = []
    took = threading.Event()

    def accept() -> None:
        try:
            conn, _ = proxy.accept()
        except OSError:
            return
        taken.append(conn)
        took.set()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        r = invoke("--deadline", "1s", "node", "info", "--url", "https://node.example:9092",
                   "--user", "admin",
                   env={"HTTPS_PROXY": f"http://127.0.0.1:{proxy.getsockname()[1]}",
                        "NODECLI_PASSWORD": "pw", "NODECLI_CACERT": certs[0]})
    finally:
        proxy.close()
        thread.join(timeout=10)
        for conn in taken:
            conn.close()
    assert took.is_set()
    assert r.exit_code == 6, r
    assert "no complete answer within the command's deadline of 1 s" in r.stderr, r


def test_the_exporter_gives_each_scrape_the_deadline(invoke, emulator, log, home):
    """Scrapes after the deadline has passed since the first still reach the node:
    events made then are counted (under one deadline for the whole run they never are).
    The deadline is 4 s, not 1: a refresh must fit in it on a loaded machine (a loaded
    run saw every refresh cut at 1 s, so nothing was ever counted)."""
    import time

    import httpx2

    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r.stderr
    from tests.test_exporter_snapshot import Exporter

    exporter = Exporter(home, "--all-nodes", before=("--deadline", "4s"))

    def events_counted() -> float | None:
        from prometheus_client.parser import text_string_to_metric_families

        try:
            text = httpx2.get(exporter.url, timeout=20).text
        except httpx2.TransportError:
            return None
        return sum(s.value for f in text_string_to_metric_families(text)
                   for s in f.samples if s.name == "nodecli_events_total")

    try:
        assert events_counted() == 0  # listening (it said so), and a first scrape answered
        first = time.monotonic()
        while time.monotonic() - first < 4.5:  # past the deadline of the first scrape
            time.sleep(0.1)
        log.generate(4, families=["file"])
        while events_counted() != 4:
            assert exporter.proc.poll() is None and time.monotonic() - first < 60, \
                "never counted"
            time.sleep(0.2)
    finally:
        exporter.stop()
