"""The one writer (nodecli/cli/app.py's Terminal) as a person reads it: each kind of
message in its words and colour on a terminal, an end the user chose said even with -q,
and the default bound of the messages held while a full-screen view owns the screen."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading

import pytest

from nodecli.cli.app import Terminal
from tests.conftest import REPO_ROOT, reap, subprocess_env


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def colour(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal that takes colour (the suite's NO_COLOR off)."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")


def test_each_message_in_its_colour_on_a_terminal(colour):
    err = Tty()
    term = Terminal(_stdout=io.StringIO(), _stderr=err)
    term.error("bad \x1b[2Jthing", "do this")
    term.warn("careful")
    term.success("done")
    term.info("plain")
    term.stopped("interrupted", "run it again")
    term.verbosity = 1
    term.debug("GET /info")
    assert err.getvalue() == (
        "\x1b[1;31mnodecli: error: bad thing\x1b[0m\n"
        "\x1b[2mhint: do this\x1b[0m\n"
        "\x1b[33mnodecli: warning: careful\x1b[0m\n"
        "\x1b[32mdone\x1b[0m\n"
        "plain\n"
        "nodecli: interrupted\n"
        "\x1b[2mhint: run it again\x1b[0m\n"
        "\x1b[2mdebug: GET /info\x1b[0m\n")


def test_an_end_the_user_chose_is_said_even_when_quiet():
    err = io.StringIO()
    term = Terminal(verbosity=-1, _stdout=io.StringIO(), _stderr=err)
    term.info("not said")
    term.warn("not said")
    term.stopped("interrupted \x1b]0;title\x07after 3 events", "resume: nodecli x")
    term.stopped("aborted")
    assert err.getvalue() == ("nodecli: interrupted after 3 events\n"
                              "hint: resume: nodecli x\n"
                              "nodecli: aborted\n")


def test_data_is_a_line_on_stdout():
    out, err = io.StringIO(), io.StringIO()
    term = Terminal(_stdout=out, _stderr=err)
    term.data()
    term.data("one")
    term.data("two", end="")
    assert out.getvalue() == "\none\ntwo" and err.getvalue() == ""


def test_messages_keep_their_colour_when_held_and_after(colour):
    err = Tty()
    term = Terminal(_stdout=io.StringIO(), _stderr=err)
    with term.held():
        term.warn("while")
    term.abandon(threading.Thread(target=lambda: None))  # another thread: not this one
    term.warn("after")
    assert err.getvalue() == ("\x1b[33mnodecli: warning: while\x1b[0m\n"
                              "\x1b[33mnodecli: warning: after\x1b[0m\n")


def test_a_full_screen_view_holds_2000_messages_by_default():
    err = Tty()
    term = Terminal(no_color=True, _stdout=io.StringIO(), _stderr=err)
    with term.held():
        for i in range(2000):
            term.info(f"m{i}")
    lines = err.getvalue().splitlines()
    assert lines[0] == "m0" and len(lines) == 2000
    err = Tty()
    term = Terminal(no_color=True, _stdout=io.StringIO(), _stderr=err)
    with term.held():
        for i in range(2001):
            term.info(f"m{i}")
    lines = err.getvalue().splitlines()
    assert lines[:2] == ["(1 earlier message not kept)", "m1"] and len(lines) == 2001


def test_jsonl_rows_are_shaped_on_their_way_out():
    from nodecli.render.shape import Shape

    out = io.StringIO()
    term = Terminal(_stdout=out, _stderr=io.StringIO())
    term.shape = Shape.make("json", None, ("id",))
    term.jsonl(iter([{"id": 1}, {"id": 2}]))
    assert out.getvalue() == "1\n2\n"


def test_a_shaped_object_is_read_under_its_items_key():
    from nodecli.render.shape import Shape

    out = io.StringIO()
    term = Terminal(_stdout=out, _stderr=io.StringIO())
    term.shape = Shape.make("json", None, ("id",))
    term.json({"events": [{"id": 1}, {"id": 2}], "next": None}, items="events")
    assert out.getvalue() == "1\n2\n"


def test_a_table_by_default_and_an_empty_one_said_on_stderr():
    from nodecli.render import Column

    columns = [Column("name", "name"), Column("size", "size")]
    out, err = io.StringIO(), io.StringIO()
    term = Terminal(no_color=True, _stdout=out, _stderr=err)
    term.table([{"name": "a", "size": 1}], columns)
    term.table([], columns)
    assert out.getvalue().splitlines() == ["name  size", "a     1"]
    assert err.getvalue() == "nothing to list\n"
    out = io.StringIO()
    term = Terminal(no_color=True, _stdout=out, _stderr=err)
    term.no_headers = True
    term.table([{"name": "a", "size": 1}], columns, "csv")
    assert out.getvalue().splitlines() == ["a,1"]


# --- the live status line ---------------------------------------------------------------

class Screen(Tty):
    """A terminal's stderr: ``encoding`` as the stream says it; each write counted, and
    ``drawn`` set once the status thread has drawn twice on its own."""

    def __init__(self, encoding: str | None = "utf-8") -> None:
        super().__init__()
        self._encoding = encoding
        self.writes = 0
        self.drawn = threading.Event()

    @property
    def encoding(self) -> str | None:  # type: ignore[override]
        return self._encoding

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes >= 8:
            self.drawn.set()
        return super().write(text)


class Bare:
    """A stream with no ``encoding`` at all (a wrapper some programs put on stderr)."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def _status(err, clock: list[float]) -> Terminal:
    term = Terminal(no_color=True, _stdout=io.StringIO(), _stderr=err)
    term.status._clock = lambda: clock[0]
    return term


