"""``nodecli transfer``: start, list, show, watch, cancel and modify transfers on a node."""

from __future__ import annotations

import time
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import (
    InputFile,
    UserPath,
    confirm,
    fleet_names,
    fleet_options,
    output_option,
    pass_app,
)
from nodecli.cli.lazy import HelpGroup
from nodecli.cli.remote import node_options, open_node_client, pop_node_options
from nodecli.errors import Aborted, Cancelled, Interrupted, NodecliError, TimedOut, UsageError
from nodecli.render import Column, sanitize

CONTEXT = {"help_option_names": ["-h", "--help"]}

# On a narrow terminal the error (free text) is cut first; then the rate, files, user,
# host, start time, direction and bytes are left out in that order (-o wide shows them).
# id, status, direction, numbers and times are never cut.
COLUMNS = [
    Column("id", "id", whole=True),
    Column("status", "status", whole=True),
    Column("direction", "direction", whole=True, drop=6),
    Column("remote_host", "remote host", drop=4),
    Column("user_id", "user", drop=3),
    Column("bytes", "bytes", justify="right", whole=True, drop=7),
    Column("rate", "rate (now/target)", justify="right", whole=True, drop=1),
    Column("files", "files", justify="right", whole=True, drop=2),
    Column("started", "started", whole=True, drop=5),
    Column("error", "error", free=True),
]


# csv: the json field names, the node's numbers as numbers (units are for tables)
CSV_COLUMNS = [Column(k, k) for k in (
    "id", "status", "direction", "remote_host", "user_id", "bytes_transferred",
    "bytes_expected", "current_rate_kbps", "target_rate_kbps", "files_completed",
    "files_expected", "start_time_usec", "end_time_usec", "error_code", "error_desc")]


@click.group(cls=HelpGroup, context_settings=CONTEXT, help="""Transfers on a node.

\b
  nodecli transfer start --spec spec.json --node tok --wait
  nodecli transfer list --active
  nodecli transfer watch ID --timeout 10m
  nodecli transfer modify ID --target-rate 500m
  nodecli transfer cancel ID
""")
def transfer() -> None:
    pass


def _human_bytes(value: Any) -> str:
    from nodecli.render.numbers import human_bytes

    return human_bytes(0 if value is None else value)


def _rate(kbps: Any) -> str:
    """The one rate style of every table (``10.0 Mbps``); ``-`` for what is no number."""
    from nodecli.render.numbers import human_rate, number

    return human_rate(kbps) if number(kbps) is not None else "-"


def row(t: dict[str, Any]) -> dict[str, Any]:
    """A transfer as a table row (json keeps the node's object as it came)."""
    from nodecli.render import iso_time
    from nodecli.timeparse import from_usec

    start = from_usec(t.get("start_time_usec"))
    started = iso_time(start.isoformat()) if start is not None else None
    error = ""
    if t.get("error_code") not in (None, 0, "0", ""):
        error = f"{t.get('error_code')}: {t.get('error_desc') or ''}".strip()
    files = t.get("files_completed")
    expected = t.get("files_expected")
    return {
        "id": t.get("id"), "status": t.get("status"), "direction": t.get("direction"),
        "remote_host": t.get("remote_host"), "user_id": t.get("user_id"),
        "bytes": _human_bytes(t.get("bytes_transferred")),
        "rate": f"{_rate(t.get('current_rate_kbps'))}/{_rate(t.get('target_rate_kbps'))}",
        "files": f"{'?' if files is None else files}/{expected}" if expected is not None else files,
        "started": started, "error": error or None,
    }


def render(app: App, transfers: list[dict[str, Any]], fmt: str) -> None:
    if fmt in ("json", "jsonl", "csv"):
        app.term.table(transfers, CSV_COLUMNS if fmt == "csv" else COLUMNS, fmt)
        return
    rows = [row(t) for t in transfers]
    app.term.table(rows, COLUMNS, fmt, empty="no transfers")


