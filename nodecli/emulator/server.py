"""HTTP plumbing of the emulator: routing, auth, TLS, error bodies, fault injection.

Feature modules register routes with :meth:`Router.add`; a handler receives a
:class:`Request` (with the authenticated :class:`Principal`) and returns a
:class:`Reply` or raises :class:`HttpError`. Error bodies have the node's shape:
``{"error": {"code": 404, "reason": "Not Found", "user_message": "..."}}``.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import random
import re
import socket
import socketserver
import ssl
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from nodecli import __version__

MAX_REQUEST_BODY = 1024 * 1024


class HttpError(Exception):
    def __init__(self, status: int, user_message: str = "", headers: dict[str, str] | None = None,
                 body: bytes | None = None) -> None:
        super().__init__(user_message)
        self.status = status
        self.user_message = user_message
        self.headers = headers or {}
        self.body = body


@dataclass(slots=True)
class Principal:
    """Who made the request. kind: node_user, access_key, bearer, service."""

    kind: str
    name: str
    access_key: str | None = None
    claims: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: Any  # email.message.Message: case-insensitive .get()
    body: bytes
    base_url: str
    match: re.Match[str] | None = None
    principal: Principal | None = None

    def arg(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else None

    def json(self) -> Any:
        if not self.body:
            raise HttpError(400, "a JSON request body is required")
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            raise HttpError(400, "the request body is not valid JSON") from None


@dataclass(slots=True)
class Reply:
    status: int = 200
    body: Any = None  # JSON-serialisable, or bytes for a raw body
    headers: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        if self.body is None:
            return b""
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body, separators=(",", ":")).encode()


Handler = Callable[[Request], Reply]


@dataclass(slots=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    auth: str  # "none", "node" (node user / access key Basic), "any", "bearer", "service"


class Router:
    def __init__(self) -> None:
        self.routes: list[Route] = []

    def add(self, method: str, pattern: str, handler: Handler, auth: str = "any") -> None:
        self.routes.append(Route(method.upper(), re.compile("^" + pattern + "$"), handler, auth))

    def find(self, method: str, path: str) -> tuple[Route | None, re.Match[str] | None, bool]:
        path_known = False
        for route in self.routes:
            m = route.pattern.match(path)
            if m:
                path_known = True
                if route.method == method:
                    return route, m, True
        return None, None, path_known


@dataclass(slots=True)
class Faults:
    """Fault injection. Random faults by rate, plus a deterministic queue for tests.

    Queue items: ``"503"``, ``"500"``, ``"429"`` (with Retry-After: 0), ``"reset"``
    (TCP RST, no response), ``"slow"`` (sleep ``slow_seconds`` first), ``"garbage"``
    (200 with a body that is not JSON), ``"drop"`` (close after the headers).
    Only requests whose path starts with ``path_prefix`` are affected.
    """

    fail_rate: float = 0.0
    reset_rate: float = 0.0
    slow_rate: float = 0.0
    slow_seconds: float = 2.0
    path_prefix: str = "/"
    queue: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def push(self, *kinds: str) -> None:
        with self.lock:
            self.queue.extend(kinds)

    def clear(self) -> None:
        """Back to no faults: every setting to its default (a test that narrowed or
        slowed the faults must not leave them so for the next one) and the queue empty."""
        with self.lock:
            self.queue.clear()
            for f in fields(self):
                if f.name not in ("queue", "lock"):
                    setattr(self, f.name, f.default)

    def next_fault(self, path: str) -> str | None:
        if not path.startswith(self.path_prefix):
            return None
        with self.lock:
            if self.queue:
                return self.queue.pop(0)
        r = random.random()
        if r < self.reset_rate:
            return "reset"
        if r < self.reset_rate + self.fail_rate:
            return random.choice(["503", "500"])
        if r < self.reset_rate + self.fail_rate + self.slow_rate:
            return "slow"
        return None


class _Handler(http.server.BaseHTTPRequestHandler):
    server: EmulatorServer
    protocol_version = "HTTP/1.1"
    server_version = f"nodecli-emulator/{__version__}"

    def setup(self) -> None:
        super().setup()
        # a node that drops idle keep-alive connections: the read of the next request
        # times out and the connection is closed (None: kept as long as the client likes)
        if self.server.idle_timeout is not None:
            self.connection.settimeout(self.server.idle_timeout)
        self.server.track(self.connection)
        # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's
        # algorithm waits for the client's delayed ACK before every response's body.
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.untrack(self.connection)

    def date_time_string(self, timestamp: float | None = None) -> str:
        # the Date header on the node's own (possibly skewed) clock
        return super().date_time_string(self.server.state.now() if timestamp is None
                                        else timestamp)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.access_log:
            self.server.access_log(f"{self.address_string()} {format % args}")

    def _send(self, reply: Reply) -> None:
        body = reply.encode()
        self.send_response(reply.status)
        headers = {"Cache-Control": "no-cache"}
        if reply.body is not None and not isinstance(reply.body, bytes):
            headers["Content-Type"] = "application/json; charset=utf-8"
        headers.update(reply.headers)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, exc: HttpError) -> None:
        if exc.body is not None:
            self._send(Reply(exc.status, exc.body, exc.headers))
            return
        try:
            reason = HTTPStatus(exc.status).phrase
        except ValueError:
            reason = "Error"
        body = {"error": {"code": exc.status, "reason": reason,
                          "user_message": exc.user_message or reason}}
        self._send(Reply(exc.status, body, exc.headers))

    def _reset(self) -> None:
        # SO_LINGER with zero timeout: close() sends RST instead of FIN.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        state = self.server.state
        fault = self.server.faults.next_fault(parts.path)
        if fault == "reset":
            self._reset()
            return
        if fault == "slow":
            time.sleep(self.server.faults.slow_seconds)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BODY:
            self._error(HttpError(413, "request body too large"))
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        if fault in ("503", "500"):
            self._error(HttpError(int(fault), "injected failure"))
            return
        if fault == "429":
            self._error(HttpError(429, "slow down", {"Retry-After": "0"}))
            return
        if fault == "garbage":
            self._send(Reply(200, b"<html>not json", {"Content-Type": "text/html"}))
            return
        if fault == "drop":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"[{")
            self.close_connection = True
            return
        try:
            query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=False,
                             max_num_fields=200)
        except ValueError:
            self._error(HttpError(400, "malformed query string"))
            return
        route, match, path_known = self.server.router.find(self.command, parts.path)
        if route is None:
            if path_known:
                self._error(HttpError(405, f"method {self.command} not allowed here"))
            else:
                self._error(HttpError(404, f"no such resource: {parts.path}"))
            return
        req = Request(self.command, parts.path, query, self.headers, body,
                      self.server.url, match)
        try:
            req.principal = state.authenticate(req, route.auth)
            reply = route.handler(req)
        except HttpError as exc:
            self._error(exc)
            return
        self._send(reply)

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_CANCEL = do_GET



def listen_tls(server: socketserver.TCPServer, tls: tuple[str, str] | None) -> None:
    """Serve HTTPS on ``server``'s listening socket with ``tls`` = (certificate, key);
    plain HTTP when None. The emulator and its collector serve alike."""
    if tls is not None:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(tls[0], tls[1])
        server.socket = ctx.wrap_socket(server.socket, server_side=True)


def url_of(server: socketserver.TCPServer) -> str:
    """The URL a client uses: ``localhost`` for TLS on a loopback or wildcard address
    (the name the emulator's certificate holds)."""
    tls = isinstance(server.socket, ssl.SSLSocket)
    host = str(server.server_address[0])
    if host in ("127.0.0.1", "0.0.0.0"):  # noqa: S104 - only a name for the URL
        host = "localhost" if tls else "127.0.0.1"
    return f"{'https' if tls else 'http'}://{host}:{server.server_address[1]}"

class EmulatorServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # the listen backlog must absorb bursts of new connections from tests
    request_queue_size = 128

    def __init__(self, state: Any, *, host: str = "127.0.0.1", port: int = 0,
                 tls: tuple[str, str] | None = None,
                 access_log: Callable[[str], None] | None = None) -> None:
        self.state = state
        self.router = Router()
        self.faults = Faults()
        self.access_log = access_log
        self.tls = tls is not None
        self.tls_files = tls
        self.idle_timeout: float | None = None
        self._open: set[Any] = set()
        self._open_lock = threading.Lock()
        self.connections = 0  # accepted so far (tests count a command's connections)
        super().__init__((host, port), _Handler)
        listen_tls(self, tls)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return url_of(self)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # client went away, TLS handshake refused by a client that does not trust us...
        return

    def start(self) -> EmulatorServer:
        self._thread = threading.Thread(target=self.serve_forever, name="emulator", daemon=True)
        self._thread.start()
        return self

    def track(self, conn: Any) -> None:
        with self._open_lock:
            self._open.add(conn)
            self.connections += 1

    def untrack(self, conn: Any) -> None:
        with self._open_lock:
            self._open.discard(conn)

    def stop(self) -> None:
        """Stop listening and drop every open connection, as a node going down does
        (again: nothing)."""
        if self._thread is not None:  # (shutdown() waits for a loop that never ran)
            self._thread = None
            self.shutdown()
        self.server_close()
        with self._open_lock:
            conns, self._open = list(self._open), set()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def parse_basic(header: str | None) -> tuple[str, str] | None:
    if not header or not header.startswith("Basic "):
        return None
    try:
        raw = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    user, sep, password = raw.partition(":")
    return (user, password) if sep else None


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
