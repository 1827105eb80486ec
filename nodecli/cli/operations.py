"""``nodecli operations``: list, show, watch, resolve and update the long-running
operations of the collaboration service.

Thin layer: options are parsed here, one domain function (:mod:`nodecli.service`) does
the work, and results are rendered here. The resolve dialogue is :mod:`nodecli.cli.resolve`.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import (
    confirm,
    output_option,
    pass_app,
)
from nodecli.cli.lazy import HelpGroup
from nodecli.cli.service_session import (
    F,
    open_service_client,
    pop_service_options,
    service_options,
)
from nodecli.errors import Aborted, NodecliError, UsageError
from nodecli.render import sanitize
from nodecli.render.operations import OP_COLUMNS, op_line
from nodecli.service.operations import stop_reason


def render_op(app: App, op: dict[str, Any], fmt: str) -> None:
    """One operation: the object itself in json, aligned field lines otherwise."""
    if fmt == "json":
        app.term.json(op)
        return
    from nodecli.render import iso_time
    from nodecli.service.operations import table_row

    row = table_row(op)
    for key in ("created_at", "updated_at"):
        if row[key]:
            row[key] = iso_time(row[key])
    app.term.fields([(c.heading, row.get(c.key)) for c in OP_COLUMNS])


def render_ops(app: App, ops: list[dict[str, Any]], fmt: str) -> None:
    from nodecli.service.operations import table_row

    if fmt == "json":
        app.term.json(ops)
    elif fmt == "jsonl":
        app.term.jsonl(ops)  # the service's objects, one per line, as in json
    elif fmt == "csv":  # the json field names and the service's own values
        from nodecli.render import Column

        keys = ("id", "type", "status", "workspace_id", "user_id", "created_at",
                "updated_at", "data")
        app.term.table(ops, [Column(k, k) for k in keys], fmt, empty="no operations")
    else:
        from nodecli.render import iso_time

        rows = [table_row(op) for op in ops]
        for row in rows:
            for key in ("created_at", "updated_at"):
                if row[key]:
                    row[key] = iso_time(row[key])
        app.term.table(rows, OP_COLUMNS, fmt, empty="no operations")


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
@output_option()
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
    render_ops(app, ops, output_format)


@operations.command("show")
@click.argument("op_id", metavar="OP")
@_parent_options
@output_option(("table", "json"))
@service_options
@pass_app
def ops_show(app: App, op_id: str, output_format: str, **kwargs: Any) -> None:
    """Show one operation. Its parent (--workspace ID, or for memberships
    --workspace-membership / --group-membership) is found in your operations list
    when not given.

    \b
    Examples:
      nodecli operations show OP
      nodecli operations show OP --workspace 17
    """
    from nodecli.service.operations import check_parent, get_operation, locate

    conn = pop_service_options(kwargs)
    check_parent(op_id, **kwargs)  # a usage error before anything is asked or sent
    with open_service_client(app, conn, "reading an operation") as session:
        ref = locate(session.client, op_id, paths=session.paths, **kwargs)
        op = get_operation(session.client, ref)
    render_op(app, op, output_format)
    if output_format != "json" and op.get("status") in ("stopped", "aborted"):
        app.term.info(f"reason: {sanitize(stop_reason(op))}")
        if op.get("status") == "stopped":
            app.term.info(f"resolve it: {resolve_command(ref)}")


def watch(app: App, client: Any, ref: Any, interval: float, timeout: float | None,
           first: dict[str, Any] | None = None) -> Any:
    from nodecli.service.operations import watch_operation

    def on_update(op: dict[str, Any], elapsed: float) -> None:
        app.term.status.show(op_line(op), plain=op_line(op))

    app.budget.follow()  # each request within --deadline, not the whole watch
    try:
        return watch_operation(client, ref, interval=interval, timeout=timeout,
                               on_update=on_update, first=first)
    finally:
        app.term.status.clear()


def finish_watch(app: App, result: Any, ref: Any) -> None:
    from nodecli.timeparse import describe_delta as elapsed

    op = result.operation
    if result.timed_out:
        raise NodecliError(f"operation {sanitize(ref.op_id)} is still "
                           f"{sanitize(op.get('status'))} after {elapsed(result.elapsed)} "
                           "(--timeout)")
    if op.get("status") == "success":
        app.term.success(f"operation {sanitize(ref.op_id)}: success "
                         f"({elapsed(result.elapsed)})")
        return
    hint = f"resolve it: {resolve_command(ref)}" if op.get("status") == "stopped" else None
    raise NodecliError(f"operation {sanitize(ref.op_id)} {sanitize(op.get('status'))}: "
                       f"{sanitize(stop_reason(op))}", hint=hint)


def op_command(verb: str, ref: Any) -> str:
    """The exact command (pasteable) that does ``verb`` (watch, resolve) to operation
    ``ref``, naming its parent with the option of the parent's kind."""
    import shlex

    opt = {"workspaces": "--workspace", "workspace_memberships": "--workspace-membership",
           "group_memberships": "--group-membership"}[ref.collection]
    return (f"nodecli operations {verb} {shlex.quote(sanitize(ref.op_id))} {opt} "
            f"{shlex.quote(sanitize(ref.parent_id))}")


def resolve_command(ref: Any) -> str:
    """The exact command that resolves the stopped operation ``ref`` (pasteable)."""
    return op_command("resolve", ref)


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
    from nodecli.service.operations import check_parent, locate

    conn = pop_service_options(kwargs)
    check_parent(op_id, **kwargs)
    with open_service_client(app, conn, "watching an operation") as session:
        ref = locate(session.client, op_id, paths=session.paths, **kwargs)
        result = watch(app, session.client, ref, interval, timeout)
    render_op(app, result.operation, output_format)
    finish_watch(app, result, ref)


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
    from nodecli.http.checks import check_id
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
            raise Aborted("aborted: nothing sent")
        from nodecli.cli.resolve import run_resolve

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

    The escape hatch for properties the service does not document; 'resolve' covers
    the documented ones.

    \b
      nodecli operations update 42 --workspace 17 \\
          --body '{"use_existing": true, "retry": true, "apply_to_all": true}'
      nodecli operations update 42 --workspace 17 --set retry=true --set priority=2
    """
    from nodecli.service.operations import check_parent, locate, update_operation
    from nodecli.values import build_object, parse_body

    conn = pop_service_options(kwargs)
    check_parent(op_id, **kwargs)
    if (body is None) == (not assignments):
        raise UsageError("give the PUT body with --body JSON or with --set KEY=VALUE "
                         "(one of the two)")
    if body == "-":
        body = sys.stdin.read(1024 * 1024 + 1)
    payload = parse_body(body) if body is not None else build_object(assignments)
    with open_service_client(app, conn, "changing an operation") as session:
        ref = locate(session.client, op_id, paths=session.paths, **kwargs)
        answer = update_operation(session.client, ref, payload)
    if isinstance(answer, dict) and isinstance(answer.get("status"), str):
        render_op(app, answer, output_format)
    elif answer is not None:
        app.term.json(answer)
    else:
        app.term.success(f"operation {sanitize(ref.op_id)}: the service accepted the PUT")
