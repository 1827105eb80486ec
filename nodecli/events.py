"""Node activity events: list one page, get one event, tail the log (no click, no rich).

Pieces, from the wire up:

* :class:`EventFilter` and :func:`build_params`: the filters reach the node exactly as
  interface.md 4.1 names them (``type``, ``type_glob[]``, ``after_time``,
  ``iteration_token``, ``count``).
* :func:`parse_page`: validates a hostile answer (not JSON, not an array, items that are
  not objects or have no id, no ``Link: rel="next"``, a Link to another origin) and keeps
  each event's original JSON text so that ``jsonl`` output passes it through unchanged.
* :func:`iter_pages`: follows ``Link`` page after page in constant memory.
* :func:`tail`: start point (checkpoint > iteration token > since > default), adaptive
  polling, transient failures retried forever in follow mode with status callbacks,
  checkpoints saved only after a page was written and flushed, exactly-once appends to
  a file across crashes, stop conditions.
* :func:`summary` / :func:`plain_line` / :func:`pretty_line`: one-line text per event.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, quote, urlsplit

from nodecli.errors import (
    ConfigError,
    ConflictError,
    Interrupted,
    NodecliError,
    NotFoundError,
    RemoteError,
    UsageError,
)

if TYPE_CHECKING:
    from nodecli.http import Client

MIN_EVENTS_VERSION = (3, 6, 0)
MIN_GET_BY_ID_VERSION = (3, 7, 3)
EXPLICIT_LOGGING_VERSION = (3, 7, 4)
DEFAULT_PAGE_SIZE = 1000
# ``count`` is an unsigned integer (interface.md 4.1) with no maximum shown: any value is
# sent as given and a node may cap it; only a count too large for any node to mean is
# refused (2**63 - 1, the largest signed 64-bit integer).
MAX_COUNT = 2**63 - 1
PER_KEY_LOGGING_VERSION = (3, 8, 0)
DEFAULT_SINCE = timedelta(minutes=10)  # the default start point of `events tail`
INFO_CACHE_TTL = 120.0
CHECKPOINT_VERSION = 1
LAST_IDS_KEPT = 100
MAX_FIELD = 200  # characters of one server string shown in a summary

TYPE_RE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")
GLOB_RE = re.compile(r"(\*|[a-z][a-z0-9_]*)(\.(\*|[a-z][a-z0-9_]*))*\*?")
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

LOGGING_HINT = ("the node's event log is empty: on nodes 3.7.4 and later events are logged "
                "only when the server setting activity_event_logging is true (set it, then "
                "restart the node service)")

Status = Callable[[str], None]


class MalformedPage(RemoteError):
    """The node answered 200 with something that is not a valid events page."""


# -- filters and parameters -------------------------------------------------------------


@dataclass(frozen=True)
class EventFilter:
    """At most one of ``type`` and ``type_glob`` (the node takes one per request)."""

    type: str | None = None
    type_glob: str | None = None

    def __post_init__(self) -> None:
        if self.type is not None and self.type_glob is not None:
            raise UsageError("--type and --type-glob cannot be combined: the node takes one "
                             "type or one glob per request")
        if self.type is not None and not TYPE_RE.fullmatch(self.type):
            raise UsageError(f"invalid event type {self.type[:60]!r}: expected a dotted name "
                             "such as transfer.started or file.created")
        if self.type_glob is not None and (
            not GLOB_RE.fullmatch(self.type_glob) or "**" in self.type_glob
        ):
            raise UsageError(f"invalid type glob {self.type_glob[:60]!r}: dotted names where "
                             "* is the only wildcard, such as file.* or transfer.*")

    def params(self) -> list[tuple[str, str]]:
        if self.type is not None:
            return [("type", self.type)]
        if self.type_glob is not None:
            return [("type_glob[]", self.type_glob)]
        return []

    def key(self) -> str:
        """A short, file-name-safe name for this filter (checkpoints are per filter)."""
        if self.type is not None:
            return "type-" + self.type
        if self.type_glob is not None:
            return "glob-" + self.type_glob.replace("*", "ANY")
        return "all"

    def as_dict(self) -> dict[str, str | None]:
        return {"type": self.type, "type_glob": self.type_glob}


def validate_page_size(n: int) -> int:
    """A tail's page size: any count a node accepts, but at least 1 (0 never progresses)."""
    if not 1 <= n <= MAX_COUNT:
        raise UsageError(f"page size must be a whole number from 1 to {MAX_COUNT}, not {n}")
    return n


def validate_token(token: str) -> str:
    token = token.strip()
    if not token or len(token) > 1000 or any(ord(c) < 33 or ord(c) == 127
                                             or 0xD800 <= ord(c) <= 0xDFFF for c in token):
        raise UsageError("an iteration token is a non-empty word without spaces or control "
                         "characters (copy it from a previous 'events list' or Link header)")
    return token


def build_params(flt: EventFilter, *, since: datetime | None = None,
                 token: str | None = None, count: int | None = None) -> list[tuple[str, str]]:
    """Query parameters exactly as the node names them (interface.md 4.1)."""
    params = flt.params()
    if since is not None:
        params.append(("after_time", since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))
    if token is not None:
        params.append(("iteration_token", token))
    if count is not None:
        params.append(("count", str(count)))
    return params


