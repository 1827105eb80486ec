"""``nodecli events ship`` (the tail into a system that keeps events) and ``nodecli
events stats`` (counts, to check a sink against the node), added to the ``events``
group of cli/events.py (the root names this module for the group)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import Count, UserPath, fleet_names, fleet_options, output_option, pass_app
from nodecli.cli.events import (
    complete_checkpoints,
    events,
    glob_opt,
    reconnect_status,
    since_opt,
    since_value,
    token_opt,
    type_opt,
)
from nodecli.cli.remote import node_options, open_node_client, pop_node_options
from nodecli.errors import (
    Interrupted,
    NotFoundError,
    UsageError,
    counted,
    interrupted_after,
)

SINK_ENV = ("NODECLI_SINK_TOKEN", "NODECLI_SINK_USER", "NODECLI_SINK_PASSWORD")



def _options(f: Any) -> Any:
    decorators: list[Any] = [
        click.option("--to", "to_url", required=True, metavar="URL",
                     help="Where events go: https://HOST/PATH (a POST of jsonl per batch), "
                          "nats://HOST:PORT/SUBJECT, syslog+tls://HOST:PORT, "
                          "syslog+tcp://HOST:PORT, or file:PATH (exactly once)."),
        click.option("-f", "--follow", is_flag=True,
                     help="Keep shipping new events (Ctrl-C stops)."),
        type_opt, glob_opt, since_opt, token_opt,
        click.option("--batch", type=Count(1), default=500, show_default=True, metavar="N",
                     help="Events per batch (a page of the node's log); the checkpoint "
                          "moves after each batch the sink holds."),
        # (ship.WINDOW, not imported here: --help stays light)
        click.option("--window", type=click.IntRange(1, 16), default=4, show_default=True,
                     metavar="N",
                     help="Batches in flight at once (sent before the ones before them are "
                          "acknowledged); a crash sends again at most N batches."),
        click.option("--checkpoint", "checkpoint_file", metavar="FILE",
                     type=UserPath(dir_okay=False),
                     help="Resume from and save the position in FILE."),
        click.option("--resume", "resume_name", metavar="NAME",
                     shell_complete=complete_checkpoints,
                     help="Named checkpoint kept in the home's state/ (per node and filter)."),
        click.option("--interval", type=click.FloatRange(0.05, 3600), default=2.0,
                     show_default=True, metavar="S",
                     help="Seconds between polls once caught up (jittered)."),
        click.option("--dead-letter", metavar="FILE", type=UserPath(dir_okay=False),
                     help="Set a batch the collector refuses (4xx) aside in FILE (jsonl, "
                          "0600) and go on, instead of stopping before it."),
        click.option("--accept-gap", is_flag=True,
                     help="When the node no longer holds the events after the checkpoint, "
                          "go on from the oldest it holds, after a nodecli.gap event."),
        click.option("--sink-cacert", metavar="PEM", type=UserPath(dir_okay=False),
                     envvar="NODECLI_SINK_CACERT", show_envvar=True,
                     help="CA file for a TLS sink (https, tls, syslog+tls)."),
        click.option("--sink-insecure", is_flag=True,
                     help="Do not verify the sink's TLS certificate (tests only)."),
        click.option("--sink-creds", metavar="FILE", type=UserPath(dir_okay=False),
                     help="The sink's credentials: lines token=..., user=..., password=... "
                          "(or NODECLI_SINK_TOKEN, NODECLI_SINK_USER, NODECLI_SINK_PASSWORD)."),
        click.option("--creds", "nats_creds", metavar="FILE", type=UserPath(dir_okay=False),
                     help="A NATS .creds file (nats:// and tls:// sinks)."),
        click.option("--sink-timeout", type=click.FloatRange(0.1, 3600), default=30.0,
                     show_default=True, metavar="S",
                     help="Seconds one delivery attempt may take."),
        fleet_options, node_options, pass_app,
    ]
    for deco in reversed(decorators):
        f = deco(f)
    return f


def read_creds(path: str) -> dict[str, str]:
    """``--sink-creds FILE``: ``token=``, ``user=``, ``password=`` lines (a file of one
    line that is none of these is the token itself)."""
    import re

    from nodecli.fsutil import read_limited

    raw = read_limited(path, 64 * 1024, "--sink-creds")
    try:
        lines = [(n, ln.strip()) for n, ln in enumerate(raw.decode("utf-8").splitlines(), 1)
                 if ln.strip()]
    except UnicodeDecodeError:
        raise UsageError(f"--sink-creds {path}: not UTF-8 text") from None
    keys = ("token", "user", "password")
    if len(lines) == 1 and lines[0][1].partition("=")[0].strip().lower() not in keys:
        key, sep, value = lines[0][1].partition("=")
        # a word, '=' and more than padding is a key=value line with a key misspelt
        # ('usr=bob'): sent as a token it would only be refused by the sink, unexplained
        if not (sep and value.strip("=") and re.fullmatch(r"[A-Za-z_][\w-]{0,31}\s*", key)):
            return {"token": lines[0][1]}  # the token itself, '=' and all (base64 pads)
        raise UsageError(f"--sink-creds {path}: line 1 is not token=..., user=... or "
                         "password=...", hint="a token holding '=' before its end goes "
                                              "on a line token=TOKEN")
    found: dict[str, str] = {}
    for n, line in lines:
        key, sep, value = line.partition("=")
        key = key.strip().lower()
        if not sep or key not in keys:
            # (the line is not shown: a token or password pasted on it would be)
            raise UsageError(f"--sink-creds {path}: line {n} is not token=..., user=... "
                             "or password=...")
        found[key] = value.strip()
    return found


def sink_context(app: App, *, cacert: str | None, insecure: bool, creds: str | None,
                 nats_creds: str | None, dead_letter: str | None, timeout: float) -> Any:
    from nodecli.node.events.batch import SinkContext

    given = read_creds(creds) if creds else {}
    token = os.environ.get("NODECLI_SINK_TOKEN") or given.get("token")
    user = os.environ.get("NODECLI_SINK_USER") or given.get("user")
    password = os.environ.get("NODECLI_SINK_PASSWORD") or given.get("password")
    if cacert is not None and not Path(cacert).exists():
        raise NotFoundError(f"CA file {cacert}: no such file",
                            hint="from --sink-cacert or NODECLI_SINK_CACERT")
    if nats_creds is not None and not Path(nats_creds).exists():
        raise NotFoundError(f"--creds {nats_creds}: no such file")
    from nodecli.render import sanitize

    return SinkContext(cacert=Path(cacert) if cacert else None, insecure=insecure,
                       creds_file=Path(nats_creds) if nats_creds else None, token=token,
                       user=user, password=password,
                       dead_letter=Path(dead_letter) if dead_letter else None,
                       timeout=timeout,
                       notice=lambda text: app.term.warn(sanitize(text)[:400]))


class _Serial:
    """One batch sink shared by the nodes of a fleet: one delivery at a time."""

    def __init__(self, sink: Any) -> None:
        import threading

        self.sink = sink
        self.lock = threading.Lock()

    def deliver(self, batch: Any) -> None:
        with self.lock:
            self.sink.deliver(batch)

    @property
    def max_window(self) -> int:
        return int(getattr(self.sink, "max_window", 16))

    def resume(self) -> None:
        resume = getattr(self.sink, "resume", None)
        if resume is not None:
            resume()

    def close(self) -> None:
        self.sink.close()


def _shown(url: str) -> str:
    from nodecli.render import sanitize

    return sanitize(url)[:200]


def ship_cmd_impl(app: App, to_url: str, follow: bool, type_: str | None,
                  type_glob: str | None, since: str | None, iteration_token: str | None,
                  batch: int, checkpoint_file: str | None, resume_name: str | None,
                  interval: float, dead_letter: str | None, accept_gap: bool,
                  sink_cacert: str | None, sink_insecure: bool, sink_creds: str | None,
                  nats_creds: str | None, sink_timeout: float, kwargs: dict[str, Any], *,
                  window: int = 4) -> None:
    from nodecli.node.events import ship, tail
    from nodecli.node.events.pages import EventFilter, validate_token

    conn = pop_node_options(kwargs)
    ship.check_url(to_url)
    out_file = ship.file_target(to_url)
    if follow:
        app.budget.follow()
    if dead_letter is not None and out_file is not None:
        raise UsageError("--dead-letter is for a collector that may refuse a batch, not "
                         "for file:")
    opts = tail.TailOptions(
        flt=EventFilter(type_, type_glob), follow=follow, since=since_value(since),
        token=validate_token(iteration_token) if iteration_token is not None else None,
        page_size=batch, fmt="jsonl", interval=interval, accept_gap=accept_gap)
    ck_file = Path(checkpoint_file) if checkpoint_file else None
    tail.check_destinations("jsonl", ck_file, resume_name, out_file)
    if out_file is None and ck_file is None and resume_name is None:
        raise UsageError("events ship needs a checkpoint: --resume NAME or --checkpoint "
                         "FILE (where shipping stands between runs)")
    names = fleet_names(app, conn, kwargs)
    if names is not None:
        _fleet_ship(app, conn, names, opts, to_url, out_file, resume_name, ck_file,
                    sink_args=(sink_cacert, sink_insecure, sink_creds, nats_creds,
                               dead_letter, sink_timeout), window=window)
        return
    from nodecli import dryrun

    if dryrun.active():
        raise dryrun.DryRunStop(f"would ship events to {_shown(to_url)}; nothing was sent "
                                "(--dry-run)")
    client = open_node_client(app, conn)
    status = reconnect_status(app)
    sink = None
    if out_file is None:
        ctx = sink_context(app, cacert=sink_cacert, insecure=sink_insecure, creds=sink_creds,
                           nats_creds=nats_creds, dead_letter=dead_letter,
                           timeout=sink_timeout)
        batch_sink = ship.open_batch_sink(to_url, ctx)
        from nodecli import interrupt

        path = tail.checkpoint_path(client, opts, state_dir=app.paths.state_dir,
                                    checkpoint_file=ck_file, resume_name=resume_name,
                                    output_file=None)
        from nodecli.node.events.checkpoint import CheckpointFile, node_key

        sink = ship.ShipSink(batch_sink, client.endpoint.label or "node",
                             CheckpointFile(path, node=node_key(client), flt=opts.flt)
                             if path else None, follow=follow, nap=interrupt.wait,
                             retry_base=opts.retry_base, retry_cap=opts.retry_cap,
                             status=status, batch_size=batch, window=window)
    try:
        with client:
            state = tail.run_tail(
                client, opts, state_dir=app.paths.state_dir, out=app.term.out,
                checkpoint_file=ck_file, resume_name=resume_name, output_file=out_file,
                status=status, notice=lambda text: app.term.info("hint: " + text),
                warn=app.term.warn, log=app.term.debug, sink=sink)
    except tail.TailInterrupted as exc:
        app.term.status.clear()
        raise Interrupted(exc.message, hint="the same command resumes where it stopped"
                          ) from None
    finally:
        app.term.status.clear()
        if sink is not None:
            sink.close()  # the batches still in flight first
            sink.batch.close()
    where = _shown(to_url)
    batches = f" in {counted(sink.batches, 'batch', 'batches')}" if sink else ""
    app.term.info(f"shipped {counted(state.emitted, 'event')} to {where}{batches}")


def _fleet_ship(app: App, conn: dict[str, Any], names: list[str], opts: Any, to_url: str,
                out_file: Path | None, resume_name: str | None, ck_file: Path | None, *,
                sink_args: tuple[Any, ...], window: int = 4) -> None:
    from nodecli.cli import fleet
    from nodecli.node.events import merged, ship

    if opts.token is not None:
        raise UsageError("an iteration token belongs to one node: not with --nodes")
    if ck_file is not None or (resume_name is None and out_file is None):
        raise UsageError("--checkpoint FILE holds one node's position: with --nodes use "
                         "--resume NAME (a checkpoint per node)")
    from nodecli import dryrun

    if dryrun.active():
        raise dryrun.DryRunStop(f"would ship events of {len(names)} node(s) to "
                                f"{_shown(to_url)}; nothing was sent (--dry-run)")
    shared: _Serial | None = None
    if out_file is None:  # (a file: the merged tail's own, each line naming its node)
        cacert, insecure, creds, nats_creds, dead_letter, timeout = sink_args
        ctx = sink_context(app, cacert=cacert, insecure=insecure, creds=creds,
                           nats_creds=nats_creds, dead_letter=dead_letter, timeout=timeout)
        shared = _Serial(ship.open_batch_sink(to_url, ctx))
    clients, failures = fleet.open_all(app, conn, names)
    runs = [merged.NodeRun(name, client, merged.checkpoint_for(
        name, client, opts, state_dir=app.paths.state_dir, resume_name=resume_name,
        output_file=out_file)) for name, client in clients]
    by_name = {run.name: run for run in runs}
    stop = merged.FleetStop()
    from nodecli.render import sanitize

    def say(text: str) -> None:
        app.term.status.clear()
        app.term.warn(sanitize(text)[:400])

    made: list[Any] = []  # closed (their batches in flight waited for) before the sink

    def sink_for(name: str) -> Any:
        assert shared is not None
        made.append(ship.ShipSink(shared, name, by_name[name].checkpoint, follow=opts.follow,
                             nap=stop.sleep, retry_base=opts.retry_base,
                             retry_cap=opts.retry_cap, status=lambda text: say(f"{name}: {text}"),
                             batch_size=opts.page_size, window=window))
        return made[-1]

    try:
        merged.merged_tail(runs, opts, state_dir=app.paths.state_dir, out=app.term.out,
                           output_file=out_file, say=say, log=app.term.debug, stop=stop,
                           sink_for=sink_for if shared is not None else None)
    except KeyboardInterrupt:
        raise Interrupted(interrupted_after(sum(r.emitted for r in runs))) from None
    finally:
        app.term.status.clear()
        for one in made:
            one.close()
        if shared is not None:
            shared.close()
        for _, client in clients:
            client.close()
    fleet.end_merged(app, runs, failures, resumable=True, done=lambda n: (
        f"shipped {counted(n, 'event')} from {len(runs)} node(s) to {_shown(to_url)}"))


@events.command("ship")
@_options
def ship_cmd(app: App, to_url: str, follow: bool, type_: str | None, type_glob: str | None,
             since: str | None, iteration_token: str | None, batch: int,
             checkpoint_file: str | None, resume_name: str | None, interval: float,
             dead_letter: str | None, accept_gap: bool, sink_cacert: str | None,
             sink_insecure: bool, sink_creds: str | None, nats_creds: str | None,
             sink_timeout: float, window: int, **kwargs: Any) -> None:
    """Ship events to a system that keeps them; the checkpoint moves only past what it holds.

    Start point: the checkpoint when it exists, else --iteration-token, else --since,
    else the last 10 minutes. Sink credentials come from the environment
    (NODECLI_SINK_TOKEN, or NODECLI_SINK_USER and NODECLI_SINK_PASSWORD), --sink-creds
    FILE or a NATS --creds FILE, never from the command line.

    \b
    Examples:
      nodecli events ship -f --resume siem --to https://collector.example/ingest
      nodecli events ship -f --resume js --to nats://nats.example:4222/nodes.{node}
      nodecli events ship -f --all-nodes --resume siem --to syslog+tls://siem:6514
      nodecli events ship --to file:/var/log/node-events.jsonl
    """
    ship_cmd_impl(app, to_url, follow, type_, type_glob, since, iteration_token, batch,
                  checkpoint_file, resume_name, interval, dead_letter, accept_gap,
                  sink_cacert, sink_insecure, sink_creds, nats_creds, sink_timeout, kwargs,
                  window=window)


@events.command("stats")
@click.option("--file", "from_file", metavar="FILE", type=UserPath(dir_okay=False),
              help="Count the events of a jsonl file (events tail --to, a sink's output) "
                   "instead of a node's.")
@click.option("--since", metavar="WHEN",
              help="A node's events after this time (10m, 2h, 1d ago or ISO 8601); "
                   "default: all it holds.")
@click.option("--by", "by", type=click.Choice(("type", "user", "hour", "node")),
              multiple=True, help="Only these counts (repeatable; default: all four).")
@output_option(("table", "csv", "json"))
@fleet_options
@node_options
@pass_app
def stats_cmd(app: App, from_file: str | None, since: str | None, by: tuple[str, ...],
              output_format: str, **kwargs: Any) -> None:
    """Count events by type, user, hour and node: of a node's log or a jsonl file.

    \b
    Examples:
      nodecli events stats --since 1d
      nodecli events stats --file /var/log/node-events.jsonl -o json
      nodecli events stats --all-nodes --by node -o csv
    """
    from nodecli.node.events.stats import DIMENSIONS, Stats, file_events

    conn = pop_node_options(kwargs)
    dims = by or DIMENSIONS
    stats = Stats()
    if from_file is not None:
        if since is not None:
            raise UsageError("--since counts a node's events; not with --file")
        stats.add_all(file_events(Path(from_file), stats), None)
    else:
        names = fleet_names(app, conn, kwargs)
        if names is None:
            client = open_node_client(app, conn)
            with client:
                _count_node(app, client, client.endpoint.label or "node", since, stats)
        else:
            from nodecli.cli import fleet  # only for many nodes (the start-up diet)

            clients, failures = fleet.open_all(app, conn, names)
            try:
                for name, client in clients:
                    _count_node(app, client, name, since, stats)
            finally:
                for _, client in clients:
                    client.close()
            fleet.report(app, failures)
    rows = stats.rows(dims)
    rows.append({"by": "total", "key": "", "count": stats.total})
    if output_format == "json":  # the rows, as csv has them
        app.term.json(rows)
    else:
        from nodecli.render import Column

        app.term.table(rows, [Column("by", "by", whole=True), Column("key", "key"),
                              Column("count", "count", whole=True)], output_format,
                       empty="no events")
    if stats.unreadable:
        app.term.warn(f"{stats.unreadable} line(s) of {from_file} are not events; not counted")


def _count_node(app: App, client: Any, name: str, since: str | None, stats: Any) -> None:
    """Every event the node holds (after ``since``), page after page, counted."""
    from datetime import UTC, datetime

    from nodecli.node.events import tail
    from nodecli.node.events.sinks import TextSink

    class Counting(TextSink):
        def take(self, items: Any, texts: Any) -> None:
            stats.add_all((obj for obj, _ in items), name)

    after = since_value(since) if since is not None else datetime(1970, 1, 1, tzinfo=UTC)
    opts = tail.TailOptions(since=after, fmt="jsonl")
    tail.run_tail(client, opts, state_dir=app.paths.state_dir, out=app.term.out,
                  log=app.term.debug, sink=Counting())
