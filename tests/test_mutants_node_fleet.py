"""nodecli.node.fleet at its boundaries (issue 33, item 2: the survivors of its mutation
run): the one type an event is counted under, rows and failures apart, and asking many
nodes in order. In process: pure functions, and threads held by events (no sleeps)."""

from __future__ import annotations

import pytest

from nodecli.errors import NodecliError
from nodecli.node.fleet import as_rows, counted_type


@pytest.mark.parametrize(("types", "counted"), [
    (["upload.started", "transfer.started"], "upload.started"),
    (["transfer.started", "upload.started"], "upload.started"),
    (["transfer.started"], "transfer.started"),
    (["transfer.started", "transfer.ended"], "transfer.started"),
    (["file.created"], "file.created"), (["a", "b"], "a"), ([], "?"), ((), "?"),
    (["transfers.x", "transfer.y"], "transfers.x"), (["xtransfer.a"], "xtransfer.a")])
def test_an_event_counts_under_its_most_specific_type(types, counted):
    assert counted_type(types) == counted


def test_rows_carry_their_node_and_failures_stay_apart():
    boom = NodecliError("down")
    rows, failures = as_rows([("a", [{"x": 1}, {"x": 2}]), ("b", boom),
                              ("c", []), ("d", [{"y": 3}])])
    assert rows == [{"node": "a", "x": 1}, {"node": "a", "x": 2}, {"node": "d", "y": 3}]
    assert failures == [("b", boom)]
    assert as_rows([]) == ([], [])


# -- events counted over HTTPS (a scripted node) -------------------------------------------

class Node:
    """/events in pages: ``pages[token]`` is (events, next token or None); token "" is the
    first page (asked with after_time)."""

    def __init__(self, certs) -> None:
        from tests.scripted_server import ScriptedServer

        self.ca = certs[0]
        self.pages: dict[str, tuple[list, str | None]] = {}
        self.server = ScriptedServer(self._answer, tls=(certs[1], certs[2]))

    def _answer(self, seen):
        import json
        from urllib.parse import parse_qs, urlsplit

        from tests.scripted_server import reply

        query = parse_qs(urlsplit(seen.target).query)
        token = query.get("iteration_token", [""])[0]
        events, nxt = self.pages.get(token, ([], None))
        headers = [("Content-Type", "application/json")]
        if nxt is not None:
            headers.append(("Link", f'</events?iteration_token={nxt}>; rel="next"'))
        body = [{"id": str(i), "time": "2026-06-01T12:00:00Z", "user_id": "u",
                 "types": types, "data": {}} for i, types in enumerate(events)]
        return [reply(200, json.dumps(body).encode(), headers)]

    def client(self):
        from nodecli.http.client import Auth, Endpoint, open_client

        return open_client(Endpoint(self.server.url(), Auth("basic", username="u",
                                                             password="pw-fleet"),
                                    cacert=self.ca, max_attempts=1))


@pytest.fixture(scope="module")
def node_server(tmp_path_factory):
    from tests.scripted_server import certificates

    node = Node(certificates(tmp_path_factory.mktemp("certs")))
    yield node
    node.server.close()


@pytest.fixture
def node(node_server):
    node_server.pages.clear()
    node_server.server.seen.clear()
    return node_server


def test_events_are_counted_from_now_on_page_after_page(node):
    from nodecli.node.fleet import count_event_types

    up = ["upload.started", "transfer.started"]
    node.pages = {"": ([up, ["file.created"]], "t1"), "t1": ([up], "t2"), "t2": ([], "t2")}
    with node.client() as c:
        counts, token = count_event_types(c, None)
    assert (dict(counts), token) == ({"upload.started": 2, "file.created": 1}, "t2")
    first = node.server.seen[0].target
    assert "after_time=" in first and "count=1000" in first
    assert "iteration_token" not in first


def test_events_are_counted_from_a_token_and_at_most_max_pages(node):
    from nodecli.node.fleet import count_event_types

    node.pages = {f"t{i}": ([["a"]], f"t{i + 1}") for i in range(20)}
    with node.client() as c:
        counts, token = count_event_types(c, "t0", max_pages=3)
        assert (dict(counts), token) == ({"a": 3}, "t3")
        assert "after_time" not in node.server.seen[0].target
        counts, token = count_event_types(c, "t3")
        assert (dict(counts), token) == ({"a": 10}, "t13")
    assert len(node.server.seen) == 13


def test_a_page_naming_no_next_keeps_the_token(node):
    from nodecli.node.fleet import count_event_types

    node.pages = {"t5": ([["b"], []], None)}
    with node.client() as c:
        counts, token = count_event_types(c, "t5")
    assert (dict(counts), token) == ({"b": 1, "?": 1}, "t5")
    assert len(node.server.seen) == 1
