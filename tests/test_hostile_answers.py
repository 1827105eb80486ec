"""A node that answers wrongly, over HTTPS: Link loops, repeated ids, pages larger than
asked, numbers and constants no program can print back, deep nesting, lone surrogates,
format characters, csv formulas, and hints a user pastes. Each answer is survived: data
is shown as data, or the command ends with a one-line error and exit 6."""

from __future__ import annotations

import csv
import io
import json
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_server import ScriptedServer, Seen, certificates, reply

INFO = json.dumps({"application": "node", "version": "4.4.5",
                   "current_time": "2030-01-01T00:00:00Z"}).encode()
JSON = [("Content-Type", "application/json")]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    return certificates(tmp_path_factory.mktemp("tls"))


def ev(n: int, **fields: Any) -> dict[str, Any]:
    event = {"id": str(n), "time": "2030-01-01T00:00:00Z", "user_id": "u",
             "types": ["file.created"], "data": {"path": f"/f{n}", "size": 1}}
    event.update(fields)
    return event


def page(body: bytes | list[Any], next_token: str | None = None) -> list[bytes | float]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = list(JSON)
    if next_token is not None:
        headers.append(("Link", f'</events?iteration_token={next_token}>; rel="next"'))
    return [reply(200, data, headers)]


Script = Callable[[Seen], list[bytes | float]]


@pytest.fixture
def node(certs, invoke, home, monkeypatch) -> Iterator[Callable[[Script], Callable[..., Any]]]:
    """``node(script)`` serves ``script`` for /events (and a fixed /info) over HTTPS and
    returns a function running nodecli against it."""
    servers: list[ScriptedServer] = []

    def start(script: Script) -> Callable[..., Any]:
        def answer(seen: Seen) -> list[bytes | float]:
            if seen.target.startswith("/info"):
                return [reply(200, INFO, JSON)]
            return script(seen)

        server = ScriptedServer(answer, tls=(certs[1], certs[2]))
        servers.append(server)
        env = {"NODECLI_URL": server.url(), "NODECLI_USER": "admin",
               "NODECLI_PASSWORD": "a-long-password", "NODECLI_CACERT": certs[0]}
        return lambda *args: invoke(*args, env=env)

    yield start
    for server in servers:
        server.close()


def token_of(seen: Seen) -> str:
    return seen.target.split("iteration_token=")[1].split("&")[0]


# -- Link loops and repeated ids -------------------------------------------------------


@pytest.mark.parametrize("follow", [False, True], ids=["tail", "tail -f"])
def test_a_link_loop_ends_the_tail_with_exit_6_and_no_event_twice(node, tmp_path, follow):
    def loop(seen: Seen) -> list[bytes | float]:  # page 0 -> 1 -> 0 -> 1 ...
        n = int(token_of(seen))
        return page([ev(n + 1)], "1" if n == 0 else "0")

    out = tmp_path / "events.jsonl"
    # (--max-events bounds the run should the loop be followed: the test then fails)
    r = node(loop)("events", "tail", "--iteration-token", "0", "--to", str(out),
                   "--max-events", "50",
                   *(["-f", "--interval", "0.05"] if follow else []))
    assert r.exit_code == 6, r
    assert "leads back to a page already read" in r.stderr and r.stderr.count("\n") == 1
    # the page whose Link leads back is not written: the checkpoint still names it, so
    # a resume once the node is fixed reads it exactly once
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids == ["1"]


def test_a_token_that_never_advances_prints_each_event_once(node):
    r = node(lambda seen: page([ev(1), ev(2)], "5"))(
        "events", "tail", "--iteration-token", "0", "-o", "jsonl")
    assert r.exit_code == 0, r
    assert [json.loads(x)["id"] for x in r.stdout.splitlines()] == ["1", "2"]


@pytest.mark.parametrize("cmd", [["events", "list"], ["events", "tail"]])
def test_an_id_repeated_inside_one_page_is_printed_once(node, cmd):
    r = node(lambda seen: page([ev(1), ev(1, user_id="other"), ev(2), ev(1)],
                               token_of(seen)))(*cmd, "--iteration-token", "0", "-o", "jsonl")
    assert r.exit_code == 0, r
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [e["id"] for e in lines] == ["1", "2"]
    assert lines[0]["user_id"] == "u"  # the first of the repeated ids is the one kept


# -- memory: a page holds at most the count asked for ----------------------------------


@pytest.mark.parametrize("cmd", [["events", "list", "--count", "10"],
                                 ["events", "tail", "--page-size", "10"]])
