"""nodecli exporter as a real process over real sockets: scrapes answered from snapshots
(concurrent scrapes wait together for one refresh, never one behind another), half-open
clients cut and holding no thread, SIGTERM/SIGINT with scrapes waiting (exit 130, no
traceback), counters that only grow and count an event under its most specific type,
and the same gauges and states as node health -o prometheus."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from nodecli.emulator.server import Reply
from tests.conftest import nodecli_cmd, reap, subprocess_env
from tests.test_long_running import Bearer, bearer  # noqa: F401 - the fixture

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: exporter\r\n\r\n"


class Exporter:
    """``nodecli [BEFORE] exporter`` on a free port; the port read from its start-up line."""

    def __init__(self, home: Path, *args: str, note: Path | None = None,
                 before: tuple[str, ...] = ()) -> None:
        self.stopped: tuple[int, str] | None = None
        extra = {"NODECLI_HOME": str(home)}
        if note is not None:
            extra["NODECLI_TEST_SCRAPE_NOTE"] = str(note)
        self.proc = subprocess.Popen(nodecli_cmd(*before, "exporter", "--listen",
                                                 "127.0.0.1:0", *args),
                                     env=subprocess_env(extra), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        try:
            # the start-up line comes once it listens (EOF at once if it died): 30 s is
            # only a ceiling for a hung child
            self.first = self._line(30)
            assert "/metrics" in self.first, self.first
        except BaseException:
            reap(self.proc)
            raise
        self.port = int(self.first.split("http://127.0.0.1:")[1].split("/")[0])
        self.url = f"http://127.0.0.1:{self.port}/metrics"

    def _line(self, within: float) -> str:
        assert self.proc.stderr is not None
        ready, _, _ = select.select([self.proc.stderr], [], [], within)
        assert ready, "the exporter said nothing"
        return self.proc.stderr.readline().decode()

    def scrape(self) -> dict[tuple[str, tuple], float]:
        from prometheus_client.parser import text_string_to_metric_families

        r = httpx2.get(self.url, timeout=120)
        assert r.status_code == 200
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in text_string_to_metric_families(r.text) for s in f.samples}

    def stop(self) -> tuple[int, str]:
        if self.stopped is not None:
            return self.stopped
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stderr is not None
        rest = self.proc.stderr.read().decode()
        self.proc.stderr.close()
        self.stopped = code, self.first + rest
        return self.stopped


def _add(invoke, name: str, url: str) -> None:
    # (--no-check: some of these nodes never answer; the exporter is what is tested)
    r = invoke("node", "add", name, "--url", url, "--user", "admin", "--password-stdin",
               "--no-check", input="admin-pass\n")
    assert r.exit_code == 0, r.stderr


def _wait_lines(path: Path, n: int, within: float) -> int:
    """"waiting" lines in ``path`` (scrapes waiting for a refresh; the note has other
    lines too) once there are ``n`` (or what there is when ``within`` ends)."""
    deadline = time.monotonic() + within
    while True:
        count = path.read_text().splitlines().count("waiting") if path.exists() else 0
        if count >= n or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_scrapes_wait_together_and_a_signal_ends_them(invoke, emulator, home, tmp_path, sig):
    hung = socket.create_server(("127.0.0.1", 0))  # accepts, never answers the handshake
    clients: list[socket.socket] = []
    exporter = None
    try:
        _add(invoke, "emu", emulator.url)
        _add(invoke, "hung", f"https://127.0.0.1:{hung.getsockname()[1]}")
        note = tmp_path / "scrapes"
        # the hung node keeps the refresh running for 60 s: every scrape sent meanwhile
        # waits for that same refresh (none waits behind another scrape)
        exporter = Exporter(home, "--all-nodes", "--node-timeout", "60", note=note)
        for _ in range(8):
            c = socket.create_connection(("127.0.0.1", exporter.port), timeout=60)
            c.sendall(REQUEST)
            clients.append(c)
        assert _wait_lines(note, 8, 45) == 8  # all eight waiting at once
        exporter.proc.send_signal(sig)
        exporter.proc.wait(timeout=60)  # ended by that signal alone (stop() sends none)
        code, stderr = exporter.stop()
        assert code == 130, stderr
        assert "Traceback" not in stderr and "Error" not in stderr, stderr
        said = [line for line in stderr.splitlines() if line.strip()]
        assert said[1:] == ["nodecli: interrupted"], stderr  # after the start-up line
    finally:
        for c in clients:
            c.close()
        if exporter is not None:
            exporter.stop()
        hung.close()


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def test_half_open_clients_are_cut_and_hold_no_thread(invoke, emulator, home, log):
    _add(invoke, "emu", emulator.url)
    exporter = Exporter(home, "--all-nodes", "--node-timeout", "30")
    half: list[socket.socket] = []
    try:
        assert exporter.scrape()[("nodecli_up", (("node", "emu"),))] == 1.0
        idle = _threads(exporter.proc.pid)
        for i in range(60):
            c = socket.create_connection(("127.0.0.1", exporter.port), timeout=60)
            c.sendall(REQUEST[: 7 + i % 20])  # half a request, never the rest
            half.append(c)
        page = exporter.scrape()  # answered while the sixty hang on
        assert page[("nodecli_up", (("node", "emu"),))] == 1.0
        assert _threads(exporter.proc.pid) <= idle + 2  # no thread per connection
        for c in half:  # each is cut by the exporter (within its few seconds)
            c.settimeout(60)
            assert c.recv(100) == b""
    finally:
        for c in half:
            c.close()
        code, stderr = exporter.stop()
    assert code == 130 and "Traceback" not in stderr, stderr


def _events(page: dict) -> dict[str, float]:
    return {dict(labels)["type"]: v for (name, labels), v in page.items()
            if name == "nodecli_events_total"}


def test_counters_only_grow_and_count_the_most_specific_type(invoke, emulator, home, log):
    _add(invoke, "emu", emulator.url)
    exporter = Exporter(home, "--all-nodes", "--node-timeout", "30",
                        "--max-age", "0")  # each scrape sees a new refresh
    try:
        first = _events(exporter.scrape())
        assert sum(first.values()) == 0  # counting starts with the exporter
        # a transfer event carries its subtype and its parent, in either order
        log.append({"user_id": "a", "types": ["upload.started", "transfer.started"],
                    "data": {}})
        log.append({"user_id": "a", "types": ["transfer.ended", "download.ended"],
                    "data": {}})
        log.append({"user_id": "a", "types": ["file.created"], "data": {}})
        second = _events(exporter.scrape())
        assert second == {"upload.started": 1, "download.ended": 1, "file.created": 1}
        log.push_reply(*[Reply(500, {"error": {"code": 500, "reason": "down"}})] * 6)
        log.append({"user_id": "a", "types": ["file.created"], "data": {}})
        third = _events(exporter.scrape())  # the events could not be read this time
        log.replies.clear()
        fourth = _events(exporter.scrape())
        for before, after in ((second, third), (third, fourth)):
            assert all(after.get(kind, -1) >= count for kind, count in before.items()), \
                (before, after)
        assert fourth == {"upload.started": 1, "download.ended": 1, "file.created": 2}
    finally:
        code, stderr = exporter.stop()
    assert code == 130, stderr


def test_the_exporter_says_what_node_health_says(invoke, bearer, emulator, home, log):  # noqa: F811
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from prometheus_client.parser import text_string_to_metric_families

    log.generate(2)
    keys = home / "keys" / "ak1"
    keys.mkdir(parents=True)
    mine = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (keys / "public.pem").write_bytes(mine.public_key().public_bytes(  # not the registered
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    r = invoke("node", "add", "ak", "--url", emulator.url, "--access-key", "ak1",
               "--password-stdin", input="ak1-secret\n")
    assert r.exit_code == 0, r.stderr
    r = invoke("node", "health", "--node", "ak", "-o", "prometheus")
    health = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for f in text_string_to_metric_families(r.stdout) for s in f.samples}
    exporter = Exporter(home, "--all-nodes", "--node-timeout", "30")
    try:
        page = exporter.scrape()
    finally:
        exporter.stop()

    def states(samples: dict) -> dict:
        return {k: v for k, v in samples.items() if k[0] == "nodecli_health_state"}

    assert states(health)[("nodecli_health_state", (("check", "verification key"),
                                                    ("node", "ak")))] == 2  # critical
    assert states(page) == states(health)
    assert {k for k in health} - {k for k in page} == set()  # every gauge, same labels
    assert health[("nodecli_certificate_days_left", (("node", "ak"),))] == \
        page[("nodecli_certificate_days_left", (("node", "ak"),))]
    assert page[("nodecli_scrape_age_seconds", (("node", "ak"),))] >= 0


def test_each_node_value_carries_the_age_of_its_answer(invoke, emulator, home, log):
    _add(invoke, "emu", emulator.url)
    exporter = Exporter(home, "--all-nodes", "--node-timeout", "30",
                        "--max-age", "0")  # each scrape waits
    key = ("nodecli_scrape_age_seconds", (("node", "emu"),))
    try:
        first = exporter.scrape()[key]
        assert first >= 0
        time.sleep(1.0)  # not a race: a gap an age counted from the wrong moment would show
        started = time.monotonic()
        second = exporter.scrape()[key]  # a new refresh: a new answer, a new age
        took = time.monotonic() - started
        assert 0 <= second <= took + 0.001, (second, took)
    finally:
        exporter.stop()


@pytest.mark.parametrize(("rates", "shown"), [
    ([10**400], "+Inf"), ([-(10**400)], "-Inf"), ([7, 3], "10.0"), (["x", 5], "5.0")])
def test_a_rate_no_float_holds_is_infinite_not_a_failed_page(rates, shown):
    """A node's running transfers as the exporter keeps them, made into the page by
    prometheus-client: a sum of rates beyond a float is +Inf (it used to fail every
    scrape with OverflowError)."""
    from types import SimpleNamespace

    from prometheus_client import CollectorRegistry, generate_latest

    from nodecli.cli.exporter import FleetCollector

    answer = {"reached": True, "checks": [],
              "active": [{"current_rate_kbps": r} for r in rates]}
    snapshots = SimpleNamespace(view=lambda: {"n": (answer, 0.5, False)}, within=5.0)
    probe = SimpleNamespace(event_counts=dict)
    registry = CollectorRegistry()
    registry.register(FleetCollector(snapshots, probe))
    page = generate_latest(registry).decode()
    assert f'nodecli_transfer_rate_kbps{{node="n"}} {shown}' in page
