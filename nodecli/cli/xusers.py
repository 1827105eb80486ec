"""``nodecli xuser``: transfer users (restrictions XOR docroot)."""

from __future__ import annotations

import click

from nodecli.cli.app import App
from nodecli.cli.common import confirm, output_option, pass_app
from nodecli.cli.lazy import HelpGroup, lazy_completer
from nodecli.cli.users import render_record, report
from nodecli.render import Column
from nodecli.users import manage as domain

XUSER_COLUMNS = (
    Column("name", "transfer user"),
    Column("restrictions", "restrictions"),
    Column("docroot", "docroot"),
    Column("node_users", "node users"),
)

complete_transfer_users = lazy_completer("complete_transfer_users")

FORMS_HELP = """\b
Restriction forms (prefix ! to reject; ? * and \\ escapes are glob syntax):
  file:////folder/*   file:////*          local, Unix-like
  file:///c%3A/folder/*   file:///c*      local, Windows drive
  s3://*  azu://*  azure-files://*  adl://*  swift://*  oss://*  gs://*  hdfs://*
  *  udp://*  tcp://*  udp://host*  udp://host:5000*   streams
Several at once: repeat --restriction, or one delimiter-prefixed list such as
'|file:////data/mnt1/*|s3://mys3/bucket/*'.
"""

restriction_option = click.option(
    "-r", "--restriction", "restrictions", multiple=True, metavar="R",
    help="Restriction (repeatable; '|a|b' list form accepted).",
)


@click.group(cls=HelpGroup,
             help=f"""Transfer users: system users on the node with restrictions OR a docroot.

A transfer user needs restrictions (for access keys and bearer tokens) or a docroot,
never both.

\b
Examples:
  nodecli xuser add aspera --restriction 'file:////data/*' --restriction 's3://*'
  nodecli xuser add legacy --docroot /srv/transfer
  nodecli xuser set aspera --add-restriction '!file:////data/private/*'
  nodecli xuser list -o json
  nodecli xuser delete aspera --force

{FORMS_HELP}""")
def xuser() -> None:
    pass


@xuser.command("add", epilog=FORMS_HELP)
@click.argument("name", shell_complete=complete_transfer_users)
@restriction_option
@click.option("--docroot", metavar="PATH", help="Document root (instead of restrictions).")
@pass_app
def add_cmd(app: App, name: str, restrictions: tuple[str, ...], docroot: str | None) -> None:
    """Add transfer user NAME with one or more restrictions, or a docroot.

    \b
    Examples:
      nodecli xuser add aspera --restriction 'file:////data/*'
      nodecli xuser add web --docroot /srv/www
    """
    report(app, domain.add_transfer_user(app.store, name, restrictions=restrictions,
                                         docroot=docroot))


@xuser.command("set", epilog=FORMS_HELP)
@click.argument("name", shell_complete=complete_transfer_users)
@restriction_option
@click.option("--add-restriction", "add_restrictions", multiple=True, metavar="R",
              help="Append a restriction (repeatable).")
@click.option("--remove-restriction", "remove_restrictions", multiple=True, metavar="R",
              help="Remove a restriction, written exactly as listed (repeatable).")
@click.option("--docroot", metavar="PATH", help="Switch to this docroot (drops restrictions).")
@pass_app
def set_cmd(app: App, name: str, restrictions: tuple[str, ...],
            add_restrictions: tuple[str, ...], remove_restrictions: tuple[str, ...],
            docroot: str | None) -> None:
    """Change transfer user NAME: --restriction replaces the list, --docroot switches.

    \b
    Examples:
      nodecli xuser set aspera --restriction 'file:////data2/*'
      nodecli xuser set aspera --remove-restriction 's3://*'
      nodecli xuser set aspera --docroot /srv/aspera
    """
    report(app, domain.set_transfer_user(
        app.store, name, restrictions=list(restrictions) if restrictions else None,
        add_restrictions=add_restrictions, remove_restrictions=remove_restrictions,
        docroot=docroot,
    ))


@xuser.command("delete")
@click.argument("name", shell_complete=complete_transfer_users)
@click.option("--force", is_flag=True,
              help="Also delete the node users that use this transfer user.")
@click.option("-y", "--yes", is_flag=True,
              help="Do not ask before --force deletes node users (needed without a "
                   "terminal).")
@pass_app
def delete_cmd(app: App, name: str, force: bool, yes: bool) -> None:
    """Delete transfer user NAME (refused while node users use it, unless --force,
    which asks on a terminal first).

    \b
    Examples:
      nodecli xuser delete legacy
      nodecli xuser delete aspera --force --yes
    """
    from nodecli.errors import Aborted

    domain.validate_name(name, "transfer user name")
    cfg = app.store.load()
    domain.get_transfer_user(cfg, name)
    users = domain.referencing_users(cfg, name)
    if force and users and not confirm(
            app, f"Delete transfer user {name!r} and its {len(users)} node user(s): "
                 f"{', '.join(users)}?", yes=yes):
        raise Aborted("aborted: nothing deleted")
    report(app, domain.delete_transfer_user(app.store, name, force=force))


@xuser.command("list")
@output_option()
@pass_app
def list_cmd(app: App, output_format: str) -> None:
    """List transfer users.

    JSON: an array of {"name", "restrictions", "docroot", "node_users"}.

    \b
    Examples:
      nodecli xuser list
    """
    app.term.table(domain.list_transfer_users(app.store), XUSER_COLUMNS, output_format,
                   empty="no transfer users: add one with 'nodecli xuser add NAME -r "
                         "RESTRICTION'")


@xuser.command("show")
@click.argument("name", shell_complete=complete_transfer_users)
@output_option()
@pass_app
def show_cmd(app: App, name: str, output_format: str) -> None:
    """Show one transfer user and the node users on it.

    JSON: {"name", "restrictions", "docroot", "node_users", "file_restriction"}
    (file_restriction: the '|a|b' user-data form a node stores).

    \b
    Examples:
      nodecli xuser show aspera
    """
    render_record(app, domain.show_transfer_user(app.store, name), output_format)
