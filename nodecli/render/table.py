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
