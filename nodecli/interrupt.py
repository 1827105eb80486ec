"""Waiting on the main thread for SIGINT or SIGTERM, whichever thread the kernel hands
the signal to.

A signal sent to the process is delivered to any one of its threads that does not block
it. Python's C-level handler then only notes it; the Python handler (the one cli.main
installs for SIGINT and SIGTERM raises KeyboardInterrupt) runs in the main thread when
that thread next runs bytecode. A main thread asleep in C (``time.sleep``, a lock's timed
wait) is woken only if the signal was delivered to it: delivered to another thread (an
asyncio loop, a probe, the deadline watchdog, a server's), it stays asleep to the end
of its wait, and the command with it. The C-level handler also writes the signal's
number to the wakeup descriptor (:func:`signal.set_wakeup_fd`) from whichever thread it
runs in, so :func:`wait` sleeps on that descriptor instead.

The handler :func:`install` sets (cli.main does, for the process) notes the signal
before it raises. Python runs it wherever the main thread is at that moment; if that is
inside a finalizer (an object's ``__del__``, a generator the garbage collector closes,
as an HTTP response stream is), the KeyboardInterrupt is printed as "ignored" and
dropped, and a long-running command would go on. :func:`wait` and :func:`check` raise
it again from the note, so a command stops at its next pause at the latest."""

from __future__ import annotations

import time
from typing import Any

# the signal taken (SIGINT or SIGTERM), for the rest of the process: every Ctrl-C ends
# the command, whoever catches its KeyboardInterrupt first
_taken: int | None = None


def _on_signal(signum: int, frame: Any) -> None:
    global _taken
    _taken = signum
    raise KeyboardInterrupt


def install() -> None:
    """SIGINT and SIGTERM note themselves, then raise KeyboardInterrupt (on the main
    thread; elsewhere Python allows no handler)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGINT", "SIGTERM"):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, _on_signal)


def check() -> None:
    """Raise KeyboardInterrupt if a signal was taken (its own raise may have been lost)."""
    if _taken is not None:
        raise KeyboardInterrupt


def wait(seconds: float | None = None) -> None:
    """Sleep on the main thread for ``seconds`` (``None``: until a signal).

    A signal with a Python handler ends the sleep at once, whichever thread took it,
    and its handler runs: SIGINT and SIGTERM raise KeyboardInterrupt from here. Another
    handled signal's handler runs and the sleep goes on to its end. A signal taken
    earlier (:func:`check`) raises at once. Off the main
    thread (where no handler runs) it is a plain sleep."""
    import select
    import signal
    import socket
    import threading

    if threading.current_thread() is not threading.main_thread():
        threading.Event().wait(seconds)
        return
    check()
    ends = None if seconds is None else time.monotonic() + seconds
    receiver, sender = socket.socketpair()
    try:
        sender.setblocking(False)  # (the C handler must never block on it)
        previous = signal.set_wakeup_fd(sender.fileno(), warn_on_full_buffer=False)
        try:
            # a signal taken before the descriptor was set is already noted for the
            # main thread, whose handler runs at this loop's next bytecode
            while True:
                left = None if ends is None else ends - time.monotonic()
                if left is not None and left <= 0:
                    return
                if select.select([receiver], [], [], left)[0]:
                    receiver.recv(256)  # (the handlers run before the next bytecode)
                    # (and if the collector ran a finalizer just then, inside it)
                    check()
        finally:
            signal.set_wakeup_fd(previous)
    finally:
        receiver.close()
        sender.close()
