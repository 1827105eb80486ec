"""``nodecli permission``: who may see and do what on a node's files (thin)."""

from __future__ import annotations

from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import CONTEXT, confirm, output_option, pass_app
from nodecli.cli.lazy import HelpGroup
from nodecli.cli.remote import access_options, open_node_client, pop_node_options
from nodecli.errors import Aborted, UsageError
from nodecli.render import Column, sanitize

PERM_COLUMNS = [Column("id", "id", whole=True), Column("file_id", "file id", drop=2),
                Column("access_type", "type"), Column("access_id", "user/group"),
                Column("access_levels", "levels"), Column("inherited", "inherited", drop=1)]


@click.group("permission", cls=HelpGroup, context_settings=CONTEXT,
             help="""Permissions on a node's files.

A bearer-token user sees (and may use) only files on which its user id or one of its
group ids holds a permission. Log in with an access key
(--access-key AK, its secret) or a bearer token; paths start at the key's storage root.

\b
  nodecli permission grant /projects/alpha --user alice --levels list,read
  nodecli permission grant /projects --group eng --levels list
  nodecli permission list /projects/alpha
  nodecli permission modify /projects/alpha --user alice --levels list,read,write
  nodecli permission revoke /projects/alpha --user alice
  nodecli permission show 3
""")
def permission() -> None:
    pass


def _who(user: str | None, group: str | None) -> tuple[str, str]:
    if (user is None) == (group is None):
        raise UsageError("give --user ID or --group ID (one of the two)")
    return ("user", user) if user is not None else ("group", group or "")


def _rows(perms: list[dict[str, Any]], file_id: str) -> list[dict[str, Any]]:
    out = []
    for p in perms:
        levels = p.get("access_levels")
        out.append({**p, "access_levels": ",".join(str(x) for x in levels)
                    if isinstance(levels, list) else levels,
                    "inherited": "yes" if str(p.get("file_id")) != file_id else "no"})
    return out


@permission.command("list", context_settings=CONTEXT)
@click.argument("path", required=False)
@click.option("--file-id", metavar="ID", help="The file by id instead of PATH.")
@click.option("--inherited/--no-inherited", default=True, show_default=True,
              help="Include permissions set on the folders above.")
@access_options
@output_option()
@pass_app
def permission_list(app: App, path: str | None, file_id: str | None, inherited: bool,
                    output_format: str, **kwargs: Any) -> None:
    """Permissions on a file or folder (GET /permissions?file_id=ID).

    \b
      nodecli permission list /projects/alpha
      nodecli permission list --file-id 1042 --no-inherited -o json
    """
    from nodecli.node.permissions import check_target, file_id_for, list_permissions

    check_target(path, file_id)
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        fid = file_id_for(client, path, file_id)
        perms = list_permissions(client, fid, inherited)
    if output_format == "csv":  # the json field names and values (the convention)
        app.term.table(perms, [Column(k, k) for k in ("id", "file_id", "access_type",
                                                      "access_id", "access_levels")], "csv")
        return
    rows = perms if output_format in ("json", "jsonl") else _rows(perms, fid)
    app.term.table(rows, PERM_COLUMNS, output_format,
                   empty=f"no permissions on file {sanitize(fid)}")


@permission.command("grant", context_settings=CONTEXT)
@click.argument("path", required=False)
@click.option("--file-id", metavar="ID", help="The file by id instead of PATH.")
@click.option("--user", metavar="ID", help="The user id (as in bearer tokens' user_id).")
@click.option("--group", metavar="ID", help="The group id (as in bearer tokens' group_ids).")
@click.option("--levels", required=True, metavar="LIST",
              help="Comma-separated: list, read, write, delete, mkdir, rename, preview.")
@access_options
@output_option(("table", "json"))
@pass_app
def permission_grant(app: App, path: str | None, file_id: str | None, user: str | None,
                     group: str | None, levels: str, output_format: str,
                     **kwargs: Any) -> None:
    """Grant a user or group access levels on a file or folder (POST /permissions).

    A permission on a folder covers what is inside it.

    \b
      nodecli permission grant /projects/alpha --user alice --levels list,read
      nodecli permission grant --file-id 1042 --group eng --levels list,read,write
    """
    from nodecli.node.paths import check_id
    from nodecli.node.permissions import check_target, file_id_for, grant, parse_levels

    access_type, access_id = _who(user, group)
    check_id(access_id, f"--{access_type}")
    level_list = parse_levels(levels)
    check_target(path, file_id)
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        fid = file_id_for(client, path, file_id)
        perm = grant(client, fid, access_type, access_id, level_list)
    if output_format == "json":
        app.term.json(perm)
        return
    app.term.success(f"granted {','.join(level_list)} to {access_type} {sanitize(access_id)} "
                     f"on file {sanitize(fid)} (permission {sanitize(perm.get('id'))})")


