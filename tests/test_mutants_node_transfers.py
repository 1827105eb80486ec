"""nodecli.node.transfers at its boundaries (issue 33, item 2: the survivors of its
mutation run): a transfer spec file, a rate's shape and units, what an ended transfer
is. Pure functions in process."""

from __future__ import annotations

import json
import time

import pytest

from nodecli.errors import NotFoundError, UsageError
from nodecli.node.transfers import MAX_SPEC_BYTES, is_final, load_transfer_spec, parse_rate


@pytest.mark.parametrize(("text", "kbps"), [
    ("800", 800), ("800k", 800), ("800K", 800), ("500m", 500_000), ("500M", 500_000),
    ("2g", 2_000_000), ("2G", 2_000_000), (" 1.5m ", 1500), ("1.25mbps", 1250),
    ("999999999", 999_999_999), ("0.001g", 1000), ("1.999k", 1), ("1kbps", 1),
    ("7 g", 7_000_000)])
def test_a_rate_in_kbps(text, kbps):
    assert parse_rate(text) == kbps


@pytest.mark.parametrize("text", ["", "fast", "1t", "1000000000", "1.2345", "-5", "1,5",
                                  "1.", ".5", "5 bps k", "1e3", "5mb"])
def test_anything_else_is_not_a_rate(text):
    with pytest.raises(UsageError) as e:
        parse_rate(text)
    assert str(e.value) == f"--target-rate: {text[:40]!r} is not a rate (500m, 2g, 800k)"


def test_a_refused_rate_is_shown_in_40_characters():
    with pytest.raises(UsageError) as e:
        parse_rate("r" * 50)
    assert str(e.value) == f"--target-rate: {'r' * 40!r} is not a rate (500m, 2g, 800k)"


@pytest.mark.parametrize("text", ["0", "0k", "0.999", "0.5k", "0.0m"])
def test_a_rate_below_one_kbps_is_refused(text):
    with pytest.raises(UsageError) as e:
        parse_rate(text)
    assert str(e.value) == "--target-rate must be above 0"


@pytest.mark.parametrize(("status", "final"), [
    ("running", False), ("completed", True), ("failed", True), ("cancelled", True),
    ("Running", True), (None, True)])
def test_any_status_but_running_has_ended(status, final):
    assert is_final({"status": status}) is final
    assert is_final({}) is True


def test_a_spec_is_a_json_object_in_utf8(tmp_path):
    f = tmp_path / "spec.json"
    f.write_text('{"paths": [{"source": "é"}]}', encoding="utf-8")
    assert load_transfer_spec(str(f)) == {"paths": [{"source": "é"}]}


@pytest.mark.parametrize(("content", "says"), [
    (b"\xff{}", "is not UTF-8 text"), (b"{", "is not valid JSON: "),
    (b"[1]", "must hold a JSON object"), (b"[" * 100_000, "is nested too deeply"),
    (b"", "is not valid JSON: ")])
def test_a_spec_that_is_no_json_object_is_refused_and_named(tmp_path, content, says):
    f = tmp_path / "spec.json"
    f.write_bytes(content)
    with pytest.raises(UsageError) as e:
        load_transfer_spec(str(f))
    assert str(e.value).startswith(f"transfer spec {f} {says}")


def test_a_spec_of_one_mebibyte_is_read_and_one_byte_more_is_not(tmp_path):
    f = tmp_path / "spec.json"
    body = b'{"x": "' + b"a" * (MAX_SPEC_BYTES - 10) + b'"}'
    f.write_bytes(body)
    assert len(body) == MAX_SPEC_BYTES - 1
    assert load_transfer_spec(str(f)) == {"x": "a" * (MAX_SPEC_BYTES - 10)}
    f.write_bytes(body[:-2] + b'a"}')
    assert len(f.read_bytes()) == MAX_SPEC_BYTES
    assert len(load_transfer_spec(str(f))["x"]) == MAX_SPEC_BYTES - 9
    f.write_bytes(body[:-2] + b'aa"}')
    with pytest.raises(UsageError) as e:
        load_transfer_spec(str(f))
    assert "transfer spec" in str(e.value)
    with pytest.raises(NotFoundError) as e:
        load_transfer_spec(str(tmp_path / "missing.json"))
    assert str(e.value).startswith("transfer spec ")


def test_a_spec_path_may_start_with_a_tilde(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "s.json").write_text("{}")
    assert load_transfer_spec("~/s.json") == {}


# -- over HTTPS: a transfer watched, asked of a scripted node ----------------------------

@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from tests.scripted_server import certificates

    return certificates(tmp_path_factory.mktemp("certs"))


