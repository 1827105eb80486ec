"""``nodecli user``: node users (add, list, show, passwd, delete, acl)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.cli.common import confirm, get_secret, output_option, pass_app
from nodecli.cli.lazy import HelpGroup, lazy_completer
from nodecli.render import Column
from nodecli.users import manage as domain

F = TypeVar("F", bound=Callable[..., Any])

USER_COLUMNS = (
    Column("name", "user"),
    Column("transfer_user", "transfer user"),
    Column("acls", "acls"),
)

complete_transfer_users = lazy_completer("complete_transfer_users")
complete_users = lazy_completer("complete_users")


def password_options(f: F) -> F:
    """``-p/--password`` (compatibility; prefer the prompt) and ``--password-stdin``."""
    f = click.option("--password-stdin", is_flag=True,
                     help="Read the password from the first line of stdin.")(f)
    f = click.option("-p", "--password", "--pwd", "password", metavar="PASS",
                     help="Password (visible to other local users: prefer the prompt, "
                          "--password-stdin or NODECLI_PASSWORD).")(f)
    return f


def password_source(app: App, name: str, password: str | None,
                    password_stdin: bool) -> str | Callable[[], str]:
    """The password from -p, stdin or NODECLI_PASSWORD; else a deferred prompt (with
    confirmation) that the domain calls only once it checked the name."""
    def ask() -> str:
        return get_secret(app, value=password, from_stdin=password_stdin,
                          prompt=f"Password for {name}", confirm=True)

    if password is not None or password_stdin or os.environ.get("NODECLI_PASSWORD"):
        return ask()
    return ask


def report(app: App, outcome: domain.Outcome) -> None:
    """Print an Outcome: warnings and the message on stderr (quiet with -q)."""
    for warning in outcome.warnings:
        app.term.warn(warning)
    app.term.success(outcome.message)


def render_record(app: App, record: dict[str, Any], fmt: str) -> None:
    """One object: json as is, csv as one row, table as field/value lines (cut to a
    terminal; wide: whole)."""
    if fmt == "json":
        app.term.json(record)
    elif fmt == "csv":
        app.term.table([record], [Column(k, k) for k in record], "csv")
    else:
        app.term.fields([(k.replace("_", " "), v) for k, v in record.items()],
                        whole=fmt == "wide")


@click.group(cls=HelpGroup,
             help="""Node users: the accounts clients use with HTTP Basic on the Node API.

\b
Each node user is tied to a transfer user (see 'nodecli xuser') and carries ACLs.
\b
Examples:
  nodecli user add usr1 --xuser aspera --acl admin
  nodecli user list -o json
  printf '%s\\n' "$PASS" | nodecli user passwd usr1 --password-stdin
  nodecli user acl usr1 --add impersonation
  nodecli user delete usr1
