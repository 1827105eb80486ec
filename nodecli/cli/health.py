"""``nodecli node health``: the health checks of one node or of many (see
nodecli.node.health), as a table, json, a Nagios plugin line or Prometheus text."""

from __future__ import annotations

from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import fleet_names, fleet_options, output_option, pass_app
from nodecli.cli.remote import (
    complete_node_profiles,
    node_options,
    open_node_client,
    pop_node_options,
)
from nodecli.errors import ExitCode, NodecliError, UsageError
from nodecli.render import Column, sanitize

HEALTH_FORMATS = ("table", "json", "nagios", "prometheus")
COLUMNS = [Column("node", "node", whole=True), Column("check", "check", whole=True),
           Column("state", "state", whole=True), Column("reason", "reason")]


_warn_opt = click.option("--warn", metavar="NAME=VALUE,...",
                         help="Warning thresholds: cert=30d,skew=2s,fresh=1h,token=10m,"
                              "failed=1.")
_crit_opt = click.option("--crit", metavar="NAME=VALUE,...",
                         help="Critical thresholds: cert=7d,skew=5s,fresh=1d,token=1m,"
                              "failed=10.")


@click.command("health", context_settings={"help_option_names": ["-h", "--help"]})
@_warn_opt
@_crit_opt
@click.option("-o", "--output", "output_format", type=click.Choice(HEALTH_FORMATS),
              default="table", show_default=True,
              help="Output format: table, json, nagios, prometheus.")
@fleet_options
@click.option("--node-timeout", type=click.FloatRange(0.5, 300), default=None, metavar="S",
              help="Seconds each node may take for all its checks, and each request of "
                   "them (a node later than that: reachable critical).")
@node_options
@pass_app
def health_cmd(app: App, warn: str | None, crit: str | None, output_format: str,
               node_timeout: float | None, **kwargs: Any) -> None:
    """Check what breaks a node's event pipeline and tokens: reachable and logged in;
    TLS certificate days left; clock offset; version against the features nodecli
    uses; activity event logging (node and profile access key); a fresh event log; the
    registered verification key against the local key; failed transfers in the last
    hour; the profile token's expiry. Each check: ok, warning, critical or unknown, or
    skipped (with the reason) when it cannot apply to this node or login.

    Exit: -o nagios 0/1/2/3 (the worst state: critical > warning > unknown > ok;
    skipped checks never count); -o prometheus 0; otherwise 0 when all are ok or
    skipped, 1 when not. Thresholds: the defaults, then the profile's (nodecli node
    thresholds NAME), then --warn/--crit.

    \b
    Examples:
      nodecli node health --node prod
      nodecli node health --all-nodes -o nagios --warn cert=21d
      nodecli node health --nodes 'edge-*' -o prometheus > /var/lib/node_exporter/nodes.prom
    """
    from nodecli.node.health import CODES, OK, worst

    conn = pop_node_options(kwargs)
    cfg = app.store.load()
    names = fleet_names(app, conn, kwargs)
    if names is not None:
        targets = [(n, dict(conn, node=n)) for n in names]
    else:
        targets = [(conn.get("node") or conn.get("url") or cfg.default_node or "node", conn)]
    limits = {name: thresholds_of(cfg.nodes.get(name), warn, crit) for name, _ in targets}
    results = _run_all(app, targets, limits, node_timeout)
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


def thresholds_of(profile: Any, warn: str | None = None, crit: str | None = None) -> Any:
    """The defaults, then the profile's thresholds, then the flags'."""
    from nodecli.node.health import Thresholds

    limits = Thresholds()
    if profile is not None:
        try:
            limits.update(profile.health_warn, "warn")
            limits.update(profile.health_crit, "crit")
        except UsageError as exc:
            raise UsageError(f"node profile {profile.name!r}: {exc.message}",
                             hint=f"set them again with 'nodecli node thresholds "
                                  f"{profile.name} --warn ... --crit ...'") from None
    limits.update(warn, "warn")
    limits.update(crit, "crit")
    return limits


def _run_all(app: App, targets: list[tuple[str, dict[str, Any]]],
             limits: dict[str, Any], node_timeout: float | None = None) -> list[
        tuple[str, list[Any]]]:
    """Open every node's client here (a prompt stays on this thread), then check the
    nodes side by side; a node that cannot be opened is one check, a node later than
    ``node_timeout`` is reachable critical."""
    from nodecli.node.fleet import TooLate, ask_each
    from nodecli.node.health import CRITICAL, UNKNOWN, Check, run_checks

    prepared: list[tuple[str, Any, Any, Any]] = []
    for name, conn in targets:
        try:
            client = open_node_client(app, conn)
            if node_timeout is not None:  # every request of the node within it, too
                client = client.derive(connect_timeout=node_timeout,
                                       read_timeout=node_timeout, deadline=node_timeout)
        except NodecliError as exc:
            prepared.append((name, None, exc, None))
            continue
        prepared.append((name, client, None, local_key_of(app, client)))

    def one(item: tuple[str, Any, Any, Any]) -> list[Any]:
        name, client, problem, local = item
        if client is None:
            return [Check("reachable", UNKNOWN, f"not checked: {problem.message}")]
        with client:
            return run_checks(client, access_key=client.endpoint.auth.access_key,
                              local_key=local, thresholds=limits[name])

    results = ask_each([(item[0], item) for item in prepared], one, within=node_timeout)
    return [(name, result if isinstance(result, list) else
             [Check("reachable", CRITICAL, result.message)] if isinstance(result, TooLate)
             else [Check("reachable", UNKNOWN, f"not checked: {result.message}")])
            for name, result in results]


