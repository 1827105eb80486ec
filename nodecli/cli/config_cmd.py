"""``nodecli config``: where files live, validation, backup restore, export/import."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nodecli.cli.app import App
from nodecli.cli.common import InputFile, UserPath, output_option, pass_app
from nodecli.cli.lazy import HelpGroup
from nodecli.cli.users import report
from nodecli.errors import Aborted, UsageError
from nodecli.render import Column
from nodecli.users import user_data as domain


@click.group(cls=HelpGroup,
             help="""The config file: paths, validation, backup, export and import.

\b
Examples:
  nodecli config path
  nodecli config check
  nodecli config export users.json        # 0600: holds password hashes
  nodecli config import users.json        # replaces all user data (old config kept as .bak)
  nodecli config restore                  # bring back config.toml.bak
""")
def config() -> None:
    pass


@config.command("path")
@click.argument("name", required=False,
                type=click.Choice(["config", "backup", "secrets", "keys", "state"]))
@output_option()
@pass_app
def path_cmd(app: App, name: str | None, output_format: str) -> None:
    """Print where nodecli keeps its files (config, backup, secrets, keys, state).

    \b
      nodecli config path                 # every location, as a table
      nodecli config path keys            # one location alone, for scripts
      ls "$(nodecli config path keys)/ak1"
    """
    paths = app.paths.as_dict()
    if name is not None:
        app.term.data(paths[name])
        return
    if output_format == "json":
        app.term.json(paths)
        return
    rows = [{"name": k, "path": v} for k, v in paths.items()]
    app.term.table(rows, [Column("name", "file"), Column("path", "path")], output_format)


@config.command("check")
@pass_app
def check_cmd(app: App) -> None:
    """Validate config.toml: exit 0 when valid, 3 naming file, line/field when not.

    \b
    Examples:
      nodecli config check
    """
    report(app, domain.check_config(app.store))


@config.command("restore")
@pass_app
def restore_cmd(app: App) -> None:
    """Bring back config.toml.bak (the current file becomes the new backup).

    \b
    Examples:
      nodecli config restore
    """
    report(app, domain.restore_backup(app.store))


@config.command("export")
@click.argument("file", type=UserPath(dir_okay=False, allow_dash=True))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@pass_app
def export_cmd(app: App, file: str, force: bool) -> None:
    """Write all user data (node users with password hashes, transfer users) to FILE.

    FILE is created 0600; '-' writes to stdout. The format is versioned JSON
    (see README: "Export format"); 'nodecli config import' reads it back.

    \b
    Examples:
      nodecli config export users-backup.json
      nodecli config export - | gzip > users.json.gz
    """
    if file == "-":
        outcome = domain.export_user_data(app.store, None)
        app.term.data(outcome.data.decode("utf-8"), end="")
        app.term.info(outcome.message)
        return
    report(app, domain.export_user_data(app.store, Path(file), overwrite=force))


@config.command("import")
@click.argument("file", type=InputFile("import file", allow_dash=True))
@click.option("--merge", is_flag=True,
              help="Keep existing users; imported ones of the same name win.")
@click.option("-y", "--yes", is_flag=True,
              help="Do not ask before replacing existing users (needed without a "
                   "terminal, and with '-').")
@pass_app
def import_cmd(app: App, file: str, merge: bool, yes: bool) -> None:
    """Load user data written by 'config export' or '-b' ('-' reads stdin).

    Without --merge all node users and transfer users are replaced (asked first on a
    terminal when there are any); node and service profiles are kept. The whole file
    is validated first: nothing changes if it is bad. The previous config is kept as
    config.toml.bak ('nodecli config restore').

    \b
    Examples:
      nodecli config import users-backup.json
      nodecli config import --merge users-backup.json
    """
    from nodecli.cli.common import confirm
    from nodecli.errors import UsageError

    if file == "-":
        raw, source = sys.stdin.buffer.read(domain.MAX_IMPORT_BYTES + 1), "<stdin>"
    else:
        from nodecli.fsutil import read_limited

        raw, source = read_limited(file, domain.MAX_IMPORT_BYTES, "import file"), file
    imported = domain.parse_export(raw, source)  # a bad file: refused before asking
    cfg = app.store.load()
    if not merge and (cfg.users or cfg.transfer_users):
        question = (f"Replace all {len(cfg.users)} node user(s) and "
                    f"{len(cfg.transfer_users)} transfer user(s) with the "
                    f"{len(imported.users)} and {len(imported.transfer_users)} of {source}?")
        if file == "-" and not yes:  # stdin holds the data: it cannot answer too
            raise UsageError("replacing the existing users with data from stdin needs "
                             "--yes (or --merge)")
        if not confirm(app, question, yes=yes, flag="--yes (or --merge)"):
            raise Aborted("aborted: nothing changed")
    report(app, domain.import_user_data(app.store, raw, source, merge=merge))


@config.command("output")
@click.argument("fmt", metavar="[FORMAT]", required=False,
                type=click.Choice(["table", "wide", "json", "jsonl", "csv", "yaml"]))
@click.option("--unset", is_flag=True, help="Back to each command's own default.")
@pass_app
def output_cmd(app: App, fmt: str | None, unset: bool) -> None:
    """Print or set the default -o of every command that has that format
    (NODECLI_OUTPUT and -o win).

    \b
    Examples:
      nodecli config output yaml
      nodecli config output --unset
    """
    if fmt and unset:
        raise UsageError("give FORMAT or --unset, not both")
    if fmt is None and not unset:
        current = app.store.load().default_output
        if current:
            app.term.data(current)
        else:
            app.term.info("no default output format: each command's own")
        return
    with app.store.edit() as cfg:
        cfg.default_output = fmt
    app.term.success(f"default output format: {fmt}" if fmt else
                     "no default output format: each command's own")
