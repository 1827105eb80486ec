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


# -- ask_each: the order, the workers, the time given each node --------------------------

def test_ask_each_runs_exactly_eight_at_once_in_order_and_keeps_each_nodes_error():
    import threading

    from nodecli.node.fleet import MAX_PARALLEL, ask_each

    assert MAX_PARALLEL == 8
    workers: list[int] = []

    def count_workers() -> None:  # the 8th to arrive: every worker thread is busy
        prefix = threading.current_thread().name.rsplit("_", 1)[0]
        workers.append(sum(t.name.rsplit("_", 1)[0] == prefix
                           for t in threading.enumerate()))

    eight = threading.Barrier(8, action=count_workers, timeout=30)

    def ask(i: int) -> int:
        if i < 8:
            eight.wait()  # broken (an error) unless 8 asks run at the same time
        if i in (3, 12):
            raise NodecliError(f"boom {i}")
        return i * 2

    results = ask_each([(f"n{i}", i) for i in range(20)], ask)
    assert [name for name, _ in results] == [f"n{i}" for i in range(20)]
    assert [r.message if isinstance(r, NodecliError) else r for _, r in results] == [
        "boom 3" if i == 3 else "boom 12" if i == 12 else i * 2 for i in range(20)]
    assert workers == [8]
    assert ask_each([], ask) == []
    assert ask_each([("only", 1)], lambda i: i * 2) == [("only", 2)]


def test_a_node_past_its_time_is_too_late_and_not_waited_for():
    import threading

    from nodecli.node.fleet import TooLate, ask_each

    free, finished = threading.Event(), threading.Event()

    def ask(i: int) -> int:
        if i == 1:  # hangs until the test lets it go, after ask_each returned
            free.wait(30)
            finished.set()
        return i

    try:
        results = ask_each([("a", 0), ("b", 1), ("c", 2)], ask, within=0.25)
        assert not finished.is_set()  # its thread is left to finish alone
    finally:
        free.set()
    assert [(n, r if isinstance(r, int) else type(r)) for n, r in results] == [
        ("a", 0), ("b", TooLate), ("c", 2)]
    assert results[1][1].message == "no answer within 0.25 s"


def test_a_failure_outside_the_nodes_errors_leaves_the_nodes_not_begun_unasked():
    import threading

    from nodecli.node.fleet import ask_each

    asked: set[int] = set()
    threads: list[threading.Thread] = []
    lock, release = threading.Lock(), threading.Event()
    eight = threading.Barrier(8, timeout=30)

    def ask(i: int) -> int:
        with lock:
            asked.add(i)
            threads.append(threading.current_thread())
        if i < 8:
            eight.wait()
        if i == 0:
            raise RuntimeError("a bug")
        release.wait(30)
        return i

    try:
        with pytest.raises(RuntimeError):
            ask_each([(f"n{i}", i) for i in range(20)], ask, within=30.0)
    finally:
        release.set()
        for t in list(threads):
            t.join(30)
    # the worker freed by the failure may take the 9th before the rest are cancelled
    assert set(range(8)) <= asked <= set(range(9))


def test_counting_asks_the_events_from_now_in_utc_whatever_the_local_zone(node, monkeypatch):
    import time
    from datetime import UTC, datetime, timedelta
    from urllib.parse import parse_qs, urlsplit

    from nodecli.node.fleet import count_event_types

    node.pages = {"": ([], "t1")}
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # 9 hours from UTC, no summer time
    time.tzset()
    try:
        with node.client() as c:
            count_event_types(c, None)
    finally:
        monkeypatch.undo()
        time.tzset()
    first = urlsplit(node.server.seen[0].target)
    assert first.path == "/events"
    asked = datetime.strptime(parse_qs(first.query)["after_time"][0],
                              "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(asked - datetime.now(UTC)) < timedelta(hours=1)


def test_a_page_with_events_whose_link_names_its_own_token_is_the_last(node):
    from nodecli.node.fleet import count_event_types

    node.pages = {"t5": ([["b"]], "t5")}
    with node.client() as c:
        counts, token = count_event_types(c, "t5")
    assert (dict(counts), token) == ({"b": 1}, "t5")
    assert len(node.server.seen) == 1


# -- the time given each node, on a clock the test owns ----------------------------------

class NodeClock:
    """``ask_each``'s clock (nodecli.node.fleet.Clock), owned by the test: every node
    starts at 0 (read on its worker), ask_each looks at it at ``looked_at`` (read on the
    thread that made this clock, the one that calls ask_each), and it answers at
    ``answers_at``: its real answer (at once) is taken, then judged on this clock.
    ``waits`` are the seconds ask_each gave each node it waited for."""

    def __init__(self, *, looked_at: float, answers_at: float) -> None:
        import threading

        self.caller = threading.get_ident()
        self.looked_at, self.answers_at = looked_at, answers_at
        self.waits: list[float] = []

    def now(self) -> float:
        import threading

        return self.looked_at if threading.get_ident() == self.caller else 0.0

    def result(self, future, timeout: float):
        self.waits.append(timeout)
        value = future.result(timeout=60)  # (a ceiling for a hung ask, not a wait)
        if self.answers_at > self.looked_at + timeout:
            raise TimeoutError
        return value


@pytest.mark.parametrize(("looked_at", "answers_at", "taken"), [
    (4.0, 10.0, True),    # before its time, the rest of it (6 s) given, answered at 10
    (4.0, 10.5, False),   # answered half a second past its time: too late
    (10.5, 10.5, True),   # already past its time when looked at, but answered by then
    (10.5, 11.0, False),  # past its time and not answered yet: not one more second
])
def test_a_node_is_given_its_time_from_its_start_and_not_a_moment_more(looked_at,
                                                                       answers_at, taken):
    from nodecli.node.fleet import TooLate, ask_each

    clock = NodeClock(looked_at=looked_at, answers_at=answers_at)
    [(name, result)] = ask_each([("a", 21)], lambda i: i * 2, within=10, clock=clock)
    assert name == "a"
    if taken:
        assert result == 42
    else:
        assert isinstance(result, TooLate) and result.message == "no answer within 10 s"
    assert clock.waits == [max(10 - looked_at, 0.0)]
