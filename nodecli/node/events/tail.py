"""``events tail``: the start point, adaptive polling, retries in follow mode, stop
conditions, signals, and checkpoints saved only after a page was written."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from nodecli.errors import (
    Interrupted,
    NodecliError,
    NotFoundError,
    RemoteError,
    UsageError,
    counted,
    interrupted_after,
    shorten,
)
from nodecli.node.events.checkpoint import (
    GAP_TYPE,
    LAST_IDS_KEPT,
    NAME_RE,
    Checkpoint,
    CheckpointFile,
    LogGap,
    ResumeCheck,
    event_mark,
    node_key,
    resume_path,
)
from nodecli.node.events.delivery import DRAIN_SECONDS, Ledger, WrittenPage
from nodecli.node.events.pages import (
    DEFAULT_PAGE_SIZE,
    TYPE_RE,
    EventFilter,
    LoopGuard,
    MalformedPage,
    Page,
    RetryLater,
    build_params,
    empty_log_hint,
    event_id,
    event_types,
    explain_404,
    fetch_page,
    foreign_host_notice,
    is_caught_up,
    require_events,
    validate_page_size,
)
from nodecli.node.events.readahead import ReadAhead
from nodecli.node.events.sinks import FileSink, PipeSink, Sink, StreamSink, as_sink
from nodecli.node.events.stop import GracefulStop
from nodecli.node.info import MIN_GET_BY_ID_VERSION, NodeInfo, Status, node_info
from nodecli.timeparse import format_utc, shift

if TYPE_CHECKING:
    from nodecli.http.client import Client


DEFAULT_SINCE = timedelta(minutes=10)  # the default start point of `events tail`


@dataclass(slots=True)
class TailOptions:
    flt: EventFilter = field(default_factory=EventFilter)
    follow: bool = False
    since: datetime | None = None
    token: str | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    fmt: str = "jsonl"
    interval: float = 2.0
    max_events: int | None = None
    until_type: str | None = None
    # the text of a page's events in ``fmt``, supplied by the command layer (see
    # nodecli.render.events.render_chunk); None passes each event's original JSON line
    # through unchanged, which is ``jsonl``
    render: Callable[[Sequence[tuple[dict[str, Any], str]]], str] | None = None
    retry_base: float = 1.0  # seconds; backoff doubles up to retry_cap, with full jitter
    retry_cap: float = 60.0
    # go on past events the node no longer holds, after a ``nodecli.gap`` event
    accept_gap: bool = False

    def __post_init__(self) -> None:
        if self.since is not None and self.token is not None:
            raise UsageError("give --since or --iteration-token, not both")
        if self.until_type is not None and not TYPE_RE.fullmatch(self.until_type):
            raise UsageError(f"--until-type: invalid event type {self.until_type[:60]!r}")
        if self.fmt not in ("pretty", "plain", "json", "jsonl"):
            raise UsageError(f"unknown format {self.fmt!r}")
        if self.render is None and self.fmt != "jsonl":
            raise ValueError(f"TailOptions(fmt={self.fmt!r}) needs a render function")
        validate_page_size(self.page_size)


@dataclass(slots=True)
class TailState:
    """What the tail has done; ``token`` is the resume point (after the last full page)."""

    token: str | None = None
    emitted: int = 0
    pages: int = 0
    start: str = ""
    stopped_by: str | None = None  # "caught-up", "max-events", "until-type"


def raw_lines(items: Sequence[tuple[dict[str, Any], str]]) -> str:
    """The events' original JSON texts, one per line (``jsonl`` passes them through)."""
    return "".join(raw + "\n" for _, raw in items)


def _texts(opts: TailOptions, items: list[tuple[dict[str, Any], str]],
           per_event: bool) -> list[str]:
    """A page's text in ``opts.fmt``: one text per event when the sink needs each
    event's bytes (a pipe), else the page as one text."""
    render = opts.render or raw_lines
    if not items:
        return []
    if per_event:
        return [render([item]) for item in items]
    return [render(items)]


def _jitter(interval: float) -> float:
    return interval * random.uniform(0.8, 1.2)


