"""``nodecli events``: list one page, get one event, tail the node's activity log."""

from __future__ import annotations

import shlex
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import Count, UserPath, fleet_names, fleet_options, output_option, pass_app
from nodecli.cli.lazy import HelpGroup, lazy_completer
from nodecli.cli.remote import node_options, open_node_client, pop_node_options
from nodecli.errors import Interrupted, UsageError, counted, interrupted_after

complete_checkpoints = lazy_completer("complete_checkpoints")


def since_value(value: str | None) -> Any:
    if value is None:
        return None
    from nodecli.timeparse import TimeParseError, parse_since

    try:
        return parse_since(value)
    except TimeParseError as exc:
        raise UsageError(f"--since: {exc}") from None


def _filter(type_: str | None, type_glob: str | None) -> Any:
    from nodecli.node.events.pages import EventFilter

    return EventFilter(type_, type_glob)


type_opt = click.option("--type", "type_", metavar="T",
                         help="Only events of this type or subtype (e.g. transfer.started).")
glob_opt = click.option("--type-glob", metavar="G",
                         help="Only events matching this glob; * is the wildcard (e.g. 'file.*').")
since_opt = click.option("--since", metavar="WHEN",
                          help="Start after this time: 10m, 2h, 1d ago or ISO 8601 (UTC).")
token_opt = click.option("--iteration-token", metavar="T",
                          help="Start after the point this token names (from a Link header).")


@click.group("events", cls=HelpGroup)
def events() -> None:
    """List, get and tail the node activity log.

    \b
    Examples:
      nodecli events list --type-glob 'file.*' --since 2h
      nodecli events get 1440571 -o json
      nodecli events tail -f --resume audit -o jsonl
      nodecli events tail -f --to events.jsonl --type transfer.ended
    """


@events.command("list")
@type_opt
@glob_opt
@since_opt
@click.option("--count", type=Count(0), metavar="N",
              help="At most N events, N >= 0 (the oldest matching ones; node default "
                   "otherwise). "
                   "Sent as given: a node may return fewer.")
@token_opt
@output_option()
@fleet_options
@node_options
@pass_app
def list_cmd(app: App, type_: str | None, type_glob: str | None, since: str | None,
             count: int | None, iteration_token: str | None, output_format: str,
             **kwargs: Any) -> None:
    """One page of events, oldest first, as the node returns it.

    The next iteration token goes to stderr (table, jsonl) or into the JSON object
    (json: {"events": [...], "next_iteration_token": "...", "next_url": "..."}).

    \b
    Examples:
      nodecli events list --count 20
      nodecli events list --type transfer.ended --since 1d -o json
      nodecli events list --iteration-token 1440571
    """
    from nodecli.node.events import pages

    conn = pop_node_options(kwargs)
    flt = _filter(type_, type_glob)
    after = since_value(since)
    token = pages.validate_token(iteration_token) if iteration_token is not None else None
    names = fleet_names(app, conn, kwargs)
    if names is not None:  # one page of each node; json: a page document per node
        from nodecli.cli import fleet
        if token is not None:
            raise UsageError("an iteration token belongs to one node: not with --nodes")

        def page_of(client: Any) -> list[dict[str, Any]]:
            result = pages.list_events(client, flt, since=after, token=None, count=count,
                                       state_dir=app.paths.state_dir, log=app.term.debug)
            return [{"events": result.page.events,
                     "next_iteration_token": result.page.next_token}]

        docs, status = fleet.run(app, conn, names, page_of)
        if output_format == "json":
            app.term.json(docs)
        else:
            found = [{"node": d["node"], **e} for d in docs for e in d["events"]]
            if output_format == "jsonl":
                app.term.jsonl(found)
            else:
                _fleet_rows(app, found, output_format)
        fleet.finish(status)
        return
    client = open_node_client(app, conn)
    with client:
        result = pages.list_events(client, flt, since=after, token=token, count=count,
                                state_dir=app.paths.state_dir, log=app.term.debug)
    _show_page(app, result, output_format)


