"""Sinks of ``events tail`` (nodecli/node/events/sinks.py), at the edges the mutation run
found unwatched: a pipe's count of bytes written and taken by the reader (exactly, from
0), a write larger than the pipe into a pipe someone made non-blocking, a full pipe
whose reader is still there (not gone, and told at once), and a sink that has only the
protocol's first form (``write``, ``position``, ``recover``). In process, over real
pipes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from typing import Any

import pytest

from nodecli.errors import ConflictError
from nodecli.node.events import sinks
from nodecli.node.events.checkpoint import Checkpoint
from tests.conftest import subprocess_env


def test_a_pipe_sink_counts_what_the_reader_took_exactly():
    r, w = os.pipe()
    try:
        sink = sinks.PipeSink(w)
        assert (sink.written, sink.unread(), sink.delivered()) == (0, 0, 0)
        sink.write("0123456789")
        assert (sink.written, sink.unread(), sink.delivered()) == (10, 10, 0)
        assert os.read(r, 4) == b"0123"
        assert (sink.unread(), sink.delivered()) == (6, 4)
        assert not sink.reader_gone()
    finally:
        os.close(r)
        os.close(w)


def test_a_write_larger_than_a_non_blocking_pipe_arrives_whole():
    """Someone made the shared pipe non-blocking: each short write goes on from where
    it stopped until every byte is in the pipe."""
    data = bytes(range(256)) * 1024  # 256 KiB: four times a Linux pipe
    r, w = os.pipe()
    got = bytearray()

    def read_all() -> None:
        while chunk := os.read(r, 65536):
            got.extend(chunk)

    reader = threading.Thread(target=read_all)
    reader.start()
    try:
        os.set_blocking(w, False)
        sink = sinks.PipeSink(w)
        sink.write_bytes(data)
        assert sink.written == len(data)
    finally:
        os.close(w)
        reader.join(timeout=60)  # (a ceiling for a hang, not a measure)
        os.close(r)
    assert not reader.is_alive()
    assert bytes(got) == data


def test_a_full_pipe_whose_reader_is_there_is_not_gone_and_says_so_at_once():
    r, w = os.pipe()
    try:
        os.set_blocking(w, False)
        try:
            while True:
                os.write(w, b"x" * 4096)
        except BlockingIOError:
            pass  # full: the reader has not read any of it
        sink = sinks.PipeSink(w)
        answers: list[bool] = []
        asking = threading.Thread(target=lambda: answers.append(sink.reader_gone()),
                                  daemon=True)
        asking.start()
        asking.join(timeout=60)  # a look, not a wait: a hang fails here
        assert answers == [False]
        os.close(r)
        r = -1
        assert sink.reader_gone()
    finally:
        if r >= 0:
            os.close(r)
        os.close(w)


class _Writer:
    """A sink of the protocol's first form: write, position and recover only."""

    def __init__(self) -> None:
        self.text = ""
        self.asked: list[Any] = []

    def write(self, chunk: str) -> None:
        self.text += chunk

    def position(self) -> dict[str, Any]:
        return {"size": len(self.text)}

    def recover(self, cp: Any) -> tuple[str, ...]:
        self.asked.append(cp)
        return ("3", "4")


def test_a_writer_of_the_first_form_is_a_sink_with_its_position_and_recovery():
    writer = _Writer()
    sink = sinks.as_sink(writer)
    assert isinstance(sink, sinks.WriterSink)
    sink.take([({"id": "1"}, "a"), ({"id": "2"}, "b")], ["a\nb\n"])
    assert writer.text == "a\nb\n"
    assert sink.position() == {"size": 4}
    cp = Checkpoint("7")
    assert sink.recover(cp) == ["3", "4"]
    assert writer.asked == [cp]
    assert sinks.as_sink(sink) is sink  # a sink already: not wrapped again


def test_a_text_sink_writes_a_page_of_several_texts_as_one_text():
    out = io.StringIO()
    sinks.StreamSink(out).take([({"id": "1"}, "a"), ({"id": "2"}, "b")], ["a\n", "b\n"])
    assert out.getvalue() == "a\nb\n"


def test_a_second_tail_into_one_file_is_refused_with_the_reason(tmp_path):
    target = tmp_path / "events.jsonl"
    first = sinks.FileSink(target, "jsonl")
    try:
        with pytest.raises(ConflictError) as exc:
            sinks.FileSink(target, "jsonl")
        assert exc.value.hint == "two tails into one file would interleave"
    finally:
        first.close()


# In a child: descriptor 0 closed (a daemon started without stdin) and a file-size limit
# (as a full disk does, the kernel takes only part of a write, then refuses the next).
_CHILD = r"""
import errno, json, os, resource, signal, sys
from nodecli.node.events.sinks import FileSink
folder = sys.argv[1]
said = {}
os.close(0)
sink = FileSink(os.path.join(folder, "zero.jsonl"), "jsonl")
said["fd"] = os.fstat(0).st_ino == os.stat(os.path.join(folder, "zero.jsonl")).st_ino
sink.close()
try:
    os.fstat(0)
    said["closed"] = False
except OSError as exc:
    said["closed"] = exc.errno == errno.EBADF
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
sink = FileSink(os.path.join(folder, "limit.jsonl"), "jsonl")
try:
    sink.write("x" * 150 + "\n")
    said["short"] = "written"
except OSError as exc:
    said["short"] = errno.errorcode.get(exc.errno, str(exc.errno))
print(json.dumps(said))
"""


def test_a_file_sink_closes_descriptor_0_and_never_takes_a_short_write_for_a_whole(
        tmp_path):
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)],
                          capture_output=True, text=True, env=subprocess_env(), timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"fd": True, "closed": True, "short": "EFBIG"}
    assert (tmp_path / "limit.jsonl").stat().st_size == 100  # the part the kernel took