class Node:
    """A node whose GET /ops/transfers/ID answers, in turn, the statuses in
    ``statuses[ID]`` (the last one again and again; an int is that HTTP status)."""

    def __init__(self, certs) -> None:
        from tests.scripted_server import ScriptedServer

        self.certs = certs
        self.statuses: dict[str, list] = {}
        self.server = ScriptedServer(self._answer, tls=(certs[1], certs[2]))

    def _answer(self, seen):
        from tests.scripted_server import reply

        tid = seen.target.rsplit("/", 1)[-1]
        todo = self.statuses.get(tid, [404])
        got = todo.pop(0) if len(todo) > 1 else todo[0]
        if isinstance(got, int):
            yield reply(got, json.dumps({"error": {"user_message": "no"}}).encode(),
                        [("Content-Type", "application/json")])
        else:
            yield reply(200, json.dumps({"id": tid, "status": got}).encode(),
                        [("Content-Type", "application/json")])

    def client(self, budget=None):
        from nodecli.http.client import Auth, Endpoint, open_client

        return open_client(Endpoint(self.server.url(), Auth("basic", username="u",
                                                             password="pw-transfers"),
                                    cacert=self.certs[0], deadline=10.0, max_attempts=1,
                                    budget=budget))


@pytest.fixture(scope="module")
def node_server(certs):
    node = Node(certs)
    yield node
    node.server.close()


@pytest.fixture
def node(node_server):
    node_server.statuses.clear()
    node_server.server.seen.clear()
    return node_server


class Clock:
    """A monotonic clock the test moves: each nap advances it by the time asked."""

    def __init__(self) -> None:
        self.now, self.naps = 100.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.naps.append(seconds)
        self.now += seconds


def _watch(node, ids, until=None, **kw):
    from nodecli.node.transfers import watch_transfers

    clock, updates = Clock(), []
    if until is not None:
        clock.sleep = until.nap(clock)  # type: ignore[method-assign]
    with node.client(until and until.budget) as c:
        last, timed_out = watch_transfers(c, ids, sleep=clock.sleep, clock=clock,
                                          on_update=lambda d, t: updates.append(
                                              ({k: v["status"] for k, v in d.items()}, t)),
                                          **kw)
    return {k: v["status"] for k, v in last.items()}, timed_out, clock.naps, updates


def test_each_transfer_is_asked_until_it_ends_and_not_after(node):
    node.statuses = {"a": ["running", "completed"], "b": ["running", "running", "failed"]}
    last, timed_out, naps, updates = _watch(node, ["a", "b"])  # every 2 s by default
    assert (last, timed_out, naps) == ({"a": "completed", "b": "failed"}, False, [2.0, 2.0])
    assert [s.target.rsplit("/", 1)[-1] for s in node.server.seen] == ["a", "b", "a", "b",
                                                                       "b"]
    assert updates == [({"a": "running", "b": "running"}, 0.0),
                       ({"a": "completed", "b": "running"}, 2.0),
                       ({"a": "completed", "b": "failed"}, 4.0)]


def test_a_timeout_reached_exactly_ends_the_watch_and_the_last_nap_is_cut_to_it(node):
    node.statuses = {"a": ["running"]}
    last, timed_out, naps, _ = _watch(node, ["a"], interval=2.0, timeout=5.0)
    assert (last, timed_out) == ({"a": "running"}, True)
    assert naps == [2.0, 2.0, 1.0]  # 100 -> 105: at 5.0 s exactly it is over
    assert len(node.server.seen) == 4


def test_a_timeout_shorter_than_the_interval(node):
    node.statuses = {"a": ["running"]}
    _, timed_out, naps, _ = _watch(node, ["a"], interval=2.0, timeout=0.5)
    assert (timed_out, naps) == (True, [0.5])


def test_no_timeout_watches_on(node):
    node.statuses = {"a": ["running"] * 5 + ["completed"]}
    last, timed_out, naps, _ = _watch(node, ["a"], interval=0.25)
    assert (last, timed_out, naps) == ({"a": "completed"}, False, [0.25] * 5)


def test_an_error_before_the_timeout_is_raised_and_after_it_is_a_timeout(node):
    from nodecli.errors import RemoteError

    node.statuses = {"a": [500]}
    with pytest.raises(RemoteError):
        _watch(node, ["a"], interval=1.0, timeout=5.0)
    node.statuses = {"a": ["running", "running", 500]}
    last, timed_out, naps, _ = _watch(node, ["a"], interval=2.5, timeout=5.0)
    assert (last, timed_out, naps) == ({"a": "running"}, True, [2.5, 2.5])