def test_the_line_is_redrawn_every_tenth_of_a_second_until_woken():
    class Ticks:  # the thread's wait, answered by the test: no time passes
        def __init__(self) -> None:
            self.asked: list[float | None] = []

        def wait(self, timeout: float | None = None) -> bool:
            self.asked.append(timeout)
            return len(self.asked) == 3  # woken at the third wait

        def set(self) -> None:
            pass

        def clear(self) -> None:
            pass

    err = Screen("UTF-8")
    term = _status(err, [0.0])
    ticks = Ticks()
    term.status._wake = ticks
    term.status.show("x")
    thread = term.status._thread
    assert thread is not None
    thread.join(30)
    assert ticks.asked == [0.1, 0.1, 0.1]
    assert err.getvalue().count("⠋ x · 0s") == 3  # shown, then redrawn twice
    term.status.clear()


def test_the_line_shows_frame_text_and_time_since_it_appeared():
    clock = [100.0]
    err = Screen("UTF-8")
    term = _status(err, clock)
    try:
        with term.status.lock:
            term.status.show("op 7: running")
            clock[0] = 101.5
            assert term.status.line() == "⠴ op 7: running · 1s"
            clock[0] = 165.0
            term.status.show("op 7: still running")  # the clock runs from the first
            assert term.status.line() == "⠋ op 7: still running · 1m 5s"
            term.status.show("")
            assert term.status.line() == "⠋  · 1m 5s"
    finally:
        term.status.clear()


@pytest.mark.parametrize(("encoding", "frame"), [
    ("utf8", "⠴"), ("UTF-8", "⠴"), ("ascii", "\\"), (None, "\\"), ("latin-1", "\\")])
def test_braille_frames_only_on_a_utf8_terminal(encoding, frame):
    clock = [0.0]
    term = _status(Screen(encoding), clock)
    try:
        with term.status.lock:
            term.status.show("x")
            clock[0] = 1.5
            assert term.status.line() == f"{frame} x · 1s"
    finally:
        term.status.clear()


def test_a_stream_without_an_encoding_gets_ascii_frames():
    err = Bare()
    term = _status(err, [0.0])
    try:
        with term.status.lock:
            term.status.show("x")
            assert term.status.line() == "| x · 0s"
    finally:
        term.status.clear()


def test_the_lines_above_are_cut_and_erased_with_the_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "12")
    err = Screen()
    term = _status(err, [0.0])
    try:
        with term.status.lock:  # (its thread waits: what is written here is all ours)
            term.status.show("main line that is long", above=["a" * 30, "b"])
            start = len(err.getvalue())
            term.status.redraw()
            assert err.getvalue()[start:] == (
                "\r\x1b[K\x1b[1A\x1b[K\x1b[1A\x1b[K"  # the three lines drawn, erased
                "\r\x1b[K" "aaaaaaaa…\n" "b\n" "⠋ main l…")
            start = len(err.getvalue())
            term.warn("w1")
            term.warn("w2")  # nothing on the screen any more: nothing to erase
            assert err.getvalue()[start:] == (
                "\r\x1b[K\x1b[1A\x1b[K\x1b[1A\x1b[K" "nodecli: warning: w1\n"
                "nodecli: warning: w2\n")
    finally:
        term.status.clear()


