"""``nodecli workspaces``: create a workspace (the service answers 202 with an operation,
which is watched and, when it stops on a conflict, resolved)."""

from __future__ import annotations

import sys
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import (
    output_option,
    pass_app,
)
from nodecli.cli.lazy import HelpGroup
from nodecli.cli.operations import finish_watch, op_command, render_op, watch, watch_options
from nodecli.cli.resolve import run_resolve
from nodecli.cli.service_session import open_service_client, pop_service_options, service_options
from nodecli.render import sanitize
from nodecli.render.operations import op_line
from nodecli.service.operations import stop_reason


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
              help="The whole POST body instead (the service does not document it); '-' reads "
                   "it from stdin.")
@click.option("--wait", is_flag=True,
              help="Watch the operation to its end (offers resolve on a conflict).")
@watch_options
@output_option(("table", "json"), shaping=False)  # (its --field is a body property)
@service_options
@pass_app
def ws_create(app: App, name: str | None, fields: tuple[str, ...], body: str | None,
              wait: bool, interval: float, timeout: float | None, output_format: str,
              **kwargs: Any) -> None:
    """Create a workspace. The service answers 202 and a Location naming the operation
    that prepares it; --wait follows that operation to its end.

    The service does not document the request body: {"name": NAME} is a guess; --field
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
        body = sys.stdin.read(1024 * 1024 + 1)
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
            render_op(app, created.operation or {}, output_format)
            app.term.info(f"follow it: {op_command('watch', ref)}")
            return
        result = watch(app, session.client, ref, interval, timeout, first=created.operation)
        op = result.operation
        if (op.get("status") == "stopped" and not result.timed_out and app.term.interactive
                and click.confirm(f"{op_line(op)}: {sanitize(stop_reason(op))}. Resolve it now?",
                                  default=True, err=True)):
            run_resolve(app, session, [op], None, interval, timeout, output_format)
            return
    render_op(app, op, output_format)
    finish_watch(app, result, ref)
