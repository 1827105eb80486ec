"""One page of the activity log (GET /events, GET /events/{id}): filters and query
parameters exactly as interface.md 4.1 names them, a hostile answer validated, Link
followed, and the version gates and hints of listing."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlsplit

from nodecli.errors import (
    NodecliError,
    NotFoundError,
    RemoteError,
    UsageError,
    shorten,
)
from nodecli.node.info import (
    EXPLICIT_LOGGING_VERSION,
    MIN_EVENTS_VERSION,
    MIN_GET_BY_ID_VERSION,
    PER_KEY_LOGGING_VERSION,
    NodeInfo,
    Status,
    node_info,
)
from nodecli.timeparse import format_utc

if TYPE_CHECKING:
    from nodecli.http.client import Client


DEFAULT_PAGE_SIZE = 1000

# ``count`` is an unsigned integer (interface.md 4.1) with no maximum shown: any value is
# sent as given and a node may cap it; only a count too large for any node to mean is
# refused (2**63 - 1, the largest signed 64-bit integer).
MAX_COUNT = 2**63 - 1
TYPE_RE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")
GLOB_RE = re.compile(r"(\*|[a-z][a-z0-9_]*)(\.(\*|[a-z][a-z0-9_]*))*\*?")
LOGGING_HINT = ("the node's event log is empty: on nodes 3.7.4 and later events are logged "
                "only when the server setting activity_event_logging is true (set it, then "
                "restart the node service)")


class MalformedPage(RemoteError):
    """The node answered 200 with something that is not a valid events page."""


@dataclass(frozen=True, slots=True)
class EventFilter:
    """At most one of ``type`` and ``type_glob`` (the node takes one per request)."""

    type: str | None = None
    type_glob: str | None = None

    def __post_init__(self) -> None:
        self._check()

    def _check(self) -> None:
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
        params.append(("after_time", format_utc(since)))
    if token is not None:
        params.append(("iteration_token", token))
    if count is not None:
        params.append(("count", str(count)))
    return params


@dataclass(slots=True)
class Page:
    """One answer of GET /events: events (object + original JSON text) and what's next.

    ``foreign_host`` is the host a Link rel="next" named when it was not the user's (its
    query is then requested on the user's base URL instead; nothing is ever sent to
    that host)."""

    items: list[tuple[dict[str, Any], str]]
    next_url: str | None
    next_token: str | None
    url: str
    link_problem: str | None = None
    foreign_host: str | None = None

    @property
    def events(self) -> list[dict[str, Any]]:
        return [obj for obj, _ in self.items]

    def __len__(self) -> int:
        return len(self.items)

_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, i: int) -> int:
    if i < len(text) and text[i] not in " \t\n\r":
        return i
    m = _WS.match(text, i)
    return m.end() if m else i


def event_id(obj: dict[str, Any]) -> str:
    return str(obj.get("id"))


def parse_events(body: bytes, url: str = "", limit: int | None = None, what: str = "events"
                 ) -> list[tuple[dict[str, Any], str]]:
    """A JSON array of event objects, each with its original compact text.

    An id repeated within the page is kept once (the first). Numbers and constants no
    program could print back are kept as the server's text (see nodecli.remote_json);
    an event holding ``NaN``/``Infinity`` gets strict JSON as its text. Raises
    :class:`MalformedPage` for anything else: not UTF-8, not JSON, nested too deeply,
    not an array, an item that is not an object or has no string/integer ``id``, or
    more than ``limit`` events (the ``count`` asked for: "at most count", interface.md
    4.1; this is also what bounds the memory a page costs).
    """
    from nodecli.remote_json import compact, decoder

    where = f"{url}: " if url else ""
    odd: list[str] = []
    dec = decoder(on_constant=odd)
    ids: set[Any] = set()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedPage(f"{where}the {what} page is not UTF-8 text") from None
    i = _skip_ws(text, 0)
    if text[i:i + 1] != "[":
        kind = "empty" if i >= len(text) else "not a JSON array"
        raise MalformedPage(f"{where}the {what} page is {kind} ({len(body)} bytes)")
    i = _skip_ws(text, i + 1)
    items: list[tuple[dict[str, Any], str]] = []
    n = len(text)
    if text[i:i + 1] == "]":
        i = _skip_ws(text, i + 1)
    else:
        while True:
            try:
                obj, end = dec.raw_decode(text, i)
            except ValueError:
                raise MalformedPage(f"{where}the {what} page is not valid JSON "
                                    f"(at character {i})") from None
            except RecursionError:
                raise MalformedPage(f"{where}item {len(items) + 1} of the {what} page nests "
                                    "deeper than nodecli reads") from None
            if not isinstance(obj, dict):
                raise MalformedPage(f"{where}item {len(items) + 1} of the {what} page is "
                                    f"not an object")
            eid = obj.get("id")
            if isinstance(eid, bool) or not isinstance(eid, (str, int)) or eid == "":
                raise MalformedPage(f"{where}item {len(items) + 1} of the {what} page has "
                                    "no id")
            if eid not in ids:
                ids.add(eid)
                if limit is not None and len(items) >= limit:
                    raise MalformedPage(f"{where}the node sent more than the {limit} events "
                                        "asked for (count) in one page")
                raw = text[i:end]
                if odd or "\n" in raw or "\r" in raw:
                    raw = compact(obj)
                items.append((obj, raw))
            odd.clear()  # (what the decoder met in this item only)
            i = _skip_ws(text, end)
            ch = text[i:i + 1]
            if ch == ",":
                i = _skip_ws(text, i + 1)
                continue
            if ch == "]":
                i = _skip_ws(text, i + 1)
                break
            raise MalformedPage(f"{where}the {what} page is not valid JSON (at character {i})")
    if i != n:
        raise MalformedPage(f"{where}the {what} page has data after the array")
    return items


def parse_page(body: bytes, link_header: str | None, url: str, base_url: str,
               collection: str = "/events") -> Page:
    """Validate one page. Link problems are reported in ``link_problem``, not raised.

    A ``Link: rel="next"`` that names another host (a node behind a proxy, NAT or load
    balancer advertising its internal name) is not followed there: its query
    (``iteration_token`` and whatever else it carries) is requested on ``base_url``'s
    ``collection`` (``/events``, ``/ops/transfers``), and ``foreign_host`` says which
    host was named.
    """
    from nodecli.http.links import LinkError, next_page

    asked = parse_qs(urlsplit(url).query).get("count")
    limit = int(asked[-1]) if asked and re.fullmatch(r"[0-9]{1,18}", asked[-1]) else None
    items = parse_events(body, url, limit or None, collection.rsplit("/", 1)[-1])
    token = None
    problem = None
    foreign = None
    try:
        nxt = next_page(link_header, url, base_url, collection)
        next_url, foreign = nxt.url, nxt.foreign_host
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


class RetryLater(Exception):
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
               *, retry_statuses: bool = False, collection: str = "/events") -> Page:
    """GET one page (``target`` is ``collection`` with params, or a Link URL) of a list
    that pages like ``/events`` (``/ops/transfers`` does too)."""
    from nodecli.http.errors import RETRY_STATUSES, parse_retry_after

    expect: tuple[int, ...] = (200,)
    if retry_statuses:
        expect = (200, 500, *RETRY_STATUSES)
    resp = client.request("GET", target, params=list(params) if params else None,
                          expect=expect, hint_for=_hint_for)
    if resp.status != 200:
        raise RetryLater(f"HTTP {resp.status}", parse_retry_after(resp.header("retry-after")))
    page = parse_page(resp.body, resp.header("link"), resp.url, client.endpoint.base_url,
                      collection)
    if page.foreign_host is not None:
        client.log(f"! the Link rel=\"next\" names host {page.foreign_host}: its query is "
                   f"requested on {client.endpoint.base_url} instead")
    return page


def is_caught_up(page: Page, used_token: str | None) -> bool:
    """Whether ``page`` reached the present: an EMPTY page, or a Link that names the very
    token the page was asked for. A short page is not the end: ``count`` is "at most"
    (interface.md 4.1) and a node may cap it below what was asked."""
    return len(page) == 0 or (used_token is not None and page.next_token == used_token)


class LinkLoop(RemoteError):
    """The node's Link led back to a page already read in this run."""