def test_the_width_is_the_terminal_behind_stderr(monkeypatch):
    import fcntl
    import struct
    import termios

    monkeypatch.delenv("COLUMNS")
    leader, follower = os.openpty()
    try:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 14, 0, 0))

        class PtyScreen(Screen):
            def fileno(self) -> int:
                return follower

        err = PtyScreen()
        term = _status(err, [0.0])
        try:
            with term.status.lock:
                term.status.show("a long main line", above=["b" * 20])
                assert term.status.line() == "⠋ a long m…"
                start = len(err.getvalue())
                term.status.redraw()
                assert err.getvalue()[start:].endswith(
                    "\r\x1b[K" "bbbbbbbbbb…\n" "⠋ a long m…")
        finally:
            term.status.clear()
    finally:
        os.close(leader)
        os.close(follower)


def test_the_line_is_redrawn_by_its_thread_until_cleared():
    err = Screen()
    term = _status(err, [0.0])
    term.status.show("waiting")
    try:
        # a ceiling for a stuck thread, not a guess at how long it takes
        assert err.drawn.wait(60), "the status line was never redrawn"
    finally:
        term.status.clear()
    assert not term.status.active
    assert err.getvalue().endswith("\r\x1b[K")


def test_off_a_terminal_a_status_warning_is_a_warning():
    err = io.StringIO()
    term = Terminal(no_color=True, _stdout=io.StringIO(), _stderr=err)
    term.status.show("lost (live)", plain="connection lost", warn=True)
    term.status.show("lost (live)", plain="connection lost", warn=True)
    term.status.show("back (live)", plain="connection back")
    assert err.getvalue() == "nodecli: warning: connection lost\nconnection back\n"


