"""``nodecli access``: who may see what on a node (can-i, who-can, what-can), from the
model in :mod:`nodecli.node.access_model`, proved against the node with ``--verify``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.cli.common import CONTEXT, fleet_names, fleet_options, output_option, pass_app
from nodecli.cli.lazy import HelpGroup
from nodecli.cli.remote import access_options, open_node_client, pop_node_options
from nodecli.errors import UsageError
from nodecli.render import Column, sanitize

F = TypeVar("F", bound=Callable[..., Any])
LEVEL_CHOICE = click.Choice(["list", "read", "write", "delete", "mkdir", "rename", "preview"])
VERIFY_TTL = 300  # seconds a --verify token lives

WHO_COLUMNS = [Column("holder_type", "type"), Column("holder_id", "holder"),
               Column("levels", "levels"), Column("set_on", "set on"),
               Column("inherited", "inherited"),
               Column("permission_id", "permission", whole=True, drop=1)]
WHAT_COLUMNS = [Column("path", "path"), Column("type", "type", drop=2),
                Column("levels", "levels"), Column("lists", "lists"),
                Column("via", "via", free=True, drop=1)]
WHO_FIELDS = ("holder_type", "holder_id", "levels", "set_on", "inherited", "permission_id",
              "file_id")
WHAT_FIELDS = ("path", "type", "levels", "lists", "via")
ON_THE_WAY = "on the way to a permitted folder"


@click.group("access", cls=HelpGroup, context_settings=CONTEXT,
             help="""Who may see what on a node: answers, reasons, and proof.

Log in as the permission commands do (--access-key AK with its secret); PATH starts at
the key's storage root. The answers come from the key's storage path, the permissions
(a user's or one of its groups', inherited below the folder that holds them) and the
token's scope; --verify mints a short-lived token for the user and asks the node.

\b
  nodecli access can-i read /project/q3 --access-key ak1 --user-id alice --group-id eng
  nodecli access can-i list /project/q3 --access-key ak1 --user-id alice --explain
  nodecli access who-can /finance --access-key ak1 --level read -o csv
  nodecli access what-can --access-key ak1 --user-id alice --verify
  nodecli access can-i write /data/x --node-user bob