def render_one(app: App, t: dict[str, Any], fmt: str) -> None:
    if fmt == "json":
        app.term.json(t)
        return
    r = row(t)
    pairs: list[tuple[str, Any]] = []
    for c in COLUMNS:
        pairs.append((c.heading, r.get(c.key)))
        if c.key == "bytes":  # what it moves in all, when the node says
            expected = t.get("bytes_expected")
            pairs.append(("bytes expected", _human_bytes(expected)
                          if isinstance(expected, int) and not isinstance(expected, bool)
                          else None))
    app.term.fields(pairs)


def _watch_options(prefix: str) -> Any:
    """--interval and --timeout of watch and start --wait (the help says which)."""

    def said(text: str) -> str:
        return prefix + text if prefix else text[0].upper() + text[1:]

    def decorate(f: Any) -> Any:
        f = click.option("--timeout", metavar="DURATION",
                         help=said("give up after this long (exit 8)."))(f)
        return click.option("--interval", type=click.FloatRange(0.05, 3600), default=2.0,
                            show_default=True, metavar="S",
                            help=said("seconds between polls."))(f)

    return decorate


@transfer.command("start", context_settings=CONTEXT)
@click.option("--spec", "spec_file", required=True, metavar="FILE",
              type=InputFile("transfer spec"), help="Transfer specification (JSON object).")
@click.option("--wait", is_flag=True, help="Then watch it to its end (as 'transfer watch').")
@_watch_options("With --wait: ")
@node_options
@output_option(("table", "json"))
@pass_app
def transfer_start(app: App, spec_file: str, wait: bool, interval: float,
                   timeout: str | None, output_format: str, **kwargs: Any) -> None:
    """POST /ops/transfers with a bearer token (--bearer-file or NODECLI_BEARER).

    \b
    Examples:
      nodecli transfer start --spec spec.json --node prod
      nodecli transfer start --spec spec.json --node prod --wait --timeout 1h
    """
    from nodecli.node.transfers import load_transfer_spec, start_transfer

    spec = load_transfer_spec(spec_file)
    limit = _duration(timeout, "--timeout")
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn, need="bearer") as client:
        data = start_transfer(client, spec)
        if not wait:
            render_one(app, data, output_format)
            return
        tid = data.get("id")
        if not isinstance(tid, str | int) or isinstance(tid, bool) or str(tid) == "":
            raise NodecliError("the node started the transfer but named no id to watch")
        app.term.info(f"transfer {sanitize(tid)} started")
        _watch(app, client, [str(tid)], interval, limit, output_format)


def _duration(text: str | None, flag: str) -> float | None:
    """Seconds of a DURATION option (--timeout 10m), or of WHEN (--since 1h: the time)."""
    if text is None:
        return None
    from nodecli.timeparse import TimeParseError, parse_duration, parse_since

    try:
        if flag == "--since":
            return parse_since(text).timestamp()
        return parse_duration(text).total_seconds()
    except TimeParseError as exc:
        raise UsageError(f"{flag}: {exc}") from None


@transfer.command("list", context_settings=CONTEXT)
@click.option("--active", is_flag=True, help="Only running transfers (active_only=true).")
@click.option("--status", "statuses", multiple=True, metavar="S",
              help="Only transfers in these statuses (repeat or comma-separate).")
@click.option("--since", metavar="WHEN", help="Only transfers started since (1h, ISO 8601).")
@click.option("--resume", "resume_name", metavar="NAME",
              help="Only transfers not listed before under this name (kept in the home's "
                   "state/, per node and login).")
@click.option("--checkpoint", "checkpoint_file", metavar="FILE",
              type=UserPath(dir_okay=False), help="The same, the position kept in FILE.")
