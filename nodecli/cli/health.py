"""``nodecli node health``: the health checks of one node or of many (see
nodecli.node.health), as a table, json, a Nagios plugin line or Prometheus text."""

from __future__ import annotations

import os
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import pass_app
from nodecli.cli.remote import node_options, open_node_client, pop_node_options
from nodecli.errors import ExitCode, NodecliError, UsageError
from nodecli.render import Column, sanitize

HEALTH_FORMATS = ("table", "json", "nagios", "prometheus")
COLUMNS = [Column("node", "node", whole=True), Column("check", "check", whole=True),
           Column("state", "state", whole=True), Column("reason", "reason")]


@click.command("health", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--nodes", "pattern", metavar="GLOB", help="Every profile whose name matches.")
@click.option("--all-nodes", is_flag=True, help="Every node profile.")
@click.option("--warn", metavar="NAME=VALUE,...",
              help="Warning thresholds: cert=30d,skew=2s,fresh=1h,token=10m,failed=1.")
@click.option("--crit", metavar="NAME=VALUE,...",
              help="Critical thresholds: cert=7d,skew=5s,fresh=1d,token=1m,failed=10.")
@click.option("-o", "--output", "output_format", type=click.Choice(HEALTH_FORMATS),
              default="table", show_default=True,
              help="Output format: table, json, nagios, prometheus.")
@node_options
@pass_app
def health_cmd(app: App, pattern: str | None, all_nodes: bool, warn: str | None,
               crit: str | None, output_format: str, **kwargs: Any) -> None:
    """Check what breaks a node's event pipeline and tokens: reachable and logged in;
    TLS certificate days left; clock offset; version against the features nodecli
    uses; activity event logging (node and profile access key); a fresh event log; the
    registered verification key against the local key; failed transfers in the last
    hour; the profile token's expiry. Each check: ok, warning, critical or unknown.

    Exit: -o nagios 0/1/2/3 (the worst state); -o prometheus 0; otherwise 0 when all
    are ok, 1 when not.

    \b
    Examples:
      nodecli node health --node prod
      nodecli node health --all-nodes -o nagios --warn cert=21d
      nodecli node health --nodes 'edge-*' -o prometheus > /var/lib/node_exporter/nodes.prom
    """
    from nodecli.node.health import CODES, OK, Thresholds, worst

    limits = Thresholds()
    limits.update(warn, "warn")
    limits.update(crit, "crit")
    conn = pop_node_options(kwargs)
    cfg = app.store.load()
    if pattern or all_nodes:
        if conn.get("node") or conn.get("url"):
            raise UsageError("give --node/--url or --nodes/--all-nodes, not both")
        import fnmatch

        names = sorted(n for n in cfg.nodes if all_nodes or fnmatch.fnmatchcase(n, pattern or ""))
        if not names:
            raise UsageError("no node profile matches" if pattern else "no node profiles")
        targets = [(n, dict(conn, node=n)) for n in names]
    else:
        targets = [(conn.get("node") or conn.get("url") or cfg.default_node or "node", conn)]
    results = _run_all(app, targets, limits)
    state = worst([c for _, checks in results for c in checks])
    if output_format == "json":
        app.term.json([{"node": node, **c.as_dict()} for node, checks in results
                       for c in checks])
    elif output_format == "nagios":
        app.term.data(nagios_line(results, limits))
    elif output_format == "prometheus":
        app.term.data(prometheus_text(results), end="")
    else:
        app.term.table([{"node": node, **c.as_dict()} for node, checks in results
                        for c in checks], COLUMNS, "table")
    if output_format == "nagios":
        raise click.exceptions.Exit(CODES[state])
    if output_format != "prometheus" and state != OK:
        raise click.exceptions.Exit(ExitCode.ERROR)


def _run_all(app: App, targets: list[tuple[str, dict[str, Any]]], limits: Any) -> list[
        tuple[str, list[Any]]]:
    """Open every node's client here (a prompt stays on this thread), then check the
    nodes side by side (at most 8 at once); a node that cannot be opened is one check."""
    from concurrent.futures import ThreadPoolExecutor

    from nodecli.node.health import UNKNOWN, Check, run_checks

    prepared: list[tuple[str, Any, Any, Any]] = []
    for name, conn in targets:
        try:
            client = open_node_client(app, conn)
        except NodecliError as exc:
            prepared.append((name, None, exc, None))
            continue
        prepared.append((name, client, None, _local_key(app, client)))

    def one(item: tuple[str, Any, Any, Any]) -> tuple[str, list[Any]]:
        name, client, problem, local = item
        if client is None:
            return name, [Check("reachable", UNKNOWN, f"not checked: {problem.message}")]
        with client:
            return name, run_checks(client, access_key=client.endpoint.auth.access_key,
                                    local_key=local, thresholds=limits)

    with ThreadPoolExecutor(max_workers=min(8, len(prepared))) as pool:
        return list(pool.map(one, prepared))


def _local_key(app: App, client: Any) -> Any:
    """The public key this home signs the access key's tokens with, if any."""
    auth = client.endpoint.auth
    ak = auth.access_key
    source = auth.source
    try:
        if source is not None and hasattr(source, "key_path"):
            from nodecli.keys import load_private_key

            return load_private_key(source.key_path).public_key()
        if ak:
            path = os.path.join(app.paths.keys_dir, ak, "public.pem")
            if os.path.exists(path):
                from nodecli.keys import load_public_key

                return load_public_key(path)
    except NodecliError:
        return None
    return None


def nagios_line(results: list[tuple[str, list[Any]]], limits: Any) -> str:
    """The plugin's one line: ``NODECLI HEALTH WARNING - summary | perfdata``."""
    from nodecli.node.health import OK, worst

    checks = [c for _, cs in results for c in cs]
    state = worst(checks)
    bad = [f"{node} {c.name}: {c.reason}" for node, cs in results for c in cs if c.state != OK]
    summary = "; ".join(bad) if bad else \
        f"{len(checks)} checks ok on {len(results)} node(s)"
    perf = []
    labels = {"certificate": ("cert_days", "cert", 86400.0), "clock": ("clock_offset", "skew",
                                                                       1.0),
              "failed transfers": ("failed_transfers", "failed", 1.0),
              "token": ("token_seconds", "token", 1.0)}
    for node, cs in results:
        for c in cs:
            if c.name in labels and c.value is not None:
                label, key, scale = labels[c.name]
                unit = "s" if c.unit == "s" else ""
                perf.append(f"'{node}_{label}'={c.value:g}{unit};"
                            f"{limits.warn[key] / scale:g};{limits.crit[key] / scale:g}")
    line = f"NODECLI HEALTH {state.upper()} - {sanitize(summary)}"
    return line + (" | " + " ".join(sanitize(p) for p in perf) if perf else "")


def prometheus_text(results: list[tuple[str, list[Any]]]) -> str:
    """The checks as Prometheus text, made by prometheus-client."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    from nodecli.node.health import CODES

    registry = CollectorRegistry()
    state = Gauge("nodecli_health_state", "Check state: 0 ok, 1 warning, 2 critical, "
                  "3 unknown", ["node", "check"], registry=registry)
    values = {
        "certificate": Gauge("nodecli_certificate_days_left", "Days until the node's TLS "
                             "certificate expires", ["node"], registry=registry),
        "clock": Gauge("nodecli_clock_offset_seconds", "The node's clock minus this "
                       "machine's", ["node"], registry=registry),
        "failed transfers": Gauge("nodecli_failed_transfers_last_hour", "Transfers that "
                                  "failed in the last hour", ["node"], registry=registry),
        "token": Gauge("nodecli_token_seconds_left", "Seconds until the profile's bearer "
                       "token expires", ["node"], registry=registry),
    }
    for node, checks in results:
        for c in checks:
            state.labels(node=node, check=c.name).set(CODES[c.state])
            if c.name in values and c.value is not None:
                values[c.name].labels(node=node).set(c.value)
    return str(generate_latest(registry).decode("utf-8"))
