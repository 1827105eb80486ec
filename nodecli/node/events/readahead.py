"""The tail's read-ahead: the next page fetched on a worker thread while a quiet sink (a
file, a shipper) takes the page before it (one page ahead at most; see tail.py). Not
for stdout: there a terminal or a pipe's reader sets the pace, and the pipe's ledger
stays as it is."""

from __future__ import annotations

import threading
from collections.abc import Callable

from nodecli.node.events.checkpoint import pause_for_tests
from nodecli.node.events.pages import Page


class ReadAhead:
    """One page fetched on a worker thread while the sink takes the page before it. It
    touches nothing of the tail's state: the page (or what the fetch raised) is handed to
    the main thread, which checks and writes it as it would a page it fetched itself."""

    def __init__(self, fetch: Callable[[], Page], target: str) -> None:
        self.target = target
        self._fetch = fetch
        self._done = threading.Event()
        self._page: Page | None = None
        self._exc: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="nodecli-read-ahead",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._page = self._fetch()
        except BaseException as exc:  # noqa: BLE001 - handed over to the main thread
            self._exc = exc
        finally:
            pause_for_tests("read-ahead")  # the next page is read; not yet handed over
            self._done.set()

    def result(self) -> Page:
        self._done.wait()  # (a signal interrupts the wait: Ctrl-C is not held up)
        if self._exc is not None:
            raise self._exc
        assert self._page is not None
        return self._page

    def abandon(self) -> None:
        """The tail ends without this page: its answer is dropped unread. The request is
        bounded by the client's deadline; the thread ends with it and writes nothing."""
        self._page = None
