"""Transfers end to end over HTTPS against the emulator: start (and wait), list every
page, show, watch to completion, failure, cancel and timeout, modify; the node's events
tell the same story."""

from __future__ import annotations

import json

import pytest

from nodecli.emulator.transfers import book_of
from tests.test_long_running import Bearer, bearer  # noqa: F401 - the fixture


@pytest.fixture
def node(bearer, tmp_path, node_env):  # noqa: F811 - pytest's fixture by name
    tok = tmp_path / "tok.txt"
    tok.write_text(bearer.token() + "\n")
    tok.chmod(0o600)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"direction": "receive", "remote_host": "demo",
                                "paths": [{"source": "/data/shared/a.txt"}]}))
    bearer.book = book_of(bearer.state)
    bearer.book.seconds = 0.6
    bearer.env_token = {"NODECLI_URL": node_env["NODECLI_URL"], "NODECLI_HOME":
                        node_env["NODECLI_HOME"], "NODECLI_ACCESS_KEY": "ak1",
                        "NODECLI_BEARER": tok.read_text().strip()}
    bearer.admin = node_env
    bearer.spec = spec
    return bearer


def _spec(tmp_path, **fields) -> str:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"direction": "send", "remote_host": "demo", **fields}))
    return str(path)


def test_start_wait_completes_and_events_agree(node, invoke):
    r = invoke("transfer", "start", "--spec", str(node.spec), "--wait", "--interval", "0.1",
               "-o", "json", env=node.env_token)
    assert r.exit_code == 0, r.stderr
    final = json.loads(r.stdout)
    assert final["status"] == "completed" and final["bytes_transferred"] > 0
    node.book.sweep()
    r = invoke("events", "list", "--type-glob", "transfer.*", "-o", "jsonl", env=node.admin)
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["types"][-1] for e in events] == ["transfer.started", "transfer.ended"]
    assert {e["data"]["id"] for e in events} == {final["id"]}
    assert events[1]["data"]["status"] == "completed"


def test_a_failed_transfer_exits_1_with_its_error(node, invoke, tmp_path):
    r = invoke("transfer", "start", "--spec", _spec(tmp_path, remote_host="fail.example"),
               "--wait", "--interval", "0.1", env=node.env_token)
    assert r.exit_code == 1
    assert "failed: error 13: remote host is not reachable" in r.stderr


def test_cancel_is_observed_on_the_node_and_watch_exits_7(node, invoke):
    node.book.seconds = 3600  # runs through the test on any machine
    r = invoke("transfer", "start", "--spec", str(node.spec), "-o", "json", env=node.env_token)
    tid = json.loads(r.stdout)["id"]
    r = invoke("transfer", "cancel", tid, env=node.admin)
    assert r.exit_code == 2 and "--yes" in r.stderr  # no terminal to ask on
    assert node.book.find(tid).cancelled is None
    r = invoke("transfer", "cancel", tid, "--yes", env=node.admin)
    assert r.exit_code == 0, r.stderr
    assert node.book.find(tid).cancelled is not None
    r = invoke("transfer", "watch", tid, "--interval", "0.1", env=node.admin)
    assert r.exit_code == 7 and "was cancelled" in r.stderr


def test_modify_changes_the_rate_on_the_node(node, invoke):
    # long enough at the new rate (500 Mbps: days) that the watch below always finds
    # it running; at 60 s of its first rate it ended 1.2 s after the modify, and a
    # loaded machine got there first
    node.book.seconds = 10**7
    r = invoke("transfer", "start", "--spec", str(node.spec), "-o", "json", env=node.env_token)
    tid = json.loads(r.stdout)["id"]
    r = invoke("transfer", "modify", tid, "--target-rate", "500m", "--set", "priority=2",
               "-o", "json", env=node.admin)
    assert r.exit_code == 0, r.stderr
    assert node.book.find(tid).rate_kbps == 500_000
    assert json.loads(r.stdout)["priority"] == 2
    for bad in ("fast", "0", "-1m", "5t"):
        r = invoke("transfer", "modify", tid, "--target-rate", bad, env=node.admin)
        assert r.exit_code == 2, bad
    assert node.book.find(tid).rate_kbps == 500_000
    r = invoke("transfer", "watch", tid, "--timeout", "1s", "--interval", "0.2",
               env=node.admin)
    assert r.exit_code == 8 and "still running" in r.stderr


