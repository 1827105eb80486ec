"""``events tail --nodes/--all-nodes`` over HTTPS: one merged jsonl stream with a node
field, each node's events in its order, exactly once per node across SIGKILLs (a
checkpoint per node), and a node that is down at the start joins when it comes up."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
import time
from collections import defaultdict

import pytest

from nodecli.emulator.app import build_server
from nodecli.emulator.events import log_for
from tests.conftest import nodecli_cmd, subprocess_env
from tests.test_events_tail import wait_for


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def nodes(invoke, emulator, home):
    """Three nodes with logs of their own (one emulator's users), profiles n1..n3."""
    extra = [build_server(emulator.paths, persist=False).start() for _ in range(2)]
    servers = [emulator.server, *extra]
    for i, server in enumerate(servers, 1):
        r = invoke("node", "add", f"n{i}", "--url", server.url, "--user", "admin",
                   "--password-stdin", input="admin-pass\n")
        assert r.exit_code == 0, r.stderr
    yield servers
    for server in extra:
        server.stop()


def _by_node(path) -> dict[str, list[int]]:
    seen: dict[str, list[int]] = defaultdict(list)
    for line in path.read_text().splitlines() if path.exists() else ():
        event = json.loads(line)
        seen[event["node"]].append(int(event["id"]))
    return dict(seen)


def test_merged_tail_to_stdout_and_a_file(nodes, invoke, home):
    for count, server in zip((3, 5, 7), nodes, strict=True):
        log_for(server.state).generate(count)
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""  # the events are the output: no "wrote ... to" line
    seen: dict[str, list[str]] = defaultdict(list)
    for line in r.stdout.splitlines():
        event = json.loads(line)
        assert next(iter(event)) == "node" and "types" in event
        seen[event["node"]].append(event["id"])
    assert seen == {"n1": ["1", "2", "3"], "n2": [str(i) for i in range(1, 6)],
                    "n3": [str(i) for i in range(1, 8)]}
    r = invoke("events", "tail", "--nodes", "n[12]", "--since", "1h", "-o", "plain")
    assert sorted({line.split("\t")[0] for line in r.stdout.splitlines()}) == ["n1", "n2"]
    out = home / "fleet.jsonl"
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", "--to", str(out))
    assert r.exit_code == 0, r.stderr
    log_for(nodes[1].state).generate(2)
    r = invoke("events", "tail", "--all-nodes", "--to", str(out))  # resumes per node
    assert r.exit_code == 0, r.stderr
    assert _by_node(out) == {"n1": [1, 2, 3], "n2": list(range(1, 8)),
                             "n3": list(range(1, 8))}
    assert sorted(p.name for p in (home / "fleet.jsonl.checkpoints").glob("*.json")) == [
        "n1.json", "n2.json", "n3.json"]


def test_merged_tail_refuses_what_belongs_to_one_node(nodes, invoke, home):
    for args in (["--iteration-token", "5"], ["--checkpoint", str(home / "c.json")],
                 ["--max-events", "3"], ["-o", "json"], ["--node", "n1"],
                 ["--to", str(home / "f.txt"), "-o", "plain"]):
        r = invoke("events", "tail", "--all-nodes", *args)
        assert r.exit_code == 2, (args, r.stderr)
        assert r.stderr.startswith("nodecli: error: ") and "Traceback" not in r.stderr


def test_one_node_down_is_an_error_line_without_follow(nodes, invoke, home):
    r = invoke("node", "add", "--no-check", "n4", "--url", f"https://127.0.0.1:{_free_port()}",
               "--user", "admin", "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0
    log_for(nodes[0].state).generate(2)
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", "-o", "jsonl")
    assert r.exit_code == 6 and "n4:" in r.stderr
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()
            if json.loads(line)["node"] == "n1"] == ["1", "2"]


def test_a_node_down_at_the_start_joins_when_it_comes_up(nodes, invoke, emulator, home):
    port = _free_port()
    r = invoke("node", "add", "--no-check", "late", "--url", f"https://localhost:{port}",
               "--user", "admin", "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0
    out = home / "f.jsonl"
    proc = subprocess.Popen(nodecli_cmd("events", "tail", "-f", "--all-nodes", "--since", "1h",
                                        "--to", str(out), "--interval", "0.1"),
                            env=subprocess_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    late = None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")),
                              daemon=True)
    reader.start()
    try:
        log_for(nodes[0].state).generate(3)
        wait_for(lambda: any("late: reconnecting (attempt 1," in line for line in lines))
        wait_for(lambda: _by_node(out).get("n1") == [1, 2, 3])  # the others flow meanwhile
        late = build_server(emulator.paths, persist=False, port=port).start()
        log_for(late.state).generate(4)
        wait_for(lambda: _by_node(out).get("late") == [1, 2, 3, 4])
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(30)
    finally:
        proc.kill()
        proc.wait(timeout=60)
        if late is not None:
            late.stop()
    err = "".join(lines)
    assert proc.returncode == 130, err
    assert "late: resumed" in err and "Traceback" not in err, err
    assert _by_node(out)["n1"] == [1, 2, 3]


def test_merged_file_is_exactly_once_per_node_across_sigkills(nodes, home):
    from nodecli.emulator.events import start_generator

    out = home / "f.jsonl"
    stoppers = [start_generator(server.state, 300) for server in nodes]
    args = ("events", "tail", "-f", "--all-nodes", "--since", "1h", "--to", str(out),
            "--interval", "0.05", "--page-size", "40")
    try:
        for round_ in range(6):
            proc = subprocess.Popen(nodecli_cmd(*args), env=subprocess_env(),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                before = out.stat().st_size if out.exists() else 0
                wait_for(lambda b=before: out.exists() and out.stat().st_size > b + 2000)
                time.sleep(0.05 * round_)  # (where the kill lands: any moment will do)
            finally:
                proc.kill()  # SIGKILL: no chance to save anything
                proc.wait(timeout=60)
    finally:
        for stop in stoppers:
            stop()
    r = subprocess.run(nodecli_cmd(*args[:2], *args[3:]), env=subprocess_env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    seen = _by_node(out)
    assert sorted(seen) == ["n1", "n2", "n3"]
    for node, ids in seen.items():
        total = len(log_for(nodes[int(node[1]) - 1].state))
        assert ids == list(range(1, total + 1)), node  # in order, none lost, none twice


def test_a_restart_finds_each_nodes_own_lines_after_its_checkpoint(tmp_path):
    """What the SIGKILL test relies on, made to happen: lines of two nodes written after
    node a's checkpoint, and a last line cut by the crash."""
    from nodecli.node.events.checkpoint import Checkpoint
    from nodecli.node.events.merged import SharedOutput
    from nodecli.node.events.sinks import FileSink

    path = tmp_path / "merged.jsonl"
    path.write_text('{"node": "a", "id": "1"}\n')
    first = FileSink(path, "jsonl")
    cp = Checkpoint("1", output=first.position())  # a saved after its first line
    first.close()
    with path.open("a") as fh:
        fh.write('{"node": "b", "id": "7"}\n{"node": "a", "id": "2"}\n'
                 '{"node": "b", "id": "8"}\n{"node": "a", "id": "3"}\n{"node": "a", "i')
    sink = FileSink(path, "jsonl")
    try:
        shared = SharedOutput(file=sink)
        assert path.read_text().endswith('"id": "3"}\n')  # the cut line is gone
        assert shared.sink_for("a").recover(cp) == ["2", "3"]
        assert shared.sink_for("b").recover(cp) == ["7", "8"]
        assert shared.sink_for("a").recover(None) == []
    finally:
        sink.close()


def test_merged_ends_say_their_count_and_the_worst_status(nodes, invoke, home):
    """The end of a merged run, tail and ship alike: the count over every node, and a
    node that cannot be reached is one line and the exit status, not the others' loss."""
    for count, server in zip((3, 5, 7), nodes, strict=True):
        log_for(server.state).generate(count)
    out = home / "all.jsonl"
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", "--to", str(out))
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[-1] == f"wrote 15 events from 3 node(s) to {out}"
    # -v: each node's own count, in one line
    r = invoke("-v", "events", "tail", "--all-nodes", "--since", "1h", "--to",
               str(home / "again.jsonl"))
    assert r.exit_code == 0, r.stderr
    assert "debug: n1: 3 events; n2: 5 events; n3: 7 events" in r.stderr.splitlines(), \
        r.stderr
    shipped = home / "shipped.jsonl"
    r = invoke("events", "ship", "--all-nodes", "--since", "1h", "--to", f"file:{shipped}")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[-1] == \
        f"shipped 15 events from 3 node(s) to file:{shipped}"
    assert _by_node(shipped) == {"n1": [1, 2, 3], "n2": list(range(1, 6)),
                                 "n3": list(range(1, 8))}
    nodes[2].stop()
    log_for(nodes[0].state).generate(1)
    r = invoke("events", "ship", "--all-nodes", "--to", f"file:{shipped}")
    assert r.exit_code == 6, r.stderr  # the node that is down: unreachable (ExitCode)
    lines = r.stderr.splitlines()
    assert lines[0].startswith("nodecli: error: n3: GET "), r.stderr
    assert lines[-1] == f"shipped 1 event from 3 node(s) to file:{shipped}", r.stderr
    assert _by_node(shipped)["n1"] == [1, 2, 3, 4]
