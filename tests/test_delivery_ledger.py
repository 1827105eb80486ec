"""delivery.py's pure parts, in process: the checkpoint of a page the pipe's reader took
in part (``WrittenPage.partial``), and what the ledger saves and when, with sinks that
are plain objects (no node, no pipe, no thread)."""

from __future__ import annotations

import os
from concurrent.futures import Future
from typing import Any

import pytest

from nodecli.node.events.checkpoint import Checkpoint, event_mark
from nodecli.node.events.delivery import Ledger, WrittenPage

ITEMS = [({"id": str(i), "time": f"2030-01-01T00:00:0{i}Z"}, f'{{"id":"{i}"}}')
         for i in range(1, 5)]


def written(token: str | None, items: Any = ITEMS) -> WrittenPage:
    """A page of four events of which the second was not written (a skipped repeat)."""
    return WrittenPage(Checkpoint("next"), token, "2030-01-01T00:00:00Z", ["p1", "p2"],
                       ids=["1", "2", "3", "4"], index=[0, 2, 3], items=items)


def test_partial_is_the_page_start_and_the_ids_up_to_the_last_taken() -> None:
    page = written(None)  # the first page: it starts at a time, not a token
    cp = page.partial(2)  # the reader took the first two written: events 1 and 3
    assert cp == Checkpoint("", "2030-01-01T00:00:00Z", skip=["1", "2", "3"],
                            last_ids=["p1", "p2"], last_event=event_mark(ITEMS[2][0]))
    assert cp.last_ids is not page.prev_ids  # a copy: the page may change after
    later = written("tok").partial(1)  # a later page starts at its token, no time
    assert later == Checkpoint("tok", None, skip=["1"], last_ids=["p1", "p2"],
                               last_event=event_mark(ITEMS[0][0]))
    assert written("tok", items=()).partial(3).last_event is None  # no page kept


class Saved:
    def __init__(self) -> None:
        self.saved: list[Checkpoint] = []

    def save(self, cp: Checkpoint) -> None:
        self.saved.append(cp)


class Plain:
    """A sink that is neither a pipe nor a batch sink (a file, a terminal)."""

    per_event = False

    def __init__(self) -> None:
        self.taken: list[list[str]] = []
        self.at = 0

    def take(self, items: Any, texts: Any) -> None:
        self.taken.append([o["id"] for o, _ in items])
        self.at += 1

    def position(self) -> dict[str, int]:
        return {"pages": self.at}


def test_a_plain_sink_saves_each_page_with_its_position_once() -> None:
    saved, sink = Saved(), Plain()
    ledger = Ledger(saved, sink)  # type: ignore[arg-type]
    assert ledger.window == 1 and ledger.submit is None and ledger.pipe is None
    ledger.write(written("a"), ["x"])
    assert sink.taken == [["1", "3", "4"]]  # the written events, in page order
    assert [(c.token, c.output) for c in saved.saved] == [("next", {"pages": 1})]
    empty = WrittenPage(Checkpoint("next"), "b", None, [], ids=[], index=[], items=[])
    ledger.write(empty, [])  # nothing written: the sink is not called...
    assert sink.taken == [["1", "3", "4"]]
    assert len(saved.saved) == 1  # ...and the same position is not saved again
    moved = WrittenPage(Checkpoint("after"), "c", None, [], ids=[], index=[], items=[])
    ledger.write(moved, [])
    assert [c.token for c in saved.saved] == ["next", "after"]


def test_save_needs_a_position_and_a_checkpoint_file() -> None:
    saved = Saved()
    ledger = Ledger(saved, Plain())  # type: ignore[arg-type]
    ledger.save(Checkpoint(""))  # neither a token nor a time: nothing to resume from
    assert saved.saved == []
    ledger.save(Checkpoint("", "2030-01-01T00:00:00Z"))
    ledger.save(Checkpoint("", "2030-01-01T00:00:00Z"))  # not unless_same: saved again
    ledger.save(Checkpoint("", "2030-01-01T00:00:00Z"), unless_same=True)
    assert len(saved.saved) == 2
    Ledger(None, Plain()).save(Checkpoint("t"))  # type: ignore[arg-type]  (no file: fine)


