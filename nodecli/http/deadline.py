"""Deadlines: the one of a command (:class:`Budget`), and the watchdog that holds an
attempt to it even against a server that drips its headers (:class:`Watchdog`).

httpx2's timeouts bound each socket operation, so a server that sends its status line
and headers a byte at a time never trips them; :class:`Watchdog` ends such an attempt
when the request's deadline passes (docs/nodes.md, "Timeouts, retries, redirects")."""

from __future__ import annotations

import time
from typing import Any

DEFAULT_SECONDS = 120.0
ENV = "NODECLI_DEADLINE"


class Budget:
    """The deadline of one command (``--deadline``, ``NODECLI_DEADLINE``).

    A one-shot command (the default) has ``seconds`` for everything it sends, counted
    from its first request: every request, attempt, wait between attempts and body
    together, so a node that accepts and never answers ends it after ``seconds`` however
    many requests it would have made. A following command (``events tail -f``, ``transfer
    watch``...) calls :meth:`follow`: each of its requests then has ``seconds`` of its own,
    and ``until`` (a ``time.monotonic()`` moment) ends them all there (``transfer watch
    --timeout`` bounds the whole watch). Shared by every client of the command (threads
    included: the first request's moment is set once, and a second setting of it in a race
    differs by microseconds)."""

    def __init__(self, seconds: float = DEFAULT_SECONDS, *, following: bool = False) -> None:
        self.seconds = seconds
        self.following = following
        self.ends_at: float | None = None  # a one-shot command's end, from its first request
        self.until: float | None = None

    def follow(self, until: float | None = None) -> None:
        self.following, self.until = True, until

    def over(self) -> bool:
        """Whether the following command's own end (``until``) has passed."""
        return self.until is not None and time.monotonic() >= self.until

    def request_ends(self, per_request: float | None) -> tuple[float, str]:
        """When a request starting now must be over, and that bound in words.

        ``per_request`` is an endpoint's own bound (the exporter's --node-timeout), never
        more than the command's."""
        now = time.monotonic()
        seconds = self.seconds if per_request is None else min(per_request, self.seconds)
        end, why = now + seconds, f"the deadline of {seconds:g} s"
        if not self.following:
            if self.ends_at is None:
                self.ends_at = now + self.seconds
            if self.ends_at <= end:
                end, why = self.ends_at, (f"the command's deadline of {self.seconds:g} s "
                                          f"(--deadline, {ENV})")
        if self.until is not None and self.until <= end:
            end, why = self.until, "the watch's --timeout"
        return end, why


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
                    if self.fired and self._deadline is not None:
                        # connected after this attempt's deadline passed
                        self._cut()

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
        with self._cond:
            while not self._closed:
                if self._deadline is None or self.fired:
                    self._wakes_at = None
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._wakes_at = self._deadline
                    self._cond.wait(left)
                    continue
                # (the deadline stays armed until the attempt ends: a connection made
                # after this moment is cut as it is made)
                self.fired = True
                self._cut()

    def _cut(self) -> None:
        """Shut down every connection of the attempt (the condition's lock is held)."""
        import os
        import socket

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
