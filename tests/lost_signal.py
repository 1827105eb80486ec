"""A signal whose KeyboardInterrupt is lost, as Python loses one raised in a finalizer.

Python runs a signal's handler wherever the main thread is at that moment. When that is
inside a finalizer (an object's ``__del__``, a generator the garbage collector closes,
as an HTTP response stream is), the handler's KeyboardInterrupt is printed as "ignored"
and dropped. Tests that use this filter pytest's warning about the unraisable exception."""

from __future__ import annotations

import signal
import threading


def signal_main_thread(sig: int = signal.SIGINT) -> None:
    """Send ``sig`` to the main thread (from the main thread: its handler runs at the
    caller's next bytecode)."""
    signal.pthread_kill(threading.main_thread().ident or 0, sig)


class _SwallowsItsSignal:
    """An object whose finalizer runs when the signal's handler does, as a library's
    finalizer might: the KeyboardInterrupt raised there goes nowhere."""

    ran = False
    sig = signal.SIGINT

    def __del__(self) -> None:
        signal_main_thread(type(self).sig)
        for _ in range(1000):  # (bytecode: the handler runs here, inside __del__)
            pass
        type(self).ran = True


def swallow_one_signal(sig: int = signal.SIGINT) -> None:
    """Deliver ``sig`` to the main thread inside a finalizer, where its handler's raise
    is lost (the handler itself has run)."""
    _SwallowsItsSignal.ran = False
    _SwallowsItsSignal.sig = sig
    _SwallowsItsSignal()  # dropped at once: its __del__ takes the signal
    assert _SwallowsItsSignal.ran is False  # the interrupt ended __del__ (and was lost)
