"""Read commands over many nodes: ``--nodes GLOB`` / ``--all-nodes``. The nodes are
opened here (a prompt stays on this thread), asked side by side (at most 8 at once),
and their rows carry a ``node`` column (json: a ``node`` field). A node that fails is
one error line and hides nothing of the others; the exit status is the worst of them.

The options themselves and the choice between one node and many are in
:mod:`nodecli.cli.common` (``fleet_options``, ``fleet_names``, ``select``): a one-node run never
imports this module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.errors import Interrupted, NodecliError, counted, interrupted_after
from nodecli.render import Column


def open_all(app: App, conn: dict[str, Any], names: list[str]) -> tuple[
        list[tuple[str, Any]], list[tuple[str, NodecliError]]]:
    """Every node's client, opened on this thread (a password prompt needs it); the
    nodes that could not be opened, with why."""
    from nodecli.cli.remote import open_node_client

    opened: list[tuple[str, Any]] = []
    failures: list[tuple[str, NodecliError]] = []
    for name in names:
        try:
            opened.append((name, open_node_client(app, dict(conn, node=name))))
        except NodecliError as exc:
            failures.append((name, exc))
    return opened, failures


def report(app: App, failures: list[tuple[str, NodecliError]]) -> None:
    for name, problem in failures:
        app.term.error(f"{name}: {problem.message}", problem.hint)


def worst(failures: list[tuple[str, NodecliError]]) -> int:
    return max((int(p.exit_code) for _, p in failures), default=0)


def run(app: App, conn: dict[str, Any], names: list[str],
        fetch: Callable[[Any], list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], int]:
    """``fetch(client)`` on every node; (rows with their node, the exit status)."""
    from nodecli.node.fleet import as_rows, ask_each

    opened, failures = open_all(app, conn, names)

    def one(client: Any) -> list[dict[str, Any]]:
        with client:
            return fetch(client)

    rows, failed = as_rows(ask_each(opened, one))
    failures += failed
    report(app, failures)
    return rows, worst(failures)


def columns(cols: list[Column]) -> list[Column]:
    return [Column("node", "node", whole=True), *cols]


def end_merged(app: App, runs: list[Any], failures: list[tuple[str, NodecliError]], *,
               resumable: bool, done: Callable[[int], str] | None) -> None:
    """The end of a merged tail or ship over many nodes (``runs``: node/events/merged's
    NodeRun): every node's failure said, an interruption raised with the count, else
    ``done(events)`` said, and the exit status the worst of the nodes'."""
    failures = failures + [(r.name, r.error) for r in runs if r.error is not None]
    report(app, failures)
    total = sum(r.emitted for r in runs)
    if any(r.interrupted for r in runs):
        raise Interrupted(interrupted_after(total, len(runs)),
                          hint="the same command resumes each node where it stopped"
                          if resumable else None)
    if done is not None:
        app.term.info(done(total))
    app.term.debug("; ".join(f"{r.name}: {counted(r.emitted, 'event')}" for r in runs))
    finish(worst(failures))


def finish(status: int) -> None:
    if status:
        raise click.exceptions.Exit(status)
