"""``nodecli files``: browse what a node holds (ls, find, tree), every page of every
folder (thin: the domain is nodecli.node.files)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import CONTEXT, output_option, pass_app
from nodecli.cli.lazy import LazyGroup
from nodecli.cli.remote import access_options, open_node_client, pop_node_options
from nodecli.errors import UsageError
from nodecli.render import Column

LS_COLUMNS = [Column("type", "type"), Column("size", "size", justify="right", whole=True),
              Column("mtime", "modified", whole=True, drop=1),
              Column("name", "name", whole=True), Column("id", "id", drop=2)]
FIND_COLUMNS = [*LS_COLUMNS[:4], Column("path", "path", free=True),
                Column("id", "id", drop=3)]
ENTRY_CSV = [Column(k, k) for k in ("path", "name", "type", "size", "mtime", "id")]


@click.group("files", cls=LazyGroup, context_settings=CONTEXT, lazy_subcommands={
    "du": ("nodecli.cli.files_du:du", "Size, files and folders under PATH (--resume, -o ncdu).")},
             help="""Browse what a node holds: every page of every folder.

Log in with an access key (--access-key AK, its secret) or a bearer token: a node serves
/files to those, not to node users. PATH starts at the root the credentials see (the
key's storage root); a bearer token's user sees only what it holds a permission on.

\b
  nodecli files ls /projects
  nodecli files find /projects --name '*.mov' --min-size 1G --newer 7d
  nodecli files tree /projects --depth 2
""")
def files() -> None:
    pass


def _rows(entries: Iterable[Any]) -> Iterator[dict[str, Any]]:
    for entry in entries:
        yield entry.as_dict()


class _Skipped:
    """Folders a walk could not read (403/404: a token's user without the list level,
    a folder removed meanwhile): each warned about, the command then exits 1."""

    def __init__(self, app: App) -> None:
        self.app, self.count = app, 0

    def __call__(self, folder: Any, exc: Any) -> None:
        self.count += 1
        self.app.term.warn(f"{folder.path}: not read ({exc.message})")

    def finish(self) -> None:
        if self.count:
            from nodecli.errors import NodecliError

            raise NodecliError(f"{self.count} folder(s) could not be read; what they hold "
                               "is not listed above")


def _render(app: App, entries: Iterable[Any], fmt: str, empty: str,
            columns: list[Column] = LS_COLUMNS) -> None:
    # (jsonl and csv are streams: one line per entry as it comes)
    app.term.table(_rows(entries), ENTRY_CSV if fmt == "csv" else columns, fmt, empty=empty)


@files.command("ls", context_settings=CONTEXT)
@click.argument("path", default="/")
@access_options
@output_option()
@pass_app
def files_ls(app: App, path: str, output_format: str, **kwargs: Any) -> None:
    """What a folder holds (GET /files/{id}/files, every page); a file: itself.

    \b
      nodecli files ls /
      nodecli files ls /projects/alpha -o json
    """
    from nodecli.node.files import list_folder, resolve

    conn = pop_node_options(kwargs)
    app.budget.follow()  # each request within --deadline: a folder may hold millions
    with open_node_client(app, conn) as client:
        entry = resolve(client, path)
        if not entry.is_folder:
            _render(app, [entry], output_format, "nothing to list")
            return
        _render(app, list_folder(client, entry.id, parent_path=entry.path), output_format,
                f"{entry.path}: empty folder")


@files.command("find", context_settings=CONTEXT)
@click.argument("path", default="/")
@click.option("--name", "glob", metavar="GLOB",
              help="Names matching GLOB (* ? [abc], case-sensitive), as find -name.")
@click.option("--type", "kind", type=click.Choice(["f", "d"]),
              help="f: files only; d: folders only.")
@click.option("--min-size", metavar="SIZE",
              help="Files of at least SIZE bytes (10M, 1.5G: 1024-based units).")
@click.option("--newer", metavar="WHEN",
              help="Modified at or after WHEN: a duration ago (10m, 2h, 7d) or an ISO 8601 "
                   "time.")
@click.option("--depth", "max_depth", type=click.IntRange(0, 256), metavar="N",
              help="At most N levels below PATH (default: all).")
@click.option("--resume", "resume_name", metavar="NAME",
              help="Keep the scan's place under NAME (as files du --resume): after a Ctrl-C "
                   "or a crash the same command goes on; the matches are printed once, "
                   "when the scan is complete.")
@click.option("--restart", is_flag=True,
              help="With --resume: forget what NAME saved and scan again.")
@access_options
@output_option()
@pass_app
def files_find(app: App, path: str, glob: str | None, kind: str | None,
               min_size: str | None, newer: str | None, max_depth: int | None,
               resume_name: str | None, restart: bool, output_format: str,
               **kwargs: Any) -> None:
    """Entries below PATH that match every test given (a walk of every page of every
    folder, depth first).

    \b
      nodecli files find /projects --name '*.mov'
      nodecli files find / --type f --min-size 1G --newer 7d -o jsonl
      nodecli files find / --name '*.iso' --resume isos -o jsonl > isos.jsonl
    """
    import fnmatch

    from nodecli.node.files import parse_size, resolve, walk

    try:
        size = parse_size(min_size) if min_size is not None else None
    except UsageError as exc:
        raise UsageError(f"--min-size: {exc.message}") from None
    since = None
    if newer is not None:
        from nodecli.timeparse import TimeParseError, parse_since

        try:
            since = parse_since(newer)
        except TimeParseError as exc:
            raise UsageError(f"--newer: {exc}") from None
    if glob is not None and (not glob or len(glob) > 1024):
        raise UsageError("--name takes a glob of 1 to 1024 characters")

    def matches(entry: Any) -> bool:
        if kind is not None and entry.is_folder != (kind == "d"):
            return False
        if glob is not None and not fnmatch.fnmatchcase(entry.name, glob):
            return False
        if size is not None and (entry.is_folder or entry.size is None or entry.size < size):
            return False
        return since is None or (entry.mtime is not None and entry.mtime >= since)

    if restart and not resume_name:
        raise UsageError("--restart goes with --resume NAME")
    if resume_name:
        from nodecli import dryrun
        from nodecli.node import files_scan as fs

        state = fs.ScanState.named(app.paths.state_dir, resume_name)
        if not dryrun.active():
            filters = {"name": glob, "type": kind, "min_size": size, "newer": newer,
                       "depth": max_depth}
            _find_resumable(app, path, state, restart, filters, matches, max_depth,
                            output_format, kwargs)
            return
    skipped = _Skipped(app)
    conn = pop_node_options(kwargs)
    app.budget.follow()  # each request within --deadline: a walk may take hours
    with open_node_client(app, conn) as client:
        top = resolve(client, path)
        if not top.is_folder:
            found: Iterable[Any] = [top] if matches(top) else []
        else:
            found = (e for e, _ in walk(client, top, max_depth=max_depth, on_error=skipped)
                     if matches(e))
        _render(app, found, output_format, "nothing found", FIND_COLUMNS)
    skipped.finish()


def _find_resumable(app: App, path: str, state: Any, restart: bool,
                    filters: dict[str, Any], matches: Any, max_depth: int | None,
                    output_format: str, kwargs: dict[str, Any]) -> None:
    """files find --resume NAME: the scan of files du (nodecli/node/files_scan.py), its
    matches kept in the state's spool with each folder's commit and printed once, when
    the scan is complete (so a resumed find never prints a match twice nor misses one).
    ``newer`` is kept as typed: a state of ``--newer 7d`` is the same filter tomorrow,
    and its cut-off is the one of the run that reads each folder."""
    import dataclasses
    import json

    from nodecli.cli.files_du import (
        node_label,
        run_scan,
        save_every,
        save_seconds,
        say_scan_end,
        scan_status,
        unreadable,
    )
    from nodecli.errors import NodecliError
    from nodecli.node import files as node_files
    from nodecli.node import files_scan as fs

    def listing_of(client: Any) -> Any:
        def listing(file_id: str) -> Iterator[dict[str, Any]]:
            for e in node_files.list_folder(client, file_id):
                yield {"id": e.id, "name": e.name, "size": e.size, "mtime": e.mtime,
                       "type": "folder" if e.is_folder else e.type, "entry": e}
        return listing

    def find(entry: Any, entry_path: str, depth: int) -> bytes | None:
        found = dataclasses.replace(entry["entry"], path=entry_path)
        if not matches(found):
            return None
        return json.dumps(found.as_dict(), ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8", "replace") + b"\n"

    conn = pop_node_options(kwargs)
    app.budget.follow()
    with open_node_client(app, conn) as client:
        node_files.check_login(client)
        entry = node_files.resolve(client, path)
        if not entry.is_folder:
            raise UsageError(f"{entry.path} is a file: --resume scans a folder")
        root = fs.Root(entry.id, entry.path, True, entry.size or 0)
        state.lock()
        try:
            if restart:
                state.discard()
            scan = fs.Scan(listing_of(client), root, node=node_label(client), depth=0,
                           state=state, find=find, filters=filters, max_depth=max_depth,
                           progress=scan_status(app, root.path) if app.term.status.live else None,
                           save_every=save_seconds(), save_every_folders=save_every(),
                           unreadable=unreadable)
            result = run_scan(app, scan, root.path, state.name)
        finally:
            state.unlock()
    say_scan_end(app, result, state.name, gives="matches", missed="not read",
                 cause_only=True)
    assert result.ncdu is not None
    with result.ncdu as spool:
        # one match read at a time: -o jsonl and csv stream them, as find without
        # --resume does (a shape, json and a table need them all, as there)
        app.term.table(state.matches(spool), ENTRY_CSV if output_format == "csv" else
                       FIND_COLUMNS, output_format, empty="nothing found")
    if result.skipped_count:
        raise NodecliError(f"{result.skipped_count} folder(s) could not be read; what they "
                           "hold is not listed above")


@files.command("tree", context_settings=CONTEXT)
@click.argument("path", default="/")
@click.option("--depth", "max_depth", type=click.IntRange(0, 256), metavar="N",
              help="At most N levels below PATH (default: all).")
@access_options
@output_option(("table", "json", "jsonl", "csv"))
@pass_app
def files_tree(app: App, path: str, max_depth: int | None, output_format: str,
               **kwargs: Any) -> None:
    """The folders and files below PATH, drawn as a tree (json: one entry per line of
    the drawing, with its depth).

    \b
      nodecli files tree /projects --depth 2
    """
    from nodecli.node.files import resolve, walk, walk_marked

    skipped = _Skipped(app)
    conn = pop_node_options(kwargs)
    app.budget.follow()  # each request within --deadline: a walk may take hours
    with open_node_client(app, conn) as client:
        top = resolve(client, path)
        if not top.is_folder:
            raise UsageError(f"{top.path} is a {top.type}, not a folder: 'files tree' draws "
                             "a folder", hint=f"nodecli files ls {top.path}")
        if output_format in ("json", "jsonl", "csv"):
            entries = walk(client, top, max_depth=max_depth, on_error=skipped)
            rows = ({**e.as_dict(), "depth": d} for e, d in entries)
            if output_format == "jsonl":
                app.term.jsonl(rows)
            else:
                app.term.table(list(rows), [*ENTRY_CSV, Column("depth", "depth")],
                               output_format)
        else:
            _draw(app, top, walk_marked(client, top, max_depth=max_depth, on_error=skipped))
    skipped.finish()


def _draw(app: App, top: Any, marked: Iterable[tuple[Any, int, bool]]) -> None:
    """``tree``'s drawing: box-drawing lines on a UTF-8 stdout, ``tree --charset ascii``'s
    otherwise."""
    from nodecli.render import sanitize

    utf8 = (getattr(app.term.out, "encoding", None) or "").lower().replace("-", "") == "utf8"
    tee, elbow, pipe = ("├── ", "└── ", "│   ") if utf8 else ("|-- ", "`-- ", "|   ")
    app.term.data(sanitize(top.path))
    open_levels: list[bool] = []  # per depth above: does that folder have more below it
    for entry, depth, last in marked:
        del open_levels[depth - 1:]
        prefix = "".join(pipe if more else "    " for more in open_levels)
        suffix = "/" if entry.is_folder else ""
        app.term.data(prefix + (elbow if last else tee) + sanitize(entry.name) + suffix)
        open_levels.append(not last)
