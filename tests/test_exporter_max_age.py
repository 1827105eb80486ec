"""``nodecli exporter --max-age``: a scrape finding the last refresh done less than
max-age ago is answered at once from it (and starts the next refresh in the
background); one finding it max-age old or older (or none) waits for a refresh. The
exporter runs as a real process over real sockets; the snapshot's age is read on a
clock the test sets (NODECLI_TEST_SNAPSHOT_CLOCK), and the exporter says in
NODECLI_TEST_SCRAPE_NOTE whether each scrape waited ("waiting"), was answered from the
snapshot ("snapshot"), and when each refresh is done ("refreshed"): no timing window."""

from __future__ import annotations

import time
from pathlib import Path

from tests.test_exporter_snapshot import Exporter, _add, _events

#: 30 - 1/1024: just under 30, exact in binary (so are the sums below)
JUST_UNDER = 29.9990234375


class Clocked(Exporter):
    """An exporter whose snapshot age is read on ``clock`` (a file the test writes)."""

    def __init__(self, home: Path, tmp: Path, monkeypatch, *args: str) -> None:
        self.clock, self.note = tmp / "clock", tmp / "note"
        self.set_clock(1000.0)
        self.note.write_text("")
        # (the child's environment is this one plus NODECLI_HOME: tests.conftest)
        monkeypatch.setenv("NODECLI_TEST_SNAPSHOT_CLOCK", str(self.clock))
        super().__init__(home, *args, note=self.note)

    def set_clock(self, seconds: float) -> None:
        self.clock.write_text(repr(seconds))

    def notes(self) -> list[str]:
        return self.note.read_text().splitlines()

    def refreshed(self, n: int) -> None:
        """Wait (on the note, not a timer) until ``n`` refreshes are done."""
        deadline = time.monotonic() + 60
        while self.notes().count("refreshed") < n:
            assert time.monotonic() < deadline and self.proc.poll() is None, self.notes()
            time.sleep(0.02)


def _said(exporter: Clocked, since: int) -> list[str]:
    """What scrapes said after the first ``since`` notes (refreshes left out)."""
    return [n for n in exporter.notes()[since:] if n != "refreshed"]


def test_max_age_boundaries_and_the_background_refresh(invoke, emulator, home, log,
                                                       tmp_path, monkeypatch):
    _add(invoke, "emu", emulator.url)
    exporter = Clocked(home, tmp_path, monkeypatch, "--all-nodes", "--node-timeout", "30",
                       "--max-age", "30")
    try:
        exporter.refreshed(1)  # the refresh at start-up, done at 1000
        # exactly max-age old: the scrape waits for a new refresh
        exporter.set_clock(1030.0)
        mark = len(exporter.notes())
        first = _events(exporter.scrape())
        assert _said(exporter, mark) == ["waiting"]
        assert sum(first.values()) == 0
        exporter.refreshed(2)  # (already: the scrape was answered after it)
        # done at 1030; events made now are not in that snapshot
        log.append({"user_id": "a", "types": ["file.created"], "data": {}})
        log.append({"user_id": "a", "types": ["file.created"], "data": {}})
        # just under max-age: answered at once with the first scrape's values...
        exporter.set_clock(1030.0 + JUST_UNDER)
        mark = len(exporter.notes())
        second = _events(exporter.scrape())
        assert _said(exporter, mark) == ["snapshot"]
        assert second == first
        # ...and a refresh started in the background, which the next scrape sees
        exporter.refreshed(3)  # done at 1030 + JUST_UNDER
        mark = len(exporter.notes())
        third = _events(exporter.scrape())
        assert _said(exporter, mark) == ["snapshot"]
        assert third == {"file.created": 2}
        exporter.refreshed(4)  # the one that scrape started
        # max-age after the last refresh again: waits
        exporter.set_clock(1030.0 + JUST_UNDER + 30.0)
        mark = len(exporter.notes())
        exporter.scrape()
        assert _said(exporter, mark) == ["waiting"]
    finally:
        code, stderr = exporter.stop()
    assert code == 130 and "Traceback" not in stderr, stderr


def test_max_age_0_every_scrape_waits(invoke, emulator, home, tmp_path, monkeypatch):
    _add(invoke, "emu", emulator.url)
    exporter = Clocked(home, tmp_path, monkeypatch, "--all-nodes", "--node-timeout", "30",
                       "--max-age", "0")
    try:
        exporter.refreshed(1)
        mark = len(exporter.notes())
        exporter.scrape()  # the snapshot is 0 s old: not younger than 0
        exporter.scrape()
        assert _said(exporter, mark) == ["waiting", "waiting"]
    finally:
        code, stderr = exporter.stop()
    assert code == 130 and "Traceback" not in stderr, stderr