class Until:
    """The command's deadline budget (--deadline with --timeout: its ``until``), which
    passes during the ``at``-th nap of the watch (0: before it begins)."""

    def __init__(self, at: int) -> None:
        from nodecli.http.deadline import Budget

        self.budget, self.at = Budget(10.0, following=True), at
        if at == 0:
            self.budget.until = time.monotonic() - 1

    def nap(self, clock):
        def sleep(seconds: float) -> None:
            Clock.sleep(clock, seconds)
            if len(clock.naps) == self.at:
                self.budget.until = time.monotonic() - 1

        return sleep


def test_the_deadline_passed_ends_the_watch_as_timed_out_and_no_request_starts_after(node):
    node.statuses = {"a": ["running"]}
    until = Until(2)
    last, timed_out, naps, _ = _watch(node, ["a"], until=until, timeout=60.0)
    assert (last, timed_out, naps) == ({"a": "running"}, True, [2.0, 2.0])
    assert len(node.server.seen) == 2  # none after the second nap


def test_a_request_cut_by_the_deadline_ends_the_watch_as_timed_out(node):
    node.statuses = {"a": ["running"]}
    until = Until(0)
    last, timed_out, naps, _ = _watch(node, ["a"], until=until, timeout=60.0)
    assert (last, timed_out, naps) == ({}, True, [])
    assert node.server.seen == []


def test_without_a_timeout_the_deadline_cut_is_the_error(node):
    from nodecli.errors import RemoteError

    node.statuses = {"a": ["running"]}
    with pytest.raises(RemoteError):
        _watch(node, ["a"], until=Until(1))
    assert len(node.server.seen) == 1


# -- over HTTPS: the lifecycle requests, asked of a scripted node ------------------------

NO = {"error": {"user_message": "no"}}


class OpsNode:
    """A node whose answers the test scripts: ``routes[(METHOD, target)]`` (else
    ``routes[(METHOD, path)]``, the target without its query) is a list of
    (status, body, headers) given in turn (the last one again and again); a body that is
    not bytes is sent as JSON. Anything else is a 404."""

    def __init__(self, certs) -> None:
        from tests.scripted_server import ScriptedServer

        self.certs = certs
        self.routes: dict[tuple[str, str], list] = {}
        self.server = ScriptedServer(self._answer, tls=(certs[1], certs[2]))

    def _answer(self, seen):
        from tests.scripted_server import reply

        todo = self.routes.get((seen.method, seen.target)) or self.routes.get(
            (seen.method, seen.target.split("?")[0]), [(404, NO, [])])
        status, body, headers = todo.pop(0) if len(todo) > 1 else todo[0]
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        # (kept open: one TLS handshake a client, not one a request)
        yield reply(status, raw, [("Content-Type", "application/json"), *headers],
                    close=False)

    def link(self, token: str) -> list[tuple[str, str]]:
        return [("Link", f'<{self.server.url()}/ops/transfers?iteration_token={token}>; '
                         'rel="next"')]

    def client(self, auth=None, attempts: int = 1):
        from nodecli.http.client import Auth, Client, Endpoint

        return Client(Endpoint(self.server.url(), auth or Auth(
            "basic", username="u", password="pw-transfers"), cacert=self.certs[0],
            deadline=10.0, max_attempts=attempts), sleep=lambda s: None)

    def asked(self) -> list[tuple[str, str]]:
        return [(s.method, s.target) for s in self.server.seen]


@pytest.fixture(scope="module")
def ops_server(certs):
    node = OpsNode(certs)
    yield node
    node.server.close()


@pytest.fixture
def ops(ops_server):
    ops_server.routes.clear()
    ops_server.server.seen.clear()
    return ops_server


def _bearer():
    from nodecli.http.client import Auth

    return Auth("bearer", token="tok-transfers", access_key="ak1")


def test_starting_a_transfer_needs_a_bearer_token_and_asks_nothing_without(ops):
    from nodecli.node.transfers import start_transfer

    with ops.client() as c, pytest.raises(UsageError) as e:
        start_transfer(c, {"paths": []})
    assert str(e.value) == ("starting a transfer needs a bearer token: --bearer-file PATH "
                            "(or NODECLI_BEARER) with --access-key AK")
    assert ops.asked() == []


