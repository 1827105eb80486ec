"""Command results as table, json, jsonl or csv.

Rows are plain dicts; a column list says which keys appear in tables/CSV and with
which heading. JSON/JSONL carry the full dicts: their field names are a stable,
documented interface. Tables are plain aligned text when the output is not a
colour terminal (no rich import on that path: local commands must start fast) and
a rich table on a colour terminal. Every cell is sanitised for the terminal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from nodecli.render.text import sanitize

FORMATS = ("table", "json", "csv")
STREAM_FORMATS = ("table", "json", "jsonl", "csv")
GAP = 2  # columns between two table columns


def fit_columns(rows: Sequence[dict[str, Any]], columns: Sequence[Column],
                width: int) -> tuple[list[Column], dict[str, int]]:
    """How a table fits in ``width`` terminal columns: the columns to show and the
    widths some of them are cut to. The droppable columns (``drop`` 1 first, then 2 ...)
    are left out while the table is wider; then the widest columns that need not stay
    whole are cut, never below their heading (a rich table wraps them instead)."""
    from nodecli.render.text import display_width

    kept = list(columns)
    need = {c.key: max([display_width(c.heading),
                        *(display_width(_cell(r.get(c.key))) for r in rows)])
            for c in columns}
    total = sum(need.values()) + GAP * (len(kept) - 1)
    for col in sorted((c for c in columns if c.drop > 0), key=lambda c: c.drop):
        if total <= width:
            break
        kept.remove(col)
        total -= need[col.key] + GAP
    caps: dict[str, int] = {}
    cuttable = [c for c in kept if not c.whole]
    while total > width and cuttable:
        col = max(cuttable, key=lambda c: caps.get(c.key, need[c.key]))
        now = caps.get(col.key, need[col.key])
        floor = max(display_width(col.heading), 6)
        cut = min(now - floor, total - width)
        if cut <= 0:
            cuttable.remove(col)
            continue
        caps[col.key] = now - cut
        total -= cut
    return kept, caps


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table: the row key, its heading, and how it is laid out.

    ``whole`` keeps the cells on one line on a terminal too narrow for the table (ids,
    times, statuses); the other columns wrap to make room. ``drop`` ranks the columns
    of least value, left out first on a narrow terminal."""

    key: str
    heading: str
    justify: str = "left"
    whole: bool = False
    # >0: left out (1 first, then 2 ...) while the table is wider than the terminal;
    # ``-o wide`` keeps every column
    drop: int = 0


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


def json_text(data: Any, indent: int | None = None) -> str:
    """``data`` as strict JSON text (UTF-8 as it is, compact unless ``indent``).

    Strict whatever the data holds: a float that is not finite (which ``json`` would
    write as ``NaN``/``Infinity``, not JSON) is written as that word in a string, a lone
    surrogate (which cannot be written as UTF-8) as its ``\\uXXXX`` escape, and data
    nested too deeply to indent is written compact."""
    import json

    try:
        text = json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False,
                          separators=None if indent else (",", ":"))
    except RecursionError:
        if indent:  # the indenting encoder recurses in Python, the compact one in C
            return json_text(data)
        return '"(nested too deeply to write as JSON)"'
    except ValueError:  # NaN or an infinity
        return json_text(finite(data), indent)
    from nodecli.remote_json import escape_surrogates

    return escape_surrogates(text)


def finite(data: Any) -> Any:
    if isinstance(data, float):
        if math.isfinite(data):
            return data
        return "NaN" if math.isnan(data) else ("Infinity" if data > 0 else "-Infinity")
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite(v) for v in data]
    return data


def render_json(data: Any, out: IO[str]) -> None:
    """``data`` as indented JSON."""
    out.write(json_text(data, indent=2) + "\n")


def render_jsonl(rows: Iterable[Any], out: IO[str]) -> None:
    for row in rows:
        out.write(json_text(row))
        out.write("\n")
        out.flush()


def render_csv(rows: Sequence[dict[str, Any]], columns: Sequence[Column], out: IO[str],
               headers: bool = True) -> None:
    import csv

    writer = csv.writer(out, lineterminator="\n")
    if headers:
        writer.writerow([c.key for c in columns])
    for row in rows:
        writer.writerow([_csv_cell(row.get(c.key)) for c in columns])


# A spreadsheet reads a cell starting with one of these as a formula.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: Any) -> str:
    """A csv cell: text that a spreadsheet would run as a formula gets a leading ``'``
    (shown, not run); numbers stay numbers."""
    text = _cell(value, "")
    if text.startswith(_FORMULA_START) and isinstance(value, str):
        return "'" + text
    return text


def render_plain_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], out: IO[str],
    caps: dict[str, int] | None = None, headers: bool = True,
) -> None:
    """Aligned columns; a column with a width in ``caps`` has its cells cut to it."""
    cells = [[c.heading, *(_cell(r.get(c.key)) for r in rows)] for c in columns]
    if not headers:
        cells = [column[1:] for column in cells]
        if not rows:
            return
    if caps:
        from nodecli.render.text import clip

        cells = [[clip(v, caps[c.key]) for v in column] if c.key in caps else column
                 for c, column in zip(columns, cells, strict=True)]
    widths = [max(map(len, column)) for column in cells]
    padded = [[v.rjust(w) if c.justify == "right" else v.ljust(w) for v in column]
              for c, column, w in zip(columns, cells, widths, strict=True)]
    out.write("".join("  ".join(parts).rstrip() + "\n" for parts in zip(*padded, strict=True)))


def render_rich_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], console: Any, title: str | None,
    headers: bool = True,
) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, header_style="bold", box=None, pad_edge=False,
                  show_header=headers)
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
