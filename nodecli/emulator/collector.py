"""An HTTP(S) collector of event batches, for ``events ship`` tests and demos.

``POST <any path>`` with a body of newline-delimited JSON is a batch: stored (in
memory, and appended to ``store`` when given), answered 200 with ``{"accepted": N}``.
Faults, set at the start or by a test: the first ``fail_first`` batches answered
``fail_status`` (503 by default; 429 carries ``Retry-After: 0``), every answer delayed
by ``delay`` seconds, the batches whose number is in ``refuse`` (1-based, counting every
POST) answered ``refuse_status`` (400 by default). ``token`` (or ``user``/``password``)
makes it ask for credentials (401 otherwise).

``GET /stats`` answers what it holds: the number of batches and events stored, and
for each ``Idempotency-Key`` how many times it was seen (stored or not), so a test
sees that a repeated batch carried the same key. Events are kept as the bytes
received, so memory grows with what is shipped (a test collector).
"""

from __future__ import annotations

import base64
import http.server
import json
import socketserver
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from nodecli.emulator.server import listen_tls, url_of

MAX_BODY = 256 * 1024 * 1024


class CollectorState:
    def __init__(self, *, fail_first: int = 0, fail_status: int = 503, delay: float = 0.0,
                 refuse: set[int] | None = None, refuse_status: int = 400,
                 token: str | None = None, user: str | None = None,
                 password: str | None = None, store: Path | None = None,
                 keep: bool = True) -> None:
        self.fail_first, self.fail_status, self.delay = fail_first, fail_status, delay
        self.refuse = set(refuse or ())
        self.refuse_status = refuse_status
        self.token, self.user, self.password = token, user, password
        self.store = store
        self.keep = keep  # hold the lines in memory (off: count only, for benchmarks)
        self.lock = threading.Lock()
        self.posts = 0  # every POST, answered or not
        self.batches = 0  # stored
        self.events = 0
        self.stored: list[tuple[str | None, list[bytes]]] = []  # (key, lines) per batch
        self.keys: Counter[str] = Counter()  # Idempotency-Key -> times seen
        self.stored_keys: Counter[str] = Counter()  # Idempotency-Key -> times stored
        self.headers: list[dict[str, str]] = []  # of the last 50 requests, for tests

    def authorized(self, header: str | None) -> bool:
        if self.token is not None:
            return header == f"Bearer {self.token}"
        if self.user is not None:
            raw = f"{self.user}:{self.password or ''}".encode()
            return header == "Basic " + base64.b64encode(raw).decode("ascii")
        return True

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"posts": self.posts, "batches": self.batches, "events": self.events,
                    "keys": dict(self.keys), "stored_keys": dict(self.stored_keys)}

    def take(self, key: str | None, body: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, answer, headers) for one POST."""
        with self.lock:
            self.posts += 1
            number = self.posts
            if key is not None:
                self.keys[key] += 1
            if number <= self.fail_first:
                extra = {"Retry-After": "0"} if self.fail_status == 429 else {}
                return self.fail_status, {"error": "injected failure"}, extra
            if number in self.refuse:
                return self.refuse_status, {"error": f"batch {number} refused"}, {}
            lines = [ln for ln in body.split(b"\n") if ln.strip()]
            for line in lines if self.keep else ():  # (counting only: a benchmark's)
                try:
                    json.loads(line)
                except ValueError:
                    return 400, {"error": "a line is not JSON"}, {}
            self.batches += 1
            self.events += len(lines)
            if key is not None:
                self.stored_keys[key] += 1
            if self.keep:
                self.stored.append((key, lines))
            if self.store is not None:
                with open(self.store, "ab") as fh:
                    fh.write(b"".join(ln + b"\n" for ln in lines))
            return 200, {"accepted": len(lines)}, {}


class _Handler(http.server.BaseHTTPRequestHandler):
    server: CollectorServer
    protocol_version = "HTTP/1.1"
    server_version = "nodecli-collector"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _answer(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        state = self.server.state
        with state.lock:
            state.headers = [*state.headers, dict(self.headers.items())][-50:]
        if self.path.split("?")[0] != "/stats":
            self._answer(404, {"error": "POST batches; GET /stats"})
            return
        if not state.authorized(self.headers.get("Authorization")):
            self._answer(401, {"error": "credentials needed"})
            return
        self._answer(200, state.stats())

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._answer(413, {"error": "batch too large"})
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        if len(body) < length:  # the client went mid-body: no request to act on
            self.close_connection = True
            return
        if state.delay:
            time.sleep(state.delay)
        with state.lock:
            state.headers = [*state.headers, dict(self.headers.items())][-50:]
        if not state.authorized(self.headers.get("Authorization")):
            self._answer(401, {"error": "credentials needed"})
            return
        status, doc, headers = state.take(self.headers.get("Idempotency-Key"), body)
        self._answer(status, doc, headers)


class CollectorServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, state: CollectorState, *, host: str = "127.0.0.1", port: int = 0,
                 tls: tuple[str, str] | None = None) -> None:
        self.state = state
        self.tls = tls is not None
        super().__init__((host, port), _Handler)
        listen_tls(self, tls)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return url_of(self)

    def handle_error(self, request: Any, client_address: Any) -> None:
        return

    def start(self) -> CollectorServer:
        self._thread = threading.Thread(target=self.serve_forever, name="collector",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._thread = None
            self.shutdown()
        self.server_close()


def build_collector(paths: Any, state: CollectorState, *, host: str = "127.0.0.1",
                    port: int = 0, tls: bool = True) -> CollectorServer:
    """A collector with the emulator's certificate (its CA: ``app.ca_file(paths)``)."""
    cert = None
    if tls:
        from nodecli.emulator.app import ca_file
        from nodecli.emulator.tls import make_certificates

        _ca, cert_path, key_path = make_certificates(Path(ca_file(paths)).parent)
        cert = (str(cert_path), str(key_path))
    return CollectorServer(state, host=host, port=port, tls=cert)