@pytest.mark.parametrize("status", [200, 201, 202])
def test_a_started_transfer_is_the_nodes_object(ops, status):
    from nodecli.node.transfers import start_transfer

    ops.routes[("POST", "/ops/transfers")] = [(status, {"id": "t1", "status": "running"}, [])]
    with ops.client(_bearer()) as c:
        assert start_transfer(c, {"paths": [{"source": "é"}]}) == {"id": "t1",
                                                                    "status": "running"}
    assert ops.asked() == [("POST", "/ops/transfers")]
    assert json.loads(ops.server.seen[0].body) == {"paths": [{"source": "é"}]}


def test_a_start_answered_without_a_body_or_with_no_object(ops):
    from nodecli.errors import RemoteError
    from nodecli.node.transfers import start_transfer

    ops.routes[("POST", "/ops/transfers")] = [(202, b"", []), (200, [1], []), (203, {}, [])]
    with ops.client(_bearer()) as c:
        assert start_transfer(c, {}) == {}
        with pytest.raises(RemoteError) as e:
            start_transfer(c, {})
        assert str(e.value) == ("the node answered the transfer request with something "
                                "other than a JSON object")
        with pytest.raises(RemoteError) as e:
            start_transfer(c, {})
        assert "HTTP 203" in str(e.value)


@pytest.mark.parametrize(("tid", "path"), [("t1", "/ops/transfers/t1"),
                                           ("a b?c#%", "/ops/transfers/a%20b%3Fc%23%25")])
def test_one_transfer_is_asked_by_its_quoted_id(ops, tid, path):
    from nodecli.node.transfers import get_transfer

    ops.routes[("GET", path)] = [(200, {"id": tid}, [])]
    with ops.client() as c:
        assert get_transfer(c, tid) == {"id": tid}
    assert ops.asked() == [("GET", path)]


@pytest.mark.parametrize(("tid", "says"), [
    ("a/b", "invalid transfer id 'a/b': no '/', '\\', '.' or '..'"),
    ("", "transfer id must not be empty"),
    ("x\x07", "invalid transfer id: it contains control characters")])
def test_an_id_that_cannot_go_in_a_path_is_refused_before_asking(ops, tid, says):
    from nodecli.node.transfers import cancel_transfer, check_transfer_id, get_transfer

    with pytest.raises(UsageError) as e:
        check_transfer_id(tid)
    assert str(e.value) == says
    with ops.client() as c:
        for call in (get_transfer, cancel_transfer):
            with pytest.raises(UsageError) as e:
                call(c, tid)
            assert str(e.value) == says
    assert ops.asked() == []


def test_a_transfer_the_login_cannot_see_says_how_to_list_them(ops):
    from nodecli.errors import NodecliError
    from nodecli.node.transfers import cancel_transfer, get_transfer, modify_transfer

    hint = "no transfer 'gone' that this login may see: 'nodecli transfer list' shows them"
    with ops.client() as c:
        for call in (get_transfer, cancel_transfer,
                     lambda c, t: modify_transfer(c, t, {"target_rate_kbps": 1})):
            with pytest.raises(NotFoundError) as e:
                call(c, "gone")
            assert e.value.hint == hint
    ops.routes[("GET", "/ops/transfers/t")] = [(410, NO, [])]
    ops.routes[("PUT", "/ops/transfers/t")] = [(410, NO, [])]
    with ops.client() as c:
        with pytest.raises(NodecliError) as e:
            get_transfer(c, "t")
        assert e.value.hint is None
        with pytest.raises(NodecliError) as e:
            modify_transfer(c, "t", {"a": 1})
        assert e.value.hint is None


@pytest.mark.parametrize(("call", "what"), [
    ("get", "GET /ops/transfers/t"), ("put", "PUT"), ("cancel", "CANCEL")])
def test_an_answer_that_is_no_object_is_an_error_that_names_the_request(ops, call, what):
    from nodecli.errors import RemoteError
    from nodecli.node.transfers import cancel_transfer, get_transfer, modify_transfer

    for method in ("GET", "PUT", "CANCEL"):
        ops.routes[(method, "/ops/transfers/t")] = [(200, ["running"], [])]
    do = {"get": lambda c: get_transfer(c, "t"),
          "put": lambda c: modify_transfer(c, "t", {"a": 1}),
          "cancel": lambda c: cancel_transfer(c, "t")}[call]
    with ops.client() as c, pytest.raises(RemoteError) as e:
        do(c)
    assert str(e.value) == f"{what} did not answer with a JSON object"


