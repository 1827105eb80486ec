"""Assemble an emulator: state + every feature module's routes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from nodecli.config.paths import Paths
from nodecli.emulator.server import EmulatorServer
from nodecli.emulator.state import DEFAULT_NODE_VERSION, NodeState


def build_server(
    paths: Paths,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    tls: bool = True,
    version: str = DEFAULT_NODE_VERSION,
    access_key_header: str = "X-Vendor-AccessKey",
    access_log: Callable[[str], None] | None = None,
    persist: bool = True,
    max_count: int | None = None,
    link_host: str | None = None,
    service_tokens: dict[str, str] | None = None,
    service_paths: dict[str, str] | None = None,
    keep_alive: bool = False,
    cert_days: int | None = None,
) -> EmulatorServer:
    """An emulator ready to start. ``max_count`` caps the events a GET /events answer
    carries whatever count asks; ``link_host`` is the host its Link rel="next" names
    (a node behind a proxy advertising its internal name); ``keep_alive`` keeps
    connections open after GET /events answers (a node shows "Connection: close").
    ``service_tokens`` are opaque access tokens the collaboration service accepts as
    they are (token -> user id); ``service_paths`` moves the service paths a node's
    documentation does not show (ServicePaths names). ``cert_days``: the server
    certificate expires that many days from its making (its CA: :func:`ca_file`)."""
    state = NodeState(paths, version=version, access_key_header=access_key_header,
                      persist=persist)
    cert = None
    if tls:
        from nodecli.emulator.tls import DEFAULT_CERT_DAYS, make_certificates

        _ca, cert_path, key_path = make_certificates(
            Path(ca_file(paths, cert_days)).parent,
            days=DEFAULT_CERT_DAYS if cert_days is None else cert_days)
        cert = (str(cert_path), str(key_path))
    server = EmulatorServer(state, host=host, port=port, tls=cert, access_log=access_log)
    from nodecli.emulator import access, events, node, operations, transfers

    svc = operations.service_state(state)
    svc.paths = dict(service_paths or {})
    svc.opaque_tokens.update(service_tokens or {})
    for feature in (node, events, operations, access, transfers):
        feature.register(server.router, state)
    log = events.log_for(state)
    log.count_cap, log.link_host, log.keep_alive = max_count, link_host, keep_alive
    return server


def restart(server: EmulatorServer, down_for: float,
            stop: threading.Event | None = None,
            while_down: Callable[[], None] | None = None) -> EmulatorServer | None:
    """The node goes down and comes back: ``server`` stops listening and drops its
    connections (clients meet refused connections), and after ``down_for`` seconds a new
    server on the same address serves the same state, routes and faults, as a restarted
    node serves its stored data. None when ``stop`` was set while it was down.
    ``while_down`` runs once the node is down, before the wait (a test's look at it)."""
    host, port = server.server_address[0], server.port
    server.stop()
    if while_down is not None:
        while_down()
    if (stop or threading.Event()).wait(down_for):
        return None
    again = EmulatorServer(server.state, host=str(host), port=port, tls=server.tls_files,
                           access_log=server.access_log)
    again.router, again.faults = server.router, server.faults
    again.idle_timeout = server.idle_timeout
    return again.start()


def ca_file(paths: Paths, cert_days: int | None = None) -> str:
    """The CA of the emulator's certificate (one per ``cert_days`` asked for)."""
    folder = "tls" if cert_days is None else f"tls-{cert_days}d"
    return str(paths.state_dir / "emulator" / folder / "ca.pem")
