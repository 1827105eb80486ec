"""Ctrl-C and SIGTERM in a tail: a page being written is finished (and its checkpoint
saved) first; a second signal stops at once."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


class GracefulStop:
    """SIGINT/SIGTERM: between pages stop at once; while a page is being written,
    finish it (and its checkpoint) first. A second signal stops immediately.

    The signal is noted before the handler raises: Python runs a handler wherever the
    main thread happens to be, and a KeyboardInterrupt raised inside a finalizer (an
    object's ``__del__``, a generator closed by the garbage collector) is printed as
    "ignored" and dropped. The note still stops the tail at its next pause or page."""

    def __init__(self) -> None:
        self.requested = False
        self._critical = False
        self._old: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        first = not self.requested
        self.requested = True
        if self._critical and first:
            return
        raise KeyboardInterrupt

    def check(self) -> None:
        """Raise KeyboardInterrupt if a signal came (its own raise may have been lost)."""
        if self.requested:
            raise KeyboardInterrupt

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, getattr(signal, "SIGTERM", None)):
            if sig is not None:
                self._old[sig] = signal.signal(sig, self._handler)

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    @contextlib.contextmanager
    def critical(self) -> Iterator[None]:
        self.check()  # a signal already taken: nothing of this page is written
        self._critical = True
        try:
            yield
        finally:
            self._critical = False
        self.check()

    def sleep(self, seconds: float) -> None:
        from nodecli import interrupt

        self.check()
        if seconds > 0:
            # a signal the deadline watchdog's thread takes ends it at once too
            interrupt.wait(seconds)
            self.check()