@permission.command("modify", context_settings=CONTEXT)
@click.argument("target", metavar="PERMISSION_ID|PATH")
@click.option("--user", metavar="ID", help="With PATH: this user's permission.")
@click.option("--group", metavar="ID", help="With PATH: this group's permission.")
@click.option("--levels", required=True, metavar="LIST",
              help="The new levels, comma-separated: list, read, write, delete, mkdir, "
                   "rename, preview.")
@access_options
@output_option(("table", "json"))
@pass_app
def permission_modify(app: App, target: str, user: str | None, group: str | None,
                      levels: str, output_format: str, **kwargs: Any) -> None:
    """Change the levels of a permission in place (PUT /permissions/ID): by id, or by
    PATH and the user or group that holds it (the file's own permission, not one
    inherited from a folder above).

    \b
      nodecli permission modify /projects/alpha --user alice --levels list,read,write
      nodecli permission modify 3 --levels list
    """
    from nodecli.node.paths import check_id, split_path
    from nodecli.node.permissions import (
        file_id_for,
        modify,
        own_permission,
        parse_levels,
    )

    level_list = parse_levels(levels)
    by_path = target.startswith("/")
    if by_path:
        split_path(target)
        access_type, access_id = _who(user, group)
        check_id(access_id, f"--{access_type}")
    else:
        if user is not None or group is not None:
            raise UsageError("--user/--group go with a PATH, not a permission id")
        check_id(target, "permission id")
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        if by_path:
            fid = file_id_for(client, target, None)
            perm_id = str(own_permission(client, fid, access_type, access_id).get("id"))
        else:
            perm_id = target
        perm = modify(client, perm_id, level_list)
    if output_format == "json":
        app.term.json(perm)
        return
    app.term.success(f"permission {sanitize(perm_id)} now grants {','.join(level_list)}")


@permission.command("revoke", context_settings=CONTEXT)
@click.argument("target", metavar="PERMISSION_ID|PATH")
@click.option("--user", metavar="ID", help="With PATH: revoke this user's permission.")
@click.option("--group", metavar="ID", help="With PATH: revoke this group's permission.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@access_options
@pass_app
def permission_revoke(app: App, target: str, user: str | None, group: str | None, yes: bool,
                      **kwargs: Any) -> None:
    """Revoke a permission by id, or a user's/group's permission on PATH.

    \b
      nodecli permission revoke 3 --yes
      nodecli permission revoke /projects/alpha --user alice --yes
    """
    from nodecli.node.paths import check_id, split_path
    from nodecli.node.permissions import file_id_for, revoke, revoke_for

    by_path = target.startswith("/")
    if by_path:
        split_path(target)
        access_type, access_id = _who(user, group)
        check_id(access_id, f"--{access_type}")
        what = f"{access_type} {access_id}'s permission on {target}"
    else:
        if user is not None or group is not None:
            raise UsageError("--user/--group go with a PATH, not a permission id")
        check_id(target, "permission id")
        what = f"permission {target}"
    if not confirm(app, f"Revoke {sanitize(what)}?", yes=yes):
        raise Aborted("aborted: nothing revoked")
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        if by_path:
            fid = file_id_for(client, target, None)
            ids = revoke_for(client, fid, access_type, access_id)
        else:
            revoke(client, target)
            ids = [target]
    app.term.success(f"revoked permission {', '.join(sanitize(i) for i in ids)}")


@permission.command("show", context_settings=CONTEXT)
@click.argument("perm_id", metavar="ID")
@access_options
@output_option(("table", "json"))
@pass_app
def permission_show(app: App, perm_id: str, output_format: str, **kwargs: Any) -> None:
    """One permission (GET /permissions/ID).

    \b
      nodecli permission show 3
      nodecli permission show 3 -o json
    """
    from nodecli.node.paths import check_id
    from nodecli.node.permissions import get_permission

    check_id(perm_id, "permission id")
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        perm = get_permission(client, perm_id)
    if output_format == "json":
        app.term.json(perm)
        return
    app.term.fields([(k, perm.get(k)) for k in ("id", "file_id", "access_type", "access_id",
                                                "access_levels", "tags")])