def tail(client: Client, opts: TailOptions, sink: Sink, *,
         checkpoint: CheckpointFile | None = None, info: NodeInfo | None = None,
         status: Status | None = None, notice: Status | None = None,
         warn: Status | None = None,
         stop: GracefulStop | None = None,
         sleep: Callable[[float], None] | None = None,
         drain: float | None = None,
         progress: Callable[[int, Any], None] | None = None) -> TailState:
    """Print events from the start point to the present (and on, with ``follow``).

    Start point: the checkpoint (when it exists) > ``opts.token`` > ``opts.since`` >
    the last :data:`DEFAULT_SINCE` on the node's clock. A checkpoint is saved only
    after a page was written and flushed. Transient failures (network, 429/5xx,
    malformed pages) are retried forever with ``follow``, reported through ``status``
    ("reconnecting (attempt N, next in S s): reason", then "resumed"); without
    ``follow`` they raise. Fatal failures (401, 403, 404, a refused token) raise.
    ``progress(events written, the last one's time field)`` follows each page written.
    """
    label = client.endpoint.label or client.endpoint.base_url
    require_events(info, label)
    sink = as_sink(sink)
    st = TailState()
    ledger = Ledger(checkpoint, sink)
    try:
        _Run(client, opts, sink, st, ledger, checkpoint=checkpoint, info=info,
             status=status, notice=notice, warn=warn, stop=stop or GracefulStop(),
             sleep=sleep, progress=progress).loop()
        left = ledger.drain(DRAIN_SECONDS if drain is None else drain, status)
    except KeyboardInterrupt:
        ledger.settle()
        raise TailInterrupted(st) from None
    except BrokenPipeError:  # the reader went while events were being written
        said = ledger.reader_stopped()
        if said and notice is not None:
            notice(said)
        raise
    said = ledger.reader_stopped(left) if ledger.pipe is not None and \
        ledger.pipe.reader_gone() else None
    if said and notice is not None:
        notice(said)
    elif left and notice is not None:
        notice(f"the reader did not take the last {counted(left, 'event')} from the pipe; the "
               "checkpoint stops before them, so they are sent again next time")
    return st


class TailInterrupted(Interrupted):
    """SIGINT/SIGTERM during a tail; ``state.token`` is where to resume."""

    def __init__(self, state: TailState) -> None:
        super().__init__(interrupted_after(state.emitted))
        self.state = state