def test_a_change_puts_exactly_the_body_and_nothing_is_not_a_change(ops):
    from nodecli.errors import NodecliError
    from nodecli.node.transfers import modify_transfer

    ops.routes[("PUT", "/ops/transfers/t")] = [
        (200, {"id": "t", "target_rate_kbps": 5}, []), (204, b"", []), (202, {}, [])]
    with ops.client() as c:
        with pytest.raises(UsageError) as e:
            modify_transfer(c, "t", {})
        assert str(e.value) == ("nothing to change: give --target-rate RATE or --set "
                                "KEY=VALUE")
        assert ops.asked() == []
        assert modify_transfer(c, "t", {"target_rate_kbps": 5}) == {"id": "t",
                                                                    "target_rate_kbps": 5}
        assert modify_transfer(c, "t", {"x": None}) == {}
        with pytest.raises(NodecliError) as e:
            modify_transfer(c, "t", {"x": 1})
        assert "HTTP 202" in str(e.value)
    assert ops.asked() == [("PUT", "/ops/transfers/t")] * 3
    assert [json.loads(s.body) for s in ops.server.seen] == [
        {"target_rate_kbps": 5}, {"x": None}, {"x": 1}]


def test_cancel_is_the_method_cancel_answered_200_202_or_204(ops):
    from nodecli.errors import NodecliError
    from nodecli.node.transfers import cancel_transfer

    ops.routes[("CANCEL", "/ops/transfers/t")] = [
        (200, {"status": "cancelled"}, []), (202, {"status": "cancelling"}, []),
        (204, b"", []), (201, {}, [])]
    with ops.client() as c:
        assert cancel_transfer(c, "t") == {"status": "cancelled"}
        assert cancel_transfer(c, "t") == {"status": "cancelling"}
        assert cancel_transfer(c, "t") == {}
        with pytest.raises(NodecliError) as e:
            cancel_transfer(c, "t")
        assert "HTTP 201" in str(e.value)
    assert ops.asked() == [("CANCEL", "/ops/transfers/t")] * 4
    assert [s.body for s in ops.server.seen] == [b""] * 4


def test_cancel_is_never_retried_and_says_so(ops):
    from nodecli.errors import RemoteError
    from nodecli.node.transfers import cancel_transfer

    ops.routes[("CANCEL", "/ops/transfers/t")] = [
        (503, NO, [("Retry-After", "0")]), (200, {"status": "cancelled"}, [])]
    with ops.client(attempts=4) as c, pytest.raises(RemoteError) as e:
        cancel_transfer(c, "t")
    assert e.value.hint == ("not retried automatically: the request may have taken "
                            "effect; check before repeating it")
    assert ops.asked() == [("CANCEL", "/ops/transfers/t")]


def _page(*ids_statuses):
    return [{"id": i, "status": s} for i, s in ids_statuses]


def test_pages_follow_the_link_until_an_empty_page(ops):
    from nodecli.node.transfers import transfer_pages

    L = "/ops/transfers"
    ops.routes[("GET", f"{L}?count=100")] = [(200, _page(("a", "running"), ("b", "x")),
                                                ops.link("A"))]
    ops.routes[("GET", f"{L}?iteration_token=A")] = [(200, _page(("c", "running")),
                                                       ops.link("B"))]
    ops.routes[("GET", f"{L}?iteration_token=B")] = [(200, [], ops.link("B"))]
    with ops.client() as c:
        got = [([t["id"] for t in page.events], used) for page, used in transfer_pages(c)]
    assert got == [(["a", "b"], None), (["c"], "A"), ([], "B")]
    assert [t for _, t in ops.asked()] == [f"{L}?count=100", f"{L}?iteration_token=A",
                                           f"{L}?iteration_token=B"]


def test_pages_ask_for_the_running_ones_from_a_token_in_that_order(ops):
    from nodecli.node.transfers import transfer_pages

    ops.routes[("GET", "/ops/transfers")] = [(200, [], [])]
    with ops.client() as c:
        assert [used for _, used in transfer_pages(c, active=True, token="Z", count=7)] \
            == ["Z"]
        assert len(list(transfer_pages(c, token="Y"))) == 1
        assert len(list(transfer_pages(c, active=True))) == 1
    assert [t for _, t in ops.asked()] == [
        "/ops/transfers?count=7&active_only=true&iteration_token=Z",
        "/ops/transfers?count=100&iteration_token=Y",
        "/ops/transfers?count=100&active_only=true"]


def test_a_last_page_that_holds_data_and_names_the_token_used_ends_the_pages(ops):
    from nodecli.node.transfers import transfer_pages

    ops.routes[("GET", "/ops/transfers")] = [(200, _page(("a", "running")), ops.link("Z")),
                                             (200, [], [])]
    with ops.client() as c:
        got = [([t["id"] for t in page.events], used)
               for page, used in transfer_pages(c, token="Z")]
    assert got == [(["a"], "Z")]
    assert len(ops.asked()) == 1


