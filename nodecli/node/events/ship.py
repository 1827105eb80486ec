"""``events ship``: the tail's engine with a batch sink (batch.py) at its end.

Each page of the tail (``--batch N`` events) is one batch; the checkpoint moves past
the batch only once the sink has it. Before a batch of fewer than N events goes out (a
page at the end of the log, which may grow before a restart reads it again), the
checkpoint notes it without moving (``output.sending``: the node, the page's first id,
the last id of each batch of the page so far, and ``last``, that of this batch). A
process killed in between sends the page again on restart, cut at the same events even
when the page has grown since, so that the repeats are the same batches with the same
idempotency keys (a collector, JetStream, can drop them); the rest of the page is one
more batch. A page of N events is read again the same, so its batch needs no note.

Up to ``window`` batches are in flight at once (``--window``): the next page is read
and sent while the sink has not yet acknowledged the ones before it, and
``delivery.Ledger`` moves the checkpoint past a page only once its batch and every one
before it were acknowledged. A page that needs a note waits until no batch is in flight
(the note is then made on the checkpoint just before it). After a kill, what is sent
again is at most the window: ``window`` x ``--batch`` events.

A retryable failure of the sink (a collector answering 503, a connection refused) is
retried with backoff while following (``-f``), as a node that is down is; without
``-f`` it ends the command with the checkpoint before the batch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from nodecli.errors import UsageError, shorten
from nodecli.node.events.batch import SCHEMES, BatchSink, Shipped, SinkContext, SinkError
from nodecli.node.events.checkpoint import GAP_TYPE, Checkpoint, CheckpointFile, pause_for_tests
from nodecli.node.events.sinks import TextSink
from nodecli.remote_json import strings

# batches in flight by default: 4 was the fastest or tied of 1, 2, 4 and 8 into both
# JetStream and the HTTP collector (bench/ship_nats.py, bench/ship.py --windows 1,2,4,8;
# the figures are in docs/shipping.md)
WINDOW = 4

# the packages a scheme's sink needs beyond nodecli's own, for a one-line error
EXTRAS = {"nats": "nats-py", "tls": "nats-py"}


def scheme_of(url: str) -> str:
    return url.split(":", 1)[0].lower() if ":" in url else ""


def file_target(url: str) -> Path | None:
    """The path of ``file:PATH`` (also ``file://PATH``), else None."""
    if scheme_of(url) != "file":
        return None
    rest = url.split(":", 1)[1]
    if rest.startswith("//"):
        rest = rest[2:]
    if not rest:
        raise UsageError("--to file:PATH needs a path")
    return Path(rest).expanduser()


def check_url(url: str) -> None:
    """Refuse a URL no sink takes, or one that carries a secret (argv is visible)."""
    scheme = scheme_of(url)
    if scheme == "file":
        file_target(url)
        return
    if scheme not in SCHEMES:
        known = ", ".join(sorted({*SCHEMES, "file"}))
        raise UsageError(f"--to {shorten(url, 80)!r}: unknown scheme (one of {known})")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port out of range raises here
    except ValueError as exc:
        raise UsageError(f"--to: invalid URL: {exc}") from None
    if parts.password is not None or (parts.username and scheme in ("http", "https")):
        raise UsageError("--to: the URL holds credentials; give them in the environment "
                         "(NODECLI_SINK_TOKEN, NODECLI_SINK_USER/NODECLI_SINK_PASSWORD) or "
                         "--sink-creds FILE: argv is visible to every user")
    if not parts.hostname:
        raise UsageError(f"--to {shorten(url, 80)!r}: no host")


def open_batch_sink(url: str, ctx: SinkContext) -> BatchSink:
    """The sink of ``url``'s scheme, imported now (a missing optional package is one
    line saying what to install)."""
    check_url(url)
    target = SCHEMES[scheme_of(url)]
    module, _, factory = target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        need = EXTRAS.get(scheme_of(url))
        if need and (exc.name or "").split(".")[0] != "nodecli":
            raise UsageError(f"--to {scheme_of(url)}:// needs the {need} package: pip "
                             f"install 'nodecli[nats]' (or {need})") from None
        raise UsageError(f"--to {scheme_of(url)}://: this nodecli has no such sink "
                         f"({exc.name})") from None
    opened: BatchSink = getattr(mod, factory)(url, ctx)
    return opened


def shipped(node: str, items: Sequence[tuple[dict[str, Any], str]]) -> list[Shipped]:
    # (pages.event_id and event_types inlined: this runs once per event shipped)
    return [Shipped(node, str(obj.get("id")), tuple(strings(obj.get("types"))),
                    raw.encode("utf-8"))
            for obj, raw in items]


class ShipSink(TextSink):
    """One node's tail into a batch sink (a tail ``Sink``; see the module text)."""

    quiet = True

    def __init__(self, batch: BatchSink, node: str, checkpoint: CheckpointFile | None, *,
                 follow: bool, nap: Callable[[float], None],
                 retry_base: float, retry_cap: float,
                 status: Callable[[str], None] | None = None,
                 batch_size: int | None = None, window: int = WINDOW) -> None:
        self.batch = batch
        # a sink may take fewer at once (syslog: one stream, nothing acknowledged)
        self.window = max(1, min(window, getattr(batch, "max_window", window)))
        # the batches in flight are delivered here, in this order; the ledger waits
        self._pool = ThreadPoolExecutor(max_workers=self.window,
                                        thread_name_prefix="nodecli-ship")
        self._closed = False
        self._last: Future[None] | None = None  # the batch submitted last (retries wait)
        self.batch_size = batch_size  # the tail's page size (--batch); None: unknown
        self.node = node
        self.checkpoint = checkpoint
        self.follow = follow
        self.nap = nap
        self.status = status
        self.retry_base, self.retry_cap = retry_base, retry_cap
        self.resend: dict[str, Any] | None = None  # the batch a killed run was sending
        self.batches = 0

    def recover(self, cp: Checkpoint | None) -> list[str]:
        sending = (cp.output or {}).get("sending") if cp is not None else None
        if isinstance(sending, dict) and isinstance(sending.get("first"), str) and \
                isinstance(sending.get("lasts"), list) and \
                all(isinstance(x, str) for x in sending["lasts"]):
            self.resend = sending
        return []

    def take(self, items: Sequence[tuple[dict[str, Any], str]],
             texts: Sequence[str]) -> None:
        """Deliver a page and return when it is held (the window's path, waited for)."""
        self.submit(items, texts, lambda: None).result()

    def submit(self, items: Sequence[tuple[dict[str, Any], str]], texts: Sequence[str],
               flush: Callable[[], None]) -> Future[None]:
        """Start delivering a page; ``flush()`` waits for (and saves) every batch still
        in flight, called before a note so that the note is made on the checkpoint just
        before this page and no earlier page's save replaces it."""
        events = shipped(self.node, items)
        noted = self.resend is not None or not self._read_again_whole(events)
        parts = self._cut(events)
        if noted:
            flush()
            lasts: list[str] = []
            for one in parts:
                lasts.append(one[-1].event_id)
                self._note(events[0], lasts)
                self._deliver(one)
                self.batches += 1
            done: Future[None] = Future()
            done.set_result(None)
            return done
        self.batches += len(parts)
        before, self._last = self._last, None
        self._last = future = self._pool.submit(self._deliver_all, parts, before)
        return future

    def _deliver_all(self, parts: list[list[Shipped]], before: Future[None] | None) -> None:
        # a batch of the window, not yet at the sink (the test is told its first event)
        pause_for_tests("batch-sending", parts[0][0].event_id if parts[0] else "")
        for one in parts:
            self._deliver(one, before)

    def close(self) -> None:
        """Stop retrying and wait for the batches still in flight (bounded by the sink's
        timeout); a batch not acknowledged is sent again next time."""
        self._closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _read_again_whole(self, events: list[Shipped]) -> bool:
        """Whether a restart reads this page again as the same one batch without a note
        in the checkpoint: a page of as many events as asked for (--batch) holds the
        same events however much the log has grown since; only a shorter one (the end
        of the log, a boundary duplicate dropped, a stop within the page) or one that
        begins with this run's gap event may come back different."""
        return (self.batch_size is not None and len(events) == self.batch_size
                and GAP_TYPE not in events[0].types)

    def _cut(self, events: list[Shipped]) -> list[list[Shipped]]:
        """The page in the batches a killed run was sending it in (the same first and
        last events, so the same keys), then the rest of it as one more batch."""
        resend, self.resend = self.resend, None
        if resend is None or not events or events[0].event_id != resend["first"]:
            return [events]
        ids = [e.event_id for e in events]
        parts: list[list[Shipped]] = []
        start = 0
        for last in resend["lasts"]:
            if last not in ids[start:]:
                break
            end = ids.index(last, start) + 1
            parts.append(events[start:end])
            start = end
        if start < len(events):
            parts.append(events[start:])
        return parts

    def _note(self, first: Shipped, lasts: list[str]) -> None:
        """Record how the page is being sent (its first event, the last event of each
        batch so far) in the checkpoint, which does not move."""
        if self.checkpoint is None:
            return
        cp = self.checkpoint.load()
        if cp is None:
            return
        cp.output = {"sending": {"node": self.node, "first": first.event_id,
                                 "lasts": list(lasts), "last": lasts[-1]}}
        self.checkpoint.save(cp)

    def _deliver(self, batch: Sequence[Shipped], before: Future[None] | None = None) -> None:
        """Deliver ``batch``, retrying (with ``follow``) only once every batch before it
        is held, so that retries go out in order and a sink that keeps order (JetStream:
        one connection) holds a node's events in order."""
        from concurrent.futures import wait

        from nodecli.http.errors import backoff_delay

        resume = getattr(self.batch, "resume", None)
        attempt = 0
        while True:
            try:
                self.batch.deliver(batch)
                if attempt and self.status is not None:
                    self.status("resumed")
                return
            except SinkError as exc:
                if not (exc.retryable and self.follow) or self._closed:
                    raise
                if before is not None:
                    wait([before])
                    if before.exception() is not None:
                        raise
                attempt += 1
                delay = max(backoff_delay(attempt, base=self.retry_base, cap=self.retry_cap),
                            self.retry_base / 5)
                if self.status is not None:
                    self.status(f"reconnecting (attempt {attempt}, next in {delay:.0f} s): "
                                f"{shorten(exc.message, 160)}")
                self.nap(delay)
                if resume is not None:
                    resume()  # this batch goes first: every one before it is held


def batch_key(batch: Sequence[Shipped]) -> str:
    """The idempotency key of a batch: its node, first and last event id."""
    from urllib.parse import quote

    return (f"{quote(batch[0].node, safe='')}:{quote(batch[0].event_id, safe='')}:"
            f"{quote(batch[-1].event_id, safe='')}")
