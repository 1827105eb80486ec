"""Command results as table, json, jsonl or csv.

Rows are plain dicts; a column list says which keys appear in tables/CSV and with
which heading. JSON/JSONL carry the full dicts: their field names are a stable,
documented interface. Tables are plain aligned text when the output is not a
colour terminal (no rich import on that path: local commands must start fast) and
a rich table on a colour terminal. Every cell is sanitised for the terminal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from nodecli.render.text import sanitize

FORMATS = ("table", "json", "csv")
STREAM_FORMATS = ("table", "json", "jsonl", "csv")


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table: the row key, its heading, and how it is laid out.

    ``whole`` keeps the cells on one line on a terminal too narrow for the table (ids,
    times, statuses); the other columns wrap to make room."""

    key: str
    heading: str
    justify: str = "left"
    whole: bool = False


#: what a table or a field list shows for a missing or empty value (csv leaves it empty)
EMPTY = "-"


def _cell(value: Any, empty: str = EMPTY) -> str:
    """One value as text, the same way in every table and field list: ``-`` when empty,
    yes/no for booleans, lists comma-joined, objects as compact JSON, all sanitised."""
    if value.__class__ is str:
        return sanitize(value) if value else empty
    if isinstance(value, (list, tuple)):
        return ",".join(map(sanitize, value)) if value else empty
    if value is None:
        return empty
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        import json

        return sanitize(json.dumps(value, separators=(",", ":")))
    return sanitize(value)


def render_json(data: Any, out: IO[str]) -> None:
    """``data`` as indented JSON."""
    import json

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
        writer.writerow([_cell(row.get(c.key), "") for c in columns])


def render_plain_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], out: IO[str]
) -> None:
    cells = [[c.heading, *(_cell(r.get(c.key)) for r in rows)] for c in columns]
    widths = [max(map(len, column)) for column in cells]
    padded = [[v.rjust(w) if c.justify == "right" else v.ljust(w) for v in column]
              for c, column, w in zip(columns, cells, widths, strict=True)]
    out.write("".join("  ".join(parts).rstrip() + "\n" for parts in zip(*padded, strict=True)))


def render_rich_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], console: Any, title: str | None
) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, header_style="bold", box=None, pad_edge=False)
    for c in columns:
        table.add_column(c.heading, justify=c.justify,  # type: ignore[arg-type]
                         no_wrap=c.whole, overflow="ellipsis" if c.whole else "fold")
    for r in rows:
        table.add_row(*(Text(_cell(r.get(c.key))) for c in columns))
    console.print(table)


def render_fields(pairs: Sequence[tuple[str, Any]], out: IO[str]) -> None:
    """One object for reading: aligned ``field  value`` lines, values as in a table."""
    if not pairs:
        return
    width = max(len(k) for k, _ in pairs)
    out.write("".join(f"{sanitize(k).ljust(width)}  {_cell(v)}".rstrip() + "\n"
                      for k, v in pairs))
