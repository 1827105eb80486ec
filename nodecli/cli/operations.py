"""Commands for the collaboration service: service profiles, operations, workspaces.

Thin layer: options are parsed here, one domain function (nodecli.service /
nodecli.profiles.service) does the work, and results are rendered here. Every string that
came from the service is sanitized before it reaches the terminal.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.cli.common import (
    InputFile,
    confirm,
    get_secret,
    output_option,
    pass_app,
    read_secret_stdin,
)
from nodecli.cli.complete import complete_services
from nodecli.cli.lazy import HelpGroup
from nodecli.errors import Interrupted, NodecliError, UsageError
from nodecli.render import Column, sanitize

F = TypeVar("F", bound=Callable[..., Any])

OP_COLUMNS = [
    Column("id", "id"),
    Column("type", "type"),
    Column("parent", "parent"),
    Column("status", "status"),
    Column("conflict_folder", "conflict folder"),
    Column("user_id", "user"),
    Column("created_at", "created"),
    Column("updated_at", "updated"),
]
SUMMARY_COLUMNS = [
    Column("operation", "operation"),
    Column("choice", "choice"),
    Column("final_status", "final status"),
    Column("detail", "detail"),
]

# -- connection options ------------------------------------------------------------------------

_SERVICE_OPTIONS = [
    click.option("--service", "service", metavar="NAME", envvar="NODECLI_SERVICE",
                 show_envvar=True, shell_complete=complete_services,
                 help="Saved service profile (default: the one set by 'service default')."),
    click.option("--url", "service_url", metavar="URL", envvar="NODECLI_SERVICE_URL",
                 show_envvar=True, help="Service base URL (overrides the profile)."),
    click.option("--token-file", metavar="PATH", type=InputFile("token file"),
                 help="File holding the OAuth access token (else NODECLI_TOKEN, the "
                      "profile, or a prompt)."),
    click.option("--cacert", "service_cacert", metavar="PEM", type=InputFile("CA file"),
                 envvar="NODECLI_SERVICE_CACERT", show_envvar=True,
                 help="CA certificate(s) to trust for the service's TLS certificate."),
    click.option("--insecure", "service_insecure", is_flag=True,
                 help="Do not verify TLS certificates (test services only; warns every run)."),
    click.option("--operations-path", metavar="PATH",
                 help="Path of the top-level operations list (interface.md does not show "
                      "it; default /operations)."),
    click.option("--service-path", "service_paths", multiple=True, metavar="NAME=PATH",
                 help="Override a path interface.md does not show: operations, workspaces, "
                      "workspace-memberships, group-memberships ({id} = the parent's id), "
                      "create-workspace. Repeatable."),
]
SERVICE_OPTION_NAMES = ("service", "service_url", "token_file", "service_cacert",
                        "service_insecure", "operations_path", "service_paths")


def service_options(f: F) -> F:
    for option in reversed(_SERVICE_OPTIONS):
        f = option(f)
    return f


def pop_service_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {name: kwargs.pop(name) for name in SERVICE_OPTION_NAMES if name in kwargs}


def path_overrides(operations_path: str | None, items: tuple[str, ...] | None) -> dict[str, str]:
    """--operations-path and --service-path NAME=PATH as one checked dict."""
    from nodecli.service.operations import check_path_template, parse_path_overrides

    out = parse_path_overrides(items or ())
    if operations_path is not None:
        out["operations"] = check_path_template("operations", operations_path)
    return out


class ServiceSession:
    """An open client on the service and where its operations live."""

    def __init__(self, client: Any, paths: Any) -> None:
        self.client = client
        self.paths = paths

    def __enter__(self) -> ServiceSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()


def open_service_client(app: App, conn: dict[str, Any], what: str = "this call") -> Any:
    """Resolve service + token (prompting on a terminal), run the pre-flight, open."""
    from nodecli.http import open_client
    from nodecli.profiles.service import ServiceFlags, resolve_service
    from nodecli.secrets import open_secrets
    from nodecli.service.preflight import preflight

    flags = ServiceFlags(service=conn.get("service"), url=conn.get("service_url"),
                         token_file=conn.get("token_file"), cacert=conn.get("service_cacert"),
                         insecure=bool(conn.get("service_insecure")),
                         paths=path_overrides(conn.get("operations_path"),
                                              conn.get("service_paths")))

    def lookup(key: str) -> str | None:
        return open_secrets(app.paths).get(key)

    target = resolve_service(app.store.load(), flags, os.environ, lookup)
    if target.token is None:
        token = get_secret(app, value=None, env=None, what="service access token",
                           prompt="Access token",
                           flags="--token-file, NODECLI_TOKEN or 'nodecli service add'")
        target = target.with_token(token)
    info = preflight(target.token or "", what=what)
    if info.opaque:
        app.term.debug(f"pre-flight skipped: the token from {target.token_source} is opaque "
                       f"(not the documented envelope: {sanitize(info.why_opaque)}); it is "
                       "sent as it is and the service decides")
    else:
        app.term.debug(f"service {target.endpoint.base_url}: token of user "
                       f"{sanitize(info.user_id)} from {target.token_source}, "
                       f"{info.seconds_left} s left")
    if target.endpoint.insecure:
        app.term.warn(f"TLS verification is OFF for {target.endpoint.base_url} (--insecure)")
    log = app.term.debug if app.verbosity >= 1 else None
    return ServiceSession(open_client(target.endpoint, log=log), target.paths)


def _elapsed(seconds: float) -> str:
    from nodecli.cli.app import elapsed_words

    return elapsed_words(seconds)


def _op_line(op: dict[str, Any]) -> str:
    return (f"operation {sanitize(op.get('id'))} ({sanitize(op.get('type'))}): "
            f"{sanitize(op.get('status'))}")


def _reason(op: dict[str, Any]) -> str:
    from nodecli.service.operations import stop_reason

    return sanitize(stop_reason(op))


def _render_op(app: App, op: dict[str, Any], fmt: str) -> None:
    """One operation: the object itself in json, a one-row table otherwise."""
    if fmt == "json":
        app.term.json(op)
    else:
        _render_ops(app, [op], fmt)


def _render_ops(app: App, ops: list[dict[str, Any]], fmt: str) -> None:
    from nodecli.service.operations import table_row

    if fmt == "json":
        app.term.json(ops)
    else:
        app.term.table([table_row(op) for op in ops], OP_COLUMNS, fmt)


# -- service profiles ----------------------------------------------------------------------------

@click.group(cls=HelpGroup,
             help="""Collaboration service profiles: URL and OAuth access token.