# -- one page ----------------------------------------------------------------------------


@dataclass
class Page:
    """One answer of GET /events: events (object + original JSON text) and what's next."""

    items: list[tuple[dict[str, Any], str]]
    next_url: str | None
    next_token: str | None
    url: str
    link_problem: str | None = None
    # the host a Link rel="next" named when it was not the user's (its query is then
    # requested on the user's base URL instead; nothing is ever sent to that host)
    foreign_host: str | None = None

    @property
    def events(self) -> list[dict[str, Any]]:
        return [obj for obj, _ in self.items]

    def __len__(self) -> int:
        return len(self.items)


_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, i: int) -> int:
    if i < len(text) and text[i] not in " \t\n\r":
        return i
    m = _WS.match(text, i)
    return m.end() if m else i


def event_id(obj: dict[str, Any]) -> str:
    return str(obj.get("id"))


def parse_events(body: bytes, url: str = "") -> list[tuple[dict[str, Any], str]]:
    """A JSON array of event objects, each with its original compact text.

    Raises :class:`MalformedPage` for anything else: not UTF-8, not JSON, not an
    array, an item that is not an object or has no string/integer ``id``.
    """
    where = f"{url}: " if url else ""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedPage(f"{where}the events page is not UTF-8 text") from None
    i = _skip_ws(text, 0)
    if text[i:i + 1] != "[":
        kind = "empty" if i >= len(text) else "not a JSON array"
        raise MalformedPage(f"{where}the events page is {kind} ({len(body)} bytes)")
    i = _skip_ws(text, i + 1)
    items: list[tuple[dict[str, Any], str]] = []
    n = len(text)
    if text[i:i + 1] == "]":
        i = _skip_ws(text, i + 1)
    else:
        while True:
            try:
                obj, end = _DECODER.raw_decode(text, i)
            except (ValueError, RecursionError):
                raise MalformedPage(f"{where}the events page is not valid JSON "
                                    f"(at character {i})") from None
            if not isinstance(obj, dict):
                raise MalformedPage(f"{where}item {len(items) + 1} of the events page is "
                                    f"not an object")
            eid = obj.get("id")
            if isinstance(eid, bool) or not isinstance(eid, (str, int)) or eid == "":
                raise MalformedPage(f"{where}item {len(items) + 1} of the events page has "
                                    "no id")
            raw = text[i:end]
            if "\n" in raw or "\r" in raw:
                raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            items.append((obj, raw))
            i = _skip_ws(text, end)
            ch = text[i:i + 1]
            if ch == ",":
                i = _skip_ws(text, i + 1)
                continue
            if ch == "]":
                i = _skip_ws(text, i + 1)
                break
            raise MalformedPage(f"{where}the events page is not valid JSON (at character {i})")
    if i != n:
        raise MalformedPage(f"{where}the events page has data after the array")
    return items


def parse_page(body: bytes, link_header: str | None, url: str, base_url: str) -> Page:
    """Validate one page. Link problems are reported in ``link_problem``, not raised.

    A ``Link: rel="next"`` that names another host (a node behind a proxy, NAT or load
    balancer advertising its internal name) is not followed there: its query
    (``iteration_token`` and whatever else it carries) is requested on ``base_url``'s
    ``/events``, and ``foreign_host`` says which host was named.
    """
    from nodecli.http import LinkError, next_link, origin

    items = parse_events(body, url)
    token = None
    problem = None
    foreign = None
    try:
        next_url = next_link(link_header, url)
        if next_url is not None and origin(next_url) != origin(base_url):
            parts = urlsplit(next_url)
            foreign = parts.netloc
            next_url = _events_url(base_url) + (f"?{parts.query}" if parts.query else "")
    except LinkError as exc:
        next_url, problem = None, f'the Link rel="next" header is not a usable URL ({exc})'
    if next_url is None:
        problem = problem or 'the node sent no Link rel="next" header'
    else:
        values = parse_qs(urlsplit(next_url).query).get("iteration_token")
        if not values or not values[-1]:
            problem = 'the Link rel="next" target has no iteration_token'
            next_url = None
        else:
            token = values[-1]
    return Page(items, next_url, token, url, problem, foreign)


def _events_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/events"


