"""Redirects, over real TLS sockets (issues 33 and 34): what "another origin" is (scheme,
host AND port; scheme and host without regard to case), that a redirect there is refused
for every method unless ``api --follow-redirects`` asks (and then without credentials or
a body), what a 303 does to the method and body, and that the limit is exactly 5."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.scripted_server import ScriptedServer, Seen, certificates, reply

KEY = json.dumps({"id": "ak1", "storage": {"type": "local", "path": "/"}}).encode()
OTHER = json.dumps({"id": "not-the-node", "from": "another origin"}).encode()
JSON = [("Content-Type", "application/json")]
PASSWORD = "a-long-password"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    return certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def servers(certs) -> Iterator[Callable[[Callable[[Seen], list[bytes | float]]],
                                        ScriptedServer]]:
    started: list[ScriptedServer] = []

    def start(script: Callable[[Seen], list[bytes | float]]) -> ScriptedServer:
        server = ScriptedServer(script, tls=(certs[1], certs[2]))
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.close()


INFO = json.dumps({"application": "node", "version": "4.4.5"}).encode()


def redirecting(status: int, location: Callable[[], str]) -> Callable[[Seen], list[Any]]:
    """Redirects every path but /info and the target to ``location()``."""
    def script(seen: Seen) -> list[Any]:
        if seen.target.startswith("/info"):
            return [reply(200, INFO, JSON)]
        if seen.target.startswith("/moved"):
            return [reply(200, KEY, JSON)]
        return [reply(status, b"", [("Location", location())])]
    return script


def run_against(invoke, certs, server: ScriptedServer, *args: str, input: str | None = None):
    env = {"NODECLI_URL": server.url(), "NODECLI_USER": "admin",
           "NODECLI_PASSWORD": PASSWORD, "NODECLI_CACERT": certs[0]}
    return invoke(*args, env=env, input=input)


def targets(server: ScriptedServer) -> list[str]:
    """What was asked of ``server`` but its version (/info)."""
    return [s.target for s in server.seen if not s.target.startswith("/info")]


def secrets_in(seen: list[Seen]) -> bool:
    return any("authorization" in s.headers or PASSWORD.encode() in s.body for s in seen)


# -- another origin: refused for every method ------------------------------------------

# Each is another origin than https://localhost:PORT: another host on the very same
# server and port (127.0.0.1), the same host on another port, another scheme.
ELSEWHERE = {
    "another host": lambda node, other: f"https://127.0.0.1:{node.port}/moved",
    "another port": lambda node, other: f"https://localhost:{other.port}/moved",
    "another port, host in capitals": lambda node, other: f"https://LOCALHOST:{other.port}/moved",
    "http on the same port": lambda node, other: f"http://localhost:{node.port}/moved",
    "HTTP in capitals on the same port": lambda node, other: f"HTTP://localhost:{node.port}/moved",
}


@pytest.mark.parametrize("where", sorted(ELSEWHERE))
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_get_redirected_to_another_origin_is_refused_naming_the_location(
        servers, certs, invoke, where, status):
    other = servers(lambda seen: [reply(200, OTHER, JSON)])
    holder: dict[str, Any] = {}
    node = servers(redirecting(status, lambda: holder["location"]))
    holder["location"] = ELSEWHERE[where](node, other)
    r = run_against(invoke, certs, node, "access-key", "show", "ak1", "-o", "json")
    assert r.exit_code == 6, r
    assert r.stdout == ""  # the other origin's answer is never shown as the node's
    assert "another origin" in r.stderr or "https to" in r.stderr
    assert holder["location"] in r.stderr
    assert other.seen == []
    assert targets(node) == ["/access_keys/ak1"]  # nothing followed


@pytest.mark.parametrize("method", ["GET", "HEAD", "DELETE", "PUT", "POST", "CANCEL"])
def test_every_method_is_refused_another_origin(servers, certs, invoke, method):
    other = servers(lambda seen: [reply(200, OTHER, JSON)])
    node = servers(redirecting(307, lambda: f"https://localhost:{other.port}/moved"))
    r = run_against(invoke, certs, node, "api", "-X", method, "/access_keys/ak1")
    assert r.exit_code == 6, r
    assert f"https://localhost:{other.port}/moved" in r.stderr
    assert other.seen == [] and r.stdout == ""


# -- api --follow-redirects: followed, never with credentials or a body ---------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_api_follow_redirects_follows_to_another_port_without_credentials(
        servers, certs, invoke, status):
    other = servers(lambda seen: [reply(200, OTHER, JSON)])
    node = servers(redirecting(status, lambda: f"https://localhost:{other.port}/moved"))
    r = run_against(invoke, certs, node, "api", "/access_keys/ak1", "--follow-redirects")
    assert r.exit_code == 0, r
    assert json.loads(r.stdout)["id"] == "not-the-node"
    assert len(other.seen) == 1 and not secrets_in(other.seen)
    assert "authorization" in node.seen[0].headers  # (the node itself got them)


@pytest.mark.parametrize("method", ["PUT", "POST", "DELETE"])
def test_api_follow_redirects_never_sends_a_body_to_another_port(servers, certs, invoke,
                                                                  method):
    other = servers(lambda seen: [reply(200, OTHER, JSON)])
    node = servers(redirecting(307, lambda: f"https://localhost:{other.port}/moved"))
    r = run_against(invoke, certs, node, "api", "-X", method, "/access_keys/ak1",
                    "--follow-redirects", "--input", "-", input='{"secret": "body-secret"}')
    assert r.exit_code == 6, r
    assert "a request body is never sent elsewhere" in r.stderr
    assert other.seen == []
    assert node.seen[0].body == b'{"secret": "body-secret"}'


# -- the same origin: followed, credentials kept ---------------------------------------

SAME = {
    "relative": lambda node: "/moved",
    "absolute": lambda node: f"https://localhost:{node.port}/moved",
    "scheme in capitals": lambda node: f"HTTPS://localhost:{node.port}/moved",
    "scheme and host in capitals": lambda node: f"HtTpS://LocalHost:{node.port}/moved",
}


@pytest.mark.parametrize("how", sorted(SAME))
def test_a_same_origin_redirect_is_followed_with_the_credentials(servers, certs, invoke, how):
    holder: dict[str, Any] = {}
    node = servers(redirecting(302, lambda: holder["location"]))
    holder["location"] = SAME[how](node)
    r = run_against(invoke, certs, node, "access-key", "show", "ak1", "-o", "json")
    assert r.exit_code == 0, r
    assert json.loads(r.stdout)["id"] == "ak1"
    assert targets(node) == ["/access_keys/ak1", "/moved"]
    assert all(s.headers.get("authorization", "").startswith("Basic ") for s in node.seen)


# -- what a redirect does to the method and body (same origin) -------------------------


@pytest.mark.parametrize(("method", "status", "sent"), [
    ("PUT", 303, ("GET", b"")), ("DELETE", 303, ("GET", b"")), ("POST", 303, ("GET", b"")),
    ("POST", 301, ("GET", b"")), ("POST", 302, ("GET", b"")),
    ("PUT", 301, ("PUT", b'{"a":1}')), ("PUT", 302, ("PUT", b'{"a":1}')),
    ("PUT", 307, ("PUT", b'{"a":1}')), ("POST", 308, ("POST", b'{"a":1}')),
    ("DELETE", 307, ("DELETE", b'{"a":1}')),
])
def test_what_follows_a_redirect_on_the_same_origin(servers, certs, invoke, method, status,
                                                    sent):
    node = servers(lambda seen: [reply(200, b"{}", JSON)] if seen.target == "/moved"
                   else [reply(status, b"", [("Location", "/moved")])])
    r = run_against(invoke, certs, node, "api", "-X", method, "/things", "--input", "-",
                    input='{"a":1}')
    assert r.exit_code == 0, r
    assert [s.target for s in node.seen] == ["/things", "/moved"]
    assert (node.seen[1].method, node.seen[1].body) == sent
    if sent[0] == "GET":  # no body, so nothing says there is one
        assert "content-length" not in node.seen[1].headers or \
            node.seen[1].headers["content-length"] == "0"


# -- the limit: exactly 5 ---------------------------------------------------------------


def chain(length: int) -> Callable[[Seen], list[Any]]:
    """/r0 -> /r1 -> ... -> /r<length>, which answers."""
    def script(seen: Seen) -> list[Any]:
        n = int(seen.target.split("?")[0].removeprefix("/r"))
        if n >= length:
            return [reply(200, b'{"hops": %d}' % n, JSON)]
        return [reply(302, b"", [("Location", f"/r{n + 1}")], close=False)]
    return script


def test_the_fifth_redirect_is_followed(servers, certs, invoke):
    node = servers(chain(5))
    r = run_against(invoke, certs, node, "api", "/r0")
    assert r.exit_code == 0, r
    assert json.loads(r.stdout) == {"hops": 5}
    assert [s.target for s in node.seen] == [f"/r{i}" for i in range(6)]


def test_the_sixth_redirect_is_refused(servers, certs, invoke):
    node = servers(chain(6))
    r = run_against(invoke, certs, node, "api", "/r0")
    assert r.exit_code == 6, r
    assert "more than 5 redirects" in r.stderr and "/r6" in r.stderr
    assert r.stdout == ""
    assert [s.target for s in node.seen] == [f"/r{i}" for i in range(6)]  # /r6 never asked
