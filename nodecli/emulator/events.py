"""The emulated node's activity log: GET /events and GET /events/{id} (interface.md 4.1, 4.2).

The log is an append-only, thread-safe store. Every event gets the next numeric
position; its ``id`` is that position as a string and an iteration token names the
position after which a query resumes. Events are kept pre-encoded (compact JSON
bytes) so that a long log costs little memory and pages are served quickly.

Query rules implemented as documented:

* ``count``: at most that many events; the OLDEST matching ones are returned (default
  100, capped at :data:`MAX_COUNT`).
* ``iteration_token``: events after the point the token names. A token that is not a
  number, or names a point beyond the end of the log, is refused with 400.
* ``after_time``: events after that time; with a token too, the more recent of the two
  points wins (both conditions hold).
* ``type`` (one) or ``type_glob[]`` (one; ``*`` is the only wildcard); both at once, or
  either given twice, is a 400.
* Every answer carries ``Link: <base/events?...&iteration_token=N>; rel="next"`` keeping
  the other parameters of the request (``link_on_last_page = False``: not the page that
  holds the newest event, as a node that ends a list there would).

Version gating uses ``state.version``: no /events before 3.6.0, no /events/{id} before
3.7.3 (both 404 as an unknown path), and from 3.7.4 nothing is logged while
``activity_event_logging`` is off (``log_for(state).logging_enabled = False``).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import random
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from nodecli.emulator.server import HttpError, Reply, Request, Router
from nodecli.emulator.state import NodeState
from nodecli.node.info import version_tuple

DEFAULT_COUNT = 100
MAX_COUNT = 10_000
TYPE_RE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")
GLOB_RE = re.compile(r"(\*|[a-z][a-z0-9_]*)(\.(\*|[a-z][a-z0-9_]*))*\*?")

FAMILIES = {
    "file": ("file.created", "file.deleted", "file.modified", "file.moved"),
    "permission": ("permission.created", "permission.edited", "permission.deleted",
                   "permission.modified"),
    "filelock": ("file.filelock.created", "file.filelock.modified", "file.filelock.deleted",
                 "file.filelock.reverted"),
    "transfer": ("transfer.started", "transfer.ended"),
}
ACCESS_LEVELS = ("list", "read", "write", "delete", "mkdir", "rename", "preview")


def iso_usec(usec: int) -> str:
    dt = datetime.fromtimestamp(usec / 1_000_000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


@dataclass(slots=True)
class _Stored:
    """One stored event (slots: a log of millions stays light; never changed once
    stored)."""

    pos: int
    time: int  # microseconds
    types: tuple[str, ...]
    blob: bytes  # compact JSON
    file_id: str | None
    path: str | None
Visible = Callable[[str | None, str | None], bool]


class EventLog:
    """Append-only activity log. All methods are thread-safe."""

    def __init__(self, state: NodeState | None = None, *, retention: int | None = None) -> None:
        self.state = state
        self.retention = retention  # keep at most this many events (oldest dropped)
        self.logging_enabled = True  # the node's activity_event_logging setting
        # behaving like other conforming nodes: a server-side cap on count (count is
        # "at most"), and a Link rel="next" naming another host (a node behind a proxy)
        self.count_cap: int | None = None
        self.link_host: str | None = None
        # a node that ends a list on its last page of events (no Link rel="next" on the
        # page holding the newest event) instead of on an empty page
        self.link_on_last_page = True
        # keep the connection open after an answer (opt-in: interface.md shows close)
        self.keep_alive = False
        self.queries: deque[str] = deque(maxlen=50)  # raw query strings, for tests
        self._lock = threading.Lock()
        self._items: list[_Stored] = []
        self._first = 1  # position of _items[0]
        self._next = 1
        self._rng = random.Random(4242)
        self._running: dict[str, dict[str, Any]] = {}  # transfers started, not ended
        self.replies: deque[Reply] = deque()  # canned answers for GET /events (tests)

    # -- writing ----------------------------------------------------------------------

    def _logging_on(self, access_key: str | None = None) -> bool:
        version = self.state.version if self.state is not None else "9.9.9"
        if version_tuple(version) < (3, 7, 4):
            return True  # before 3.7.4 logging is always on
        if access_key and self.state is not None:
            # 6.2: from 3.8.0 the access key's own setting overrides the node's, both ways
            per_key = self.state.extensions.get("key_logging")
            own = per_key(access_key) if per_key else None
            if own is not None:
                return bool(own)
        return self.logging_enabled

    def append(self, event: dict[str, Any], *, access_key: str | None = None,
               path: str | None = None) -> dict[str, Any] | None:
        """Log one event (``id`` and ``time`` are filled in when missing).

        ``access_key``: the key the causing request authenticated with (its own logging
        setting applies); ``path``: the storage path the event is about, when its data
        does not say (visibility). Returns the stored event, or None when not logged.
        """
        if not self._logging_on(access_key):
            return None
        with self._lock:
            pos = self._next
            self._next += 1
            ev = dict(event)
            ev["id"] = str(pos)
            now = int(time.time() * 1_000_000)
            if "time" not in ev:
                ev["time"] = iso_usec(now)
                tusec = now
            else:
                tusec = _time_usec(ev["time"], now)
            ev.setdefault("user_id", "admin")
            ev.setdefault("types", [])
            ev.setdefault("data", {})
            # keep the documented key order: id, time, user_id, types, data
            ordered = {k: ev.pop(k) for k in ("id", "time", "user_id", "types", "data")}
            ordered.update(ev)
            types = tuple(t for t in ordered["types"] if isinstance(t, str))
            blob = json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode()
            file_id, where = _file_of(ordered, types, path)
            self._items.append(_Stored(pos, tusec, types, blob, file_id, where))
            if self.retention and len(self._items) > self.retention * 1.25:
                drop = len(self._items) - self.retention
                del self._items[:drop]
                self._first += drop
            return ordered

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._first = self._next = 1
            self._running.clear()
            self.queries.clear()
            self.replies.clear()
        self.logging_enabled = True
        self.retention = None
        self.count_cap = None
        self.link_host = None
        self.link_on_last_page = True
        self.keep_alive = False

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    @property
    def first_position(self) -> int:
        """The position (id) of the oldest event held."""
        with self._lock:
            return self._first

    @property
    def last_position(self) -> int:
        with self._lock:
            return self._next - 1

    def push_reply(self, *replies: Reply) -> None:
        """Answer the next GET /events requests with these (hostile pages in tests)."""
        self.replies.extend(replies)

    # -- generated traffic -------------------------------------------------------------

    def generate(self, n: int, families: Iterable[str] | None = None) -> list[str]:
        """Append ``n`` realistic events of the given families; return their ids."""
        fams = list(families or ("file", "permission", "transfer", "filelock"))
        for f in fams:
            if f not in FAMILIES:
                raise ValueError(f"unknown event family {f!r}")
        if self.state is not None and version_tuple(self.state.version) < (3, 7, 4):
            fams = [f for f in fams if f != "filelock"] or ["file"]
        ids = []
        for _ in range(n):
            ev = self.make_event(self._rng.choice(fams))
            stored = self.append(ev)
            if stored is not None:
                ids.append(stored["id"])
        return ids

    def make_event(self, family: str) -> dict[str, Any]:
        rng = self._rng
        user = rng.choice(("admin", "alice", "bob", "svc-sync"))
        file_id = str(rng.randint(1, 5000))
        now_usec = int(time.time() * 1_000_000)
        if family == "file":
            kind = rng.choice(FAMILIES["file"])
            start = iso_usec(now_usec - rng.randint(0, 5_000_000))
            data = {"id": file_id, "path": f"/data/{user}/report-{rng.randint(1, 999)}.csv",
                    "size": rng.randint(0, 5_000_000_000), "type": "file",
                    "start_time": start, "end_time": iso_usec(now_usec)}
            return {"user_id": user, "types": [kind], "data": data}
        if family == "permission":
            kind = rng.choice(FAMILIES["permission"])
            levels = sorted(rng.sample(ACCESS_LEVELS, rng.randint(1, len(ACCESS_LEVELS))),
                            key=ACCESS_LEVELS.index)
            data = {"id": str(rng.randint(1, 10_000)), "file_id": file_id,
                    "access_id": rng.choice(("alice", "bob", "team-7")),
                    "access_type": rng.choice(("user", "group")), "access_levels": levels,
                    "tags": None}
            return {"user_id": user, "types": [kind], "data": data}
        if family == "filelock":
            kind = rng.choice(FAMILIES["filelock"])
            data = {"id": file_id, "file_id": file_id, "path": f"/data/shared/doc-{file_id}.docx",
                    "locked_by": user}
            return {"user_id": user, "types": [kind], "data": data}
        # transfers: start one, or end one that runs
        with self._lock:
            running = list(self._running)
        if running and rng.random() < 0.5:
            tid = rng.choice(running)
            with self._lock:
                ending = self._running.pop(tid, None)
            if ending is not None:
                return self.transfer_event(ending, ended=True)
        started = self.new_transfer(user, file_id)
        with self._lock:
            if len(self._running) < 1000:
                self._running[started["transfer_id"]] = started
        return self.transfer_event(started, ended=False)

    def new_transfer(self, user: str, file_id: str, direction: str | None = None,
                     remote_host: str | None = None) -> dict[str, Any]:
        rng = self._rng
        target = rng.choice((10_000, 100_000, 1_000_000))
        return {
            "id": str(uuid.UUID(int=rng.getrandbits(128))), "user_id": user, "file_id": file_id,
            "direction": direction or rng.choice(("send", "receive")), "tags": None,
            "remote_host": remote_host or f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
            "ssh_port": 33001,
            "transfer_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "session_id": str(uuid.UUID(int=rng.getrandbits(128))),
            "start_time_usec": int(time.time() * 1_000_000), "end_time_usec": None,
            "status": "running", "error_code": 0, "error_desc": "",
            "files_completed": 0, "directories_completed": 0, "bytes_transferred": 0,
            "avg_rate_kbps": 0, "target_rate_kbps": target, "min_rate_kbps": 0,
            "max_rate_kbps": target, "current_rate_kbps": 0,
        }

    def transfer_event(self, data: dict[str, Any], *, ended: bool) -> dict[str, Any]:
        rng = self._rng
        data = dict(data)
        sub = "download" if data["direction"] == "send" else "upload"
        if ended:
            now = int(time.time() * 1_000_000)
            secs = max((now - data["start_time_usec"]) / 1e6, 0.001)
            data.update(
                end_time_usec=now, status="completed", error_code=0, error_desc="",
                files_completed=rng.randint(1, 50), directories_completed=rng.randint(0, 5),
                bytes_transferred=rng.randint(1_000, 10_000_000_000),
            )
            data["avg_rate_kbps"] = min(int(data["bytes_transferred"] * 8 / 1000 / secs),
                                        data["target_rate_kbps"])
            data["min_rate_kbps"] = data["avg_rate_kbps"] // 2
            data["current_rate_kbps"] = 0
            types = [f"{sub}.ended", "transfer.ended"]
        else:
            data["current_rate_kbps"] = rng.randint(0, data["target_rate_kbps"])
            types = [f"{sub}.started", "transfer.started"]
        return {"user_id": data["user_id"], "types": types, "data": data}

    # -- reading ----------------------------------------------------------------------

    def get(self, event_id: str, visible: Visible | None = None) -> bytes | None:
        if not event_id.isdigit() or len(event_id) > 18:
            return None
        pos = int(event_id)
        with self._lock:
            i = pos - self._first
            if 0 <= i < len(self._items):
                s = self._items[i]
                if visible is None or visible(s.file_id, s.path):
                    return s.blob
        return None

    def query(self, *, after_pos: int | None, after_usec: int | None,
              match: Callable[[tuple[str, ...]], bool] | None,
              count: int, visible: Visible | None = None) -> tuple[list[bytes], int]:
        """Oldest ``count`` matching events after both points; and the next token."""
        out: list[bytes] = []
        with self._lock:
            items = self._items
            if after_pos is not None and after_pos > self._next - 1:
                raise HttpError(400, f"iteration_token {after_pos} names a point beyond "
                                     f"the end of the log")
            start = 0 if after_pos is None else max(after_pos + 1 - self._first, 0)
            if after_usec is not None:
                # events are appended in time order (almost): jump near the point
                j = bisect.bisect_right(items, after_usec, key=lambda s: s.time)
                start = max(start, j - 1000 if j > 1000 else 0)
            last = (after_pos if after_pos is not None else self._first - 1)
            last = max(last, self._first - 1)
            i = start
            n = len(items)
            while i < n and len(out) < count:
                s = items[i]
                last = s.pos
                i += 1
                if after_usec is not None and s.time <= after_usec:
                    continue
                if match is not None and not match(s.types):
                    continue
                if visible is not None and not visible(s.file_id, s.path):
                    continue
                out.append(s.blob)
            if i >= n:
                last = max(last, self._next - 1)
            return out, last


def _file_of(event: dict[str, Any], types: tuple[str, ...],
             path: str | None) -> tuple[str | None, str | None]:
    """(file id, path) an event is tied to, for visibility (interface.md 5.1)."""
    data = event.get("data")
    data = data if isinstance(data, dict) else {}
    file_id = data.get("file_id")
    if file_id is None and any(t.startswith("file.") and not t.startswith("file.filelock")
                               for t in types):
        file_id = data.get("id")
    where = path if path is not None else data.get("path")
    return (str(file_id) if file_id is not None else None,
            where if isinstance(where, str) else None)


def _time_usec(value: Any, default: int) -> int:
    from nodecli.timeparse import TimeParseError, parse_iso8601

    if not isinstance(value, str):
        return default
    try:
        dt = parse_iso8601(value)
    except TimeParseError:
        return default
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


def glob_matcher(pattern: str) -> Callable[[tuple[str, ...]], bool]:
    """type_glob[]: ``*`` is the only wildcard (the request was checked for that)."""
    from nodecli.users.restrictions import glob_regex

    rx = glob_regex(pattern)
    return lambda types: any(rx.fullmatch(t) for t in types)


def log_for(state: NodeState) -> EventLog:
    """The node's event log (created on first use)."""
    return state.extension("events", lambda: EventLog(state))