""")
def user() -> None:
    pass


@user.command("add")
@click.argument("name", shell_complete=complete_users)
@click.option("-x", "--xuser", "transfer_user", required=True, metavar="XUSER",
              shell_complete=complete_transfer_users,
              help="Transfer user (recorded with a warning if not known yet).")
@click.option("--acl", "acls", metavar="LIST", multiple=True,
              help="ACLs, comma-separated: admin, impersonation, internal.")
@password_options
@pass_app
def add_cmd(app: App, name: str, transfer_user: str, acls: tuple[str, ...],
            password: str | None, password_stdin: bool) -> None:
    """Add node user NAME on transfer user XUSER (password prompted with confirmation).

    \b
    Examples:
      nodecli user add usr1 --xuser aspera
      nodecli user add bot --xuser aspera --acl admin,impersonation --password-stdin < pw.txt
    """
    report(app, domain.add_user(
        app.store, name, transfer_user=transfer_user, acls=domain.parse_acls(acls),
        password=password_source(app, name, password, password_stdin),
    ))


@user.command("list")
@output_option()
@pass_app
def list_cmd(app: App, output_format: str) -> None:
    """List node users with their transfer users and ACLs.

    JSON: an array of {"name", "transfer_user", "acls"} (never the password hash).

    \b
    Examples:
      nodecli user list
      nodecli user list -o csv
    """
    app.term.table(domain.list_users(app.store), USER_COLUMNS, output_format,
                   empty="no node users: add one with 'nodecli user add NAME --xuser XUSER'")


@user.command("show")
@click.argument("name", shell_complete=complete_users)
@output_option()
@pass_app
def show_cmd(app: App, name: str, output_format: str) -> None:
    """Show one node user, with its transfer user's restrictions or docroot.

    JSON: {"name", "transfer_user", "acls", "password_set", "restrictions", "docroot"}.

    \b
    Examples:
      nodecli user show alice -o json
    """
    render_record(app, domain.show_user(app.store, name), output_format)


@user.command("passwd")
@click.argument("name", shell_complete=complete_users)
@password_options
@pass_app
def passwd_cmd(app: App, name: str, password: str | None, password_stdin: bool) -> None:
    """Change the password of node user NAME (prompted with confirmation).

    \b
    Examples:
      nodecli user passwd alice          # prompts twice
      nodecli user passwd alice --password-stdin < pw.txt
    """
    report(app, domain.modify_user(
        app.store, name, password=password_source(app, name, password, password_stdin)))


@user.command("delete")
@click.argument("name", shell_complete=complete_users)
@click.option("-y", "--yes", is_flag=True, help="Do not ask (needed without a terminal).")
@pass_app
def delete_cmd(app: App, name: str, yes: bool) -> None:
    """Delete node user NAME, after asking on a terminal ('nodecli config restore'
    brings it back).

    \b
    Examples:
      nodecli user delete alice
      nodecli user delete alice --yes
    """
    from nodecli.errors import Aborted

    domain.validate_name(name, "node user name")
    domain.get_user(app.store.load(), name)  # a missing user: exit 5 before asking
    if not confirm(app, f"Delete node user {name!r}?", yes=yes):
        raise Aborted("aborted: nothing deleted")
    report(app, domain.delete_user(app.store, name))


@user.command("acl")
@click.argument("name", shell_complete=complete_users)
@click.option("--set", "acl_set", metavar="LIST", help="Replace the ACLs ('' clears them).")
@click.option("--add", "acl_add", metavar="LIST", help="Add ACLs (comma-separated).")
@click.option("--del", "acl_del", metavar="LIST",
              help="Remove ACLs (comma-separated; after --add, so an ACL in both is removed).")
@output_option()
@pass_app
def acl_cmd(app: App, name: str, acl_set: str | None, acl_add: str | None,
            acl_del: str | None, output_format: str) -> None:
    """Show or change the ACLs of node user NAME (admin, impersonation, internal).

    \b
    Examples:
      nodecli user acl usr1                   # show
      nodecli user acl usr1 --set admin,internal
      nodecli user acl usr1 --add impersonation --del internal
    """
    if acl_set is not None and (acl_add is not None or acl_del is not None):
        raise click.UsageError("--set replaces the list: do not combine it with --add/--del")
    if acl_set is None and acl_add is None and acl_del is None:
        record = domain.show_user(app.store, name)
        acls = record["acls"]
    else:
        outcome = domain.modify_user(
            app.store, name,
            acl_set=domain.parse_acls(acl_set) if acl_set is not None else None,
            acl_add=domain.parse_acls(acl_add), acl_del=domain.parse_acls(acl_del),
        )
        report(app, outcome)
        acls = outcome.data
    if output_format == "json":
        app.term.json({"name": name, "acls": acls})
    elif output_format == "csv":
        app.term.table([{"name": name, "acls": acls}],
                       [Column("name", "name"), Column("acls", "acls")], "csv")
    elif acl_set is None and acl_add is None and acl_del is None:
        app.term.data(",".join(acls))
