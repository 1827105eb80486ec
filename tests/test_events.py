"""Events: list, get, tail against the emulator over real sockets."""

from __future__ import annotations

import json
import os
import re
from urllib.parse import parse_qs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecli.emulator.server import Reply
from nodecli.errors import NodecliError, UsageError
from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.node.events import checkpoint, pages, sinks, tail
from nodecli.node.events.tail import tail as run_tail_loop
from nodecli.node.info import NodeInfo
from nodecli.render import events as rev


@pytest.fixture
def client(emulator):
    c = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                             label="emu", cacert=emulator.ca_file))
    c._sleep = lambda s: None
    yield c
    c.close()


@pytest.fixture
def version(node_version):
    return node_version


def last_query(log) -> dict[str, list[str]]:
    return parse_qs(log.queries[-1], keep_blank_values=True)


def jsonl_ids(text: str) -> list[str]:
    return [json.loads(line)["id"] for line in text.splitlines() if line.strip()]


# -- filters reach the node as interface.md names them ----------------------------------


@pytest.mark.parametrize("args, expected", [
    (["--type", "transfer.started"], {"type": ["transfer.started"]}),
    (["--type-glob", "file.*"], {"type_glob[]": ["file.*"]}),
    (["--count", "7"], {"count": ["7"]}),
    (["--iteration-token", "0"], {"iteration_token": ["0"]}),
    (["--since", "2021-01-02T03:04:05Z"], {"after_time": ["2021-01-02T03:04:05Z"]}),
])
def test_filters_reach_the_node_in_documented_form(invoke, node_env, log, args, expected):
    log.generate(3)
    r = invoke("events", "list", *args, env=node_env)
    assert r.exit_code == 0, r
    q = last_query(log)
    for key, value in expected.items():
        assert q[key] == value
    assert not {"type_glob", "since", "page_size"} & set(q)


def test_type_and_glob_are_mutually_exclusive(invoke, node_env, log):
    r = invoke("events", "list", "--type", "file.created", "--type-glob", "file.*", env=node_env)
    assert r.exit_code == 2
    assert "cannot be combined" in r.stderr
    assert len(log.queries) == 0


def test_type_filter_matches_parent_type_of_transfers(invoke, node_env, log):
    log.generate(60, families=["transfer", "file"])
    r = invoke("events", "list", "--type", "transfer.started", "--count", "1000", "-o", "json",
               env=node_env)
    events = json.loads(r.stdout)["events"]
    assert events and all("transfer.started" in e["types"] for e in events)
    assert all(len(e["types"]) == 2 for e in events)  # subtype + parent type
    assert all(e["data"]["status"] == "running" and e["data"]["end_time_usec"] is None
               for e in events)
    r = invoke("events", "list", "--type-glob", "transfer.*", "--count", "1000", "-o", "json",
               env=node_env)
    ended = [e for e in json.loads(r.stdout)["events"] if "transfer.ended" in e["types"]]
    assert all(e["data"]["status"] == "completed" and e["data"]["end_time_usec"] for e in ended)


def test_count_returns_the_oldest_and_json_shape(invoke, node_env, log):
    log.generate(30)
    r = invoke("events", "list", "--count", "5", "-o", "json", env=node_env)
    out = json.loads(r.stdout)
    assert [e["id"] for e in out["events"]] == ["1", "2", "3", "4", "5"]
    assert out["next_iteration_token"] == "5"
    assert "iteration_token=5" in out["next_url"] and "count=5" in out["next_url"]
    r2 = invoke("events", "list", "--count", "5", "--iteration-token", "5", "-o", "jsonl",
                env=node_env)
    assert jsonl_ids(r2.stdout) == ["6", "7", "8", "9", "10"]
    assert "next iteration token: 10" in r2.stderr


def test_table_output_and_token_on_stderr(invoke, node_env, log):
    log.generate(4, families=["file"])
    r = invoke("events", "list", env=node_env)
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0].split() == ["id", "time", "type", "user", "summary"]
    # times in ISO 8601 UTC to the second, the one time style of every table
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r.stdout.splitlines()[1].split()[1])
    assert "next iteration token: 4" in r.stderr
    assert "iteration" not in r.stdout


def test_after_time_and_token_more_recent_point_wins(client, log):
    for i in range(10):
        log.append({"time": f"2030-01-01T00:00:{i:02d}Z", "types": ["file.created"]})
    # token after id 7, time after 00:00:02 (id 3): the token is more recent
    page = pages.fetch_page(client, "/events", [("iteration_token", "7"),
                                             ("after_time", "2030-01-01T00:00:02Z")])
    assert [e["id"] for e in page.events] == ["8", "9", "10"]
    # token after id 2, time after 00:00:05 (id 6): the time is more recent
    page = pages.fetch_page(client, "/events", [("iteration_token", "2"),
                                             ("after_time", "2030-01-01T00:00:05Z")])
    assert [e["id"] for e in page.events] == ["7", "8", "9", "10"]