class Batches:
    """A batch sink whose futures the test answers."""

    per_event = False

    def __init__(self, window: Any) -> None:
        self.window = window
        self.futures: list[Future[None]] = []
        self.submitted: list[list[str]] = []

    def submit(self, items: Any, texts: Any, flush: Any) -> Future[None]:
        self.submitted.append([o["id"] for o, _ in items])
        self.texts = texts
        self.futures.append(Future())
        return self.futures[-1]

    def position(self) -> None:
        return None


class Unsized(Batches):
    """A batch sink that does not say its window."""

    def __getattribute__(self, name: str) -> Any:
        if name == "window":
            raise AttributeError(name)
        return super().__getattribute__(name)


@pytest.mark.parametrize(("asked", "window"), [(0, 1), (-3, 1), ("3", 3), (16, 16)])
def test_the_window_is_the_sinks_at_least_one(asked: Any, window: int) -> None:
    assert Ledger(Saved(), Batches(asked)).window == window  # type: ignore[arg-type]
    assert Ledger(Saved(), Plain()).window == 1  # type: ignore[arg-type]
    assert Ledger(Saved(), Unsized(8)).window == 1  # type: ignore[arg-type]


def test_a_page_without_events_waits_behind_the_batches_in_flight() -> None:
    saved, sink = Saved(), Batches(3)
    ledger = Ledger(saved, sink)  # type: ignore[arg-type]
    ledger.write(written("a"), ["the page's text"])
    assert sink.submitted == [["1", "3", "4"]] and sink.texts == ["the page's text"]
    empty = WrittenPage(Checkpoint("after-empty"), "b", None, [], ids=[], index=[], items=[])
    ledger.write(empty, [])  # nothing to send: no batch, but its checkpoint waits its turn
    assert len(sink.submitted) == 1 and empty.future is None and len(ledger.pending) == 2
    assert saved.saved == []
    ledger.settle()
    assert saved.saved == []  # the batch before it is unanswered
    assert ledger.unread_events() == 0  # (a pipe's count: none here, batches or not)
    sink.futures[0].set_result(None)
    ledger.settle()
    assert [c.token for c in saved.saved] == ["next", "after-empty"] and not ledger.pending
    assert ledger.unread_events() == 0 and ledger.drain() == 0  # not a pipe


def test_flush_and_drain_wait_for_every_batch_and_raise_the_first_failure() -> None:
    saved, sink = Saved(), Batches(4)
    ledger = Ledger(saved, sink)  # type: ignore[arg-type]
    for token in ("a", "b", "c"):
        ledger.write(written(token), [])
    sink.futures[0].set_result(None)
    sink.futures[2].set_result(None)
    sink.futures[1].set_exception(OSError("refused"))
    with pytest.raises(OSError, match="refused"):
        ledger.drain()
    assert len(saved.saved) == 1 and len(ledger.pending) == 2  # the refused one stays
    assert ledger.reader_stopped() is None  # not a pipe: nothing to tell


def test_equal_checkpoints_are_saved_once_and_their_output_counts() -> None:
    saved = Saved()
    ledger = Ledger(saved, Plain())  # type: ignore[arg-type]
    ledger.save(Checkpoint("t", output={"a": 1, "b": 2}), unless_same=True)
    ledger.save(Checkpoint("t", output={"b": 2, "a": 1}), unless_same=True)  # same, reordered
    assert len(saved.saved) == 1
    ledger.save(Checkpoint("t", output={"a": 1, "b": 3}), unless_same=True)  # output moved
    assert [c.output for c in saved.saved] == [{"a": 1, "b": 2}, {"a": 1, "b": 3}]


class Positioned(Batches):
    def position(self) -> dict[str, int]:  # type: ignore[override]
        return {"batches": len(self.futures)}