def test_a_page_with_data_and_no_usable_link_is_an_error_an_empty_one_the_end(ops):
    from nodecli.errors import RemoteError
    from nodecli.node.transfers import list_transfers

    ops.routes[("GET", "/ops/transfers")] = [(200, _page(("a", "running")), [])]
    with ops.client() as c, pytest.raises(RemoteError) as e:
        list_transfers(c)
    assert str(e.value) == (f"{ops.server.url()}/ops/transfers?count=100: the node sent "
                            'no Link rel="next" header')
    ops.routes[("GET", "/ops/transfers")] = [(200, [], [])]
    with ops.client() as c:
        assert list_transfers(c) == []


def test_a_link_back_to_a_page_already_read_is_a_loop(ops):
    from nodecli.node.events.pages import LinkLoop
    from nodecli.node.transfers import list_transfers

    L = "/ops/transfers"
    ops.routes[("GET", f"{L}?count=100")] = [(200, _page(("a", "x")), ops.link("A"))]
    ops.routes[("GET", f"{L}?iteration_token=A")] = [(200, _page(("b", "x")), ops.link("B"))]
    ops.routes[("GET", f"{L}?iteration_token=B")] = [(200, _page(("c", "x")), ops.link("A"))]
    with ops.client() as c, pytest.raises(LinkLoop):
        list_transfers(c)
    assert len(ops.asked()) == 3


def test_a_list_keeps_the_statuses_asked_for_or_every_one(ops):
    from nodecli.node.transfers import list_transfers

    ops.routes[("GET", "/ops/transfers")] = [
        (200, _page(("a", "running"), ("b", "completed"), ("c", "failed")), ops.link("A")),
        (200, _page(("d", "failed")), ops.link("B")), (200, [], [])]
    with ops.client() as c:
        assert [t["id"] for t in list_transfers(c, statuses=("failed", "completed"))] == [
            "b", "c", "d"]
    ops.routes[("GET", "/ops/transfers")] = [
        (200, _page(("a", "running"), ("b", "completed")), ops.link("A")), (200, [], [])]
    with ops.client() as c:
        assert [t["id"] for t in list_transfers(c, active=True)] == ["a", "b"]
    assert ops.asked()[-2][1] == "/ops/transfers?count=100&active_only=true"


def test_a_named_checkpoint_is_kept_per_node_login_and_active(ops, tmp_path):
    from nodecli.node.events.checkpoint import node_key
    from nodecli.node.transfers import transfer_checkpoint

    with ops.client() as c:
        plain = transfer_checkpoint(c, tmp_path, name="audit")
        active = transfer_checkpoint(c, tmp_path, name="audit", active=True)
        given = transfer_checkpoint(c, tmp_path, path=tmp_path / "mine.json")
        for cp in (plain, active):
            assert cp.path.parent == tmp_path / "checkpoints" / node_key(c)
            assert cp.node == node_key(c)
        assert plain.path.name.startswith("transfers.audit@")
        assert active.path.name.startswith("transfers-active.audit@")
        assert (given.path, given.node) == (tmp_path / "mine.json", node_key(c))


def test_new_pages_start_after_the_checkpoint_and_each_commit_saves_where_it_ended(
        ops, tmp_path):
    from nodecli.node.transfers import new_transfer_pages, transfer_checkpoint

    L = "/ops/transfers"
    ops.routes[("GET", f"{L}?count=100&active_only=true")] = [
        (200, _page(("a", "running"), ("b", "running")), ops.link("A"))]
    ops.routes[("GET", f"{L}?iteration_token=A")] = [(200, [], ops.link("A"))]
    with ops.client() as c:
        cp = transfer_checkpoint(c, tmp_path, name="n", active=True)
        cp.lock()  # as `transfer list --resume` does: it makes the folder
        pages = new_transfer_pages(c, cp, active=True)
        events, commit = next(pages)
        assert [t["id"] for t in events] == ["a", "b"]
        assert not cp.path.exists()  # not before the page is committed
        commit()
        assert cp.load().token == "A"
        assert [events for events, _ in pages] == [[]]
    ops.routes[("GET", f"{L}?count=100&active_only=true&iteration_token=A")] = [
        (200, _page(("c", "running")), ops.link("C"))]
    ops.routes[("GET", f"{L}?iteration_token=C")] = [(200, [], [])]  # no Link: ends
    with ops.client() as c:
        got = list(new_transfer_pages(c, cp, active=True))
        assert [[t["id"] for t in events] for events, _ in got] == [["c"], []]
        got[1][1]()  # the last page, with no Link: it ends where it was asked
        assert cp.load().token == "C"
    assert [t for _, t in ops.asked()][-2:] == [
        f"{L}?count=100&active_only=true&iteration_token=A", f"{L}?iteration_token=C"]


