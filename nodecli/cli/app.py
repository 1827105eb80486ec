"""The application object: one per invocation, built by the root group's callback.

It holds the resolved paths, verbosity, colour decision and the terminal writer,
and builds the config store and the rich consoles lazily (so tests that change the
environment see the change, and commands that never print rich output never import
rich).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import IO, Any

from nodecli.config.paths import Paths
from nodecli.errors import counted
from nodecli.render import (
    Column,
    is_tty,
    render_csv,
    render_fields,
    render_json,
    render_jsonl,
    render_plain_table,
    render_rich_table,
    sanitize,
    sanitize_lines,
)


def color_wanted(no_color_flag: bool, stream: IO[str]) -> bool:
    """Colour only on a TTY, never with --no-color or a non-empty NO_COLOR."""
    if no_color_flag or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    return is_tty(stream)


class _Gate:
    """The messages held while a full-screen view owns the terminal, and the threads
    whose messages are no longer shown (Terminal.held, Terminal.abandon)."""

    def __init__(self) -> None:
        import threading
        from collections import deque

        self.lock = threading.RLock()  # a message written may say another (a warning)
        self.current = threading.current_thread
        self.held: deque[tuple[str, str, str | None]] | None = None
        self.said = 0  # messages said while held, the ones not kept included
        self.abandoned: set[Any] = set()


class LiveStatus:
    """The one live status line, on stderr: spinner, text and the time since it appeared.

    On an interactive stderr a small thread redraws ``\\r<spinner> <text> · <elapsed>``
    ten times a second, cut to the terminal's width so it never wraps (a wrapped line
    leaves residue that ``\\r\\x1b[K`` cannot erase). Anything else the Terminal writes
    first erases the line, which comes back at the next redraw. Elsewhere (a pipe, a log
    file) there is no live line: ``show(text, plain=...)`` writes ``plain`` as a message
    when it changed, so logs get status changes, not redraws. Quiet (-q) shows nothing.
    """

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
    ASCII_FRAMES = "|/-\\"

    def __init__(self, term: Terminal) -> None:
        import threading
        import time

        self._term = term
        self._clock = time.monotonic
        self.lock = threading.RLock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._text: str | None = None
        self._since = 0.0
        self._drawn = 0  # lines on the screen (the spinner line and those above it)
        self._above: list[str] = []
        self._last_plain: str | None = None

    @property
    def live(self) -> bool:
        return self._term.stderr_is_tty and self._term.verbosity >= 0

    @property
    def active(self) -> bool:
        return self._text is not None

    def show(self, text: str, *, plain: str | None = None, warn: bool = False,
             above: Sequence[str] = ()) -> None:
        """Set the live line to ``text`` (the clock starts when it first appears), with
        the lines ``above`` it (one per watched thing); off a terminal write ``plain`` (a
        warning with ``warn``) if it differs from the last."""
        if not self.live:
            if plain is not None and plain != self._last_plain:
                self._last_plain = plain
                (self._term.warn if warn else self._term.info)(plain)
            return
        with self.lock:
            if self._text is None:
                self._since = self._clock()
            self._text = text
            self._above = list(above)
            if self._thread is None:
                import threading

                self._wake.clear()
                self._thread = threading.Thread(target=self._run, name="nodecli-status",
                                                daemon=True)
                self._thread.start()
        self.redraw()

    def clear(self) -> None:
        """Stop the live line and erase it (what it said is gone)."""
        with self.lock:
            self._text = None
            self._last_plain = None
            thread, self._thread = self._thread, None
            self._wake.set()
            self.erase()
        if thread is not None:
            thread.join(timeout=1)

    def erase(self) -> None:
        """Take the lines off the screen for a moment (the next redraw puts them back)."""
        with self.lock:
            if self._drawn:
                err = self._term.err
                err.write("\r\x1b[K" + "\x1b[1A\x1b[K" * (self._drawn - 1))
                err.flush()
                self._drawn = 0

    def line(self) -> str:
        from nodecli.render import fit_line, sanitize, terminal_columns
        from nodecli.timeparse import describe_delta

        err = self._term.err
        utf8 = (getattr(err, "encoding", "") or "").lower().replace("-", "") == "utf8"
        frames = self.FRAMES if utf8 else self.ASCII_FRAMES
        elapsed = self._clock() - self._since
        frame = frames[int(elapsed * 10) % len(frames)]
        text = f"{frame} {sanitize(self._text or '')} · {describe_delta(elapsed)}"
        # two columns to spare: the terminal echoes Ctrl-C as "^C" after the line, and a
        # line that wraps there cannot be erased any more
        return fit_line(text, terminal_columns(err) - 2)

    def redraw(self) -> None:
        with self.lock:
            if self._text is None:
                return
            from nodecli.render import fit_line, terminal_columns

            self.erase()
            err = self._term.err
            width = terminal_columns(err) - 2
            above = "".join(fit_line(text, width) + "\n" for text in self._above)
            err.write("\r\x1b[K" + above + self.line())
            err.flush()
            self._drawn = len(self._above) + 1

    def _run(self) -> None:
        while not self._wake.wait(0.1):
            try:
                self.redraw()
            except (OSError, ValueError):  # stderr went away: the line is not worth a crash
                return


class Terminal:
    """The one writer. Data goes to stdout; everything else to stderr, gated by -v/-q.

    verbosity: -1 quiet (errors only), 0 normal, 1 verbose (-v), 2 debug (-vv).
    ``_stdout``/``_stderr`` replace the process's streams (tests).
    (A plain class: ``@dataclass`` generated code at every start of every command.)
    """

    def __init__(self, verbosity: int = 0, no_color: bool = False,
                 _stdout: IO[str] | None = None, _stderr: IO[str] | None = None) -> None:
        self.verbosity = verbosity
        self.no_color = no_color
        self._stdout = _stdout
        self._stderr = _stderr
        # --query/--field/-o yaml|raw|columns= (nodecli.render.shape): the JSON form a
        # command prints is shaped on its way out; --no-headers for tables and csv
        self.shape: Any = None
        self.no_headers = False
        # what messages pass while a full-screen view owns the terminal or a thread was
        # left running (held, abandon): made by the first of them, so that the
        # commands that need neither never import threading
        self._gate: _Gate | None = None

    def __repr__(self) -> str:
        return f"Terminal(verbosity={self.verbosity!r}, no_color={self.no_color!r})"

    @property
    def out(self) -> IO[str]:
        return self._stdout or sys.stdout

    @property
    def err(self) -> IO[str]:
        return self._stderr or sys.stderr

    @property
    def stdout_is_tty(self) -> bool:
        return is_tty(self.out)

    @property
    def stderr_is_tty(self) -> bool:
        return is_tty(self.err)

    @property
    def width(self) -> int | None:
        """The width of the terminal on stdout; None when stdout is not a terminal
        (a pipe or a file gets every line whole)."""
        if not self.stdout_is_tty:
            return None
        from nodecli.render import terminal_columns

        return terminal_columns(self.out)

    @property
    def stdin_is_tty(self) -> bool:
        return is_tty(sys.stdin)

    @property
    def interactive(self) -> bool:
        """True when prompts and spinners make sense: stdin and stderr are terminals."""
        return self.stdin_is_tty and self.stderr_is_tty

    @cached_property
    def color_out(self) -> bool:
        return color_wanted(self.no_color, self.out)

    @cached_property
    def color_err(self) -> bool:
        return color_wanted(self.no_color, self.err)

    @cached_property
    def status(self) -> LiveStatus:
        """The one live status line (see :class:`LiveStatus`)."""
        return LiveStatus(self)

    @contextmanager
    def _above_status(self, stream: IO[str]) -> Iterator[None]:
        """Write to ``stream`` with a live status line off the screen (it returns at its
        next redraw); the line's lock keeps its thread from drawing in between."""
        status = self.__dict__.get("status")
        if status is None or not status.active or not (stream is self.err or is_tty(stream)):
            yield
            return
        with status.lock:
            status.erase()
            yield

    @cached_property
    def console(self) -> Any:
        """rich Console on stdout (built on first use, not at import)."""
        from rich.console import Console

        return Console(file=self.out, no_color=not self.color_out, highlight=False,
                       force_terminal=self.color_out or None)

    @cached_property
    def err_console(self) -> Any:
        from rich.console import Console

        return Console(file=self.err, no_color=not self.color_err, highlight=False,
                       force_terminal=self.color_err or None)

    # -- data (stdout) -----------------------------------------------------------

    def data(self, text: str = "", *, end: str = "\n") -> None:
        with self._above_status(self.out):
            self.out.write(text + end)

    def flush(self) -> None:
        self.out.flush()

    def fields(self, pairs: Sequence[tuple[str, Any]], *, whole: bool = False) -> None:
        """One object for reading: aligned ``field  value`` lines (docs/reference.md,
        "Output"), each value cut with '…' to a terminal's width unless ``whole``."""
        width = None if whole else self.width
        with self._above_status(self.out):
            render_fields(pairs, self.out, width)

    def json(self, obj: Any, *, items: str | None = None) -> None:
        """``obj`` as JSON, or shaped (``items``: the key under which an object holds
        the list this command lists, for ``--field`` and ``-o columns=``)."""
        if self.shape is not None:
            self.shape.write(obj, self.out, items)
            return
        render_json(obj, self.out)

    def jsonl(self, rows: Iterable[Any]) -> None:
        if self.shape is not None:
            self.shape.write(list(rows), self.out)
            return
        render_jsonl(rows, self.out)

    def table(
        self,
        rows: Iterable[dict[str, Any]],
        columns: Sequence[Column],
        fmt: str = "table",
        *,
        title: str | None = None,
        empty: str = "nothing to list",
    ) -> None:
        """Render rows as table/json/jsonl/csv. JSON formats carry whole rows.

        ``table`` on a terminal leaves out the low-value columns that do not fit (and
        says so); ``wide`` shows every column. No rows: ``empty`` on stderr for a table,
        every list the same way (json ``[]``, csv its header, jsonl nothing). ``jsonl``
        and ``csv`` write each row as it comes: rows given as an iterator are never all
        held (a table needs every width, json is one document)."""
        if fmt == "jsonl":
            self.jsonl(rows)
            return
        if fmt == "csv":
            render_csv(rows, columns, self.out, headers=not self.no_headers)
            return
        rows = rows if isinstance(rows, Sequence) else list(rows)
        if not rows and fmt in ("table", "wide"):
            self.info(empty)
            return
        caps: dict[str, int] | None = None
        if fmt == "table" and self.stdout_is_tty and rows:
            from nodecli.render import terminal_columns
            from nodecli.render.table import fit_columns

            shown, caps = fit_columns(rows, columns, terminal_columns(self.out))
            if len(shown) < len(columns):
                left = ", ".join(c.heading for c in columns if c not in shown)
                self.info(f"left out to fit the terminal: {left} (-o wide shows them)")
                columns = shown
        if fmt == "json":
            self.json(rows)  # (a sequence: rows made on demand stay so)
        elif self.color_out:  # (table or wide)
            render_rich_table(rows, columns, self.console, title,
                              headers=not self.no_headers, caps=caps, wide=fmt == "wide")
        else:
            render_plain_table(rows, columns, self.out, caps, headers=not self.no_headers)

    # -- messages (stderr) -------------------------------------------------------

    def _gated(self) -> _Gate:
        if self._gate is None:
            self._gate = _Gate()
        return self._gate

    @contextmanager
    def held(self, keep: int = 2000) -> Iterator[None]:
        """Messages for stderr wait while a full-screen view owns the terminal (written
        there, they would be drawn over it and scroll it), then come out in order: the
        last ``keep`` of them, after a line saying how many earlier ones were not kept.
        Only when stderr is a terminal: a file or a pipe gets each line when it is said."""
        if not self.stderr_is_tty:
            yield
            return
        from collections import deque

        gate = self._gated()
        with gate.lock:
            gate.held, gate.said = deque(maxlen=keep), 0
        try:
            yield
        finally:
            # under the lock: a thread's next line waits until the held ones are out
            with gate.lock:
                lines, said, gate.held = gate.held or (), gate.said, None
                if said > len(lines):
                    self._write("", f"({counted(said - len(lines), 'earlier message')} "
                                "not kept)", "dim")
                for line in lines:
                    self._write(*line)

    def abandon(self, thread: Any) -> None:
        """What ``thread`` says from now on is not shown: it was left running, its work no
        longer waited for (a refresh in flight when top's screen is left), and its lines
        would come after the command's last word."""
        gate = self._gated()
        with gate.lock:
            gate.abandoned.add(thread)

    def _msg(self, prefix: str, text: str, style: str | None) -> None:
        gate = self._gate
        if gate is None:
            self._write(prefix, text, style)
            return
        with gate.lock:
            if gate.abandoned and gate.current() in gate.abandoned:
                return
            if gate.held is not None:
                gate.said += 1
                gate.held.append((prefix, text, style))
                return
            self._write(prefix, text, style)

    def _write(self, prefix: str, text: str, style: str | None) -> None:
        # every message may quote a server or a file: nothing in it drives the terminal
        line = prefix + sanitize_lines(text)
        with self._above_status(self.err):
            if self.color_err and style:
                # soft_wrap: the terminal wraps a long message; rich must not break it
                # with newlines (a path cut in two cannot be pasted)
                self.err_console.print(line, style=style, markup=False, highlight=False,
                                       soft_wrap=True)
            else:
                self.err.write(line + "\n")
                self.err.flush()

    def info(self, text: str) -> None:
        if self.verbosity >= 0:
            self._msg("", text, None)

    def success(self, text: str) -> None:
        if self.verbosity >= 0:
            self._msg("", text, "green")

    def warn(self, text: str) -> None:
        if self.verbosity >= 0:
            self._msg("nodecli: warning: ", text, "yellow")

    def error(self, text: str, hint: str | None = None) -> None:
        self._msg("nodecli: error: ", sanitize(text), "bold red")
        if hint:
            self._msg("hint: ", hint, "dim")

    def stopped(self, text: str, hint: str | None = None) -> None:
        """An end the user chose (interrupted, aborted): said even with -q, no error:."""
        self._msg("nodecli: ", sanitize(text), None)
        if hint:
            self._msg("hint: ", hint, "dim")

    def debug(self, text: str, level: int = 1) -> None:
        if self.verbosity >= level:
            self._msg("debug: ", text, "dim")


class App:
    """What every command gets: the resolved paths and the terminal writer."""

    def __init__(self, paths: Paths, term: Terminal) -> None:
        self.paths = paths
        self.term = term

    @cached_property
    def budget(self) -> Any:
        """The command's deadline (--deadline): every client it opens shares it; a
        following command calls its ``follow()`` (nodecli.http.deadline.Budget)."""
        from nodecli.http.deadline import Budget

        return Budget()

    def __repr__(self) -> str:
        return f"App(paths={self.paths!r}, term={self.term!r})"

    @cached_property
    def store(self) -> Any:
        from nodecli.config.store import ConfigStore

        return ConfigStore(self.paths)

    @property
    def verbosity(self) -> int:
        return self.term.verbosity
