"""``nodecli emulator serve``: run the built-in node emulator in the foreground."""

from __future__ import annotations

import errno
import re
from pathlib import Path

import click

from nodecli.cli.app import App
from nodecli.cli.common import UserPath, pass_app
from nodecli.cli.lazy import HelpGroup
from nodecli.errors import NodecliError, UsageError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=HelpGroup,
             context_settings=CONTEXT, help="""The built-in node emulator (tests and demos).

\b
  nodecli emulator serve                       # https://localhost:9092, prints its CA file
  nodecli emulator serve --port 0 --port-file /tmp/emu.port --no-tls
""")
def emulator() -> None:
    pass


_LINK_HOST_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})(:[0-9]{1,5})?")


def _port_file_holds(path: Path, ports: str) -> bool:
    from nodecli.fsutil import read_regular

    try:
        return read_regular(path, 4096).decode("ascii", "replace").strip() == ports.strip()
    except OSError:
        return False


@emulator.command("serve", context_settings=CONTEXT)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=9092, show_default=True,
              help="Port; 0 picks any free port (see --port-file).")
@click.option("--port-file", type=UserPath(dir_okay=False), metavar="PATH",
              help="Write the port here (atomically) once listening; removed on exit.")
@click.option("--no-tls", is_flag=True, help="Plain HTTP instead of HTTPS.")
@click.option("--node-version", default=None, metavar="V",
              help="Version reported by GET /info (default: a current 4.x).")
@click.option("--access-key-header", default="X-Vendor-AccessKey", show_default=True,
              metavar="NAME", help="Header that names the access key with bearer tokens.")
