"""Read commands over many nodes (--nodes GLOB / --all-nodes) over HTTPS: a node column
(json: a node field), nodes asked side by side, one node down hides none of the others,
and the exit status is the worst of them."""

from __future__ import annotations

import json
import socket

import pytest

from nodecli.emulator.transfers import book_of


@pytest.fixture
def fleet(invoke, emulator, home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    for name, url in (("edge-1", emulator.url), ("edge-2", emulator.url),
                      ("edge-down", f"https://127.0.0.1:{dead}"), ("core", emulator.url)):
        r = invoke("node", "add", "--no-check", name, "--url", url, "--user", "admin",
                   "--password-stdin", input="admin-pass\n")
        assert r.exit_code == 0, r.stderr
    book = book_of(emulator.state)
    book.seconds = 3600  # runs through the test on any machine
    book.start("alice", None, {})
    emulator.add_access_key("akf", "s")
    return emulator


def test_transfer_list_over_a_glob_with_one_node_down(fleet, invoke):
    r = invoke("transfer", "list", "--nodes", "edge-*", "-o", "json")
    assert r.exit_code == 6  # edge-down: the worst of the nodes
    rows = json.loads(r.stdout)
    assert sorted(t["node"] for t in rows) == ["edge-1", "edge-2"]
    assert "edge-down:" in r.stderr and "Traceback" not in r.stderr
    r = invoke("transfer", "list", "--nodes", "edge-[12]")
    assert r.exit_code == 0
    assert [line.split()[0] for line in r.stdout.splitlines()] == ["node", "edge-1", "edge-2"]


def test_access_key_list_and_node_info_over_every_node(fleet, invoke):
    r = invoke("access-key", "list", "--all-nodes", "-o", "jsonl")
    assert r.exit_code == 6
    nodes = sorted(json.loads(line)["node"] for line in r.stdout.splitlines())
    assert nodes == ["core", "edge-1", "edge-2"]
    r = invoke("node", "info", "--all-nodes")
    lines = r.stdout.splitlines()
    assert lines[0].split()[:2] == ["node", "version"]
    assert sorted(line.split()[0] for line in lines[1:]) == ["core", "edge-1", "edge-2"]
    assert r.exit_code == 6 and "edge-down" in r.stderr
    r = invoke("node", "info", "--nodes", "core", "-o", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["node"] == "core"
    r = invoke("node", "info", "--nodes", "edge-2,core,nomatch*", "-o", "json")
    assert r.exit_code == 0 and [n["node"] for n in json.loads(r.stdout)] == ["core", "edge-2"]


def test_fleet_flags_are_checked_first(fleet, invoke):
    assert invoke("node", "info", "--nodes", "nomatch*").exit_code == 2
    r = invoke("transfer", "list", "--all-nodes", "--node", "core")
    assert r.exit_code == 2 and "not both" in r.stderr
    r = invoke("transfer", "list", "--all-nodes", "--resume", "x")
    assert r.exit_code == 2


def test_events_list_over_many_nodes(fleet, invoke, log):
    log.generate(3)
    r = invoke("events", "list", "--nodes", "edge-[12]", "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert sorted((e["node"], e["id"]) for e in rows) == [
        (n, str(i)) for n in ("edge-1", "edge-2") for i in range(1, 4)]
    r = invoke("events", "list", "--nodes", "edge-*", "-o", "json")
    assert r.exit_code == 6
    docs = json.loads(r.stdout)
    assert sorted(d["node"] for d in docs) == ["edge-1", "edge-2"]
    assert all(len(d["events"]) == 3 and d["next_iteration_token"] for d in docs)
    r = invoke("events", "list", "--nodes", "core")
    assert r.stdout.splitlines()[0].split()[:3] == ["node", "id", "time"]
    r = invoke("events", "list", "--all-nodes", "--iteration-token", "1")
    assert r.exit_code == 2


def test_ask_each_keeps_the_order_bounds_the_threads_and_isolates_each_node():
    import threading
    import time

    from nodecli.errors import NodecliError
    from nodecli.node.fleet import MAX_PARALLEL, TooLate, ask_each

    lock = threading.Lock()
    running, peak = [0], [0]

    def ask(i: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            if i == 3:
                raise NodecliError("boom")
            time.sleep(2.0 if i == 5 else 0.02)  # node 5 hangs past the limit
            return i * 2
        finally:
            with lock:
                running[0] -= 1

    results = ask_each([(f"n{i}", i) for i in range(20)], ask, within=1.0)
    assert [name for name, _ in results] == [f"n{i}" for i in range(20)]
    by_name = dict(results)
    assert isinstance(by_name["n3"], NodecliError) and by_name["n3"].message == "boom"
    assert isinstance(by_name["n5"], TooLate)
    assert all(by_name[f"n{i}"] == i * 2 for i in range(20) if i not in (3, 5))
    assert 1 < peak[0] <= MAX_PARALLEL
    assert ask_each([], ask) == []


def _said_by(stderr: str) -> list[str]:
    return sorted(line.split("error: ", 1)[1].split(":")[0] for line in stderr.splitlines()
                  if line.startswith("nodecli: error: "))


def test_the_command_lines_connection_options_reach_every_node(fleet, invoke):
    # --user on the command line wins over each profile's (admin): a user whose password
    # is nowhere fails on both nodes
    r = invoke("node", "info", "--nodes", "edge-[12]", "--user", "nobody", "-o", "json")
    assert r.exit_code != 0 and json.loads(r.stdout or "[]") == []
    assert _said_by(r.stderr) == ["edge-1", "edge-2"], r.stderr


def test_nodes_that_cannot_be_opened_are_said_with_their_hint_and_counted(fleet, invoke,
                                                                          home):
    import os

    secrets = home / "secrets.toml"
    os.chmod(secrets, 0o640)  # refused, with a hint, as each node is opened
    alone = invoke("node", "info", "--node", "edge-1")
    assert alone.exit_code == 3
    error, hint = alone.stderr.splitlines()
    assert hint == f"hint: chmod 600 {secrets}"
    r = invoke("node", "info", "--nodes", "edge-[12]", "-o", "json")
    assert (r.exit_code, json.loads(r.stdout)) == (3, [])
    lines = r.stderr.splitlines()
    assert lines == [error.replace("error: ", "error: edge-1: ", 1), hint,
                     error.replace("error: ", "error: edge-2: ", 1), hint]


def test_the_node_column_is_never_cut():
    """(A table is cut to the terminal only on a terminal: the columns, as fitted.)"""
    from nodecli.cli.fleet import columns
    from nodecli.render.table import Column, fit_columns

    cols = columns([Column("version", "version")])
    rows = [{"node": "edge-with-a-rather-long-name-that-fills-the-line", "version": "v" * 30}]
    kept, caps = fit_columns(rows, cols, 40)
    assert [c.key for c in kept] == ["node", "version"]
    assert caps == {"version": 7}  # the other gives way, to its floor (its header)
