"""The classic administration flags on the root command (``-a``, ``-l``, ``-m``, ``-d``...).

``nodecli.cli.root`` checks the action combination and calls :func:`run_classic` with
the list of actions and the root's parameters (``opts``, keyed by parameter name).
Behaviour follows the node's classic administration tool:

    nodecli -au usr1 -x aspera          add (password prompted twice on a terminal)
    nodecli -au usr2 -p pass2 -x root   add with the password on argv (compatibility)
    nodecli -mu usr1 -p pass1.1         change the password
    nodecli -l                          list, in the classic table layout
    nodecli -du usr1                    delete
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.users import password_source, report
from nodecli.render import Column, sanitize
from nodecli.users import manage as domain
from nodecli.users import user_data

TOKEN_OPTS = ("access_key", "user_id", "group_ids", "expires_at", "key_file_dir",
              "key_file_path", "scope_role", "token_key_length")
USER_EDIT_OPTS = {"user", "password", "password_stdin", "xuser", "acl_set", "acl_add",
                  "acl_del", "acl_list", "output_format"}
# Which options make sense with which action (anything else is refused, not ignored).
ALLOWED = {
    "add": USER_EDIT_OPTS,
    "modify": USER_EDIT_OPTS,
    "delete": {"user"},
    "list_users": {"output_format"},
    "acl_list": {"user", "output_format"},
    "backup": {"backup"},
    "reload": {"reload"},
}
FLAG_NAMES = {
    "add": "-a", "modify": "-m", "delete": "-d", "list_users": "-l", "acl_list": "--acl-list",
    "backup": "-b", "reload": "--reload", "user": "-u", "password": "-p",
    "password_stdin": "--password-stdin", "xuser": "-x", "acl_set": "--acl-set",
    "acl_add": "--acl-add", "acl_del": "--acl-del", "output_format": "-o",
    "bearer_create": "--bearer-create",
}


def _flag(name: str) -> str:
    return FLAG_NAMES.get(name, "--" + name.replace("_", "-"))


def _check_options(actions: Sequence[str], opts: dict[str, Any]) -> None:
    allowed: set[str] = {"yes", *actions}
    for action in actions:
        allowed |= ALLOWED.get(action, set())
    used = [k for k, v in opts.items() if v not in (None, False)]
    extra = [k for k in used if k not in allowed]
    if extra:
        action_flags = "/".join(_flag(a) for a in actions)
        raise click.UsageError(f"{', '.join(_flag(k) for k in extra)} does not apply to "
                               f"{action_flags}")
    if opts.get("password") is not None and opts.get("password_stdin"):
        raise click.UsageError("give -p or --password-stdin, not both")


def _need_user(opts: dict[str, Any], action: str) -> str:
    name = opts.get("user")
    if not name:
        raise click.UsageError(f"{_flag(action)} needs -u NAME (the node user)")
    return name


def classic_table(rows: Sequence[dict[str, Any]]) -> str:
    """The classic ``-l`` layout (columns widen for long names)::

        List of Node API user(s):
        user          system/transfer       user acls
        ============= ===================== =====================
        node_ibmuser  root                  [admin,impersonation]
    """
    names = [sanitize(r["name"]) for r in rows]
    xusers = [sanitize(r["transfer_user"]) for r in rows]
    acls = [f"[{','.join(map(sanitize, r['acls']))}]" for r in rows]
    w1, w2, w3 = (max([13, *map(len, names)]), max([21, *map(len, xusers)]),
                  max([21, *map(len, acls)]))
    # (the last cell of a user's line ends in "]": nothing to strip)
    lines = ["List of Node API user(s):", f"{'user':<{w1}} {'system/transfer':<{w2}} user acls",
             f"{'=' * w1} {'=' * w2} {'=' * w3}",
             *(f"{n:<{w1}} {x:<{w2}} {a}" for n, x, a in zip(names, xusers, acls, strict=True))]
    return "\n".join(lines)


def _render_acls(app: App, rows: list[dict[str, Any]], fmt: str) -> None:
    rows = [{"name": r["name"], "acls": r["acls"]} for r in rows]
    if fmt == "table":
        for r in rows:
            app.term.data(f"{sanitize(r['name'])}: [{','.join(r['acls'])}]")
    else:
        app.term.table(rows, [Column("name", "user"), Column("acls", "acls")], fmt)


def _acl_changes(opts: dict[str, Any]) -> dict[str, Any]:
    acl_set = opts.get("acl_set")
    return {
        "acl_set": domain.parse_acls(acl_set) if acl_set is not None else None,
        "acl_add": domain.parse_acls(opts.get("acl_add")),
        "acl_del": domain.parse_acls(opts.get("acl_del")),
    }


def _password(app: App, opts: dict[str, Any], name: str) -> Any:
    return password_source(app, name, opts.get("password"), bool(opts.get("password_stdin")))


def run_classic(app: App, actions: Sequence[str], opts: dict[str, Any]) -> None:
    """Run the classic action(s) chosen on the root command."""
    if "bearer_create" in actions:
        from nodecli.cli.token_create import bearer_create_classic

        bearer_create_classic(app, opts)
        return
    _check_options(actions, opts)
    fmt = opts.get("output_format") or "table"
    if "add" in actions:
        name = _need_user(opts, "add")
        xuser = opts.get("xuser")
        if not xuser:
            raise click.UsageError("-a needs -x XUSER (the transfer user)")
        changes = _acl_changes(opts)
        acls = [*(changes["acl_set"] or []), *changes["acl_add"]]
        acls = [a for i, a in enumerate(acls) if a not in acls[:i] and a not in changes["acl_del"]]
        report(app, domain.add_user(app.store, name, transfer_user=xuser, acls=acls,
                                    password=_password(app, opts, name)))
    elif "modify" in actions:
        name = _need_user(opts, "modify")
        changes = _acl_changes(opts)
        other = opts.get("xuser") or any(opts.get(k) is not None for k in
                                         ("acl_set", "acl_add", "acl_del"))
        # -m alone (or with -p / --password-stdin) changes the password, as the classic
        # tool does; -m with only -x or ACL flags leaves the password alone.
        wants_password = (opts.get("password") is not None or opts.get("password_stdin")
                          or not other)
        report(app, domain.modify_user(
            app.store, name, transfer_user=opts.get("xuser"),
            password=_password(app, opts, name) if wants_password else None, **changes,
        ))
    elif "delete" in actions:
        report(app, domain.delete_user(app.store, _need_user(opts, "delete")))
    elif "list_users" in actions:
        rows = domain.list_users(app.store)
        if fmt == "table":
            app.term.data(classic_table(rows))
        else:
            app.term.table(rows, [Column("name", "user"),
                                  Column("transfer_user", "transfer_user"),
                                  Column("acls", "acls")], fmt)
    elif "backup" in actions:
        from pathlib import Path

        report(app, user_data.export_user_data(app.store,
                                                  Path(opts["backup"]).expanduser()))
    elif "reload" in actions:
        outcome = user_data.check_config(app.store)
        report(app, domain.Outcome("reload: " + outcome.message, outcome.warnings))

    if "acl_list" in actions:
        who = opts.get("user")
        if who:
            rows = [domain.show_user(app.store, who)]
        else:
            rows = domain.list_users(app.store)
        _render_acls(app, rows, fmt)
