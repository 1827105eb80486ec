"""events tail into a pipe: the checkpoint never covers an event the reader did not take.

Real pipes between real processes: nodecli's stdout is the write end, this test reads
the other end like ``head`` does, a buffer at a time, and stops early.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.node.events import checkpoint, pages, sinks, tail
from nodecli.node.info import NodeInfo
from tests.conftest import nodecli_cmd, reap, subprocess_env


def _ids(data: bytes) -> list[str]:
    return [json.loads(line)["id"] for line in data.splitlines() if line.strip()]


def _read_lines(fd: int, lines: int, bufsize: int = 4096) -> bytes:
    """Read as `head` does (a buffer at a time) until ``lines`` lines arrived; returns
    every byte taken out of the pipe, the unprinted rest of the last buffer included."""
    got = b""
    while got.count(b"\n") < lines:
        chunk = os.read(fd, bufsize)
        if not chunk:
            break
        got += chunk
    return got


def _complete_lines(data: bytes) -> bytes:
    return data[: data.rfind(b"\n") + 1]


@pytest.fixture
def tail_proc(node_env: dict[str, str]):
    """``tail_proc(*args)``: `events tail --resume pipe2 -o jsonl ARGS` as a child with its
    stdout and stderr piped; reaped after the test, whatever it did."""
    started: list[subprocess.Popen] = []

    def _start(*args: str) -> subprocess.Popen:
        started.append(subprocess.Popen(
            nodecli_cmd("events", "tail", "--resume", "pipe2", "-o", "jsonl", *args),
            env=subprocess_env(node_env), stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        return started[-1]

    yield _start
    for proc in started:
        reap(proc)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("nap", [0.0, 1.5], ids=["closes-at-once", "sleeps-then-closes"])
def test_a_reader_that_stops_early_gets_the_rest_next_time(node_env, log, invoke, nap,
                                                          tail_proc):
    """`tail --since 1h --resume pipe2 | head -5` (and a reader that sleeps before it goes):
    the next run starts at the first event the reader did not take whole."""
    log.generate(3000)  # ~1 MB: far more than a pipe holds, so the writer is blocked
    proc = tail_proc("--since", "1h")
    assert proc.stdout is not None and proc.stderr is not None
    taken = _read_lines(proc.stdout.fileno(), 5)
    time.sleep(nap)
    proc.stdout.close()
    assert proc.wait(timeout=60) == 141
    first = _ids(_complete_lines(taken))
    assert len(first) >= 5 and len(first) < 100  # a few buffers, never the page of 1000
    # one line: the events it took whole, which a reader like head may not have shown
    assert proc.stderr.read().decode() == (
        f"hint: the pipe's reader stopped after taking {len(first)} events; it may not "
        "have shown them all (a reader such as head reads ahead), and the checkpoint "
        "counts them as delivered\n")
    r = invoke("events", "tail", "--resume", "pipe2", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r
    assert first + _ids(r.stdout.encode()) == [str(i) for i in range(1, 3001)]


def test_a_reader_that_leaves_the_rest_in_the_pipe(node_env, log, invoke, tail_proc):
    """All of it fits in the pipe, so the writer finishes; the reader takes five lines,
    sleeps and goes without reading on: the rest is sent again next time, exactly."""
    log.generate(20)
    proc = tail_proc("--since", "1h")
    assert proc.stdout is not None and proc.stderr is not None
    # nodecli writes everything and waits for the reader, saying so on stderr (read
    # first: what it counts as not taken is then all of it, whatever the machine's pace)
    waiting = proc.stderr.readline().decode()
    assert waiting == ("nodecli: warning: waiting up to 10 s for the reader to take the "
                       "last 20 events\n")
    fd = proc.stdout.fileno()
    taken = b""
    while taken.count(b"\n") < 5:
        taken += os.read(fd, 1)  # byte by byte: take exactly five lines
    assert proc.poll() is None
    proc.stdout.close()
    assert proc.wait(timeout=30) == 0
    assert _ids(taken) == ["1", "2", "3", "4", "5"]
    assert proc.stderr.read().decode() == (
        "hint: the pipe's reader stopped after taking 5 events; it may not have shown them "
        "all (a reader such as head reads ahead), and the checkpoint counts them as "
        "delivered; the 15 it never took are sent again next time\n")
    r = invoke("events", "tail", "--resume", "pipe2", "-o", "jsonl", env=node_env)
    assert _ids(r.stdout.encode()) == [str(i) for i in range(6, 21)]


def test_a_follow_tail_ends_when_its_reader_goes(node_env, log, invoke, tail_proc):
    """`tail -f | head -3` ends without waiting for a next event, and the checkpoint
    holds only what the reader took."""
    log.generate(10)
    proc = tail_proc("-f", "--since", "1h", "--interval", "0.1")
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    taken = b""
    while taken.count(b"\n") < 3:
        taken += os.read(fd, 1)
    proc.stdout.close()
    assert proc.wait(timeout=30) == 141
    r = invoke("events", "tail", "--resume", "pipe2", "-o", "jsonl", env=node_env)
    assert _ids(r.stdout.encode()) == [str(i) for i in range(4, 11)]


def test_a_reader_that_keeps_the_pipe_but_stops_reading(emulator, log, tmp_path):
    """The wait at the end is bounded: the checkpoint stops before the unread events
    and the user is told how many."""
    log.generate(30)
    client = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                                  label="emu", cacert=emulator.ca_file))
    r, w = os.pipe()
    try:
        ck = checkpoint.CheckpointFile(tmp_path / "ck.json", node="emu",
                                       flt=pages.EventFilter())
        notices: list[str] = []
        statuses: list[str] = []
        sink = sinks.PipeSink(w)
        reader = threading.Thread(target=lambda: _read_exact_lines(r, 7))
        reader.start()
        state = tail.tail(client, tail.TailOptions(token="0", page_size=8), sink,
                          checkpoint=ck, info=NodeInfo("4.4.5"), notice=notices.append,
                          status=statuses.append, drain=0.5)
        reader.join()  # a tail that waited for the reader forever is a timeout failure
        assert state.emitted == 30
        # the wait given, not the default 10 s (none said if half a second passed
        # before the first look at the pipe: a slow machine, not a bug)
        assert statuses in ([], ["waiting up to 0 s for the reader to take the last 23 "
                                 "events"])
        assert notices == ["the reader did not take the last 23 events from the pipe; the "
                           "checkpoint stops before them, so they are sent again next time"]
        saved = json.loads((tmp_path / "ck.json").read_text())
        # page 1 (ids 1-8) began at token 0: seven of it were taken
        assert saved["iteration_token"] == "0"
        assert saved["skip_ids"] == [str(i) for i in range(1, 8)]
    finally:
        client.close()
        os.close(r)
        os.close(w)


def _read_exact_lines(fd: int, lines: int) -> None:
    taken = b""
    while taken.count(b"\n") < lines:
        taken += os.read(fd, 1)


def test_not_a_pipe_is_not_a_pipe_sink(tmp_path: Path):
    with open(tmp_path / "f", "w") as fh:
        assert sinks.PipeSink.of(fh) is None
    import io

    assert sinks.PipeSink.of(io.StringIO()) is None