def test_a_first_page_that_ends_with_no_token_saves_nothing(ops, tmp_path):
    from nodecli.node.transfers import new_transfer_pages, transfer_checkpoint

    ops.routes[("GET", "/ops/transfers")] = [(200, [], [])]
    with ops.client() as c:
        cp = transfer_checkpoint(c, tmp_path, name="n")
        cp.lock()
        [(events, commit)] = list(new_transfer_pages(c, cp))
        commit()
    assert events == [] and not cp.path.exists()
    assert ops.asked() == [("GET", "/ops/transfers?count=100")]


# -- LiveTransfers (`transfer top`): what each refresh asks, against a scripted node -------

L = "/ops/transfers"


def _ids(transfers):
    return [(t["id"], t["status"]) for t in transfers]


def _targets(ops, since=0):
    return [t for _, t in ops.asked()[since:]]


def test_a_refresh_asks_for_the_new_the_running_and_the_ended_ones_only(ops):
    from nodecli.node.transfers import LiveTransfers

    ops.routes.update({
        ("GET", f"{L}?count=1000"): [(200, _page(("a", "running"), ("b", "running")),
                                      ops.link("T1"))],
        ("GET", f"{L}?iteration_token=T1"): [(200, [], [])],  # no Link: ends where asked
        ("GET", f"{L}?count=1000&iteration_token=T1"): [
            (200, _page(("c", "running"), ("a", "completed")), ops.link("T2"))],
        ("GET", f"{L}?iteration_token=T2"): [(200, [], [])],
        ("GET", f"{L}?count=1000&active_only=true"): [
            (200, _page(("c", "running")), ops.link("X1")), (200, [], [])],
        ("GET", f"{L}?iteration_token=X1"): [(200, [], [])],
        ("GET", f"{L}/b"): [(200, {"id": "b", "status": "failed"}, [])],
        ("GET", f"{L}?count=1000&iteration_token=T2"): [(200, [], [])],
        ("GET", f"{L}/c"): [(404, NO, [])],
    })
    with ops.client() as c:
        live = LiveTransfers(c)
        assert _ids(live.refresh()) == [("a", "running"), ("b", "running")]
        assert _targets(ops) == [f"{L}?count=1000", f"{L}?iteration_token=T1"]
        n = len(ops.asked())
        # a was listed again since (ended), c is new; b ended: only b is asked for
        assert _ids(live.refresh()) == [("a", "completed"), ("b", "failed"),
                                        ("c", "running")]
        assert _targets(ops, n) == [f"{L}?count=1000&iteration_token=T1",
                                    f"{L}?iteration_token=T2",
                                    f"{L}?count=1000&active_only=true",
                                    f"{L}?iteration_token=X1", f"{L}/b"]
        n = len(ops.asked())
        # from where the new ones ended (T2); c ended and the node forgot it
        assert _ids(live.refresh()) == [("a", "completed"), ("b", "failed")]
        assert _targets(ops, n) == [f"{L}?count=1000&iteration_token=T2",
                                    f"{L}?count=1000&active_only=true", f"{L}/c"]


@pytest.mark.parametrize("refused", ["first", "since", "active"])
def test_a_node_that_refuses_1000_a_page_is_asked_for_100_the_same_way(ops, refused):
    from nodecli.node.transfers import PAGE_SIZE, LiveTransfers

    bad = {"first": f"{L}?count=1000", "since": f"{L}?count=1000&iteration_token=T1",
           "active": f"{L}?count=1000&active_only=true"}[refused]
    for count in (1000, 100):
        ops.routes.update({
            ("GET", f"{L}?count={count}"): [(200, _page(("a", "running")), ops.link("T1"))],
            ("GET", f"{L}?iteration_token=T1"): [(200, [], [])],
            ("GET", f"{L}?count={count}&iteration_token=T1"): [(200, [], [])],
            ("GET", f"{L}?count={count}&active_only=true"): [(200, [], [])]})
    ops.routes[("GET", bad)] = [(400, NO, [])]
    ops.routes[("GET", f"{L}/a")] = [(200, {"id": "a", "status": "completed"}, [])]
    with ops.client() as c:
        live = LiveTransfers(c)
        live.refresh()
        assert _ids(live.refresh()) == [("a", "completed")]
    assert live.count == PAGE_SIZE
    first = [f"{L}?count=1000", f"{L}?iteration_token=T1"]
    assert _targets(ops) == {
        "first": [f"{L}?count=1000", f"{L}?count=100", f"{L}?iteration_token=T1",
                  f"{L}?count=100&iteration_token=T1", f"{L}?count=100&active_only=true"],
        "since": [*first, f"{L}?count=1000&iteration_token=T1",
                  f"{L}?count=100&iteration_token=T1", f"{L}?count=100&active_only=true"],
        "active": [*first, f"{L}?count=1000&iteration_token=T1",
                   f"{L}?count=1000&active_only=true", f"{L}?count=100&active_only=true"],
    }[refused] + [f"{L}/a"]


