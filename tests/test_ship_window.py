"""events ship --window: batches in flight together, the checkpoint only past the oldest
batch acknowledged with every one before it (delivery.Ledger), and what a restart sends
again (at most the window)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future
from typing import Any

from nodecli.emulator.collector import CollectorState
from nodecli.node.events.checkpoint import Checkpoint
from nodecli.node.events.delivery import Ledger, WrittenPage
from tests.test_events_ship import (  # noqa: F401 - fixtures
    _collector_server,
    collector,
    ship_env,
    stored_ids,
)

# -- the ledger alone: futures answered out of order -------------------------------------


class Saved:
    """A CheckpointFile that records each checkpoint saved."""

    def __init__(self) -> None:
        self.saved: list[str] = []

    def save(self, cp: Checkpoint) -> None:
        self.saved.append(cp.token)


class Window:
    """A batch sink whose batches are answered when the test says."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.futures: list[Future[None]] = []

    def submit(self, items: Any, texts: Any, flush: Any) -> Future[None]:
        self.futures.append(Future())
        return self.futures[-1]

    def position(self) -> None:
        return None


def page(n: int) -> WrittenPage:
    return WrittenPage(Checkpoint(f"after-{n}"), None, None, [], ids=[str(n)], index=[0],
                       items=[({"id": str(n)}, "")])


def test_a_later_ack_does_not_move_the_checkpoint_past_an_earlier_batch() -> None:
    saved, sink = Saved(), Window(4)
    ledger = Ledger(saved, sink)  # type: ignore[arg-type]
    for n in (1, 2, 3):
        ledger.write(page(n), [""])  # three in flight of four: write returns at once
    assert len(ledger.pending) == 3 and saved.saved == []
    sink.futures[2].set_result(None)  # the third is acknowledged first
    sink.futures[1].set_result(None)
    ledger.settle()
    assert saved.saved == []  # the first is unanswered: nothing moves
    sink.futures[0].set_result(None)
    ledger.settle()
    assert saved.saved == ["after-1", "after-2", "after-3"] and not ledger.pending


def test_a_refused_batch_stops_the_checkpoint_before_it_whatever_follows() -> None:
    saved, sink = Saved(), Window(4)
    ledger = Ledger(saved, sink)  # type: ignore[arg-type]
    for n in (1, 2, 3):
        ledger.write(page(n), [""])
    sink.futures[0].set_result(None)
    sink.futures[1].set_exception(RuntimeError("refused"))
    sink.futures[2].set_result(None)
    ledger.settle()  # does not raise; saves up to the refused one
    assert saved.saved == ["after-1"]
    try:
        ledger.flush()
    except RuntimeError as exc:
        assert str(exc) == "refused"
    else:
        raise AssertionError("the refusal was not raised")
    assert saved.saved == ["after-1"]


class WaitedFor(Future[None]):
    """A batch answered only when the ledger waits for it (and says so)."""

    waited = False

    def result(self, timeout: float | None = None) -> None:
        self.waited = True
        if not self.done():
            self.set_result(None)
        return super().result(timeout)


class Waits(Window):
    def submit(self, items: Any, texts: Any, flush: Any) -> Future[None]:
        self.futures.append(WaitedFor())
        return self.futures[-1]


def test_the_window_is_the_bound_of_batches_in_flight() -> None:
    saved, sink = Saved(), Waits(2)
    ledger = Ledger(saved, sink)  # type: ignore[arg-type]
    ledger.write(page(1), [""])
    assert len(ledger.pending) == 1 and not sink.futures[0].waited  # type: ignore[attr-defined]
    ledger.write(page(2), [""])  # the second fills the window: the oldest is waited for
    assert sink.futures[0].waited and not sink.futures[1].waited  # type: ignore[attr-defined]
    assert len(ledger.pending) == 1 and saved.saved == ["after-1"]
    one, sink = Saved(), Waits(1)
    ledger = Ledger(one, sink)  # type: ignore[arg-type]
    ledger.write(page(1), [""])  # a window of 1: each batch waited for before the next
    assert sink.futures[0].waited  # type: ignore[attr-defined]
    assert not ledger.pending and one.saved == ["after-1"]


# -- over the wire: the collector answers a later batch while it refuses an earlier ------


class LaterFirst(CollectorState):
    """Batch 2 (events 6-10) is refused only once batch 3 (11-15) was stored."""

    def __init__(self) -> None:
        super().__init__()
        self.later = threading.Event()

    def take(self, key: str | None, body: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        if key is not None and key.endswith(":6:10"):
            assert self.later.wait(60)  # bounded: the shipper has batch 3 in flight
            with self.lock:
                self.posts += 1
                self.keys[key] += 1
            return 400, {"error": "refused"}, {}
        answer = super().take(key, body)
        if key is not None and key.endswith(":11:15"):
            self.later.set()
        return answer


def test_a_batch_refused_while_a_later_one_is_held(invoke, ship_env, log, collector,  # noqa: F811
                                                   tmp_path):
    log.generate(15)
    collector.state = LaterFirst()
    ck = tmp_path / "ck.json"
    args = ("events", "ship", "--to", collector.url, "--checkpoint", str(ck), "--batch", "5",
            "--since", "1h", "--window", "2")
    r = invoke(*args, env=ship_env)
    assert r.exit_code == 6, r
    assert "refused batch" in r.stderr and ":6:10" in r.stderr
    assert stored_ids(collector.state) == [str(i) for i in (1, 2, 3, 4, 5, 11, 12, 13, 14, 15)]
    # the checkpoint stays before the refused batch, not after the later one held
    assert json.loads(ck.read_text())["last_event"]["id"] == "5"
    collector.state = state = CollectorState()
    r = invoke(*args, env=ship_env)
    assert r.exit_code == 0, r
    # the repeat: the window's; its two batches are in flight together, so the collector
    # may store either first (docs/shipping.md), each whole and once
    assert sorted(stored_ids(state), key=int) == [str(i) for i in range(6, 16)]
    assert sorted(k.rsplit(":", 2)[1:] for k, _ in state.stored) == [["11", "15"], ["6", "10"]]

