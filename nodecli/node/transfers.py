"""Transfers started on a node (POST /ops/transfers, with a bearer token) from a
transfer specification in a JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nodecli.errors import UsageError
from nodecli.fsutil import read_limited

MAX_SPEC_BYTES = 1024 * 1024


def load_transfer_spec(path: str) -> dict[str, Any]:
    """A transfer specification from a JSON file (``-`` is not accepted: give a file)."""
    p = Path(path).expanduser()
    raw = read_limited(p, MAX_SPEC_BYTES, "transfer spec")
    try:
        spec = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"transfer spec {p} is not UTF-8 text") from None
    except ValueError as exc:
        raise UsageError(f"transfer spec {p} is not valid JSON: {exc}") from None
    except RecursionError:
        raise UsageError(f"transfer spec {p} is nested too deeply") from None
    if not isinstance(spec, dict):
        raise UsageError(f"transfer spec {p} must hold a JSON object")
    return spec


def start_transfer(client: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """POST /ops/transfers with a bearer token; return the node's answer."""
    from nodecli.errors import RemoteError

    if client.endpoint.auth.kind != "bearer":
        raise UsageError("starting a transfer needs a bearer token: --bearer-file PATH "
                         "(or NODECLI_BEARER) with --access-key AK")
    data = client.json("POST", "/ops/transfers", json_body=spec, expect=(200, 201, 202))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RemoteError("the node answered the transfer request with something other "
                          "than a JSON object")
    return data


# -- the lifecycle: list, show, change, cancel, watch -----------------------------------------

COLLECTION = "/ops/transfers"
PAGE_SIZE = 100
RUNNING = "running"


def is_final(transfer: dict[str, Any]) -> bool:
    """Whether a transfer has ended: any status the node does not call running (the
    node family documents running and completed; others are shown as given)."""
    return transfer.get("status") != RUNNING


def check_transfer_id(value: str) -> str:
    """An id that goes into a URL path."""
    from nodecli.http.checks import check_id

    return check_id(value, "transfer id")


def _path(transfer_id: str) -> str:
    from urllib.parse import quote

    return f"{COLLECTION}/{quote(check_transfer_id(transfer_id), safe='')}"


def transfer_pages(client: Any, *, active: bool = False, token: str | None = None,
                   count: int = PAGE_SIZE) -> Any:
    """Every page of GET /ops/transfers, following Link rel="next" as the events pager
    does (the same code: short pages, a foreign Link host, a Link loop), until an empty
    page or a Link naming the token just used. Yields (page, the token it was asked for)."""
    from nodecli.errors import RemoteError
    from nodecli.node.events.pages import LoopGuard, fetch_page, is_caught_up

    params: list[tuple[str, str]] | None = [("count", str(count))]
    if active and params is not None:
        params.append(("active_only", "true"))
    if token is not None and params is not None:
        params.append(("iteration_token", token))
    target, used, guard = COLLECTION, token, LoopGuard()
    while True:
        page = fetch_page(client, target, params, collection=COLLECTION)
        if page.link_problem and len(page):
            raise RemoteError(f"{page.url}: {page.link_problem}")
        guard.check(page, used)
        yield page, used
        if is_caught_up(page, used) or page.next_url is None:
            return
        target, params, used = page.next_url, None, page.next_token


