"""Read commands over many nodes: ``--nodes GLOB`` / ``--all-nodes``. The nodes are
opened here (a prompt stays on this thread), asked side by side (at most 8 at once),
and their rows carry a ``node`` column (json: a ``node`` field). A node that fails is
one error line and hides nothing of the others; the exit status is the worst of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.errors import NodecliError, UsageError
from nodecli.render import Column

F = TypeVar("F", bound=Callable[..., Any])
MAX_PARALLEL = 8


def fleet_options(f: F) -> F:
    f = click.option("--all-nodes", "fleet_all", is_flag=True,
                     help="Every node profile (rows get a node column).")(f)
    return click.option("--nodes", "fleet_glob", metavar="GLOB",
                        help="Every node profile whose name matches (e.g. 'edge-*').")(f)


def targets(app: App, conn: dict[str, Any], kwargs: dict[str, Any]) -> list[str] | None:
    """The profile names of a fleet run (None: the usual one node)."""
    import fnmatch

    glob, every = kwargs.pop("fleet_glob", None), kwargs.pop("fleet_all", False)
    if glob is None and not every:
        return None
    if conn.get("node") or conn.get("url"):
        raise UsageError("give --node/--url or --nodes/--all-nodes, not both")
    names = sorted(n for n in app.store.load().nodes
                   if every or fnmatch.fnmatchcase(n, glob or ""))
    if not names:
        raise UsageError("no node profile matches" if glob else "no node profiles")
    return names


def run(app: App, conn: dict[str, Any], names: list[str],
        fetch: Callable[[Any], list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], int]:
    """``fetch(client)`` on every node; (rows with their node, the exit status)."""
    from concurrent.futures import ThreadPoolExecutor

    from nodecli.cli.remote import open_node_client

    opened: list[tuple[str, Any]] = []
    failures: list[tuple[str, NodecliError]] = []
    for name in names:
        try:
            opened.append((name, open_node_client(app, dict(conn, node=name))))
        except NodecliError as exc:
            failures.append((name, exc))

    def one(item: tuple[str, Any]) -> tuple[str, list[dict[str, Any]] | NodecliError]:
        name, client = item
        with client:
            try:
                return name, fetch(client)
            except NodecliError as exc:
                return name, exc

    rows: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL, len(opened)))) as pool:
        for name, result in pool.map(one, opened):
            if isinstance(result, NodecliError):
                failures.append((name, result))
            else:
                rows += [{"node": name, **row} for row in result]
    for name, problem in failures:
        app.term.error(f"{name}: {problem.message}", problem.hint)
    return rows, max((int(p.exit_code) for _, p in failures), default=0)


def columns(cols: list[Column]) -> list[Column]:
    return [Column("node", "node", whole=True), *cols]


def finish(status: int) -> None:
    if status:
        raise click.exceptions.Exit(status)