def test_a_batch_sinks_page_pauses_at_batch_delivered_before_its_save(monkeypatch) -> None:
    import socket
    import tempfile
    import threading

    folder = tempfile.mkdtemp(prefix="nodecli-pause-")  # short: AF_UNIX paths
    path = os.path.join(folder, "s")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    saved, sink = Saved(), Positioned(2)
    seen: list[tuple[str, int]] = []

    def answer() -> None:
        while True:
            conn, _ = server.accept()
            with conn:
                word = conn.recv(64).decode().split()[0]
                if word == "end":  # the test's own, once the ledger is done
                    return
                seen.append((word, len(saved.saved)))
                conn.sendall(b"go\n")

    helper = threading.Thread(target=answer, daemon=True)
    helper.start()
    monkeypatch.setenv("NODECLI_TEST_PAUSE", f"batch-delivered@{path}")
    try:
        ledger = Ledger(saved, sink)  # type: ignore[arg-type]
        ledger.write(written("a"), [])
        sink.futures[0].set_result(None)
        same = WrittenPage(Checkpoint("next"), "b", None, [], ids=[], index=[], items=[])
        ledger.write(same, [])  # no batch (no pause) and the same checkpoint (no save)
        ledger.flush()
        plain = Ledger(saved, Plain())  # type: ignore[arg-type]
        plain.write(written("c"), ["x"])  # a file's page: the same point, before its save
    finally:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as end:
            end.connect(path)
            end.sendall(b"end\n")
        helper.join(10)
        server.close()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    assert seen == [("batch-delivered", 0), ("batch-delivered", 1)]  # before each save
    assert [(c.token, c.output) for c in saved.saved] == [("next", {"batches": 1}),
                                                          ("next", {"pages": 1})]


# -- a pipe: the checkpoint follows what the reader took (a real pipe, FIONREAD) ----------


def pipe_page(token: str, ids: list[str]) -> WrittenPage:
    items = [({"id": i}, f'{{"id":"{i}"}}') for i in ids]
    return WrittenPage(Checkpoint(f"after-{token}"), token, None, ["p"], ids=list(ids),
                       index=list(range(len(ids))), items=items)


def test_a_pipe_saves_what_the_reader_took_whole_or_in_part() -> None:
    from nodecli.node.events.sinks import PipeSink

    r, w = os.pipe()
    try:
        saved = Saved()
        ledger = Ledger(saved, PipeSink(w))  # type: ignore[arg-type]
        ledger.write(pipe_page("e", []), [])  # nothing written: taken at once
        assert [c.token for c in saved.saved] == ["after-e"]
        ledger.write(pipe_page("a", ["1", "2"]), ["aa\n", "bbb\n"])  # 3 + 4 bytes
        assert len(saved.saved) == 1 and ledger.unread_events() == 2  # none read yet
        assert os.read(r, 3) == b"aa\n"
        ledger.settle()
        ledger.settle()  # nothing more read: not saved again
        assert [(c.token, c.skip) for c in saved.saved[1:]] == [("a", ["1"])]
        assert ledger.unread_events() == 1
        ledger.write(pipe_page("f", []), [])  # nothing new: read when page a is
        assert len(ledger.pending) == 1
        assert os.read(r, 4) == b"bbb\n"  # exactly the rest: the whole page
        ledger.settle()
        assert [(c.token, c.skip) for c in saved.saved[2:]] == [("after-f", [])]
        assert not ledger.pending and ledger.unread_events() == 0
    finally:
        os.close(r)
        os.close(w)


def test_drain_ends_at_once_when_the_reader_is_gone() -> None:
    from nodecli.node.events.sinks import PipeSink

    r, w = os.pipe()
    try:
        saved = Saved()
        ledger = Ledger(saved, PipeSink(w))  # type: ignore[arg-type]
        ledger.write(pipe_page("a", ["1", "2"]), ["aa\n", "bbb\n"])
        os.close(r)
        said: list[str] = []
        assert ledger.drain(seconds=0.2, status=said.append) == 2
        assert said == [] and saved.saved == []  # no wait told, nothing taken
    finally:
        os.close(w)


def test_what_a_stopped_reader_took_is_told_in_its_words() -> None:
    from nodecli.node.events.sinks import PipeSink

    r, w = os.pipe()
    try:
        saved = Saved()
        ledger = Ledger(saved, PipeSink(w))  # type: ignore[arg-type]
        ledger.write(pipe_page("a", ["1", "2", "3"]), ["aa\n", "bbb\n", "c\n"])
        assert ledger.reader_stopped() is None  # it took none
        os.read(r, 3)
        told = ("the pipe's reader stopped after taking {} {}; it may not have shown them "
                "all (a reader such as head reads ahead), and the checkpoint counts them "
                "as delivered")
        assert ledger.reader_stopped() == told.format(1, "event")
        assert [c.skip for c in saved.saved] == [["1"]]  # saved as it is told
        os.read(r, 4)
        assert ledger.reader_stopped(left=1) == told.format(2, "events") + \
            "; the 1 it never took are sent again next time"
        ledger.checkpoint = None  # without a checkpoint nothing is counted: not told
        assert ledger.reader_stopped() is None
    finally:
        os.close(r)
        os.close(w)