@pytest.mark.parametrize("params", [
    [("count", "-1")], [("count", "x")], [("iteration_token", "abc")],
    [("after_time", "yesterday")], [("type", "a"), ("type", "b")],
    [("type_glob[]", "file.*"), ("type_glob[]", "permission.*")],
    [("type", "file.created"), ("type_glob[]", "file.*")], [("type_glob[]", "file.?")],
    [("iteration_token", "999999")],
])
def test_node_refuses_malformed_queries(client, log, params):
    log.generate(3)
    with pytest.raises(NodecliError) as exc:
        pages.fetch_page(client, "/events", params)
    assert exc.value.status == 400


def test_paging_follows_link_in_order(invoke, node_env, log):
    log.generate(25)
    r = invoke("events", "tail", "--since", "1h", "--page-size", "7", "-o", "jsonl",
               env=node_env)
    assert r.exit_code == 0, r
    assert jsonl_ids(r.stdout) == [str(i) for i in range(1, 26)]
    tokens = [parse_qs(q).get("iteration_token") for q in log.queries]
    # the short last page (4 events) is not taken as the end: one more request, answered
    # with an empty page, says the tail has caught up
    assert [t[0] for t in tokens if t] == ["7", "14", "21", "25"]
    assert all(parse_qs(q)["count"] == ["7"] for q in log.queries)


def test_tail_default_start_is_recent_events_only(invoke, node_env, log):
    log.append({"time": "2020-01-01T00:00:00Z", "types": ["file.deleted"]})
    log.generate(3, families=["file"])
    r = invoke("events", "tail", "-o", "jsonl", env=node_env)
    assert jsonl_ids(r.stdout) == ["2", "3", "4"]
    assert "after_time" in parse_qs(log.queries[0])


# -- get and versions ------------------------------------------------------------------


def test_get_by_id_and_404(invoke, node_env, log):
    log.generate(5)
    r = invoke("events", "get", "3", "-o", "json", env=node_env)
    assert r.exit_code == 0
    assert json.loads(r.stdout)["id"] == "3"
    r = invoke("events", "get", "42", env=node_env)
    assert r.exit_code == 5
    assert "no such event: 42" in r.stderr


def test_version_gating(invoke, node_env, log, version):
    log.generate(2)
    version("3.7.2")
    r = invoke("events", "get", "1", env=node_env)
    assert r.exit_code == 1
    assert "3.7.3" in r.stderr and "3.7.2" in r.stderr
    r = invoke("events", "list", env=node_env)  # /info is cached for the run's profile
    assert r.exit_code == 0


def test_info_cache_is_read_only_for_its_own_identity(invoke, node_env, log, version, home):
    """The /info cache file is named by a checksum of (URL, login); it also holds the
    identity, so a file written for another identity with the same name is not used."""
    log.generate(2)
    version("3.7.2")
    assert invoke("events", "get", "1", env=node_env).exit_code == 1  # /info cached: 3.7.2
    [cache] = (home / "state" / "cache").glob("info-*.json")
    cached = json.loads(cache.read_text())
    assert cached["who"] == f"{node_env['NODECLI_URL']}|basic|admin"
    version("3.7.3")
    assert invoke("events", "get", "1", env=node_env).exit_code == 1  # still the cache
    cache.write_text(json.dumps({**cached, "who": "https://other:9092|basic|admin"}))
    r = invoke("events", "get", "1", env=node_env)  # not its identity: asked again
    assert r.exit_code == 0, r.stderr
    assert json.loads(cache.read_text())["version"] == "3.7.3"


def test_version_too_old_for_events(invoke, node_env, log, version, home):
    version("3.5.9")
    r = invoke("events", "tail", env=node_env)
    assert r.exit_code == 1
    assert "3.6.0" in r.stderr
    assert not log.queries  # refused before asking


def test_emulator_gates_paths_by_version(client, version):
    version("3.5.0")
    with pytest.raises(NodecliError) as exc:
        pages.fetch_page(client, "/events")
    assert exc.value.status == 404
    version("3.7.0")
    pages.fetch_page(client, "/events")
    with pytest.raises(NodecliError) as exc:
        client.request("GET", "/events/1")
    assert exc.value.status == 404


def test_empty_log_hint_when_logging_off(invoke, node_env, log, version):
    version("3.8.0")
    log.logging_enabled = False
    log.generate(5)
    assert len(log) == 0
    r = invoke("events", "list", env=node_env)
    assert r.exit_code == 0
    assert "activity_event_logging" in r.stderr
    version("3.7.3")  # before 3.7.4, logging needs no activation
    log.generate(2)
    assert len(log) == 2


# -- hostile pages -----------------------------------------------------------------------


def _link(emulator, position="99"):
    return {"Link": f'<{emulator.url}/events?iteration_token={position}>; rel="next"'}


@pytest.mark.parametrize("body, message", [
    (b"<html>oops", "not a JSON array"),
    (b'{"events": []}', "not a JSON array"),
    (b"[1, 2]", "not an object"),
    (b'[{"time": "x"}]', "has no id"),
    (b'[{"id": "1"}', "not valid JSON"),
    (b'[{"id": "1"}] trailing', "data after the array"),
    (b"\xff\xfe", "not UTF-8"),
    (b"", "empty"),
])
def test_hostile_pages_are_errors(invoke, node_env, log, emulator, body, message):
    log.push_reply(Reply(200, body, _link(emulator)))
    r = invoke("events", "list", env=node_env)
    assert r.exit_code == 6, r
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_garbage_and_dropped_responses(invoke, node_env, emulator, log):
    log.generate(3)
    emulator.faults.path_prefix = "/events"
    emulator.faults.push("garbage", "garbage", "garbage", "garbage")
    r = invoke("events", "tail", "--since", "1h", env=node_env)
    assert r.exit_code == 6
    emulator.faults.clear()
    emulator.faults.push("drop", "drop", "drop", "drop", "drop")
    r = invoke("events", "list", env=node_env)
    assert r.exit_code == 6
    emulator.faults.path_prefix = "/"


