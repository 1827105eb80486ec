"""Command results as table, json, jsonl or csv.

Rows are plain dicts; a column list says which keys appear in tables/CSV and with
which heading. JSON/JSONL carry the full dicts: their field names are a stable,
documented interface. Tables are plain aligned text when the output is not a
colour terminal (no rich import on that path: local commands must start fast) and
a rich table on a colour terminal. Every cell is sanitised for the terminal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import IO, Any

from nodecli.record import FrozenRecord
from nodecli.render.text import UNSAFE, sanitize

FORMATS = ("table", "json", "csv")
STREAM_FORMATS = ("table", "json", "jsonl", "csv")


class Column(FrozenRecord):
    """One column of a table: the row key, its heading, and how it is laid out.

    ``whole`` keeps the cells on one line on a terminal too narrow for the table (ids,
    times, statuses); the other columns wrap to make room."""

    _FIELDS = ("key", "heading", "justify", "whole")
    __slots__ = _FIELDS
    key: str
    heading: str
    justify: str
    whole: bool

    def __init__(self, key: str, heading: str, justify: str = "left",
                 whole: bool = False) -> None:
        self._set(key=key, heading=heading, justify=justify, whole=whole)


#: what a table or a field list shows for a missing or empty value (csv leaves it empty)
EMPTY = "-"


def _cell(value: Any, empty: str = EMPTY) -> str:
    """One value as text, the same way in every table and field list: ``-`` when empty,
    yes/no for booleans, lists comma-joined, objects as compact JSON, all sanitised."""
    if value is None or value == "" or value == [] or value == ():
        return empty
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        if all(v.__class__ is str for v in value):
            text = ",".join(value)
            if UNSAFE.search(text) is None:  # no element has anything to clean
                return text
        return ",".join(sanitize(v) for v in value)
    if isinstance(value, dict):
        import json

        return sanitize(json.dumps(value, separators=(",", ":")))
    return sanitize(value)


def render_json(data: Any, out: IO[str]) -> None:
    """``data`` as indented JSON (a sequence of rows as a list), in one write: json.dump
    would issue a write per token (hundreds of thousands for a 10,000-user list), which
    costs more than the encoding itself."""
    import json

    text = _rows_json(data) if isinstance(data, Sequence) and \
        not isinstance(data, (str, bytes)) else None
    if text is None:
        if isinstance(data, Sequence) and not isinstance(data, (list, tuple, str, bytes)):
            data = list(data)  # (rows made on demand, e.g. nodecli.users.UserRows)
        text = json.dumps(data, indent=2, ensure_ascii=False)
    out.write(text + "\n")


def _rows_json(rows: Sequence[Any]) -> str | None:
    """``json.dumps(list(rows), indent=2, ensure_ascii=False)`` for rows that are dicts
    with the same string keys in the same order, each field a string in every row or a
    list of strings in every row (listings); None for anything else.

    json's indented output runs its pure-Python encoder (~30 ms for 10,000 users); this
    encodes each column with its C string encoder and fills one template per row."""
    from itertools import chain
    from json.encoder import encode_basestring as encode  # (the C one where it exists)

    if not rows or not isinstance(rows[0], dict):
        return None
    keys = list(rows[0])
    if not keys or not all(k.__class__ is str for k in keys):
        return None
    if getattr(rows, "column", None) is None and (  # (rows with columns have one shape)
            set(map(type, rows)) != {dict} or any(list(row) != keys for row in rows)):
        return None
    cells = []
    for values in (_column_values(rows, k) for k in keys):
        kinds = set(map(type, values))
        if kinds == {str}:
            cells.append(list(map(encode, values)))
        elif kinds == {list} and set(map(type, chain.from_iterable(values))) <= {str}:
            lists = list(map(tuple, values))
            blocks = {items: "[\n" + ",\n".join("      " + encode(item) for item in items)
                      + "\n    ]" if items else "[]" for items in set(lists)}
            cells.append(list(map(blocks.__getitem__, lists)))
        else:
            return None
    row = "  {\n" + ",\n".join(f"    {encode(k).replace('%', '%%')}: %s" for k in keys) \
        + "\n  }"
    return "[\n" + (",\n".join([row] * len(rows)) % tuple(
        chain.from_iterable(zip(*cells, strict=True)))) + "\n]"


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


def sanitize_all(values: list[str]) -> list[str]:
    """``[sanitize(v) for v in values]`` for strings, checked in one pass: what sanitize
    would change shows up in the joined text, so safe text costs no per-value call."""
    if UNSAFE.search("".join(values)) is None:
        return values
    return [sanitize(v) for v in values]


def _column_values(rows: Sequence[dict[str, Any]], key: str) -> list[Any]:
    """``row.get(key)`` of every row; rows that can give a whole column at once (e.g.
    nodecli.users.UserRows, with a ``column`` method) do."""
    column = getattr(rows, "column", None)
    if column is not None:
        return column(key)  # type: ignore[no-any-return]
    return [r.get(key) for r in rows]


def _shown_empty(cells: list[str], values: list[Any], empty: Any) -> list[str]:
    """``cells`` with :data:`EMPTY` where the value was ``empty`` ("" or [])."""
    if empty not in values:
        return cells
    return [EMPTY if v == empty else c for c, v in zip(cells, values, strict=True)]


def _column_cells(rows: Sequence[dict[str, Any]], key: str) -> list[str]:
    """The sanitised cells of one column. A column of plain strings is checked in one
    pass (what sanitize would change shows up in the joined text), so a 10,000-row
    table costs no per-cell calls when nothing needs cleaning; empty values show
    :data:`EMPTY`, as in a cell of its own."""
    text_column = getattr(rows, "text_column", None)  # e.g. the ACLs of 10,000 users
    texts = text_column(key) if text_column is not None else None
    if texts is not None and UNSAFE.search("".join(texts)) is None:
        return _shown_empty(texts, texts, "")  # (lists comma-joined; "": an empty list)
    values = _column_values(rows, key)
    kinds = set(map(type, values))
    if kinds == {str}:
        return _shown_empty(sanitize_all(values), values, "")
    if kinds == {list}:  # e.g. the ACLs of 10,000 users
        try:
            cells = list(map(",".join, values))
        except TypeError:  # an item that is not a string
            pass
        else:
            if UNSAFE.search("".join(cells)) is None:  # no item has anything to clean
                return _shown_empty(cells, values, [])
    return [_cell(v) for v in values]


def _ends_in_space(cells: list[str]) -> bool:
    """Whether any cell is empty or ends in whitespace (what ``str.rstrip`` removes)."""
    from operator import itemgetter

    tails = "".join(map(itemgetter(slice(-1, None)), cells))
    # every whitespace character but the space is one isprintable refuses
    return len(tails) != len(cells) or " " in tails or not tails.isprintable()


def _format_lines(line: str, columns: list[list[str]]) -> str:
    """``line`` (a %-format, one ``%s`` field per column) filled with each row of
    ``columns`` (lists of strings of one length), all lines in one string."""
    from itertools import chain

    return (line * len(columns[0])) % tuple(chain.from_iterable(zip(*columns, strict=True)))


def render_plain_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[Column], out: IO[str]
) -> None:
    last = len(columns) - 1
    cells = [[c.heading, *_column_cells(rows, c.key)] for c in columns]
    widths = [max(map(len, column)) for column in cells]
    if _ends_in_space(cells[last]) or columns[last].justify == "right":
        # the general form: every line stripped of what its last cell ends with
        padded = [column if i == last and c.justify != "right" else
                  [v.rjust(width) if c.justify == "right" else v.ljust(width) for v in column]
                  for i, (c, column, width) in enumerate(zip(columns, cells, widths,
                                                             strict=True))]
        out.write("".join("  ".join(parts).rstrip() + "\n"
                          for parts in zip(*padded, strict=True)))
        return
    # one format per row (padding by length, as ljust/rjust); nothing to strip: the last
    # cell of every line ends in a visible character
    line = "  ".join([*(f"%{'' if c.justify == 'right' else '-'}{w}s"
                        for c, w in zip(columns[:last], widths, strict=False)), "%s"]) + "\n"
    # one format for the whole table (the line repeated): no string per line, and one
    # write (a write per line costs more than the formatting)
    out.write(_format_lines(line, cells))


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
