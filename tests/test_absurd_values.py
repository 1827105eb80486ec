"""Absurd values are data: every command that reads from a node or the service, against
a node (over HTTPS) whose every field holds a value no program expects: times outside
what Python holds (year 0001, year 10000, ``0000-00-00``, epoch microseconds of year
10000 and beyond), integers and rates beyond a float (10^400), negative values, numbers
of more digits than ``int()`` converts, and the wrong type (text for numbers, lists and
objects for text). Each command shows such a value as data (as sent, or ``?``) and never
ends with an internal error.

The fields are every name the product reads from an answer (found in its sources), so a
field read by new code is in the corpus the day it lands; the commands are every command
of the tree, each one either run here or named in LOCAL with the reason, so a new command
is covered (or must say why not) the day it lands.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from nodecli.errors import ExitCode
from tests.conftest import cli_context
from tests.scripted_server import ScriptedServer, Seen, certificates, reply

ROOT = Path(__file__).resolve().parent.parent / "nodecli"
JSON = [("Content-Type", "application/json")]
DOCUMENTED = {int(c) for c in ExitCode}

#: (id, JSON text): each is put, as it is, in every field of every object served (NaN,
#: 1e999 and deep nesting are in test_hostile_answers.py)
VALUES: list[tuple[str, str]] = [
    ("year-1", '"0001-01-01T00:00:00Z"'),
    ("year-1-offset", '"0001-01-01T00:00:00+05:00"'),
    ("year-9999-end", '"9999-12-31T23:59:59Z"'),
    ("year-10000", '"10000-01-01T00:00:00Z"'),
    ("zero-date", '"0000-00-00"'),
    ("feb-30", '"2030-02-30T25:61:61Z"'),
    ("usec-year-10000", "253402300800000000"),
    ("10^400", "1" + "0" * 400),
    ("-10^400", "-1" + "0" * 400),
    ("5000-digits", "9" * 5000),
    ("max-float", "1.7976931348623157e308"),
    ("negative", "-1"),
    ("text", '"fast"'),
    ("list", '[1, "0001-01-01T00:00:00Z"]'),
    ("object", '{"a": 1}'),
    ("true", "true"),
    ("null", "null"),
]


def _fields() -> list[str]:
    """Every field name the product reads from a parsed answer: the string keys of
    ``x.get("name")`` and ``x["name"]`` in the modules that read answers."""
    names: set[str] = set()
    for part in ("node", "service", "render", "cli", "tokens", "remote_json.py",
                 "timeparse.py"):
        for path in ([ROOT / part] if part.endswith(".py") else
                     sorted((ROOT / part).rglob("*.py"))):
            for node in ast.walk(ast.parse(path.read_text())):
                key = None
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr == "get" and node.args:
                    key = node.args[0]
                elif isinstance(node, ast.Subscript):
                    key = node.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and \
                        re.fullmatch(r"[a-z][a-z0-9_]*", key.value):
                    names.add(key.value)
    return sorted(names)


FIELDS = _fields()
# kept readable in some objects so that the code behind them runs (a transfer that runs,
# an event of each family): every object also comes with these absurd too
TYPES = [["transfer.ended"], ["transfer.started"], ["file.created"], ["permission.created"],
         ["file.filelock.locked"]]
STATUSES = ["running", "completed", "failed", "stopped", "success", "aborted"]


def absurd(value: str, n: int, *, keep: bool) -> str:
    """One object (JSON text) with ``value`` in every field, nested ``data``/``storage``
    alike, but its id; ``keep`` also keeps readable what steers the code (types, status,
    version), which every list also serves absurd in its last object."""
    fields = {f: value for f in FIELDS}
    fields["id"] = json.dumps(str(n))  # (an event without a usable id is refused: exit 6)
    if keep:
        fields["types"] = json.dumps(TYPES[n % len(TYPES)])
        fields["status"] = json.dumps(STATUSES[n % len(STATUSES)])
        fields["type"] = json.dumps("workspace.create")
        fields["version"] = json.dumps("4.4.5")
    inner = "{" + ",".join(f'"{k}":{v}' for k, v in fields.items() if k not in (
        "data", "storage")) + "}"
    fields["data"] = fields["storage"] = inner
    fields["capabilities"] = f'[{{"name":{value},"value":{value}}}]'
    return "{" + ",".join(f'"{k}":{v}' for k, v in fields.items()) + "}"


def corpus(value: str, count: int = 7) -> str:
    """A list: objects readable enough to steer the code, then one absurd throughout
    (the first ``count`` of them: a node sends no more than asked)."""
    items = [absurd(value, n, keep=True) for n in range(1, 7)] + [absurd(value, 7, keep=False)]
    return "[" + ",".join(items[:count]) + "]"


COLLECTIONS = ("events", "transfers", "access_keys", "permissions", "operations", "files")


class Node:
    """What the absurd node serves: ``value`` in every field; a watched transfer or
    operation runs once, then has ended."""

    def __init__(self) -> None:
        self.value = "null"
        self.counts: dict[str, int] = {}

    def answer(self, seen: Seen) -> list[bytes | float]:
        path = seen.target.split("?")[0].rstrip("/")
        last = path.rsplit("/", 1)[-1]
        if seen.method == "DELETE" or (seen.method == "PUT" and "/access_keys/" in path):
            return [reply(204, b"", close=False)]
        if seen.method == "POST" and path.endswith("/workspaces"):
            return [reply(202, b"", [("Location", "/workspaces/1/operations/1")], close=False)]
        if seen.method == "GET" and last in COLLECTIONS:
            # the logs (events, transfers) end on a next link that leads to no more
            if "iteration_token=" in seen.target:
                return [reply(200, b"[]", [*JSON, ("Link", f'<{path}?iteration_token=9>; '
                                                      'rel="next"')], close=False)]
            link = [("Link", f'<{path}?iteration_token=9>; rel="next"')] \
                if last in ("events", "transfers") else []
            count = re.search(r"[?&]count=([0-9]+)", seen.target)
            return [reply(200, corpus(self.value, int(count[1]) if count else 7).encode(),
                          [*JSON, *link], close=False)]
        self.counts[path] = self.counts.get(path, 0) + 1
        first = self.counts[path] == 1
        n = 1 if first else 5 if "/operations/" in path else 2  # running, then ended
        return [reply(200, absurd(self.value, n, keep=True).encode(), JSON, close=False)]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    return certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def server(certs) -> Iterator[tuple[Node, ScriptedServer]]:
    node = Node()
    with ScriptedServer(node.answer, tls=(certs[1], certs[2])) as srv:
        yield node, srv


@pytest.fixture(scope="module")
def public_key(tmp_path_factory: pytest.TempPathFactory) -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path_factory.mktemp("key") / "public.pem"
    path.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return str(path)


@pytest.fixture
def absurd_node(server, certs, invoke, home) -> Callable[[str], Callable[..., Any]]:
    """``absurd_node(value)`` serves ``value`` in every field over HTTPS, as node and as
    service, and returns a function running nodecli against it."""
    node, srv = server

    def start(value: str) -> Callable[..., Any]:
        node.value, node.counts = value, {}
        env = {"NODECLI_URL": srv.url(), "NODECLI_USER": "admin",
               "NODECLI_PASSWORD": "a-long-password", "NODECLI_CACERT": certs[0],
               "NODECLI_SERVICE_URL": srv.url(), "NODECLI_TOKEN": "opaque-token",
               "NODECLI_SERVICE_CACERT": certs[0]}
        return lambda *args, input=None: invoke(*args, env=env, input=input)

    return start


# -- the commands ---------------------------------------------------------------------

#: every command that reads from a node or the service, with arguments that reach the
#: server (several runs for a command whose formats read differently)
NETWORK: dict[tuple[str, ...], list[list[str]]] = {
    ("access-key", "create"): [["--path", "/x", "--id", "ak"], ["--path", "/x", "-o", "json"]],
    ("access-key", "delete"): [["ak", "--yes"]],
    ("access-key", "list"): [[], ["-o", "json"], ["-o", "csv"]],
    ("access-key", "set"): [["ak", "--path", "/y"]],
    ("access-key", "set-verification-key"): [["ak", "--public-key", "@PEM"]],
    ("access-key", "show"): [["ak"], ["ak", "-o", "json"]],
    ("access-key", "tree"): [[], ["-o", "json"], ["-o", "csv"]],
    ("access", "can-i"): [["read", "/x", "--user-id", "u"],
                          ["read", "/x", "--user-id", "u", "-o", "json"]],
    ("access", "what-can"): [["--user-id", "u"], ["--user-id", "u", "-o", "csv"]],
    ("access", "who-can"): [["/x"], ["/x", "-o", "json"]],
    ("api",): [["/info"], ["/events", "--paginate"]],
    ("events", "get"): [["1"], ["1", "-o", "json"]],
    ("events", "list"): [[], ["-o", "json"], ["-o", "csv"], ["-o", "wide"]],
    ("events", "tail"): [[], ["-o", "jsonl"], ["--since", "1h", "-o", "plain"]],
    ("events", "stats"): [[], ["-o", "json"], ["--by", "hour", "-o", "csv"]],
    ("files", "du"): [["/"], ["/", "--top", "3", "-o", "json"], ["/", "-o", "ncdu"]],
    ("files", "find"): [["/", "--name", "*"], ["/", "--type", "f", "-o", "jsonl"]],
    ("files", "ls"): [["/"], ["/", "-o", "json"], ["/", "-o", "csv"]],
    ("files", "tree"): [["/"], ["/", "-o", "json"]],
    ("node", "health"): [[], ["-o", "json"], ["-o", "prometheus"], ["-o", "nagios"]],
    ("node", "info"): [[], ["-o", "json"]],
    ("operations", "list"): [[], ["--workspace", "1", "-o", "wide"], ["-o", "csv"]],
    ("operations", "resolve"): [["--workspace", "1", "--retry", "--yes",
                                 "--interval", "0.01"]],
    ("operations", "show"): [["1", "--workspace", "1"], ["1", "--workspace", "1", "-o", "json"]],
    ("operations", "update"): [["1", "--workspace", "1", "--set", "retry=true"]],
    ("operations", "watch"): [["1", "--workspace", "1", "--interval", "0.01"]],
    ("permission", "grant"): [["--file-id", "1", "--user", "u", "--levels", "read"]],
    ("permission", "list"): [["--file-id", "1"], ["--file-id", "1", "-o", "csv"]],
    ("permission", "modify"): [["1", "--levels", "read"]],
    ("permission", "revoke"): [["1", "--yes"]],
    ("permission", "show"): [["1"], ["1", "-o", "json"]],
    ("transfer", "cancel"): [["1", "--yes"]],
    ("transfer", "list"): [[], ["-o", "wide"], ["-o", "csv"], ["--since", "1h"]],
    ("transfer", "modify"): [["1", "--target-rate", "5m"]],
    ("transfer", "show"): [["1"], ["1", "-o", "json"]],
    ("transfer", "start"): [["--spec", "@SPEC", "--wait", "--interval", "0.05"]],
    ("transfer", "top"): [["--once"]],
    ("transfer", "watch"): [["1", "--interval", "0.05"]],
    ("workspaces", "create"): [["--name", "w", "--wait", "--interval", "0.01"]],
}
#: commands that read nothing from a node or the service here, and why
LOCAL = {
    ("completion",): "local", ("help",): "local", ("emulator", "serve"): "is the server",
    ("emulator", "collector"): "is a server (of event batches)",
    ("apply",): "reads a node only to compare it with a document: tests/test_declare.py",
    ("diff",): "reads a node only to compare it with a document: tests/test_declare.py",
    ("export",): "writes what a node holds as a document: tests/test_declare.py",
    ("events", "ship"): "the tail's engine (events tail is run here) into a sink: "
                        "tests/test_events_ship.py",
    ("exporter",): "long-running; its health gauges are node health's (run here); its "
                   "rate gauge: test_exporter_snapshot.py (a rate no float holds)",
    ("config", "check"): "local", ("config", "export"): "local",
    ("config", "import"): "local", ("config", "output"): "local",
    ("config", "path"): "local", ("config", "restore"): "local",
    ("key", "fingerprint"): "local", ("key", "generate"): "local",
    ("key", "public"): "local",
    ("node", "add"): "saves a profile", ("node", "default"): "local",
    ("node", "set"): "saves a profile (its login check reads only a status)",
    ("node", "list"): "local", ("node", "remove"): "local", ("node", "show"): "local",
    ("node", "thresholds"): "local",
    ("service", "add"): "saves a profile", ("service", "default"): "local",
    ("service", "list"): "local", ("service", "remove"): "local",
    ("service", "show"): "local",
    ("token", "create"): "local", ("token", "inspect"): "absurd claims: tested below",
    ("token", "verify"): "absurd claims: tested below",
    ("user", "acl"): "local", ("user", "add"): "local", ("user", "delete"): "local",
    ("user", "list"): "local", ("user", "passwd"): "local", ("user", "show"): "local",
    ("xuser", "add"): "local", ("xuser", "delete"): "local", ("xuser", "list"): "local",
    ("xuser", "set"): "local", ("xuser", "show"): "local",
}
#: commands that must end with exit 0 whatever the values (their answer is all data);
#: the others act on what they read (a watch ends on an unknown status, a resolve finds
#: nothing stopped...): any documented exit, always with a one-line reason
READS = {("access-key", "list"), ("access-key", "show"), ("access-key", "tree"), ("events", "get"),
         ("events", "list"), ("events", "tail"), ("events", "stats"), ("node", "info"),
         ("operations", "list"), ("operations", "show"), ("permission", "list"),
         ("permission", "show"), ("transfer", "list"), ("transfer", "show"),
         ("transfer", "top"), ("api",)}


def _leaves() -> list[tuple[str, ...]]:
    from nodecli.cli.root import cli

    ctx = cli_context(cli, "nodecli")
    out: list[tuple[str, ...]] = []

    def walk(group: click.Group, path: tuple[str, ...]) -> None:
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            if isinstance(cmd, click.Group):
                walk(cmd, (*path, name))
            elif cmd is not None:
                out.append((*path, name))

    walk(cli, ())
    return out


def test_every_command_is_run_against_absurd_values_or_says_why_not():
    leaves = set(_leaves())
    assert leaves - set(NETWORK) - set(LOCAL) == set(), \
        "a new command: add it to NETWORK (or to LOCAL, with the reason)"
    assert (set(NETWORK) | set(LOCAL)) - leaves == set()


def test_the_corpus_holds_the_fields_the_product_reads():
    for name in ("current_time", "time", "start_time_usec", "end_time_usec",
                 "current_rate_kbps", "target_rate_kbps", "bytes_expected", "created_at",
                 "updated_at", "expires_at", "access_levels", "version"):
        assert name in FIELDS


#: the first run of each command meets every value; its other runs (other formats) the
#: values that broke something once
CORE = {"year-1", "year-9999-end", "usec-year-10000", "10^400", "max-float", "list"}
RUNS = [pytest.param(cmd, args, value, id=" ".join([*cmd, *args, value_id]))
        for cmd, runs in NETWORK.items() for i, args in enumerate(runs)
        for value_id, value in VALUES if i == 0 or value_id in CORE]


@pytest.mark.parametrize(("cmd", "args", "value"), RUNS)
def test_absurd_values_are_shown_as_data(absurd_node, public_key, tmp_path, cmd, args, value):
    spec = tmp_path / "spec.json"
    spec.write_text('{"paths": [{"source": "/a"}], "remote_host": "h", "direction": "send"}')
    argv = [*cmd, *[str(spec) if a == "@SPEC" else public_key if a == "@PEM" else a for a in args]]
    r = absurd_node(value)(*argv)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.exit_code in DOCUMENTED, r
    r.stdout.encode("utf-8")
    if cmd in READS:
        assert r.exit_code == 0, r.stderr
    elif cmd == ("node", "health"):  # its exit is the worst state (a clock in year 1...)
        assert r.exit_code in (0, 1, 2, 3), r
    else:
        assert r.exit_code == 0 or (r.stderr.strip() and len(
            [ln for ln in r.stderr.splitlines() if ln.startswith("error")]) <= 1), r


# -- how each kind of value is shown --------------------------------------------------


@pytest.fixture
def scripted(certs, invoke, home) -> Iterator[Callable[..., Any]]:
    """``scripted(routes)`` serves ``routes`` (path prefix -> JSON value; the longest
    prefix answers) over HTTPS and returns (run nodecli, the server)."""
    servers: list[ScriptedServer] = []

    def start(routes: dict[str, Any]) -> tuple[Callable[..., Any], ScriptedServer]:
        def answer(seen: Seen) -> list[bytes | float]:
            path = seen.target.split("?")[0]
            key = max((k for k in routes if path.startswith(k)), key=len)
            link = [("Link", f'<{path}?iteration_token=9>; rel="next"')] \
                if path in ("/events", "/ops/transfers") else []
            body = routes[key] if "iteration_token=" not in seen.target else []
            return [reply(200, json.dumps(body).encode(), [*JSON, *link])]

        server = ScriptedServer(answer, tls=(certs[1], certs[2]))
        servers.append(server)
        env = {"NODECLI_URL": server.url(), "NODECLI_USER": "admin",
               "NODECLI_PASSWORD": "a-long-password", "NODECLI_CACERT": certs[0]}
        return (lambda *args: invoke(*args, env=env)), server

    yield start
    for server in servers:
        server.close()


@pytest.mark.parametrize(("node_clock", "start"), [
    ("0001-01-01T00:05:00Z", "0001-01-01T00:00:00Z"),  # ten minutes before: no datetime
    ("0001-01-01T00:10:00Z", "0001-01-01T00:00:00Z"),  # exactly the first instant
    ("0001-01-01T00:10:01Z", "0001-01-01T00:00:01Z"),
    ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:49:59Z"),  # now is past the last instant
], ids=["year-1-minus-10m", "year-1-exactly", "year-1-plus-1s", "year-9999-end"])
def test_a_node_clock_at_the_edge_of_time_starts_the_tail_where_time_stops(
        scripted, node_clock, start):
    run, server = scripted({"/info": {"version": "4.4.5", "current_time": node_clock},
                            "/events": [{"id": "1", "time": node_clock}]})
    r = run("events", "tail", "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["time"] == node_clock
    asked = [s.target for s in server.seen if s.target.startswith("/events?after_time=")]
    assert asked == [f"/events?after_time={start.replace(':', '%3A')}&count=1000"]


@pytest.mark.parametrize("node_clock", ["10000-01-01T00:00:00Z", "0000-00-00", 10**400,
                                        ["2030-01-01T00:00:00Z"]])
def test_a_node_clock_no_datetime_holds_leaves_the_start_to_the_local_clock(scripted,
                                                                            node_clock):
    from datetime import UTC, datetime, timedelta

    run, server = scripted({"/info": {"version": "4.4.5", "current_time": node_clock},
                            "/events": []})
    before = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
    r = run("events", "tail")
    after = datetime.now(UTC) - timedelta(minutes=10)
    assert r.exit_code == 0, r.stderr
    asked = [s.target for s in server.seen if s.target.startswith("/events?after_time=")]
    when = datetime.fromisoformat(asked[0].split("=")[1].split("&")[0].replace("%3A", ":"))
    assert before <= when <= after


@pytest.mark.parametrize(("value_id", "value"), VALUES, ids=[v for v, _ in VALUES])
def test_an_absurd_node_version_is_data(scripted, value_id, value):
    """A version that does not start with a digit is no version known (the features are
    tried); one that does is read by its leading digits (``0001-01-01``: version 1, which
    has no events endpoints: refused with the reason, exit 1)."""
    from nodecli.remote_json import loads

    run, _ = scripted({"/info": {"version": loads(value), "current_time": None},
                       "/events": [{"id": "1", "time": "2030-01-01T00:00:00Z"}]})
    text = loads(value)
    digits = re.match(r"[0-9]{1,9}", text) if isinstance(text, str) else None
    refused = digits is not None and int(digits[0]) < 3
    for argv in (("events", "list"), ("node", "info"),
                 *([("node", "health")] if value_id == "5000-digits" else [])):
        r = run(*argv)
        assert "internal error" not in r.stderr, (argv, r.stderr)
        if argv[0] == "node":
            assert r.exit_code in ((0,) if argv[1] == "info" else (0, 1, 2, 3)), (argv, r)
        elif refused:
            assert r.exit_code == 1, r
            assert r.stderr.splitlines()[0].endswith("the events endpoints exist from node "
                                                     "3.6.0"), r.stderr
        else:  # numbers are no version text (not read), text without digits no version
            assert r.exit_code == 0, r.stderr


RUNNING = {"id": "t1", "status": "running", "bytes_transferred": 5, "files_completed": 1,
           "files_expected": 2}


@pytest.mark.parametrize(("fields", "rate", "started"), [
    ({"current_rate_kbps": 10**400, "target_rate_kbps": 10**18 - 1,
      "start_time_usec": 253402300799999999},
     "1" + "0" * 400 + " kbps/1000000000000.0 Gbps", "9999-12-31T23:59:59Z"),
    ({"current_rate_kbps": 10**18, "target_rate_kbps": -(10**400),
      "start_time_usec": 253402300800000000},
     "1000000000000000000 kbps/-1" + "0" * 400 + " kbps", "-"),
    ({"current_rate_kbps": 1.7976931348623157e308, "target_rate_kbps": "fast",
      "start_time_usec": 1}, "1.7976931348623157e+308 kbps/-", "1970-01-01T00:00:00Z"),
    ({"current_rate_kbps": [1], "target_rate_kbps": True, "start_time_usec": 0}, "-/-", "-"),
], ids=["10^400", "10^18", "max-float", "wrong-types"])
def test_transfer_show_gives_rates_and_times_beyond_a_float_as_sent(scripted, fields, rate,
                                                                    started):
    run, _ = scripted({"/info": {"version": "4.4.5"}, "/ops/transfers/": {**RUNNING, **fields}})
    r = run("transfer", "show", "t1")
    assert r.exit_code == 0, r.stderr
    shown = dict(line.split(None, 1) if " " in line.strip() else (line, "")
                 for line in r.stdout.replace("rate (now/target)", "rate").splitlines())
    assert shown["rate"].strip() == rate
    assert shown["started"].strip() == started


@pytest.mark.parametrize(("fields", "eta"), [
    ({"bytes_expected": 10**400, "current_rate_kbps": 10**400}, ", ETA 0s"),
    ({"bytes_expected": 10**400, "current_rate_kbps": 1.7976931348623157e308}, ""),
    ({"bytes_expected": 10**400, "current_rate_kbps": 1}, ""),  # no float holds the wait
    ({"bytes_expected": 1005, "current_rate_kbps": 8}, ", ETA 1s"),  # 1000 B at 1000 B/s
    ({"bytes_expected": 10**400, "current_rate_kbps": "fast"}, ""),
    ({"bytes_expected": 10, "current_rate_kbps": -1}, ""),
])
def test_the_watch_line_says_no_eta_it_cannot_compute(fields, eta):
    from nodecli.cli.transfers import progress_line

    line = progress_line({**RUNNING, **fields}, 3.0)
    # (the ETA comes right after the sizes, before what a narrow terminal may cut)
    assert (f" B{eta}, " in line or f"kB{eta}, " in line) if eta else "ETA" not in line, line


@pytest.mark.parametrize(("value", "size", "rate", "short"), [
    (10**18 - 1, "1000000.0 TB", "1000000000000.0 Gbps", "1000000000000000.0M"),
    (10**18, "1000000000000000000 B", "1000000000000000000 kbps", "1000000000000000000k"),
    (-(10**18), "-1000000000000000000 B", "-1000000000000000000 kbps",
     "-1000000000000000000k"),
    (10**400, "1" + "0" * 400 + " B", "1" + "0" * 400 + " kbps", "1" + "0" * 400 + "k"),
    (1.7976931348623157e308, "1.7976931348623157e+308 B", "1.7976931348623157e+308 kbps",
     "1.7976931348623157e+308k"),
    (999, "999 B", "999 kbps", "999k"),
    (1000, "1.0 kB", "1.0 Mbps", "1.0M"),
    (1_500_000, "1.5 MB", "1.5 Gbps", "1500.0M"), (2_000_000_000, "2.0 GB", "2000.0 Gbps",
                                                    "2000000.0M"),
    (999_999, "1000.0 kB", "1000.0 Mbps", "1000.0M"), (100.0, "100 B", "100 kbps", "100k"),
    (-1, "-1 B", "-1 kbps", "-1k"),
    ("9" * 5000, "?", "?", None), ("fast", "?", "?", None), (True, "?", "?", None),
    (None, "?", "?", None), ([1], "?", "?", None), (float("nan"), "?", "?", None),
], ids=["10^18-1", "10^18", "-10^18", "10^400", "max-float", "999", "1000", "1.5e6", "2e9",
        "999999", "100.0", "-1",
        "5000-digits", "text", "true", "null", "list", "nan"])
def test_one_formatter_per_kind_of_number(value, size, rate, short):
    from nodecli.render.numbers import human_bytes, human_rate, short_rate

    assert (human_bytes(value), human_rate(value), short_rate(value)) == (size, rate, short)


def test_giga_rates_start_at_a_million_kbps_and_a_rate_of_1_has_an_eta():
    from nodecli.render.numbers import human_rate, seconds_left, short_rate

    assert short_rate(1_000_000, giga=True) == "1.0G"
    assert short_rate(999_999, giga=True) == "1000.0M"
    assert short_rate(10**17, giga=True) == "100000000000.0G"
    assert human_rate(1_000_000) == "1.0 Gbps" and human_rate(999_999) == "1000.0 Mbps"
    assert human_rate(-1_234_567) == "-1234567 kbps"  # (no 'g' form for an integer)
    assert seconds_left(1250, 1) == 10.0  # 1 kbps is 125 bytes a second
    assert seconds_left(1250, 0) is None and seconds_left(1250, -1) is None


def test_a_quotient_no_float_holds_is_none():
    from nodecli.render.numbers import quotient, seconds_left

    assert quotient(10**400, 1000) is None  # OverflowError in Python
    assert quotient(1.7976931348623157e308, 0.5) is None  # inf
    assert quotient(1, 0) is None and quotient("1", 1) is None and quotient(True, 1) is None
    assert quotient(10**400, 10**399) == 10.0  # big, but the result fits
    assert seconds_left(1000, 8) == 1.0 and seconds_left(1000, 0) is None
    assert seconds_left(10**400, 1.7976931348623157e308) is None


def test_times_a_server_sent_are_none_outside_what_a_datetime_holds():
    from datetime import UTC, datetime, timedelta

    from nodecli.timeparse import EARLIEST, LATEST, describe_delta, from_usec, server_time, shift

    assert from_usec(253402300799999999) == LATEST
    assert from_usec(253402300800000000) is None  # year 10000
    assert from_usec(1) == datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert [from_usec(v) for v in (0, -1, 10**400, True, 1.5, "1")] == [None] * 6
    assert server_time("0001-01-01T00:00:00Z") == EARLIEST
    assert [server_time(v) for v in ("0001-01-01T00:00:00+05:00", "10000-01-01T00:00:00Z",
                                     "0000-00-00", "2030-02-30", 10**400, None)] == [None] * 6
    assert shift(EARLIEST + timedelta(minutes=10), -timedelta(minutes=10)) == EARLIEST
    assert shift(EARLIEST + timedelta(minutes=5), -timedelta(minutes=10)) == EARLIEST
    assert shift(LATEST, timedelta(microseconds=1)) == LATEST
    assert shift(LATEST, -timedelta(microseconds=1)) == LATEST - timedelta(microseconds=1)
    assert describe_delta(float("inf")) == "?" and describe_delta(float("nan")) == "?"


def test_the_top_screen_shows_absurd_transfers():
    from nodecli.render.top import top_lines

    now = 1_900_000_000.0
    ts = [{"id": "a", "status": "running", "bytes_transferred": 1, "bytes_expected": 10**400,
           "current_rate_kbps": 10**400, "target_rate_kbps": 1.7976931348623157e308},
          {"id": "b", "status": "running", "bytes_transferred": 10**400, "bytes_expected": 3,
           "current_rate_kbps": 1.7976931348623157e308, "target_rate_kbps": "x"},
          {"id": "c", "status": "failed", "end_time_usec": 253402300799999999},
          {"id": "d", "status": "failed", "end_time_usec": 253402300800000000}]
    lines = top_lines(ts, width=200, height=40, now=now)
    rows = {line.split()[0]: line.split() for line in lines[3:] if line[:2] in ("a ", "b ",
                                                                              "c ", "d ")}
    assert rows["a"][-2:] == ["0%", "0m00s"]  # 10^400 left at 10^400 kbps: no time
    assert rows["b"][-2:] == ["100%", "-"]
    assert rows["c"][-1] == "23:59:59" and rows["d"][-1] == "-"  # ENDED: year 10000 is -


@pytest.mark.parametrize(("claim", "shown"), [
    ('"0001-01-01T00:00:00Z"', "0001-01-01T00:00:00Z (expired "),
    ('"10000-01-01T00:00:00Z"', "10000-01-01T00:00:00Z (unreadable)"),
    ("9" * 5000, "9" * 50), ("1e400", "1e400 (unreadable)"),
    ("-1" + "0" * 400, "-1" + "0" * 50), ("253402300800", "253402300800 (unreadable)"),
], ids=["year-1", "year-10000", "5000-digits", "1e400", "-10^400", "usec-year-10000"])
def test_token_inspect_shows_an_absurd_expiry_as_data(invoke, claim, shown):
    from nodecli.tokens.wire import encode_token

    payload = ('{"user_id":"u","scope":"node.ak:user:all","expires_at":' + claim
               + ',"auth_type":"access_key"}').encode()
    r = invoke("token", "inspect", encode_token(payload, b"x" * 16))
    assert r.exit_code == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("expires_at"))
    assert shown in line
    assert r.stderr.count("\n") <= 1


@pytest.mark.parametrize("claim", ['"0001-01-01T00:00:00Z"', '"10000-01-01T00:00:00Z"',
                                   "9" * 5000, "1e400", "-1" + "0" * 400, "253402300800"],
                         ids=["year-1", "year-10000", "5000-digits", "1e400", "-10^400",
                              "usec-year-10000"])
def test_a_service_token_with_an_absurd_expiry_is_refused_before_sending(absurd_node,
                                                                        tmp_path, claim):
    """The expiry is needed to go on (a token past it is refused before anything is
    sent): one line and the hint, exit 4."""
    from nodecli.tokens.wire import encode_token

    payload = ('{"user_id":"u","scope":"node.ak:user:all","expires_at":' + claim
               + ',"auth_type":"access_key"}').encode()
    token = tmp_path / "token"
    token.write_text(encode_token(payload, b"x" * 16))
    token.chmod(0o600)
    r = absurd_node("null")("operations", "list", "--token-file", str(token))
    assert r.exit_code == 4, r
    assert r.stderr.count("nodecli: error:") == 1 and "internal error" not in r.stderr
    assert "expire" in r.stderr.splitlines()[0]