def test_list_reads_every_page_and_filters(node, invoke, tmp_path):
    node.book.seconds = 3600  # runs through the test on any machine
    for i in range(130):  # more than one page of 100
        node.book.start("alice", "ak1", {"remote_host": f"h{i}"})
    node.book.fail_next = True
    node.book.start("alice", "ak1", {"remote_host": "x"})
    old = node.book.items[-1]
    old.start -= 10**5  # it failed long ago (half of its 3600 s)
    old.changed -= 10**5
    r = invoke("transfer", "list", "-o", "json", env=node.admin)
    assert r.exit_code == 0, r.stderr
    ids = [t["id"] for t in json.loads(r.stdout)]
    assert len(ids) == 131 and len(set(ids)) == 131
    r = invoke("transfer", "list", "--status", "failed", "-o", "json", env=node.admin)
    assert [t["status"] for t in json.loads(r.stdout)] == ["failed"]
    r = invoke("transfer", "list", "--active", "-o", "jsonl", env=node.admin)
    assert len(r.stdout.splitlines()) == 130
    r = invoke("transfer", "list", env=node.admin)
    assert r.stdout.splitlines()[0].split()[:2] == ["id", "status"]


def test_bad_input_and_hostile_answers(node, invoke, emulator):
    r = invoke("transfer", "show", "no-such-id", env=node.admin)
    assert r.exit_code == 5 and "transfer list" in r.stderr
    r = invoke("transfer", "show", "../x", env=node.admin)
    assert r.exit_code == 2
    r = invoke("transfer", "list", env=node.admin)
    assert r.exit_code == 0 and r.stdout == "" and "no transfers" in r.stderr
    emulator.faults.path_prefix = "/ops/transfers"
    emulator.faults.push("garbage")
    r = invoke("transfer", "list", env=node.admin)
    assert r.exit_code == 6 and "transfers page" in r.stderr
    assert "Traceback" not in r.stderr


# -- transfer top ------------------------------------------------------------------------------

def _spawn_top(env: dict[str, str], *args: str):
    import sys

    import pexpect

    from tests.conftest import REPO_ROOT, subprocess_env

    return pexpect.spawn(sys.executable, ["-m", "nodecli", "transfer", "top", *args],
                         env=subprocess_env({**env, "TERM": "xterm"}), cwd=str(REPO_ROOT),
                         encoding="utf-8", timeout=20, dimensions=(24, 80))