def test_missing_link_stops_tail_but_list_warns(invoke, node_env, emulator, log):
    log.push_reply(Reply(200, b'[{"id": "1", "types": []}]'))
    r = invoke("events", "tail", "--since", "1h", "-o", "jsonl", env=node_env)
    assert r.exit_code == 6
    assert "no Link" in r.stderr
    assert r.stdout == ""  # nothing written from a page that cannot be checkpointed
    log.push_reply(Reply(200, b'[{"id": "1", "types": []}]'))
    r = invoke("events", "list", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0
    assert jsonl_ids(r.stdout) == ["1"]
    assert "no Link" in r.stderr


def test_huge_fields_and_control_characters(invoke, node_env, log):
    big = "/data/" + "x" * 1_000_000
    log.append({"user_id": "\x1b[31mevil\x07", "types": ["file.created"],
                "data": {"path": big, "size": 3, "type": "file"}})
    r = invoke("events", "tail", "--since", "1h", "-o", "plain", env=node_env)
    assert r.exit_code == 0
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert len(r.stdout) < 1000
    r = invoke("events", "tail", "--since", "1h", "-o", "jsonl", env=node_env)
    obj = json.loads(r.stdout)
    assert obj["data"]["path"] == big and obj["user_id"] == "\x1b[31mevil\x07"


def test_follow_treats_malformed_pages_and_5xx_as_transient(client, emulator, log):
    log.generate(5)
    emulator.faults.path_prefix = "/events"
    emulator.faults.push("503", "reset", "garbage")
    log.push_reply(Reply(200, b"{}", _link(emulator)))
    statuses: list[str] = []
    out: list[str] = []

    class Sink:
        def write(self, chunk: str) -> None:
            out.append(chunk)

        def position(self):
            return None

        def recover(self, cp):
            return []

    opts = tail.TailOptions(follow=True, token="0", fmt="jsonl", max_events=5, interval=0.01)
    state = run_tail_loop(client, opts, Sink(), status=statuses.append, sleep=lambda s: None)
    emulator.faults.path_prefix = "/"
    assert jsonl_ids("".join(out)) == ["1", "2", "3", "4", "5"]
    assert state.stopped_by == "max-events"
    assert [s.split(" (")[0] for s in statuses] == ["reconnecting"] * 4 + ["resumed"]
    assert "attempt 4" in statuses[3]


def test_fatal_errors_are_not_retried_in_follow(invoke, node_env):
    env = dict(node_env, NODECLI_PASSWORD="wrong")
    r = invoke("events", "tail", "-f", env=env)
    assert r.exit_code == 4
    r = invoke("events", "tail", "-f", "--iteration-token", "77777", env=node_env)
    assert r.exit_code == 1
    assert "refused iteration token 77777" in r.stderr


# -- summaries ---------------------------------------------------------------------------


def test_summaries_per_family():
    running = {"types": ["upload.started", "transfer.started"], "data": {
        "direction": "receive", "status": "running", "end_time_usec": None,
        "bytes_transferred": 2_500_000, "current_rate_kbps": 800, "target_rate_kbps": 1000,
        "remote_host": "10.0.0.1"}}
    s = rev.summary(running)
    assert "[RUNNING]" in s and "receive" in s and "2.5 MB" in s and "800 kbps" in s
    ended = {"types": ["download.ended", "transfer.ended"], "data": {
        "direction": "send", "status": "completed", "start_time_usec": 0,
        "end_time_usec": 2_000_000, "bytes_transferred": 10, "avg_rate_kbps": 5000,
        "error_code": 19, "error_desc": "disk full"}}
    s = rev.summary(ended)
    assert "completed" in s and "5.0 Mbps" in s and "in 2.0 s" in s and "error 19: disk full" in s
    assert rev.main_type(ended["types"]) == "download.ended"
    perm = {"types": ["permission.created"], "data": {"access_type": "user", "access_id": "7",
                                                      "access_levels": ["read", "write"],
                                                      "file_id": "12"}}
    assert rev.summary(perm) == "user 7: read,write on file 12"
    f = {"types": ["file.created"], "data": {"path": "/a/b", "size": 1500}}
    assert rev.summary(f) == "/a/b (1.5 kB)"
    lock = {"types": ["file.filelock.created"], "data": {"path": "/x"}}
    assert rev.summary(lock).startswith("lock created on /x")
    assert rev.summary({"types": "nonsense", "data": []}) == ""


# -- parsers under hostile input --------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_parse_events_never_crashes_on_bytes(body):
    try:
        items = pages.parse_events(body)
    except pages.MalformedPage:
        return
    assert all(isinstance(o, dict) for o, _ in items)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=20)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["id", "time", "types", "data", "x"]),
                                json_values, max_size=5), max_size=5),
       st.sampled_from([None, 2]))