@click.option("--fail-rate", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Share of requests answered 503 or 500.")
@click.option("--reset-rate", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Share of connections reset without an answer.")
@click.option("--slow-rate", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Share of requests answered after --slow-seconds.")
@click.option("--slow-seconds", type=click.FloatRange(0, 600), default=2.0, show_default=True,
              help="Delay of slow answers.")
@click.option("--event-rate", type=click.FloatRange(0, 10000), default=0.0, show_default=True,
              metavar="N", help="Generate N activity events per second (0: none).")
@click.option("--activity-logging", type=click.Choice(["on", "off"]), default="on",
              show_default=True,
              help="The node's activity_event_logging setting (3.7.4+; an access key's own "
                   "setting overrides it from 3.8.0).")
@click.option("--event-retention", type=click.IntRange(1, None), default=None, metavar="N",
              help="Keep only the newest N events (a node whose log moves on): a token "
                   "older than the oldest event kept lists from the oldest kept.")
@click.option("--max-count", type=click.IntRange(1, None), default=None, metavar="N",
              help="Serve at most N events per GET /events whatever count asks (a node's "
                   "own cap: count is 'at most').")
@click.option("--link-host", default=None, metavar="HOST[:PORT]",
              help="Name this host in the Link rel=\"next\" of GET /events (a node behind "
                   "a proxy or NAT advertising its internal name).")
@click.option("--no-final-link", is_flag=True,
              help="End GET /events lists on the page holding the newest event (no Link "
                   "rel=\"next\" there) instead of on an empty page, as some nodes do.")
@click.option("--keep-alive", is_flag=True,
              help="Keep connections open after GET /events answers (a node closes them: "
                   "'Connection: close'); for measuring keep-alive clients.")
@click.option("--service-token", "service_token", metavar="VALUE", default=None,
              help="Also accept this opaque access token as it is (user admin, user:all): "
                   "a service whose tokens are not the documented envelope. Prefer "
                   "NODECLI_EMULATOR_SERVICE_TOKEN (argv is visible to other users).",
              envvar="NODECLI_EMULATOR_SERVICE_TOKEN", show_envvar=True)
@click.option("--service-path", "service_paths", multiple=True, metavar="NAME=PATH",
              help="Serve the collaboration service elsewhere: operations, workspaces, "
                   "workspace-memberships, group-memberships ({id} = the parent's id), "
                   "create-workspace. Repeatable.")
@click.option("--token-max-age", type=click.FloatRange(0.1, None), metavar="S",
              help="Refuse a bearer token S seconds after its first use (401), whatever "
                   "its expiry: tokens that expire fast.")
@click.option("--outage-every", type=click.FloatRange(1, None), metavar="S",
              help="Go down every S seconds: stop listening and drop every connection "
                   "for --outage-length, then serve the same data again (a restart).")
@click.option("--outage-length", type=click.FloatRange(0.1, 3600), default=5.0,
              show_default=True, metavar="S", help="Seconds each outage lasts.")
@click.option("--idle-timeout", type=click.FloatRange(0.1, None), metavar="S",
              help="Close keep-alive connections idle for S seconds (as a node or a "
                   "middlebox that drops them).")
@click.option("--clock-offset", type=click.FloatRange(-10**7, 10**7), default=0.0,
              metavar="S", help="Run the node's clock S seconds ahead (negative: behind) "
                                "of this machine's: /info current_time, Date, expiry checks.")
@click.option("--transfers", "seed_transfers", type=click.IntRange(0, 100_000), default=0,
              metavar="N", help="Start with N transfers: most running, some completed, "
                                "some failed.")
@click.option("--transfer-seconds", type=click.FloatRange(0.1, 86400), default=30.0,
              show_default=True, metavar="S",
              help="How long a new transfer takes at its target rate.")
@click.option("--nodes", "node_count", type=click.IntRange(1, 200), default=1,
              show_default=True, metavar="N",
              help="Serve N nodes, each with its own log, access keys and transfers, on "
                   "ports PORT..PORT+N-1 (--port 0: any free ports); one url line each.")
@click.option("--cert-days", type=click.IntRange(-3650, 3650), metavar="D",
              help="The TLS certificate expires D days from now (0 or less: expired); "
                   "its own CA, printed as cacert.")
@click.option("--generated-tree", metavar="SPEC", default=None,
              help="Serve a tree made on demand: fanout=F,depth=D,files=N[,seed=S]"
                   "[,at=/PATH] (mounted at /generated unless at= says where).")
@click.option("--files-paging", metavar="MODE[:SIZE]", default="numbered", show_default=True,
              help="How GET /files/{id}/files pages: numbered (page, per_page, "
                   "X-Total-Count, Link), token (opaque Link token, SIZE a page, no total) "
                   "or bare (page, per_page only); SIZE caps per_page.")
@click.option("--service-token-file", type=UserPath(dir_okay=False), metavar="PATH",
              help="Write an OAuth access token of the emulated collaboration service "
                   "(user admin, scope user:all, valid 24 h; 0600) for the operations commands.")
@pass_app
def serve(app: App, host: str, port: int, port_file: str | None, no_tls: bool,
          node_version: str | None, access_key_header: str, fail_rate: float,
          reset_rate: float, slow_rate: float, slow_seconds: float,
          event_rate: float, activity_logging: str, event_retention: int | None,
          max_count: int | None,
          link_host: str | None, no_final_link: bool, keep_alive: bool,
          service_token: str | None, service_paths: tuple[str, ...],
          token_max_age: float | None, outage_every: float | None, outage_length: float,
          idle_timeout: float | None, clock_offset: float, seed_transfers: int,
          transfer_seconds: float, service_token_file: str | None, node_count: int,
          cert_days: int | None, generated_tree: str | None = None,
          files_paging: str = "numbered") -> None:
    """Serve the node interface until Ctrl-C or SIGTERM (then exit 0).

    Node users (and their passwords) are those of this home's config.toml; access
    keys and their verification keys persist in the home's state/emulator/ folder.

    \b
      nodecli emulator serve &          # prints its URL and the CA file (cacert ...)
      nodecli node add emu --url https://localhost:9092 --user admin --cacert CAFILE
      nodecli node info --node emu

    \b
    The collaboration service is emulated too (operations, workspaces):
      nodecli emulator serve --service-token-file tok &
      nodecli workspaces create --name conflict-demo --url https://localhost:9092 \\
          --cacert CAFILE --token-file tok
    """
    from nodecli.emulator.app import build_server, ca_file
    from nodecli.emulator.state import DEFAULT_NODE_VERSION
    from nodecli.fsutil import atomic_write
    from nodecli.profiles.node import HEADER_RE

    if fail_rate + reset_rate + slow_rate > 1:
        raise UsageError("--fail-rate + --reset-rate + --slow-rate must not exceed 1")
    if not HEADER_RE.match(access_key_header):
        raise UsageError(f"--access-key-header must be an HTTP header name, "
                         f"not {access_key_header!r}")
    if link_host is not None and not _LINK_HOST_RE.fullmatch(link_host):
        raise UsageError(f"--link-host must be HOST or HOST:PORT, not {link_host[:60]!r}")
    from nodecli.emulator.generated import Paging, TreeSpec

    try:
        tree = TreeSpec.parse(generated_tree) if generated_tree is not None else None
    except ValueError as exc:
        raise UsageError(f"--generated-tree: {exc}") from None
    try:
        paging = Paging.parse(files_paging)
    except ValueError as exc:
        raise UsageError(f"--files-paging: {exc}") from None
    from nodecli.config.service_paths import parse_path_overrides

    paths = parse_path_overrides(service_paths)
    tokens = {}
    if service_token is not None:
        token = service_token.strip()
        if not token or any(c.isspace() or ord(c) < 33 for c in token) or len(token) > 8192:
            raise UsageError("--service-token must be one word of printable characters")
        tokens[token] = "admin"
    version = node_version or DEFAULT_NODE_VERSION
    if not all(p.isdigit() for p in version.split(".")) or len(version) > 32:
        raise UsageError(f"--node-version must look like 4.4.5, not {version!r}")
    access_log = app.term.debug if app.verbosity >= 1 else None
    if port and port + node_count - 1 > 65535:
        raise UsageError(f"--nodes {node_count} from port {port} goes past 65535")
    from nodecli import dryrun

    if dryrun.active():
        scheme = "http" if no_tls else "https"
        raise dryrun.DryRunStop(f"would serve {node_count} emulated node(s) on "
                                f"{scheme}://{host}:{port or 'any free port'}; nothing was "
                                "started (--dry-run)")
    servers = []
    try:
        for index in range(node_count):  # the first keeps its access keys in the home
            servers.append(build_server(
                app.paths, host=host, port=port + index if port else 0, tls=not no_tls,
                version=version, access_key_header=access_key_header,
                access_log=access_log, max_count=max_count, link_host=link_host,
                service_tokens=tokens, service_paths=paths, keep_alive=keep_alive,
                persist=index == 0, cert_days=cert_days))
    except OSError as exc:
        for built in servers:
            built.server_close()
        port = port + len(servers) if port else port
        if exc.errno == errno.EADDRINUSE:
            raise NodecliError(f"cannot listen on {host}:{port}: the address is in use",
                               hint="choose another --port, or --port 0 for any free one"
                               ) from None
        if exc.errno == errno.EACCES:
            raise NodecliError(f"cannot listen on {host}:{port}: permission denied",
                               hint="ports below 1024 need privileges; use e.g. 9092"
                               ) from None
        if isinstance(exc, (PermissionError, FileNotFoundError)) or exc.filename:
            raise
        raise NodecliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    from nodecli.emulator.events import log_for, start_generator
    from nodecli.emulator.storage import storage_of
    from nodecli.emulator.transfers import book_of

    for server in servers:
        log_for(server.state).logging_enabled = activity_logging == "on"
        log_for(server.state).link_on_last_page = not no_final_link
        log_for(server.state).retention = event_retention
        faults = server.faults
        faults.fail_rate, faults.reset_rate, faults.slow_rate = fail_rate, reset_rate, slow_rate
        faults.slow_seconds = slow_seconds
        server.state.token_max_age, server.state.clock_offset = token_max_age, clock_offset
        server.idle_timeout = idle_timeout
        files = storage_of(server.state)
        files.generate(tree)
        files.paging = paging
        book = book_of(server.state)
        book.seconds = transfer_seconds
        book.seed(seed_transfers)
    server = servers[0]
    port_path = Path(port_file).expanduser() if port_file else None
    ports = "".join(f"{s.port}\n" for s in servers)
    try:
        for one in servers:
            if event_rate > 0:
                start_generator(one.state, event_rate)
            one.start()
            app.term.data(f"url     {one.url}")
        if not no_tls:
            app.term.data(f"cacert  {ca_file(app.paths, cert_days)}")
        app.term.flush()
        if service_token_file:
            from nodecli.emulator.operations import mint_service_token

            token = mint_service_token(server.state, "admin", "user:all", 24 * 3600)
            atomic_write(Path(service_token_file).expanduser(), (token + "\n").encode())
            app.term.info(f"service token (user:all, 24 h) written to {service_token_file}: "
                          f"nodecli operations list --url {server.url}"
                          f"{' --cacert ' + ca_file(app.paths) if not no_tls else ''} "
                          f"--token-file {service_token_file}")
        if port_path is not None:
            atomic_write(port_path, ports.encode(), mode=0o644)
        cfg = server.state.config()
        if not cfg.users:
            app.term.warn("no node users in this home yet: add one, e.g. "
                          "'nodecli xuser add xfer --restriction \"file:////data/*\"' then "
                          "'nodecli user add admin --xuser xfer'")
        cacert = f" --cacert {ca_file(app.paths, cert_days)}" if not no_tls else ""
        app.term.info(f"node {version}; node users from {app.paths.config_file}")
        app.term.info(f"try: nodecli node info --url {server.url}{cacert} --user NAME")
        if fail_rate or reset_rate or slow_rate:
            app.term.info(f"faults: fail {fail_rate}, reset {reset_rate}, slow {slow_rate} "
                          f"({slow_seconds} s)")
        if outage_every:
            app.term.info(f"outages: down for {outage_length:g} s every {outage_every:g} s")
        app.term.info("stop with Ctrl-C")
        from nodecli import interrupt

        try:
            # interrupt.wait, not a sleep: Ctrl-C or SIGTERM ends it whichever thread
            # (a server's) takes the signal
            while True:
                if not outage_every:
                    interrupt.wait()
                interrupt.wait(outage_every)
                from nodecli.emulator.app import restart

                app.term.info(f"outage: down for {outage_length:g} s")
                for one in servers:  # all of them go down at once
                    one.stop()
                interrupt.wait(outage_length)
                servers = [again for one in servers if (again := restart(one, 0)) is not None]
                app.term.info("back up")
        except KeyboardInterrupt:
            pass
    finally:
        for one in servers:
            one.stop()
        if port_path is not None and _port_file_holds(port_path, ports):
            port_path.unlink(missing_ok=True)
    app.term.info("emulator stopped")


@emulator.command("collector", context_settings=CONTEXT)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=9093, show_default=True,
              help="Port; 0 picks any free port (see --port-file).")
@click.option("--port-file", type=UserPath(dir_okay=False), metavar="PATH",
              help="Write the port here (atomically) once listening; removed on exit.")
@click.option("--no-tls", is_flag=True, help="Plain HTTP instead of HTTPS.")
@click.option("--store", type=UserPath(dir_okay=False), metavar="FILE",
              help="Append every event stored to FILE (jsonl).")
@click.option("--fail-first", type=click.IntRange(0, None), default=0, show_default=True,
              metavar="N", help="Answer the first N batches with --fail-status.")
@click.option("--fail-status", type=click.IntRange(400, 599), default=503, show_default=True,
              metavar="S", help="Status of the failed batches (429 with Retry-After: 0).")
@click.option("--delay", type=click.FloatRange(0, 600), default=0.0, show_default=True,
              metavar="S", help="Answer every request after S seconds.")
@click.option("--refuse", "refuse", type=click.IntRange(1, None), multiple=True, metavar="K",
              help="Refuse the K-th batch (counting every POST) with --refuse-status "
                   "(repeatable).")
@click.option("--refuse-status", type=click.IntRange(400, 499), default=400,
              show_default=True, metavar="S", help="Status of the refused batches.")
@pass_app
def collector(app: App, host: str, port: int, port_file: str | None, no_tls: bool,
              store: str | None, fail_first: int, fail_status: int, delay: float,
              refuse: tuple[int, ...], refuse_status: int) -> None:
    """Serve an HTTP(S) collector of event batches (events ship --to URL) until Ctrl-C.

    POST: a batch of jsonl, stored and answered 200; GET /stats: batches, events and
    the times each Idempotency-Key was seen. It asks for a bearer token when
    NODECLI_COLLECTOR_TOKEN is set (ship it with NODECLI_SINK_TOKEN).

    \b
      nodecli emulator collector --port 0 --port-file /tmp/col.port --fail-first 2 &
      nodecli events ship --resume demo --to https://localhost:$(cat /tmp/col.port)/ \\
          --sink-cacert CAFILE
    """
    import os

    from nodecli import dryrun
    from nodecli.emulator.app import ca_file
    from nodecli.emulator.collector import CollectorState, build_collector
    from nodecli.fsutil import atomic_write

    if dryrun.active():
        raise dryrun.DryRunStop("would serve a collector; nothing was started (--dry-run)")
    state = CollectorState(fail_first=fail_first, fail_status=fail_status, delay=delay,
                           refuse=set(refuse), refuse_status=refuse_status,
                           token=os.environ.get("NODECLI_COLLECTOR_TOKEN") or None,
                           store=Path(store).expanduser() if store else None)
    try:
        server = build_collector(app.paths, state, host=host, port=port, tls=not no_tls)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise NodecliError(f"cannot listen on {host}:{port}: the address is in use",
                               hint="choose another --port, or --port 0 for any free one"
                               ) from None
        raise NodecliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    except (UnicodeError, TypeError, ValueError):  # a NUL or a lone surrogate in --host
        raise UsageError(f"--host {host[:60]!r}: not an address to listen on") from None
    port_path = Path(port_file).expanduser() if port_file else None
    try:
        server.start()
        app.term.data(f"url     {server.url}")
        if not no_tls:
            app.term.data(f"cacert  {ca_file(app.paths)}")
        app.term.flush()
        if port_path is not None:
            atomic_write(port_path, f"{server.port}\n".encode(), mode=0o644)
        app.term.info("stop with Ctrl-C")
        from nodecli import interrupt

        try:
            interrupt.wait()  # a signal taken by any thread wakes it (see interrupt.py)
        except KeyboardInterrupt:
            pass
    finally:
        server.stop()
        if port_path is not None and _port_file_holds(port_path, f"{server.port}\n"):
            port_path.unlink(missing_ok=True)
        stats = state.stats()
        app.term.info(f"collector stopped: {stats['batches']} batches, {stats['events']} "
                      "events stored")