def test_top_draws_refreshes_sorts_filters_and_quits_clean(node):
    import pexpect

    node.book.seconds = 3600  # runs through the test on any machine
    node.book.seed(300)
    child = _spawn_top(node.admin, "--interval", "0.3")
    child.expect("active")
    child.expect("sort rate")
    child.expect("more active")  # 300 do not fit in 24 lines
    child.send("s")
    child.expect("progress")  # (curses rewrites only the cells that changed)
    child.send("f")
    child.expect("failed only")
    child.send("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "\x1b[?1049l" in child.before  # the alternate screen is left: the terminal is clean


def test_top_without_a_terminal_prints_one_snapshot(node, invoke):
    node.book.seconds = 3600  # runs through the test on any machine
    node.book.seed(20)
    r = invoke("transfer", "top", "-o", "json", env=node.admin)
    assert r.exit_code == 0, r.stderr
    assert len(json.loads(r.stdout)) == 20
    r = invoke("transfer", "top", "--once", env=node.admin)
    assert r.stdout.splitlines()[0].split()[:2] == ["id", "status"]


def test_top_lines_fit_any_screen():
    import time

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from nodecli.render.text import display_width
    from nodecli.render.top import SORTS, top_lines

    values = st.none() | st.integers(-5, 10**12) | st.text(max_size=30) | st.booleans()
    transfer = st.fixed_dictionaries({}, optional={
        k: values for k in ("id", "status", "direction", "remote_host", "user_id",
                            "bytes_transferred", "bytes_expected", "current_rate_kbps",
                            "target_rate_kbps", "start_time_usec", "end_time_usec",
                            "error_code", "error_desc")})

    @settings(max_examples=150, deadline=None)
    @given(st.lists(transfer | st.just({"status": "running", "bytes_expected": 10,
                                         "bytes_transferred": 5, "current_rate_kbps": 1}),
                    max_size=30),
           st.integers(1, 200), st.integers(1, 60), st.sampled_from(SORTS), st.booleans())
    def check(ts, width, height, sort, failed_only):
        lines = top_lines(ts, width=width, height=height, sort=sort, failed_only=failed_only,
                          node="n\x1b[31m", now=time.time())
        assert len(lines) <= height
        assert all(display_width(line) <= max(width - 1, 1) for line in lines)
        assert not any("\x1b" in line for line in lines)

    check()


def test_list_resume_prints_each_transfer_once_across_a_sigkill(node, emulator, invoke):
    import subprocess
    import time

    from tests.conftest import nodecli_cmd, subprocess_env

    node.book.seconds = 3600  # runs through the test on any machine
    all_ids = [node.book.start("alice", "ak1", {"remote_host": f"h{i}"}).id for i in range(250)]
    emulator.faults.path_prefix = "/ops/transfers"
    emulator.faults.slow_seconds = 30
    emulator.faults.push("pass", "slow")  # the second page hangs: killed while waiting
    proc = subprocess.Popen(nodecli_cmd("transfer", "list", "--resume", "audit", "-o", "jsonl"),
                            env=subprocess_env(node.admin), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    try:
        first = [json.loads(proc.stdout.readline())["id"] for _ in range(100)]
        # the page was printed, then recorded: wait for the record (its first save
        # creates the checkpoint), never a sleep that hopes it is done
        from pathlib import Path

        state = Path(node.admin["NODECLI_HOME"]) / "state" / "checkpoints"
        end = time.monotonic() + 120
        while not list(state.glob("*/transfers.audit@*.json")):
            assert time.monotonic() < end, "the first page was never recorded"
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait(timeout=60)
    emulator.faults.clear()
    r = invoke("transfer", "list", "--resume", "audit", "-o", "jsonl", env=node.admin)
    assert r.exit_code == 0, r.stderr
    second = [json.loads(line)["id"] for line in r.stdout.splitlines()]
    assert first + second == all_ids  # nothing lost, nothing twice
    r = invoke("transfer", "list", "--resume", "audit", "-o", "jsonl", env=node.admin)
    assert r.stdout == ""
    more = [node.book.start("alice", "ak1", {}).id for _ in range(3)]
    r = invoke("transfer", "list", "--resume", "audit", env=node.admin)
    assert [line.split()[0] for line in r.stdout.splitlines()[1:]] == more
    r = invoke("transfer", "list", "--resume", "audit", "--checkpoint", "x", env=node.admin)
    assert r.exit_code == 2


def test_each_login_sees_what_the_node_allows(node, invoke):
    node.book.seconds = 3600  # runs through the test on any machine
    mine = node.book.start("alice", "ak1", {}).id
    node.book.start("bob", "ak2", {})
    key = {"NODECLI_URL": node.admin["NODECLI_URL"], "NODECLI_ACCESS_KEY": "ak1",
           "NODECLI_PASSWORD": "ak1-secret"}
    for env, expected in ((node.admin, 2), (key, 1), (node.env_token, 1)):
        r = invoke("transfer", "list", "-o", "json", env=env)
        assert r.exit_code == 0, r.stderr
        assert len(json.loads(r.stdout)) == expected
    r = invoke("transfer", "show", mine, env=key)
    assert r.exit_code == 0 and mine in r.stdout
