"""``events stats``: how many events by type, user, hour and node, over a node's log or
a jsonl file (what ``events tail --to`` or a sink wrote), so that an operator can check
a sink against the node. Counting keeps only the counters: memory grows with the
number of distinct types, users, hours and nodes, never with the events."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodecli.errors import NotFoundError, UsageError
from nodecli.node.events.pages import event_types

DIMENSIONS = ("type", "user", "hour", "node")
NONE = "-"  # an event without the field


def hour_of(value: Any) -> str:
    """``YYYY-MM-DDTHH:00:00Z`` (UTC: the hour) of an event's time, or ``-``."""
    if not isinstance(value, str):
        return NONE
    from datetime import UTC

    from nodecli.timeparse import TimeParseError, parse_iso8601

    try:
        when = parse_iso8601(value).astimezone(UTC)
    except (TimeParseError, ValueError, OverflowError):
        return NONE
    return when.strftime("%Y-%m-%dT%H:00:00Z")


@dataclass(slots=True)
class Stats:
    total: int = 0
    unreadable: int = 0  # lines of a file that are not an event object
    counts: dict[str, Counter[str]] = field(
        default_factory=lambda: {d: Counter() for d in DIMENSIONS})

    def add(self, event: dict[str, Any], node: str | None) -> None:
        self.total += 1
        types = event_types(event)
        user = event.get("user_id")
        owner = event.get("node") if node is None else node
        c = self.counts
        c["type"][types[0] if types else NONE] += 1
        c["user"][str(user) if isinstance(user, (str, int)) and not isinstance(user, bool)
                  else NONE] += 1
        c["hour"][hour_of(event.get("time"))] += 1
        c["node"][owner if isinstance(owner, str) and owner else NONE] += 1

    def add_all(self, items: Iterable[dict[str, Any]], node: str | None) -> None:
        for event in items:
            self.add(event, node)

    def rows(self, by: Sequence[str] = DIMENSIONS) -> list[dict[str, Any]]:
        """One row per (dimension, key): hours in time order, the rest most first."""
        out: list[dict[str, Any]] = []
        for dim in by:
            counter = self.counts[dim]
            keys = sorted(counter) if dim == "hour" else \
                sorted(counter, key=lambda k: (-counter[k], k))
            out += [{"by": dim, "key": k, "count": counter[k]} for k in keys]
        return out


MAX_LINE = 16 * 1024 * 1024  # a line longer than this is not an event a node sends


def file_events(path: Path, stats: Stats) -> Iterator[dict[str, Any]]:
    """The event objects of a jsonl file; other lines are counted as unreadable."""
    from nodecli.fsutil import NotRegularFile, open_regular
    from nodecli.remote_json import loads

    try:
        fd = open_regular(path)
    except FileNotFoundError:
        raise NotFoundError(f"--file {path}: no such file") from None
    except NotRegularFile as exc:
        raise UsageError(f"--file {path} {exc.strerror}") from None
    except OSError as exc:
        raise UsageError(f"--file {path}: {exc.strerror}") from None
    import os

    with os.fdopen(fd, "rb") as fh:
        for line in iter(lambda: fh.readline(MAX_LINE), b""):
            if not line.strip():
                continue
            try:
                obj = loads(line) if line.endswith(b"\n") or len(line) < MAX_LINE else None
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                yield obj
            else:
                stats.unreadable += 1
