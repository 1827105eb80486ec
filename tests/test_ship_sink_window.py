"""ShipSink, the window's side of ``events ship`` in process: how many batches a sink
may have in flight, retries under ``-f`` (after every batch before them is held, with
the status said), no retry without ``-f`` or once closed, and the note a short page
leaves in the checkpoint. The batch sinks here are plain objects keeping the protocol
(deliver, close); the real sinks are tested against their servers elsewhere."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from nodecli.node.events.batch import Shipped, SinkError
from nodecli.node.events.checkpoint import Checkpoint, CheckpointFile
from nodecli.node.events.pages import EventFilter
from nodecli.node.events.ship import ShipSink


class Flaky:
    """Fails the first ``fails`` deliveries of each batch (by its first id), retryably."""

    def __init__(self, fails: dict[str, int] | None = None, **attrs: Any) -> None:
        self.fails = dict(fails or {})
        self.held: list[list[str]] = []
        self.tries: list[str] = []
        self.lock = threading.Lock()
        for name, value in attrs.items():
            setattr(self, name, value)

    def deliver(self, batch: list[Shipped]) -> None:
        first = batch[0].event_id
        with self.lock:
            self.tries.append(first)
            if self.fails.get(first, 0) > 0:
                self.fails[first] -= 1
                raise SinkError(f"batch {first} not now", retryable=True)
            self.held.append([e.event_id for e in batch])

    def close(self) -> None:
        pass


def items(*ids: int) -> list[tuple[dict[str, Any], str]]:
    return [({"id": str(i), "types": ["file.created"]}, f'{{"id":"{i}"}}') for i in ids]


def sink_of(batch: Any, *, follow: bool = True, naps: list[float] | None = None,
            said: list[str] | None = None, retry_base: float = 1.0,
            retry_cap: float = 60.0, **kw: Any) -> ShipSink:
    return ShipSink(batch, "n1", kw.pop("checkpoint", None), follow=follow,
                    nap=(naps if naps is not None else []).append,
                    retry_base=retry_base, retry_cap=retry_cap,
                    status=said.append if said is not None else None, **kw)


@pytest.mark.parametrize(("asked", "sink_max", "window"),
                         [(4, None, 4), (4, 1, 1), (2, 3, 2), (0, None, 1), (4, 0, 1)])
def test_the_window_is_what_the_sink_takes_and_at_least_one(asked, sink_max, window):
    batch = Flaky() if sink_max is None else Flaky(max_window=sink_max)
    ship = sink_of(batch, window=asked)
    try:
        assert ship.window == window
    finally:
        ship.close()


def test_a_retryable_failure_under_follow_is_retried_and_said():
    naps: list[float] = []
    said: list[str] = []
    batch = Flaky({"1": 1})
    ship = sink_of(batch, naps=naps, said=said)
    try:
        ship.take(items(1, 2, 3), ["a", "b", "c"])
    finally:
        ship.close()
    assert batch.held == [["1", "2", "3"]] and batch.tries == ["1", "1"]
    assert len(naps) == 1 and 0.2 <= naps[0] <= 1.0  # base 1 s, at least base / 5
    assert said[0].startswith("reconnecting (attempt 1, next in ")
    assert said[0].endswith("s): batch 1 not now") and said[1:] == ["resumed"]


def test_without_follow_a_retryable_failure_ends_the_batch():
    naps: list[float] = []
    batch = Flaky({"1": 1})
    ship = sink_of(batch, follow=False, naps=naps)
    try:
        with pytest.raises(SinkError, match="batch 1 not now"):
            ship.take(items(1, 2), ["a", "b"])
    finally:
        ship.close()
    assert naps == [] and batch.held == []


def test_a_later_batch_retries_only_after_the_one_before_is_held():
    """Page 2's first try fails while page 1 is still being sent: its retry waits for
    page 1, so the retry goes out after it and both are held, page 1 first."""
    release = threading.Event()
    first_in = threading.Event()

    class Slow(Flaky):
        def deliver(self, batch: list[Shipped]) -> None:
            if batch[0].event_id == "1":
                first_in.set()
                assert release.wait(30)  # bounded: the test releases it below
            super().deliver(batch)

    naps: list[float] = []
    batch = Slow({"3": 1})
    ship = sink_of(batch, naps=naps, window=2, batch_size=2)  # whole pages: in flight

    def nap(seconds: float) -> None:
        naps.append(seconds)

    ship.nap = nap
    try:
        one: Future[None] = ship.submit(items(1, 2), ["a", "b"], lambda: None)
        assert first_in.wait(30)
        two: Future[None] = ship.submit(items(3, 4), ["c", "d"], lambda: None)
        # page 2 tried once and failed; its retry waits for page 1, still held back
        threading.Thread(target=lambda: (batch_tried(batch, "3"), release.set()),
                         daemon=True).start()
        one.result(30)
        two.result(30)
    finally:
        release.set()
        ship.close()
    assert batch.held == [["1", "2"], ["3", "4"]] and batch.tries.count("3") == 2
    assert len(naps) == 1


def batch_tried(batch: Flaky, first: str) -> None:
    for _ in range(3000):  # waits on the sink's own record (a ceiling, not a hope)
        with batch.lock:
            if first in batch.tries:
                return
        threading.Event().wait(0.01)
    raise AssertionError(f"batch {first} was never tried")


def test_close_stops_the_retries_of_a_batch_that_never_goes():
    batch = Flaky({"1": 10**6})
    closers: list[threading.Thread] = []
    ship = sink_of(batch, batch_size=1)  # a whole page: sent on the window's thread

    def nap(seconds: float) -> None:
        if len(closers) >= 100:
            raise AssertionError("close did not stop the retries")
        closers.append(threading.Thread(target=ship.close))
        closers[-1].start()

    ship.nap = nap
    future = ship.submit(items(1), ["a"], lambda: None)
    with pytest.raises(SinkError, match="batch 1 not now"):
        future.result(60)
    for closer in closers:
        closer.join(60)
    assert batch.held == [] and 1 <= len(closers) < 100


def test_a_short_page_is_noted_in_the_checkpoint_before_it_is_sent(tmp_path: Path):
    """A page shorter than --batch may come back different after a restart, so how it
    is sent (its first event, each batch's last) is noted first; the position stays."""
    ck = CheckpointFile(tmp_path / "ck.json", node="n1", flt=EventFilter())
    ck.save(Checkpoint("tok-0"))
    notes: list[Any] = []

    class Peek(Flaky):
        def deliver(self, batch: list[Shipped]) -> None:
            loaded = ck.load()
            notes.append(loaded.output if loaded is not None else None)
            super().deliver(batch)

    ship = sink_of(Peek(), checkpoint=ck, batch_size=5)
    try:
        ship.submit(items(7, 8, 9), ["a", "b", "c"], lambda: None).result(30)
    finally:
        ship.close()
    assert notes == [{"sending": {"node": "n1", "first": "7", "lasts": ["9"], "last": "9"}}]
    after = ck.load()
    assert after is not None and after.token == "tok-0"
    assert ship.batches == 1  # what "shipped N events in M batches" counts
