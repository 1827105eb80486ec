"""nodecli.node.transfers at its boundaries (issue 33, item 2: the survivors of its
mutation run): a transfer spec file, a rate's shape and units, what an ended transfer
is. Pure functions in process."""

from __future__ import annotations

import json

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

    def client(self):
        from nodecli.http.client import Auth, Endpoint, open_client

        return open_client(Endpoint(self.server.url(), Auth("basic", username="u",
                                                             password="pw-transfers"),
                                    cacert=self.certs[0], deadline=10.0, max_attempts=1))


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


def _watch(node, ids, **kw):
    from nodecli.node.transfers import watch_transfers

    clock, updates = Clock(), []
    with node.client() as c:
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