def test_parse_events_passes_objects_through(events, indent):
    body = json.dumps(events, indent=indent).encode()
    try:
        items = pages.parse_events(body)
    except pages.MalformedPage:
        assert any(not isinstance(e.get("id"), (str, int)) or isinstance(e.get("id"), bool)
                   or e.get("id") == "" for e in events)
        return
    first: dict[object, dict] = {}
    for e in events:  # an id repeated within a page is kept once, the first
        first.setdefault(e["id"], e)
    assert [o for o, _ in items] == list(first.values())
    assert [json.loads(raw) for _, raw in items] == list(first.values())
    assert all("\n" not in raw for _, raw in items)
    for event in events:  # summaries never crash on hostile shapes
        rev.summary(event)
        rev.plain_line(event)
        rev.pretty_line(event)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=40)), st.one_of(st.none(), st.text(max_size=40)))
def test_event_filter_validation(type_, glob):
    try:
        flt = pages.EventFilter(type_, glob)
    except UsageError:
        return
    assert len(flt.params()) <= 1
    assert "/" not in flt.key() or flt.key().startswith("f-")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_link_and_tokens_never_crash(value):
    page = pages.parse_page(b"[]", value, "http://127.0.0.1:1/events", "http://127.0.0.1:1")
    assert (page.next_url is None) == (page.link_problem is not None)
    stripped = value.strip()
    valid = (0 < len(stripped) <= 1000
             and all(33 <= ord(c) != 127 for c in stripped))
    if valid:
        assert pages.validate_token(value) == stripped
    else:
        with pytest.raises(UsageError, match="iteration token"):
            pages.validate_token(value)


@pytest.mark.parametrize(("value", "ok"), [
    ("1440571", True), (" 7 ", True), ("!", True), ("~", True), ("x" * 1000, True),
    ("", False), ("   ", False), ("a b", False), ("a\x7fb", False), ("a\x1fb", False),
    ("x" * 1001, False),
])
def test_validate_token_boundaries(value, ok):
    if ok:
        assert pages.validate_token(value) == value.strip()
    else:
        with pytest.raises(UsageError):
            pages.validate_token(value)


@pytest.mark.parametrize("args, message", [
    (["--since", "1h", "--iteration-token", "5"], "not both"),
    (["--checkpoint", "a.json", "--resume", "x"], "not both"),
    (["--to", "out.txt", "-o", "pretty"], "jsonl or plain"),
    (["--resume", "../etc"], "invalid checkpoint name"),
    (["--until-type", "Not A Type"], "invalid event type"),
    (["--since", "tomorrow"], "--since"),
    (["--type-glob", "file.[ab]"], "invalid type glob"),
    (["--iteration-token", "a b"], "iteration token"),
])
def test_tail_usage_errors_before_any_request(invoke, emulator, log, args, message):
    # no password anywhere: a usage error must come before any prompt or request
    r = invoke("events", "tail", *args, env={"NODECLI_URL": emulator.url,
                                             "NODECLI_USER": "admin"})
    assert r.exit_code == 2, r
    assert message in r.stderr
    assert not log.queries


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=200),
                 st.dictionaries(st.sampled_from(["version", "iteration_token", "after_time",
                                                  "skip_ids", "last_ids", "node", "filter",
                                                  "output"]),
                                 json_values, max_size=8).map(lambda d: json.dumps(d).encode())))
def test_checkpoint_load_refuses_hostile_files(tmp_path_factory, raw):
    from nodecli.errors import ConfigError

    path = tmp_path_factory.mktemp("ck") / "ck.json"
    path.write_bytes(raw)
    ck = checkpoint.CheckpointFile(path, node="n", flt=pages.EventFilter())
    try:
        cp = ck.load()
    except (ConfigError, UsageError):
        assert path.read_bytes() == raw  # a refused checkpoint is left untouched
        return
    assert cp is not None and (cp.token or cp.after_time)
    assert all(isinstance(x, str) for x in cp.skip + cp.last_ids)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 50), max_size=6), st.binary(max_size=40))
def test_file_recovery_keeps_only_whole_event_lines(tmp_path_factory, ids, torn):
    path = tmp_path_factory.mktemp("out") / "events.jsonl"
    head = b'{"id":"0"}\n'
    path.write_bytes(head)
    sink = sinks.FileSink(path, "jsonl")
    try:
        cp = checkpoint.Checkpoint("0", output=sink.position())
        lines = b"".join(json.dumps({"id": str(i)}).encode() + b"\n" for i in ids)
        with open(path, "ab") as fh:
            fh.write(lines + torn)
        got = sink.recover(cp)
    finally:
        sink.close()
    data = path.read_bytes()
    assert data.startswith(head + lines)
    assert got[: len(ids)] == [str(i) for i in ids]
    assert data.endswith(b"\n")
    for line in data.splitlines():
        assert "id" in json.loads(line)


def test_filter_keys_name_checkpoint_files_stably():
    # --resume NAME finds NAME@<key>.json: a changed key silently restarts every resume
    assert pages.EventFilter().key() == "all"
    assert pages.EventFilter(type="transfer.started").key() == "type-transfer.started"
    assert pages.EventFilter(type_glob="file.*").key() == "glob-file.ANY"


