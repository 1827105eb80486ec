"""``nodecli transfer top`` on a terminal: a full-screen live view of a node's
transfers (curses). The snapshot for scripts is in nodecli.cli.transfers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nodecli.cli.app import App


class Feed:
    """Refreshes the transfers every ``interval`` seconds in a thread of its own, so keys
    stay answered while a slow node is asked; the screen reads the latest snapshot. A
    refresh asks only for what changed (node.transfers.LiveTransfers)."""

    def __init__(self, client: Any, interval: float) -> None:
        self.client, self.interval = client, interval
        self.transfers: list[dict[str, Any]] = []
        self.problem: str | None = None
        self.took = 0.0
        self.version = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="top-feed", daemon=True)

    def stop(self) -> None:
        self._stop.set()

    @contextmanager
    def running(self, term: Any) -> Iterator[Feed]:
        """Refreshing while a full-screen view owns ``term`` (app.Terminal): -v's lines
        wait until the view is left (written there, they would be drawn over it). A
        refresh still in flight then is not waited for (the node may be slow), and
        what it says from then on is not shown: the command's last line stays last."""
        with term.held():
            self.thread.start()
            try:
                yield self
            finally:
                self.stop()
                term.abandon(self.thread)

    def _run(self) -> None:
        from nodecli.errors import NodecliError
        from nodecli.node.transfers import LiveTransfers

        live = LiveTransfers(self.client)
        while True:
            started = time.monotonic()
            try:
                self.transfers = live.refresh()
                self.problem = None
            except NodecliError as exc:
                self.problem = f"{exc.message[:200]} (retrying)"
            except Exception:
                if self._stop.is_set():
                    return
                raise
            self.took = time.monotonic() - started
            self.version += 1
            if self._stop.wait(self.interval):
                return


def run_top(app: App, client: Any, interval: float, label: str) -> None:
    """The live view until q (exit 0) or Ctrl-C (130). Keys: q quits, s cycles the sort,
    f shows only failed transfers."""
    import curses

    from nodecli.render.top import SORTS, refresh_said, top_lines

    feed = Feed(client, interval)
    colour = app.term.color_out

    def main(screen: Any) -> None:
        try:
            curses.curs_set(0)
        except curses.error:
            pass
        screen.timeout(100)
        sort, failed_only, drawn, dirty = 0, False, -1, True
        while True:
            key = screen.getch()
            if key in (ord("q"), ord("Q")):
                return
            if key in (ord("s"), ord("S")):
                sort, dirty = (sort + 1) % len(SORTS), True
            elif key in (ord("f"), ord("F")):
                failed_only, dirty = not failed_only, True
            elif key == curses.KEY_RESIZE:
                dirty = True
            if not dirty and drawn == feed.version:
                continue
            height, width = screen.getmaxyx()
            lines = top_lines(feed.transfers, width=width, height=height,
                              sort=SORTS[sort], failed_only=failed_only, node=label,
                              problem=feed.problem if feed.version else "reading ...")
            screen.erase()
            for row, line in enumerate(lines):
                attr = curses.A_BOLD if colour and row == 0 else curses.A_NORMAL
                try:
                    screen.addstr(row, 0, line, attr)
                except curses.error:  # the bottom-right cell of a tiny window
                    pass
            screen.refresh()
            drawn, dirty = feed.version, False

    with feed.running(app.term):
        curses.wrapper(main)
    app.term.debug(refresh_said(len(feed.transfers), feed.took, last=True))
