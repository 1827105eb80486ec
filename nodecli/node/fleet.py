"""Many nodes at once: ask each node side by side (a bounded number at a time), and one
node's failure, or lateness, is that node's own result, never the others' loss."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from nodecli.errors import NodecliError

if TYPE_CHECKING:
    from nodecli.http.client import Client

T = TypeVar("T")
R = TypeVar("R")

#: nodes asked at the same time: enough to hide each node's latency, few enough not to
#: open a connection storm from one administrator's machine
MAX_PARALLEL = 8


class TooLate(NodecliError):
    """The node did not answer within the time given to all of them."""


class Clock:
    """The time :func:`ask_each` gives each node: read with ``now()``, a node's answer
    waited for with ``result(future, seconds)`` (TimeoutError past them). The monotonic
    clock; the tests give ask_each one of their own, on which a node answers at the
    time they say, so the boundaries of ``within`` are tested without sleeping."""

    @staticmethod
    def now() -> float:
        return time.monotonic()

    @staticmethod
    def result(future: Future[R], timeout: float) -> R:
        return future.result(timeout=timeout)


MONOTONIC = Clock()


def ask_each(items: Sequence[tuple[str, T]], ask: Callable[[T], R], *,
             within: float | None = None,
             clock: Clock = MONOTONIC) -> list[tuple[str, R | NodecliError]]:
    """``ask(item)`` for every ``(name, item)``, at most :data:`MAX_PARALLEL` at once, in
    the order given. A NodecliError is that node's result; with ``within`` seconds (on
    ``clock``), a node still busy that long after ITS start (a node waiting for a free
    worker is not charged for the wait) is :class:`TooLate` (its thread is left to
    finish alone)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as Late

    if not items:
        return []
    begun = [threading.Event() for _ in items]
    started = [0.0] * len(items)

    def timed(i: int, item: T) -> R:
        started[i] = clock.now()
        begun[i].set()
        return ask(item)

    pool = ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(items)))
    try:
        futures = [(name, pool.submit(timed, i, item)) for i, (name, item) in enumerate(items)]
        results: list[tuple[str, R | NodecliError]] = []
        for i, (name, future) in enumerate(futures):
            try:
                if within is None:
                    results.append((name, future.result()))
                    continue
                begun[i].wait()  # a worker frees up within ``within`` of its own start
                left = max(started[i] + within - clock.now(), 0.0)
                results.append((name, clock.result(future, left)))
            except Late:
                results.append((name, TooLate(f"no answer within {within:g} s")))
            except NodecliError as exc:
                results.append((name, exc))
        return results
    finally:
        pool.shutdown(wait=within is None, cancel_futures=True)


def count_event_types(client: Client, token: str | None, *, max_pages: int = 10) -> tuple[
        Counter[str], str | None]:
    """Events by their most specific type (:func:`counted_type`: one count per event)
    since ``token`` (None: from now on), reading
    at most ``max_pages`` pages (a node with a huge backlog is read over several calls);
    returns the counts and the token to go on from."""
    from nodecli.node.events.pages import (
        EventFilter,
        build_params,
        event_types,
        fetch_page,
        is_caught_up,
    )

    counts: Counter[str] = Counter()
    params: list[tuple[str, str]] | None = build_params(
        EventFilter(), since=None if token else datetime.now(UTC), token=token, count=1000)
    target = "/events"
    for _ in range(max_pages):
        page = fetch_page(client, target, params)
        for event in page.events:
            counts[counted_type(event_types(event))] += 1
        used, token = token, page.next_token or token
        if is_caught_up(page, used) or page.next_url is None:
            break
        target, params = page.next_url, None
    return counts, token


def counted_type(types: Sequence[str]) -> str:
    """The one type an event is counted under: its most specific. A transfer event
    carries its subtype and its parent (``upload.started`` and ``transfer.started``, in
    either order): it counts as the subtype. An event without types counts as ``?``."""
    for kind in types:
        if not kind.startswith("transfer."):
            return kind
    return types[0] if types else "?"