\b
  nodecli service add corp --url https://collab.example.com --token-file ~/.corp-token
  nodecli service add corp --url https://collab.example.com --token-stdin < token.txt
  nodecli service default corp
  nodecli service show corp
""")
def service() -> None:
    pass


@service.command("add")
@click.argument("name")
@click.option("--url", required=True, metavar="URL", help="Base URL of the service.")
@click.option("--token-file", metavar="PATH", type=InputFile("token file"),
              help="Read the token from this file at every call (kept up to date elsewhere).")
@click.option("--token-stdin", is_flag=True, help="Read the token from stdin and store it.")
@click.option("--cacert", metavar="PEM", type=InputFile("CA file"),
              help="CA certificate(s) to trust for the service.")
@click.option("--insecure", is_flag=True, help="Do not verify TLS (test services only).")
@click.option("--default", "make_default", is_flag=True, help="Also make it the default.")
@click.option("--force", is_flag=True, help="Replace an existing profile of that name.")
@click.option("--operations-path", metavar="PATH",
              help="Save the path of the top-level operations list (default /operations).")
@click.option("--service-path", "service_paths", multiple=True, metavar="NAME=PATH",
              help="Save a path override (see 'operations list --help'). Repeatable.")
@pass_app
def service_add(app: App, name: str, url: str, token_file: str | None, token_stdin: bool,
                cacert: str | None, insecure: bool, make_default: bool, force: bool,
                operations_path: str | None, service_paths: tuple[str, ...]) -> None:
    """Save a service profile. The token comes from --token-file (the path is saved and
    the file read at every call), --token-stdin, NODECLI_TOKEN or a hidden prompt (those
    are stored in the keyring or the 0600 secrets file, never in config.toml). A token
    that is not the documented envelope is kept as it is ("opaque: contents unknown").

    \b
      nodecli service add corp --url https://collab.example.com --token-file ~/.corp-token
      nodecli service add corp --url https://collab.example.com --token-stdin < token.txt
      nodecli service add v2 --url https://collab.example.com --token-file t \\
          --operations-path /api/v2/operations
    """
    from nodecli.profiles.service import add_profile, check_new_profile, check_url
    from nodecli.secrets import open_secrets

    check_new_profile(app.store.load(), name, force)
    check_url(url)
    paths = path_overrides(operations_path, service_paths)
    if token_file and token_stdin:
        raise UsageError("give the token with --token-file or --token-stdin, not both")
    token = None
    if token_stdin:
        token = read_secret_stdin("access token")
    elif not token_file:
        token = get_secret(app, value=None, env="NODECLI_TOKEN", what="service access token",
                           prompt="Access token", flags="--token-file, --token-stdin")
    secrets = open_secrets(app.paths)
    saved = add_profile(app.store, secrets, name, url, token=token, token_file=token_file,
                        cacert=cacert, insecure=insecure, make_default=make_default,
                        force=force, paths=paths)
    for warning in saved.warnings:
        app.term.warn(sanitize(warning))
    where = (f"stored ({getattr(secrets, 'name', 'secrets')})" if saved.stored
             else f"file {saved.profile.token_file}")
    app.term.success(f"saved service profile {name!r}: {url}, token of "
                     f"{saved.token_info.who()} ({where})")


@service.command("list")
@output_option(("table", "json"))
@pass_app
def service_list(app: App, output_format: str) -> None:
    """List saved service profiles.

    \b
    Examples:
      nodecli service list -o json
    """
    from nodecli.profiles.service import list_profiles
    from nodecli.secrets import open_secrets

    rows = list_profiles(app.store.load(), lambda: open_secrets(app.paths))
    app.term.table(rows, [Column("name", "name"), Column("url", "url"),
                          Column("token", "token"), Column("default", "default")],
                   output_format)


@service.command("show")
@click.argument("name", required=False, shell_complete=complete_services)
@output_option(("table", "json"))
@pass_app
def service_show(app: App, name: str | None, output_format: str) -> None:
    """Show a profile (the default one without NAME) and what its token says.

    \b
    Examples:
      nodecli service show prod
    """
    from nodecli.profiles.service import show_profile
    from nodecli.secrets import open_secrets

    data = show_profile(app.store.load(), open_secrets(app.paths), name)
    if output_format == "json":
        app.term.json(data)
        return
    from nodecli.service.preflight import OPAQUE

    info = data.pop("token_info", None) or {}
    if info.get("opaque"):
        info = {"contents": OPAQUE}
    paths = data.pop("paths", None) or {}
    if paths:
        data["paths"] = [f"{k}={v}" for k, v in sorted(paths.items())]
    for key, value in {**data, **{f"token {k}": v for k, v in info.items()}}.items():
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        app.term.data(f"{key:<20} {sanitize('' if value is None else value)}")


@service.command("remove")
@click.argument("name", shell_complete=complete_services)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_app
def service_remove(app: App, name: str, yes: bool) -> None:
    """Remove a profile and its stored token.

    \b
    Examples:
      nodecli service remove staging --yes
    """
    from nodecli.errors import NotFoundError
    from nodecli.profiles.service import remove_profile
    from nodecli.secrets import open_secrets

    if name not in app.store.load().services:
        raise NotFoundError(f"no service profile {name!r}")
    if not confirm(app, f"Remove service profile {name!r} and its stored token?", yes=yes):
        raise NodecliError("cancelled: nothing removed")
    remove_profile(app.store, open_secrets(app.paths), name)
    app.term.success(f"removed service profile {name!r}")


@service.command("default")
@click.argument("name", required=False, shell_complete=complete_services)
@click.option("--unset", is_flag=True, help="Forget the default profile.")
@pass_app
def service_default(app: App, name: str | None, unset: bool) -> None:
    """Show or set the profile used when no --service / --url is given.

    \b
    Examples:
      nodecli service default prod
      nodecli service default          # print it
    """
    from nodecli.profiles.service import set_default

    if name and unset:
        raise UsageError("give NAME or --unset, not both")
    if not name and not unset:
        current = app.store.load().default_service
        if current:
            app.term.data(current)
        else:
            app.term.info("no default service profile")
        return
    set_default(app.store, name)
    app.term.success(f"default service profile: {name}" if name else
                     "default service profile unset")


# -- operations ----------------------------------------------------------------------------------

@click.group(cls=HelpGroup,
             help="""Long-running operations of the collaboration service.