def test_node_now_adds_the_time_since_info_and_never_goes_back():
    import time
    from datetime import UTC, datetime, timedelta

    then = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    info = NodeInfo("4.4.5", "2030-01-02T03:04:05Z", fetched_at=time.time() - 3600)
    assert timedelta(hours=1) <= info.node_now() - then < timedelta(hours=2)
    # a local clock that went backwards since /info: the node's time, not earlier
    future = NodeInfo("4.4.5", "2030-01-02T03:04:05Z", fetched_at=time.time() + 3600)
    assert future.node_now() == then


@pytest.mark.parametrize(("eid", "ok"), [
    ("x" * 200, True), (" 7 ", True), ("", False), ("   ", False), ("x" * 201, False),
    ("a\x1fb", False), ("a\x7fb", False), ("a\x00", False),
])
def test_get_event_id_boundaries(client, eid, ok):
    if ok:  # a well-formed id reaches the node (which has no such event)
        with pytest.raises(NodecliError) as info:
            pages.get_event(client, eid)
        assert not isinstance(info.value, UsageError)
        assert "list event ids" in (info.value.hint or "")
    else:
        with pytest.raises(UsageError, match="event id"):
            pages.get_event(client, eid)


# -- parse_events / parse_page / is_caught_up, case by case ----------------------------------


@pytest.mark.parametrize(("body", "items"), [
    (b"[]", []),
    (b" [ ] ", []),
    (b"[\n]\n", []),
    (b'[{"id":1}]', [({"id": 1}, '{"id":1}')]),
    # the original text is kept (spacing and all) unless it spans lines
    (b'[ {"id": "a" } , {"id":2,\n"x":"\xc3\xa9"} ]',
     [({"id": "a"}, '{"id": "a" }'), ({"id": 2, "x": "é"}, '{"id":2,"x":"é"}')]),
    (b'[{"id":1}\r\n,\t{"id":2}]', [({"id": 1}, '{"id":1}'), ({"id": 2}, '{"id":2}')]),
    (b'[{"id":"x","d":"a\\rb"}]', [({"id": "x", "d": "a\rb"}, '{"id":"x","d":"a\\rb"}')]),
    (b'[{"id":1,\r"x":1}]', [({"id": 1, "x": 1}, '{"id":1,"x":1}')]),
    (b'[{"id":0}]', [({"id": 0}, '{"id":0}')]),
    (b'[{"id":1},{"id":2}]', [({"id": 1}, '{"id":1}'), ({"id": 2}, '{"id":2}')]),
])
def test_parse_events_accepts(body, items):
    from nodecli.node.events.pages import parse_events

    assert parse_events(body, "U") == items


@pytest.mark.parametrize(("body", "message"), [
    (b"", "U: the events page is empty (0 bytes)"),
    (b"  ", "U: the events page is empty (2 bytes)"),
    (b"{}", "U: the events page is not a JSON array (2 bytes)"),
    (b'[{"id":1},]', "U: the events page is not valid JSON (at character 10)"),
    (b'[{"id":1}', "U: the events page is not valid JSON (at character 9)"),
    (b'[{"id":1} {"id":2}]', "U: the events page is not valid JSON (at character 10)"),
    (b'[{"id":1}] x', "U: the events page has data after the array"),
    (b'[{"id":1}]x', "U: the events page has data after the array"),
    (b"[]x", "U: the events page has data after the array"),
    (b"[1]", "U: item 1 of the events page is not an object"),
    (b'[{"id":1},"a"]', "U: item 2 of the events page is not an object"),
    (b'[{"id":true}]', "U: item 1 of the events page has no id"),
    (b'[{"id":""}]', "U: item 1 of the events page has no id"),
    (b'[{"id":1.5}]', "U: item 1 of the events page has no id"),
    (b'[{"x":1}]', "U: item 1 of the events page has no id"),
    (b'[{"id":1},{"id":[]}]', "U: item 2 of the events page has no id"),
    (b"\xff", "U: the events page is not UTF-8 text"),
])
def test_parse_events_refuses_with_exact_message(body, message):
    from nodecli.node.events.pages import MalformedPage, parse_events

    with pytest.raises(MalformedPage) as exc:
        parse_events(body, "U")
    assert str(exc.value) == message


def test_parse_events_without_url_has_no_prefix():
    from nodecli.node.events.pages import MalformedPage, parse_events

    with pytest.raises(MalformedPage) as exc:
        parse_events(b"{}")
    assert str(exc.value) == "the events page is not a JSON array (2 bytes)"


_PAGE_URL = "http://node:9092/events?count=2"


