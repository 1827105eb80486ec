"""When a tail's checkpoint may move: only past events the reader really got.

A file or a terminal has everything once written (and fsync'ed for files), so the
checkpoint follows each page at once. A pipe is different: written bytes may still sit
in it, and a reader that stops (``| head -5``) never takes them. Through a
:class:`~nodecli.node.events.sinks.PipeSink` the ledger keeps the pages still in the
pipe with the byte offset where each of their events ends, and saves the newest
checkpoint whose events have all left the pipe: a whole page, or the part of one
(its start token and the ids already taken, as a stop within a page is saved).

A batch sink (``events ship``: a :class:`~nodecli.node.events.ship.ShipSink`, which has
``submit``) is the same ledger with futures for offsets: each page is handed over as a
batch in flight and the ledger keeps at most ``window`` of them; it saves the checkpoint
of a page only once its batch and every batch before it were acknowledged, so a batch
acknowledged early never carries the checkpoint past one still unanswered or refused.
A window of 1 is this same path, waiting for each batch before reading the next page.
"""

from __future__ import annotations

import json
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from nodecli.errors import counted
from nodecli.node.events.checkpoint import (
    Checkpoint,
    CheckpointFile,
    event_mark,
    pause_for_tests,
)
from nodecli.node.events.sinks import PipeSink, Sink

# how long a finished tail waits for its pipe's reader to take what is left, before it
# saves the checkpoint short of the unread events (they are sent again next time)
DRAIN_SECONDS = 10.0


@dataclass(slots=True)
class WrittenPage:
    """A page handed to the sink: ``done`` is the checkpoint once all of it was read."""

    done: Checkpoint
    page_token: str | None
    since_iso: str | None
    prev_ids: list[str]
    ids: list[str] = field(default_factory=list)  # page ids up to the last event written
    index: list[int] = field(default_factory=list)  # index in the page of each written event
    start: int = 0  # byte offset in the pipe before the page
    ends: list[int] = field(default_factory=list)  # offset after each written event
    items: Sequence[tuple[dict[str, Any], str]] = ()  # the page (for the last event's mark)
    future: Future[None] | None = None  # a batch sink's delivery of the page (None: nothing)

    def partial(self, taken: int) -> Checkpoint:
        """The checkpoint after the first ``taken`` written events of this page."""
        last = self.index[taken - 1]
        return Checkpoint(self.page_token or "", None if self.page_token else self.since_iso,
                          skip=self.ids[: last + 1], last_ids=list(self.prev_ids),
                          last_event=event_mark(self.items[last][0]) if self.items else None)