def as_rows(results: Sequence[tuple[str, Any]]) -> tuple[list[dict[str, Any]],
                                                         list[tuple[str, NodecliError]]]:
    """Rows of every node that answered (each with its ``node``) and the failures."""
    rows: list[dict[str, Any]] = []
    failures: list[tuple[str, NodecliError]] = []
    for name, result in results:
        if isinstance(result, NodecliError):
            failures.append((name, result))
        else:
            rows += [{"node": name, **row} for row in result]
    return rows, failures


class Snapshots(Generic[R]):
    """The last complete answer of each of many nodes, refreshed in the background: at
    most one refresh at a time, a node still busy with an earlier one is not asked
    again (a hung node holds one thread, never one per refresh), and at most
    :data:`MAX_PARALLEL` nodes are asked at once. A refresh is done when every node
    it asked has answered or ``within`` seconds have passed; a node answering later
    still updates its snapshot then. ``probe(name)`` must not block forever: its
    client's own limits end it (the exporter gives each request ``--node-timeout``).

    :meth:`age` is the time since the last refresh was done, read on ``clock`` (the
    exporter's tests give it a clock they set); ``on_done()`` is called as each refresh
    is done, before anyone waiting for it is told."""

    def __init__(self, names: Sequence[str], probe: Callable[[str], R], *,
                 within: float, clock: Callable[[], float] = time.monotonic,
                 on_done: Callable[[], None] | None = None) -> None:
        import threading

        self.names, self.probe, self.within = list(names), probe, within
        self._clock, self._on_done = clock, on_done
        self._done_at: float | None = None  # on self._clock
        self._cond = threading.Condition()
        self._slots = threading.BoundedSemaphore(MAX_PARALLEL)
        self._last: dict[str, tuple[R | NodecliError, float]] = {}
        self._busy: dict[str, float] = {}  # node -> when its probe started (monotonic)
        self._round: Future[None] | None = None
        self._stopped = False

    def refresh(self) -> Future[None]:
        """The refresh under way, or a new one; the future is done when it is."""
        import threading

        with self._cond:
            if self._round is not None and not self._round.done():
                return self._round
            done: Future[None] = Future()
            done.set_running_or_notify_cancel()  # one waiter giving up cancels nothing
            self._round = done
            if self._stopped:
                done.set_result(None)
                return done
            asked = [n for n in self.names if n not in self._busy]
            started = time.monotonic()
            for name in asked:
                self._busy[name] = started
        for name in asked:
            threading.Thread(target=self._ask, args=(name,), daemon=True,
                             name=f"nodecli-probe-{name}").start()
        threading.Thread(target=self._finish, args=(done, asked, started), daemon=True,
                         name="nodecli-refresh").start()
        return done

    def _ask(self, name: str) -> None:
        result: R | NodecliError
        try:
            with self._slots:
                try:
                    result = self.probe(name)
                except NodecliError as exc:
                    result = exc
            with self._cond:
                self._last[name] = (result, time.monotonic())
        finally:
            with self._cond:
                self._busy.pop(name, None)
                self._cond.notify_all()

    def _finish(self, done: Future[None], asked: list[str], started: float) -> None:
        with self._cond:
            self._cond.wait_for(lambda: not any(n in self._busy for n in asked),
                                timeout=max(started + self.within - time.monotonic(), 0.0))
            self._done_at = self._clock()
        try:
            if self._on_done is not None:
                self._on_done()
        finally:
            done.set_result(None)

    def age(self) -> float | None:
        """Seconds since the last refresh was done (None: none was yet)."""
        with self._cond:
            return None if self._done_at is None else self._clock() - self._done_at

    def view(self) -> dict[str, tuple[R | NodecliError | None, float | None, bool]]:
        """Per node: its last answer (None: none yet), that answer's age in seconds, and
        whether it is late now (asked more than ``within`` seconds ago, no answer)."""
        now = time.monotonic()
        with self._cond:
            return {n: (self._last[n][0] if n in self._last else None,
                        now - self._last[n][1] if n in self._last else None,
                        n in self._busy and now - self._busy[n] > self.within)
                    for n in self.names}

    def stop(self) -> None:
        """No refresh starts after this (a stopping exporter asks nothing more)."""
        with self._cond:
            self._stopped = True