@fleet_options
@node_options
@output_option()
@pass_app
def transfer_list(app: App, active: bool, statuses: tuple[str, ...], since: str | None,
                  resume_name: str | None, checkpoint_file: str | None,
                  output_format: str, **kwargs: Any) -> None:
    """Every transfer this login may see, page after page (Link rel="next").

    With --resume NAME or --checkpoint FILE, only the transfers not listed by an
    earlier run with that name or file; the position is saved after the output
    (jsonl: after each page, so a crash repeats at most one page).

    \b
    Examples:
      nodecli transfer list
      nodecli transfer list --active -o json
      nodecli transfer list --status failed --since 1d
      nodecli transfer list --resume audit -o jsonl >> transfers.jsonl
    """
    from nodecli.node.transfers import list_transfers

    wanted = tuple(s.strip() for v in statuses for s in v.split(",") if s.strip())
    after = _duration(since, "--since")
    if resume_name is not None and checkpoint_file is not None:
        raise UsageError("give --resume NAME or --checkpoint FILE, not both")
    if checkpoint_file is not None and not checkpoint_file.strip():
        raise UsageError("--checkpoint needs a file name")

    def keep(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [t for t in found if (not wanted or t.get("status") in wanted) and (
            after is None or (isinstance(t.get("start_time_usec"), int)
                              and t["start_time_usec"] >= after * 1e6))]

    conn = pop_node_options(kwargs)
    names = fleet_names(app, conn, kwargs)
    if names is not None:
        from nodecli.cli import fleet

        if resume_name is not None or checkpoint_file is not None:
            raise UsageError("--resume/--checkpoint follow one node: not with --nodes")
        found, status = fleet.run(app, conn, names,
                                  lambda client: keep(list_transfers(client, active=active)))
        if output_format in ("json", "jsonl", "csv"):
            app.term.table(found, fleet.columns(CSV_COLUMNS) if output_format == "csv"
                           else COLUMNS, output_format)
        else:
            app.term.table([{"node": t["node"], **row(t)} for t in found],
                           fleet.columns(COLUMNS), output_format, empty="no transfers")
        fleet.finish(status)
        return
    with open_node_client(app, conn) as client:
        if resume_name is None and checkpoint_file is None:
            render(app, keep(list_transfers(client, active=active)), output_format)
            return
        _list_new(app, client, keep, active, resume_name, checkpoint_file, output_format)


def _list_new(app: App, client: Any, keep: Any, active: bool, name: str | None,
              path: str | None, fmt: str) -> None:
    from nodecli.node.transfers import new_transfer_pages, transfer_checkpoint

    checkpoint = transfer_checkpoint(client, app.paths.state_dir, name=name, path=path,
                                     active=active)
    checkpoint.lock()
    try:
        held: list[dict[str, Any]] = []
        commits = []
        for found, commit in new_transfer_pages(client, checkpoint, active=active):
            if fmt == "jsonl":  # one page at a time: printed, flushed, then recorded
                render(app, keep(found), fmt)
                app.term.flush()
                commit()
            else:
                held += keep(found)
                commits.append(commit)
        if fmt != "jsonl":
            render(app, held, fmt)
            app.term.flush()
            if commits:
                commits[-1]()
    finally:
        checkpoint.unlock()


@transfer.command("show", context_settings=CONTEXT)
@click.argument("transfer_id", metavar="ID")
@node_options
@output_option(("table", "json"))
@pass_app
def transfer_show(app: App, transfer_id: str, output_format: str, **kwargs: Any) -> None:
    """One transfer: status, bytes, rates, files, times, error (json: the node's object).

    \b
    Examples:
      nodecli transfer show 3f2c... -o json
    """
    from nodecli.node.transfers import check_transfer_id, get_transfer

    check_transfer_id(transfer_id)
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        render_one(app, get_transfer(client, transfer_id), output_format)


@transfer.command("watch", context_settings=CONTEXT)
@click.argument("transfer_ids", metavar="ID...", nargs=-1, required=True)
@_watch_options("")
@node_options
@output_option(("table", "json"))
@pass_app
def transfer_watch(app: App, transfer_ids: tuple[str, ...], interval: float,
                   timeout: str | None, output_format: str, **kwargs: Any) -> None:
    """Follow transfers to their end: a live line per transfer (bytes, rate, files,
    elapsed, ETA). Exit 0 all completed; 1 one failed (its error shown); 7 one was
    cancelled; 8 --timeout passed; 130 Ctrl-C. -o json prints the final objects.

    \b
    Examples:
      nodecli transfer watch ID1 ID2 --timeout 2h
    """
    from nodecli.node.transfers import check_transfer_id

    ids = [check_transfer_id(t) for t in transfer_ids]
    limit = _duration(timeout, "--timeout")
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        _watch(app, client, ids, interval, limit, output_format)


def progress_line(t: dict[str, Any], elapsed: float) -> str:
    """``ID running 12.0 GB of 40.0 GB, ETA 28s, 9.8 Mbps/10.0 Mbps, 3/10 files, 12s``:
    the ETA comes before what a narrow terminal may cut; the elapsed time is the
    transfer's own when the node gave its start (else the watch's)."""
    import time as clock

    from nodecli.timeparse import describe_delta

    start, end = t.get("start_time_usec"), t.get("end_time_usec")
    if isinstance(start, int) and not isinstance(start, bool) and 0 < start < 2**62:
        stop = end if isinstance(end, int) and not isinstance(end, bool) and end > start \
            and end < 2**62 else clock.time() * 1e6
        elapsed = max(stop - start, 0) / 1e6
    done, total = t.get("bytes_transferred"), t.get("bytes_expected")
    size = _human_bytes(done)
    eta = ""
    if isinstance(total, int) and isinstance(done, int) and total > 0:
        size += f" of {_human_bytes(total)}"
        from nodecli.render.numbers import seconds_left

        left = seconds_left(max(total - done, 0), t.get("current_rate_kbps"))
        if t.get("status") == "running" and left is not None:
            eta = f", ETA {describe_delta(left)}"
    r = row(t)  # (a file count the node left out stays None there, null in -o json)
    return (f"{sanitize(t.get('id'))} {sanitize(t.get('status'))} {size}{eta}, "
            f"{r['rate']}, {'?' if r['files'] is None else r['files']} files, "
            f"{describe_delta(elapsed)}")


def _watch(app: App, client: Any, ids: list[str], interval: float, timeout: float | None,
           fmt: str) -> None:
    from nodecli.node.transfers import watch_transfers

    # each request within --deadline, and none past the watch's own --timeout
    app.budget.follow(until=None if timeout is None else time.monotonic() + timeout)
    shown: list[str] = []  # the last state drawn, printed again after Ctrl-C

    def on_update(last: dict[str, dict[str, Any]], elapsed: float) -> None:
        lines = [progress_line(last[i], elapsed) for i in ids if i in last]
        shown[:] = lines
        running = sum(1 for i in ids if last.get(i, {}).get("status") == "running")
        app.term.status.show(f"watching {len(ids)} transfer(s), {running} running",
                             above=lines)

    try:
        last, timed_out = watch_transfers(client, ids, interval=interval, timeout=timeout,
                                          on_update=on_update)
    except KeyboardInterrupt:
        app.term.status.clear()
        for line in shown:
            app.term.info(line)
        raise Interrupted("stopped watching; the transfers go on on the node") from None
    finally:
        app.term.status.clear()
    unknown = [i for i in ids if i not in last]
    if timed_out and unknown:
        raise TimedOut(f"no answer from the node within --timeout about: "
                       f"{', '.join(map(sanitize, unknown))}")
    finals = [last[i] for i in ids]
    if fmt == "json":
        app.term.json(finals if len(finals) > 1 else finals[0])
    else:
        for t in finals:
            app.term.info(progress_line(t, 0))
    failed = [t for t in finals if t.get("status") not in ("completed", "running",
                                                           "cancelled")]
    if failed:
        t = failed[0]
        raise NodecliError(f"transfer {sanitize(t.get('id'))} {sanitize(t.get('status'))}: "
                           f"error {sanitize(t.get('error_code'))}: "
                           f"{sanitize(t.get('error_desc') or 'no description')}")
    cancelled = [t for t in finals if t.get("status") == "cancelled"]
    if cancelled:
        raise Cancelled(f"transfer {sanitize(cancelled[0].get('id'))} was cancelled")
    if timed_out:
        running = [str(t.get("id")) for t in finals if t.get("status") == "running"]
        raise TimedOut(f"still running after --timeout: {', '.join(map(sanitize, running))}")
    app.term.success(f"{len(finals)} transfer(s) completed")


@transfer.command("cancel", context_settings=CONTEXT)
@click.argument("transfer_ids", metavar="ID...", nargs=-1, required=True)
@click.option("-y", "--yes", is_flag=True, help="Do not ask (needed without a terminal).")
@node_options
@pass_app
def transfer_cancel(app: App, transfer_ids: tuple[str, ...], yes: bool,
                    **kwargs: Any) -> None:
    """Cancel transfers (the HTTP method CANCEL), after asking on a terminal.

    \b
    Examples:
      nodecli transfer cancel ID --yes
    """
    from nodecli.node.transfers import cancel_transfer, check_transfer_id

    ids = [check_transfer_id(t) for t in transfer_ids]
    if not confirm(app, f"Cancel {len(ids)} transfer(s): {', '.join(ids)}?", yes=yes):
        raise Aborted("aborted: nothing cancelled")
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        for tid in ids:
            t = cancel_transfer(client, tid)
            status = sanitize(t.get("status", "cancel sent"))
            app.term.success(f"transfer {sanitize(tid)}: {status}")


@transfer.command("modify", context_settings=CONTEXT)
@click.argument("transfer_id", metavar="ID")
@click.option("--target-rate", metavar="RATE", help="New target rate: 500m, 2g, 800k.")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="Another property (typed: numbers, true/false, null, JSON). Repeatable.")
@node_options
@output_option(("table", "json"))
@pass_app
def transfer_modify(app: App, transfer_id: str, target_rate: str | None,
                    assignments: tuple[str, ...], output_format: str, **kwargs: Any) -> None:
    """Change a running transfer (PUT /ops/transfers/ID with exactly what you give).

    \b
    Examples:
      nodecli transfer modify ID --target-rate 500m
    """
    from nodecli.node.transfers import check_transfer_id, modify_transfer, parse_rate
    from nodecli.values import build_object

    check_transfer_id(transfer_id)
    body = build_object(assignments) if assignments else {}
    if target_rate is not None:
        body["target_rate_kbps"] = parse_rate(target_rate)
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        answer = modify_transfer(client, transfer_id, body)
    if answer:
        render_one(app, answer, output_format)
    else:
        app.term.success(f"transfer {sanitize(transfer_id)}: the node accepted the change")