\b
  nodecli operations list --workspace 17 --status stopped
  nodecli operations watch 42 --workspace 17
  nodecli operations resolve --workspace 17
  nodecli operations resolve 42 --workspace 17 --use-existing --apply-to-all --yes
""")
def operations() -> None:
    pass


def _parent_options(f: F) -> F:
    f = click.option("--group-membership", metavar="ID",
                     help="Parent group membership (group_membership.create).")(f)
    f = click.option("--workspace-membership", metavar="ID",
                     help="Parent workspace membership (workspace_membership.create).")(f)
    return click.option("--workspace", metavar="ID", help="Parent workspace.")(f)


@operations.command("list")
@click.option("--workspace", metavar="ID", help="Operations of this workspace (nested list).")
@click.option("--workspace-membership", metavar="ID",
              help="Operations of this workspace membership (nested list).")
@click.option("--group", metavar="ID", help="Filter the top-level list by group_id.")
@click.option("--group-membership", metavar="ID",
              help="Filter the top-level list by group_membership_id.")
@click.option("--user", metavar="ID", help="Filter the top-level list by user_id.")
@click.option("--status", "statuses", multiple=True, metavar="S",
              help="Only aborted, running, stopped or success (repeat or comma-separate).")
@output_option(("table", "json"))
@service_options
@pass_app
def ops_list(app: App, output_format: str, statuses: tuple[str, ...], **kwargs: Any) -> None:
    """List operations: yours by default, or those of ONE workspace, workspace
    membership, group, group membership or user.

    \b
    Examples:
      nodecli operations list
      nodecli operations list --workspace 17 --status running
    """
    from nodecli.service.operations import check_statuses, list_operations, plan_list

    conn = pop_service_options(kwargs)
    plan_list(kwargs)  # refuse two filters before anything else (exit 2)
    check_statuses(statuses)
    with open_service_client(app, conn, "listing operations") as session:
        ops = list_operations(session.client, kwargs, statuses, paths=session.paths)
    _render_ops(app, ops, output_format)


@operations.command("show")
@click.argument("op_id", metavar="OP")
@_parent_options
@output_option(("table", "json"))
@service_options
@pass_app
def ops_show(app: App, op_id: str, output_format: str, **kwargs: Any) -> None:
    """Show one operation (give its parent: --workspace ID, or for memberships
    --workspace-membership / --group-membership).

    \b
    Examples:
      nodecli operations show OP --workspace 17
    """
    from nodecli.service.operations import get_operation, parent_ref

    conn = pop_service_options(kwargs)
    parent_ref(op_id, **kwargs)  # a usage error before anything is asked or sent
    with open_service_client(app, conn, "reading an operation") as session:
        ref = parent_ref(op_id, paths=session.paths, **kwargs)
        op = get_operation(session.client, ref)
    _render_op(app, op, output_format)
    if output_format != "json" and op.get("status") in ("stopped", "aborted"):
        app.term.info(f"reason: {_reason(op)}")
        if op.get("status") == "stopped":
            app.term.info(f"resolve it: {_resolve_command(ref)}")


def _watch(app: App, client: Any, ref: Any, interval: float, timeout: float | None,
           first: dict[str, Any] | None = None) -> Any:
    from nodecli.service.operations import watch_operation

    def on_update(op: dict[str, Any], elapsed: float) -> None:
        app.term.status.show(_op_line(op), plain=_op_line(op))

    try:
        return watch_operation(client, ref, interval=interval, timeout=timeout,
                               on_update=on_update, first=first)
    finally:
        app.term.status.clear()


def _finish_watch(app: App, result: Any, ref: Any) -> None:
    op = result.operation
    if result.timed_out:
        raise NodecliError(f"operation {sanitize(ref.op_id)} is still "
                           f"{sanitize(op.get('status'))} after {_elapsed(result.elapsed)} "
                           "(--timeout)")
    if op.get("status") == "success":
        app.term.success(f"operation {sanitize(ref.op_id)}: success "
                         f"({_elapsed(result.elapsed)})")
        return
    hint = f"resolve it: {_resolve_command(ref)}" if op.get("status") == "stopped" else None
    raise NodecliError(f"operation {sanitize(ref.op_id)} {sanitize(op.get('status'))}: "
                       f"{_reason(op)}", hint=hint)


def _resolve_command(ref: Any) -> str:
    """The exact command that resolves the stopped operation ``ref`` (pasteable)."""
    import shlex

    opt = {"workspaces": "--workspace", "workspace_memberships": "--workspace-membership",
           "group_memberships": "--group-membership"}[ref.collection]
    return (f"nodecli operations resolve {shlex.quote(sanitize(ref.op_id))} {opt} "
            f"{shlex.quote(sanitize(ref.parent_id))}")


_WATCH_OPTIONS = [
    click.option("--interval", type=click.FloatRange(min=0.01), default=2.0,
                 show_default=True, metavar="S", help="Seconds between polls."),
    click.option("--timeout", type=click.FloatRange(min=0.01), default=None, metavar="S",
                 help="Give up after S seconds (exit 1)."),
]


def watch_options(f: F) -> F:
    for option in reversed(_WATCH_OPTIONS):
        f = option(f)
    return f


@operations.command("watch")
@click.argument("op_id", metavar="OP")
@_parent_options
@watch_options
@output_option(("table", "json"))
@service_options
@pass_app
def ops_watch(app: App, op_id: str, interval: float, timeout: float | None,
              output_format: str, **kwargs: Any) -> None:
    """Poll an operation until success, stopped or aborted.

    Exit 0 on success; 1 on stopped/aborted (with data.type and data.folder_name)
    or when --timeout passes. The final operation is printed on stdout.

    \b
    Examples:
      nodecli operations watch OP --workspace 17 --timeout 300
    """
    from nodecli.service.operations import parent_ref

    conn = pop_service_options(kwargs)
    parent_ref(op_id, **kwargs)
    with open_service_client(app, conn, "watching an operation") as session:
        ref = parent_ref(op_id, paths=session.paths, **kwargs)
        result = _watch(app, session.client, ref, interval, timeout)
    _render_op(app, result.operation, output_format)
    _finish_watch(app, result, ref)


# -- resolve -------------------------------------------------------------------------------------

CONFLICT_PROMPT = "[u]se existing folder, [r]ename, re[t]ry, [s]kip"
ERROR_PROMPT = "re[t]ry, [s]kip"
APPLY_PROMPT = "Apply this choice to all remaining conflicts?"
MAX_ROUNDS = 5  # times one operation may be asked about on a terminal (conflict after conflict)
_KEYS = {"u": "use-existing", "use": "use-existing", "use existing": "use-existing",
         "use existing folder": "use-existing", "r": "rename", "rename": "rename",
         "t": "retry", "retry": "retry", "s": "skip", "skip": "skip"}


def _ask(question: str, allowed: tuple[str, ...]) -> str:
    while True:
        answer = click.prompt(question, err=True, prompt_suffix=": ", show_default=False)
        action = _KEYS.get(answer.strip().lower())
        if action in allowed:
            return action
        click.echo(f"  please answer {' / '.join(a[0] if a != 'retry' else 't' for a in allowed)}",
                   err=True)


def _ask_folder_name() -> str:
    from nodecli.service.operations import folder_name_problem

    while True:
        name = click.prompt("New folder name", err=True, prompt_suffix=": ", default="",
                            show_default=False)
        problem = folder_name_problem(name)
        if problem is None:
            return name
        click.echo(f"  {problem}; try again", err=True)


class Decider:
    """Answers ``decide(op, index, total)`` from flags or by asking on the terminal."""

    def __init__(self, app: App, flag_choice: Any | None,
                 apply_to_all: bool | None = None) -> None:
        self.app = app
        self.flag_choice = flag_choice
        # --apply-to-all / --no-apply-to-all on a terminal: that answer, not asked
        self.apply_to_all = apply_to_all
        self.all_choice: Any = None

    def __call__(self, op: dict[str, Any], index: int, total: int) -> Any:
        from nodecli.service.operations import conflict_folder
        from nodecli.service.resolve import Choice, is_conflict

        if self.flag_choice is not None:
            return self.flag_choice
        conflict = is_conflict(op)
        head = (f"[{index}/{total}] operation {sanitize(op.get('id'))} "
                f"({sanitize(op.get('type'))}) stopped: ")
        if conflict:
            head += f"folder conflict on {sanitize(repr(conflict_folder(op)))}"
        else:
            head += _reason(op)
        if conflict and self.all_choice is not None:
            if self.all_choice.action == "rename":
                # each folder needs its own new name: only that is asked
                click.echo(head + " -> rename (applied to all)", err=True)
                return Choice.prompted("rename", _ask_folder_name(), True)
            click.echo(head + f" -> {self.all_choice.label()} (applied to all)", err=True)
            return self.all_choice
        click.echo(head, err=True)
        if not conflict:
            return Choice.prompted(_ask(ERROR_PROMPT, ("retry", "skip")))
        action = _ask(CONFLICT_PROMPT, ("use-existing", "rename", "retry", "skip"))
        folder = _ask_folder_name() if action == "rename" else None
        apply_all = (self.apply_to_all if self.apply_to_all is not None
                     else click.confirm(APPLY_PROMPT, default=False, err=True))
        choice = Choice.prompted(action, folder, apply_all)
        if apply_all:
            self.all_choice = choice
        return choice


def run_resolve(app: App, session: Any, ops: list[dict[str, Any]], flag_choice: Any,
                interval: float, timeout: float | None, output_format: str,
                apply_to_all: bool | None = None) -> None:
    """Decide, send, watch and summarise (shared by resolve and workspaces create)."""
    from nodecli.service.resolve import resolve_operations

    sent: list[Any] = []

    def on_sent(out: Any) -> None:
        sent.append(out)
        name = f"operation {sanitize(out.ref.op_id)}"
        if out.error is not None:
            app.term.warn(f"{name}: {sanitize(out.detail)}")
        else:
            app.term.info(f"{name}: {sanitize(out.choice)} -> {sanitize(out.final_status)}")

    status = app.term.status

    def on_update(out: Any, elapsed: float) -> None:
        status.show(_op_line(out.operation), plain=_op_line(out.operation))

    try:
        # on a terminal, an operation that stops again (a second conflict) is asked
        # about again; with flags the service applies the choice itself (apply_to_all)
        rounds = MAX_ROUNDS if flag_choice is None else 1
        decider = Decider(app, flag_choice, apply_to_all)

        def decide(op: dict[str, Any], index: int, total: int) -> Any:
            status.clear()  # a live status line would swallow the prompt
            return decider(op, index, total)

        outcomes = resolve_operations(session.client, ops, decide,
                                      interval=interval, timeout=timeout, rounds=rounds,
                                      paths=session.paths, on_sent=on_sent,
                                      on_update=on_update)
    except (KeyboardInterrupt, click.Abort):
        status.clear()
        raise Interrupted(f"interrupted: {len(sent)} operation(s) had been sent a resolution; "
                          "the remaining ones were left untouched") from None
    finally:
        status.clear()
    rows = [o.row() for o in outcomes]
    app.term.table(rows, SUMMARY_COLUMNS, output_format)
    failed = [o for o in outcomes if not o.ok]
    if failed:
        again = [o for o in failed if o.resumed and o.final_status == "stopped"]
        raise NodecliError(
            f"{len(failed)} of {len(outcomes)} operation(s) did not end in success",
            hint="some stopped again after they resumed: run 'nodecli operations resolve' "
                 "again for them" if again else None)


@operations.command("resolve")
@click.argument("op_ids", metavar="[OP]...", nargs=-1)
@click.option("--workspace", metavar="ID", help="Stopped operations of this workspace.")
@click.option("--workspace-membership", metavar="ID",
              help="Stopped operations of this workspace membership.")
@click.option("--group-membership", metavar="ID",
              help="Stopped operations of this group membership.")
@click.option("--use-existing", is_flag=True, help="Send use_existing: true (keep the folder).")
@click.option("--folder-name", metavar="NAME",
              help="Send folder_name: NAME (create the folder under this new name).")
@click.option("--retry", is_flag=True, help="Send retry: true (restart the operation).")
@click.option("--apply-to-all/--no-apply-to-all", default=None,
              help="Send apply_to_all: true / false (neither: the property is left out; "
                   "on a terminal: asked).")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@watch_options
@output_option(("table", "json"))
@service_options
@pass_app
def ops_resolve(app: App, op_ids: tuple[str, ...], workspace: str | None,
                workspace_membership: str | None, group_membership: str | None,
                use_existing: bool, folder_name: str | None, retry: bool,
                apply_to_all: bool | None, yes: bool, interval: float,
                timeout: float | None, output_format: str, **kwargs: Any) -> None:
    """Resolve stopped operations (those named, or all stopped ones in scope).

    \b
    On a terminal, for each folder conflict:
      [u]se existing folder, [r]ename, re[t]ry, [s]kip
      Apply this choice to all remaining conflicts? [y/N]
    and for an internal_server_error: re[t]ry or [s]kip. Every answer but skip
    restarts the operation ("retry": true).
    Flags send exactly the properties given (they combine, except --use-existing with
    --folder-name); without a terminal a choice and --yes are enough.
    Then each resumed operation is watched to its end and a summary is printed.
    Exit 0 only if every operation ended in success.

    \b
      nodecli operations resolve --workspace 17            # asks, on a terminal
      nodecli operations resolve --workspace 17 --use-existing --retry --apply-to-all --yes
      nodecli operations resolve 42 --workspace 17 --folder-name 'Projects 2' --retry --yes
      nodecli operations resolve 7 --group-membership 9 --retry --no-apply-to-all --yes
    """
    from nodecli.service.operations import check_id
    from nodecli.service.resolve import Choice, find_stopped

    conn = pop_service_options(kwargs)
    parents = {"workspace": workspace, "workspace_membership": workspace_membership,
               "group_membership": group_membership}
    if sum(v is not None for v in parents.values()) > 1:
        raise UsageError("give at most one of --workspace, --workspace-membership and "
                         "--group-membership")
    for op_id in op_ids:
        check_id(op_id, "operation id")
    flag_choice = Choice.from_flags(use_existing=use_existing, folder_name=folder_name,
                                    retry=retry, apply_to_all=apply_to_all)
    if not app.term.interactive:
        missing = [n for n, ok in (("--use-existing, --folder-name NAME and/or --retry",
                                    flag_choice is not None), ("--yes", yes)) if not ok]
        if missing:
            raise UsageError("stdin is not a terminal, so nothing can be asked: give "
                             + " and ".join(missing))
    with open_service_client(app, conn, "resolving operations") as session:
        ops = find_stopped(session.client, op_ids=op_ids, paths=session.paths, **parents)
        stopped = [op for op in ops if op.get("status") == "stopped"]
        if not ops:
            app.term.info("no stopped operations in scope")
            return
        if flag_choice is not None and flag_choice.folder_name is not None and len(stopped) > 1:
            raise UsageError(f"--folder-name names one folder but {len(stopped)} operations "
                             "are stopped: name one OP")
        if flag_choice is not None and stopped and not confirm(
                app, f"Resolve {len(stopped)} stopped operation(s): {flag_choice.label()}?",
                yes=yes):
            raise NodecliError("cancelled: nothing sent")
        run_resolve(app, session, ops, flag_choice, interval, timeout, output_format,
                    apply_to_all)


@operations.command("update")
@click.argument("op_id", metavar="OP")
@_parent_options
@click.option("--body", metavar="JSON",
              help="The whole PUT body, a JSON object ('-' reads it from stdin).")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="One property (typed: true/false/null/numbers/JSON; else a string; "
                   "dots nest). Repeatable.")
@output_option(("table", "json"))
@service_options
@pass_app
def ops_update(app: App, op_id: str, body: str | None, assignments: tuple[str, ...],
               output_format: str, **kwargs: Any) -> None:
    """PUT exactly the object you give on an operation and print the answer.

    The escape hatch for properties interface.md does not show; 'resolve' covers the
    documented ones.

    \b
      nodecli operations update 42 --workspace 17 \\
          --body '{"use_existing": true, "retry": true, "apply_to_all": true}'
      nodecli operations update 42 --workspace 17 --set retry=true --set priority=2
    """
    from nodecli.service.operations import parent_ref, update_operation
    from nodecli.values import build_object, parse_body

    conn = pop_service_options(kwargs)
    parent_ref(op_id, **kwargs)
    if (body is None) == (not assignments):
        raise UsageError("give the PUT body with --body JSON or with --set KEY=VALUE "
                         "(one of the two)")
    if body == "-":
        body = click.get_text_stream("stdin").read(1024 * 1024 + 1)
    payload = parse_body(body) if body is not None else build_object(assignments)
    with open_service_client(app, conn, "changing an operation") as session:
        ref = parent_ref(op_id, paths=session.paths, **kwargs)
        answer = update_operation(session.client, ref, payload)
    if isinstance(answer, dict) and isinstance(answer.get("status"), str):
        _render_op(app, answer, output_format)
    elif answer is not None:
        app.term.json(answer)
    else:
        app.term.success(f"operation {sanitize(ref.op_id)}: the service accepted the PUT")


# -- workspaces ------------------------------------------------------------------------------------

@click.group(cls=HelpGroup,
             help="""Workspaces of the collaboration service.

