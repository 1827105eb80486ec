"""The tail reads the next page while a quiet sink (a file, a shipper) takes this one:
never more than one page ahead, never past a stop point, and the checkpoint moves only
after the sink took the page. Deterministic: the test waits on the read-ahead thread
itself (in process) or holds it at its NODECLI_TEST_PAUSE hook (in a child)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.node.events import checkpoint, pages, tail
from nodecli.node.info import NodeInfo
from tests.conftest import nodecli_cmd, reap, subprocess_env

PAGE = 8
SLOTS = 1000  # no-op faults, one per /events request: what is left counts the requests


def _join_read_ahead() -> None:
    """Wait until every read-ahead thread has ended (its one request is answered)."""
    for t in threading.enumerate():
        if t.name == "nodecli-read-ahead" and t is not threading.current_thread():
            t.join(timeout=60)
            assert not t.is_alive()


class _Recorder:
    """A quiet sink that checks, as each page is handed to it, what the tail did before
    the hand-over: the checkpoint file and the requests the node received."""

    per_event = False
    quiet = True

    def __init__(self, ck: Path, faults: Any) -> None:
        self.ck, self.faults = ck, faults
        self.seen: list[tuple[int, int, str | None]] = []  # (first id, requests, saved token)

    def requests(self) -> int:
        _join_read_ahead()
        return SLOTS - len(self.faults.queue)

    def take(self, items: Any, texts: Any) -> None:
        if not items:
            return
        first = int(items[0][0]["id"])
        saved = json.loads(self.ck.read_text()).get("iteration_token") if self.ck.exists() \
            else None
        self.seen.append((first, self.requests(), saved))

    def position(self) -> None:
        return None

    def recover(self, cp: Any) -> list[str]:
        return []

    def close(self) -> None:
        pass


@pytest.fixture
def counted(emulator):
    faults = emulator.faults
    faults.path_prefix, faults.slow_seconds = "/events", 0.0
    faults.push(*["slow"] * SLOTS)  # "slow" with 0 s: answered as usual, and counted
    try:
        yield faults
    finally:
        faults.clear()


def _run(emulator, tmp_path: Path, faults: Any, **opts: Any) -> tuple[_Recorder, Any]:
    client = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                                  label="emu", cacert=emulator.ca_file))
    try:
        ck = checkpoint.CheckpointFile(tmp_path / "ck.json", node="emu",
                                       flt=pages.EventFilter())
        sink = _Recorder(ck.path, faults)
        state = tail.tail(client, tail.TailOptions(token="0", page_size=PAGE, **opts), sink,
                          checkpoint=ck, info=NodeInfo("4.4.5"))
        return sink, state
    finally:
        client.close()


def test_one_page_ahead_at_most_and_checkpoint_after_the_sink(emulator, log, counted,
                                                              tmp_path):
    log.generate(5 * PAGE)  # pages 1-5 full, then page 6 (empty) says caught up
    sink, state = _run(emulator, tmp_path, counted)
    assert state.emitted == 5 * PAGE
    # while page k is with the sink: pages 1..k+1 asked for (the next one read ahead,
    # not two), and the checkpoint still at the end of page k-1
    assert sink.seen == [(PAGE * (k - 1) + 1, k + 1, str(PAGE * (k - 1)))
                         for k in range(1, 6)]
    assert sink.requests() == 6
    saved = json.loads((tmp_path / "ck.json").read_text())
    assert saved["iteration_token"] == str(5 * PAGE)


@pytest.mark.parametrize("stop", [{"max_events": 3 * PAGE},
                                  {"max_events": 2 * PAGE + 3},
                                  {"until_type": "stop.here"}])
def test_no_page_read_past_a_stop_point(emulator, log, counted, tmp_path, stop):
    log.generate(2 * PAGE + 2)
    log.append({"user_id": "u", "types": ["stop.here"], "data": {}})  # event 2*PAGE+3
    log.generate(4 * PAGE)
    sink, state = _run(emulator, tmp_path, counted, **stop)
    assert [s[1] for s in sink.seen] == [2, 3, 3]  # page 3 stops: page 4 never asked for
    assert sink.requests() == 3
    assert state.emitted == stop.get("max_events", 2 * PAGE + 3)


def test_sigterm_while_the_next_page_is_held_ends_at_the_delivered_page(node_env, log,
                                                                        tmp_path,
                                                                        pause_point):
    """The read-ahead thread is held at its hook (page 2 read, not handed over) and never
    let go: SIGTERM still ends the tail, with page 1 in the file and its checkpoint."""
    log.generate(5 * PAGE)
    out = tmp_path / "events.jsonl"
    pause = pause_point("read-ahead")
    proc = subprocess.Popen(
        nodecli_cmd("events", "tail", "--to", str(out), "--iteration-token", "0",
                    "--page-size", str(PAGE)),
        env=subprocess_env(dict(node_env, **pause.env())),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    conn = None
    try:
        conn = pause.wait(proc)
        assert conn is not None, proc.stderr.read().decode() if proc.stderr else ""
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)  # a ceiling for a hang, not a measure
    finally:
        if conn is not None:
            conn.close()
        reap(proc)
    assert proc.returncode == 130, err.decode()
    assert "Traceback" not in err.decode()
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids == [str(i) for i in range(1, PAGE + 1)]
    saved = json.loads(Path(str(out) + ".checkpoint").read_text())
    assert saved["iteration_token"] == str(PAGE)
