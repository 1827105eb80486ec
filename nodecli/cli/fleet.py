"""Read commands over many nodes: ``--nodes GLOB`` / ``--all-nodes``. The nodes are
opened here (a prompt stays on this thread), asked side by side (at most 8 at once),
and their rows carry a ``node`` column (json: a ``node`` field). A node that fails is
one error line and hides nothing of the others; the exit status is the worst of them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.errors import NodecliError, UsageError
from nodecli.render import Column

F = TypeVar("F", bound=Callable[..., Any])


def fleet_options(f: F) -> F:
    f = click.option("--all-nodes", "fleet_all", is_flag=True,
                     help="Every node profile (rows get a node column).")(f)
    return click.option("--nodes", "fleet_glob", metavar="GLOB[,GLOB]",
                        help="Every node profile whose name matches (e.g. 'edge-*' or "
                             "'edge-*,core').")(f)


def select(profiles: Iterable[str], glob: str | None, every: bool) -> list[str]:
    """The profile names ``--nodes GLOB[,GLOB...]`` / ``--all-nodes`` name, sorted (shell
    globs: * ? [...], matched case-sensitively against the whole name; a profile name
    never holds a comma)."""
    import fnmatch

    globs = [g for g in (glob or "").split(",") if g]
    names = sorted(n for n in profiles
                   if every or any(fnmatch.fnmatchcase(n, g) for g in globs))
    if not names:
        raise UsageError("no node profile matches" if glob else "no node profiles")
    return names


def targets(app: App, conn: dict[str, Any], kwargs: dict[str, Any]) -> list[str] | None:
    """The profile names of a fleet run (None: the usual one node)."""
    glob, every = kwargs.pop("fleet_glob", None), kwargs.pop("fleet_all", False)
    if glob is None and not every:
        return None
    if conn.get("node") or conn.get("url"):
        raise UsageError("give --node/--url or --nodes/--all-nodes, not both")
    return select(app.store.load().nodes, glob, every)


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


def finish(status: int) -> None:
    if status:
        raise click.exceptions.Exit(status)