@pytest.mark.parametrize(("link", "next_url", "token", "problem", "foreign"), [
    (None, None, None, 'the node sent no Link rel="next" header', None),
    ("</events?iteration_token=5>; rel=next", "http://node:9092/events?iteration_token=5",
     "5", None, None),
    ("<http://inner:9092/events?iteration_token=5&count=2>; rel=next",
     "http://node:9092/events?iteration_token=5&count=2", "5", None, "inner:9092"),
    ("<http://inner/other>; rel=next", None, None,
     'the Link rel="next" target has no iteration_token', "inner"),
    ("</events?iteration_token=>; rel=next", None, None,
     'the Link rel="next" target has no iteration_token', None),
    ("</events?iteration_token=1&iteration_token=7>; rel=next",
     "http://node:9092/events?iteration_token=1&iteration_token=7", "7", None, None),
    ("<ftp://x/>; rel=next", None, None,
     "the Link rel=\"next\" header is not a usable URL ('ftp://x/': not an http or https URL "
     "with a host)", None),
    ("</events?x=1>; rel=next", None, None,
     'the Link rel="next" target has no iteration_token', None),
    ("<http://NODE:9092/events?iteration_token=3>; rel=next",
     "http://NODE:9092/events?iteration_token=3", "3", None, None),
])
def test_parse_page_link_cases(link, next_url, token, problem, foreign):
    from nodecli.node.events.pages import parse_page

    page = parse_page(b'[{"id":1}]', link, _PAGE_URL, "http://node:9092/")
    assert (page.next_url, page.next_token, page.link_problem, page.foreign_host) == (
        next_url, token, problem, foreign)
    assert page.url == _PAGE_URL and page.events == [{"id": 1}] and len(page) == 1


def test_foreign_next_link_without_query_goes_to_the_events_path():
    from nodecli.node.events.pages import parse_page

    page = parse_page(b"[]", "<http://inner/events>; rel=next", _PAGE_URL, "http://node:9092")
    assert page.next_url is None and page.foreign_host == "inner"


@pytest.mark.parametrize(("n", "next_token", "used", "caught_up"), [
    (0, None, None, True),
    (0, "5", "4", True),
    (1, "5", "5", True),       # the Link names the very token the page was asked for
    (1, "5", "4", False),
    (1, None, None, False),    # the first page: no token was used
    (1, "5", None, False),
])
def test_is_caught_up(n, next_token, used, caught_up):
    from nodecli.node.events.pages import Page, is_caught_up

    page = Page([({"id": i}, "{}") for i in range(n)], None, next_token, "u")
    assert is_caught_up(page, used) is caught_up


# -- checkpoints: exact round trip, exact refusals, the lock ---------------------------------


def _ck(tmp_path, node="n1", flt=None):
    return checkpoint.CheckpointFile(tmp_path / "cp" / "ck.json", node=node,
                             flt=flt or pages.EventFilter(type="transfer.started"))


def test_checkpoint_round_trip_is_exact_and_private(tmp_path):
    import stat as stat_

    ck = _ck(tmp_path)
    ck.path.parent.mkdir()
    ck.save(checkpoint.Checkpoint("tok-9", skip=["a", "b"], last_ids=["z"],
                          output={"path": "o", "size": 3}))
    data = json.loads(ck.path.read_bytes())
    assert {k: v for k, v in data.items() if k != "saved_at"} == {
        "version": 1, "node": "n1", "filter": {"type": "transfer.started", "type_glob": None},
        "iteration_token": "tok-9", "after_time": None, "skip_ids": ["a", "b"],
        "last_ids": ["z"], "output": {"path": "o", "size": 3}}
    assert ck.path.read_bytes().endswith(b"}\n")
    assert stat_.S_IMODE(ck.path.stat().st_mode) == 0o600
    assert ck.load() == checkpoint.Checkpoint("tok-9", None, ["a", "b"], ["z"], "n1",
                                      {"type": "transfer.started", "type_glob": None},
                                      {"path": "o", "size": 3})


def test_checkpoint_before_the_first_page_keeps_the_start_time(tmp_path):
    ck = _ck(tmp_path)
    ck.path.parent.mkdir()
    ck.save(checkpoint.Checkpoint("", after_time="2030-01-02T03:04:05Z"))
    assert json.loads(ck.path.read_bytes())["iteration_token"] is None
    cp = ck.load()
    assert (cp.token, cp.after_time, cp.skip, cp.output) == ("", "2030-01-02T03:04:05Z", [], None)
    # with a token, a stale after_time is not returned
    ck.path.write_text(json.dumps({"version": 1, "iteration_token": "t",
                                   "after_time": "2030-01-02T03:04:05Z"}))
    assert ck.load().after_time is None
    assert _ck(tmp_path).load() is not None  # no node or filter recorded: any will do


