"""Parse and format the points in time users type: token expiries and event start points.

* :func:`parse_expiry` reads ``--expires-at``: ISO 8601 (``2031-01-01T00:00:00Z``,
  offsets such as ``+02:00``, milliseconds, a bare date meaning midnight UTC, no zone
  meaning UTC) or a relative delay from now (``+90s``, ``+30m``, ``+2h``, ``+7d``,
  ``+1w``, combinations such as ``+1h30m``). The result must lie in the future.
* :func:`parse_since` reads a start point in the past: a duration ago (``10m``, ``2h``,
  ``1d``, ``1h30m``, optionally written ``-10m``) or an ISO 8601 time.
* :func:`format_utc` writes the token form ``YYYY-MM-DDTHH:MM:SSZ``.
* Times a server sent are data, whatever they hold: :func:`server_time` (ISO 8601 text)
  and :func:`from_usec` (epoch microseconds) give None for a value outside what a
  datetime holds (years 1 to 9999), and :func:`shift` moves a time by a duration,
  stopping at the first or last instant a datetime holds instead of overflowing.

Every failure is a :class:`TimeParseError` (a ``ValueError``) whose message names the
accepted forms. Inputs are treated as hostile: bounded length, ASCII digits only, and
results that do not fit a datetime are refused rather than crashing.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

MAX_TEXT = 64

#: Seconds per unit letter of relative times.
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

# Patterns are compiled on first use (re caches them): most commands parse no time.
_ISO = (
    r"(?a)(?P<date>\d{4}-\d{2}-\d{2})"
    r"(?:[Tt ](?P<hh>\d{2}):(?P<mm>\d{2})(?::(?P<ss>\d{2})(?:[.,](?P<frac>\d{1,9}))?)?"
    r"\s*(?P<tz>[Zz]|[+-]\d{2}(?::?\d{2})?)?)?"
)
_DURATION = r"(?a)(?:\d{1,9}[smhdw])+"
_DURATION_PART = r"(?a)(\d{1,9})([smhdw])"

EXPIRY_FORMS = ("ISO 8601 UTC such as 2031-01-01T00:00:00Z, or relative such as +30m, +2h, "
                "7d")
SINCE_FORMS = "a duration ago such as 10m, 2h, 1d, or an ISO 8601 time such as 2031-01-01T00:00:00Z"


class TimeParseError(ValueError):
    """A time the user typed is malformed or out of range (the message says which)."""


def _shown(text: str) -> str:
    return repr(text[:40] + ("..." if len(text) > 40 else ""))


def system_clock() -> datetime:
    return datetime.now(UTC)


#: Where every "now" of the tool comes from. Tests replace it (``monkeypatch.setattr(
#: timeparse, "clock", ...)``) to pin time; production always uses :func:`system_clock`.
clock: Callable[[], datetime] = system_clock


def utc_now() -> datetime:
    return clock()


def _aware(dt: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def format_utc(dt: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` in UTC (fractions of a second are dropped; the year has
    four digits, as ISO 8601 wants, even before year 1000)."""
    u = _aware(dt)
    return f"{u.year:04d}-{u.month:02d}-{u.day:02d}T{u.hour:02d}:{u.minute:02d}:{u.second:02d}Z"


def parse_iso8601(text: str) -> datetime:
    """A strict ISO 8601 date-time (or date) as an aware UTC datetime.

    Accepted: ``2031-01-01``, ``2031-01-01T10:00``, ``2031-01-01T10:00:00``, with
    ``.123`` fractions, and a zone ``Z``/``+02:00``/``+0200``/``+02`` (none = UTC).
    A space may replace the ``T``.
    """
    if not isinstance(text, str):
        raise TimeParseError("a time must be text")
    s = text.strip()
    if len(s) > MAX_TEXT:
        raise TimeParseError(f"time {_shown(s)} is too long")
    m = re.fullmatch(_ISO, s)
    if not m:
        raise TimeParseError(f"invalid time {_shown(s)}: expected ISO 8601 such as "
                             "2031-01-01T00:00:00Z")
    try:
        year, month, day = (int(p) for p in m["date"].split("-"))
        hh = int(m["hh"] or 0)
        mm = int(m["mm"] or 0)
        ss = int(m["ss"] or 0)
        frac = m["frac"] or ""
        micro = int((frac + "000000")[:6]) if frac else 0
        tz = UTC
        zone = m["tz"]
        if zone and zone not in ("Z", "z"):
            sign = -1 if zone[0] == "-" else 1
            digits = zone[1:].replace(":", "")
            oh, om = int(digits[:2]), int(digits[2:4] or 0)
            if oh > 23 or om > 59:
                raise ValueError("zone offset out of range")
            tz = timezone(sign * timedelta(hours=oh, minutes=om))
        if ss == 60:  # a leap second: the next instant is as good an answer
            ss = 59
            micro = 999999
        dt = datetime(year, month, day, hh, mm, ss, micro, tzinfo=tz)
        return dt.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise TimeParseError(f"invalid time {_shown(s)}: {exc}") from None


