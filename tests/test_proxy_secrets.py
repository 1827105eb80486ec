"""Proxy secrets (issues 33 and 34): a proxy password holding the characters a URL gives
meaning to (``@ : / % #``) reaches a real CONNECT proxy intact and is never shown (-v,
-vv, errors); and credentials for a plain-http node that go through a proxy not on this
machine are warned about, as plain http to another host is."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest

from nodecli.http.client import Auth, Endpoint
from nodecli.http.proxies import parse_proxy
from tests.proxy_server import TunnelProxy
from tests.scripted_server import ScriptedServer, Seen, reply

# every character that means something in a URL's user part, and a space-free rest
ODD_PASSWORD = "p@ss:w/rd%41#frag"


def _forms(user: str, password: str) -> list[str]:
    """Every form the password could leak in: as is, URL-quoted (both ways), and inside
    the Basic credentials."""
    return [password, quote(password, safe=""), quote(password),
            base64.b64encode(f"{user}:{password}".encode()).decode()]


@pytest.mark.parametrize("route", ["NODECLI_PROXY_PASSWORD", "quoted in HTTPS_PROXY"])
@pytest.mark.parametrize("verbosity", ["-v", "-vv"])
def test_an_odd_proxy_password_reaches_the_proxy_intact_and_is_never_shown(
        invoke, node_env, log, route, verbosity):
    log.generate(2)
    with TunnelProxy(credentials=("bob", ODD_PASSWORD)) as proxy:
        if route == "NODECLI_PROXY_PASSWORD":
            env = {**node_env, "HTTPS_PROXY": f"http://bob@127.0.0.1:{proxy.port}",
                   "NODECLI_PROXY_PASSWORD": ODD_PASSWORD}
        else:
            env = {**node_env, "HTTPS_PROXY": f"http://bob:{quote(ODD_PASSWORD, safe='')}"
                                              f"@127.0.0.1:{proxy.port}"}
        r = invoke(verbosity, "events", "list", "-o", "jsonl", env=env)
        assert r.exit_code == 0, r
        assert proxy.stats.refused == 0 and proxy.stats.tunnels  # the proxy took it as is
        assert len(r.stdout.splitlines()) == 2
        assert "via proxy http://bob:***@127.0.0.1" in r.stderr  # -v names the proxy
        for form in _forms("bob", ODD_PASSWORD):
            assert form not in r.stdout + r.stderr


@pytest.mark.parametrize("verbosity", [[], ["-v"], ["-vv"]])
def test_a_refused_odd_proxy_password_is_never_in_the_error(invoke, node_env, verbosity):
    with TunnelProxy(credentials=("bob", "the-right-one")) as proxy:
        env = {**node_env, "HTTPS_PROXY": f"http://bob@127.0.0.1:{proxy.port}",
               "NODECLI_PROXY_PASSWORD": ODD_PASSWORD}
        r = invoke(*verbosity, "node", "info", env=env)
        assert r.exit_code == 6, r
        assert proxy.stats.refused >= 1
        assert "proxy http://bob:***@127.0.0.1" in r.stderr and "407" in r.stderr
        for form in _forms("bob", ODD_PASSWORD):
            assert form not in r.stdout + r.stderr


# -- plain http through a proxy: the warning ------------------------------------------

WARNING = "over plain http://, unencrypted"


@pytest.mark.parametrize(("url", "proxy", "clear"), [
    ("http://localhost:9092", "http://proxy.example:3128", True),
    ("http://localhost:9092", "https://proxy.example:3128", True),  # the proxy reads it
    ("http://127.0.0.1:9092", "http://10.0.0.1:3128", True),
    ("http://node.example:9092", "http://127.0.0.1:3128", True),  # then on, in clear
    ("http://localhost:9092", "http://127.0.0.1:3128", False),  # never leaves the machine
    ("http://localhost:9092", "http://[::1]:3128", False),
    ("https://localhost:9092", "http://proxy.example:3128", False),  # TLS in a tunnel
])
def test_credentials_in_clear_take_the_proxy_into_account(url, proxy, clear):
    from nodecli.http.checks import in_clear

    endpoint = Endpoint(url, Auth("basic", "admin", "pw"), proxy=parse_proxy(proxy))
    assert in_clear(endpoint) is clear


def test_a_loopback_node_through_a_remote_proxy_warns(invoke):
    """(The proxy's name does not resolve: the warning comes before anything is sent.)"""
    env = {"NODECLI_URL": "http://localhost:9092", "NODECLI_USER": "admin",
           "NODECLI_PASSWORD": "a-long-password", "HTTP_PROXY": "http://proxy.invalid:3128"}
    r = invoke("node", "info", env=env)
    assert r.exit_code == 6, r
    first = r.stderr.splitlines()[0]
    assert first.startswith("nodecli: warning: credentials go to http://localhost:9092 "
                            "through proxy http://proxy.invalid:3128 " + WARNING)


def test_credentials_through_a_proxy_really_travel_in_clear_and_are_warned_about(invoke):
    """A forward proxy (on this machine, for the test) for a node on another host: the
    proxy reads the Authorization header as it is; the user was told."""
    info = json.dumps({"application": "node", "version": "4.4.5"}).encode()

    def forward(seen: Seen) -> list[bytes | float]:
        return [reply(200, info, [("Content-Type", "application/json")])]

    with ScriptedServer(forward) as proxy:
        env = {"NODECLI_URL": "http://node.invalid:9092", "NODECLI_USER": "admin",
               "NODECLI_PASSWORD": "a-long-password", "HTTP_PROXY": proxy.url("127.0.0.1")}
        r = invoke("node", "info", env=env)
        assert r.exit_code == 0, r
        assert r.stderr.count(WARNING) == 1 and "through proxy http://127.0.0.1:" in r.stderr
        assert proxy.seen and proxy.seen[0].target.startswith("http://node.invalid:9092/")
        assert proxy.seen[0].headers["authorization"].startswith("Basic ")


def test_a_loopback_node_through_a_loopback_proxy_does_not_warn(invoke):
    info = json.dumps({"application": "node", "version": "4.4.5"}).encode()
    with ScriptedServer(lambda seen: [reply(200, info)]) as proxy:
        env = {"NODECLI_URL": "http://localhost:9092", "NODECLI_USER": "admin",
               "NODECLI_PASSWORD": "a-long-password", "HTTP_PROXY": proxy.url("127.0.0.1")}
        r = invoke("node", "info", env=env)
        assert r.exit_code == 0, r
        assert WARNING not in r.stderr
        assert proxy.seen  # (it did go through the proxy)