""")
def access() -> None:
    pass


def subject_options(f: F) -> F:
    options = [
        click.option("--user-id", metavar="UID", help="The token's user id."),
        click.option("--group-id", "group_ids", metavar="GID", multiple=True,
                     help="One of the token's group ids (repeatable; as the token lists "
                          "them: every group of the user)."),
        click.option("--scope-role", type=click.Choice(["user", "admin"]), default="user",
                     show_default=True, help="The token's role: node.AK:ROLE:all."),
        click.option("--scope", "raw_scope", metavar="SCOPE",
                     help="The token's whole scope instead (space-separated)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def rules_options(f: F) -> F:
    options = [
        click.option("--inherit-above-root/--no-inherit-above-root", default=True,
                     show_default=True, help="Permissions on folders above the key's "
                     "storage count (as the node reports them inherited)."),
        click.option("--admin-bypass/--no-admin-bypass", default=True, show_default=True,
                     help="A node.AK:admin:all token is not restricted by permissions."),
        click.option("--traverse/--no-traverse", default=True, show_default=True,
                     help="Folders on the way to a permitted file are visible."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def verify_options(f: F) -> F:
    f = click.option("--key-file-path", metavar="PEM",
                     help="--verify signs with this private key (default: the node "
                          "profile's --mint-key, else keys/AK/private.pem).")(f)
    return click.option("--verify", is_flag=True,
                        help="Mint a short-lived token for the user, ask the node, and "
                             "report every disagreement with the model (exit 1).")(f)


def _rules(kwargs: dict[str, Any]) -> Any:
    from nodecli.node.access_model import Rules

    # every command that calls this takes rules_options, which always give all three
    return Rules(inherit_above_root=kwargs.pop("inherit_above_root"),
                 admin_bypass=kwargs.pop("admin_bypass"),
                 traverse=kwargs.pop("traverse"))


def _subject(ak: str, user_id: str | None, group_ids: tuple[str, ...], role: str,
             raw_scope: str | None) -> Any:
    from nodecli.node.access_model import Subject, user_scope
    from nodecli.node.paths import check_id

    if not user_id:
        raise UsageError("--user-id UID is needed (the token's user)")
    check_id(user_id, "--user-id")
    for g in group_ids:
        check_id(g, "--group-id")
    scope = raw_scope if raw_scope is not None else user_scope(ak, role)
    return Subject(user_id, tuple(dict.fromkeys(group_ids)), scope)


def _perm_row(perm: Any, root: str, path: str) -> dict[str, Any]:
    return {"permission_id": perm.id, "holder_type": perm.holder_type,
            "holder_id": perm.holder_id, "levels": list(perm.levels),
            "file_id": perm.file_id, "set_on": perm.where(root),
            "inherited": perm.path != path}


def _check_verify(verify: bool, raw_scope: str | None, fleet: bool = False) -> None:
    if verify and raw_scope is not None:
        raise UsageError("--verify mints node.AK:ROLE:all tokens: use --scope-role, "
                         "not --scope")
    if verify and fleet:
        raise UsageError("--verify asks one node: give --node, not --nodes/--all-nodes")


# -- can-i --------------------------------------------------------------------------------


@access.command("can-i", context_settings=CONTEXT)
@click.argument("level", type=LEVEL_CHOICE, metavar="LEVEL")
@click.argument("path")
@subject_options
@click.option("--node-user", metavar="NAME",
              help="Answer for a local node user (its transfer user's restrictions or "
                   "docroot); PATH is then a node path.")
@click.option("--explain", is_flag=True, help="Show every rule considered, in order.")
@verify_options
@rules_options
@access_options
@output_option(("table", "json"))
@pass_app
def access_can_i(app: App, level: str, path: str, user_id: str | None,
                 group_ids: tuple[str, ...], scope_role: str, raw_scope: str | None,
                 node_user: str | None, explain: bool, verify: bool,
                 key_file_path: str | None, output_format: str, **kwargs: Any) -> None:
    """May a user use LEVEL at PATH? yes (exit 0) or no (exit 1), and why.

    LEVEL is one of list, read, write, delete, mkdir, rename, preview.

    \b
      nodecli access can-i read /project/q3 --access-key ak1 --user-id alice
      nodecli access can-i list /project --access-key ak1 --user-id bob --group-id eng --explain
      nodecli access can-i read /project/q3 --access-key ak1 --user-id alice --verify
      nodecli access can-i write /data/in/x --node-user bob
    """
    from nodecli.node.paths import split_path

    rules = _rules(kwargs)
    split_path(path)
    if node_user is not None:
        if user_id or group_ids or raw_scope or verify:
            raise UsageError("--node-user answers from the local config: not with "
                             "--user-id, --group-id, --scope or --verify")
        _render_decision(app, _node_user_decision(app, node_user, level, path), path,
                         explain, output_format, None)
        return
    _check_verify(verify, raw_scope)
    _subject("AK", user_id, group_ids, scope_role, raw_scope)  # checked before any request
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        from nodecli.node import access_survey as survey_mod

        survey, node_path = survey_mod.lineage(client, path)
        subject = _subject(survey.access_key, user_id, group_ids, scope_role, raw_scope)
        model = survey.model(rules)
        decision = model.decide(subject, level, node_path)
        report = None
        if verify:
            full = survey_mod.whole(client)
            report = _verify(app, client, conn, full, full.model(rules), subject,
                             scope_role, key_file_path, [node_path])
    _render_decision(app, decision, path, explain, output_format, report,
                     root=survey.root, ak=survey.access_key, subject=subject)


def _node_user_decision(app: App, name: str, level: str, path: str) -> Any:
    from nodecli.errors import NotFoundError
    from nodecli.node.access_model import node_user_decision
    from nodecli.users.restrictions import glob_regex

    cfg = app.store.load()
    user = cfg.users.get(name)
    if user is None:
        raise NotFoundError(f"node user {name!r} does not exist in this machine's config",
                            hint="'nodecli -l' lists the node users")
    xuser = cfg.transfer_users.get(user.transfer_user)
    docroot = getattr(xuser, "docroot", None) if xuser is not None else None
    restrictions = list(getattr(xuser, "restrictions", ()) or ()) if xuser else []
    return node_user_decision(level, path, docroot=docroot, restrictions=restrictions,
                              matches=lambda pat, url: glob_regex(pat).fullmatch(url)
                              is not None)


def _render_decision(app: App, decision: Any, path: str, explain: bool, output_format: str,
                     report: Any, *, root: str = "/", ak: str | None = None,
                     subject: Any = None) -> None:
    answer = "yes" if decision.allowed else "no"
    if output_format == "json":
        body: dict[str, Any] = {
            "answer": answer, "allowed": decision.allowed, "level": decision.level,
            "path": path, "node_path": decision.path, "access_key": ak,
            "user_id": subject.user_id if subject else None,
            "group_ids": list(subject.group_ids) if subject else [],
            "scope": subject.scope if subject else None,
            "reason": decision.reason, "summary": decision.summary,
            "because": [_perm_row(p, root, decision.path) for p in decision.because],
            "held": list(decision.held),
            "rules": [{"rule": s.rule, "verdict": s.verdict, "detail": s.detail}
                      for s in decision.steps]}
        if report is not None:
            body["verify"] = _report_json(report)
        app.term.json(body)
    else:
        app.term.data(answer)
        app.term.fields([("why", decision.summary)])
        if explain:
            for i, step in enumerate(decision.steps, 1):
                _line(app, f"  {i:>3}. {step.rule:<10} {step.verdict:<7} "
                           f"{sanitize(step.detail)}")
        if report is not None:
            _render_report(app, report)
    if report is not None and report[1]:
        raise click.exceptions.Exit(1)
    if not decision.allowed:
        raise click.exceptions.Exit(1)


# -- --verify ------------------------------------------------------------------------------


def _verify_key(app: App, conn: dict[str, Any], ak: str, key_file_path: str | None) -> Any:
    """The private key to mint with: --key-file-path, the node profile's mint key (for the
    same access key), else the access key's own pair (keys/AK/private.pem)."""

    from nodecli.fsutil import user_path
    from nodecli.tokens.keys import PRIVATE_NAME

    if key_file_path:
        return user_path(key_file_path)
    cfg = app.store.load()
    name = conn.get("node") or cfg.default_node  # (--node reads NODECLI_NODE itself)
    profile = cfg.nodes.get(name) if name else None
    if profile is not None and profile.mint is not None and profile.access_key == ak:
        return user_path(profile.mint.key)
    managed = app.paths.keys_dir / ak / PRIVATE_NAME
    if managed.exists():
        return managed
    raise UsageError(f"--verify signs a token for access key {ak}: no key to sign with "
                     f"({managed} does not exist)",
                     hint="give --key-file-path PEM (the private key whose public key is "
                          "registered with the access key), or a profile with --mint-key")


