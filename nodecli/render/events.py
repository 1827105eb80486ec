"""Events as text: a one-line summary per event family, tab-separated plain lines and
aligned pretty lines, and a page rendered in a format. Server strings are made safe for a
terminal (controls stripped) and cut to a bounded length."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nodecli.errors import counted, shorten
from nodecli.remote_json import strings
from nodecli.render.numbers import human_bytes, human_rate
from nodecli.render.text import iso_time, sanitize

MAX_FIELD = 200  # characters of one server string shown in a summary


def clean(value: Any, limit: int | None = MAX_FIELD) -> str:
    """Server text made safe for a terminal (controls stripped) and cut to ``limit``
    (None: whole)."""
    text = sanitize("" if value is None else value)
    return text if limit is None else shorten(text, limit)


def cutter(whole: bool) -> Callable[..., int | None]:
    """``cut(n=MAX_FIELD)``: the limit to give :func:`clean`, ``n``, or None (whole:
    machine output such as csv never loses data)."""
    def cut(n: int = MAX_FIELD) -> int | None:
        return None if whole else n

    return cut


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def family_of(types: Sequence[str]) -> str:
    for t in types:
        if t.startswith(("transfer.", "download.", "upload.")):
            return "transfer"
    for t in types:
        if t.startswith("file.filelock."):
            return "lock"
    for t in types:
        if t.startswith("file."):
            return "file"
        if t.startswith("permission."):
            return "permission"
    return "other"


def main_type(types: Sequence[str]) -> str:
    """The most specific type (a transfer's subtype rather than its parent type)."""
    for t in types:
        if not t.startswith("transfer."):
            return t
    return types[0] if types else "?"


def summary(event: dict[str, Any], whole: bool = False) -> str:
    """One line describing the event per family (terminal-safe); server strings are cut
    to a bounded length unless ``whole`` (csv: machine output never loses data)."""
    cut = cutter(whole)
    types = strings(event.get("types"))
    data = event.get("data")
    if not isinstance(data, dict):
        data = {}
    fam = family_of(types)
    if fam == "file":
        # a field the node left out shows as ?, as in the other families
        path = clean(data.get("path"), cut()) or "?"
        return f"{path} ({human_bytes(_int(data.get('size')))})"
    if fam == "transfer":
        return transfer_summary(data, whole)
    if fam == "permission":
        levels = data.get("access_levels")
        lv = ",".join(clean(x, cut(20)) for x in levels) if isinstance(levels, list) else "?"
        who = " ".join(p for p in (clean(data.get("access_type"), cut(20)),
                                   clean(data.get("access_id"), cut(60))) if p)
        file_id = clean(data.get("file_id"), cut(60)) or "?"
        return f"{who or '?'}: {lv or '(none)'} on file {file_id}"
    if fam == "lock":
        verb = main_type(types).rsplit(".", 1)[-1]
        target = data.get("path") or data.get("file_id") or data.get("id")
        by = data.get("locked_by") or data.get("user_id")
        text = f"lock {clean(verb, cut(20))} on {clean(target, cut()) or '?'}"
        return text + (f" by {clean(by, cut(60))}" if by else "")
    return ""


def transfer_summary(data: dict[str, Any], whole: bool = False) -> str:
    cut = cutter(whole)
    status = clean(data.get("status") or "?", cut(20))
    running = data.get("end_time_usec") is None or status == "running"
    parts = [clean(data.get("direction") or "?", cut(20)),
             "[RUNNING]" if running else status,
             clean(data.get("remote_host") or "?", cut(80)),
             human_bytes(_int(data.get("bytes_transferred")))]
    if running:
        parts.append(f"now {human_rate(_int(data.get('current_rate_kbps')))}")
    else:
        parts.append(f"avg {human_rate(_int(data.get('avg_rate_kbps')))}")
        start, end = _int(data.get("start_time_usec")), _int(data.get("end_time_usec"))
        if start is not None and end is not None and end >= start:
            # (a difference too large for a float is no duration: shown as ?)
            parts.append(f"in {(end - start) / 1e6:.1f} s" if end - start < 10**300
                         else "in ? s")
    parts.append(f"target {human_rate(_int(data.get('target_rate_kbps')))}")
    files = _int(data.get("files_completed"))
    if files:
        parts.append(counted(files, "file"))
    code = _int(data.get("error_code"))
    if code:
        parts.append(f"error {code}: {clean(data.get('error_desc'), cut())}")
    return " ".join(parts)


def plain_line(event: dict[str, Any]) -> str:
    """Tab-separated: time, id, types (comma-joined), user, summary."""
    return "\t".join((clean(event.get("time"), 40), clean(event.get("id"), 80),
                      clean(",".join(strings(event.get("types"))), 120),
                      clean(event.get("user_id"), 80),
                      summary(event)))


def pretty_parts(event: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """(time, most specific type, user, summary, family), terminal-safe, padded."""
    t = iso_time(clean(event.get("time"), 40))
    types = strings(event.get("types"))
    return (f"{t:20}", f"{clean(main_type(types), 40):24}",
            f"{clean(event.get('user_id'), 40):10}", summary(event), family_of(types))


def pretty_line(event: dict[str, Any], width: int | None = None) -> str:
    """Aligned for reading: time, most specific type, user, summary. With ``width`` (a
    terminal's), the line is cut with '…' so that it never wraps (see :func:`fit_pretty`)."""
    t, typ, user, text, _family = pretty_parts(event)
    t, typ, user, text = fit_pretty(t, typ, user, text, width)
    return f"{t}  {typ}  {user}  {text}"


SUMMARY_ROOM = 16  # columns of summary a narrow terminal keeps before the padding goes


def fit_pretty(t: str, typ: str, user: str, text: str,
               width: int | None) -> tuple[str, str, str, str]:
    """The parts of a pretty line fitted to ``width`` (None: whole, not a terminal): the
    summary is cut with '…'; on a terminal too narrow for the aligned columns and
    ``SUMMARY_ROOM`` of summary, the type and user lose their padding; the time is never
    cut (the user and type are, last)."""
    if width is None:
        return t, typ, user, text
    from nodecli.render.text import clip, display_width

    def before() -> int:
        return display_width(f"{t}  {typ}  {user}  ")

    if width - before() < SUMMARY_ROOM:
        typ, user = typ.rstrip(), user.rstrip()
    if width - before() < 1:
        room = max(width - display_width(t) - 6, 2)
        typ = clip(typ, max(room * 2 // 3, 1))
        user = clip(user, max(room - display_width(typ), 1))
    return t, typ, user, clip(text, max(width - before(), 1)) if text else text


def render_chunk(items: Sequence[tuple[dict[str, Any], str]], fmt: str,
                 width: int | None = None) -> str:
    """Text for a page: jsonl passes the node's objects through unchanged; pretty lines
    are cut to ``width`` (a terminal's)."""
    if not items:
        return ""
    if fmt == "jsonl":
        return "\n".join(raw for _, raw in items) + "\n"
    if fmt == "json":
        from nodecli.render.table import json_text

        return "".join(json_text(obj, indent=2) + "\n" for obj, _ in items)
    if fmt == "plain":
        return "".join(plain_line(obj) + "\n" for obj, _ in items)
    return "".join(pretty_line(obj, width) + "\n" for obj, _ in items)