def _one(req: Request, name: str) -> str | None:
    values = req.query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise HttpError(400, f"only one {name} per request")
    return values[0]


def register(router: Router, state: NodeState) -> None:
    log = log_for(state)
    state.reset_hooks.append(log.clear)

    def list_events(req: Request) -> Reply:
        if version_tuple(state.version) < (3, 6, 0):
            raise HttpError(404, f"no such resource: {req.path}")
        log.queries.append(urlencode([(k, v) for k, vs in req.query.items() for v in vs]))
        if log.replies:
            with contextlib.suppress(IndexError):
                return log.replies.popleft()
        type_ = _one(req, "type")
        glob = _one(req, "type_glob[]")
        if type_ is not None and glob is not None:
            raise HttpError(400, "give either type or type_glob[], not both")
        match: Callable[[tuple[str, ...]], bool] | None = None
        if type_ is not None:
            if not TYPE_RE.fullmatch(type_):
                raise HttpError(400, f"invalid type {type_[:60]!r}")
            wanted = type_
            match = lambda types: wanted in types  # noqa: E731
        elif glob is not None:
            if not GLOB_RE.fullmatch(glob) or "**" in glob:
                raise HttpError(400, f"invalid type_glob[] {glob[:60]!r}: only * may be "
                                     "used as a wildcard")
            match = glob_matcher(glob)
        count_s = _one(req, "count")
        count = DEFAULT_COUNT
        if count_s is not None:
            if not count_s.isascii() or not count_s.isdigit():
                raise HttpError(400, f"count must be an unsigned integer, not {count_s[:30]!r}")
            # any unsigned integer is accepted; what is served is capped
            count = MAX_COUNT if len(count_s) > 18 else min(int(count_s), MAX_COUNT)
        if log.count_cap is not None:
            count = min(count, log.count_cap)
        token = _one(req, "iteration_token")
        after_pos = None
        if token is not None:
            if not token.isdigit() or len(token) > 18:
                raise HttpError(400, f"invalid iteration_token {token[:40]!r}")
            after_pos = int(token)
        after_time = _one(req, "after_time")
        after_usec = None
        if after_time is not None:
            from nodecli.timeparse import TimeParseError, parse_iso8601

            try:
                dt = parse_iso8601(after_time)
            except TimeParseError as exc:
                raise HttpError(400, f"after_time: {exc}") from None
            after_usec = int(dt.timestamp()) * 1_000_000 + dt.microsecond
        vis = state.extensions.get("event_filter")
        blobs, last = log.query(after_pos=after_pos, after_usec=after_usec, match=match,
                                count=count, visible=vis(req.principal) if vis else None)
        params = [(k, v) for k, vs in req.query.items() if k != "iteration_token" for v in vs]
        params.append(("iteration_token", str(last)))
        base = req.base_url
        if log.link_host is not None:
            scheme = base.split("://", 1)[0]
            base = f"{scheme}://{log.link_host}"
        link = f'<{base}/events?{urlencode(params)}>; rel="next"'
        body = b"[" + b",".join(blobs) + b"]"
        # the response headers a node sends: no-cache and, unless the emulator was
        # asked to keep connections open, connection close
        headers = {"Content-Type": "application/json; charset=utf-8",
                   "Cache-Control": "no-cache", "Link": link}
        if not log.link_on_last_page and blobs and last >= log.last_position:
            del headers["Link"]  # the page holding the newest event ends the list
        if not log.keep_alive:
            headers["Connection"] = "close"
        return Reply(200, body, headers)

    def get_event(req: Request) -> Reply:
        if version_tuple(state.version) < (3, 7, 3):
            raise HttpError(404, f"no such resource: {req.path}")
        assert req.match is not None
        vis = state.extensions.get("event_filter")
        blob = log.get(req.match.group("id"), vis(req.principal) if vis else None)
        if blob is None:
            raise HttpError(404, "invalid event ID")
        return Reply(200, blob, {"Content-Type": "application/json; charset=utf-8"})

    def on_transfer(req: Request, record: dict[str, Any]) -> None:
        """A transfer lands its files in the storage (file.created for each new one) and
        logs transfer.started tied to the first file, as the key that asked."""
        from nodecli.emulator.storage import file_path_for_transfer, storage_of

        spec = record.get("transfer_spec") or {}
        principal = req.principal
        user = principal.name if principal else "admin"
        ak = principal.access_key if principal else None
        direction = spec.get("direction") if isinstance(spec.get("direction"), str) else None
        host = spec.get("remote_host") if isinstance(spec.get("remote_host"), str) else None
        st = storage_of(state)
        file_id, first_path = "1", None
        for i, path in enumerate(file_path_for_transfer(spec)):
            with state.lock:
                existed = path in st.by_path
                node = st.ensure(path, "file", 1024)
            if i == 0:
                file_id, first_path = node.id, node.path
            if not existed:
                log.append({"user_id": user, "types": ["file.created"],
                            "data": {"id": node.id, "path": node.path, "size": node.size,
                                     "type": "file"}}, access_key=ak)
        started = record.get("event_data")
        if isinstance(started, dict):  # the transfer's own data (emulator.transfers)
            started["data"]["file_id"] = file_id
            log.append(started, access_key=ak, path=first_path)
            return
        data = log.new_transfer(user, file_id, direction, host)
        log.append(log.transfer_event(data, ended=False), access_key=ak, path=first_path)

    router.add("GET", r"/events", list_events, auth="any")
    router.add("GET", r"/events/(?P<id>[^/]+)", get_event, auth="any")
    state.extensions.setdefault("on_transfer", on_transfer)


def start_generator(state: NodeState, rate_per_second: float,
                    families: Iterable[str] | None = None) -> Callable[[], None]:
    """Produce about ``rate_per_second`` events per second in a background thread.

    Returns a callable that stops the thread (and waits for it).
    """
    log = log_for(state)
    fams = list(families) if families else None
    stop = threading.Event()
    rate = max(float(rate_per_second), 0.001)

    def run() -> None:
        tick = 0.05
        per_tick = rate * tick
        owed = 0.0
        while not stop.wait(tick):
            owed += per_tick
            n = int(owed)
            if n:
                owed -= n
                log.generate(n, fams)

    thread = threading.Thread(target=run, name="event-generator", daemon=True)
    thread.start()

    def stop_generator() -> None:
        stop.set()
        thread.join(timeout=5)

    return stop_generator