def test_a_page_larger_than_the_count_asked_is_refused(node, tmp_path, cmd):
    big = b"[" + b",".join(b'{"id":%d}' % i for i in range(50_000)) + b"]"
    r = node(lambda seen: page(big, "9"))(*cmd, "--iteration-token", "0", "-o", "jsonl")
    assert r.exit_code == 6, r
    assert "more than the 10 events asked for" in r.stderr
    assert r.stdout == ""


# -- values no program can print back --------------------------------------------------

ODD = (b'[{"id":"1","time":"2030-01-01T00:00:00Z","types":["transfer.ended"],"user_id":"u",'
       b'"data":{"bytes_transferred":1' + b"0" * 400 + b',"avg_rate_kbps":9' + b"9" * 400
       + b',"start_time_usec":0,"end_time_usec":1' + b"0" * 5000
       + b',"a":NaN,"b":-Infinity,"c":1e999,"s":"x\\ud800y"}}]')


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "jsonl"])
def test_huge_numbers_nan_and_surrogates_are_shown_as_data(node, fmt):
    r = node(lambda seen: page(ODD, "9"))("events", "list", "--iteration-token", "0",
                                          "-o", fmt)
    assert r.exit_code == 0, r
    assert r.stdout.encode("utf-8")  # writable as UTF-8: no lone surrogate left
    if fmt in ("json", "jsonl"):
        def strict(name: str) -> None:
            raise AssertionError(f"{name} is not JSON")

        doc = json.loads(r.stdout.splitlines()[0] if fmt == "jsonl" else r.stdout,
                         parse_constant=strict)
        data = (doc if fmt == "jsonl" else doc["events"][0])["data"]
        assert data["bytes_transferred"] == 10**400
        assert data["end_time_usec"] == "1" + "0" * 5000  # beyond int(): kept as its digits
        assert (data["a"], data["b"], data["c"]) == ("NaN", "-Infinity", "1e999")
        assert data["s"] == "x\ud800y"
    elif fmt == "csv":  # the json field names; data as JSON text, every digit kept
        data = json.loads(next(csv.DictReader(io.StringIO(r.stdout)))["data"])
        assert data["bytes_transferred"] == 10**400
    else:
        assert "1" + "0" * 400 + " B" in r.stdout


@pytest.mark.parametrize("depth", [980, 990, 5000])
def test_deep_nesting_is_one_line_and_exit_6(node, depth):
    body = b'[{"id":"1","data":' + b"[" * depth + b"]" * depth + b"}]"
    r = node(lambda seen: page(body, "9"))("events", "list", "--iteration-token", "0")
    assert r.exit_code == 6, r
    assert "nests deeper than nodecli reads" in r.stderr and r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr


def test_a_nested_answer_that_can_be_read_is_printed_as_json(node):
    nested: Any = []
    for _ in range(300):
        nested = [nested]
    r = node(lambda seen: page([ev(1, data=nested)], "9"))(
        "events", "list", "--iteration-token", "0", "-o", "json")
    assert r.exit_code == 0, r
    assert json.loads(r.stdout)["events"][0]["data"] == nested


# -- output that could be turned against the reader ------------------------------------


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_format_characters_are_neutralised_in_text_output(node, fmt):
    r = node(lambda seen: page([ev(1, user_id="report\u202etxt.exe",
                                   data={"path": "/a\u200b\u2066b\u2028c"})], "9"))(
        "events", "list", "--iteration-token", "0", "-o", fmt)
    assert r.exit_code == 0, r
    assert "report?txt.exe" in r.stdout
    if fmt == "csv":  # data is JSON text there: the characters escaped, the path exact
        row = next(csv.DictReader(io.StringIO(r.stdout)))
        assert json.loads(row["data"])["path"] == "/a\u200b\u2066b\u2028c"
    else:
        assert "/a??b?c" in r.stdout
    assert not any(ch in r.stdout for ch in "\u202e\u200b\u2066\u2028")


def test_csv_neutralises_formulas_and_never_cuts(node):
    long_path = "/" + "x" * 5000
    r = node(lambda seen: page([ev(1, user_id="=HYPERLINK(\"http://evil\")"),
                                ev(2, user_id="+1", data={"path": long_path, "size": 3}),
                                ev(3, user_id="@SUM(A1)"), ev(4, user_id="-2")], "9"))(
        "events", "list", "--iteration-token", "0", "-o", "csv")
    assert r.exit_code == 0, r
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [row["user_id"] for row in rows] == ["'=HYPERLINK(\"http://evil\")", "'+1",
                                                "'@SUM(A1)", "'-2"]
    assert json.loads(rows[1]["data"]) == {"path": long_path, "size": 3}  # never cut


