"""A connection that cannot be opened (issue 35): a refused connection and a name that
does not resolve each end with one line and a hint; a name that does not exist is asked
of the resolver once, not four times. Names are under ``.invalid`` (RFC 6761: never
resolves), so no network is used."""

from __future__ import annotations

import socket

import pytest

from nodecli.errors import RemoteError
from nodecli.http.client import Auth, Client, Endpoint, open_client
from nodecli.http.proxies import parse_proxy


def _closed_port() -> int:
    """A port nothing listens on (bound, then closed: refused until someone takes it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


LOGIN = {"NODECLI_USER": "admin", "NODECLI_PASSWORD": "a-long-password"}


def test_a_name_that_does_not_resolve_is_asked_once_with_a_hint(invoke):
    r = invoke("node", "info", "--url", "https://no-such-node.invalid:9092", "-v", env=LOGIN)
    assert r.exit_code == 6, r
    lines = [x for x in r.stderr.splitlines() if not x.startswith("debug: ")]
    assert lines[0].startswith("nodecli: error: GET https://no-such-node.invalid:9092/info: "
                               "cannot connect: host no-such-node.invalid does not resolve")
    assert "check the host name" in lines[1]
    assert "retry" not in r.stderr  # no "retry 1/3 in ..." in -v's log: one attempt
    assert "attempts" not in r.stderr


def test_a_name_that_does_not_resolve_is_not_retried():
    naps: list[float] = []
    ep = Endpoint("https://no-such-node.invalid:9092", max_attempts=4)
    with Client(ep, sleep=naps.append) as client:  # (the waits between attempts, counted)
        with pytest.raises(RemoteError, match="does not resolve") as info:
            client.request("GET", "/info")
    assert naps == []
    assert "not retried" in (info.value.hint or "")


def test_a_proxy_whose_name_does_not_resolve_is_named_as_the_proxy():
    ep = Endpoint("https://localhost:9092", Auth("basic", "admin", "pw"),
                  proxy=parse_proxy("http://proxy.invalid:3128"), max_attempts=4)
    with open_client(ep) as client, pytest.raises(RemoteError) as info:
        client.request("GET", "/info")
    assert "the proxy's host proxy.invalid does not resolve" in info.value.message


def test_a_refused_connection_names_where_with_a_hint(invoke):
    port = _closed_port()
    r = invoke("node", "info", "--url", f"https://127.0.0.1:{port}", env=LOGIN)
    assert r.exit_code == 6, r
    first, hint = r.stderr.splitlines()[:2]
    assert f"cannot connect: 127.0.0.1:{port} refused the connection after 4 attempts" in first
    assert "is the node running, and is the port right" in hint


def test_a_refused_proxy_is_named_as_the_proxy():
    port = _closed_port()
    ep = Endpoint("https://localhost:9092", proxy=parse_proxy(f"http://127.0.0.1:{port}"),
                  max_attempts=2)
    with Client(ep, sleep=lambda s: None) as client:
        with pytest.raises(RemoteError) as info:
            client.request("GET", "/info")
    assert f"proxy 127.0.0.1:{port} refused the connection after 2 attempts" in \
        info.value.message
    assert "is the proxy running" in (info.value.hint or "")


def test_a_timeout_names_the_limit_it_missed():
    """A node that accepts and never answers the TLS handshake, then one that takes the
    request and never answers it: each error names the limit (``node health
    --node-timeout 8`` says '8 s' whether its own watch or the client's ends it first)."""
    import threading

    hung = socket.create_server(("127.0.0.1", 0))  # accepts, never answers the handshake
    try:
        ep = Endpoint(f"https://127.0.0.1:{hung.getsockname()[1]}", max_attempts=1,
                      connect_timeout=0.25, read_timeout=5)
        with open_client(ep) as client, pytest.raises(RemoteError) as info:
            client.request("GET", "/info")
        assert "connection timed out after 0.25 s" in info.value.message
    finally:
        hung.close()

    mute = socket.create_server(("127.0.0.1", 0))  # plain HTTP: reads, never answers
    held: list[socket.socket] = []
    taken = threading.Thread(target=lambda: held.append(mute.accept()[0]), daemon=True)
    taken.start()
    try:
        ep = Endpoint(f"http://127.0.0.1:{mute.getsockname()[1]}", max_attempts=1,
                      connect_timeout=5, read_timeout=0.25)
        with open_client(ep) as client, pytest.raises(RemoteError) as info:
            client.request("GET", "/info")
        assert "no answer within the read timeout of 0.25 s" in info.value.message
    finally:
        taken.join(10)
        for conn in held:
            conn.close()
        mute.close()
