"""A CLI-wide fuzz suite: every command, hostile arguments, hostile files, a hostile server.

Whatever the input, nodecli must answer with an exit code from the documented set,
never a traceback or an "internal error", and a refused command must leave config.toml
byte for byte as it was. The example counts keep CI quick; for a longer local run:

    NODECLI_FUZZ_EXAMPLES=2000 python -m pytest -q tests/test_fuzz_cli.py
"""

from __future__ import annotations

import http.server
import json
import os
import socketserver
import threading
from collections.abc import Iterator

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.errors import ExitCode
from tests.conftest import cli_context

EXAMPLES = int(os.environ.get("NODECLI_FUZZ_EXAMPLES", "25"))
DOCUMENTED = {int(c) for c in ExitCode}
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
# commands that would run forever or start servers: exercised elsewhere; key generation
# (seconds per valid path) only in a long local run
LONG_RUNNING = {("emulator", "serve"), ("emulator", "collector")}
if "NODECLI_FUZZ_EXAMPLES" not in os.environ:
    LONG_RUNNING |= {("key", "generate")}
NEVER = ("--help", "--password-stdin", "--secret-stdin", "--token-stdin", "--follow")


def _leaves() -> list[tuple[tuple[str, ...], click.Command]]:
    from nodecli.cli.root import cli

    ctx = cli_context(cli, "nodecli")
    out: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(group: click.Group, path: tuple[str, ...]) -> None:
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            if isinstance(cmd, click.Group):
                walk(cmd, (*path, name))
            elif cmd is not None and (*path, name) not in LONG_RUNNING:
                out.append(((*path, name), cmd))

    walk(cli, ())
    return out


LEAVES = _leaves()

hostile_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "-", "--", "-x", "..", "/", "//", "\x00", "\x1b[31m", "\udcc9",
                     "a" * 5000, "~", "~nobody/x", "$(id)", "'", '"', "{}", "[]", "null",
                     "9" * 40, "-1", "0", "nan", "1e999", "http://[::1", "://", "\n", "é",
                     "file:////*", "/dev/null", "/proc/self/mem", "a=b", "=", "a.b=c"]),
)


def _options(cmd: click.Command) -> list[str]:
    return [opt for p in cmd.params if isinstance(p, click.Option) for opt in p.opts
            if opt.startswith("--") and opt not in NEVER]