def _fleet_rows(app: App, found: list[dict[str, Any]], fmt: str) -> None:
    from nodecli.node.events.pages import event_types
    from nodecli.render import Column, iso_time
    from nodecli.render import events as rev

    cut = rev.cutter(fmt == "csv")
    rows = [{"node": e["node"], "id": rev.clean(e.get("id"), cut(80)),
             "time": iso_time(rev.clean(e.get("time"), cut(40))),
             "type": rev.clean(rev.main_type(event_types(e)), cut(60)),
             "summary": rev.summary(e, fmt == "csv")} for e in found]
    app.term.table(rows, [Column("node", "node", whole=True), Column("id", "id", whole=True),
                          Column("time", "time", whole=True), Column("type", "type"),
                          Column("summary", "summary")], fmt, empty="no events")


def _show_page(app: App, result: Any, output_format: str) -> None:
    from nodecli.node.events.pages import event_types, foreign_host_notice
    from nodecli.render import events as rev

    page = result.page
    if output_format == "json":
        app.term.json({"events": page.events, "next_iteration_token": page.next_token,
                       "next_url": page.next_url}, items="events")
    elif output_format == "jsonl":
        app.term.out.write(rev.render_chunk(page.items, "jsonl"))
    elif output_format == "csv":  # the json field names and values (data as JSON)
        from nodecli.render import Column

        app.term.table(page.events, [Column(k, k, whole=True) for k in
                                     ("id", "time", "user_id", "types", "data")], "csv")
    else:
        from nodecli.render import Column, iso_time

        cut = rev.cutter(False)
        rows = [{"id": rev.clean(e.get("id"), cut(80)),
                 "time": iso_time(rev.clean(e.get("time"), cut(40))),
                 "type": rev.clean(rev.main_type(event_types(e)), cut(60)),
                 "user": rev.clean(e.get("user_id"), cut(60)),
                 "summary": rev.summary(e, False)}
                for e in page.events]
        app.term.table(rows, [Column("id", "id", whole=True),
                              Column("time", "time", whole=True), Column("type", "type"),
                              Column("user", "user", drop=1), Column("summary", "summary")],
                       output_format, empty="no events")
    if page.link_problem:
        app.term.warn(rev.clean(page.link_problem, 300))
    if page.foreign_host is not None:
        app.term.warn(rev.clean(foreign_host_notice(page.foreign_host, result.base_url), 400))
    if output_format != "json" and page.next_token:
        app.term.info(f"next iteration token: {rev.clean(page.next_token, 200)} (continue "
                      f"with --iteration-token {shlex.quote(rev.clean(page.next_token, None))})")
    if result.hint:
        app.term.info("hint: " + result.hint)


@events.command("get")
@click.argument("event_id", metavar="ID")
@output_option(("table", "json"))
@node_options
@pass_app
def get_cmd(app: App, event_id: str, output_format: str, **kwargs: Any) -> None:
    """One event by id (GET /events/{id}, nodes 3.7.3 and later).

    \b
    Examples:
      nodecli events get 1440571
      nodecli events get 1440571 -o json | jq .data
    """
    from nodecli.node.events.pages import event_types, get_event
    from nodecli.render import events as rev

    conn = pop_node_options(kwargs)
    client = open_node_client(app, conn)
    with client:
        event = get_event(client, event_id, state_dir=app.paths.state_dir,
                             log=app.term.debug)
    if output_format == "json":
        app.term.json(event)
        return
    from nodecli.render import iso_time, sanitize
    from nodecli.render.table import json_text
    from nodecli.render.text import clip

    data = json_text(event.get("data"), indent=2).splitlines()
    width = app.term.width
    app.term.fields([("id", rev.clean(event.get("id"))),
                     ("time", iso_time(rev.clean(event.get("time")))),
                     ("types", event_types(event)),
                     ("user", rev.clean(event.get("user_id"))), ("summary", rev.summary(event)),
                     ("data", data[0])])
    for line in data[1:]:  # the object goes on under its first line, aligned with it
        shown = " " * len("summary  ") + sanitize(line)
        app.term.data(shown if width is None else clip(shown, width))


TAIL_FORMATS = ("pretty", "plain", "json", "jsonl")


