"""Many nodes at once: ask each node side by side (a bounded number at a time), and one
node's failure, or lateness, is that node's own result, never the others' loss."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

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


def ask_each(items: Sequence[tuple[str, T]], ask: Callable[[T], R], *,
             within: float | None = None) -> list[tuple[str, R | NodecliError]]:
    """``ask(item)`` for every ``(name, item)``, at most :data:`MAX_PARALLEL` at once, in
    the order given. A NodecliError is that node's result; with ``within`` seconds, a
    node still busy then is :class:`TooLate` (its thread is left to finish alone)."""
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as Late

    if not items:
        return []
    pool = ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(items)))
    try:
        futures = [(name, pool.submit(ask, item)) for name, item in items]
        deadline = None if within is None else time.monotonic() + within
        results: list[tuple[str, R | NodecliError]] = []
        for name, future in futures:
            try:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                results.append((name, future.result(timeout=left)))
            except Late:
                results.append((name, TooLate(f"no answer within {within:g} s")))
            except NodecliError as exc:
                results.append((name, exc))
        return results
    finally:
        pool.shutdown(wait=within is None, cancel_futures=True)


def count_event_types(client: Client, token: str | None, *, max_pages: int = 10) -> tuple[
        Counter[str], str | None]:
    """Events by their most specific type since ``token`` (None: from now on), reading
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
            for kind in event_types(event)[-1:]:
                counts[kind] += 1
        used, token = token, page.next_token or token
        if is_caught_up(page, used) or page.next_url is None:
            break
        target, params = page.next_url, None
    return counts, token


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