class Ledger:
    """Saves checkpoints for what the sink has delivered (see the module text)."""

    def __init__(self, checkpoint: CheckpointFile | None, sink: Sink) -> None:
        self.checkpoint = checkpoint
        self.sink = sink
        self.pipe = sink if isinstance(sink, PipeSink) else None
        # a batch sink: pages in flight, at most ``window`` of them (see the module text)
        self.submit: Callable[..., Future[None]] | None = getattr(sink, "submit", None)
        self.window = max(1, int(getattr(sink, "window", 1))) if self.submit else 1
        self.pending: deque[WrittenPage] = deque()
        self.sent = 0  # events written to the pipe by this run
        self._last_key: tuple[Any, ...] | None = None  # None: the first page saves

    def write(self, page: WrittenPage, texts: Sequence[str]) -> None:
        """Write a page's event texts, then save what the reader is known to have."""
        if self.submit is not None:
            if page.index:
                page.future = self.submit([page.items[i] for i in page.index], texts,
                                          self.flush)
            self.pending.append(page)
            self._settle_batches(keep=self.window - 1)
            return
        if self.pipe is None:
            if page.index:
                self.sink.take([page.items[i] for i in page.index], texts)
                pause_for_tests("batch-delivered")  # delivered; the checkpoint not saved
            page.done.output = self.sink.position()
            self.save(page.done, unless_same=True)
            return
        data = [t.encode("utf-8") for t in texts]
        offset = page.start = self.pipe.written
        for chunk in data:
            offset += len(chunk)
            page.ends.append(offset)
        if not data and self.pending:
            # nothing new in the pipe: this page is read when the one before it is
            self.pending[-1].done = page.done
        else:
            self.pending.append(page)
        self.sent += len(data)
        try:
            if data:
                self.pipe.write_bytes(b"".join(data))
        finally:  # on EPIPE too: save what the reader took before it went
            self.settle()

    def _settle_batches(self, keep: int) -> None:
        """Save the checkpoint of each page, oldest first, whose batch was acknowledged,
        waiting for the oldest until at most ``keep`` are in flight; the first batch that
        failed raises its error, and no page after it is saved."""
        while self.pending:
            future = self.pending[0].future
            if future is not None:
                if len(self.pending) <= keep and not future.done():
                    return
                future.result()
            self._saved()

    def _saved(self) -> None:
        """Save the checkpoint of the oldest page in flight, acknowledged."""
        page = self.pending.popleft()
        if page.future is not None:
            pause_for_tests("batch-delivered")  # delivered; the checkpoint not saved
        page.done.output = self.sink.position()
        self.save(page.done, unless_same=True)

    def flush(self) -> None:
        """Wait for every batch in flight and save; raise the first one's failure."""
        if self.submit is not None:
            self._settle_batches(keep=0)

    def settle(self) -> None:
        """Save the newest checkpoint whose events have all left the pipe (a batch sink:
        whose batches were all acknowledged, without waiting; a failure stops there)."""
        if self.submit is not None:
            while self.pending:
                future = self.pending[0].future
                if future is not None and not (future.done() and future.exception() is None):
                    return
                self._saved()
            return
        if self.pipe is None or not self.pending:
            return
        taken = self.pipe.delivered()
        best: Checkpoint | None = None
        while self.pending:
            page = self.pending[0]
            if (page.ends[-1] if page.ends else page.start) <= taken:
                best = self.pending.popleft().done
                continue
            count = bisect_right(page.ends, taken)
            if count:
                best = page.partial(count)
            break
        if best is not None:
            self.save(best, unless_same=True)

    def unread_events(self) -> int:
        """Events written to the pipe that the reader has not taken whole."""
        if self.pipe is None or not self.pending:
            return 0
        taken = bisect_right(self.pending[0].ends, self.pipe.delivered())
        return sum(len(p.ends) for p in self.pending) - taken

    def reader_stopped(self, left: int = 0) -> str | None:
        """What to tell when the pipe's reader went away before the tail ended: the
        events it took (they left the pipe, so the checkpoint counts them) that it may
        never have shown, as ``head -5`` reads a buffer of them and prints five. None
        without a checkpoint (nothing is counted) or when it took none."""
        if self.pipe is None or self.checkpoint is None:
            self.settle()
            return None
        self.settle()
        taken = self.sent - self.unread_events()
        if taken <= 0:
            return None
        text = (f"the pipe's reader stopped after taking {counted(taken, 'event')}"
                "; it may not have shown them all (a "
                "reader such as head reads ahead), and the checkpoint counts them as "
                "delivered")
        if left:
            text += f"; the {left} it never took are sent again next time"
        return text

    def drain(self, seconds: float = DRAIN_SECONDS,
              status: Callable[[str], None] | None = None) -> int:
        """At the end of a tail: wait (bounded) for the reader to take what is left in
        the pipe, save, and return how many events it never took."""
        pipe = self.pipe
        if pipe is None or not self.pending:
            self.flush()  # a batch sink: the tail ends once every batch is acknowledged
            return 0
        deadline = time.monotonic() + seconds
        told = False
        while True:
            self.settle()
            if not self.pending or pipe.reader_gone() or time.monotonic() >= deadline:
                break
            if status is not None and not told:
                status(f"waiting up to {seconds:.0f} s for the reader to take the last "
                       f"{counted(self.unread_events(), 'event')}")
                told = True
            time.sleep(0.02)
        return self.unread_events()

    def save(self, cp: Checkpoint, *, unless_same: bool = False) -> None:
        """Save ``cp`` (with ``unless_same``: only when the position moved)."""
        if self.checkpoint is None or not (cp.token or cp.after_time):
            return
        key = self._key(cp)
        if not (unless_same and key == self._last_key):
            self.checkpoint.save(cp)
            self._last_key = key

    @staticmethod
    def _key(cp: Checkpoint) -> tuple[Any, ...]:
        return (cp.token, cp.after_time, tuple(cp.skip),
                json.dumps(cp.output, sort_keys=True))
