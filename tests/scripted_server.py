"""A scripted HTTP(S) server over real sockets, for the answers a hostile or broken node
gives: each request is recorded, and a script decides the raw bytes (and pauses) sent
back. TLS uses a certificate of the emulator's kind, signed by a CA the test trusts.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar


@dataclass
class Seen:
    """One request as it reached the server."""

    method: str
    target: str
    headers: dict[str, str]  # lower-case names; a repeated header joined with ", "
    body: bytes = b""


# A script answers one request with raw bytes to send and floats (seconds to pause).
Script = Callable[[Seen], Iterable[bytes | float]]


def reply(status: int = 200, body: bytes = b"", headers: Iterable[tuple[str, str]] = (),
          *, close: bool = True) -> bytes:
    """The bytes of a whole HTTP/1.1 answer."""
    lines = [f"HTTP/1.1 {status} X"]
    lines += [f"{k}: {v}" for k, v in headers]
    lines.append(f"Content-Length: {len(body)}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def certificates(folder: Path, hostnames: tuple[str, ...] = ("localhost",)
                 ) -> tuple[str, str, str]:
    """(CA file, certificate, key) of a new CA and a server certificate for ``hostnames``
    (and 127.0.0.1, ::1)."""
    from nodecli.emulator.tls import make_certificates

    ca, cert, key = make_certificates(folder, hostnames)
    return str(ca), str(cert), str(key)


@dataclass
class ScriptedServer:
    script: Script
    tls: tuple[str, str] | None = None  # (certificate, key); None: plain HTTP
    seen: list[Seen] = field(default_factory=list)
    # released each time a client ends its connection between requests (EOF)
    hangups: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    def __post_init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self._ctx: ssl.SSLContext | None = None
        if self.tls is not None:
            self._ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._ctx.load_cert_chain(*self.tls)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def url(self, host: str = "localhost") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(10)
            if self._ctx is not None:
                conn = self._ctx.wrap_socket(conn, server_side=True)
            buf = b""
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        self.hangups.release()
                        return
                    buf += chunk
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _version = [*lines[0].split(" "), "", ""][:3]
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    key = name.strip().lower()
                    headers[key] = (headers[key] + ", " if key in headers else "") + \
                        value.strip()
                length = int(headers.get("content-length") or 0)
                while len(buf) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
                body, buf = buf[:length], buf[length:]
                seen = Seen(method, target, headers, body)
                self.seen.append(seen)
                for part in self.script(seen):
                    if self._stop.is_set():
                        return
                    if isinstance(part, float):
                        time.sleep(part)
                    else:
                        conn.sendall(part)
        except (OSError, ValueError):
            return
        finally:
            conn.close()


class RouteNode:
    """A scripted HTTPS node answering by route: ``routes[(METHOD, target)]`` (else the
    target without its query) is a list of (status, body, headers) given in turn (the
    last one again and again); a body that is not bytes is sent as JSON; anything else
    is a 404. ``asked()`` and ``bodies()`` are what reached it. ``certs`` is
    :func:`certificates`' (CA, certificate, key)."""

    NO: ClassVar[dict[str, object]] = {"error": {"user_message": "no"}}

    def __init__(self, certs: tuple[str, str, str]) -> None:
        self.certs = certs
        self.routes: dict[tuple[str, str], list[tuple[int, object, list[tuple[str, str]]]]] = {}
        self.server = ScriptedServer(self._answer, tls=(certs[1], certs[2]))

    def _answer(self, seen: Seen) -> Iterable[bytes | float]:
        import json

        todo = self.routes.get((seen.method, seen.target)) or self.routes.get(
            (seen.method, seen.target.split("?")[0]), [(404, self.NO, [])])
        status, body, headers = todo.pop(0) if len(todo) > 1 else todo[0]
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        # (kept open: one TLS handshake a client, not one a request)
        yield reply(status, raw, [("Content-Type", "application/json"), *headers],
                    close=False)

    def link(self, target: str) -> list[tuple[str, str]]:
        return [("Link", f'<{self.server.url()}{target}>; rel="next"')]

    def client(self, auth: object = None) -> object:
        from nodecli.http.client import Auth, Client, Endpoint

        return Client(Endpoint(self.server.url(), auth or Auth(  # type: ignore[arg-type]
            "basic", username="u", password="pw-keys"), cacert=self.certs[0],
            deadline=10.0, max_attempts=1), sleep=lambda s: None)

    def asked(self) -> list[tuple[str, str]]:
        return [(s.method, s.target) for s in self.server.seen]

    def bodies(self) -> list[object]:
        import json

        return [json.loads(s.body) if s.body else None for s in self.server.seen]

    def reset(self) -> RouteNode:
        self.routes.clear()
        self.server.seen.clear()
        return self

    def close(self) -> None:
        self.server.close()
