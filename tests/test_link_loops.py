"""Link loops of any length end (issue 34, item 1): a node whose ``Link rel="next"`` runs
in a cycle of 1,001 distinct pages (one more than the pagers once remembered) over HTTPS.
Every pager stops with exit 6 before anything of a page already read is written again,
printed, or checkpointed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nodecli.http.links import PageTrail
from tests.scripted_server import ScriptedServer, Seen, certificates, reply

CYCLE = 1001  # pages 1 -> 2 -> ... -> 1001 -> 1
INFO = json.dumps({"application": "node", "version": "4.4.5",
                   "current_time": "2030-01-01T00:00:00Z"}).encode()
JSON = [("Content-Type", "application/json")]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    return certificates(tmp_path_factory.mktemp("tls"))


def _query(seen: Seen, name: str) -> str | None:
    from urllib.parse import parse_qs, urlsplit

    values = parse_qs(urlsplit(seen.target).query).get(name)
    return values[-1] if values else None


def _item(collection: str, n: int) -> dict[str, Any]:
    if collection == "/ops/transfers":
        return {"id": f"t-{n}", "status": "completed", "bytes_transferred": n,
                "start_time": "2030-01-01T00:00:00Z"}
    return {"id": str(n), "time": "2030-01-01T00:00:00Z", "user_id": "u",
            "types": ["file.created"], "data": {"path": f"/f{n}", "size": 1}}


def cycle(seen: Seen) -> list[bytes | float]:
    """Every list of the node in one cycle of CYCLE pages; anything else is /info."""
    path = seen.target.split("?", 1)[0]
    if path in ("/events", "/ops/transfers"):
        n = int(_query(seen, "iteration_token") or 1)  # no token: the first page
        link = f'<{path}?iteration_token={n % CYCLE + 1}>; rel="next"'
        body = json.dumps([_item(path, n)]).encode()
    elif path == "/access_keys":
        n = int(_query(seen, "page") or 1)
        link = f'</access_keys?page={n % CYCLE + 1}&per_page=100>; rel="next"'
        body = json.dumps([{"id": f"ak{n}", "storage": {"path": "/"}}]).encode()
    else:
        return [reply(200, INFO, JSON, close=False)]
    return [reply(200, body, [*JSON, ("Link", link)], close=False)]


@pytest.fixture
def node(certs, invoke) -> Iterator[tuple[ScriptedServer, Callable[..., Any]]]:
    with ScriptedServer(cycle, tls=(certs[1], certs[2])) as server:
        env = {"NODECLI_URL": server.url(), "NODECLI_USER": "admin",
               "NODECLI_PASSWORD": "a-long-password", "NODECLI_CACERT": certs[0]}
        yield server, lambda *args: invoke(*args, env=env)


def _requested(server: ScriptedServer, path: str) -> int:
    return sum(1 for s in server.seen if s.target.split("?", 1)[0] == path)


# From a token the run reads pages 1 .. 1001 and stops at 1001, whose Link leads back
# to 1: 1,000 written. From a time the first page has no token; page 1 is asked for by
# its token after 1001, and ITS Link leads back to 2: 1,001 written, 1,002 requests.
@pytest.mark.parametrize(("start", "written"),
                         [(["--iteration-token", "1"], CYCLE - 1), (["--since", "1h"], CYCLE)],
                         ids=["from a token", "from a time"])
def test_events_tail_to_a_file_ends_a_loop_of_1001_pages_with_nothing_twice(
        node, tmp_path, start, written):
    server, run = node
    out = tmp_path / "events.jsonl"
    # (--max-events bounds the run should the loop be followed: the test then fails)
    r = run("events", "tail", *start, "--to", str(out), "--max-events", "5000")
    assert r.exit_code == 6, r
    assert "leads back to a page already read" in r.stderr and r.stderr.count("\n") == 1
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert len(ids) == len(set(ids))  # not one event twice
    # the page whose Link leads back is not written (a resume once the node is fixed
    # reads it exactly once), and nothing is asked for after it
    assert len(ids) == written
    assert _requested(server, "/events") == written + 1


def test_a_merged_tail_ends_a_loop_of_1001_pages_with_nothing_twice(
        node, certs, invoke, tmp_path):
    server, _ = node
    for name in ("n1", "n2"):
        added = invoke("node", "add", name, "--url", server.url(), "--user", "admin",
                       "--password-stdin", "--cacert", certs[0], input="a-long-password\n")
        assert added.exit_code == 0, added
    out = tmp_path / "merged.jsonl"
    r = invoke("events", "tail", "--nodes", "n1,n2", "--since", "1h", "--to", str(out))
    assert r.exit_code == 6, r
    assert "leads back to a page already read" in r.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    for name in ("n1", "n2"):
        ids = [e["id"] for e in lines if e["node"] == name]
        assert len(ids) == len(set(ids)) == CYCLE  # (started from a time)


@pytest.mark.parametrize("cmd", [["transfer", "list"], ["transfer", "list", "-o", "json"],
                                 ["api", "/events", "--paginate"],
                                 ["api", "/ops/transfers", "--paginate"],
                                 ["access-key", "list"]])
def test_every_pager_ends_a_loop_of_1001_pages_with_exit_6_and_prints_nothing(node, cmd):
    server, run = node
    r = run(*cmd)
    assert r.exit_code == 6, r
    assert "leads back to a page already read" in r.stderr and r.stderr.count("\n") == 1
    assert r.stdout == ""
    path = "/" + cmd[1].strip("/") if cmd[0] == "api" else (
        "/ops/transfers" if cmd[0] == "transfer" else "/access_keys")
    # each page once and nothing after the loop: the token pagers start without a token
    # and meet page 1 again by its token (see above); access keys name page 1 from the start
    assert _requested(server, path) == (CYCLE if path == "/access_keys" else CYCLE + 1)


# -- the trail itself ------------------------------------------------------------------


def test_the_trail_remembers_every_key_across_growth():
    trail = PageTrail(slots=8)
    keys = [f"token-{i}" for i in range(20_000)]
    assert all(trail.add(k) for k in keys)
    assert len(trail) == 20_000
    assert trail.nbytes <= 16 * 2 * 20_000  # 16 bytes a slot, more than half full
    assert all(k in trail for k in keys)  # the first as well as the last
    assert not any(trail.add(k) for k in keys[:100])
    assert "token-20000" not in trail and "" not in trail
    assert len(trail) == 20_000


def test_a_loop_entered_after_1500_pages_ends_too(certs, invoke):
    """A lead-in of 1,500 pages, then a cycle of 1,001 (1501 -> ... -> 2501 -> 1501): what
    is remembered must be every page, not the first or the last thousand."""
    lead = 1500

    def rho(seen: Seen) -> list[bytes | float]:
        if not seen.target.startswith("/events"):
            return [reply(200, INFO, JSON, close=False)]
        n = int(_query(seen, "iteration_token") or 1)
        nxt = n + 1 if n < lead + CYCLE else lead + 1
        return [reply(200, json.dumps([_item("/events", n)]).encode(),
                      [*JSON, ("Link", f'</events?iteration_token={nxt}>; rel="next"')],
                      close=False)]

    with ScriptedServer(rho, tls=(certs[1], certs[2])) as server:
        env = {"NODECLI_URL": server.url(), "NODECLI_USER": "admin",
               "NODECLI_PASSWORD": "a-long-password", "NODECLI_CACERT": certs[0]}
        r = invoke("api", "/events", "--paginate", env=env)
        assert r.exit_code == 6, r
        assert f"iteration token {lead + 1}," in r.stderr
        assert r.stdout == ""
        assert _requested(server, "/events") == lead + CYCLE
