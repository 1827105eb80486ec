"""Events against nodes that are not ours: count caps, foreign Link hosts, old versions.

interface.md promises "at most" count events per page, a Link rel="next" to follow, and
features by node version. The emulator plays servers that honour that differently from
ours (a server-side cap, a Link naming an internal host, older versions, connection
close on every answer) and the client must give the same results against each.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from nodecli.emulator.server import Reply
from tests.conftest import nodecli_cmd, subprocess_env


def jsonl_ids(text: str) -> list[str]:
    return [json.loads(line)["id"] for line in text.splitlines() if line.strip()]


class Recorder:
    """A TCP listener standing for the host a Link names: records whatever reaches it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.received.append(conn.recv(65536))
                except OSError:
                    self.received.append(b"<connected>")

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def recorder():
    rec = Recorder()
    yield rec
    rec.close()


# -- a short page is not the end of the log (interface.md 4.1: count is "at most") -------


def test_tail_behind_a_count_cap_exports_every_event(invoke, node_env, log):
    log.generate(2500)
    log.count_cap = 100
    r = invoke("events", "tail", "--since", "1h", "--page-size", "1000", "-o", "jsonl",
               env=node_env)
    assert r.exit_code == 0, r.stderr
    assert jsonl_ids(r.stdout) == [str(i) for i in range(1, 2501)]
    counts = [parse_qs(q)["count"] for q in log.queries]
    assert counts and all(c == ["1000"] for c in counts)
    # 25 capped pages, then one empty page: caught up
    assert len(log.queries) == 26


def test_list_sends_count_as_given_and_shows_what_came(invoke, node_env, log):
    log.generate(30)
    log.count_cap = 7
    for count in ("0", "7", "1000", str(2**62)):
        before = len(log.queries)
        r = invoke("events", "list", "--since", "1h", "--count", count, "-o", "json",
                   env=node_env)
        assert r.exit_code == 0, r.stderr
        assert parse_qs(log.queries[before])["count"] == [count]
        page = json.loads(r.stdout)
        assert len(page["events"]) == min(int(count), 7)