@pytest.fixture(autouse=True)
def no_waits(monkeypatch, tmp_path):
    """No sleeping between retries (the retry policy itself is tested elsewhere), and a
    scratch working folder: fuzzed paths must not land in the checkout."""
    import nodecli.http.client
    import nodecli.http.errors

    for module in (nodecli.http.client, nodecli.http.errors):  # the client's and the tail's
        monkeypatch.setattr(module, "backoff_delay", lambda *a, **k: 0.0)
        monkeypatch.setattr(module, "parse_retry_after", lambda *a, **k: 0.0)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def offline_ca(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.scripted_server import certificates

    return certificates(tmp_path_factory.mktemp("offline-ca"))[0]


@pytest.fixture
def offline_env(tmp_path, offline_ca) -> dict[str, str]:
    """Network commands aim at a closed port: they must fail cleanly, fast. (Plain HTTP:
    no TLS is ever made; a CA of one certificate spares each client the loading of the
    system's hundreds, most of the cost of a command that fails to connect.)"""
    return {"NODECLI_URL": "http://127.0.0.1:9", "NODECLI_USER": "admin",
            "NODECLI_PASSWORD": "pw", "NODECLI_SERVICE_URL": "http://127.0.0.1:9",
            "NODECLI_TOKEN": "opaque-token", "NODECLI_CACERT": offline_ca,
            "NODECLI_SERVICE_CACERT": offline_ca}


@pytest.fixture
def seeded_home(home, invoke):
    assert invoke("xuser", "add", "x", "-r", "file:////data/*").exit_code == 0
    assert invoke("-au", "usr1", "-x", "x", "-p", "pw1").exit_code == 0
    return home


def _check(result, config_before: bytes | None, config_path) -> None:
    assert result.exit_code in DOCUMENTED, result
    assert "Traceback" not in result.stderr, result
    assert "internal error" not in result.stderr, result
    if result.exit_code != 0 and config_before is not None:
        assert config_path.read_bytes() == config_before, result


@pytest.mark.parametrize(("path", "cmd"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_every_command_survives_hostile_arguments(path, cmd, invoke, seeded_home, offline_env):
    options = _options(cmd)
    config = seeded_home / "config.toml"

    @FUZZ
    @given(st.lists(st.one_of(hostile_text, st.sampled_from(options or ["--x"])),
                    max_size=6))
    def run(args: list[str]) -> None:
        before = config.read_bytes()
        result = invoke(*path, *args, env=offline_env)
        _check(result, before, config)

    run()


SWEEP = ["\udcc9", "\x00", "\x1b[31m", "a" * 5000, "-1", "9" * 40, "", "..", "/", "x=y"]


def _value_options(cmd: click.Command) -> list[str]:
    return [max(p.opts, key=len) for p in cmd.params
            if isinstance(p, click.Option) and not p.is_flag and not p.count
            and max(p.opts, key=len) not in NEVER]


def _arguments(cmd: click.Command) -> int:
    return sum(1 for p in cmd.params if isinstance(p, click.Argument))


@pytest.mark.parametrize(("path", "cmd"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_every_option_and_argument_with_each_hostile_value(path, cmd, invoke, seeded_home,
                                                          offline_env):
    """A systematic sweep next to the random one: each value option, and each positional
    argument, gets each hostile value in turn (the random search rarely pairs a given
    option with a given value)."""
    config = seeded_home / "config.toml"
    filler = ["1"] * _arguments(cmd)
    for value in SWEEP:
        runs = [[opt, value, *filler] for opt in _value_options(cmd)]
        runs += [[*filler[:i], value, *filler[i + 1:]] for i in range(len(filler))]
        for args in runs:
            before = config.read_bytes()
            _check(invoke(*path, *args, env=offline_env), before, config)


@FUZZ
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode),
                 st.sampled_from([b"version = 99", b"[users.x]\ntransfer_user = 'nope'",
                                  b"\xff\xfe", b"version = 1\n" + b"[a]" * 5000,
                                  b"version = 1\n[users]\nx = 1"])))
def test_hostile_config_files_are_refused_untouched(invoke, home, raw):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_bytes(raw)
    for args in (["-l"], ["user", "list"], ["xuser", "add", "y", "-r", "s3://*"],
                 ["config", "check"]):
        result = invoke(*args)
        _check(result, raw, home / "config.toml")
        assert result.exit_code in (0, 3), result
    assert (home / "config.toml").read_bytes() == raw or \
        invoke("config", "check").exit_code == 0


# -- a hostile server ---------------------------------------------------------------------


class HostileServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    script: tuple[int, dict[str, str], bytes] = (200, {}, b"[]")


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        status, headers, body = self.server.script  # type: ignore[attr-defined]
        try:
            self.send_response(status)
        except ValueError:
            self.send_response(500)
        for k, v in headers.items():
            try:
                self.send_header(k, v)
            except ValueError:
                pass
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_DELETE = _answer


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileServer]:
    """The hostile server speaks HTTPS, as nodes do (its CA in ``server.ca``)."""
    import ssl

    from tests.scripted_server import certificates

    ca, cert, key = certificates(tmp_path_factory.mktemp("hostile-tls"))
    server = HostileServer(("127.0.0.1", 0), _Handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.ca = ca  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


header_values = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=80),
    st.sampled_from(['<http://127.0.0.1:1:99999/events>; rel="next"', '<>; rel="next"',
                     '<http://[::1/e?iteration_token=1>; rel=next', "garbage", "",
                     '<http://other.example/events?iteration_token=5>; rel="NEXT"',
                     '<?iteration_token=7>; rel="next"',
                     # the same Link on every page: a token that never advances
                     '</events?iteration_token=1>; rel="next"']))
