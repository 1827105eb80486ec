"""A small real HTTP proxy over sockets, for the proxy tests: it answers CONNECT by
opening a TCP tunnel and copying bytes both ways, and counts what passes through it.

It never sees inside the tunnel: TLS runs between the client and the server at its far
end. ``divert`` sends every tunnel to another address instead of the one asked for (a
proxy that intercepts), and ``credentials`` makes it demand Proxy-Authorization Basic.
"""

from __future__ import annotations

import base64
import socket
import threading
from dataclasses import dataclass, field


@dataclass
class ProxyStats:
    tunnels: list[str] = field(default_factory=list)  # "host:port" asked for
    refused: int = 0  # requests without the right credentials
    bytes_up: int = 0
    bytes_down: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class TunnelProxy:
    def __init__(self, *, credentials: tuple[str, str] | None = None,
                 divert: tuple[str, int] | None = None) -> None:
        self.credentials = credentials
        self.divert = divert
        self.stats = ProxyStats()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> TunnelProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            method, target = [*lines[0].split(" "), "", ""][:2]
            headers = {k.strip().lower(): v.strip() for k, v in
                       (line.split(":", 1) for line in lines[1:] if ":" in line)}
            if self.credentials is not None:
                want = "Basic " + base64.b64encode(
                    ":".join(self.credentials).encode()).decode()
                if headers.get("proxy-authorization") != want:
                    with self.stats.lock:
                        self.stats.refused += 1
                    conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                                 b"Proxy-Authenticate: Basic realm=\"test\"\r\n"
                                 b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                    return
            if method != "CONNECT":
                conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n"
                             b"Connection: close\r\n\r\n")
                return
            host, _, port = target.rpartition(":")
            with self.stats.lock:
                self.stats.tunnels.append(target)
            try:
                upstream = socket.create_connection(self.divert or (host.strip("[]"),
                                                                    int(port)), timeout=10)
            except OSError:
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            with upstream:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                up = threading.Thread(target=self._pipe, args=(conn, upstream, True),
                                      daemon=True)
                up.start()
                self._pipe(upstream, conn, False)
                up.join(timeout=5)

    def _pipe(self, src: socket.socket, dst: socket.socket, upward: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
                with self.stats.lock:
                    if upward:
                        self.stats.bytes_up += len(data)
                    else:
                        self.stats.bytes_down += len(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