def test_the_next_token_hint_is_quoted_for_the_shell(node):
    token = "tok'$(touch /tmp/pwned) x"
    r = node(lambda seen: page([ev(1)], token))("events", "list", "--iteration-token", "0")
    assert r.exit_code == 0, r
    hint = r.stderr.split("(continue with ")[1].rsplit(")", 1)[0]
    assert shlex.split(hint) == ["--iteration-token", token]


def test_an_event_with_nan_passes_through_jsonl_as_strict_json(node, tmp_path):
    body = b'[{"id":"1","time":"2030-01-01T00:00:00Z","types":["x"],"data":{"v":NaN}}]'
    out = tmp_path / "o.jsonl"
    r = node(lambda seen: page(body, token_of(seen)))(
        "events", "tail", "--iteration-token", "0", "--to", str(out))
    assert r.exit_code == 0, r
    assert json.loads(Path(out).read_text())["data"]["v"] == "NaN"


# -- transfers ----------------------------------------------------------------------------------

HOSTILE_TRANSFERS = [
    {"id": "t1", "status": "running", "bytes_transferred": 10**30, "bytes_expected": -1,
     "current_rate_kbps": float("1e308"), "target_rate_kbps": "fast",
     "remote_host": "\x1b[2Jevil\u202e", "start_time_usec": 2**70},
    {"id": "t2", "status": {"nested": [1, 2]}, "error_code": [1], "error_desc": None,
     "files_completed": "x", "files_expected": None, "direction": 7},
    {"id": "t3", "status": "quarantined", "end_time_usec": -5, "user_id": "=cmd|' /C calc'!A0"},
]


@pytest.mark.parametrize("argv", [
    ("transfer", "list"), ("transfer", "list", "-o", "wide"), ("transfer", "list", "-o", "csv"),
    ("transfer", "list", "-o", "json"), ("transfer", "top", "--once"),
    ("transfer", "show", "t1"), ("transfer", "watch", "t3", "--interval", "0.05"),
], ids=" ".join)
def test_hostile_transfer_objects_are_shown_as_data(node, argv):
    def script(seen: Seen) -> list[bytes | float]:
        if seen.target.startswith("/ops/transfers/t"):
            tid = seen.target.split("/")[3]
            return [reply(200, json.dumps(next(
                t for t in HOSTILE_TRANSFERS if t["id"] == tid)).encode(), JSON)]
        if "iteration_token=" in seen.target:
            return page([], token_of(seen))
        body = json.dumps(HOSTILE_TRANSFERS).encode().replace(b"1e+308", b"1e308")
        return [reply(200, body, [*JSON, ("Link",
                                          '</ops/transfers?iteration_token=3>; rel="next"')])]

    r = node(script)(*argv)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "\x1b[2J" not in r.stdout + r.stderr
    if "json" not in argv:  # (json carries the text as it came, escapes and all)
        assert "\u202e" not in r.stdout + r.stderr
    if argv[1] == "watch":  # an unknown status is an end, not success: shown as given
        assert r.exit_code == 1 and "quarantined" in r.stderr
    else:
        assert r.exit_code == 0, r.stderr
    if "csv" in argv:
        assert "'=cmd" in r.stdout


@pytest.mark.parametrize("shape", [("--query", 'events[].data."k.e y"'),
                                   ("--field", "events"), ("-o", "yaml"),
                                   ("--query", "events[0].deep", "-o", "raw"),
                                   ("-o", "columns=next_iteration_token")], ids=" ".join)
def test_shaping_hostile_events_from_a_node(node, shape):
    deep: Any = "bottom"
    for _ in range(60):
        deep = {"a": deep}
    events = [ev(1, data={"k.e y": "\x1b]0;title\x07red\u202e", "ü": "東京", "n": 10**30},
                 deep=deep, **{"": "empty key", "a.b": [None, True]})]

    def script(seen: Seen) -> list[bytes | float]:
        return page(events, "1")

    r = node(script)("events", "list", *shape)
    assert r.exit_code == 0, r.stderr
    assert "internal error" not in r.stderr and "\x1b]" not in r.stdout
    if shape[-1] == "yaml":
        import yaml

        assert yaml.safe_load(r.stdout)["events"][0]["data"]["ü"] == "東京"