def test_a_refusal_other_than_400_or_at_100_is_the_error(ops):
    from nodecli.errors import NodecliError, RemoteError
    from nodecli.node.events.pages import MalformedPage
    from nodecli.node.transfers import LiveTransfers

    ops.routes[("GET", f"{L}?count=1000")] = [(500, NO, [])]
    with ops.client() as c, pytest.raises(RemoteError):
        LiveTransfers(c).refresh()
    assert _targets(ops) == [f"{L}?count=1000"]
    ops.routes[("GET", f"{L}?count=1000")] = [(400, NO, [])]
    ops.routes[("GET", f"{L}?count=100")] = [(400, NO, [])]
    with ops.client() as c, pytest.raises(NodecliError) as e:
        LiveTransfers(c).refresh()
    assert e.value.status == 400
    ops.routes[("GET", f"{L}?count=1000")] = [(200, b"{}", [])]
    with ops.client() as c, pytest.raises(MalformedPage):
        LiveTransfers(c).refresh()


def _seed_running(ops, n):
    """A first listing (count=2) of ``n`` running transfers, two a page."""
    names = "abcdef"[:n]
    pages = [names[i:i + 2] for i in range(0, n, 2)]
    targets = [f"{L}?count=2"] + [f"{L}?iteration_token=T{i}" for i in range(1, len(pages) + 1)]
    for i, target in enumerate(targets):
        body = _page(*[(x, "running") for x in pages[i]]) if i < len(pages) else []
        ops.routes[("GET", target)] = [(200, body, ops.link(f"T{i + 1}")
                                        if i < len(pages) else [])]
    return targets[-1].rsplit("=", 1)[-1]


def test_as_many_ended_as_a_page_holds_are_asked_one_by_one(ops):
    from nodecli.node.transfers import LiveTransfers

    token = _seed_running(ops, 2)
    ops.routes[("GET", f"{L}?count=2&iteration_token={token}")] = [(200, [], [])]
    ops.routes[("GET", f"{L}?count=2&active_only=true")] = [(200, [], [])]
    for x in "ab":
        ops.routes[("GET", f"{L}/{x}")] = [(200, {"id": x, "status": "completed"}, [])]
    with ops.client() as c:
        live = LiveTransfers(c)
        live.count = 2  # a node that caps a page at 2
        live.refresh()
        n = len(ops.asked())
        assert _ids(live.refresh()) == [("a", "completed"), ("b", "completed")]
    assert _targets(ops, n) == [f"{L}?count=2&iteration_token={token}",
                                f"{L}?count=2&active_only=true", f"{L}/a", f"{L}/b"]


def test_more_ended_than_a_page_holds_are_listed_whole_and_the_token_stays(ops):
    from nodecli.node.transfers import LiveTransfers

    token = _seed_running(ops, 3)
    since = f"{L}?count=2&iteration_token={token}"
    ops.routes[("GET", since)] = [(200, [], [])]
    ops.routes[("GET", f"{L}?count=2&active_only=true")] = [(200, [], [])]
    ops.routes[("GET", f"{L}?count=2")].append(
        (200, _page(("a", "completed"), ("b", "completed")), ops.link("F1")))
    ops.routes[("GET", f"{L}?iteration_token=F1")] = [(200, _page(("c", "failed")),
                                                       ops.link("F2"))]
    ops.routes[("GET", f"{L}?iteration_token=F2")] = [(200, [], [])]
    with ops.client() as c:
        live = LiveTransfers(c)
        live.count = 2
        live.refresh()
        n = len(ops.asked())
        assert _ids(live.refresh()) == [("a", "completed"), ("b", "completed"),
                                        ("c", "failed")]
        assert _targets(ops, n) == [since, f"{L}?count=2&active_only=true", f"{L}?count=2",
                                    f"{L}?iteration_token=F1", f"{L}?iteration_token=F2"]
        n = len(ops.asked())
        live.refresh()
        assert _targets(ops, n) == [since, f"{L}?count=2&active_only=true"]