bodies = st.one_of(
    st.binary(max_size=200),
    st.sampled_from([b"[]", b"{}", b"null", b'[{"id": 1}]', b'[{"no": "id"}]', b"[1,2]",
                     b'{"error": {"user_message": "\\u001b[31mred"}}', b"<html>x</html>",
                     b'[{"id": "1", "types": ["file.created"], "data": {"path": 7}}]',
                     b'{"status": "stopped", "type": "workspace.create"}',
                     json.dumps([{"id": str(i), "type": "x"} for i in range(3)]).encode(),
                     # numbers and constants no program prints back, deep nesting, a lone
                     # surrogate, format characters, csv formulas, ids repeated in a page
                     b'[{"id":"1","data":{"size":1' + b"0" * 5000 + b'}}]',
                     b'[{"id":"1","types":["file.created"],"data":{"size":1' + b"0" * 400
                     + b',"path":"/x"}}]',
                     b'[{"id":"1","data":{"a":NaN,"b":-Infinity,"c":1e999}}]',
                     b'{"id":"1","data":' + b"[" * 3000 + b"]" * 3000 + b"}",
                     b'[{"id":"1","data":' + b"[" * 980 + b"]" * 980 + b"}]",
                     b'[{"id":"1","user_id":"a\\ud800b","data":{"path":"\\udcff"}}]',
                     '[{"id":"1","user_id":"report\u202etxt.exe"}]'.encode(),
                     b'[{"id":"=cmd|\\u0027/c calc\\u0027!A1","user_id":"+1","type":"@x"}]',
                     b'[{"id":"1"},{"id":"1"},{"id":"2"},{"id":"1"}]']))
NETWORK = [
    ["events", "list"], ["events", "get", "1"], ["events", "tail", "--since", "1h"],
    ["events", "list", "-o", "json"], ["events", "list", "-o", "csv"],
    ["events", "tail", "--iteration-token", "0", "-o", "json"],
    ["node", "info"], ["access-key", "list"], ["access-key", "show", "ak"],
    ["permission", "list", "--file-id", "1", "--access-key", "ak"],
    ["operations", "list"], ["operations", "show", "1", "--workspace", "2"],
    ["workspaces", "create", "--name", "w"],
]


@FUZZ
@given(st.sampled_from([200, 201, 202, 204, 301, 400, 401, 403, 404, 409, 418, 429, 500, 503,
                        999]),
       st.dictionaries(st.sampled_from(["Link", "Location", "Retry-After", "Content-Type",
                                        "X-Junk"]), header_values, max_size=3),
       bodies, st.sampled_from(NETWORK))
def test_network_commands_survive_a_hostile_server(invoke, home, hostile, status, headers,
                                                   body, args):
    hostile.script = (status, headers, body)
    url = f"https://localhost:{hostile.server_address[1]}"
    env = {"NODECLI_URL": url, "NODECLI_USER": "admin", "NODECLI_PASSWORD": "pw",
           "NODECLI_SERVICE_URL": url, "NODECLI_TOKEN": "opaque-token",
           "NODECLI_HOME": str(home), "NODECLI_CACERT": hostile.ca,
           "NODECLI_SERVICE_CACERT": hostile.ca}
    result = invoke(*args, env=env)
    _check(result, None, home / "config.toml")
    shown = result.stdout + result.stderr
    assert "\x1b" not in shown  # a server cannot drive the terminal
    assert "\u202e" not in shown  # nor reorder what the reader sees
    shown.encode("utf-8")  # no lone surrogate: every output is UTF-8
    if result.exit_code == 0 and args[:2] == ["events", "list"] and args[-1] == "json":
        def strict(name: str) -> None:
            raise AssertionError(f"-o json wrote {name}, which is not JSON")

        json.loads(result.stdout, parse_constant=strict)
