"""nodecli.node.info at its boundaries (issue 33, item 2: the survivors of its mutation
run): version texts as tuples, the version a feature needs reached at equality, the
logging setting and capabilities in every shape a node sends, the /info cache's
lifetime (fresh before ``ttl``, not at it) and identity, and the node's clock. Pure
functions in process; GET /info over HTTPS against a scripted server."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from nodecli.errors import RemoteError
from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.node.info import (
    NodeInfo,
    _capabilities,
    _info_cache_file,
    info_document,
    logging_setting,
    node_clock_offset,
    node_info,
    version_tuple,
)
from tests.scripted_server import ScriptedServer, certificates, reply


@pytest.mark.parametrize(("text", "want"), [
    ("4.4.5", (4, 4, 5)), ("3.7", (3, 7, 0)), ("3", (3, 0, 0)), ("", (0, 0, 0)),
    ("3.8.0.1", (3, 8, 0)), ("10.2b.x", (10, 2, 0)), ("1." + "9" * 12, (1, 999999999, 0)),
    ("v3.1.2", (0, 1, 2)), ("3..1", (3, 0, 1))])
def test_a_version_text_is_three_numbers(text, want):
    assert version_tuple(text) == want


@pytest.mark.parametrize(("version", "tup"), [
    (None, None), ("", None), ("fast", None), ("x1.0", None), ("3.8", (3, 8, 0)),
    ("4", (4, 0, 0))])
def test_a_node_info_knows_a_version_that_starts_with_a_digit(version, tup):
    assert NodeInfo(version).version_tuple == tup


def test_a_feature_is_there_from_its_version_on():
    assert NodeInfo("3.8.0").at_least((3, 8, 0)) is True
    assert NodeInfo("3.8.1").at_least((3, 8, 0)) is True
    assert NodeInfo("3.7.9").at_least((3, 8, 0)) is False
    assert NodeInfo(None).at_least((3, 8, 0)) is None


def test_the_nodes_now_is_its_time_plus_the_time_since():
    fetched = time.time() - 100.0
    info = NodeInfo("1", "2026-06-01T12:00:00Z", fetched)
    got = info.node_now() - datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
    assert 100.0 <= got.total_seconds() < 160.0
    # fetched "in the future" (a clock set back) adds nothing
    ahead = NodeInfo("1", "2026-06-01T12:00:00Z", time.time() + 1000.0).node_now()
    assert ahead == datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("current", [None, "", "0000-00-00", "10000-01-01T00:00:00Z"])
def test_no_usable_time_is_our_now(current):
    before = datetime.now(UTC)
    got = NodeInfo("1", current, 0.0).node_now()
    assert before <= got <= datetime.now(UTC)


@pytest.mark.parametrize(("settings", "want"), [
    ([{"name": "activity_event_logging", "value": True}], True),
    ([{"name": "activity_event_logging", "value": False}], False),
    ([{"name": "activity_event_logging", "value": 1}], True),
    ([{"name": "activity_event_logging"}], False),
    ([{"name": "other", "value": True}], None),
    (["activity_event_logging"], None), ({"activity_event_logging": True}, None),
    (None, None),
    ([{"name": "activity_event_logging", "value": True},
      {"name": "activity_event_logging", "value": False}], False),
])
def test_the_logging_setting_as_info_says_it(settings, want):
    assert logging_setting({"settings": settings}) is want


def test_capabilities_in_every_shape_become_a_list_of_name_and_value():
    assert _capabilities({"a": 1, 2: "b"}) == [{"name": "a", "value": 1},
                                               {"name": "2", "value": "b"}]
    assert _capabilities([{"name": 3, "value": "x"}, {"name": "n"}, "flag", {"v": 1}, 7]) == [
        {"name": "3", "value": "x"}, {"name": "n", "value": None},
        {"name": "flag", "value": True}]
    assert _capabilities(None) == [] and _capabilities("text") == []


def test_the_cache_file_is_named_by_the_crc32_of_the_identity(tmp_path):
    from binascii import crc32

    assert _info_cache_file(tmp_path, "who") == \
        tmp_path / "cache" / f"info-{crc32(b'who'):08x}.json"
    assert _info_cache_file(str(tmp_path), "a\udcff").name == \
        f"info-{crc32(b'a' + bytes([255])):08x}.json"
    assert _info_cache_file(tmp_path, "x").name == f"info-{crc32(b'x'):08x}.json"
    assert len(_info_cache_file(tmp_path, "").name) == len("info-00000000.json")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates(tmp_path_factory.mktemp("certs"))


class Node:
    """A node answering GET /info with ``self.info`` (and a Date header unless told);
    one server for the module, set anew by each test."""

    def __init__(self, certs) -> None:
        self.server = ScriptedServer(self._answer, tls=(certs[1], certs[2]))
        self.certs = certs
        self.set({})

    def set(self, info, *, date: bool = True, status: int = 200) -> Node:
        self.info, self.date, self.status = info, date, status
        self.server.seen.clear()
        return self

    def _answer(self, seen):
        from email.utils import formatdate

        if (seen.method, seen.target) != ("GET", "/info"):  # nodecli asks nothing else
            yield reply(405, b"{}", [("Content-Type", "application/json")])
            return

        headers = [("Content-Type", "application/json")]
        if self.date:
            headers.append(("Date", formatdate(time.time() + 3600, usegmt=True)))
        yield reply(self.status, json.dumps(self.info).encode(), headers)

    def client(self, auth=None):
        return open_client(Endpoint(self.server.url(), auth or Auth("basic", username="u",
                                                                     password="p"),
                                    cacert=self.certs[0], deadline=10.0, max_attempts=1))

    @property
    def asked(self) -> int:
        return len(self.server.seen)


@pytest.fixture(scope="module")
def server(certs):
    node = Node(certs)
    yield node
    node.server.close()


INFO = {"version": "4.1.2", "current_time": "2026-06-01T12:00:00Z",
        "settings": [{"name": "activity_event_logging", "value": True}]}


def test_node_info_is_asked_once_and_cached_for_its_identity(server, tmp_path):
    with server.set(INFO).client() as c:
        first = node_info(c, tmp_path)
        assert (first.version, first.current_time, first.logging) == (
            "4.1.2", "2026-06-01T12:00:00Z", True)
        again = node_info(c, tmp_path)
        assert server.asked == 1
        assert (again.version, again.current_time, again.logging, again.fetched_at) == (
            first.version, first.current_time, first.logging, first.fetched_at)
        cached = json.loads(next((tmp_path / "cache").iterdir()).read_text())
        assert cached == {"who": f"{server.server.url()}|basic|u", "version": "4.1.2",
                          "current_time": "2026-06-01T12:00:00Z",
                          "fetched_at": first.fetched_at, "logging": True}
        with server.client(Auth("basic", username="other", password="p")) as c2:
            node_info(c2, tmp_path)
        assert server.asked == 2
        with server.client(Auth("basic", access_key="ak1", username="ak1",
                              password="p")) as c3:
            node_info(c3, tmp_path)
        assert server.asked == 3
        node_info(c, None)
        assert server.asked == 4


@pytest.mark.parametrize(("age", "fresh"), [(0.0, True), (119.0, True), (121.0, False),
                                            (-5.0, False)])
def test_a_cached_info_is_fresh_for_ttl_seconds(server, tmp_path, age, fresh):
    with server.set(INFO).client() as c:
        node_info(c, tmp_path)
        path = next((tmp_path / "cache").iterdir())
        doc = json.loads(path.read_text())
        doc["fetched_at"] = time.time() - age
        doc["version"] = "9.9.9"
        path.write_text(json.dumps(doc))
        got = node_info(c, tmp_path)
        assert (got.version == "9.9.9", server.asked) == (fresh, 1 if fresh else 2)


def test_the_ttl_is_a_bound_not_reached(server, tmp_path):
    with server.set(INFO).client() as c:
        node_info(c, tmp_path, ttl=0.0)
        node_info(c, tmp_path, ttl=0.0)
        assert server.asked == 2
        node_info(c, tmp_path, ttl=1000.0)
        assert server.asked == 2


@pytest.mark.parametrize("doc", [{"who": "someone else"}, [], {"fetched_at": "x"}])
def test_a_cache_of_another_identity_or_broken_is_not_used(server, tmp_path, doc):
    with server.set(INFO).client() as c:
        node_info(c, tmp_path)
        path = next((tmp_path / "cache").iterdir())
        if isinstance(doc, dict) and "fetched_at" in doc:
            doc = dict(json.loads(path.read_text()), **doc)
        path.write_text(json.dumps(doc))
        assert node_info(c, tmp_path).version == "4.1.2"
        assert server.asked == 2


def test_a_cache_without_fetched_at_is_stale(server, tmp_path):
    with server.set(INFO).client() as c:
        node_info(c, tmp_path)
        path = next((tmp_path / "cache").iterdir())
        doc = json.loads(path.read_text())
        del doc["fetched_at"]
        path.write_text(json.dumps(doc))
        node_info(c, tmp_path)
        assert server.asked == 2


@pytest.mark.parametrize(("info", "want"), [
    ({"version": 4, "current_time": 5}, (None, None, None)),
    ({}, (None, None, None)),
    ({"version": "3.7.0", "settings": [{"name": "activity_event_logging",
                                         "value": False}]}, ("3.7.0", None, False))])
def test_node_info_keeps_only_texts(server, tmp_path, info, want):
    with server.set(info).client() as c:
        got = node_info(c, tmp_path)
        assert (got.version, got.current_time, got.logging) == want


def test_no_info_is_none_and_said_once(server, tmp_path):
    lines: list[str] = []
    with server.set({"error": {"user_message": "no"}}, status=404).client() as c:
        assert node_info(c, tmp_path, log=lines.append) is None
        assert node_info(c, tmp_path) is None
        assert server.asked == 2
    assert len(lines) == 1 and lines[0].startswith("GET /info failed (")
    assert lines[0].endswith("); node version unknown")
    with server.set([1, 2]).client() as c:
        assert node_info(c, tmp_path) is None


def test_the_info_document_keeps_unknown_fields_and_lists_capabilities(server):
    with server.set({"version": "1", "x": [1], "capabilities": {"a": True}}).client() as c:
        assert info_document(c) == {"version": "1", "x": [1],
                                     "capabilities": [{"name": "a", "value": True}]}
    with server.set({"settings": {"s": 1}}).client() as c:
        assert info_document(c) == {"settings": [{"name": "s", "value": 1}],
                                    "capabilities": []}
    with server.set(["x"]).client() as c:
        with pytest.raises(RemoteError) as e:
            info_document(c)
        assert str(e.value) == f"{server.server.url()}/info did not answer with a JSON object"


@pytest.mark.parametrize("status", [200, 401, 403, 404])
def test_the_clock_offset_comes_from_any_answers_date(server, status):
    with server.set({}, status=status).client() as c:
        assert 3590 < node_clock_offset(c) < 3610
        assert 3590 < node_clock_offset(c) < 3610
        assert server.asked == 1


def test_no_date_no_clock(server):
    with server.set({}, date=False).client() as c:
        with pytest.raises(RemoteError) as e:
            node_clock_offset(c)
        assert str(e.value) == (f"{server.server.url()} sent no usable Date header: its clock "
                                "is not known")


@pytest.mark.parametrize(("auth", "who"), [
    (Auth("bearer", token="tok-info-1", access_key="ak9"), "bearer|ak9"),
    (Auth(), "none|")])
def test_the_cache_names_a_key_login_by_its_key_and_no_login_by_nothing(server, tmp_path,
                                                                       auth, who):
    with server.set(INFO).client(auth) as c:
        node_info(c, tmp_path)
    cached = json.loads(next((tmp_path / "cache").iterdir()).read_text())
    assert cached["who"] == f"{server.server.url()}|{who}"


# read_regular reads at most limit + 1 bytes: a longer file is cut, and its JSON with it
@pytest.mark.parametrize(("size", "used"), [(64 * 1024 + 1, True), (64 * 1024 + 2, False)])
def test_a_cache_file_is_read_up_to_64_kib_and_one_byte(server, tmp_path, size, used):
    with server.set(INFO).client() as c:
        node_info(c, tmp_path)
        path = next((tmp_path / "cache").iterdir())
        doc = dict(json.loads(path.read_text()), version="9.9.9", pad="")
        doc["pad"] = "p" * (size - len(json.dumps(doc)))
        path.write_text(json.dumps(doc))
        assert path.stat().st_size == size
        assert (node_info(c, tmp_path).version == "9.9.9") is used


def test_under_dry_run_the_cache_is_silently_not_written(server, tmp_path):
    from nodecli import dryrun

    dryrun.activate(True)
    try:
        with server.set(INFO).client() as c:
            assert node_info(c, tmp_path).version == "4.1.2"
    finally:
        dryrun.activate(False)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_cache_that_cannot_be_written_is_no_error(server, tmp_path):
    (tmp_path / "cache").write_text("a file where the folder goes")
    with server.set(INFO).client() as c:
        assert node_info(c, tmp_path).version == "4.1.2"
        assert node_info(c, tmp_path).version == "4.1.2"
    assert len(server.server.seen) == 2
