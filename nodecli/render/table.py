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

from nodecli.render.text import display_width, sanitize

FORMATS = ("table", "json", "csv")
STREAM_FORMATS = ("table", "json", "jsonl", "csv")
GAP = 2  # columns between two table columns


def fit_columns(rows: Sequence[dict[str, Any]], columns: Sequence[Column],
                width: int) -> tuple[list[Column], dict[str, int]]:
    """How a table fits in ``width`` terminal columns: the columns to show and the
    widths some of them are cut to (their cells end with '…'; nothing wraps).

    Each column needs its widest cell; a column that need not stay whole can go down to
    its floor (its heading, 6 at the least). The droppable columns (``drop`` 1 first,
    then 2 ...) are left out while even the floors do not fit; then free text (``free``)
    gives way first, down to 16 columns, then the widest columns that need not stay
    whole, down to their floors. Only when every column left is whole or at its floor
    is the table wider than ``width``."""
    kept = list(columns)
    need = {c.key: max([display_width(c.heading),
                        *(display_width(_cell(r.get(c.key))) for r in rows)])
            for c in columns}
    floor = {c.key: need[c.key] if c.whole else min(need[c.key], max(
        display_width(c.heading), 6)) for c in columns}
    least = sum(floor.values()) + GAP * (len(kept) - 1)
    for col in sorted((c for c in columns if c.drop > 0), key=lambda c: c.drop):
        if least <= width:
            break
        kept.remove(col)
        least -= floor[col.key] + GAP
    total = sum(need[c.key] for c in kept) + GAP * (len(kept) - 1)
    caps: dict[str, int] = {}

    def cut(cols: list[Column], low: dict[str, int]) -> None:
        nonlocal total
        cols = list(cols)
        while total > width and cols:
            col = max(cols, key=lambda c: caps.get(c.key, need[c.key]))
            now = caps.get(col.key, need[col.key])
            by = min(now - low[col.key], total - width)
            if by <= 0:
                cols.remove(col)
                continue
            caps[col.key] = now - by
            total -= by

    cut([c for c in kept if c.free and not c.whole],
        {k: max(v, min(need[k], 16)) for k, v in floor.items()})
    cut([c for c in kept if not c.whole], floor)
    return kept, caps


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table: the row key, its heading, and how it is laid out.

    ``whole`` keeps the cells whole on a terminal too narrow for the table (ids, times,
    statuses, numbers); the other columns are cut with '…' to make room, ``free`` text
    (error descriptions, summaries) first. No cell ever wraps: one line per row.
    ``drop`` ranks the columns of least value, left out first on a narrow terminal."""

    key: str
    heading: str
    justify: str = "left"
    whole: bool = False
    # >0: left out (1 first, then 2 ...) while the table is wider than the terminal;
    # ``-o wide`` keeps every column
    drop: int = 0
    # free text (an error description, a summary): the first to give way
    free: bool = False


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


def render_csv(rows: Iterable[dict[str, Any]], columns: Sequence[Column], out: IO[str],
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
    widths = [max(map(display_width, column)) for column in cells]
    padded = [[_pad(v, w, c.justify) for v in column]
              for c, column, w in zip(columns, cells, widths, strict=True)]
    out.write("".join("  ".join(parts).rstrip() + "\n" for parts in zip(*padded, strict=True)))


def _pad(text: str, width: int, justify: str) -> str:
    fill = " " * max(width - display_width(text), 0)
    return fill + text if justify == "right" else text + fill


def render_rich_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], console: Any, title: str | None,
    headers: bool = True, caps: dict[str, int] | None = None, wide: bool = False,
) -> None:
    """The table on a colour terminal: the cells as :func:`fit_columns` cut them, never
    wrapped (one line per row); ``wide`` keeps every cell whole, the line as long as it
    needs (the terminal wraps it, as ``kubectl -o wide``)."""
    from rich.table import Table
    from rich.text import Text

    from nodecli.render.text import clip

    table = Table(title=title, header_style="bold", box=None, pad_edge=False,
                  show_header=headers)
    for c in columns:
        table.add_column(c.heading, justify=c.justify,  # type: ignore[arg-type]
                         no_wrap=True, overflow="ellipsis")
    caps = caps or {}
    for r in rows:
        table.add_row(*(Text(clip(_cell(r.get(c.key)), caps[c.key]) if c.key in caps
                             else _cell(r.get(c.key))) for c in columns))
    if wide and natural_width(rows, columns) > console.width:
        from rich.console import Console

        # rich cuts a table to its console's width: a console as wide as the table
        console = Console(file=console.file, width=natural_width(rows, columns),
                          no_color=console.no_color, highlight=False,
                          force_terminal=console.is_terminal,
                          color_system=console.color_system or "auto")
    console.print(table, crop=False)


def natural_width(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> int:
    """Terminal columns of the table with every cell whole."""
    return sum(max([display_width(c.heading), *(display_width(_cell(r.get(c.key)))
                                                for r in rows)]) for c in columns) + \
        GAP * max(len(columns) - 1, 0)


def render_fields(pairs: Sequence[tuple[str, Any]], out: IO[str],
                  width: int | None = None) -> None:
    """One object for reading: aligned ``field  value`` lines, values as in a table.
    With ``width`` (a terminal's), a value longer than the rest of the line is cut with
    '…': one line per field, never wrapped (``-o json`` has it whole)."""
    if not pairs:
        return
    from nodecli.render.text import clip

    labels = [sanitize(k) for k, _ in pairs]
    label_width = max(map(display_width, labels))
    room = None if width is None else max(width - label_width - GAP, 6)
    values = [_cell(v) for _, v in pairs]
    if room is not None:
        values = [clip(v, room) for v in values]
    out.write("".join(f"{_pad(k, label_width, 'left')}  {v}".rstrip() + "\n"
                      for k, v in zip(labels, values, strict=True)))