class LoopGuard:
    """Remembers every page of the run (by the iteration token it was asked with, in a
    :class:`~nodecli.http.links.PageTrail`: 16 bytes a page), so that a node whose Link
    leads back to any of them (page A -> B -> A, or a cycle of a million pages) while
    pages still carry events is stopped before that page is read, written or
    checkpointed again."""

    def __init__(self) -> None:
        from nodecli.http.links import PageTrail

        self._trail = PageTrail()

    def check(self, page: Page, used_token: str | None) -> None:
        """Call after each page, with the token it was asked for. Raises LinkLoop."""
        if used_token is not None:
            self._trail.add(used_token)
        nxt = page.next_token
        if len(page) and nxt is not None and nxt != used_token and nxt in self._trail:
            raise LinkLoop(f'{page.url}: the node\'s Link rel="next" leads back to a page '
                           f"already read (iteration token {shorten(nxt, 80)}, after "
                           f"{len(self._trail)} pages); stopping rather than reading it "
                           "again")


def foreign_host_notice(host: str, base_url: str) -> str:
    return (f'the node\'s Link rel="next" names another host ({host}); nodecli requests '
            f"the next pages on {base_url} (the URL you gave) and sends nothing to {host}")


def iter_pages(client: Client, flt: EventFilter, *, since: datetime | None = None,
               token: str | None = None, page_size: int = DEFAULT_PAGE_SIZE) -> Iterator[Page]:
    """Pages from the start point to the present, following Link (constant memory)."""
    page = fetch_page(client, "/events", build_params(flt, since=since, token=token,
                                                      count=page_size))
    used = token
    guard = LoopGuard()
    while True:
        guard.check(page, used)
        yield page
        if is_caught_up(page, used):
            return
        if page.link_problem or page.next_url is None:
            raise MalformedPage(f"{page.url}: {page.link_problem}")
        used = page.next_token
        page = fetch_page(client, page.next_url)


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
    if client.endpoint.auth.kind == "bearer":
        # a token's empty answer says nothing of the log: it sees only what it may see
        hint = ("no event is visible to this bearer token: a token sees only the events "
                "of files on which its user or groups hold a permission (nodecli "
                "permission grant PATH --user ID --levels list); if the node's event log "
                "is empty too: " + LOGGING_HINT.split(": ", 1)[1])
    ak = client.endpoint.auth.access_key
    if ak and info.at_least(PER_KEY_LOGGING_VERSION) is not False:
        hint += (f"; or, on nodes 3.8.0 and later, access key {ak!r} may have its own "
                 f"setting off: nodecli access-key set {ak} --activity-event-logging on "
                 "(see 'nodecli access-key show')")
    if info.logging is False:
        return hint
    try:
        probe = fetch_page(client, "/events", [("count", "1")])
    except NodecliError:
        return None
    return hint if len(probe) == 0 else None