class _Run:
    """One tail from its start point on: where it stands, and its steps (start point,
    one page, what of it to write, the write, the move to the next page)."""

    def __init__(self, client: Client, opts: TailOptions, sink: Sink, st: TailState,
                 ledger: Ledger, *, checkpoint: CheckpointFile | None, info: NodeInfo | None,
                 status: Status | None, notice: Status | None, warn: Status | None,
                 stop: GracefulStop, sleep: Callable[[float], None] | None,
                 progress: Callable[[int, Any], None] | None) -> None:
        self.client, self.opts, self.sink, self.st, self.ledger = client, opts, sink, st, ledger
        self.checkpoint, self.info = checkpoint, info
        self.status, self.notice, self.warn = status, notice, warn
        self.stop, self.progress = stop, progress
        self.nap = sleep or stop.sleep
        self.skip: set[str] = set()
        self.prev_ids: set[str] = set()
        self.from_checkpoint = False
        self.since_iso: str | None = None
        self.check = ResumeCheck(None, None)
        self.mark: dict[str, str | None] | None = None  # event_mark() of the last event taken
        self.fetcher = client.derive(max_attempts=1) if opts.follow else client
        self.target = "/events"
        self.params: list[tuple[str, str]] | None = None
        self.page_token: str | None = None  # the token that names the start of the page
        self.attempt = 0
        self.first = True
        self.told_hosts: set[str] = set()
        self.guard = LoopGuard()
        # the next page read while a quiet sink takes this one (not stdout: readahead.py)
        self.read_ahead = bool(getattr(sink, "quiet", False))
        self.ahead: ReadAhead | None = None

    # -- the start point ---------------------------------------------------------------

    def start(self) -> None:
        """The checkpoint (when it exists) > ``opts.token`` > ``opts.since`` > the last
        :data:`DEFAULT_SINCE` on the node's clock."""
        opts, st, checkpoint = self.opts, self.st, self.checkpoint
        cp = checkpoint.load() if checkpoint else None
        self.from_checkpoint = cp is not None
        # is the node's event under the checkpoint's last id still the one taken? (a reset log)
        self.check = ResumeCheck(cp, checkpoint.path if checkpoint else None)
        self.mark = cp.last_event if cp is not None else None
        since: datetime | None = None
        if cp is not None:
            if cp.token:
                st.token = cp.token
            else:
                from nodecli.timeparse import parse_iso8601

                since = parse_iso8601(cp.after_time or "")
            self.skip = set(cp.skip)
            self.prev_ids = set(cp.last_ids)
            st.start = f"checkpoint {checkpoint.path}" if checkpoint else "checkpoint"
        elif opts.token is not None:
            st.token = opts.token
            st.start = f"iteration token {opts.token}"
        self.skip |= set(self.sink.recover(cp))
        if st.token is None and since is None:
            if opts.since is not None:
                since = opts.since
                st.start = f"since {format_utc(since)}"
            else:
                # (shift: a node clock in year 1 starts the tail at the first instant of year 1)
                since = shift(self.info.node_now() if self.info else datetime.now(UTC),
                              -DEFAULT_SINCE)
                st.start = (f"the last {int(DEFAULT_SINCE.total_seconds() // 60)} minutes "
                            "(default)")
        self.since_iso = format_utc(since) if since is not None else None
        if checkpoint is not None and cp is None:
            # record the start point before anything is written: a crash before the first
            # checkpoint then resumes from the same point and skips what reached the file
            self.ledger.save(Checkpoint(st.token or "", None if st.token else self.since_iso,
                                        output=self.sink.position()))
        self.params = build_params(opts.flt, since=since, token=st.token, count=opts.page_size)
        self.page_token = st.token

    # -- one page ----------------------------------------------------------------------

    def fetch(self) -> Page | None:
        """The next page, or None after a transient failure (retried by the loop, with
        ``follow``; without it they raise)."""
        from nodecli.http.errors import backoff_delay

        opts = self.opts
        ahead, self.ahead = self.ahead, None
        try:
            if ahead is not None and ahead.target == self.target and self.params is None:
                page = ahead.result()  # what it raised is raised here, handled as below
            else:
                page = fetch_page(self.fetcher, self.target, self.params,
                                  retry_statuses=opts.follow)
            if self.check.by_id:  # (after the page: a refused token says so first)
                page = self._check_by_id(page)
            if page.link_problem:
                raise MalformedPage(f"{page.url}: {page.link_problem}")
        except (RetryLater, MalformedPage, RemoteError) as exc:
            if isinstance(exc, RemoteError) and (
                not opts.follow or exc.message.startswith("TLS")
            ):
                raise
            self.attempt += 1
            reason = exc.reason if isinstance(exc, RetryLater) else str(exc)
            retry_after = exc.retry_after if isinstance(exc, RetryLater) else None
            delay = retry_after if retry_after is not None else max(
                backoff_delay(self.attempt, base=opts.retry_base, cap=opts.retry_cap),
                opts.retry_base / 5)
            if self.status:
                self.status(f"reconnecting (attempt {self.attempt}, next in {delay:.0f} s): "
                            f"{shorten(reason, 160)}")
            self.nap(delay)
            return None
        except NotFoundError as exc:
            raise explain_404(exc, self.info) from None
        except NodecliError as exc:
            if getattr(exc, "status", None) == 400 and self.page_token is not None:
                raise _token_refused(exc, self.from_checkpoint, self.checkpoint,
                                     self.page_token) from None
            raise
        if self.attempt and self.status:
            self.status("resumed")
        self.attempt = 0
        self.guard.check(page, self.page_token)  # before anything of the page is written
        if page.foreign_host is not None and page.foreign_host not in self.told_hosts:
            self.told_hosts.add(page.foreign_host)
            say = self.warn or self.notice  # a warning, as 'events list' gives it
            if say is not None:
                say(foreign_host_notice(page.foreign_host, self.client.endpoint.base_url))
        if self.first:
            self.first = False
            if len(page) == 0 and self.notice and not opts.flt.params():
                hint = empty_log_hint(self.fetcher, self.info) if self.st.token is None \
                    else None
                if hint:
                    self.notice(hint)
        return page

    def _check_by_id(self, page: Page) -> Page:
        """The checkpoint's last event, asked for by id; a gap the node's log has since
        the checkpoint stops the tail, or, with ``accept_gap``, is said by a
        ``nodecli.gap`` event before the page."""
        info = self.info
        try:
            self.check.fetch(self.fetcher, info.at_least(MIN_GET_BY_ID_VERSION) if info
                             else None)
        except LogGap as gap:
            if not self.opts.accept_gap:
                raise
            say = self.warn or self.notice
            if say is not None:
                say(f"{gap.message}; going on from there (--accept-gap), after a "
                    f"{GAP_TYPE} event")
            return replace(page, items=[gap.event(self.client.endpoint.label
                                                  or self.client.endpoint.base_url),
                                        *page.items])
        return page

    # -- what of the page to write ----------------------------------------------------

    def choose(self, page: Page) -> tuple[list[tuple[dict[str, Any], str]], list[int], int,
                                          bool]:
        """The events to write (the already-written prefix and boundary duplicates
        dropped), their index in the page, the index of the last event handled, and
        whether the tail stops within the page."""
        opts, st, check = self.opts, self.st, self.check
        out: list[tuple[dict[str, Any], str]] = []
        out_index: list[int] = []
        written_upto = -1
        for idx, (obj, raw) in enumerate(page.items):
            eid = event_id(obj)
            written_upto = idx
            if self.skip:
                if eid in self.skip:
                    check.see(eid, obj)
                    continue
                check.left_skip(eid)
                self.skip = set()
            if eid in self.prev_ids:
                continue
            out.append((obj, raw))
            out_index.append(idx)
            if opts.max_events is not None and st.emitted + len(out) >= opts.max_events:
                st.stopped_by = "max-events"
            elif opts.until_type is not None and opts.until_type in event_types(obj):
                st.stopped_by = "until-type"
            if st.stopped_by:
                return out, out_index, idx, idx < len(page.items) - 1
        return out, out_index, written_upto, False

    # -- the write and the checkpoint -------------------------------------------------

    def write(self, page: Page, out: list[tuple[dict[str, Any], str]], out_index: list[int],
              written_upto: int, partial: bool) -> None:
        opts, st = self.opts, self.st
        texts = _texts(opts, out, per_event=self.sink.per_event)
        page_ids = [event_id(o) for o, _ in page.items]
        if page.items:
            self.mark = event_mark(page.items[written_upto][0])
        mark = self.mark
        if partial:
            new = Checkpoint(self.page_token or "", None if self.page_token else self.since_iso,
                             skip=page_ids[: written_upto + 1], last_ids=sorted(self.prev_ids),
                             last_event=mark)
        else:
            new = Checkpoint(page.next_token or "", skip=[],
                             last_ids=page_ids[-LAST_IDS_KEPT:] if page_ids
                             else sorted(self.prev_ids), last_event=mark)
        record = WrittenPage(new, self.page_token, self.since_iso, sorted(self.prev_ids),
                             ids=page_ids[: written_upto + 1], index=out_index,
                             items=page.items)
        with self.stop.critical():
            self.ledger.write(record, texts)
            self.from_checkpoint = False
            st.emitted += len(out)
            st.pages += 1
            if not partial:
                st.token = page.next_token
        if self.progress is not None and out:
            self.progress(st.emitted, out[-1][0].get("time"))
        if page_ids:
            self.prev_ids = set(page_ids[-LAST_IDS_KEPT:])

    # -- the next page -----------------------------------------------------------------

    def advance(self, page: Page, caught_up: bool) -> bool:
        """Move to the page after ``page``; once caught up, end (True) or, with
        ``follow``, wait for more."""
        self.page_token = page.next_token
        self.target, self.params = page.next_url or self.target, None
        if not caught_up:
            return False
        if not self.opts.follow:
            self.st.stopped_by = "caught-up"
            return True
        self.ledger.settle()  # the reader may have caught up since the last page
        if self.ledger.pipe is not None and self.ledger.pipe.reader_gone():
            raise BrokenPipeError  # `tail -f | head`: end now, not at the next event
        self.nap(_jitter(self.opts.interval))
        return False

    def loop(self) -> None:
        try:
            self._loop()
        finally:  # an error or a signal while a page was written: drop the next one
            ahead, self.ahead = self.ahead, None
            if ahead is not None:
                ahead.abandon()

    def _read_next(self, page: Page, caught_up: bool) -> None:
        """Fetch the page after ``page`` (that one only) on a worker when the tail surely
        asks for it next (not caught up, no stop within this page, no checkpoint mark to
        look up); its answer is checked and written in order, as without read-ahead."""
        if (not self.read_ahead or caught_up or self.st.stopped_by or self.check.by_id
                or self.ahead is not None):
            return
        target, fetcher, follow = page.next_url or self.target, self.fetcher, self.opts.follow
        self.ahead = ReadAhead(lambda: fetch_page(fetcher, target, None, retry_statuses=follow),
                               target)

    def _loop(self) -> None:
        self.start()
        while True:
            page = self.fetch()
            if page is None:
                continue
            out, out_index, written_upto, partial = self.choose(page)
            caught_up = is_caught_up(page, self.page_token)
            self.check.page_end(caught_up)
            if self.skip or self.check.on_page:
                # All of the page was written before (ids a checkpoint or the output file
                # holds) and more such ids, or the marked event, are further on: nothing to
                # write, and nothing saved (a checkpoint here would claim the whole file
                # while its token covers only part of it: a kill, and the rest is written
                # again).
                if self.advance(page, caught_up):
                    return
                continue
            self._read_next(page, caught_up)
            self.write(page, out, out_index, written_upto, partial)
            if self.st.stopped_by or self.advance(page, caught_up):
                return


