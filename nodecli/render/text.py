"""Text safe for a terminal, and the terminal's geometry.

Every string that came from outside (a server, a file) and is headed for a terminal
passes through :func:`sanitize` (one line) or :func:`sanitize_lines` (messages that
may span lines), so a hostile server cannot drive the user's terminal. The writer
(``cli.app.Terminal``) applies them; domain code never does.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import IO, Any

# C0 and C1 controls (except TAB handled below), DEL, and ANSI escape sequences
# (compiled on first use, by re's cache: most output has nothing to clean).
_ANSI = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)?|\x1b."
# Unicode format characters (category Cf: bidi overrides and isolates such as U+202E,
# zero-width characters, the BOM, ...), the line and paragraph separators, and lone
# surrogates (which cannot be written as UTF-8). "report\u202etxt.exe" would show as
# "reportexe.txt"; each of these is shown as '?' instead.
_FORMAT = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
           "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
           "\ud800-\udfff\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
           "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_CONTROL = "[\x00-\x08\x0a-\x1f\x7f-\x9f" + _FORMAT + "]"


@functools.cache
def _unsafe() -> re.Pattern[str]:
    """Anything sanitize would change: without one of these, text is already safe as it
    is. Compiled on first use, as every pattern here: a command that prints no text from
    outside never needs them."""
    return re.compile("[\x00-\x1f\x7f-\x9f" + _FORMAT + "]")


def sanitize(value: Any) -> str:
    """Printable text for a terminal: escape sequences removed, controls and format
    characters shown as '?'."""
    text = value if isinstance(value, str) else str(value)
    if _unsafe().search(text) is None:
        return text
    text = re.sub(_ANSI, "", text)
    return re.sub(_CONTROL, "?", text.replace("\t", " "))


def sanitize_lines(value: Any) -> str:
    """Like :func:`sanitize`, but the line breaks of a multi-line message are kept."""
    text = value if isinstance(value, str) else str(value)
    return "\n".join(sanitize(line) for line in text.split("\n"))


def is_tty(stream: IO[str] | None) -> bool:
    """Whether ``stream`` is a terminal. None (Python's ``sys.stdin`` when descriptor 0
    was closed at start, as with ``0<&-``) is not one."""
    if stream is None:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def display_width(text: str) -> int:
    """Terminal columns of ``text`` (wide East Asian characters count 2, combining 0)."""
    if text.isascii():  # no ASCII character is wide or combining
        return len(text)
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
    return clip(re.sub("[" + _FORMAT + "]", "?", line), max(columns - 1, 1))


def clip(text: str, width: int) -> str:
    """``text`` in at most ``width`` terminal columns; a cut text ends with '…'."""
    if display_width(text) <= width:
        return text
    out: list[str] = []
    used = 0
    for ch in text:
        w = display_width(ch)
        if used + w > width - 1:
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


def iso_time(value: Any) -> str:
    """A time as every table and line shows it: ISO 8601 in UTC to the second,
    ``2026-11-23T10:00:00Z``. Text that is not an ISO 8601 time is shown as it is
    (sanitised): a server's odd value is not hidden."""
    from nodecli.timeparse import TimeParseError, format_utc, parse_iso8601

    if isinstance(value, str):
        try:
            return format_utc(parse_iso8601(value))
        except TimeParseError:
            pass
    return sanitize("" if value is None else value)
