"""The overall deadline of one HTTP attempt, including a server that drips its headers.

httpx2's timeouts bound each socket operation, so a server that sends its status line
and headers a byte at a time never trips them; :class:`Watchdog` ends such an attempt
when the request's deadline passes (docs/nodes.md, "Timeouts, retries, redirects")."""

from __future__ import annotations

import time
from typing import Any


class Watchdog:
    """Ends an attempt that outlives the request's deadline.

    httpx2's timeouts bound each socket operation, so a server that drips its status line
    and headers a byte at a time never trips them. The watchdog knows the sockets this
    client opened (httpx2's documented ``trace`` extension reports each new connection)
    and shuts them down when the armed deadline passes; the blocked read then fails and
    the attempt is reported as past the deadline. One thread per client, started on the
    first request, waiting on a condition between requests."""

    def __init__(self) -> None:
        import threading

        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._sockets: list[tuple[Any, int]] = []  # (socket object, its descriptor)
        self._thread: threading.Thread | None = None
        self._closed = False
        self._wakes_at: float | None = None  # when the thread's current wait ends
        self.fired = False

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None and sock.fileno() >= 0:
                with self._cond:
                    # (the TLS socket takes over the TCP socket's descriptor)
                    live = [(s, fd) for s, fd in self._sockets
                            if s.fileno() == fd and fd != sock.fileno()]
                    self._sockets = [*live, (sock, sock.fileno())]

    def arm(self, deadline_at: float) -> None:
        with self._cond:
            self.fired = False
            self._deadline = deadline_at
            if self._thread is None:
                import threading

                self._thread = threading.Thread(target=self._run, name="nodecli-deadline",
                                                daemon=True)
                self._thread.start()
            # Wake the thread only when it would otherwise sleep past this deadline: a
            # later deadline is picked up when its current wait ends, so a tail making
            # many requests does not switch threads for each one.
            if self._wakes_at is None or deadline_at < self._wakes_at:
                self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline = None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        import os
        import socket

        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._wakes_at = None
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._wakes_at = self._deadline
                    self._cond.wait(left)
                    continue
                self.fired = True
                self._deadline = None
                for sock, fd in self._sockets:
                    if sock.fileno() != fd:
                        continue  # closed meanwhile
                    # shutdown through a duplicate of the descriptor: it ends the
                    # connection for the reader without touching its socket object
                    try:
                        with socket.socket(fileno=os.dup(fd)) as dup:
                            dup.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                self._sockets = []
