"""``nodecli exporter``: a Prometheus exporter (``/metrics``) over node profiles, made
with prometheus-client (a custom collector): the same health gauges as ``node health -o
prometheus`` (one code path, cli.health.health_families), ``up``, each node's age, the
counters of events by type, and the active transfers and their aggregate rate.

Scrapes are answered from each node's last complete answer (node.fleet.Snapshots): a
scrape finding the last refresh done less than ``--max-age`` ago is answered at once
(and starts a refresh in the background when none runs); otherwise it starts or joins
a refresh and waits for it at most ``--node-timeout``. No scrape queues behind another.
The HTTP side is one asyncio loop: a client has a few seconds to send its request and
to read the answer, and holds no thread meanwhile; the threads are the loop's, the
refresh's and one per node being asked."""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import fleet_options, pass_app, select
from nodecli.errors import NodecliError, UsageError

MAX_EVENT_PAGES = 10  # per node and refresh: a node with a huge backlog is read over time
#: seconds a client has to send its request head, and to take the answer
CLIENT_SECONDS = 5.0
#: connections open at once; more are closed at once (each costs memory, not a thread)
MAX_CONNECTIONS = 256
MAX_HEAD = 16 * 1024
#: test hook (honoured only when set): a file that gets one line per scrape that waits
#: for a refresh ("waiting"), per scrape answered at once from the snapshot
#: ("snapshot") and per refresh done ("refreshed", written before any scrape waiting
#: for it is answered), so a test knows where the exporter is without sleeping
SCRAPE_NOTE_ENV = "NODECLI_TEST_SCRAPE_NOTE"
#: test hook: a file holding a number of seconds, the clock the snapshot's age is read
#: on (instead of the monotonic clock), so a test sets that age to the boundary exactly
SNAPSHOT_CLOCK_ENV = "NODECLI_TEST_SNAPSHOT_CLOCK"