def _verify(app: App, client: Any, conn: dict[str, Any], survey: Any, model: Any,
            subject: Any, role: str, key_file_path: str | None,
            paths: list[str]) -> tuple[int, list[Any]]:
    from datetime import timedelta

    from nodecli.cli.remote import open_endpoint
    from nodecli.http.client import Auth
    from nodecli.node.access_survey import compare
    from nodecli.timeparse import utc_now
    from nodecli.tokens.keys import load_private_key
    from nodecli.tokens.wire import create_token

    key = load_private_key(_verify_key(app, conn, survey.access_key, key_file_path),
                           state_dir=app.paths.state_dir)
    # the token lives VERIFY_TTL on the node's clock (learnt from its Date while the
    # survey read it), as every token nodecli mints: on ours, a node ahead by more than
    # the TTL would refuse it as expired and --verify would report a false disagreement
    offset = client.clock_offset or 0.0
    token = create_token(key, survey.access_key, subject.user_id,
                         list(subject.group_ids) or None, role=role,
                         expires_at=utc_now() + timedelta(seconds=VERIFY_TTL + offset))
    auth = client.endpoint.auth
    endpoint = client.endpoint.with_auth(Auth(
        "bearer", token=token, access_key=survey.access_key,
        access_key_header=auth.access_key_header,
        note=f"a {VERIFY_TTL} s token minted for --verify (user {subject.user_id})"))
    with open_endpoint(app, endpoint) as as_user:
        return compare(model, survey, subject, as_user, paths)


