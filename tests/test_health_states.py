"""node health's states at their boundaries, against a scripted HTTPS node (its /info,
/events and /ops/transfers said exactly) and the emulator: which state wins (CRITICAL >
WARNING > UNKNOWN > OK), checks that cannot apply are skipped and decide nothing, and
every threshold AT equality (the documented rule: reaching a threshold is that state)
and just short of it, with the failed-transfer window in microseconds."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from tests.scripted_server import ScriptedServer, certificates, reply
from tests.test_long_running import Bearer, bearer  # noqa: F401 - the fixture

NOW_TEXT = "2026-06-01T12:00:00Z"
NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC).timestamp()  # an integer: exact sums


class Node:
    """A node whose answers the test sets: /info, /events and /ops/transfers."""

    def __init__(self, tmp_path) -> None:
        self.ca, cert, key = certificates(tmp_path / "certs")
        self.cert_file = cert
        self.info: dict = {"version": "4.1.0", "current_time": _iso(time.time()),
                           "settings": [{"name": "activity_event_logging", "value": True}]}
        self.events: list = [{"id": "1", "time": _iso(time.time()), "user_id": "a",
                              "types": ["file.created"], "data": {}}]
        self.transfers: list = []
        self.events_status = 200
        self.server = ScriptedServer(self._answer, tls=(cert, key))

    def _answer(self, seen):
        path, _, query = seen.target.partition("?")
        if path == "/events" and self.events_status != 200:
            return [reply(self.events_status, json.dumps({"error": {
                "code": self.events_status, "user_message": "not for this token"}}).encode())]
        body = {"/info": self.info, "/events": self.events, "/access_keys/self": {"id": "ak1"},
                "/ops/transfers": self.transfers}.get(path)
        if body is None:
            return [reply(404, b"{}")]
        headers = [("Content-Type", "application/json")]
        if path != "/info":  # one page, then the empty page that says "caught up"
            body = [] if "iteration_token=" in query else body
            headers.append(("Link", f'<{path}?iteration_token=9>; rel="next"'))
        return [reply(200, json.dumps(body).encode(), headers)]

    def env(self, home) -> dict[str, str]:
        return {"NODECLI_URL": self.server.url("127.0.0.1"), "NODECLI_USER": "admin",
                "NODECLI_PASSWORD": "pw", "NODECLI_CACERT": self.ca, "NODECLI_HOME": str(home)}

    def failed(self, n: int, ended: float) -> None:
        self.transfers = [{"id": f"t{i}", "status": "failed", "end_time_usec":
                           int(ended * 1e6)} for i in range(n)]


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def node(tmp_path):
    n = Node(tmp_path)
    try:
        yield n
    finally:
        n.server.close()


def _states(r) -> dict[str, str]:
    return {c["check"]: c["state"] for c in json.loads(r.stdout)}


# -- which state wins -------------------------------------------------------------------

@pytest.mark.parametrize(("failed", "code", "word"), [
    (10, 2, "CRITICAL"),  # critical beats the unknown version (3 is not "worse" than 2)
    (1, 1, "WARNING"),    # so does warning
    (0, 3, "UNKNOWN"),    # unknown beats ok
])
def test_the_worst_state_is_critical_then_warning_then_unknown(invoke, node, home, failed,
                                                                code, word):
    del node.info["version"]  # the version check: unknown
    node.failed(failed, time.time() - 60)
    r = invoke("node", "health", "-o", "json", env=node.env(home))
    states = _states(r)
    assert states["version"] == "unknown"
    assert states["failed transfers"] == {10: "critical", 1: "warning", 0: "ok"}[failed]
    r = invoke("node", "health", "-o", "nagios", env=node.env(home))
    assert r.exit_code == code, r.stdout
    assert r.stdout.startswith(f"NODECLI HEALTH {word} - ")


def test_a_setting_the_node_does_not_report_is_skipped(invoke, node, home):
    node.info["settings"] = []  # no activity_event_logging
    r = invoke("node", "health", "-o", "json", env=node.env(home))
    checks = {c["check"]: c for c in json.loads(r.stdout)}
    assert checks["logging"]["state"] == "skipped"
    assert "activity_event_logging" in checks["logging"]["reason"]
    assert r.exit_code == 0  # skipped decides nothing: every other check is ok
    r = invoke("node", "health", "-o", "nagios", env=node.env(home))
    assert r.exit_code == 0 and r.stdout.startswith("NODECLI HEALTH OK - "), r.stdout
    r = invoke("node", "health", "-o", "prometheus", env=node.env(home))
    assert 'check="logging"' not in r.stdout and 'check="version"' in r.stdout
    node.failed(1, time.time() - 60)  # ... and does not hide a real state either
    r = invoke("node", "health", "-o", "nagios", env=node.env(home))
    assert r.exit_code == 1 and "logging" not in r.stdout.split(" | ")[0]


def test_a_bearer_token_that_sees_no_events_is_not_a_stale_node(invoke, bearer, emulator,  # noqa: F811
                                                                 home, log):
    log.generate(5)  # events alice's token may not see
    r = invoke("node", "add", "tok", "--url", emulator.url, "--access-key", "ak1",
               "--cacert", emulator.ca_file, "--mint-key", str(bearer.key_file),
               "--mint-user-id", "alice")
    assert r.exit_code == 0, r.stderr
    r = invoke("node", "health", "--node", "tok", "-o", "json")
    checks = {c["check"]: c for c in json.loads(r.stdout)}
    assert checks["fresh events"]["state"] == "skipped", checks["fresh events"]
    assert checks["version"]["state"] == "skipped" and "bearer" in checks["version"]["reason"]
    assert checks["reachable"]["state"] == "ok"
    r = invoke("node", "health", "--node", "tok", "-o", "nagios")
    assert r.exit_code == 0 and r.stdout.startswith("NODECLI HEALTH OK - "), r.stdout
    bearer.event()  # one she may see: then the check applies, and is ok
    r = invoke("node", "health", "--node", "tok", "-o", "json")
    assert _states(r)["fresh events"] == "ok"


def test_events_a_bearer_token_may_not_read_are_skipped(invoke, node, home, tmp_path):
    node.events_status = 403
    token = tmp_path / "token"
    token.write_text("not-a-real-token\n")
    token.chmod(0o600)
    env = dict(node.env(home), NODECLI_USER="", NODECLI_PASSWORD="")
    r = invoke("node", "health", "-o", "json", "--access-key", "ak1", "--bearer-file",
               str(token), env=env)
    checks = {c["check"]: c for c in json.loads(r.stdout)}
    assert checks["reachable"]["state"] == "ok", checks
    assert checks["fresh events"]["state"] == "skipped"
    assert "may not read" in checks["fresh events"]["reason"]
    node.events_status = 500  # not a question of the login: said, not skipped
    r = invoke("node", "health", "-o", "json", "--access-key", "ak1", "--bearer-file",
               str(token), env=env)
    assert _states(r)["fresh events"] == "unknown"


# -- thresholds at equality (domain, with the time given) ---------------------------------

def _client(node: Node):
    from nodecli.http.client import Auth, Endpoint, open_client

    return open_client(Endpoint(node.server.url("127.0.0.1"),
                                Auth("basic", username="admin", password="pw"),
                                cacert=node.ca, max_attempts=1))


def _check(node: Node, name: str, now: float, warn: str | None = None,
           crit: str | None = None) -> tuple[str, float | None]:
    from nodecli.node.health import Thresholds, run_checks

    limits = Thresholds()
    limits.update(warn, "warn")
    limits.update(crit, "crit")
    with _client(node) as client:
        checks = {c.name: c for c in run_checks(client, access_key=None, local_key=None,
                                                thresholds=limits, now=now)}
    return checks[name].state, checks[name].value


def test_certificate_days_at_the_threshold(node):
    from cryptography import x509

    with open(node.cert_file, "rb") as fh:
        ends = x509.load_pem_x509_certificate(fh.read()).not_valid_after_utc.timestamp()
    day = 86400.0
    assert _check(node, "certificate", ends - 30 * day - 1)[0] == "ok"
    assert _check(node, "certificate", ends - 30 * day)[0] == "warning"  # exactly 30 days
    assert _check(node, "certificate", ends - 7 * day - 1)[0] == "warning"
    assert _check(node, "certificate", ends - 7 * day)[0] == "critical"  # exactly 7 days
    assert _check(node, "certificate", ends + 1)[0] == "critical"


@pytest.mark.parametrize(("now", "state"), [
    (NOW - 1.5, "ok"), (NOW - 2.0, "warning"), (NOW + 2.0, "warning"),  # ahead, behind
    (NOW - 4.5, "warning"), (NOW - 5.0, "critical"), (NOW + 5.0, "critical")])
def test_clock_skew_at_the_threshold(node, now, state):
    node.info["current_time"] = NOW_TEXT
    got, value = _check(node, "clock", now)
    assert (got, value) == (state, round(NOW - now, 2))


@pytest.mark.parametrize(("failed", "state"), [(2, "ok"), (3, "warning"), (4, "warning"),
                                               (5, "critical")])
def test_exactly_n_failed_transfers(node, failed, state):
    node.failed(failed, NOW - 60)
    got, value = _check(node, "failed transfers", NOW, warn="failed=3", crit="failed=5")
    assert (got, value) == (state, float(failed))


def test_the_failed_transfer_window_is_one_hour_in_microseconds(node):
    start = NOW - 3600  # the window's first microsecond
    ends = {"at the edge": int(start) * 1_000_000, "1 us before": int(start) * 1_000_000 - 1,
            "30 min ago": int(NOW - 1800) * 1_000_000,
            "90 min ago": int(NOW - 5400) * 1_000_000,
            "1 ms before": int(start) * 1_000_000 - 1000}
    node.transfers = [{"id": k, "status": "failed", "end_time_usec": v}
                      for k, v in ends.items()]
    node.transfers.append({"id": "done", "status": "completed", "end_time_usec": ends[
        "30 min ago"]})
    node.transfers.append({"id": "running", "status": "running", "end_time_usec": None})
    got, value = _check(node, "failed transfers", NOW, crit="failed=10")
    assert value == 2.0  # at the edge and 30 min ago; not before the hour, not the others
    assert got == "warning"


# -- a node that never answers -----------------------------------------------------------

@pytest.mark.parametrize(("answers_at", "late"), [(3.0, False), (3.5, True)])
def test_node_timeout_is_the_time_of_the_whole_node_on_its_clock(invoke, emulator, home, log,
                                                                 monkeypatch, answers_at,
                                                                 late):
    """--node-timeout bounds a node as a whole, not only each of its requests: the
    emulator answers every request at once, but on the clock the test gives the fleet
    (nodecli.node.fleet.Clock) the node's checks end at ``answers_at``; past its 3 s it
    is reachable critical, "no answer within 3 s", and its checks are not shown."""
    from functools import partial

    from nodecli.node import fleet
    from tests.test_mutants_node_fleet import NodeClock

    log.generate(1)
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r.stderr
    clock = NodeClock(looked_at=0.0, answers_at=answers_at)
    monkeypatch.setattr(fleet, "ask_each", partial(fleet.ask_each, clock=clock))
    r = invoke("node", "health", "--all-nodes", "--node-timeout", "3", "-o", "json")
    rows = [(row["node"], row["check"], row["state"]) for row in json.loads(r.stdout)]
    assert clock.waits == [3.0]  # the node was looked at at its start: all of its 3 s
    if late:
        assert rows == [("emu", "reachable", "critical")]
        assert json.loads(r.stdout)[0]["reason"] == "no answer within 3 s"
        assert r.exit_code == 1, r.stderr  # (a node critical, as the one that never answers)
    else:
        assert ("emu", "reachable", "ok") in rows and len(rows) > 1, rows


def test_node_timeout_bounds_a_node_that_never_answers(invoke, emulator, home, log):
    import socket

    log.generate(1)
    hung = socket.create_server(("127.0.0.1", 0))  # accepts, never answers the handshake
    try:
        for name, url in (("emu", emulator.url),
                          ("hung", f"https://127.0.0.1:{hung.getsockname()[1]}")):
            r = invoke("node", "add", name, "--url", url, "--user", "admin",
                       "--password-stdin", "--no-check", input="admin-pass\n")
            assert r.exit_code == 0, r.stderr
        r = invoke("node", "health", "--all-nodes", "--node-timeout", "8", "-o", "json")
    finally:
        hung.close()
    rows = json.loads(r.stdout)
    hung_rows = [row for row in rows if row["node"] == "hung"]
    assert [(row["check"], row["state"]) for row in hung_rows] == [("reachable", "critical")]
    assert "8 s" in hung_rows[0]["reason"], hung_rows  # said with the limit it missed
    assert {row["check"]: row["state"] for row in rows if row["node"] == "emu"}[
        "reachable"] == "ok"
    assert r.exit_code == 1