def _note(path: str | None, line: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as note:
            note.write(line + "\n")


def _file_clock(path: str) -> float:
    with open(path, encoding="utf-8") as clock:
        return float(clock.read())


class NodeProbe:
    """What one refresh asks every node: the health checks (those of ``node health``),
    the active transfers, and the events since the last refresh, counted by type."""

    def __init__(self, clients: dict[str, Any], local_keys: dict[str, Any],
                 thresholds: dict[str, Any]) -> None:
        self.clients, self.local_keys, self.thresholds = clients, local_keys, thresholds
        self.lock = threading.Lock()
        self.events: dict[str, Counter[str]] = {n: Counter() for n in clients}
        self.tokens: dict[str, str | None] = {n: None for n in clients}

    def __call__(self, name: str) -> dict[str, Any]:
        from nodecli.node.fleet import count_event_types
        from nodecli.node.health import OK, Thresholds, run_checks
        from nodecli.node.transfers import list_transfers

        client = self.clients[name]
        checks = run_checks(client, access_key=client.endpoint.auth.access_key,
                            local_key=self.local_keys.get(name),
                            thresholds=self.thresholds.get(name) or Thresholds())
        reached = bool(checks) and checks[0].name == "reachable" and checks[0].state == OK
        active: list[dict[str, Any]] | None = None
        if reached:
            try:
                active = list_transfers(client, active=True)
            except NodecliError:
                active = None
            try:
                # only one probe of a node runs at a time (Snapshots): its token is ours
                counts, token = count_event_types(client, self.tokens[name],
                                                  max_pages=MAX_EVENT_PAGES)
            except NodecliError:
                pass
            else:
                with self.lock:  # counters only grow: added to, never replaced
                    self.events[name].update(counts)
                    self.tokens[name] = token
        return {"checks": checks, "active": active, "reached": reached}

    def event_counts(self) -> dict[str, dict[str, int]]:
        with self.lock:
            return {n: dict(c) for n, c in self.events.items()}


def _as_float(value: int) -> float:
    from nodecli.render.numbers import quotient

    q = quotient(value, 1)
    return q if q is not None else (math.inf if value > 0 else -math.inf)


class FleetCollector:
    """The page: made from the snapshots, never by asking a node."""

    def __init__(self, snapshots: Any, probe: NodeProbe) -> None:
        self.snapshots, self.probe = snapshots, probe

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        from nodecli.cli.health import health_families
        from nodecli.node.health import CRITICAL, Check

        up = GaugeMetricFamily("nodecli_up", "1 when the node's last answer came in time "
                               "and it was reached", labels=["node"])
        age = GaugeMetricFamily("nodecli_scrape_age_seconds", "Age of the node's values "
                                "(its last complete answer)", labels=["node"])
        active = GaugeMetricFamily("nodecli_active_transfers", "Running transfers",
                                   labels=["node"])
        rate = GaugeMetricFamily("nodecli_transfer_rate_kbps", "Aggregate current rate "
                                 "of the running transfers", labels=["node"])
        events = CounterMetricFamily("nodecli_events", "Events by their most specific type "
                                     "since the exporter started", labels=["node", "type"])
        results: list[tuple[str, list[Any]]] = []
        view = self.snapshots.view()
        for name, (answer, seconds, late) in view.items():
            fine = isinstance(answer, dict) and answer["reached"] and not late
            up.add_metric([name], 1 if fine else 0)
            if seconds is not None:
                age.add_metric([name], round(seconds, 3))
            checks: list[Any] = []
            if isinstance(answer, dict):
                checks = list(answer["checks"])
            elif isinstance(answer, NodecliError):
                checks = [Check("reachable", CRITICAL, answer.message[:200])]
            if late:  # what node health says of a node that does not answer in time
                reason = f"no answer within {self.snapshots.within:g} s"
                checks = [Check("reachable", CRITICAL, reason)] + \
                    [c for c in checks if c.name != "reachable"]
            results.append((name, checks))
            running = answer.get("active") if isinstance(answer, dict) else None
            if running is not None:
                active.add_metric([name], len(running))
                total = sum(t["current_rate_kbps"] for t in running
                            if type(t.get("current_rate_kbps")) is int)
                # a sum no float holds (a node sent 10^400) is +Inf, as Prometheus has it
                rate.add_metric([name], _as_float(total))
        for name, counts in self.probe.event_counts().items():
            for kind, count in sorted(counts.items()):
                events.add_metric([name, kind], count)
        return [up, age, *health_families(results), active, rate, events]


class MetricsServer:
    """``/metrics`` over HTTP/1.1 on one asyncio loop in its own thread."""

    def __init__(self, registry: Any, snapshots: Any, within: float,
                 max_age: float = 0.0) -> None:
        self.registry, self.snapshots, self.within = registry, snapshots, within
        self.max_age = max_age
        self.open = 0
        self.note = os.environ.get(SCRAPE_NOTE_ENV)
        self.loop: Any = None
        self.ready = threading.Event()
        self.failure: BaseException | None = None
        self.port = 0

    def start(self, host: str, port: int) -> None:
        threading.Thread(target=self._serve, args=(host, port), daemon=True,
                         name="nodecli-metrics").start()
        self.ready.wait()
        if self.failure is not None:
            raise self.failure

    def _serve(self, host: str, port: int) -> None:
        import asyncio

        async def main() -> None:
            try:
                server = await asyncio.start_server(self._client, host, port,
                                                    limit=MAX_HEAD, backlog=128)
            except OSError as exc:
                self.failure = exc
                self.ready.set()
                return
            self.loop, self.port = asyncio.get_running_loop(), \
                server.sockets[0].getsockname()[1]
            self.ready.set()
            async with server:
                await server.serve_forever()

        asyncio.run(main())

    async def _client(self, reader: Any, writer: Any) -> None:
        import asyncio

        self.open += 1
        try:
            if self.open > MAX_CONNECTIONS:
                return
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CLIENT_SECONDS)
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                    OSError):
                return  # slow, half-open or oversized: cut
            status, ctype, body = await self._answer(head)
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                         f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                         .encode("ascii") + (b"" if head.startswith(b"HEAD ") else body))
            await asyncio.wait_for(writer.drain(), CLIENT_SECONDS)
        except (TimeoutError, OSError):
            pass
        finally:
            self.open -= 1
            writer.close()

    async def _answer(self, head: bytes) -> tuple[str, str, bytes]:
        import asyncio

        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or parts[0] not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"GET /metrics\n"
        path = parts[1].split("?", 1)[0]
        if path != "/metrics":
            return "404 Not Found", "text/plain", b"the metrics are at /metrics\n"
        accept = ""
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "accept":
                accept = value.strip()
        age = self.snapshots.age()
        if age is not None and age < self.max_age:
            # young enough: answered now; the refresh makes the next scrape's values at
            # most about one scrape interval old. It starts once this answer is written
            # (the loop's next turn): its probe threads would otherwise take the GIL
            # from the page being made
            _note(self.note, "snapshot")
            asyncio.get_running_loop().call_soon(self.snapshots.refresh)
        else:
            refresh = self.snapshots.refresh()  # or the one under way
            if not refresh.done():
                _note(self.note, "waiting")
            try:
                # shared by every scrape: one giving up must not cancel it for the others
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(refresh)),
                                       self.within)
            except TimeoutError:
                pass  # the last complete answers, each with its age
        from prometheus_client.exposition import choose_encoder

        encoder, ctype = choose_encoder(accept)
        body = encoder(self.registry)
        return "200 OK", ctype, body