#: the first and last instants a datetime holds (years 1 and 9999)
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def server_time(value: object) -> datetime | None:
    """A time a server sent (ISO 8601 text) as an aware UTC datetime; None when it is
    no such time: the wrong type, malformed (``0000-00-00``), or outside years 1 to
    9999 (``10000-01-01T00:00:00Z``, or year 1 in a zone east of UTC)."""
    if not isinstance(value, str):
        return None
    try:
        return parse_iso8601(value)
    except TimeParseError:
        return None


def from_usec(value: object) -> datetime | None:
    """Epoch microseconds a server sent (``start_time_usec``) as an aware UTC datetime;
    None for anything that is no such instant (not an integer, before 1970 or 0, or
    past year 9999)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return None
    try:
        return EPOCH + timedelta(microseconds=value)
    except OverflowError:
        return None


def shift(when: datetime, delta: timedelta) -> datetime:
    """``when + delta``, stopped at :data:`EARLIEST` or :data:`LATEST` where the sum
    leaves what a datetime holds (a node clock in year 1, minus ten minutes, is the
    first instant of year 1)."""
    try:
        return when + delta
    except OverflowError:
        return EARLIEST if delta < timedelta(0) else LATEST


def parse_duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``2h``, ``7d``, ``1w`` or combinations such as ``1h30m``."""
    s = text.strip().lower()
    if len(s) > MAX_TEXT or not re.fullmatch(_DURATION, s):
        raise TimeParseError(f"invalid duration {_shown(text)}: use a number and a unit "
                             "s, m, h, d or w, e.g. 90s, 30m, 2h, 7d, 1h30m")
    seconds = sum(int(n) * UNITS[u] for n, u in re.findall(_DURATION_PART, s))
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise TimeParseError(f"duration {_shown(text)} is too long") from None


def _shift(now: datetime, delta: timedelta, text: str) -> datetime:
    try:
        return now + delta
    except OverflowError:
        raise TimeParseError(f"time {_shown(text)} is out of range") from None


def parse_expiry(text: str, now: datetime | None = None) -> datetime:
    """An expiry in the future, as an aware UTC datetime truncated to whole seconds.

    ``+2h`` (or bare ``2h``, as ``--since`` takes it) values count from ``now``; ISO 8601
    values are absolute. A past
    (or present) expiry is refused: a token born expired is always a mistake.
    """
    if not isinstance(text, str) or not text.strip():
        raise TimeParseError(f"empty expiry: use {EXPIRY_FORMS}")
    now = _aware(now or utc_now())
    s = text.strip()
    # "+1d" or, like --since, a bare "1d": both mean one day from now.
    bare = bool(s) and s[0].isdigit() and re.fullmatch(_DURATION, s.lower()) is not None
    if s.startswith("+") or bare:
        try:
            delta = parse_duration(s[1:] if s.startswith("+") else s)
        except TimeParseError:
            raise TimeParseError(f"invalid expiry {_shown(s)}: use {EXPIRY_FORMS}") from None
        when = _shift(now, delta, s)
    else:
        try:
            when = parse_iso8601(s)
        except TimeParseError as exc:
            if re.fullmatch(_ISO, s):  # well-formed but impossible (month 13...)
                raise
            raise TimeParseError(f"invalid expiry {_shown(s)}: use {EXPIRY_FORMS}") from exc
    when = when.replace(microsecond=0)
    if when.year > 9998:
        raise TimeParseError(f"expiry {_shown(s)} is too far in the future")
    if when <= now:
        raise TimeParseError(
            f"expiry {format_utc(when)} is not in the future (now is {format_utc(now)})"
        )
    return when


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """A start point at or before ``now``: ``10m`` (ago), ``-2h``, ``1d`` or ISO 8601."""
    if not isinstance(text, str) or not text.strip():
        raise TimeParseError(f"empty start time: use {SINCE_FORMS}")
    now = _aware(now or utc_now())
    s = text.strip()
    body = s[1:] if s.startswith("-") else s
    if body and body[0].isdigit() and re.fullmatch(_DURATION, body.lower()):
        when = _shift(now, -parse_duration(body), s)
    else:
        try:
            when = parse_iso8601(s)
        except TimeParseError as exc:
            if re.fullmatch(_ISO, s):
                raise
            raise TimeParseError(f"invalid start time {_shown(s)}: use {SINCE_FORMS}") from exc
    if when > now:
        raise TimeParseError(
            f"start time {format_utc(when)} is in the future (now is {format_utc(now)})"
        )
    return when


def describe_delta(seconds: float) -> str:
    """A short human form of a duration: ``59m 12s``, ``3d 4h``, ``45s``; ``?`` for
    what is no finite duration."""
    import math

    if not isinstance(seconds, int) and not (isinstance(seconds, float)
                                             and math.isfinite(seconds)):
        return "?"
    s = int(abs(seconds))
    days, rem = divmod(s, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m {secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def describe_left(seconds: float) -> str:
    """Time left before an expiry, in words: ``59m 12s left`` or ``expired 3m ago``."""
    if seconds <= 0:
        return f"expired {describe_delta(seconds)} ago"
    return f"{describe_delta(seconds)} left"