def _token_refused(exc: NodecliError, from_checkpoint: bool, checkpoint: CheckpointFile | None,
                   token: str) -> NodecliError:
    if from_checkpoint and checkpoint is not None:
        return NodecliError(
            f"the node refused the position saved in checkpoint {checkpoint.path} "
            f"(iteration token {shorten(token, 60)}): {exc.message}",
            hint="the node's log may have been reset, or the checkpoint is from another node; "
                 f"nothing was skipped: to start over, delete {checkpoint.path} and choose a "
                 "start with --since or --iteration-token")
    return NodecliError(f"the node refused iteration token {shorten(token, 60)}: {exc.message}",
                        hint="take a token from a recent 'nodecli events list' of this node, "
                             "or start with --since")


def check_destinations(fmt: str, checkpoint_file: Path | None, resume_name: str | None,
                       output_file: Path | None) -> None:
    """Refuse combinations of --checkpoint/--resume/--to/-o that cannot work."""
    if checkpoint_file is not None and resume_name is not None:
        raise UsageError("give --checkpoint FILE or --resume NAME, not both")
    if resume_name is not None and not NAME_RE.fullmatch(resume_name):
        raise UsageError(f"invalid checkpoint name {resume_name[:40]!r}: letters, digits, "
                         "'.', '_' and '-' (at most 64)")
    if output_file is not None and fmt not in ("jsonl", "plain"):
        raise UsageError("--to FILE writes jsonl or plain (one event per line, so a "
                         "restart can find what is already there)")