def list_transfers(client: Any, *, active: bool = False,
                   statuses: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every transfer (``active``: the running ones), optionally only those whose
    status is in ``statuses``."""
    found: list[dict[str, Any]] = []
    for page, _ in transfer_pages(client, active=active):
        found += [t for t in page.events if not statuses or t.get("status") in statuses]
    return found


#: the page size a live view asks for; a node that refuses it (400) is asked for PAGE_SIZE
LIVE_PAGE_SIZE = 1000


class LiveTransfers:
    """A node's transfers, kept current for a live view (``transfer top``) at a cost per
    refresh that follows what changed, not how many transfers the node holds.

    The first refresh lists every transfer. Each later one asks for the transfers started
    since (from the iteration token where the last listing ended), the running ones
    (``active_only``), and then, one by one, those that were running and are no longer
    among them: they ended since (more of them than a page holds: the whole list is read
    again instead, which costs less). A node whose listing gives no iteration token is
    listed whole each time. Pages are as large as the node allows: LIVE_PAGE_SIZE, or
    PAGE_SIZE when the node answers 400 to it (a node may also cap ``count`` itself)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.count = LIVE_PAGE_SIZE
        self.by_id: dict[str, dict[str, Any]] = {}
        self.token: str | None = None
        self.refreshes = 0

    def refresh(self) -> list[dict[str, Any]]:
        """Every transfer known, oldest first, as of now."""
        running_before = {key for key, t in self.by_id.items() if not is_final(t)}
        seen = self._pages(active=False, token=self.token, update_token=True)
        if self.refreshes and self.token is not None:
            seen |= self._pages(active=True, token=None, update_token=False)
            ended = sorted(running_before - seen)
            if len(ended) > self.count:  # one GET each would cost more than a full list
                self._pages(active=False, token=None, update_token=False)
            else:
                for key in ended:
                    self._ended(key)
        self.refreshes += 1
        return list(self.by_id.values())

    def _pages(self, *, active: bool, token: str | None, update_token: bool) -> set[str]:
        from nodecli.errors import NodecliError

        seen: set[str] = set()
        try:
            pages = list(transfer_pages(self.client, active=active, token=token,
                                        count=self.count))
        except NodecliError as exc:
            if getattr(exc, "status", None) != 400 or self.count == PAGE_SIZE:
                raise
            self.count = PAGE_SIZE
            return self._pages(active=active, token=token, update_token=update_token)
        last = token
        for page, used in pages:
            for transfer in page.events:
                key = transfer.get("id")
                if isinstance(key, str):
                    self.by_id[key] = transfer
                    seen.add(key)
            last = page.next_token or used
        if update_token:
            self.token = last
        return seen

    def _ended(self, key: str) -> None:
        """A transfer that was running and is no longer listed as such: its final state
        (a node that forgot it: it leaves the view)."""
        from nodecli.errors import NotFoundError

        try:
            self.by_id[key] = get_transfer(self.client, key)
        except NotFoundError:
            self.by_id.pop(key, None)


def _object(data: Any, what: str) -> dict[str, Any]:
    from nodecli.errors import RemoteError

    if not isinstance(data, dict):
        raise RemoteError(f"{what} did not answer with a JSON object")
    return data


def get_transfer(client: Any, transfer_id: str) -> dict[str, Any]:
    return _object(client.json("GET", _path(transfer_id), hint_for=_hint(transfer_id)),
                   f"GET {COLLECTION}/{transfer_id}")


def modify_transfer(client: Any, transfer_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """PUT exactly ``body`` (a change of a running transfer, e.g. target_rate_kbps)."""
    if not body:
        raise UsageError("nothing to change: give --target-rate RATE or --set KEY=VALUE")
    resp = client.request("PUT", _path(transfer_id), json_body=body, expect=(200, 204),
                          hint_for=_hint(transfer_id))
    return _object(resp.json(), "PUT") if resp.body else {}


def cancel_transfer(client: Any, transfer_id: str) -> dict[str, Any]:
    """The HTTP method CANCEL on the transfer (not retried: it may have taken effect)."""
    resp = client.request("CANCEL", _path(transfer_id), expect=(200, 202, 204),
                          retry=False, hint_for=_hint(transfer_id))
    return _object(resp.json(), "CANCEL") if resp.body else {}


def _hint(transfer_id: str) -> Any:
    def hint(status: int) -> str | None:
        return (f"no transfer {transfer_id!r} that this login may see: 'nodecli transfer "
                "list' shows them" if status == 404 else None)

    return hint


RATE_UNITS = {"": 1, "k": 1, "m": 1000, "g": 1_000_000}


def parse_rate(text: str) -> int:
    """A rate in kbps: ``500m`` (Mbps), ``2g``, ``800k`` or ``800`` (kbps)."""
    import re

    m = re.fullmatch(r"\s*([0-9]{1,9}(?:\.[0-9]{1,3})?)\s*([kKmMgG]?)(?:bps)?\s*", text or "")
    if not m:
        raise UsageError(f"--target-rate: {text[:40]!r} is not a rate (500m, 2g, 800k)")
    kbps = int(float(m.group(1)) * RATE_UNITS[m.group(2).lower()])
    if kbps <= 0:
        raise UsageError("--target-rate must be above 0")
    return kbps


def watch_transfers(client: Any, ids: list[str], *, interval: float = 2.0,
                    timeout: float | None = None,
                    on_update: Any = None, sleep: Any = None,
                    clock: Any = None) -> tuple[dict[str, dict[str, Any]], bool]:
    """Poll each transfer until all have ended or ``timeout`` passed; return the last
    objects by id and whether the timeout ended the watch.

    The client's deadline budget (--deadline) may end the watch's requests at the
    watch's end (the command line sets ``until`` to it): a request cut there, or a
    moment past it, ends the watch as timed out; no request starts after it."""
    import time

    from nodecli import interrupt
    from nodecli.errors import RemoteError

    # (not time.sleep: a signal another thread takes ends the wait at once too)
    nap = sleep or interrupt.wait
    now = clock or time.monotonic
    budget = getattr(getattr(client, "endpoint", None), "budget", None)

    def over() -> bool:
        return timeout is not None and budget is not None and bool(budget.over())

    started = now()
    last: dict[str, dict[str, Any]] = {}
    while True:
        for tid in ids:
            if tid in last and is_final(last[tid]):
                continue
            try:
                last[tid] = get_transfer(client, tid)
            except RemoteError:
                if over() or (timeout is not None and now() - started >= timeout):
                    return last, True
                raise
        if on_update is not None:
            on_update(last, now() - started)
        if all(is_final(last[t]) for t in ids):
            return last, False
        if timeout is not None and now() - started >= timeout:
            return last, True
        left = None if timeout is None else timeout - (now() - started)
        nap(interval if left is None else max(min(interval, left), 0.0))
        if over():
            return last, True


def transfer_checkpoint(client: Any, state_dir: Any, *, name: str | None = None,
                        path: Any = None, active: bool = False) -> Any:
    """The checkpoint of ``transfer list --resume NAME`` (in the home's state, per node,
    login and --active) or ``--checkpoint FILE``: the iteration token after the last
    transfer printed."""
    from pathlib import Path

    from nodecli.node.events.checkpoint import CheckpointFile, node_key, resume_path
    from nodecli.node.events.pages import EventFilter

    flt = EventFilter()
    if name is not None:
        where = resume_path(state_dir, client, f"transfers{'-active' if active else ''}.{name}",
                            flt)
    else:
        where = Path(path)
    return CheckpointFile(where, node=node_key(client), flt=flt)


def new_transfer_pages(client: Any, checkpoint: Any, *, active: bool = False) -> Any:
    """The pages of transfers not listed before (after the checkpoint's token), each with
    a function that records it as listed: call it once the page has been printed."""
    from nodecli.node.events.checkpoint import Checkpoint

    cp = checkpoint.load()
    for page, used in transfer_pages(client, active=active, token=cp.token if cp else None):
        nxt = page.next_token or used

        def commit(token: str | None = nxt) -> None:
            if token:
                checkpoint.save(Checkpoint(token))

        yield page.events, commit
