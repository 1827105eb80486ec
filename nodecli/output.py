"""Renderers for command results: table, json, jsonl, csv.

Rows are plain dicts; a column list says which keys appear in tables/CSV and with
which heading. JSON/JSONL carry the full dicts: their field names are a stable,
documented interface. Tables are plain aligned text when the output is not a
colour terminal (no rich import on that path: local commands must start fast) and
a rich table on a colour terminal. Every string headed for a terminal is passed
through :func:`sanitize` so a hostile server cannot drive the user's terminal.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

FORMATS = ("table", "json", "csv")
STREAM_FORMATS = ("table", "json", "jsonl", "csv")

# C0 and C1 controls (except TAB handled below), DEL, and ANSI escape sequences.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)?|\x1b.")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def sanitize(value: Any) -> str:
    """Printable text for a terminal: escape sequences removed, controls shown as '?'."""
    text = value if isinstance(value, str) else str(value)
    text = _ANSI.sub("", text)
    return _CONTROL.sub("?", text.replace("\t", " "))


@dataclass(frozen=True)
class Column:
    key: str
    heading: str
    justify: str = "left"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(sanitize(v) for v in value)
    if isinstance(value, dict):
        import json

        return sanitize(json.dumps(value, separators=(",", ":")))
    return sanitize(value)


def render_json(data: Any, out: IO[str]) -> None:
    import json

    # One write of the whole document: json.dump would issue a write per token (hundreds
    # of thousands for a 10,000-user list), which costs more than the encoding itself.
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def render_jsonl(rows: Iterable[Any], out: IO[str]) -> None:
    import json

    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        out.write("\n")
        out.flush()


def render_csv(rows: Sequence[dict[str, Any]], columns: Sequence[Column], out: IO[str]) -> None:
    import csv

    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.key for c in columns])
    for row in rows:
        writer.writerow([_cell(row.get(c.key)) for c in columns])


def render_plain_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], out: IO[str]
) -> None:
    cells = [[_cell(r.get(c.key)) for c in columns] for r in rows]
    widths = [len(c.heading) for c in columns]
    for line in cells:
        for i, v in enumerate(line):
            widths[i] = max(widths[i], len(v))

    def fmt(values: Sequence[str]) -> str:
        parts = []
        for i, (v, c) in enumerate(zip(values, columns, strict=True)):
            last = i == len(columns) - 1
            if c.justify == "right":
                parts.append(v.rjust(widths[i]))
            else:
                parts.append(v if last else v.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    out.write(fmt([c.heading for c in columns]) + "\n")
    for line in cells:
        out.write(fmt(line) + "\n")


def render_rich_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], console: Any, title: str | None
) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, header_style="bold", box=None, pad_edge=False)
    for c in columns:
        table.add_column(c.heading, justify=c.justify, overflow="fold")  # type: ignore[arg-type]
    for r in rows:
        table.add_row(*(Text(_cell(r.get(c.key))) for c in columns))
    console.print(table)


def is_tty(stream: IO[str] | None = None) -> bool:
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def display_width(text: str) -> int:
    """Terminal columns of ``text`` (wide East Asian characters count 2, combining 0)."""
    import unicodedata

    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def fit_line(text: str, columns: int) -> str:
    """``text`` as one line that fits in ``columns - 1`` terminal columns.

    A live status line rewritten with ``\\r`` must never wrap: a wrapped line leaves
    residue that ``\\r\\x1b[K`` cannot erase. Control characters become spaces; a cut
    line ends with '…'. The last column stays free (some terminals wrap on it).
    """
    line = "".join(" " if (ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0) else ch for ch in text)
    room = max(columns - 1, 1)
    if display_width(line) <= room:
        return line
    out: list[str] = []
    used = 0
    for ch in line:
        w = display_width(ch)
        if used + w > room - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def terminal_columns(stream: IO[str] | None = None, default: int = 80) -> int:
    """Width of the terminal behind ``stream`` (stderr by default); COLUMNS wins."""
    import os

    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return os.get_terminal_size((stream or sys.stderr).fileno()).columns or default
    except (OSError, ValueError, AttributeError):
        return default