# Words that name an output format somewhere (here, in another command, or in another
# tool): '--output WORD' never means a file called WORD.
_FORMAT_WORDS = frozenset({*TAIL_FORMATS, "table", "csv", "tsv", "text", "wide", "yaml",
                           "yml", "toml", "xml", "html", "md", "markdown", "raw"})


def _legacy_output(app: App, value: str, output_file: str | None,
                   fmt: str | None) -> tuple[str | None, str | None]:
    """What ``--output VALUE`` means: the format when VALUE is one; before --to existed
    it named the file, which still works (with a warning) for a value that is no format
    word. Returns (output_file, fmt)."""
    choices = ", ".join(TAIL_FORMATS)
    if fmt is not None:
        raise UsageError("give the format once: -o/--format or --output")
    if value in TAIL_FORMATS:
        return output_file, value
    if value.lower() in _FORMAT_WORDS or not value:
        raise UsageError(f"'{value}' is not a format of events tail (choose from {choices})")
    if output_file is not None:
        raise UsageError(f"'{value}' is not a format ({choices}) and --to already names "
                         "the output file")
    app.term.warn(f"--output FILE is deprecated: use --to {shlex.quote(value)} "
                  f"(-o/--output is the format: {choices})")
    return value, None


@events.command("tail")
@click.option("-f", "--follow", is_flag=True, help="Keep following new events (Ctrl-C stops).")
@type_opt
@glob_opt
@since_opt
@token_opt
@click.option("--page-size", type=Count(1), default=1000, show_default=True, metavar="N",
              help="Events asked for per request (count, N >= 1); a node may send fewer.")
@click.option("--checkpoint", "checkpoint_file", metavar="FILE",
              type=UserPath(dir_okay=False), help="Resume from and save the position in FILE.")
@click.option("--resume", "resume_name", metavar="NAME", shell_complete=complete_checkpoints,
              help="Named checkpoint kept in the home's state/ (per node and filter).")
@click.option("--to", "output_file", metavar="FILE", type=UserPath(dir_okay=False),
              help="Append to FILE, exactly once across crashes (checkpoint FILE.checkpoint "
                   "unless --checkpoint/--resume).")
@click.option("-o", "--format", "fmt", type=click.Choice(TAIL_FORMATS),
              help="Output format: pretty (terminal default), plain (piped default: "
                   "tab-separated), json, jsonl (the node's objects unchanged; default with "
                   "--to).")
@click.option("--output", "legacy_output", metavar="FORMAT",
              shell_complete=lambda ctx, param, incomplete: [
                  f for f in TAIL_FORMATS if f.startswith(incomplete)],
              help="Same as -o. Deprecated: '--output FILE' (a path, not a format name) "
                   "means '--to FILE'.")
@click.option("--interval", type=click.FloatRange(0.05, 3600), default=2.0, show_default=True,
              metavar="S", help="Seconds between polls once caught up (jittered).")