@dataclass(slots=True)
class ListResult:
    """One page as ``events list`` shows it, with a hint when it came back empty."""

    page: Page
    hint: str | None = None
    base_url: str = ""


def list_events(client: Client, flt: EventFilter, *, since: datetime | None = None,
                token: str | None = None, count: int | None = None,
                state_dir: str | Path | None = None, log: Status | None = None) -> ListResult:
    """One page, as the node returns it (after one cached GET /info for the version)."""
    info = node_info(client, state_dir, log=log)
    require_events(info, client.endpoint.label or client.endpoint.base_url)
    try:
        page = fetch_page(client, "/events", build_params(flt, since=since, token=token,
                                                          count=count))
    except NotFoundError as exc:
        raise explain_404(exc, info) from None
    except NodecliError as exc:
        if token is not None and getattr(exc, "status", None) == 400:
            raise NodecliError(f"{exc.message}", hint="the node refused the iteration token "
                               "(or a filter): take a token from a recent 'events list' of "
                               "this node") from None
        raise
    hint = empty_log_hint(client, info) if len(page) == 0 and not flt.params() else None
    return ListResult(page, hint, client.endpoint.base_url)


def explain_404(exc: NotFoundError, info: NodeInfo | None) -> NodecliError:
    if info is None:
        return NotFoundError(exc.message, hint="the node has no /events endpoint: nodes "
                             "before 3.6.0 have none")
    return exc


def get_event(client: Client, event_id_: str, *, state_dir: str | Path | None = None,
              log: Status | None = None) -> dict[str, Any]:
    """GET /events/{id}; 404 explained (no such event, or a node older than 3.7.3)."""
    eid = event_id_.strip()
    if not eid or len(eid) > 200 or any(ord(c) < 32 or ord(c) == 127
                                        or 0xD800 <= ord(c) <= 0xDFFF for c in eid):
        raise UsageError("an event id is a non-empty word (see 'nodecli events list')")
    info = node_info(client, state_dir, log=log)
    label = client.endpoint.label or client.endpoint.base_url
    require_get_by_id(info, label)
    try:
        resp = client.request("GET", "/events/" + quote(eid, safe=""))
    except NotFoundError:
        hint = "list event ids with: nodecli events list"
        if info is None or info.version is None:
            hint += " (or the node is older than 3.7.3, which has no GET /events/{id})"
        raise NotFoundError(f"no such event: {shorten(eid)}", hint=hint) from None
    from nodecli.remote_json import TooDeep, loads

    try:
        obj = loads(resp.body)
    except TooDeep:
        raise RemoteError(f"the node's answer for event {shorten(eid)} nests deeper than "
                          "nodecli reads") from None
    except ValueError:
        raise RemoteError(f"the node's answer for event {shorten(eid)} is not JSON") from None
    if not isinstance(obj, dict):
        raise RemoteError(f"the node's answer for event {shorten(eid)} is not an object")
    return obj


def event_types(event: dict[str, Any]) -> list[str]:
    from nodecli.remote_json import strings

    return strings(event.get("types"))