@click.command("exporter", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--listen", default="127.0.0.1:9418", show_default=True, metavar="HOST:PORT",
              help="Where /metrics is served (port 0: any free port, said on stderr).")
@fleet_options
@click.option("--node-timeout", type=click.FloatRange(0.5, 300), default=10.0,
              show_default=True, metavar="S",
              help="Seconds a node may take per refresh, and a scrape waits at most.")
@click.option("--max-age", type=click.FloatRange(0, 86400), default=30.0,
              show_default=True, metavar="S",
              help="A scrape finding the last refresh done less than S seconds ago is "
                   "answered from it at once (and starts the next in the background); "
                   "0: every scrape waits for a refresh.")
@pass_app
def exporter(app: App, listen: str, fleet_glob: str | None, fleet_all: bool,
             node_timeout: float, max_age: float) -> None:
    """Serve Prometheus metrics about node profiles until Ctrl-C or SIGTERM (exit 130):
    the health checks (the gauges of node health -o prometheus), nodecli_up,
    nodecli_scrape_age_seconds, events by type, active transfers and their rate. A
    scrape is answered from each node's last complete answer: at once when the last
    refresh was done less than --max-age ago (a refresh then starts in the background),
    else after waiting at most --node-timeout for the refresh it starts. Profiles need
    a stored secret (or a token file / minting). The checks use each profile's
    thresholds (nodecli node thresholds NAME).

    \b
    Examples:
      nodecli exporter --all-nodes --listen 127.0.0.1:9418
    """
    from prometheus_client.registry import CollectorRegistry

    from nodecli.cli.health import local_key_of, thresholds_of
    from nodecli.cli.remote import open_node_client
    from nodecli.node.fleet import Snapshots

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
    thresholds = {n: thresholds_of(cfg.nodes.get(n)) for n in names}
    from nodecli import dryrun

    if dryrun.active():
        raise dryrun.DryRunStop(f"would serve http://{host}:{port}/metrics for "
                                f"{len(names)} node(s) ({', '.join(names)}); nothing was "
                                "started (--dry-run)")
    # opened here, once: a secret still missing is asked on this thread, not in a
    # refresh; every wait of a refresh within the node's limit
    app.budget.follow()  # each refresh's requests within --deadline, not the whole run
    limits = {"connect_timeout": node_timeout, "read_timeout": node_timeout,
              "deadline": node_timeout, "max_attempts": 1}
    clients = {n: open_node_client(app, {"node": n}).derive(**limits) for n in names}
    probe = NodeProbe(clients, {n: local_key_of(app, c) for n, c in clients.items()},
                      thresholds)
    note, clock_file = os.environ.get(SCRAPE_NOTE_ENV), os.environ.get(SNAPSHOT_CLOCK_ENV)
    snapshots = Snapshots(names, probe, within=node_timeout,
                          clock=(lambda: _file_clock(clock_file)) if clock_file
                          else time.monotonic,
                          on_done=(lambda: _note(note, "refreshed")) if note else None)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(snapshots, probe))
    server = MetricsServer(registry, snapshots, node_timeout, max_age)
    try:
        server.start(host.strip("[]"), int(port))
    except OSError as exc:
        raise NodecliError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    snapshots.refresh()  # the first answers are on their way before the first scrape
    app.term.info(f"serving http://{host}:{server.port}/metrics for "
                  f"{len(names)} node(s); stop with Ctrl-C")
    app.term.flush()
    from nodecli import interrupt

    try:
        # not time.sleep: a signal the loop's or a probe's thread takes would not wake
        # it (nodecli.interrupt)
        interrupt.wait()
    except KeyboardInterrupt:
        # SIGTERM arrives here too (cli.main): exit 130 as documented; the loop and the
        # probes are daemon threads, so scrapes still waiting end with the process
        snapshots.stop()
        raise