@click.option("--max-events", type=click.IntRange(1), metavar="N", help="Stop after N events.")
@click.option("--until-type", metavar="T", help="Stop after the first event of type T.")
@click.option("--accept-gap", is_flag=True, help="Go on past events the node has dropped.")
@fleet_options
@node_options
@pass_app
def tail_cmd(app: App, follow: bool, type_: str | None, type_glob: str | None,
             since: str | None, iteration_token: str | None, page_size: int,
             checkpoint_file: str | None, resume_name: str | None, output_file: str | None,
             fmt: str | None, legacy_output: str | None, interval: float,
             max_events: int | None, until_type: str | None, **kwargs: Any) -> None:
    """Print events from a start point to now, page after page (-f: keep following).

    Start point: the checkpoint (--checkpoint/--resume, or --to's) when it exists,
    else --iteration-token, else --since, else the last 10 minutes.

    \b
    Examples:
      nodecli events tail --since 1h
      nodecli events tail -f --type-glob 'transfer.*'
      nodecli events tail -f --resume siem -o jsonl | siem-forwarder
      nodecli events tail -f --to /var/log/node-events.jsonl
      nodecli events tail -f --all-nodes --to /var/log/fleet-events.jsonl

    With --nodes/--all-nodes every node is tailed at once into one stream (jsonl:
    a "node" field; plain, pretty: the node's name first), each node in its own
    order with its own checkpoint (--resume NAME, or FILE.checkpoints/ beside --to
    FILE); a node that is down is tried again in the background.
    """
    from nodecli.node.events import tail as ev
    from nodecli.node.events.pages import validate_token

    conn = pop_node_options(kwargs)
    if follow:
        app.budget.follow()  # each request within --deadline, not the whole run
    if legacy_output is not None:
        output_file, fmt = _legacy_output(app, legacy_output, output_file, fmt)
    if output_file is not None:
        fmt = fmt or "jsonl"
    else:
        fmt = fmt or ("pretty" if app.term.stdout_is_tty else "plain")
    opts = ev.TailOptions(
        flt=_filter(type_, type_glob), follow=follow, since=since_value(since),
        token=validate_token(iteration_token) if iteration_token is not None else None,
        page_size=page_size, fmt=fmt, interval=interval, max_events=max_events,
        until_type=until_type, render=_chunk_renderer(fmt, app.term.color_out, app.term.width))
    from pathlib import Path

    opts.accept_gap = kwargs.pop("accept_gap")  # (see docs/shipping.md, "Gaps")
    ck_file = Path(checkpoint_file) if checkpoint_file else None
    out_file = Path(output_file) if output_file else None
    ev.check_destinations(fmt, ck_file, resume_name, out_file)
    names = fleet_names(app, conn, kwargs)
    if names is not None:
        _fleet_tail(app, conn, names, opts, resume_name=resume_name, checkpoint=ck_file,
                    output_file=out_file)
        return
    client = open_node_client(app, conn)
    status = reconnect_status(app)
    try:
        with client:
            state = ev.run_tail(
                client, opts, state_dir=app.paths.state_dir, out=app.term.out,
                checkpoint_file=ck_file, resume_name=resume_name, output_file=out_file,
                status=status, notice=lambda text: app.term.info("hint: " + text),
                warn=app.term.warn,
                log=app.term.debug, progress=_file_progress(app, output_file))
    except ev.TailInterrupted as exc:
        app.term.status.clear()
        how = _resume_hint(follow, type_, type_glob, checkpoint_file, resume_name,
                           output_file, exc.state.token, conn)
        raise Interrupted(exc.message, hint=f"resume with: {how}" if how else None) from None
    finally:
        app.term.status.clear()
    if out_file is not None:  # a file shows nothing on the terminal: say what went in
        app.term.info(f"wrote {counted(state.emitted, 'event')} to {output_file}")
    app.term.debug(f"{counted(state.emitted, 'event')} from {state.start}; "
                   f"stopped: {state.stopped_by}")


def _fleet_tail(app: App, conn: dict[str, Any], names: list[str], opts: Any, *,
                resume_name: str | None, checkpoint: Any, output_file: Any) -> None:
    """``events tail --nodes/--all-nodes``: one merged stream (see node.events.merged)."""
    from nodecli.cli import fleet
    from nodecli.node.events import merged

    if opts.token is not None:
        raise UsageError("an iteration token belongs to one node: not with --nodes")
    if checkpoint is not None:
        raise UsageError("--checkpoint FILE holds one node's position: with --nodes use "
                         "--resume NAME or --to FILE (a checkpoint per node)")
    if opts.fmt == "json":
        raise UsageError("a merged tail writes jsonl, plain or pretty")
    clients, failures = fleet.open_all(app, conn, names)
    runs = [merged.NodeRun(name, client, merged.checkpoint_for(
        name, client, opts, state_dir=app.paths.state_dir, resume_name=resume_name,
        output_file=output_file)) for name, client in clients]
    from nodecli.render import sanitize

    def say(text: str) -> None:
        app.term.status.clear()
        app.term.warn(sanitize(text)[:400])

    try:
        merged.merged_tail(runs, opts, state_dir=app.paths.state_dir, out=app.term.out,
                           output_file=output_file, say=say, log=app.term.debug,
                           progress=_file_progress(app, str(output_file) if output_file
                                                   else None))
    except KeyboardInterrupt:
        app.term.status.clear()
        raise Interrupted(interrupted_after(sum(r.emitted for r in runs))) from None
    finally:
        app.term.status.clear()
        for _, client in clients:
            client.close()
    fleet.end_merged(app, runs, failures, resumable=bool(resume_name or output_file),
                     done=None if output_file is None else lambda n: (
                         f"wrote {counted(n, 'event')} from {len(runs)} node(s) to {output_file}"))


