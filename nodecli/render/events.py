"""Events as text: a one-line summary per event family, tab-separated plain lines and
aligned pretty lines, and a page rendered in a format. Server strings are made safe for a
terminal (controls stripped) and cut to a bounded length."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from nodecli.errors import shorten
from nodecli.node.events.pages import event_types
from nodecli.render.text import iso_time, sanitize

MAX_FIELD = 200  # characters of one server string shown in a summary


def clean(value: Any, limit: int = MAX_FIELD) -> str:
    """Server text made safe for a terminal (controls stripped) and cut to ``limit``."""
    return shorten(sanitize("" if value is None else value), limit)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    size = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(size) < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"


def human_rate(kbps: int | None) -> str:
    if kbps is None:
        return "?"
    if kbps >= 1000:
        return f"{kbps / 1000:.1f} Mbps"
    return f"{kbps} kbps"


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


def summary(event: dict[str, Any]) -> str:
    """One line describing the event per family (terminal-safe)."""
    types = event_types(event)
    data = event.get("data")
    if not isinstance(data, dict):
        data = {}
    fam = family_of(types)
    if fam == "file":
        return f"{clean(data.get('path'))} ({human_bytes(_int(data.get('size')))})"
    if fam == "transfer":
        return transfer_summary(data)
    if fam == "permission":
        levels = data.get("access_levels")
        lv = ",".join(clean(x, 20) for x in levels) if isinstance(levels, list) else "?"
        who = " ".join(p for p in (clean(data.get("access_type"), 20),
                                   clean(data.get("access_id"), 60)) if p)
        return f"{who or '?'}: {lv or '(none)'} on file {clean(data.get('file_id'), 60)}"
    if fam == "lock":
        verb = main_type(types).rsplit(".", 1)[-1]
        target = data.get("path") or data.get("file_id") or data.get("id")
        by = data.get("locked_by") or data.get("user_id")
        return f"lock {clean(verb, 20)} on {clean(target)}" + (f" by {clean(by, 60)}" if by else "")
    return ""


def transfer_summary(data: dict[str, Any]) -> str:
    status = clean(data.get("status") or "?", 20)
    running = data.get("end_time_usec") is None or status == "running"
    parts = [clean(data.get("direction") or "?", 20),
             "[RUNNING]" if running else status,
             clean(data.get("remote_host") or "?", 80),
             human_bytes(_int(data.get("bytes_transferred")))]
    if running:
        parts.append(f"now {human_rate(_int(data.get('current_rate_kbps')))}")
    else:
        parts.append(f"avg {human_rate(_int(data.get('avg_rate_kbps')))}")
        start, end = _int(data.get("start_time_usec")), _int(data.get("end_time_usec"))
        if start is not None and end is not None and end >= start:
            parts.append(f"in {(end - start) / 1e6:.1f} s")
    parts.append(f"target {human_rate(_int(data.get('target_rate_kbps')))}")
    files = _int(data.get("files_completed"))
    if files:
        parts.append(f"{files} files")
    code = _int(data.get("error_code"))
    if code:
        parts.append(f"error {code}: {clean(data.get('error_desc'))}")
    return " ".join(parts)


def plain_line(event: dict[str, Any]) -> str:
    """Tab-separated: time, id, types (comma-joined), user, summary."""
    return "\t".join((clean(event.get("time"), 40), clean(event.get("id"), 80),
                      clean(",".join(event_types(event)), 120), clean(event.get("user_id"), 80),
                      summary(event)))


def pretty_parts(event: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """(time, most specific type, user, summary, family), terminal-safe, padded."""
    t = iso_time(clean(event.get("time"), 40))
    types = event_types(event)
    return (f"{t:20}", f"{clean(main_type(types), 40):24}",
            f"{clean(event.get('user_id'), 40):10}", summary(event), family_of(types))


def pretty_line(event: dict[str, Any]) -> str:
    """Aligned for reading: time, most specific type, user, summary."""
    t, typ, user, text, _family = pretty_parts(event)
    return f"{t}  {typ}  {user}  {text}"


def render_chunk(items: Sequence[tuple[dict[str, Any], str]], fmt: str) -> str:
    """Text for a page: jsonl passes the node's objects through unchanged."""
    if not items:
        return ""
    if fmt == "jsonl":
        return "\n".join(raw for _, raw in items) + "\n"
    if fmt == "json":
        return "".join(json.dumps(obj, indent=2, ensure_ascii=False) + "\n" for obj, _ in items)
    if fmt == "plain":
        return "".join(plain_line(obj) + "\n" for obj, _ in items)
    return "".join(pretty_line(obj) + "\n" for obj, _ in items)
