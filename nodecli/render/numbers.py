"""Numbers a node sent, as text: sizes, rates, ratios and times left. Any value is shown
and none crashes: an integer no float holds (10^400) or of more digits than ``int()``
converts (kept as its digits by :mod:`nodecli.remote_json`), a float at the edge of the
range (1.8e308), a negative one, or the wrong type (text, a list, ``true``). A number
beyond any real size or rate is shown as sent; what is no number is shown as ``?``.

Every computation with a server's number goes through :func:`number` (what counts as
one) and :func:`quotient` (a division whose result may not fit a float)."""

from __future__ import annotations

import math
from typing import Any

#: beyond any real size or rate (and beyond what a float holds exactly): shown as sent
HUGE = 10**18


def number(value: Any) -> int | float | None:
    """An integer or a finite float that a server sent; None for anything else (a
    boolean, text, a list, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def integer(value: Any) -> int | None:
    """An integer a server sent (not a boolean, not a float); None otherwise."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def shown(value: Any) -> str:
    """A number as it was sent: an integer's digits, a float's shortest form."""
    return repr(value) if isinstance(value, float) else str(value)


def quotient(a: Any, b: Any) -> float | None:
    """``a / b`` as a float; None when either is no number, ``b`` is 0, or the result
    does not fit a float (10^400 / 1000 raises OverflowError; 1e308 * 10 is inf)."""
    x, y = number(a), number(b)
    if x is None or y is None:
        return None
    try:
        q = x / y
    except (OverflowError, ZeroDivisionError):
        return None
    return q if math.isfinite(q) else None


def human_bytes(n: Any) -> str:
    """``1.5 MB``; a size beyond any real one as sent (``10000... B``); ``?`` for what
    is no number."""
    value = number(n)
    if value is None:
        return "?"
    if abs(value) >= HUGE:
        return f"{shown(value)} B"
    size = float(value)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(size) < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{shown(value)} B"  # (not reached: TB ends the loop)


def human_rate(kbps: Any) -> str:
    """The one rate style of every table, line and summary: ``800 kbps``, ``9.8 Mbps``,
    ``10.0 Gbps`` (csv and json keep the node's kbps); a rate beyond any real one as
    sent; ``?`` for what is no number."""
    value = number(kbps)
    if value is None:
        return "?"
    if abs(value) >= HUGE:
        return f"{shown(value)} kbps"
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f} Gbps"
    if value >= 1000:
        return f"{value / 1000:.1f} Mbps"
    return f"{value:g} kbps" if isinstance(value, float) else f"{value} kbps"


def short_rate(kbps: Any, *, giga: bool = False) -> str | None:
    """``9.8M`` or ``800k`` (``1.2G`` with ``giga``); a rate beyond any real one as sent
    (``10000...k``); None for what is no number (the caller says how to show that)."""
    value = number(kbps)
    if value is None:
        return None
    if abs(value) >= HUGE:
        return f"{shown(value)}k"
    if giga and value >= 1_000_000:
        return f"{value / 1_000_000:.1f}G"
    if value >= 1000:
        return f"{value / 1000:.1f}M"
    return f"{value:g}k"


def seconds_left(remaining_bytes: Any, kbps: Any) -> float | None:
    """Seconds to move ``remaining_bytes`` at ``kbps`` (1 kbps = 125 bytes a second);
    None when it cannot be said (no rate, no number, a result no float holds)."""
    rate = number(kbps)
    if rate is None or rate <= 0:
        return None
    return quotient(remaining_bytes, rate * 125)
