"""``nodecli files du``: what takes the space under a node's folder (thin; the scan is
nodecli/node/files_scan.py), registered lazily in the ``files`` group of cli/files.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import CONTEXT, Count, output_option, pass_app
from nodecli.cli.lazy import lazy_completer
from nodecli.cli.remote import access_options, open_node_client, pop_node_options
from nodecli.errors import Interrupted, NodecliError, counted
from nodecli.render import Column

SAVE_EVERY_ENV = "NODECLI_TEST_SCAN_SAVE_EVERY"  # the tests' snapshot every N folders
ROW_FIELDS = ("path", "size", "files", "folders", "depth")
TOP_FIELDS = ("path", "size")
complete_scans = lazy_completer("complete_scans")


@click.command("du", context_settings=CONTEXT)
@click.argument("path")
@click.option("--depth", type=Count(0), default=1, show_default=True, metavar="N",
              help="Totals for each folder down to N levels below PATH (0: PATH alone).")
@click.option("--top", type=Count(0), default=0, metavar="N",
              help="The N largest files instead of the folders, largest first (equal "
                   "sizes by path).")
@click.option("--resume", "resume_name", metavar="NAME", shell_complete=complete_scans,
              help="Keep the scan's place under NAME: after a Ctrl-C or a crash the same "
                   "command goes on where it stopped; a finished scan shows its totals.")
@click.option("--restart", is_flag=True,
              help="With --resume: forget what NAME saved and scan again.")
@access_options
@output_option(("table", "json", "jsonl", "csv", "ncdu"))
@pass_app
def du(app: App, path: str, depth: int, top: int, resume_name: str | None, restart: bool,
       output_format: str, **kwargs: Any) -> None:
    """Total size, files and folders under PATH on a node, folder by folder, following
    every page of every listing.

    Memory stays flat whatever the tree holds (only the folders still to list are
    kept). With --resume NAME, a Ctrl-C or a crash loses at most the last few seconds:
    the same command goes on where it stopped and counts no folder twice. On a
    terminal, a status line says how far the scan is. -o ncdu writes ncdu's export
    format, to browse the tree offline with `ncdu -f FILE`. A folder below PATH that
    cannot be listed is named and the scan goes on; it then exits 1.

    \b
      nodecli files du /projects
      nodecli files du /projects --depth 2 -o csv
      nodecli files du / --top 20
      nodecli files du / --resume nightly -o json
      nodecli files du / -o ncdu > node.ncdu && ncdu -f node.ncdu
    """
    from nodecli import dryrun
    from nodecli.errors import UsageError
    from nodecli.node import files_scan as fs

    if restart and not resume_name:
        raise UsageError("--restart goes with --resume NAME")
    state = fs.ScanState.named(app.paths.state_dir, resume_name) if resume_name else None
    if state is not None and dryrun.active():
        state = None  # --dry-run writes nothing: the saved place is not used
    conn = pop_node_options(kwargs)
    app.budget.follow()  # each request within --deadline: a scan may take hours
    with open_node_client(app, conn) as client:
        from nodecli.node import files as node_files

        node_files.check_login(client)
        entry = node_files.resolve(client, path)
        root = fs.Root(entry.id, entry.path, entry.is_folder, entry.size or 0)
        if state is not None:
            state.lock()
        try:
            if state is not None and restart:
                state.discard()
            scan = fs.Scan(_lister(node_files, client), root, node=node_label(client),
                           depth=depth, top=top, ncdu=output_format == "ncdu", state=state,
                           progress=scan_status(app, root.path) if app.term.status.live else None,
                           save_every=save_seconds(), save_every_folders=save_every(),
                           unreadable=unreadable)
            result = run_scan(app, scan, root.path, resume_name)
        finally:
            if state is not None:
                state.unlock()
    say_scan_end(app, result, resume_name)
    _render(app, result, output_format, top)
    if result.skipped_count:  # as files find and tree do: the totals are short of them
        raise NodecliError(f"{result.skipped_count:,} folder(s) could not be scanned; what "
                           "they hold is not counted above")


def _lister(node_files: Any, client: Any) -> Any:
    """The scan's ``list_folder(file_id)``: every page of the folder, as entries."""

    def listing(file_id: str) -> Iterator[dict[str, Any]]:
        for e in node_files.list_folder(client, file_id):
            yield {"id": e.id, "name": e.name, "type": "folder" if e.is_folder else e.type,
                   "size": e.size, "mtime": e.mtime}

    return listing