def _report_json(report: tuple[int, list[Any]]) -> dict[str, Any]:
    checks, found = report
    return {"checks": checks, "agree": not found,
            "disagreements": [{"path": d.path, "check": d.check, "node": d.node,
                               "model": d.model} for d in found]}


def _render_report(app: App, report: tuple[int, list[Any]]) -> None:
    checks, found = report
    for d in found:
        app.term.error(f"disagreement at {sanitize(d.path)} ({d.check}): the node says "
                       f"{sanitize(d.node)}, the model {sanitize(d.model)}")
    if found:
        app.term.error(f"verify: {len(found)} disagreement(s) in {checks} checks",
                       "the model or the node is wrong: the rule flags (--no-traverse, "
                       "--no-inherit-above-root, --no-admin-bypass) say which choice "
                       "differs; else report it")
    else:
        app.term.info(f"verify: the node agrees with the model ({checks} checks)")


# -- who-can -------------------------------------------------------------------------------


@access.command("who-can", context_settings=CONTEXT)
@click.argument("path")
@click.option("--level", type=LEVEL_CHOICE, help="Only holders of this level (default: any).")
@rules_options
@fleet_options
@access_options
@output_option()
@pass_app
def access_who_can(app: App, path: str, level: str | None, output_format: str,
                   **kwargs: Any) -> None:
    """Every user and group with LEVEL at PATH, and the permission it comes from.

    Also listed: what permissions do not restrict (the access key itself, and tokens
    that administer it).

    \b
      nodecli access who-can /finance --access-key ak1 --level read
      nodecli access who-can /finance --access-key ak1 -o csv
      nodecli access who-can /finance --nodes 'edge-*' --access-key ak1 -o json
    """
    from nodecli.node.paths import split_path

    rules = _rules(kwargs)
    split_path(path)
    conn = pop_node_options(kwargs)
    names = fleet_names(app, conn, kwargs)

    def fetch(client: Any) -> list[dict[str, Any]]:
        from nodecli.node.access_survey import lineage

        survey, node_path = lineage(client, path)
        model = survey.model(rules)
        rows = []
        for h in model.who_can(node_path, level):
            rows.append(_perm_row(h.perm, survey.root, node_path))
        if rules.admin_bypass:
            rows.append(_bypass_row("scope", f"node.{survey.access_key}:admin:all"))
        rows.append(_bypass_row("access_key", survey.access_key))
        return rows

    if names is not None:
        from nodecli.cli import fleet  # only for many nodes (the start-up diet)

        rows, status = fleet.run(app, conn, names, fetch)
        _table(app, rows, WHO_COLUMNS, WHO_FIELDS, output_format, fleet=True)
        fleet.finish(status)
        return
    with open_node_client(app, conn) as client:
        rows = fetch(client)
    _table(app, rows, WHO_COLUMNS, WHO_FIELDS, output_format)


def _bypass_row(kind: str, holder: str) -> dict[str, Any]:
    return {"permission_id": "", "holder_type": kind, "holder_id": holder,
            "levels": ["all"], "file_id": "", "set_on": "(bypasses permissions)",
            "inherited": False}


def _table(app: App, rows: list[dict[str, Any]], columns: list[Column],
           fields: tuple[str, ...], output_format: str, fleet: bool = False) -> None:
    if output_format in ("json", "jsonl"):
        shown = rows
    else:
        shown = [{**r, "levels": ",".join(r["levels"])} for r in rows]
    cols = [Column(k, k) for k in fields] if output_format == "csv" else columns
    if fleet:
        from nodecli.cli import fleet as fleet_mod

        cols = fleet_mod.columns(cols)
    app.term.table(shown, cols, output_format, empty="nobody")


