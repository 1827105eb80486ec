"""``nodecli exporter``: a Prometheus exporter (``/metrics``) over node profiles, made
with prometheus-client: the health checks as gauges, ``up``, counters of events by type
(the events since the last scrape, read at each scrape), and the active transfers and
their aggregate rate. Scrapes never overlap (a lock); every node has its own time limit,
so one slow node cannot stall the page: it shows ``up 0``."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import pass_app
from nodecli.cli.fleet import fleet_options, select
from nodecli.errors import NodecliError, UsageError

MAX_EVENT_PAGES = 10  # per node and scrape: a node with a huge backlog is read over time


class NodeCollector:
    """One scrape: every node checked side by side, each within ``timeout`` seconds."""

    def __init__(self, clients: dict[str, Any], timeout: float,
                 thresholds: dict[str, Any] | None = None) -> None:
        self.clients, self.names, self.timeout = clients, sorted(clients), timeout
        self.thresholds = thresholds or {}
        names = self.names
        self.lock = threading.Lock()
        self.events: dict[str, Counter[str]] = {n: Counter() for n in names}
        self.tokens: dict[str, str | None] = {n: None for n in names}

    def _node(self, name: str) -> dict[str, Any]:
        from nodecli.node.fleet import count_event_types
        from nodecli.node.health import Thresholds, run_checks
        from nodecli.node.transfers import list_transfers

        client = self.clients[name]
        checks = run_checks(client, access_key=client.endpoint.auth.access_key,
                            local_key=None, thresholds=self.thresholds.get(name) or Thresholds())
        active = list_transfers(client, active=True)
        counts, self.tokens[name] = count_event_types(client, self.tokens[name],
                                                      max_pages=MAX_EVENT_PAGES)
        self.events[name].update(counts)
        return {"checks": checks, "active": active}

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        from nodecli.node.fleet import ask_each
        from nodecli.node.health import CODES

        with self.lock:  # scrapes never overlap
            # a hung node is left behind, up 0: the page still comes
            results: dict[str, Any] = {
                name: (result.message if isinstance(result, NodecliError) else result)
                for name, result in ask_each([(n, n) for n in self.names], self._node,
                                             within=self.timeout)}
            up = GaugeMetricFamily("nodecli_up", "1 when the node answered in time",
                                   labels=["node"])
            state = GaugeMetricFamily("nodecli_health_state", "Check state: 0 ok, 1 warning, "
                                      "2 critical, 3 unknown", labels=["node", "check"])
            active = GaugeMetricFamily("nodecli_active_transfers", "Running transfers",
                                       labels=["node"])
            rate = GaugeMetricFamily("nodecli_transfer_rate_kbps", "Aggregate current rate "
                                     "of the running transfers", labels=["node"])
            events = CounterMetricFamily("nodecli_events", "Events by type since the "
                                         "exporter started", labels=["node", "type"])
            for name in self.names:
                result = results[name]
                up.add_metric([name], 0 if isinstance(result, str) else 1)
                if isinstance(result, str):
                    continue
                for c in result["checks"]:
                    state.add_metric([name, c.name], CODES[c.state])
                running = result["active"]
                active.add_metric([name], len(running))
                rate.add_metric([name], sum(t.get("current_rate_kbps") or 0 for t in running
                                            if isinstance(t.get("current_rate_kbps"), int)))
                for kind, count in sorted(self.events[name].items()):
                    events.add_metric([name, kind], count)
            yield from (up, state, active, rate, events)


@click.command("exporter", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--listen", default="127.0.0.1:9418", show_default=True, metavar="HOST:PORT",
              help="Where /metrics is served.")
@fleet_options
@click.option("--node-timeout", type=click.FloatRange(0.5, 300), default=10.0,
              show_default=True, metavar="S", help="Seconds a node may take per scrape.")
@pass_app
def exporter(app: App, listen: str, fleet_glob: str | None, fleet_all: bool,
             node_timeout: float) -> None:
    """Serve Prometheus metrics about node profiles until Ctrl-C or SIGTERM: the health
    checks (nodecli_health_state), nodecli_up, events by type, active transfers and
    their rate. Profiles need a stored secret (or a token file / minting). The checks
    use each profile's thresholds (nodecli node thresholds NAME).

    \b
    Examples:
      nodecli exporter --all-nodes --listen 127.0.0.1:9418
    """
    from prometheus_client import start_http_server
    from prometheus_client.registry import CollectorRegistry

    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UsageError(f"--listen takes HOST:PORT, not {listen[:60]!r}")
    cfg = app.store.load()
    if fleet_glob or fleet_all:
        names = select(cfg.nodes, fleet_glob, fleet_all)
    elif cfg.default_node:
        names = [cfg.default_node]
    else:
        raise UsageError("no node profile to export: --all-nodes, --nodes GLOB, or a default")
    from nodecli.cli.health import thresholds_of

    thresholds = {n: thresholds_of(cfg.nodes.get(n)) for n in names}
    from nodecli import dryrun

    if dryrun.active():
        raise dryrun.DryRunStop(f"would serve http://{host}:{port}/metrics for "
                                f"{len(names)} node(s) ({', '.join(names)}); nothing was "
                                "started (--dry-run)")
    from nodecli.cli.remote import open_node_client

    # opened here, once: a secret still missing is asked on this thread, not in a scrape;
    # every wait of a scrape within the node's limit (a hung node's worker ends soon too)
    limits = {"connect_timeout": node_timeout, "read_timeout": node_timeout,
              "deadline": node_timeout, "max_attempts": 1}
    clients = {n: open_node_client(app, {"node": n}).derive(**limits) for n in names}
    registry = CollectorRegistry()
    registry.register(NodeCollector(clients, node_timeout, thresholds))
    try:
        server, _thread = start_http_server(int(port), addr=host.strip("[]"),
                                            registry=registry)
    except OSError as exc:
        raise NodecliError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    app.term.info(f"serving http://{host}:{server.server_port}/metrics for "
                  f"{len(names)} node(s); stop with Ctrl-C")
    app.term.flush()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
        app.term.info("exporter stopped")