def test_a_program_that_ends_with_its_line_up_ends(tmp_path):
    """The status thread is a daemon: a command that never clears its line (an error
    on the way out) does not keep the process alive."""
    script = (
        "import io\n"
        "from nodecli.cli.app import Terminal\n"
        "class Tty(io.StringIO):\n"
        "    def isatty(self):\n"
        "        return True\n"
        "term = Terminal(_stdout=io.StringIO(), _stderr=Tty())\n"
        "term.status.show('x')\n"
        "print('shown', flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], env=subprocess_env(),
                            cwd=str(REPO_ROOT), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "shown\n"
        assert proc.wait(timeout=60) == 0
    finally:
        reap(proc)


# --- a table on a terminal --------------------------------------------------------------

def _table_columns():
    from nodecli.render import Column

    return [Column("name", "name"), Column("size", "size", drop=1),
            Column("kind", "kind", drop=2), Column("note", "note", whole=True)]


ROW = {"name": "alpha", "size": 12, "kind": "k", "note": "a note of twenty-one"}


@pytest.mark.parametrize("coloured", [True, False])
def test_a_narrow_terminal_leaves_out_the_low_value_columns_and_says_so(
        monkeypatch, coloured):
    monkeypatch.setenv("COLUMNS", "30")
    if coloured:
        monkeypatch.delenv("NO_COLOR")
        monkeypatch.setenv("TERM", "xterm")
    bold = (lambda t: f"\x1b[1m{t}\x1b[0m") if coloured else (lambda t: t)
    out, err = Tty(), io.StringIO()
    Terminal(_stdout=out, _stderr=err).table([ROW], _table_columns(), "table", title="T")
    assert err.getvalue() == "left out to fit the terminal: size, kind (-o wide shows them)\n"
    if coloured:
        assert out.getvalue() == (
            "\x1b[3m             T             \x1b[0m\n"
            + bold("name ") + bold(" ") + bold(" ") + bold("note                ") + "\n"
            "alpha  a note of twenty-one\n")
    else:
        assert out.getvalue() == "name   note\nalpha  a note of twenty-one\n"
    out, err = Tty(), io.StringIO()
    Terminal(_stdout=out, _stderr=err).table([ROW], _table_columns(), "wide", title="T")
    assert err.getvalue() == ""
    assert out.getvalue().splitlines()[-1] == "alpha  12    k     a note of twenty-one"


def test_a_table_fits_the_terminal_behind_stdout_not_stderrs(monkeypatch):
    import fcntl
    import struct
    import termios

    monkeypatch.delenv("COLUMNS", raising=False)
    ptys = [os.openpty(), os.openpty()]
    try:
        for (_, follower), cols in zip(ptys, (30, 200), strict=True):
            fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        out = os.fdopen(os.dup(ptys[0][1]), "w", encoding="utf-8")
        err = os.fdopen(os.dup(ptys[1][1]), "w", encoding="utf-8")
        monkeypatch.setattr(sys, "stderr", err)  # the process's stderr is as wide too
        said = io.StringIO()
        with out, err:
            Terminal(no_color=True, _stdout=out, _stderr=said).table(
                [ROW], _table_columns(), "table")
        assert said.getvalue() == (
            "left out to fit the terminal: size, kind (-o wide shows them)\n")
    finally:
        for pair in ptys:
            for fd in pair:
                os.close(fd)


def test_a_coloured_table_cuts_free_text_and_can_go_without_headings(monkeypatch, colour):
    from nodecli.render import Column

    monkeypatch.setenv("COLUMNS", "30")
    columns = [Column("name", "name"), Column("note", "note")]
    row = {"name": "alpha", "note": "a long note that does not fit at all"}
    out, err = Tty(), io.StringIO()
    term = Terminal(_stdout=out, _stderr=err)
    term.no_headers = True
    term.table([row], columns)
    assert out.getvalue() == "alpha  a long note that does …\n"
    assert err.getvalue() == ""  # no column left out: nothing said


def test_a_coloured_message_is_never_read_as_markup_nor_broken(monkeypatch, colour):
    monkeypatch.setenv("COLUMNS", "30")
    err = Tty()
    Terminal(_stdout=io.StringIO(), _stderr=err).warn("[bold]x[/bold] 123 " + "y" * 40)
    assert err.getvalue() == ("\x1b[33mnodecli: warning: [bold]x[/bold] 123 " + "y" * 40
                              + "\x1b[0m\n")


def test_an_object_is_cut_to_the_terminal_unless_asked_whole(monkeypatch):
    monkeypatch.setenv("COLUMNS", "20")
    pairs = [("name", "x" * 30), ("id", 7)]
    out = Tty()
    Terminal(no_color=True, _stdout=out, _stderr=io.StringIO()).fields(pairs)
    assert out.getvalue() == "name  " + "x" * 13 + "…\nid    7\n"
    out = Tty()
    Terminal(no_color=True, _stdout=out, _stderr=io.StringIO()).fields(pairs, whole=True)
    assert out.getvalue() == "name  " + "x" * 30 + "\nid    7\n"


def test_output_on_the_terminal_takes_the_status_line_off_first():
    out, err = Tty(), Screen()
    term = _status(err, [0.0])
    term._stdout = out  # stdout on the terminal too
    try:
        with term.status.lock:
            term.status.show("working")
            for write in (lambda: term.data("line"), lambda: term.fields([("a", 1)])):
                start = len(err.getvalue())
                write()
                assert err.getvalue()[start:] == "\r\x1b[K"
                term.status.redraw()
    finally:
        term.status.clear()
    assert out.getvalue() == "line\na  1\n"


@pytest.mark.parametrize(("env", "flag", "wanted"), [
    ({"TERM": "xterm"}, False, True),
    ({"TERM": "xterm"}, True, False),
    ({"TERM": "xterm", "NO_COLOR": "1"}, False, False),
    ({"TERM": "xterm", "no_color": "1"}, False, True),  # (variables have a case)
    ({"TERM": "dumb"}, False, False),
    ({"term": "dumb", "TERM": "xterm"}, False, True),
])
def test_colour_only_on_a_terminal_that_takes_it(monkeypatch, env, flag, wanted):
    from nodecli.cli.app import color_wanted

    monkeypatch.delenv("NO_COLOR")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert color_wanted(flag, Tty()) is wanted
    assert color_wanted(flag, io.StringIO()) is False
