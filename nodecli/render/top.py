"""``transfer top`` as lines of text: a header with the totals, the active transfers
(sorted), and those that ended lately. Pure: the same lines for the same data, whatever
draws them (curses on a terminal, the tests)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from nodecli.errors import counted
from nodecli.render.numbers import human_bytes, quotient, seconds_left
from nodecli.render.text import clip, display_width, sanitize

SORTS = ("rate", "progress", "bytes", "started", "host")
ENDED_WINDOW = 600.0  # seconds: "recently ended"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _rate(kbps: Any) -> str:
    """The one rate style of every table (``10.0 Mbps``: render.numbers.human_rate)."""
    from nodecli.render.numbers import human_rate

    return human_rate(kbps)


def _progress(t: dict[str, Any]) -> float | None:
    done, total = _int(t.get("bytes_transferred")), _int(t.get("bytes_expected"))
    if total <= 0:
        return None
    return 1.0 if done >= total else quotient(done, total)  # (10^400 / 3 is no float)


def _eta(t: dict[str, Any]) -> str:
    done, total = _int(t.get("bytes_transferred")), _int(t.get("bytes_expected"))
    left = seconds_left(max(total - done, 0), t.get("current_rate_kbps")) \
        if total > 0 else None
    if left is None or left >= 100 * 365 * 86400:  # (a century is no estimate)
        return "-"
    secs = int(left)
    return f"{secs // 3600}h{secs % 3600 // 60:02d}m" if secs >= 3600 else \
        f"{secs // 60}m{secs % 60:02d}s"


def _failed(t: dict[str, Any]) -> bool:
    return t.get("status") not in ("running", "completed", "cancelled")


def _key(sort: str) -> Any:
    if sort == "progress":
        return lambda t: -(_progress(t) or 0.0)
    if sort == "bytes":
        return lambda t: -_int(t.get("bytes_transferred"))
    if sort == "started":
        return lambda t: -_int(t.get("start_time_usec"))
    if sort == "host":
        return lambda t: str(t.get("remote_host") or "")
    return lambda t: -_int(t.get("current_rate_kbps"))


def _cell(value: Any, width: int, right: bool = False) -> str:
    text = clip(sanitize("" if value is None else value), width)
    pad = " " * max(width - display_width(text), 0)
    return pad + text if right else text + pad


def refresh_said(transfers: int, seconds: float, *, last: bool = False) -> str:
    """What -v says of a refresh: how many transfers it read, in how many milliseconds."""
    return (f"{'last refresh' if last else 'refresh'}: {counted(transfers, 'transfer')} "
            f"in {seconds * 1000:.0f} ms")


def top_lines(transfers: list[dict[str, Any]], *, width: int, height: int,
              sort: str = "rate", failed_only: bool = False, node: str = "",
              now: float | None = None, problem: str | None = None) -> list[str]:
    """The screen: at most ``height`` lines, none wider than ``width - 1``."""
    import time

    now = time.time() if now is None else now
    active = sorted((t for t in transfers if t.get("status") == "running"), key=_key(sort))
    ended = [t for t in transfers if t.get("status") != "running"
             and _int(t.get("end_time_usec")) >= (now - ENDED_WINDOW) * 1e6]
    ended.sort(key=lambda t: -_int(t.get("end_time_usec")))
    failed = [t for t in ended if _failed(t)]
    # the totals are the node's, whatever the filter shows
    done = sum(1 for t in ended if not _failed(t))
    if failed_only:
        active, ended = [], failed
    total = sum(_int(t.get("current_rate_kbps")) for t in transfers
                if t.get("status") == "running")
    clock = datetime.fromtimestamp(now, UTC).strftime("%H:%M:%SZ")
    running = sum(1 for t in transfers if t.get("status") == "running")
    head = [f"{clock} {running} active, {_rate(total)} · last 10 min: {done} ended, "
            f"{len(failed)} failed" + (f" · !! {sanitize(problem)}" if problem else ""),
            f"sort {sort}{' · failed only' if failed_only else ''} · q quit  s sort  "
            f"f failed only · {sanitize(node)}"]
    host_w = max(15, width - 72)
    room = max(height - len(head) - 4, 2)
    keep_ended = min(len(ended), max(room // 3, 3))
    keep_active = max(room - keep_ended, 1)
    lines = [*head, ""]
    if not failed_only:  # only the rows that fit are formatted (a node may run thousands)
        lines.append(f"{'ID':8} {'DIR':4} {'HOST':{host_w}} {'USER':8} {'BYTES':>9} "
                     f"{'NOW/TARGET':>19} {'DONE':>4} {'ETA':>6}"
                     if active else "no active transfers")
        shown = active[:keep_active] if len(active) <= keep_active else \
            active[:keep_active - 1]
        lines += [_active_row(t, host_w) for t in shown]
        if len(active) > len(shown):
            lines.append(f"... and {len(active) - len(shown)} more active")
    lines.append(f"{'ID':8} {'STATUS':10} {'HOST':{host_w}} {'BYTES':>9} {'ENDED':9} ERROR"
                 if ended else "nothing ended in the last 10 minutes")
    err_w = max(width - 8 - 10 - host_w - 9 - 9 - 6, 10)
    lines += [_ended_row(t, host_w, err_w) for t in ended[: max(height - len(lines), 0)]]
    return [clip(line.rstrip(), max(width - 1, 1)) for line in lines[:height]]


def _active_row(t: dict[str, Any], host_w: int) -> str:
    progress = _progress(t)
    return " ".join((_cell(str(t.get("id") or "")[:8], 8),
                     _cell("send" if t.get("direction") == "send" else "recv", 4),
                     _cell(t.get("remote_host"), host_w), _cell(t.get("user_id"), 8),
                     _cell(human_bytes(_int(t.get("bytes_transferred"))), 9, True),
                     _cell(f"{_rate(t.get('current_rate_kbps'))}/"
                           f"{_rate(t.get('target_rate_kbps'))}", 19, True),
                     _cell(f"{int(progress * 100)}%" if progress is not None else "-", 4,
                           True),
                     _cell(_eta(t), 6, True)))


def _ended_row(t: dict[str, Any], host_w: int, err_w: int) -> str:
    return " ".join((_cell(str(t.get("id") or "")[:8], 8), _cell(t.get("status"), 10),
                     _cell(t.get("remote_host"), host_w),
                     _cell(human_bytes(_int(t.get("bytes_transferred"))), 9, True),
                     _cell(_ended_at(t), 9), _cell(_error(t), err_w)))


def _ended_at(t: dict[str, Any]) -> str:
    from nodecli.timeparse import from_usec

    end = from_usec(t.get("end_time_usec"))
    return "-" if end is None else end.strftime("%H:%M:%S")


def _error(t: dict[str, Any]) -> str:
    code = t.get("error_code")
    if code in (None, 0, "0", ""):
        return ""
    return f"{code}: {t.get('error_desc') or ''}".strip()