\b
  nodecli workspaces create --name Projects --wait
""")
def workspaces() -> None:
    pass


@workspaces.command("create")
@click.option("--name", metavar="NAME",
              help="Name of the new workspace (sent as {\"name\": NAME}).")
@click.option("--field", "fields", multiple=True, metavar="KEY=VALUE",
              help="Another body property (typed like 'operations update --set'). Repeatable.")
@click.option("--body", metavar="JSON",
              help="The whole POST body instead (interface.md does not show it); '-' reads "
                   "it from stdin.")
@click.option("--wait", is_flag=True,
              help="Watch the operation to its end (offers resolve on a conflict).")
@watch_options
@output_option(("table", "json"))
@service_options
@pass_app
def ws_create(app: App, name: str | None, fields: tuple[str, ...], body: str | None,
              wait: bool, interval: float, timeout: float | None, output_format: str,
              **kwargs: Any) -> None:
    """Create a workspace. The service answers 202 and a Location naming the operation
    that prepares it; --wait follows that operation to its end.

    The request body is not shown by interface.md: {"name": NAME} is a guess; --field
    adds properties and --body replaces the whole body.

    \b
      nodecli workspaces create --name Projects --wait
      nodecli workspaces create --name Projects --field description='Q3 work'
      nodecli workspaces create --body '{"title": "Projects", "owner_id": "42"}'
    """
    from nodecli.service.workspaces import create_workspace, workspace_body
    from nodecli.values import build_object, parse_body

    conn = pop_service_options(kwargs)
    if body == "-":
        body = click.get_text_stream("stdin").read(1024 * 1024 + 1)
    payload = workspace_body(name, build_object(fields) if fields else None,
                             parse_body(body) if body is not None else None)
    label = sanitize(payload.get("name", "(from --body)"))
    with open_service_client(app, conn, "creating a workspace") as session:
        created = create_workspace(session.client, payload, session.paths)
        if created.ref is None:
            app.term.success(f"workspace {label!r} created")
            if created.resource is not None:
                app.term.json(created.resource)
            return
        ref = created.ref
        app.term.info(f"workspace {label!r} accepted: operation "
                      f"{sanitize(ref.op_id)} under /{ref.collection}/{sanitize(ref.parent_id)}")
        if not wait:
            _render_op(app, created.operation or {}, output_format)
            app.term.info(f"follow it: nodecli operations watch {sanitize(ref.op_id)} "
                          f"--workspace {sanitize(ref.parent_id)}")
            return
        result = _watch(app, session.client, ref, interval, timeout, first=created.operation)
        op = result.operation
        if (op.get("status") == "stopped" and not result.timed_out and app.term.interactive
                and click.confirm(f"{_op_line(op)}: {_reason(op)}. Resolve it now?",
                                  default=True, err=True)):
            run_resolve(app, session, [op], None, interval, timeout, output_format)
            return
    _render_op(app, op, output_format)
    _finish_watch(app, result, ref)