def unreadable(exc: BaseException) -> bool:
    """A folder below PATH the node refuses to list (403) or no longer has (404): noted,
    and the scan goes on. A listing nodecli cannot read stops it (exit 6)."""
    from nodecli.node.files import ListingError

    return (isinstance(exc, NodecliError) and not isinstance(exc, ListingError)
            and getattr(exc, "status", None) in (403, 404))


def node_label(client: Any) -> str:
    """The node and the login a scan is of (no secret: a user or access key id)."""
    ep = client.endpoint
    who = ep.auth.username or ep.auth.access_key or ep.auth.kind
    return f"{who}@{ep.base_url}"


def save_every() -> int | None:
    value = os.environ.get(SAVE_EVERY_ENV)
    return int(value) if value and value.isdigit() and int(value) > 0 else None


def save_seconds() -> float:
    """Seconds between snapshots: the scan's own, or none under the tests' every N
    folders (a slow machine would otherwise save between, and a test that stops the
    scan at its Nth snapshot would race the clock)."""
    from nodecli.node.files_scan import SAVE_EVERY

    return SAVE_EVERY if save_every() is None else float("inf")


def scan_status(app: App, path: str) -> Any:
    from nodecli.render.numbers import human_bytes

    def show(p: Any) -> None:
        app.term.status.show(
            f"scanning {path}: {p.folders:,} folders, {p.files:,} files, "
            f"{human_bytes(p.size)} · {p.rate:,.0f} entries/s · {p.pending:,} to list")

    return show


def run_scan(app: App, scan: Any, path: str, resume_name: str | None) -> Any:
    try:
        return scan.run()
    except KeyboardInterrupt:
        app.term.status.clear()
        snap = scan.snap
        done = ("" if snap is None else
                f" after {counted(snap.listings, 'folder')}")
        raise Interrupted(
            f"scan of {path} interrupted{done}",
            hint=("the same command goes on where it stopped (--resume "
                  f"{resume_name})") if resume_name else
            "--resume NAME keeps a scan's place, to go on after an interruption") from None
    except NodecliError as exc:
        if resume_name and scan.snap is not None and scan.snap.listings:
            more = f"the scan's place is saved: the same command goes on (--resume {resume_name})"
            exc.hint = f"{exc.hint}; {more}" if exc.hint else more
        raise
    finally:
        app.term.status.clear()


def say_scan_end(app: App, result: Any, resume_name: str | None, *,
                 gives: str = "totals", missed: str = "not scanned",
                 cause_only: bool = False) -> None:
    """How a scan ended, on stderr (du's totals, find's matches): finished before,
    resumed, and the folders it could not read, the first NOTED_MAX of them by name
    (with ``cause_only``, a refused listing's cause alone, as files find says it
    without --resume)."""
    from nodecli.node.files_scan import NOT_LISTED
    from nodecli.render.numbers import human_bytes

    if result.was_finished:
        app.term.info(f"scan {resume_name} finished at {result.finished_at}: its {gives} "
                      "(--restart scans again)")
    elif result.resumed:
        app.term.info(f"scan {resume_name} resumed: {result.listings:,} more folders listed")
    for skip in result.skipped:
        reason = skip["reason"]
        if cause_only:
            reason = reason.removeprefix(NOT_LISTED)
        app.term.warn(f"{skip['path']}: {missed} ({reason})")
    if result.skipped_count > len(result.skipped):
        app.term.warn(f"and {result.skipped_count - len(result.skipped):,} more {missed}")
    app.term.debug(f"{result.path}: {human_bytes(result.size)} in {result.files:,} files, "
                   f"{result.folders:,} folders")


def _render(app: App, result: Any, fmt: str, top: int) -> None:
    if fmt == "ncdu":
        import shutil

        assert result.ncdu is not None
        out = app.term.out
        try:
            out.flush()
            binary = getattr(out, "buffer", None)
            if binary is not None:
                shutil.copyfileobj(result.ncdu, binary)
                binary.flush()
            else:
                out.write(result.ncdu.read().decode())
        finally:
            result.ncdu.close()
        return
    from nodecli.render.numbers import human_bytes

    rows = result.top if top else [{k: r[k] for k in ROW_FIELDS} for r in result.rows]
    keys = TOP_FIELDS if top else ROW_FIELDS
    if fmt in ("table", "wide"):
        shown = [{**r, "size": human_bytes(r["size"])} for r in rows]
        cols = [Column("path", "path"), Column("size", "size", justify="right", whole=True)]
        if not top:
            cols += [Column("files", "files", justify="right", whole=True),
                     Column("folders", "folders", justify="right", whole=True)]
        app.term.table(shown, cols, fmt, empty="no files")
        return
    app.term.table(rows, [Column(k, k) for k in keys], fmt)
