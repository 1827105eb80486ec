"""The application object: one per invocation, built by the root group's callback.

It holds the resolved paths, verbosity, colour decision and the terminal writer,
and builds the config store and the rich consoles lazily (so tests that change the
environment see the change, and commands that never print rich output never import
rich).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO, Any

from nodecli.config.paths import Paths
from nodecli.render import (
    Column,
    is_tty,
    render_csv,
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


@dataclass
class Terminal:
    """The one writer. Data goes to stdout; everything else to stderr, gated by -v/-q.

    verbosity: -1 quiet (errors only), 0 normal, 1 verbose (-v), 2 debug (-vv).
    """

    verbosity: int = 0
    no_color: bool = False
    _stdout: IO[str] | None = field(default=None, repr=False)
    _stderr: IO[str] | None = field(default=None, repr=False)

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
        self.out.write(text + end)

    def flush(self) -> None:
        self.out.flush()

    def json(self, obj: Any) -> None:
        render_json(obj, self.out)

    def jsonl(self, rows: Iterable[Any]) -> None:
        render_jsonl(rows, self.out)

    def table(
        self,
        rows: Sequence[dict[str, Any]],
        columns: Sequence[Column],
        fmt: str = "table",
        *,
        title: str | None = None,
    ) -> None:
        """Render rows as table/json/jsonl/csv. JSON formats carry whole rows."""
        if fmt == "json":
            self.json(list(rows))
        elif fmt == "jsonl":
            self.jsonl(rows)
        elif fmt == "csv":
            render_csv(rows, columns, self.out)
        elif self.color_out:
            render_rich_table(rows, columns, self.console, title)
        else:
            render_plain_table(rows, columns, self.out)

    # -- messages (stderr) -------------------------------------------------------

    def _msg(self, prefix: str, text: str, style: str | None) -> None:
        # every message may quote a server or a file: nothing in it drives the terminal
        line = prefix + sanitize_lines(text)
        if self.color_err and style:
            self.err_console.print(line, style=style, markup=False, highlight=False)
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

    def debug(self, text: str, level: int = 1) -> None:
        if self.verbosity >= level:
            self._msg("debug: ", text, "dim")


@dataclass
class App:
    paths: Paths
    term: Terminal

    @cached_property
    def store(self) -> Any:
        from nodecli.config.store import ConfigStore

        return ConfigStore(self.paths)

    @property
    def verbosity(self) -> int:
        return self.term.verbosity
