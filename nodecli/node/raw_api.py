"""``nodecli api``: any request to a node (or the collaboration service) with the
profile's credentials, TLS, proxy, retries and redaction, for what no command covers.

The method follows gh's rule: GET, or POST as soon as fields (``-f``/``-F``) or
``--input`` are given, unless ``-X`` names another; ``--paginate`` means GET (another
``-X`` is refused), so that its fields are the query of the first page. Fields become
the query string of GET, DELETE, HEAD and CANCEL requests and a JSON object body
otherwise; ``--input`` sends a body as it is. ``--paginate`` follows ``Link:
rel="next"`` with the events pager's rules and joins the pages' arrays.

Under ``--dry-run`` nothing is sent, not even a GET: the request is the command, so
:func:`dry_run` says what would be sent (and, with ``--paginate``, that the pages
would be followed) and stops.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from nodecli.errors import UsageError

QUERY_METHODS = ("GET", "DELETE", "HEAD", "CANCEL")
METHOD_RE = re.compile(r"[A-Z][A-Z_-]{0,19}")
HEADER_RE = re.compile(r"([!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}):[ \t]*(.*)")
ALL_2XX = tuple(range(200, 300))


@dataclass(slots=True)
class Call:
    method: str
    path: str
    params: list[tuple[str, str]]
    body: bytes | None
    headers: dict[str, str]


def plan(method: str | None, path: str, typed: tuple[str, ...], strings: tuple[str, ...],
         body: bytes | None, headers: tuple[str, ...], *, paginate: bool = False) -> Call:
    """Check everything and build the request (nothing is sent here)."""
    import json

    from nodecli.values import parse_assignment

    if body is not None and (typed or strings):
        raise UsageError("give fields (-f/-F) or --input, not both")
    if paginate:
        method = method or "GET"
        if method.upper() != "GET":
            raise UsageError(f"--paginate follows Link rel=\"next\" of GET lists: not with "
                             f"-X {method[:30]}")
        if body is not None:
            raise UsageError("--paginate sends GET: give the query as fields (-f), not "
                             "--input")
    verb = (method or ("POST" if typed or strings or body is not None else "GET")).upper()
    if not METHOD_RE.fullmatch(verb):
        raise UsageError(f"-X: {verb[:30]!r} is not an HTTP method")
    if not path.startswith("/") or any(c.isspace() or ord(c) < 32 for c in path):
        raise UsageError(f"PATH starts with '/' and has no spaces: {path[:60]!r}")
    fields: dict[str, Any] = {}
    for item in typed:
        key, _, raw = item.partition("=")
        if not key or not _:
            raise UsageError(f"-f takes KEY=VALUE, not {item[:40]!r}")
        fields[key] = _file_value(raw[1:]) if raw.startswith("@") else \
            parse_assignment(f"x={raw}")[1]
    for item in strings:
        key, _, raw = item.partition("=")
        if not key or not _:
            raise UsageError(f"-F takes KEY=VALUE, not {item[:40]!r}")
        fields[key] = raw
    hdrs: dict[str, str] = {}
    for item in headers:
        m = HEADER_RE.fullmatch(item)
        if not m or any(ord(c) < 32 and c != "\t" for c in m.group(2)):
            raise UsageError(f"-H takes 'Name: value' on one line, not {item[:40]!r}")
        hdrs[m.group(1)] = m.group(2)
    params: list[tuple[str, str]] = []
    if fields and verb in QUERY_METHODS:
        params = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in fields.items()]
    elif fields:
        body = json.dumps(fields, separators=(",", ":")).encode()
    if body is not None:
        hdrs.setdefault("Content-Type", "application/json")
    return Call(verb, path, params, body, hdrs)


def _file_value(path: str) -> str:
    from nodecli.fsutil import read_limited

    raw = read_limited(path, 16 * 1024 * 1024, "field file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not UTF-8 text") from None


def dry_run(client: Any, call: Call, paginate: bool) -> BaseException:
    """The stop of ``--dry-run``: the request as it would go (secrets as ``***``)."""
    from nodecli import dryrun

    stop = dryrun.request(call.method, client.url_for(call.path), call.body, client.redact,
                          call.params)
    if paginate:
        lines = stop.message.splitlines()
        lines.insert(-1, 'then each page its Link rel="next" names, until an empty page '
                         "or one that names no next page")
        stop = dryrun.DryRunStop("\n".join(lines))
    return stop


def send(client: Any, call: Call) -> Any:
    """One request; any 2xx is an answer (others raise the mapped error)."""
    return client.request(call.method, call.path, params=call.params or None, body=call.body,
                          headers=call.headers, expect=ALL_2XX)


def paginate(client: Any, call: Call) -> list[Any]:
    """Every page of a list that pages with Link rel="next" (GET only), joined."""
    from nodecli.node.events.pages import LoopGuard, fetch_page, is_caught_up

    if call.method != "GET":
        raise UsageError("--paginate follows Link rel=\"next\" of GET lists")
    collection = call.path.split("?", 1)[0]
    found: list[Any] = []
    target, params, used, guard = call.path, call.params or None, None, LoopGuard()
    while True:
        page = fetch_page(client, target, params, collection=collection)
        guard.check(page, used)
        found += page.events
        if is_caught_up(page, used) or page.next_url is None:
            return found
        target, params, used = page.next_url, None, page.next_token
