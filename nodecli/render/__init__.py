"""Everything that turns data into text: tables and machine formats (:mod:`.table`),
terminal-safe text and geometry (:mod:`.text`), event lines (:mod:`.events`).

Only the command layer (``nodecli.cli``) imports this package; the domain returns data
and raises errors, and never formats for a terminal.
"""

from nodecli.render.table import (
    EMPTY,
    FORMATS,
    STREAM_FORMATS,
    Column,
    render_csv,
    render_fields,
    render_json,
    render_jsonl,
    render_plain_table,
    render_rich_table,
)
from nodecli.render.text import (
    display_width,
    fit_line,
    is_tty,
    iso_time,
    sanitize,
    sanitize_lines,
    terminal_columns,
)

__all__ = [
    "EMPTY", "FORMATS", "STREAM_FORMATS", "Column", "display_width", "fit_line", "is_tty",
    "iso_time", "render_csv", "render_fields", "render_json", "render_jsonl",
    "render_plain_table", "render_rich_table", "sanitize", "sanitize_lines",
    "terminal_columns",
]