@pytest.mark.parametrize(("content", "kind", "message"), [
    ("{", "config", "checkpoint {p} is damaged (not JSON)"),
    ("[]", "config", "checkpoint {p} is damaged or of an unknown version"),
    ('{"version": 2, "iteration_token": "t"}', "config",
     "checkpoint {p} is damaged or of an unknown version"),
    ('{"version": 1, "iteration_token": ""}', "config",
     "checkpoint {p} is damaged or of an unknown version"),
    ('{"version": 1, "iteration_token": 5}', "config",
     "checkpoint {p} is damaged or of an unknown version"),
    ('{"version": 1, "after_time": 5}', "config",
     "checkpoint {p} is damaged or of an unknown version"),
    ('{"version": 1, "iteration_token": "t", "skip_ids": "a"}', "config",
     "checkpoint {p} is damaged"),
    ('{"version": 1, "iteration_token": "t", "last_ids": {"a": 1}}', "config",
     "checkpoint {p} is damaged"),
    ('{"version": 1, "after_time": "yesterday-ish"}', "config",
     "checkpoint {p} is damaged (after_time)"),
    ('{"version": 1, "iteration_token": "t", "node": "other"}', "usage",
     "checkpoint {p} belongs to node other, not n1"),
    ('{"version": 1, "iteration_token": "t", "filter": {"type": "file.created"}}', "usage",
     'checkpoint {p} was saved with another filter ({{"type": "file.created"}})'),
])
def test_checkpoint_refusals_are_exact_and_change_nothing(tmp_path, content, kind, message):
    from nodecli.errors import ConfigError

    ck = _ck(tmp_path)
    ck.path.parent.mkdir()
    ck.path.write_text(content)
    with pytest.raises(ConfigError if kind == "config" else UsageError) as exc:
        ck.load()
    assert exc.value.message == message.format(p=ck.path)
    if kind == "config":
        assert exc.value.hint == f"nothing was changed; to start over, delete {ck.path}"
    assert ck.path.read_text() == content


def test_missing_checkpoint_is_none_and_a_folder_is_refused(tmp_path):
    ck = _ck(tmp_path)
    assert ck.load() is None
    ck.path.parent.mkdir()
    ck.path.mkdir()
    with pytest.raises(UsageError) as exc:
        ck.load()
    assert exc.value.message == f"checkpoint {ck.path} is a folder, not a regular file"


def test_checkpoint_lock_is_exclusive_until_released(tmp_path):
    from nodecli.errors import ConflictError

    a, b = _ck(tmp_path), _ck(tmp_path)
    a.unlock()  # never locked: nothing to release
    a.lock()
    try:
        with pytest.raises(ConflictError) as exc:
            b.lock()
        assert exc.value.message == f"checkpoint {a.path} is in use by another 'events tail'"
    finally:
        a.unlock()
    a.unlock()  # twice is harmless
    b.lock()
    b.unlock()
    assert (tmp_path / "cp" / ".ck.json.lock").exists()


def test_resume_path_names(tmp_path):
    client = open_client(Endpoint("http://node.example:9092", Auth("basic", "admin", "pw")))
    key = checkpoint.node_key(client)
    import hashlib

    digest = hashlib.sha256(b"http://node.example:9092|admin").hexdigest()[:10]
    assert key == f"node.example_9092-{digest}"
    flt = pages.EventFilter(type_glob="file.*")
    assert checkpoint.resume_path(tmp_path, client, "a" * 64, flt) == \
        tmp_path / "checkpoints" / key / f"{'a' * 64}@glob-file.ANY.json"
    for bad in ("a" * 65, "", ".hidden", "a/b", "a b"):
        with pytest.raises(UsageError) as exc:
            checkpoint.resume_path(tmp_path, client, bad, flt)
        assert exc.value.message == (f"invalid checkpoint name {bad[:40]!r}: letters, digits, "
                                     "'.', '_' and '-' (at most 64)")
    long_type = pages.EventFilter(type="a." + "b" * 90)
    got = checkpoint.resume_path(tmp_path, client, "n", long_type).name
    assert got == "n@f-" + hashlib.sha256(long_type.key().encode()).hexdigest()[:16] + ".json"
    labelled = open_client(Endpoint("http://x:1", Auth("bearer", token="t", access_key="ak"),
                                    label="my prod/node"))
    assert checkpoint.node_key(labelled).startswith("my_prod_node-")


# -- sinks -----------------------------------------------------------------------------------


def test_stream_sink_flushes_every_write():
    class Stream:
        def __init__(self):
            self.parts, self.flushed = [], []

        def write(self, text):
            self.parts.append(text)

        def flush(self):
            self.flushed.append("".join(self.parts))

    s = Stream()
    sink = sinks.StreamSink(s)
    sink.write("a\n")
    sink.write("b\n")
    assert s.flushed == ["a\n", "a\nb\n"] and sink.position() is None


def test_file_sink_appends_and_reports_its_position(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id":"0"}\n')
    sink = sinks.FileSink(path, "jsonl")
    try:
        sink.write('{"id":"é"}\n')
        pos = sink.position()
        st = path.stat()
        assert pos == {"path": str(path), "size": st.st_size, "dev": st.st_dev,
                       "ino": st.st_ino}
        assert path.read_bytes() == '{"id":"0"}\n{"id":"é"}\n'.encode()
    finally:
        sink.close()
    sink.close()  # twice is harmless, and closes nothing else
    for fd in (0, 1, 2):
        os.fstat(fd)


def test_file_sink_creates_the_file_0644_under_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        sinks.FileSink(tmp_path / "new.jsonl", "jsonl").close()
    finally:
        os.umask(old)
    assert (tmp_path / "new.jsonl").stat().st_mode & 0o777 == 0o644


def test_file_sink_refusals(tmp_path):
    import threading

    from nodecli.errors import ConflictError

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rescued = []

    def rescue() -> None:  # only runs if opening blocked (no O_NONBLOCK): unblock, then fail
        rescued.append(True)
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))

    timer = threading.Timer(10.0, rescue)
    timer.start()
    try:
        with pytest.raises(UsageError) as exc:
            sinks.FileSink(fifo, "jsonl")
    finally:
        timer.cancel()
    assert rescued == []
    # no reader: opening a FIFO for writing without blocking fails at once (ENXIO)
    assert exc.value.message == (f"{fifo} is not a regular file: the output file must be a "
                                 "plain file (its checkpoint counts on its size); pipe stdout "
                                 "instead")
    target = tmp_path / "t"
    target.write_text("")
    os.symlink(target, tmp_path / "link")
    with pytest.raises(UsageError):
        sinks.FileSink(tmp_path / "link", "jsonl")
    a = sinks.FileSink(target, "jsonl")
    try:
        with pytest.raises(ConflictError) as exc:
            sinks.FileSink(target, "jsonl")
        assert exc.value.message == f"{target} is being written by another 'events tail'"
    finally:
        a.close()
    with pytest.raises(UsageError) as exc:
        sinks.FileSink(tmp_path, "jsonl")
    assert exc.value.message.startswith(f"cannot open {tmp_path} for appending: ")