def test_follow_polls_at_once_while_pages_carry_events(invoke, node_env, log):
    """Short (capped) pages are fetched back to back; the pause comes after an empty
    page only, so 30 capped pages take no interval at all."""
    log.generate(300)
    log.count_cap = 10
    r = invoke("events", "tail", "-f", "--since", "1h", "--interval", "3600",
               "--max-events", "300", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert jsonl_ids(r.stdout) == [str(i) for i in range(1, 301)]
    assert len(log.queries) == 30  # had it slept once, the test would hang


def test_capped_tail_killed_and_resumed_loses_and_repeats_nothing(emulator, node_env, log,
                                                                  tmp_path):
    log.generate(2500)
    log.count_cap = 100
    emulator.faults.path_prefix = "/events"
    emulator.faults.slow_rate = 1.0
    emulator.faults.slow_seconds = 0.05
    out = tmp_path / "events.jsonl"
    cmd = nodecli_cmd("events", "tail", "--since", "1h", "--page-size", "1000",
                      "--to", str(out))
    env = subprocess_env(node_env)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            lines = out.read_bytes().count(b"\n") if out.exists() else 0
            if lines >= 300 or proc.poll() is not None:
                break
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    killed_at = out.read_bytes().count(b"\n")
    assert 0 < killed_at < 2500, "the tail should have been killed mid-run"
    emulator.faults.slow_rate = 0.0
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ids = jsonl_ids(out.read_text())
    assert ids == [str(i) for i in range(1, 2501)]  # 0 lost, 0 duplicated, in order


# -- a Link naming another host (a node behind a proxy, NAT or load balancer) ------------


def test_foreign_link_host_is_never_contacted(invoke, node_env, log, recorder):
    log.generate(250)
    log.count_cap = 100
    log.link_host = f"127.0.0.1:{recorder.port}"
    r = invoke("events", "tail", "--since", "1h", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert jsonl_ids(r.stdout) == [str(i) for i in range(1, 251)]
    assert recorder.received == []
    assert r.stderr.count("names another host") == 1
    assert f"127.0.0.1:{recorder.port}" in r.stderr
    # a warning, as events list gives it (not a hint)
    assert "nodecli: warning: the node's Link" in r.stderr
    # the Link's query (token and the other parameters) was requested on the base URL
    assert [parse_qs(q).get("iteration_token") for q in log.queries][1:] == [
        ["100"], ["200"], ["250"]]
    assert all(parse_qs(q)["after_time"] for q in log.queries)


def test_foreign_link_host_with_verbose_says_so_per_request(invoke, node_env, log,
                                                            recorder):
    log.generate(5)
    log.count_cap = 2
    log.link_host = f"127.0.0.1:{recorder.port}"
    r = invoke("-v", "events", "tail", "--since", "1h", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert r.stderr.count("its query is requested on") == 4  # 3 pages + the empty one
    assert "admin-pass" not in r.stderr
    assert recorder.received == []


def test_events_list_names_the_foreign_host_and_gives_the_local_url(invoke, node_env, log,
                                                                    emulator, recorder):
    log.generate(3)
    log.link_host = f"internal-node.example:{recorder.port}"
    r = invoke("events", "list", "--since", "1h", "-o", "json", env=node_env)
    assert r.exit_code == 0, r.stderr
    page = json.loads(r.stdout)
    assert page["next_iteration_token"] == "3"
    assert urlsplit(page["next_url"]).netloc == urlsplit(emulator.url).netloc
    assert "internal-node.example" in r.stderr


@pytest.mark.parametrize("link", [
    '<http://127.0.0.1:{port}:99999/events?iteration_token=3>; rel="next"',
    '<http://127.0.0.1:99999/events?iteration_token=3>; rel="next"',
    '<http://[::1/events?iteration_token=3>; rel="next"',
    '<ftp://127.0.0.1/events?iteration_token=3>; rel="next"',
    '<https://:443/events?iteration_token=3>; rel="next"',
])
def test_unusable_link_is_a_malformed_page_not_an_internal_error(invoke, node_env, log,
                                                                 emulator, link):
    port = urlsplit(emulator.url).port
    page = json.dumps([{"id": str(i), "types": ["file.created"]} for i in range(1, 4)])
    reply = Reply(200, page.encode(), {"Link": link.format(port=port)})
    log.push_reply(reply)
    r = invoke("events", "tail", "--since", "1h", "-o", "jsonl", env=node_env)
    assert r.exit_code == 6, r
    assert "Link" in r.stderr and "not a usable URL" in r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2
    log.push_reply(reply)
    r = invoke("events", "list", "--since", "1h", "-o", "json", env=node_env)
    assert r.exit_code == 0  # one page, as the node sent it, with a warning
    assert "not a usable URL" in r.stderr
    assert json.loads(r.stdout)["next_iteration_token"] is None


def test_link_relation_types_compare_case_insensitively(invoke, node_env, log, emulator):
    log.generate(3)
    page = json.dumps([{"id": str(i), "types": ["file.created"]} for i in range(1, 4)])
    log.push_reply(Reply(200, page.encode(), {
        "Link": f'<{emulator.url}/events?iteration_token=3>; rel="Prev NEXT"'}))
    r = invoke("events", "tail", "--since", "1h", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert jsonl_ids(r.stdout) == ["1", "2", "3"]


# -- what a node sends with every events page, and what older nodes lack -----------------


def test_events_answers_carry_no_cache_and_connection_close(emulator, log):
    log.generate(2)
    parts = urlsplit(emulator.url)
    import base64
    import ssl

    conn = http.client.HTTPSConnection(
        parts.hostname, parts.port, timeout=10,
        context=ssl.create_default_context(cafile=emulator.ca_file))

    auth = base64.b64encode(b"admin:admin-pass").decode()
    conn.request("GET", "/events?count=1", headers={"Authorization": f"Basic {auth}"})
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 200
    assert resp.getheader("Cache-Control") == "no-cache"
    assert resp.getheader("Connection") == "close"
    assert resp.getheader("Content-Type") == "application/json; charset=utf-8"
    conn.close()


@pytest.mark.parametrize(("version", "expected"), [
    ("3.5.9", {"events": False, "events_by_id": False,
               "activity_event_logging_per_access_key": False}),
    ("3.7.0", {"events": True, "events_by_id": False}),
    ("3.7.4", {"events": True, "events_by_id": True, "filelock_events": True,
               "activity_event_logging_per_access_key": False}),
    ("3.8.0", {"events": True, "events_by_id": True,
               "activity_event_logging_per_access_key": True}),
])
def test_info_capabilities_follow_the_version(invoke, node_env, node_version, version,
                                              expected):
    node_version(version)
    r = invoke("node", "info", "-o", "json", env=node_env)
    assert r.exit_code == 0, r.stderr
    caps = {c["name"]: c["value"] for c in json.loads(r.stdout)["capabilities"]}
    for name, value in expected.items():
        assert caps[name] is value, (name, caps)


def test_old_nodes_get_the_version_in_the_message(invoke, node_env, node_version, log,
                                                   tmp_path):
    log.generate(3)
    node_version("3.7.0")
    r = invoke("events", "get", "1", env=node_env)
    assert r.exit_code == 1
    assert "3.7.0" in r.stderr and "3.7.3" in r.stderr
    r = invoke("events", "list", "--since", "1h", "-o", "json", env=node_env)
    assert r.exit_code == 0
    assert [e["id"] for e in json.loads(r.stdout)["events"]] == ["1", "2", "3"]
    node_version("3.5.0")
    for args in (("list",), ("tail", "--since", "1h")):
        r = invoke("events", *args, env={**node_env, "NODECLI_HOME": str(tmp_path / "h2")})
        assert r.exit_code == 1, r
        assert "3.5.0" in r.stderr and "3.6.0" in r.stderr


# -- the emulator's own command line plays these servers ---------------------------------


def test_emulator_serve_max_count_and_link_host(home, tmp_path, invoke, recorder):
    from nodecli.config.model import NodeUser, TransferUser
    from nodecli.config.paths import resolve_paths
    from nodecli.config.store import ConfigStore
    from nodecli.users.passwords import hash_password

    with ConfigStore(resolve_paths(home)).edit() as cfg:
        cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
        cfg.users["admin"] = NodeUser("admin", "xfer", hash_password("pw", log_n=4), ["admin"])
    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        nodecli_cmd("emulator", "serve", "--no-tls", "--port", "0", "--port-file",
                    str(port_file), "--max-count", "3", "--event-rate", "500",
                    "--link-host", f"127.0.0.1:{recorder.port}"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env())
    try:
        deadline = time.monotonic() + 120
        while not (port_file.exists() and port_file.read_text().endswith("\n")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        env = {"NODECLI_URL": url, "NODECLI_USER": "admin", "NODECLI_PASSWORD": "pw"}
        end = time.monotonic() + 60  # until the generator logged (a ceiling, not a guess)
        while True:
            r = invoke("events", "list", "--since", "1h", "--count", "50", "-o", "json",
                       env=env)
            assert r.exit_code == 0, r.stderr
            page = json.loads(r.stdout)
            if page["events"] or time.monotonic() > end:
                break
            time.sleep(0.05)
        assert 1 <= len(page["events"]) <= 3
        assert urlsplit(page["next_url"]).netloc == urlsplit(url).netloc
        assert "names another host" in r.stderr
        r = invoke("events", "tail", "--since", "1h", "--max-events", "20", "-o", "jsonl",
                   env=env)
        assert r.exit_code == 0, r.stderr
        assert len(jsonl_ids(r.stdout)) == 20
        assert recorder.received == []
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0


@pytest.mark.parametrize("args", [("--max-count", "0"), ("--link-host", "a b"),
                                  ("--link-host", "host/x")])
def test_emulator_serve_refuses_bad_modes(invoke, args):
    r = invoke("emulator", "serve", *args)
    assert r.exit_code == 2
    assert "Traceback" not in r.stderr