@transfer.command("top", context_settings=CONTEXT)
@click.option("--interval", type=click.FloatRange(0.2, 3600), default=2.0,
              show_default=True, metavar="S", help="Seconds between refreshes.")
@click.option("--once", is_flag=True, help="Print one snapshot and exit (as without a "
                                           "terminal).")
@node_options
@output_option(("table", "wide", "json", "jsonl", "csv"))
@pass_app
def transfer_top(app: App, interval: float, once: bool, output_format: str,
                 **kwargs: Any) -> None:
    """A live full-screen view of the node's transfers, like top: the active ones
    (direction, host, user, bytes, rate now/target, progress, ETA), those ended in
    the last 10 minutes (status, error), and totals. Keys: q quits, s cycles the sort
    (rate, progress, bytes, started, host), f shows only failed transfers. Without a
    terminal, or with --once, one snapshot as a table (or -o json) for scripts.

    \b
    Examples:
      nodecli transfer top --node prod
      nodecli transfer top --once -o json
    """
    from nodecli.cli.top import run_top

    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        if once or not (app.term.stdout_is_tty and app.term.stdin_is_tty):
            from nodecli.node.transfers import LiveTransfers
            from nodecli.render.top import refresh_said

            started = time.monotonic()
            found = LiveTransfers(client).refresh()
            app.term.debug(refresh_said(len(found), time.monotonic() - started))
            render(app, found, output_format)
            return
        app.budget.follow()  # each refresh within --deadline, not the whole screen
        run_top(app, client, interval, client.endpoint.label or client.endpoint.base_url)