class _RetryLater(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def _hint_for(status: int) -> str | None:
    if status == 404:
        return "the node has no events endpoint here (GET /events exists from node 3.6.0)"
    if status == 400:
        return "the node refused the request: check the type, glob, time and iteration token"
    return None


def fetch_page(client: Client, target: str, params: Sequence[tuple[str, str]] | None = None,
               *, retry_statuses: bool = False) -> Page:
    """GET one page (``target`` is ``/events`` with params, or a Link URL)."""
    from nodecli.http import RETRY_STATUSES, parse_retry_after

    expect: tuple[int, ...] = (200,)
    if retry_statuses:
        expect = (200, 500, *RETRY_STATUSES)
    resp = client.request("GET", target, params=list(params) if params else None,
                          expect=expect, hint_for=_hint_for)
    if resp.status != 200:
        raise _RetryLater(f"HTTP {resp.status}", parse_retry_after(resp.header("retry-after")))
    page = parse_page(resp.body, resp.header("link"), resp.url, client.endpoint.base_url)
    if page.foreign_host is not None:
        client.log(f"! the Link rel=\"next\" names host {page.foreign_host}: its query is "
                   f"requested on {client.endpoint.base_url} instead")
    return page


def is_caught_up(page: Page, used_token: str | None) -> bool:
    """Whether ``page`` reached the present: an EMPTY page, or a Link that names the very
    token the page was asked for. A short page is not the end: ``count`` is "at most"
    (interface.md 4.1) and a node may cap it below what was asked."""
    return len(page) == 0 or (used_token is not None and page.next_token == used_token)


def foreign_host_notice(host: str, base_url: str) -> str:
    return (f'the node\'s Link rel="next" names another host ({host}); nodecli requests '
            f"the next pages on {base_url} (the URL you gave) and sends nothing to {host}")


def iter_pages(client: Client, flt: EventFilter, *, since: datetime | None = None,
               token: str | None = None, page_size: int = DEFAULT_PAGE_SIZE) -> Iterator[Page]:
    """Pages from the start point to the present, following Link (constant memory)."""
    page = fetch_page(client, "/events", build_params(flt, since=since, token=token,
                                                      count=page_size))
    used = token
    while True:
        yield page
        if is_caught_up(page, used):
            return
        if page.link_problem or page.next_url is None:
            raise MalformedPage(f"{page.url}: {page.link_problem}")
        used = page.next_token
        page = fetch_page(client, page.next_url)


# -- node version -------------------------------------------------------------------------


@dataclass
class NodeInfo:
    version: str | None
    current_time: str | None = None
    fetched_at: float = field(default_factory=time.time)
    logging: bool | None = None  # activity_event_logging as /info reports it

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        if not self.version:
            return None
        return version_tuple(self.version)

    def at_least(self, v: tuple[int, int, int]) -> bool | None:
        vt = self.version_tuple
        return None if vt is None else vt >= v

    def node_now(self) -> datetime:
        """The node's clock now (its /info current_time plus the time since)."""
        local = datetime.now(UTC)
        if self.current_time:
            from nodecli.timeparse import TimeParseError, parse_iso8601

            try:
                then = parse_iso8601(self.current_time)
            except TimeParseError:
                return local
            return then + timedelta(seconds=max(time.time() - self.fetched_at, 0.0))
        return local


def version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in str(text).split(".")[:3]:
        m = re.match(r"\d+", piece)
        parts.append(int(m.group(0)) if m else 0)
    return tuple(parts + [0] * (3 - len(parts)))


def _info_cache_file(state_dir: Path, client: Client) -> Path:
    ep = client.endpoint
    who = f"{ep.base_url}|{ep.auth.kind}|{ep.auth.username or ep.auth.access_key or ''}"
    return state_dir / "cache" / f"info-{hashlib.sha256(who.encode()).hexdigest()[:16]}.json"


def node_info(client: Client, state_dir: Path | None, *, ttl: float = INFO_CACHE_TTL,
              log: Status | None = None) -> NodeInfo | None:
    """GET /info once per run, cached per node and identity for ``ttl`` seconds.

    Returns None when the node does not answer /info (bearer tokens may not reach it):
    features are then tried and a 404 explained.
    """
    path = _info_cache_file(state_dir, client) if state_dir else None
    if path is not None:
        try:
            from nodecli.fsutil import read_regular

            cached = json.loads(read_regular(path, 64 * 1024))
            if (isinstance(cached, dict)
                    and 0 <= time.time() - float(cached.get("fetched_at", 0)) < ttl):
                return NodeInfo(cached.get("version"), cached.get("current_time"),
                                float(cached["fetched_at"]), cached.get("logging"))
        except (OSError, ValueError, TypeError, KeyError):
            pass
    try:
        data = client.json("GET", "/info")
    except NodecliError as exc:
        if log:
            log(f"GET /info failed ({exc}); node version unknown")
        return None
    if not isinstance(data, dict):
        return None
    version = data.get("version") if isinstance(data.get("version"), str) else None
    now = data.get("current_time") if isinstance(data.get("current_time"), str) else None
    logging = None
    settings = data.get("settings")
    if isinstance(settings, list):
        for s in settings:
            if isinstance(s, dict) and s.get("name") == "activity_event_logging":
                logging = bool(s.get("value"))
    info = NodeInfo(version, now, time.time(), logging)
    if path is not None:
        from nodecli.fsutil import atomic_write, ensure_private_dir

        with contextlib.suppress(OSError):
            ensure_private_dir(path.parent)
            atomic_write(path, json.dumps({"version": version, "current_time": now,
                                           "fetched_at": info.fetched_at,
                                           "logging": logging}).encode())
    return info


def require_events(info: NodeInfo | None, label: str) -> None:
    if info is not None and info.at_least(MIN_EVENTS_VERSION) is False:
        raise NodecliError(f"node {label} runs version {info.version}: the events endpoints "
                           "exist from node 3.6.0",
                           hint="upgrade the node to 3.6.0 or later")


def require_get_by_id(info: NodeInfo | None, label: str) -> None:
    require_events(info, label)
    if info is not None and info.at_least(MIN_GET_BY_ID_VERSION) is False:
        raise NodecliError(f"node {label} runs version {info.version}: GET /events/{{id}} "
                           "exists from node 3.7.3",
                           hint="use 'nodecli events list' (and --type) to find the event")


def empty_log_hint(client: Client, info: NodeInfo | None) -> str | None:
    """The activity_event_logging hint when the whole log is empty on 3.7.4+; with an
    access key or a bearer token as the login, it names the key's own setting (6.2)."""
    if info is None or not info.at_least(EXPLICIT_LOGGING_VERSION):
        return None
    hint = LOGGING_HINT
    ak = client.endpoint.auth.access_key
    if ak and info.at_least(PER_KEY_LOGGING_VERSION) is not False:
        hint += (f"; or, on nodes 3.8.0 and later, access key {ak!r} may have its own "
                 f"setting off: nodecli access-key set {ak} --activity-event-logging on "
                 "(see 'nodecli access-key show')")
    if client.endpoint.auth.kind == "bearer":
        hint += ("; a bearer token sees only events of files on which its user or groups "
                 "hold a permission (nodecli permission grant PATH --user ID --levels list)")
    if info.logging is False:
        return hint
    try:
        probe = fetch_page(client, "/events", [("count", "1")])
    except NodecliError:
        return None
    return hint if len(probe) == 0 else None


# -- list / get ---------------------------------------------------------------------------


@dataclass
class ListResult:
    page: Page
    hint: str | None = None
    base_url: str = ""


def list_events(client: Client, flt: EventFilter, *, since: datetime | None = None,
                token: str | None = None, count: int | None = None,
                state_dir: Path | None = None, log: Status | None = None) -> ListResult:
    """One page, as the node returns it (after one cached GET /info for the version)."""
    info = node_info(client, state_dir, log=log)
    require_events(info, client.endpoint.label or client.endpoint.base_url)
    try:
        page = fetch_page(client, "/events", build_params(flt, since=since, token=token,
                                                          count=count))
    except NotFoundError as exc:
        raise _explain_404(exc, info) from None
    except NodecliError as exc:
        if token is not None and getattr(exc, "status", None) == 400:
            raise NodecliError(f"{exc.message}", hint="the node refused the iteration token "
                               "(or a filter): take a token from a recent 'events list' of "
                               "this node") from None
        raise
    hint = empty_log_hint(client, info) if len(page) == 0 and not flt.params() else None
    return ListResult(page, hint, client.endpoint.base_url)


def _explain_404(exc: NotFoundError, info: NodeInfo | None) -> NodecliError:
    if info is None:
        return NotFoundError(exc.message, hint="the node has no /events endpoint: nodes "
                             "before 3.6.0 have none")
    return exc


def get_event(client: Client, event_id_: str, *, state_dir: Path | None = None,
              log: Status | None = None) -> dict[str, Any]:
    """GET /events/{id}; 404 explained (no such event, or a node older than 3.7.3)."""
    eid = event_id_.strip()
    if not eid or len(eid) > 200 or any(ord(c) < 32 or ord(c) == 127
                                        or 0xD800 <= ord(c) <= 0xDFFF for c in eid):
        raise UsageError("an event id is a non-empty word (see 'nodecli events list')")
    info = node_info(client, state_dir, log=log)
    label = client.endpoint.label or client.endpoint.base_url
    require_get_by_id(info, label)
    from nodecli.output import sanitize

    try:
        resp = client.request("GET", "/events/" + quote(eid, safe=""))
    except NotFoundError:
        hint = "list event ids with: nodecli events list"
        if info is None or info.version is None:
            hint += " (or the node is older than 3.7.3, which has no GET /events/{id})"
        raise NotFoundError(f"no such event: {sanitize(eid)}", hint=hint) from None
    try:
        obj = json.loads(resp.body)
    except (ValueError, RecursionError):
        raise RemoteError(f"the node's answer for event {sanitize(eid)} is not JSON") from None
    if not isinstance(obj, dict):
        raise RemoteError(f"the node's answer for event {sanitize(eid)} is not an object")
    return obj


# -- text -----------------------------------------------------------------------------------


def clean(value: Any, limit: int = MAX_FIELD) -> str:
    """Server text made safe for a terminal (controls stripped) and cut to ``limit``."""
    from nodecli.output import sanitize

    text = sanitize("" if value is None else value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


def event_types(event: dict[str, Any]) -> list[str]:
    types = event.get("types")
    if not isinstance(types, list):
        return []
    return [t for t in types if isinstance(t, str)]


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
    t = clean(event.get("time"), 40).replace("T", " ").rstrip("Z").split(".")[0]
    types = event_types(event)
    return (f"{t:19}", f"{clean(main_type(types), 40):24}",
            f"{clean(event.get('user_id'), 40):10}", summary(event), family_of(types))


def pretty_line(event: dict[str, Any]) -> str:
    """Aligned for reading: time, most specific type, user, summary."""
    t, typ, user, text, _family = pretty_parts(event)
    return f"{t}  {typ}  {user}  {text}"


# -- checkpoints ---------------------------------------------------------------------------


@dataclass
class Checkpoint:
    """Where a tail stands: after ``token`` (or, before the first page, after
    ``after_time``), then the events ``skip`` were already written."""

    token: str
    after_time: str | None = None
    skip: list[str] = field(default_factory=list)
    last_ids: list[str] = field(default_factory=list)
    node: str = ""
    filter: dict[str, str | None] = field(default_factory=dict)
    output: dict[str, Any] | None = None

    def to_json(self) -> bytes:
        return json.dumps({
            "version": CHECKPOINT_VERSION, "node": self.node, "filter": self.filter,
            "iteration_token": self.token or None, "after_time": self.after_time,
            "skip_ids": self.skip, "last_ids": self.last_ids,
            "output": self.output, "saved_at": datetime.now(UTC).isoformat(),
        }, indent=1).encode() + b"\n"


class CheckpointFile:
    """A checkpoint file: exclusive (non-blocking) lock, validated load, atomic save."""

    def __init__(self, path: Path, *, node: str, flt: EventFilter) -> None:
        self.path = Path(path)
        self.node = node
        self.flt = flt
        self._lock: Any = None

    def lock(self) -> None:
        from filelock import FileLock, Timeout

        from nodecli.fsutil import PRIVATE_FILE, ensure_private_dir

        ensure_private_dir(self.path.parent)
        lock = FileLock(str(self.path.with_name(f".{self.path.name}.lock")), timeout=0,
                        mode=PRIVATE_FILE)
        try:
            lock.acquire()
        except Timeout:
            raise ConflictError(f"checkpoint {self.path} is in use by another 'events tail'",
                                hint="two tails on one checkpoint would interleave; stop the "
                                     "other one or use another checkpoint") from None
        self._lock = lock

    def unlock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def load(self) -> Checkpoint | None:
        from nodecli.fsutil import read_regular

        try:
            raw = read_regular(self.path, 1024 * 1024)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"cannot read checkpoint {self.path}: {exc.strerror}") from None
        fix = f"nothing was changed; to start over, delete {self.path}"
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise ConfigError(f"checkpoint {self.path} is damaged (not JSON)", hint=fix) from None
        token = data.get("iteration_token") if isinstance(data, dict) else None
        after = data.get("after_time") if isinstance(data, dict) else None
        if not isinstance(data, dict) or data.get("version") != CHECKPOINT_VERSION or not (
            (isinstance(token, str) and token) or (token is None and isinstance(after, str))
        ):
            raise ConfigError(f"checkpoint {self.path} is damaged or of an unknown version",
                              hint=fix)
        skip = data.get("skip_ids") or []
        last = data.get("last_ids") or []
        if not (isinstance(skip, list) and isinstance(last, list)):
            raise ConfigError(f"checkpoint {self.path} is damaged", hint=fix)
        node = data.get("node")
        if node and node != self.node:
            raise UsageError(f"checkpoint {self.path} belongs to node {clean(node)}, not "
                             f"{self.node}", hint="use another checkpoint for this node")
        flt = data.get("filter") or {}
        if isinstance(flt, dict) and flt and flt != self.flt.as_dict():
            raise UsageError(f"checkpoint {self.path} was saved with another filter "
                             f"({clean(json.dumps(flt))})",
                             hint="use the same --type/--type-glob, or another checkpoint")
        output = data.get("output") if isinstance(data.get("output"), dict) else None
        if not token:
            from nodecli.timeparse import TimeParseError, parse_iso8601

            try:
                parse_iso8601(str(after))
            except TimeParseError:
                raise ConfigError(f"checkpoint {self.path} is damaged (after_time)",
                                  hint=fix) from None
        return Checkpoint(token or "", after if not token else None, [str(x) for x in skip],
                          [str(x) for x in last], node or "", self.flt.as_dict(), output)

    def save(self, cp: Checkpoint) -> None:
        from nodecli.fsutil import atomic_write

        cp.node = self.node
        cp.filter = self.flt.as_dict()
        atomic_write(self.path, cp.to_json())


def node_key(client: Client) -> str:
    """A stable, file-name-safe name for the node and identity being tailed."""
    ep = client.endpoint
    who = ep.auth.username or ep.auth.access_key or ep.auth.kind
    digest = hashlib.sha256(f"{ep.base_url}|{who}".encode()).hexdigest()[:10]
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", ep.label or urlsplit(ep.base_url).netloc)[:40]
    return f"{label}-{digest}"


def resume_path(state_dir: Path, client: Client, name: str, flt: EventFilter) -> Path:
    """``state/checkpoints/<node>/<NAME>@<filter>.json`` for ``--resume NAME``."""
    if not NAME_RE.fullmatch(name):
        raise UsageError(f"invalid checkpoint name {name[:40]!r}: letters, digits, '.', '_' "
                         "and '-' (at most 64)")
    key = flt.key()
    if not re.fullmatch(r"[A-Za-z0-9._-]+", key) or len(key) > 80:
        key = "f-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return state_dir / "checkpoints" / node_key(client) / f"{name}@{key}.json"


# -- output sinks ---------------------------------------------------------------------------


class Sink(Protocol):
    def write(self, chunk: str) -> None:
        """Write text for a page and make it durable enough (flush; fsync for files)."""

    def position(self) -> dict[str, Any] | None:
        """What to record in the checkpoint about the output (files only)."""


class StreamSink:
    """stdout (or any text stream): write, then flush."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, chunk: str) -> None:
        self.stream.write(chunk)
        self.stream.flush()

    def position(self) -> dict[str, Any] | None:
        return None


class FileSink:
    """Append to a file: write, flush, fsync; recover after a crash (see :meth:`recover`)."""

    def __init__(self, path: Path, fmt: str) -> None:
        self.path = Path(path)
        self.fmt = fmt
        import stat

        # O_NONBLOCK: a FIFO must not hang the tail (refused just below, with a reason)
        flags = (os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_NONBLOCK", 0))
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise UsageError(f"cannot open {self.path} for appending: {exc.strerror}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UsageError(f"{self.path} is not a regular file: the output file must be a "
                             "plain file (its checkpoint counts on its size); pipe stdout "
                             "instead")
        os.set_blocking(fd, True)
        self._fd = fd
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:
            pass
        except OSError:
            os.close(fd)
            raise ConflictError(f"{self.path} is being written by another 'events tail'",
                                hint="two tails into one file would interleave") from None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def write(self, chunk: str) -> None:
        data = memoryview(chunk.encode("utf-8"))
        while data:
            n = os.write(self._fd, data)
            data = data[n:]
        os.fsync(self._fd)

    def position(self) -> dict[str, Any] | None:
        st = os.fstat(self._fd)
        return {"path": str(self.path), "size": st.st_size, "dev": st.st_dev, "ino": st.st_ino}

    def recover(self, cp: Checkpoint | None) -> list[str]:
        """Ids written after the checkpoint (the page being written at a crash).

        Complete lines after the checkpointed size are kept and their ids returned (the
        tail skips them when the page is fetched again); a line cut by the crash is
        truncated away. A rotated or replaced file is left alone.
        """
        if cp is None or not cp.output:
            return []
        st = os.fstat(self._fd)
        size = cp.output.get("size")
        if (cp.output.get("dev"), cp.output.get("ino")) != (st.st_dev, st.st_ino) or not (
            isinstance(size, int) and 0 <= size <= st.st_size
        ):
            return []
        if size == st.st_size:
            return []
        with open(self.path, "rb") as fh:
            fh.seek(size)
            tail = fh.read()
        ids: list[str] = []
        keep = 0
        for line in tail.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            eid = _id_of_line(line, self.fmt)
            if eid is None:
                break
            ids.append(eid)
            keep += len(line)
        if keep < len(tail):
            os.ftruncate(self._fd, size + keep)
            os.fsync(self._fd)
        return ids


def _id_of_line(line: bytes, fmt: str) -> str | None:
    try:
        text = line.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return None
    if fmt == "jsonl":
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            return None
        return event_id(obj) if isinstance(obj, dict) and "id" in obj else None
    parts = text.split("\t")
    return parts[1] if len(parts) >= 5 and parts[1] else None


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


# -- interruption ---------------------------------------------------------------------------


class GracefulStop:
    """SIGINT/SIGTERM: between pages stop at once; while a page is being written,
    finish it (and its checkpoint) first. A second signal stops immediately."""

    def __init__(self) -> None:
        self.requested = False
        self._critical = False
        self._old: dict[int, Any] = {}

    def _handler(self, signum: int, frame: Any) -> None:
        if self._critical and not self.requested:
            self.requested = True
            return
        raise KeyboardInterrupt

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, getattr(signal, "SIGTERM", None)):
            if sig is not None:
                self._old[sig] = signal.signal(sig, self._handler)

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    @contextlib.contextmanager
    def critical(self) -> Iterator[None]:
        self._critical = True
        try:
            yield
        finally:
            self._critical = False
        if self.requested:
            raise KeyboardInterrupt

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


# -- tail ------------------------------------------------------------------------------------


@dataclass
class TailOptions:
    flt: EventFilter = field(default_factory=EventFilter)
    follow: bool = False
    since: datetime | None = None
    token: str | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    fmt: str = "jsonl"
    interval: float = 2.0
    max_events: int | None = None
    until_type: str | None = None
    # a presentation hook for ``pretty`` (the CLI adds colour on a colour terminal)
    pretty: Callable[[dict[str, Any]], str] | None = None
    retry_base: float = 1.0  # seconds; backoff doubles up to retry_cap, with full jitter
    retry_cap: float = 60.0

    def __post_init__(self) -> None:
        if self.since is not None and self.token is not None:
            raise UsageError("give --since or --iteration-token, not both")
        if self.until_type is not None and not TYPE_RE.fullmatch(self.until_type):
            raise UsageError(f"--until-type: invalid event type {self.until_type[:60]!r}")
        if self.fmt not in ("pretty", "plain", "json", "jsonl"):
            raise UsageError(f"unknown format {self.fmt!r}")
        validate_page_size(self.page_size)


@dataclass
class TailState:
    """What the tail has done; ``token`` is the resume point (after the last full page)."""

    token: str | None = None
    emitted: int = 0
    pages: int = 0
    start: str = ""
    stopped_by: str | None = None  # "caught-up", "max-events", "until-type"


def _jitter(interval: float) -> float:
    return interval * random.uniform(0.8, 1.2)


def tail(client: Client, opts: TailOptions, sink: Sink, *,
         checkpoint: CheckpointFile | None = None, info: NodeInfo | None = None,
         status: Status | None = None, notice: Status | None = None,
         stop: GracefulStop | None = None,
         sleep: Callable[[float], None] | None = None) -> TailState:
    """Print events from the start point to the present (and on, with ``follow``).

    Start point: the checkpoint (when it exists) > ``opts.token`` > ``opts.since`` >
    the last :data:`DEFAULT_SINCE` on the node's clock. A checkpoint is saved only
    after a page was written and flushed. Transient failures (network, 429/5xx,
    malformed pages) are retried forever with ``follow``, reported through ``status``
    ("reconnecting (attempt N, next in S s): reason", then "resumed"); without
    ``follow`` they raise. Fatal failures (401, 403, 404, a refused token) raise.
    """
    label = client.endpoint.label or client.endpoint.base_url
    require_events(info, label)
    st = TailState()
    try:
        return _tail(client, opts, sink, st, checkpoint=checkpoint, info=info, status=status,
                     notice=notice, stop=stop or GracefulStop(), sleep=sleep)
    except KeyboardInterrupt:
        raise TailInterrupted(st) from None


class TailInterrupted(Interrupted):
    """SIGINT/SIGTERM during a tail; ``state.token`` is where to resume."""

    def __init__(self, state: TailState) -> None:
        super().__init__(f"interrupted after {state.emitted} events")
        self.state = state


def _tail(client: Client, opts: TailOptions, sink: Sink, st: TailState, *,
          checkpoint: CheckpointFile | None, info: NodeInfo | None, status: Status | None,
          notice: Status | None, stop: GracefulStop,
          sleep: Callable[[float], None] | None) -> TailState:
    from nodecli.http import backoff_delay

    nap = sleep or stop.sleep
    cp = checkpoint.load() if checkpoint else None
    skip: set[str] = set()
    prev_ids: set[str] = set()
    from_checkpoint = cp is not None
    since: datetime | None = None
    if cp is not None:
        if cp.token:
            st.token = cp.token
        else:
            from nodecli.timeparse import parse_iso8601

            since = parse_iso8601(cp.after_time or "")
        skip = set(cp.skip)
        prev_ids = set(cp.last_ids)
        st.start = f"checkpoint {checkpoint.path}" if checkpoint else "checkpoint"
    elif opts.token is not None:
        st.token = opts.token
        st.start = f"iteration token {opts.token}"
    if isinstance(sink, FileSink):
        skip |= set(sink.recover(cp))
    if st.token is None and since is None:
        if opts.since is not None:
            since = opts.since
            st.start = f"since {since.strftime('%Y-%m-%dT%H:%M:%SZ')}"
        else:
            since = (info.node_now() if info else datetime.now(UTC)) - DEFAULT_SINCE
            st.start = f"the last {int(DEFAULT_SINCE.total_seconds() // 60)} minutes (default)"
    since_iso = since.strftime("%Y-%m-%dT%H:%M:%SZ") if since is not None else None
    if checkpoint is not None and cp is None:
        # record the start point before anything is written: a crash before the first
        # checkpoint then resumes from the same point and skips what reached the file
        checkpoint.save(Checkpoint(st.token or "", None if st.token else since_iso,
                                   output=sink.position()))
    fetcher = client.derive(max_attempts=1) if opts.follow else client
    target: str = "/events"
    params: list[tuple[str, str]] | None = build_params(
        opts.flt, since=since, token=st.token, count=opts.page_size)
    page_token = st.token  # the token that names the start of the page being fetched
    attempt = 0
    first = True
    hinted = False
    told_hosts: set[str] = set()
    while True:
        try:
            page = fetch_page(fetcher, target, params, retry_statuses=opts.follow)
            if page.link_problem:
                raise MalformedPage(f"{page.url}: {page.link_problem}")
        except (_RetryLater, MalformedPage, RemoteError) as exc:
            if isinstance(exc, RemoteError) and (
                not opts.follow or exc.message.startswith("TLS")
            ):
                raise
            attempt += 1
            reason = exc.reason if isinstance(exc, _RetryLater) else str(exc)
            retry_after = exc.retry_after if isinstance(exc, _RetryLater) else None
            delay = retry_after if retry_after is not None else max(
                backoff_delay(attempt, base=opts.retry_base, cap=opts.retry_cap),
                opts.retry_base / 5)
            if status:
                status(f"reconnecting (attempt {attempt}, next in {delay:.0f} s): "
                       f"{clean(reason, 160)}")
            nap(delay)
            continue
        except NotFoundError as exc:
            raise _explain_404(exc, info) from None
        except NodecliError as exc:
            if getattr(exc, "status", None) == 400 and page_token is not None:
                raise _token_refused(exc, from_checkpoint, checkpoint, page_token) from None
            raise
        if attempt and status:
            status("resumed")
        attempt = 0
        if page.foreign_host is not None and page.foreign_host not in told_hosts:
            told_hosts.add(page.foreign_host)
            if notice:
                notice(foreign_host_notice(page.foreign_host, client.endpoint.base_url))
        if first:
            first = False
            if len(page) == 0 and not hinted and notice and not opts.flt.params():
                hint = empty_log_hint(fetcher, info) if st.token is None else None
                if hint:
                    notice(hint)
                hinted = True
        # choose what to write: drop the already-written prefix and boundary duplicates
        out: list[tuple[dict[str, Any], str]] = []
        written_upto = -1  # index in page.items of the last event handled
        partial = False
        for idx, (obj, raw) in enumerate(page.items):
            eid = event_id(obj)
            written_upto = idx
            if skip:
                if eid in skip:
                    continue
                skip = set()
            if eid in prev_ids:
                continue
            out.append((obj, raw))
            if opts.max_events is not None and st.emitted + len(out) >= opts.max_events:
                st.stopped_by = "max-events"
            elif opts.until_type is not None and opts.until_type in event_types(obj):
                st.stopped_by = "until-type"
            if st.stopped_by:
                partial = idx < len(page.items) - 1
                break
        if opts.fmt == "pretty" and opts.pretty is not None:
            chunk = "".join(opts.pretty(obj) + "\n" for obj, _ in out)
        else:
            chunk = render_chunk(out, opts.fmt)
        with stop.critical():
            if chunk:
                sink.write(chunk)
            st.emitted += len(out)
            st.pages += 1
            page_ids = [event_id(o) for o, _ in page.items]
            if partial:
                new = Checkpoint(page_token or "", None if page_token else since_iso,
                                 skip=page_ids[: written_upto + 1], last_ids=sorted(prev_ids))
            else:
                new = Checkpoint(page.next_token or "", skip=[],
                                 last_ids=page_ids[-LAST_IDS_KEPT:] if page_ids
                                 else sorted(prev_ids))
            new.output = sink.position()
            if checkpoint is not None and (new.token or new.after_time) and (
                chunk or partial or new.token != st.token or from_checkpoint
            ):
                checkpoint.save(new)
                from_checkpoint = False
            if not partial:
                st.token = page.next_token
        if st.stopped_by:
            return st
        if page_ids:
            prev_ids = set(page_ids[-LAST_IDS_KEPT:])
        caught_up = is_caught_up(page, page_token)
        page_token = page.next_token
        target, params = page.next_url or target, None
        if caught_up:
            if not opts.follow:
                st.stopped_by = "caught-up"
                return st
            nap(_jitter(opts.interval))


def _token_refused(exc: NodecliError, from_checkpoint: bool, checkpoint: CheckpointFile | None,
                   token: str) -> NodecliError:
    if from_checkpoint and checkpoint is not None:
        return NodecliError(
            f"the node refused the position saved in checkpoint {checkpoint.path} "
            f"(iteration token {clean(token, 60)}): {exc.message}",
            hint="the node's log may have been reset, or the checkpoint is from another node; "
                 f"nothing was skipped: to start over, delete {checkpoint.path} and choose a "
                 "start with --since or --iteration-token")
    return NodecliError(f"the node refused iteration token {clean(token, 60)}: {exc.message}",
                        hint="take a token from a recent 'nodecli events list' of this node, "
                             "or start with --since")


def check_destinations(fmt: str, checkpoint_file: Path | None, resume_name: str | None,
                       output_file: Path | None) -> None:
    """Refuse combinations of --checkpoint/--resume/--to/-o that cannot work."""
    if checkpoint_file is not None and resume_name is not None:
        raise UsageError("give --checkpoint FILE or --resume NAME, not both")
    if resume_name is not None and not NAME_RE.fullmatch(resume_name):
        raise UsageError(f"invalid checkpoint name {resume_name[:40]!r}: letters, digits, "
                         "'.', '_' and '-' (at most 64)")
    if output_file is not None and fmt not in ("jsonl", "plain"):
        raise UsageError("--to FILE writes jsonl or plain (one event per line, so a "
                         "restart can find what is already there)")


def run_tail(client: Client, opts: TailOptions, *, state_dir: Path, out: IO[str],
             checkpoint_file: Path | None = None, resume_name: str | None = None,
             output_file: Path | None = None, status: Status | None = None,
             notice: Status | None = None, log: Status | None = None) -> TailState:
    """``events tail`` as a whole: where the position is kept, where events go, the
    version check, signals, then :func:`tail`; everything is released at the end.

    The position lives in ``checkpoint_file``, in the named checkpoint ``resume_name``
    (under ``state_dir``), or, for ``output_file`` alone, in ``<output_file>.checkpoint``.
    """
    check_destinations(opts.fmt, checkpoint_file, resume_name, output_file)
    path: Path | None = None
    if resume_name is not None:
        path = resume_path(state_dir, client, resume_name, opts.flt)
    elif checkpoint_file is not None:
        path = Path(checkpoint_file)
    elif output_file is not None:
        path = Path(str(output_file) + ".checkpoint")
    checkpoint = CheckpointFile(path, node=node_key(client), flt=opts.flt) if path else None
    stop = GracefulStop()
    sink: Sink | None = None
    try:
        if checkpoint is not None:
            checkpoint.lock()
        sink = FileSink(Path(output_file), opts.fmt) if output_file is not None \
            else StreamSink(out)
        info = node_info(client, state_dir, log=log)
        stop.install()
        return tail(client, opts, sink, checkpoint=checkpoint, info=info, status=status,
                    notice=notice, stop=stop)
    finally:
        stop.restore()
        if isinstance(sink, FileSink):
            sink.close()
        if checkpoint is not None:
            checkpoint.unlock()