@pytest.mark.parametrize(("fmt", "after", "ids", "kept"), [
    ("jsonl", b'{"id":"1"}\n{"id":2}\n{"id":"3"', ["1", "2"], b'{"id":"1"}\n{"id":2}\n'),
    ("jsonl", b'{"id":"1"}\nnot json\n{"id":"2"}\n', ["1"], b'{"id":"1"}\n'),
    ("jsonl", b'{"x":"1"}\n', [], b""),
    ("jsonl", b'[1]\n', [], b""),
    ("jsonl", b'{"id":"1"}\r\n\xff\n', ["1"], b'{"id":"1"}\r\n'),
    ("text", b"t\t7\ta\tb\tc\nt\t8\ta\tb\n", ["7"], b"t\t7\ta\tb\tc\n"),
    ("text", b"t\t\ta\tb\tc\n", [], b""),
    ("jsonl", b"", [], b""),
    ("jsonl", b'{"id":"1"}X\n', [], b""),
    ("text", b"t\t7\ta\tb\t\n", ["7"], b"t\t7\ta\tb\t\n"),  # an empty last field
])
def test_file_sink_recovery_cases(tmp_path, fmt, after, ids, kept):
    path = tmp_path / "out"
    head = b'{"id":"0"}\n'
    path.write_bytes(head)
    sink = sinks.FileSink(path, fmt)
    try:
        cp = checkpoint.Checkpoint("0", output=sink.position())
        with open(path, "ab") as fh:
            fh.write(after)
        assert sink.recover(cp) == ids
    finally:
        sink.close()
    assert path.read_bytes() == head + kept


def test_file_sink_recovery_leaves_other_files_alone(tmp_path):
    path = tmp_path / "out"
    path.write_bytes(b'{"id":"0"}\n{"id":"1"')
    sink = sinks.FileSink(path, "jsonl")
    try:
        pos = sink.position()
        # another file (inode, device), even with a size that would cut this one at a
        # line; sizes that do not fit this file
        for output in (None, {}, {**pos, "ino": pos["ino"] + 1}, {**pos, "dev": -1},
                       {**pos, "ino": pos["ino"] + 1, "size": 11},
                       {**pos, "dev": pos["dev"] + 1, "size": 11},
                       {**pos, "size": pos["size"] + 1}, {**pos, "size": -1},
                       {**pos, "size": "3"}, {**pos, "size": pos["size"]}):
            cp = checkpoint.Checkpoint("0", output=output)
            assert sink.recover(cp) == []
        assert sink.recover(None) == []
    finally:
        sink.close()
    assert path.read_bytes() == b'{"id":"0"}\n{"id":"1"'


def test_file_sink_recovery_from_an_empty_checkpointed_file(tmp_path):
    path = tmp_path / "out"
    path.write_bytes(b"")
    sink = sinks.FileSink(path, "jsonl")
    try:
        cp = checkpoint.Checkpoint("0", output=sink.position())
        with open(path, "ab") as fh:
            fh.write(b'{"id":"0"}\n{"id":"1"')
        assert sink.recover(cp) == ["0"]
    finally:
        sink.close()
    assert path.read_bytes() == b'{"id":"0"}\n'


def test_parse_page_names_the_page_url_in_body_errors():
    from nodecli.node.events.pages import MalformedPage, parse_page

    with pytest.raises(MalformedPage) as exc:
        parse_page(b"{}", None, _PAGE_URL, "http://node:9092")
    assert str(exc.value) == f"{_PAGE_URL}: the events page is not a JSON array (2 bytes)"


def test_checkpoint_larger_than_1_mib_is_refused_as_damaged(tmp_path):
    from nodecli.errors import ConfigError

    ck = _ck(tmp_path)
    ck.path.parent.mkdir()
    head = '{"version": 1, "iteration_token": "t", "skip_ids": ["'
    tail = '"]}'
    ck.path.write_text(head + "x" * (1024 * 1024 + 10 - len(head) - len(tail)) + tail)
    assert ck.path.stat().st_size == 1024 * 1024 + 10
    with pytest.raises(ConfigError) as exc:
        ck.load()
    assert exc.value.message == f"checkpoint {ck.path} is damaged (not JSON)"