def checkpoint_path(client: Client, opts: TailOptions, *, state_dir: str | Path,
                    checkpoint_file: Path | None, resume_name: str | None,
                    output_file: Path | None) -> Path | None:
    """Where the position lives: ``checkpoint_file``, the named checkpoint
    ``resume_name`` (under ``state_dir``), or, for ``output_file`` alone,
    ``<output_file>.checkpoint``; None: nowhere."""
    if resume_name is not None:
        return resume_path(state_dir, client, resume_name, opts.flt)
    if checkpoint_file is not None:
        return Path(checkpoint_file)
    if output_file is not None:
        return Path(str(output_file) + ".checkpoint")
    return None


def run_tail(client: Client, opts: TailOptions, *, state_dir: str | Path, out: IO[str],
             checkpoint_file: Path | None = None, resume_name: str | None = None,
             output_file: Path | None = None, status: Status | None = None,
             notice: Status | None = None, warn: Status | None = None,
             log: Status | None = None,
             progress: Callable[[int, Any], None] | None = None,
             sink: Sink | None = None) -> TailState:
    """``events tail`` as a whole: where the position is kept, where events go, the
    version check, signals, then :func:`tail`; everything is released at the end.

    ``sink`` is where events go when the caller chose (``events ship``; the caller
    closes it); else ``output_file`` (a :class:`FileSink`), else ``out`` (a pipe's
    ledgered :class:`PipeSink`, or a :class:`StreamSink`).

    The position lives in ``checkpoint_file``, in the named checkpoint ``resume_name``
    (under ``state_dir``), or, for ``output_file`` alone, in ``<output_file>.checkpoint``.
    """
    check_destinations(opts.fmt, checkpoint_file, resume_name, output_file)
    from nodecli import dryrun

    if dryrun.active() and output_file is not None:
        raise dryrun.DryRunStop(f"would append events to {output_file}; nothing was "
                                "written (--dry-run)")
    path = checkpoint_path(client, opts, state_dir=state_dir, checkpoint_file=checkpoint_file,
                           resume_name=resume_name, output_file=output_file)
    checkpoint = CheckpointFile(path, node=node_key(client), flt=opts.flt) if path else None
    stop = GracefulStop()
    opened: Sink | None = None
    try:
        if checkpoint is not None:
            checkpoint.lock()
        if sink is None:
            sink = opened = FileSink(Path(output_file), opts.fmt) if output_file is not None \
                else PipeSink.of(out) or StreamSink(out)
        info = node_info(client, state_dir, log=log)
        stop.install()
        return tail(client, opts, sink, checkpoint=checkpoint, info=info, status=status,
                    notice=notice, warn=warn, stop=stop,
                    progress=progress if sink.quiet else None)
    finally:
        stop.restore()
        if opened is not None:
            opened.close()
        if checkpoint is not None:
            checkpoint.unlock()
