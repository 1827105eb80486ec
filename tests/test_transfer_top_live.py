"""`transfer top` refreshes incrementally (node.transfers.LiveTransfers): a full list at
start, then only the transfers started since, the running ones, and those that ended
since the last refresh; what it shows is what a full list would show. Over HTTPS against
the emulator, whose access log counts the requests."""

from __future__ import annotations

import time
from collections import Counter
from urllib.parse import parse_qs, urlsplit

import pytest

from nodecli.emulator.transfers import book_of
from nodecli.http.client import Auth, open_client
from nodecli.node.transfers import (
    LIVE_PAGE_SIZE,
    PAGE_SIZE,
    LiveTransfers,
    list_transfers,
)


@pytest.fixture
def client(emulator):
    with open_client(emulator.endpoint(Auth("basic", "admin", "admin-pass"))) as c:
        yield c


def _kinds(lines: list[str]) -> Counter[str]:
    """Requests by kind: list (all), active (active_only), one (GET of one transfer)."""
    out: Counter[str] = Counter()
    for line in lines:
        target = line.split('"')[1].split(" ")[1]
        parts = urlsplit(target)
        if parts.path == "/ops/transfers":
            out["active" if parse_qs(parts.query).get("active_only") else "list"] += 1
        elif parts.path.startswith("/ops/transfers/"):
            out["one"] += 1
    return out


def _state(transfers: list[dict]) -> list[tuple[str, str]]:
    return [(t["id"], t["status"]) for t in transfers]


def test_a_refresh_asks_only_for_what_changed_and_shows_what_a_full_list_shows(
        emulator, client, served):
    book = book_of(emulator.state)
    book.seconds = 3600.0  # nothing ends by itself during the test
    book.seed(2500)
    live = LiveTransfers(client)
    first = live.refresh()
    assert _state(first) == _state(list_transfers(client))
    # the first refresh lists everything, in pages as large as the node allows
    assert _kinds(served)["list"] >= 2500 // LIVE_PAGE_SIZE
    served.clear()
    # nothing changed: one page of new ones (empty), the running ones, no single GET
    assert _state(live.refresh()) == _state(first)
    kinds = _kinds(served)
    assert kinds["list"] == 1 and kinds["one"] == 0 and kinds["active"] >= 1
    running = [t for t in book.items if t.status(time.time()) == "running"]
    # two running transfers end (one completes, one is cancelled), three new ones start
    running[0].start = running[0].changed = time.time() - 10 * 3600
    client.request("CANCEL", f"/ops/transfers/{running[1].id}", expect=(200,))
    for n in range(3):
        book.start("alice", None, {"remote_host": f"new-{n}", "paths": [{"source": "/x"}]})
    served.clear()
    now = live.refresh()
    kinds = _kinds(served)
    assert kinds["one"] == 2  # exactly the two that ended
    assert kinds["list"] == 2  # the three new ones on one page, then an empty page
    assert kinds["active"] <= len(running) // LIVE_PAGE_SIZE + 2  # the running ones
    assert _state(now) == _state(list_transfers(client))
    by_id = dict(_state(now))
    assert by_id[running[0].id] == "completed" and by_id[running[1].id] == "cancelled"


def test_a_node_that_refuses_large_pages_is_asked_for_small_ones(emulator, client):
    book = book_of(emulator.state)
    book.seed(250)
    emulator.state.extensions["max_transfer_page"] = PAGE_SIZE
    try:
        live = LiveTransfers(client)
        assert len(live.refresh()) == 250
        assert live.count == PAGE_SIZE
    finally:
        emulator.state.extensions.pop("max_transfer_page", None)


def test_top_once_shows_every_transfer(emulator, node_env, invoke):
    book_of(emulator.state).seed(1200)
    r = invoke("transfer", "top", "--once", "-o", "json", env=node_env)
    assert r.exit_code == 0, r.stderr
    import json

    assert len(json.loads(r.stdout)) == 1200


def test_when_more_ended_than_a_page_holds_the_list_is_read_again(emulator, client,
                                                                   served):
    book = book_of(emulator.state)
    book.seconds = 3600.0
    book.seed(300)
    live = LiveTransfers(client)
    live.count = 100  # pages of 100: more than 100 ended is a full list
    live.refresh()
    running = [t for t in book.items if t.status(time.time()) == "running"]
    assert len(running) > 150
    for t in running[:150]:
        t.start = t.changed = time.time() - 10 * 3600
    served.clear()
    now = live.refresh()
    kinds = _kinds(served)
    assert kinds["one"] == 0 and kinds["list"] >= 300 // 100
    assert _state(now) == _state(list_transfers(client))