def _from_env(ctx: click.Context, name: str) -> bool:
    from click.core import ParameterSource

    try:
        return ctx.get_parameter_source(name) == ParameterSource.ENVIRONMENT
    except (KeyError, TypeError):
        return False


# connection options as the user spelt them (values only; secrets never go in argv)
_CONN_FLAGS = (("node", "--node"), ("url", "--url"), ("node_user", "--user"),
               ("access_key", "--access-key"), ("bearer_file", "--bearer-file"),
               ("cacert", "--cacert"), ("access_key_header", "--access-key-header"))


def _resume_hint(follow: bool, type_: str | None, type_glob: str | None,
                 checkpoint_file: str | None, resume_name: str | None, output_file: str | None,
                 token: str | None, conn: dict[str, Any] | None = None) -> str | None:
    """A command that resumes this tail when pasted: the same node and login (never a
    secret: a password still comes from the prompt, NODECLI_PASSWORD or the profile)."""
    args = ["nodecli", "events", "tail"]
    if follow:
        args.append("-f")
    ctx = click.get_current_context(silent=True)
    for name, flag in _CONN_FLAGS:
        value = (conn or {}).get(name)
        if value and not (ctx is not None and _from_env(ctx, name)):
            args += [flag, str(value)]  # (a value from NODECLI_* is still in the env)
    if (conn or {}).get("insecure"):
        args.append("--insecure")
    if type_:
        args += ["--type", type_]
    if type_glob:
        args += ["--type-glob", type_glob]
    if resume_name:
        args += ["--resume", resume_name]
    elif checkpoint_file:
        args += ["--checkpoint", checkpoint_file]
    elif not output_file:
        if not token:
            return None
        args += ["--iteration-token", token]
    if output_file:
        args += ["--to", output_file]
    return shlex.join(args)


def _chunk_renderer(fmt: str, colour: bool, width: int | None = None) -> Any:
    """The text of a page of events in ``fmt`` (None: jsonl, the node's own lines);
    pretty lines cut to ``width`` (the terminal's; None off a terminal)."""
    if fmt == "jsonl":
        return None
    from nodecli.render import events as rev

    if fmt == "pretty" and colour:
        return lambda items: "".join(_colour_line(obj, width) + "\n" for obj, _ in items)
    return lambda items: rev.render_chunk(items, fmt, width)


_FAMILY_COLOUR = {"transfer": "36", "file": "32", "permission": "33", "lock": "35"}


def _colour_line(event: dict[str, Any], width: int | None = None) -> str:
    """A pretty line with ANSI colour: dim time, type by family, bold running marker."""
    from nodecli.render import events as rev

    t, typ, user, text, family = rev.pretty_parts(event)
    t, typ, user, text = rev.fit_pretty(t, typ, user, text, width)
    colour = _FAMILY_COLOUR.get(family, "0")
    text = text.replace("[RUNNING]", "\x1b[1;36m[RUNNING]\x1b[0m")
    return f"\x1b[2m{t}\x1b[0m  \x1b[{colour}m{typ}\x1b[0m  {user}  {text}"


def _file_progress(app: App, path: str | None) -> Any:
    """With --to FILE on a terminal: a quiet live line of how far the file has got."""
    if path is None or not app.term.status.live:
        return None
    from nodecli.render import sanitize

    def show(written: int, last_time: Any) -> None:
        when = f"; last event {sanitize(str(last_time))[:40]}" if last_time else ""
        app.term.status.show(f"{counted(written, 'event')} written{when}; to {sanitize(path)}")

    return show


def reconnect_status(app: App) -> Any:
    """The tail's status callback: reconnect attempts on the live status line (warnings
    off a terminal), then "resumed" as a line of its own."""

    def show(text: str) -> None:
        if text == "resumed":
            app.term.status.clear()
            app.term.info("resumed")
        else:
            app.term.status.show(text, plain=text, warn=True)

    return show