def local_key_of(app: App, client: Any) -> Any:
    """The public key this home signs the access key's tokens with, if any."""
    auth = client.endpoint.auth
    ak = auth.access_key
    source = auth.source
    try:
        if source is not None and hasattr(source, "key_path"):
            from nodecli.tokens.keys import load_private_key

            return load_private_key(source.key_path).public_key()
        if ak:
            path = app.paths.keys_dir / ak / "public.pem"
            if path.exists():
                from nodecli.tokens.keys import load_public_key

                return load_public_key(path)
    except NodecliError:
        return None
    return None


def nagios_line(results: list[tuple[str, list[Any]]], limits: dict[str, Any]) -> str:
    """The plugin's one line: ``NODECLI HEALTH WARNING - summary | perfdata``."""
    from nodecli.node.health import OK, SKIPPED, worst

    checks = [c for _, cs in results for c in cs]
    state = worst(checks)
    bad = [f"{node} {c.name}: {c.reason}" for node, cs in results for c in cs
           if c.state not in (OK, SKIPPED)]
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
                warn, crit = limits[node].warn[key], limits[node].crit[key]
                perf.append(f"'{node}_{label}'={c.value:g}{unit};"
                            f"{warn / scale:g};{crit / scale:g}")
    line = f"NODECLI HEALTH {state.upper()} - {sanitize(summary)}"
    return line + (" | " + " ".join(sanitize(p) for p in perf) if perf else "")


class Families:
    """A prometheus-client custom collector of metric families already made."""

    def __init__(self, families: list[Any]) -> None:
        self.families = families

    def collect(self) -> list[Any]:
        return self.families


#: the value gauge of each check that has one: (name, help)
VALUE_GAUGES = {
    "certificate": ("nodecli_certificate_days_left", "Days until the node's TLS "
                    "certificate expires"),
    "clock": ("nodecli_clock_offset_seconds", "The node's clock minus this machine's"),
    "failed transfers": ("nodecli_failed_transfers_last_hour", "Transfers that failed in "
                         "the last hour"),
    "token": ("nodecli_token_seconds_left", "Seconds until the profile's bearer token "
              "expires"),
}


def health_families(results: list[tuple[str, list[Any]]]) -> list[Any]:
    """The checks as metric families: the one code path of ``node health -o prometheus``
    and of the exporter. A skipped check has no sample (it is no state of the node)."""
    from prometheus_client.core import GaugeMetricFamily

    from nodecli.node.health import CODES, SKIPPED

    state = GaugeMetricFamily("nodecli_health_state", "Check state: 0 ok, 1 warning, "
                              "2 critical, 3 unknown", labels=["node", "check"])
    values = {check: GaugeMetricFamily(name, text, labels=["node"])
              for check, (name, text) in VALUE_GAUGES.items()}
    for node, checks in results:
        for c in checks:
            if c.state == SKIPPED:
                continue
            state.add_metric([node, c.name], CODES[c.state])
            if c.name in values and c.value is not None:
                values[c.name].add_metric([node], c.value)
    return [state, *values.values()]


def prometheus_text(results: list[tuple[str, list[Any]]]) -> str:
    """The checks as Prometheus text, made by prometheus-client."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families(health_families(results)))
    return str(generate_latest(registry).decode("utf-8"))


@click.command("thresholds", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", shell_complete=complete_node_profiles)
@_warn_opt
@_crit_opt
@click.option("--reset", is_flag=True, help="Back to the defaults (then --warn/--crit).")
@output_option(("table", "json"))
@pass_app
def thresholds_cmd(app: App, name: str, warn: str | None, crit: str | None, reset: bool,
                   output_format: str) -> None:
    """Show or set a node profile's health thresholds (used by node health and the
    exporter; --warn/--crit of node health still win).

    \b
    Examples:
      nodecli node thresholds prod --warn cert=21d,fresh=2h --crit fresh=6h
      nodecli node thresholds prod
      nodecli node thresholds prod --reset
    """
    from nodecli.node.health import DEFAULTS
    from nodecli.profiles import unknown_profile
    from nodecli.profiles.node import set_health_thresholds

    if warn is not None or crit is not None or reset:
        thresholds_of(None, warn, crit)  # refused here: nothing is saved
        profile = set_health_thresholds(app.store, name, warn, crit, reset=reset)
        app.term.success(f"saved the health thresholds of node profile {name!r}")
    else:
        cfg = app.store.load()
        profile = cfg.nodes.get(name)
        if profile is None:
            raise unknown_profile("node", name, cfg.nodes)
    limits = thresholds_of(profile)
    rows = [{"name": key, "warn": limits.warn[key], "crit": limits.crit[key],
             "unit": "count" if key == "failed" else "seconds"} for key in DEFAULTS]
    if output_format == "json":
        app.term.json({"node": name, "warn": profile.health_warn,
                       "crit": profile.health_crit, "effective": rows})
        return
    from nodecli.timeparse import describe_delta

    def shown(key: str, value: float) -> str:
        return f"{value:g}" if key == "failed" else describe_delta(value)

    app.term.table([{"name": r["name"], "warn": shown(r["name"], r["warn"]),
                     "crit": shown(r["name"], r["crit"])} for r in rows],
                   [Column("name", "threshold", whole=True), Column("warn", "warning"),
                    Column("crit", "critical")], "table")
