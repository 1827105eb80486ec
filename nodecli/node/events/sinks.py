"""Where a tail's events go: a stream (write, flush) or a file (append, fsync, and
recovery of a page cut by a crash, so nothing is written twice)."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from nodecli.errors import (
    ConflictError,
    UsageError,
)
from nodecli.node.events.checkpoint import Checkpoint
from nodecli.node.events.pages import event_id


class Sink(Protocol):
    """Where a tail's pages go. The tail hands each page's events to :meth:`take` and
    saves the checkpoint past them when it returns (the pipe's ledger, see
    ``delivery.Ledger``, only past what the reader took): ``take`` returns when the
    events are delivered as far as this sink can tell, and raises otherwise."""

    #: one text per event (the pipe's ledger counts each event's bytes)
    per_event: bool
    #: a sink the terminal does not show (a file, a remote system): a progress line helps
    quiet: bool

    def take(self, items: Sequence[tuple[dict[str, Any], str]],
             texts: Sequence[str]) -> None:
        """Deliver a page's events (``texts``: their text in the tail's format)."""

    def position(self) -> dict[str, Any] | None:
        """What to record in the checkpoint about the output (files only)."""

    def recover(self, cp: Checkpoint | None) -> list[str]:
        """Ids the output already holds past ``cp`` (files only: a crash's page)."""

    def close(self) -> None:
        """Release what the sink holds; it is not used after this."""


class TextSink:
    """A sink of text: a page is written as the one text of its events."""

    per_event = False
    quiet = False

    def write(self, chunk: str) -> None:
        raise NotImplementedError

    def take(self, items: Sequence[tuple[dict[str, Any], str]],
             texts: Sequence[str]) -> None:
        if texts:
            self.write("".join(texts))

    def position(self) -> dict[str, Any] | None:
        return None

    def recover(self, cp: Checkpoint | None) -> list[str]:
        return []

    def close(self) -> None:
        return None


class WriterSink(TextSink):
    """A sink that has only ``write``, ``position`` and ``recover`` (the protocol's
    first form, kept for callers that made their own) as a :class:`Sink`."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer

    def write(self, chunk: str) -> None:
        self.writer.write(chunk)

    def position(self) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.writer.position()
        return found

    def recover(self, cp: Checkpoint | None) -> list[str]:
        return list(self.writer.recover(cp))


def as_sink(sink: Any) -> Sink:
    """``sink`` as a :class:`Sink` (one with only ``write`` is wrapped)."""
    return sink if hasattr(sink, "take") else WriterSink(sink)


class StreamSink(TextSink):
    """stdout (or any text stream): write, then flush."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, chunk: str) -> None:
        self.stream.write(chunk)
        self.stream.flush()


class PipeSink(TextSink):
    """stdout when it is a pipe, on Linux: bytes go straight to the descriptor and are
    counted, and FIONREAD on this write end tells how many the reader has not taken yet,
    so a checkpoint can stop at what really left the pipe (see ``delivery.Ledger``)."""

    per_event = True

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.written = 0

    @classmethod
    def of(cls, stream: IO[str]) -> PipeSink | None:
        """A PipeSink for ``stream`` when it is a pipe whose unread bytes can be known."""
        import stat
        import sys

        if not sys.platform.startswith("linux"):
            return None
        try:
            fd = stream.fileno()
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return None
            sink = cls(fd)
            sink.unread()
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both
            return None
        stream.flush()  # what was printed before goes first
        return sink

    def write(self, chunk: str) -> None:
        self.write_bytes(chunk.encode("utf-8"))

    def write_bytes(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except BlockingIOError:  # someone made the shared pipe non-blocking
                import select

                select.select([], [self.fd], [], 1.0)
                continue
            self.written += n
            view = view[n:]

    def unread(self) -> int:
        """Bytes written that the reader has not read (still in the pipe)."""
        import array
        import fcntl
        import termios

        buf = array.array("i", [0])
        fcntl.ioctl(self.fd, termios.FIONREAD, buf, True)
        return max(0, buf[0])

    def delivered(self) -> int:
        """Bytes the reader has taken out of the pipe."""
        try:
            return max(0, self.written - self.unread())
        except OSError:
            return 0

    def reader_gone(self) -> bool:
        import select

        poller = select.poll()
        poller.register(self.fd, select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))


class FileSink(TextSink):
    """Append to a file: write, flush, fsync; recover after a crash (see :meth:`recover`)."""

    quiet = True

    def __init__(self, path: Path, fmt: str) -> None:
        self.path = Path(path)
        self.fmt = fmt
        import stat

        # O_NONBLOCK: a FIFO must not hang the tail (refused just below, with a reason)
        flags = (os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_NONBLOCK", 0))
        not_regular = UsageError(f"{self.path} is not a regular file: the output file must be "
                                 "a plain file (its checkpoint counts on its size); pipe "
                                 "stdout instead")
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO nobody reads (O_NONBLOCK write-open)
                raise not_regular from None
            raise UsageError(f"cannot open {self.path} for appending: {exc.strerror}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise not_regular
        os.set_blocking(fd, True)
        self._fd = fd
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:
            pass
        except OSError:
            os.close(fd)
            raise ConflictError(f"{self.path} is being written by another 'events tail'",
                                hint="two tails into one file would interleave") from None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def write(self, chunk: str) -> None:
        data = memoryview(chunk.encode("utf-8"))
        while data:
            n = os.write(self._fd, data)
            data = data[n:]
        os.fsync(self._fd)

    def position(self) -> dict[str, Any] | None:
        st = os.fstat(self._fd)
        return {"path": str(self.path), "size": st.st_size, "dev": st.st_dev, "ino": st.st_ino}

    def drop_cut_line(self) -> None:
        """Truncate a last line without its newline (cut by a crash while written)."""
        size = os.fstat(self._fd).st_size
        if not size:
            return
        with open(self.path, "rb") as fh:
            start = max(0, size - 65536)
            while True:
                fh.seek(start)
                block = fh.read(size - start)
                cut = block.rfind(b"\n")
                if cut >= 0 or start == 0:
                    break
                start = max(0, start - 65536)
        keep = start + cut + 1 if cut >= 0 else 0
        if keep < size:
            os.ftruncate(self._fd, keep)
            os.fsync(self._fd)

    def recover(self, cp: Checkpoint | None, node: str | None = None) -> list[str]:
        """Ids written after the checkpoint (the page being written at a crash).

        Complete lines after the checkpointed size are kept and their ids returned (the
        tail skips them when the page is fetched again); a line cut by the crash is
        truncated away. A rotated or replaced file is left alone. In a merged file
        (``node``), only the lines of that node count.
        """
        if cp is None or not cp.output:
            return []
        st = os.fstat(self._fd)
        size = cp.output.get("size")
        if (cp.output.get("dev"), cp.output.get("ino")) != (st.st_dev, st.st_ino) or not (
            isinstance(size, int) and 0 <= size <= st.st_size
        ):
            return []
        if size == st.st_size:
            return []
        with open(self.path, "rb") as fh:
            fh.seek(size)
            tail = fh.read()
        ids: list[str] = []
        keep = 0
        for line in tail.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            eid, owner = _id_of_line(line, self.fmt)
            if eid is None:
                break
            if node is None or owner == node:
                ids.append(eid)
            keep += len(line)
        if keep < len(tail):
            os.ftruncate(self._fd, size + keep)
            os.fsync(self._fd)
        return ids


def _id_of_line(line: bytes, fmt: str) -> tuple[str | None, str | None]:
    """(the event id, the merged ``node`` field) of a line the tail wrote."""
    try:
        text = line.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return None, None
    if fmt == "jsonl":
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            return None, None
        if not (isinstance(obj, dict) and "id" in obj):
            return None, None
        owner = obj.get("node")
        return event_id(obj), owner if isinstance(owner, str) else None
    parts = text.split("\t")
    return (parts[1] if len(parts) >= 5 and parts[1] else None), None
