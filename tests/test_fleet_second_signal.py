"""A second Ctrl-C ends a merged tail (``events tail --all-nodes``) or a ship of every
node (``events ship --all-nodes``) at once, saying how many events went, even while the
nodes' threads have not ended. The first Ctrl-C asks every node to stop after its page;
the second must come after the first was handled (two signals sent together may be
taken as one), so each node's thread stops at the program's ``node-stopped`` hook
(NODECLI_TEST_PAUSE: the first signal ended this node's tail, its count noted) and the
test sends the second signal only once every node is there, then holds them there: the
process must end without them. Three nodes, not one: Python 3.11 takes a thread whose
``join`` the signal interrupted for ended (so one held thread would not keep even a
process that waits for its threads). A real child process; no sleeps."""

from __future__ import annotations

import signal
import subprocess

from nodecli.emulator.events import log_for
from tests.conftest import PausePoint, nodecli_cmd, subprocess_env
from tests.test_events_ship import _collector_server as _collector_server  # the fixtures
from tests.test_events_ship import collector as collector
from tests.test_events_ship import stored_ids
from tests.test_events_tail import wait_for
from tests.test_fleet_tail import nodes as nodes

NAMES = ["n1", "n2", "n3"]  # the profiles of ``nodes``


def _second_signal(proc: subprocess.Popen, pause: PausePoint) -> tuple[str, str]:
    """Ctrl-C, and once every node's thread is at ``node-stopped`` (the first one
    taken), Ctrl-C again; the child's (stdout, stderr) after it ended with the threads
    held."""
    held = []
    try:
        proc.send_signal(signal.SIGINT)
        stopped = []
        for _ in NAMES:
            held.append(pause.wait(proc))
            assert held[-1] is not None, proc.communicate(timeout=60)
            stopped.append(pause.detail)  # the node it says it is
        assert sorted(stopped) == NAMES
        proc.send_signal(signal.SIGINT)
        # (the ceiling is for a child that waits for the held threads: it never ends)
        return proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=60)
        for conn in held:
            if conn is not None:
                PausePoint.release(conn)


def _started(proc: subprocess.Popen, ready) -> None:
    """Wait until ``ready()`` (the child is at work: its Ctrl-C handler is set) or the
    child ended; killed if that fails."""
    try:
        wait_for(lambda: ready() or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate(timeout=60)
    except BaseException:
        proc.kill()
        proc.wait(timeout=60)
        raise


def test_a_second_ctrl_c_ends_a_merged_tail_at_once(nodes, home, pause_point):
    for server in nodes:
        log_for(server.state).generate(3)
    pause = pause_point("node-stopped")
    proc = subprocess.Popen(
        nodecli_cmd("events", "tail", "-f", "--all-nodes", "--since", "1h",
                    "--to", str(home / "all.jsonl")),
        env=subprocess_env(pause.env()), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    out = home / "all.jsonl"
    _started(proc, lambda: out.exists() and len(out.read_text().splitlines()) == 9)
    said, err = _second_signal(proc, pause)
    assert proc.returncode == 130, err
    assert said == ""
    # the second signal's words: the count, without the first one's "from 3 node(s)"
    # and its resume hint
    assert err.splitlines() == ["nodecli: interrupted after 9 events"], err


def test_a_second_ctrl_c_ends_a_ship_of_every_node_at_once(nodes, emulator, home, collector,
                                                           pause_point):
    for server in nodes:
        log_for(server.state).generate(3)
    pause = pause_point("node-stopped")
    proc = subprocess.Popen(
        nodecli_cmd("events", "ship", "-f", "--all-nodes", "--since", "1h",
                    "--resume", "siem", "--to", collector.url + "/ingest"),
        env=subprocess_env({**pause.env(), "NODECLI_SINK_CACERT": emulator.ca_file}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _started(proc, lambda: sorted(stored_ids(collector.state)) == ["1", "1", "1", "2", "2",
                                                                   "2", "3", "3", "3"])
    said, err = _second_signal(proc, pause)
    assert proc.returncode == 130, err
    assert said == ""
    assert err.splitlines() == ["nodecli: interrupted after 9 events"], err