# -- what-can ------------------------------------------------------------------------------


@access.command("what-can", context_settings=CONTEXT)
@subject_options
@verify_options
@rules_options
@fleet_options
@access_options
@output_option(("tree", "table", "wide", "json", "jsonl", "csv"), default="tree")
@pass_app
def access_what_can(app: App, user_id: str | None, group_ids: tuple[str, ...],
                    scope_role: str, raw_scope: str | None, verify: bool,
                    key_file_path: str | None, output_format: str, **kwargs: Any) -> None:
    """The folders a user sees in the key's storage, and the levels it holds there.

    \b
      nodecli access what-can --access-key ak1 --user-id alice --group-id eng
      nodecli access what-can --access-key ak1 --user-id alice -o json
      nodecli access what-can --access-key ak1 --user-id alice --verify
    """

    rules = _rules(kwargs)
    conn = pop_node_options(kwargs)
    names = fleet_names(app, conn, kwargs)
    _check_verify(verify, raw_scope, fleet=names is not None)
    _subject("AK", user_id, group_ids, scope_role, raw_scope)  # checked before any request
    report: list[Any] = []

    def fetch(client: Any, check: bool = False) -> list[dict[str, Any]]:
        from nodecli.node.access_survey import whole

        survey = whole(client)
        model = survey.model(rules)
        subject = _subject(survey.access_key, user_id, group_ids, scope_role, raw_scope)
        rows = what_rows(model, survey, subject)
        if check:
            report.append(_verify(app, client, conn, survey, model, subject, scope_role,
                                  key_file_path, sorted(survey.entries)))
        return rows

    if names is not None:
        from nodecli.cli import fleet  # only for many nodes (the start-up diet)

        if output_format == "tree":
            output_format = "table"
        rows, status = fleet.run(app, conn, names, fetch)
        _table(app, rows, WHAT_COLUMNS, WHAT_FIELDS, output_format, fleet=True)
        fleet.finish(status)
        return
    with open_node_client(app, conn) as client:
        rows = fetch(client, verify)
    if output_format == "tree":
        _tree(app, rows)
    else:
        _table(app, rows, WHAT_COLUMNS, WHAT_FIELDS, output_format)
    if report:
        _render_report(app, report[0])
        if report[0][1]:
            raise click.exceptions.Exit(1)


def what_rows(model: Any, survey: Any, subject: Any) -> list[dict[str, Any]]:
    """The rows of what-can: the visible folders, from the storage root down."""
    from nodecli.node.access_model import relative

    folders = [p for p, e in survey.entries.items() if e.type == "folder"]
    rows = []
    for sight in model.what_can(subject, folders):
        src = sight.source
        via = (ON_THE_WAY if sight.traverse_only else
               f"permission {src.id}: {src.holder()} on {src.where(model.root)}"
               if src is not None else "the token's scope (bypasses permissions)")
        rows.append({"path": relative(model.root, sight.path), "type": "folder",
                     "levels": list(sight.levels),
                     "lists": "list" in sight.levels, "via": via})
    return rows


def _tree(app: App, rows: list[dict[str, Any]]) -> None:
    if not rows:
        app.term.info("nothing visible")
        return
    for row in rows:
        path = row["path"]
        depth = 0 if path == "/" else path.count("/")
        name = "/" if path == "/" else path.rsplit("/", 1)[-1]
        # a permission with no level shows the folder too: name it as the json's via does
        levels = ",".join(row["levels"]) or (
            "(on the way)" if row["via"] == ON_THE_WAY else f"(no level: {row['via']})")
        _line(app, f"{'  ' * depth}{sanitize(name)}  {sanitize(levels)}")


def _line(app: App, text: str) -> None:
    """One line of a tree or an explanation: cut with '…' to a terminal's width."""
    from nodecli.render.text import clip

    width = app.term.width
    app.term.data(clip(text, width) if width else text)
