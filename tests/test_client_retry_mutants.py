"""nodecli.http.client's retries, broken connections and proxy refusals over real sockets
(a scripted HTTPS server, a real CONNECT proxy), for the survivors of its mutation run
(issue 33, item 2): what a retried answer is called and how long its wait is, the words
of a connection cut before the answer, and what a proxy's refusal names and advises."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodecli.errors import RemoteError
from nodecli.http.client import Auth, Client, Endpoint
from nodecli.http.proxies import parse_proxy
from tests.proxy_server import TunnelProxy
from tests.scripted_server import ScriptedServer, Seen, certificates, reply


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates(tmp_path_factory.mktemp("certs"))


class Recorder:
    """What a client told: its waits, its status lines and its -v log."""

    def __init__(self) -> None:
        self.slept: list[float] = []
        self.status: list[str | None] = []
        self.log: list[str] = []

    def client(self, endpoint: Endpoint) -> Client:
        return Client(endpoint, log=self.log.append, sleep=self.slept.append,
                      status=self.status.append)


def endpoint(server: ScriptedServer, certs, **settings: Any) -> Endpoint:
    base: dict[str, Any] = {"cacert": certs[0], "deadline": 30.0, "label": "n1"}
    return Endpoint(server.url(), Auth(), **{**base, **settings})


OK = reply(200, json.dumps({"ok": True}).encode(), [("Content-Type", "application/json")])


@pytest.mark.parametrize(("status", "after", "waited"), [(503, "3", 3.0), (429, "0", 0.0),
                                                         (502, "7", 7.0)])
def test_a_retried_status_is_named_and_its_retry_after_is_the_wait(certs, status, after,
                                                                   waited):
    def script(seen: Seen):
        if len(server.seen) == 1:
            yield reply(status, b"busy", [("Retry-After", after)])
        else:
            yield OK

    told = Recorder()
    with ScriptedServer(script, tls=(certs[1], certs[2])) as server, \
            told.client(endpoint(server, certs, max_attempts=3)) as c:
        assert c.request("GET", "/info").json() == {"ok": True}
    assert len(server.seen) == 2
    assert told.slept == [waited]
    assert told.status == [f"retry 1 of 2 in {waited:.0f} s: n1: HTTP {status}", None]
    assert f"! HTTP {status}; retry 1/2 in {waited:.1f} s" in told.log


def test_a_retried_status_without_retry_after_waits_the_backoff(certs):
    def script(seen: Seen):
        yield reply(503, b"") if len(server.seen) == 1 else OK

    told = Recorder()
    with ScriptedServer(script, tls=(certs[1], certs[2])) as server, \
            told.client(endpoint(server, certs, max_attempts=2)) as c:
        c.request("GET", "/info")
    assert len(told.slept) == 1 and 0 <= told.slept[0] <= 0.5  # the first backoff's range
    assert told.status[0] is not None and told.status[0].endswith(" s: n1: HTTP 503")


def hang_up(seen: Seen):
    """Read the request, then close the connection without a word."""
    raise ValueError("hang up")
    yield b""  # (a generator)


@pytest.mark.parametrize("attempts", [1, 2])
def test_a_connection_closed_before_the_answer_is_named_broken(certs, attempts):
    told = Recorder()
    with ScriptedServer(hang_up, tls=(certs[1], certs[2])) as server, \
            told.client(endpoint(server, certs, max_attempts=attempts)) as c:
        with pytest.raises(RemoteError) as info:
            c.request("GET", "/info")
        url = f"{server.url()}/info"
    assert len(server.seen) == attempts
    tries = " after 2 attempts" if attempts == 2 else ""
    assert info.value.message == (f"GET {url}: connection broken: Server disconnected "
                                  f"without sending a response.{tries}")
    assert info.value.hint is None  # (https: no advice to use https)
    assert len(told.slept) == attempts - 1


def test_a_body_cut_short_is_named_broken(certs):
    def script(seen: Seen):
        yield b"HTTP/1.1 200 X\r\nContent-Length: 100\r\nConnection: close\r\n\r\n0123456789"
        raise ValueError("cut")

    with ScriptedServer(script, tls=(certs[1], certs[2])) as server, \
            Recorder().client(endpoint(server, certs, max_attempts=1)) as c:
        with pytest.raises(RemoteError) as info:
            c.request("GET", "/info")
        url = f"{server.url()}/info"
    assert info.value.message == (f"GET {url}: connection broken: peer closed "
                                  "connection without sending complete message body "
                                  "(received 10 bytes, expected 100)")


# -- a proxy's refusal: the proxy shown without its password, the 407's advice --------


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_proxy_asking_for_credentials_is_named_with_its_advice(certs, method):
    with ScriptedServer(lambda seen: iter([OK]), tls=(certs[1], certs[2])) as server, \
            TunnelProxy(credentials=("bob", "right")) as proxy:
        given = parse_proxy(f"http://bob@127.0.0.1:{proxy.port}", "HTTPS_PROXY",
                            allow_password=True).with_password("wrong-pw")
        told = Recorder()
        with told.client(endpoint(server, certs, max_attempts=3, proxy=given)) as c:
            with pytest.raises(RemoteError) as info:
                c.request(method, "/info")
        url = f"{server.url()}/info"
    assert proxy.stats.refused == 1 and not server.seen  # a refusal is not retried
    assert info.value.message == (f"{method} {url}: proxy http://bob:***@127.0.0.1:"
                                  f"{proxy.port} refused: 407 Proxy Authentication Required")
    assert info.value.hint == ("check the proxy's user and password (NODECLI_PROXY_PASSWORD, "
                               "the profile's secret or the prompt)")
    assert "wrong-pw" not in "\n".join(told.log)
    assert f"> via proxy http://bob:***@127.0.0.1:{proxy.port} (from HTTPS_PROXY)" in told.log


def test_a_proxy_that_cannot_reach_the_node_gives_no_password_advice(certs):
    import socket

    with socket.socket() as unused:  # a port nobody listens on (bound, never listening)
        unused.bind(("127.0.0.1", 0))
        with TunnelProxy() as proxy:
            given = parse_proxy(f"http://127.0.0.1:{proxy.port}")
            ep = Endpoint(f"https://localhost:{unused.getsockname()[1]}", Auth(),
                          cacert=certs[0], deadline=30.0, max_attempts=1, proxy=given)
            with Recorder().client(ep) as c, pytest.raises(RemoteError) as info:
                c.request("GET", "/info")
    assert info.value.message == (f"GET {ep.base_url}/info: proxy http://127.0.0.1:"
                                  f"{proxy.port} refused: 502 Bad Gateway")
    assert info.value.hint is None


def test_a_tls_handshake_that_never_ends_is_cut_at_the_deadline_and_says_so(certs):
    """The server's kernel takes the connection (listen backlog) and nobody answers the
    TLS hello: the handshake is cut at the request's deadline, not at the connect
    timeout (the bug this found: the watchdog cannot cut a socket being wrapped in TLS,
    so a node stalling the handshake held a command past --deadline), and the error
    names the deadline."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"https://localhost:{silent.getsockname()[1]}"
        # (timeouts of an hour: a handshake not cut at the deadline hangs the test until
        # pytest-timeout fails it, rather than passing late with the same words)
        ep = Endpoint(url, Auth(), cacert=certs[0], deadline=0.5, connect_timeout=3600.0,
                      read_timeout=3600.0, max_attempts=1)
        with Recorder().client(ep) as c, pytest.raises(RemoteError) as info:
            c.request("GET", "/info")
    assert info.value.message == f"GET {url}/info: no complete answer within the deadline " \
                                 "of 0.5 s"


def test_a_connect_that_fails_after_the_watchdog_fired_is_named_by_the_deadline(
        certs, monkeypatch):
    """The watchdog fires while the connection is still being made, and the connect then
    fails for a reason of its own (here the node closes the connection it had left
    unanswered): the error names the deadline, not that reason. In life the two come
    at the same instant (the connect timeout is capped at the deadline); here the test
    orders them: the client's monotonic clock is set back a day, so its connect timeout
    is not capped (an hour), the watchdog (on the real clock) fires at 0.5 s, and only
    then (an event: its cut) does the node close the connection."""
    import socket
    import threading
    import time
    import types

    from nodecli.http import client as client_mod
    from nodecli.http.deadline import Watchdog

    cut = threading.Event()
    cut_sockets = Watchdog._cut

    def watched(self) -> None:
        cut_sockets(self)
        cut.set()

    monkeypatch.setattr(Watchdog, "_cut", watched)
    monkeypatch.setattr(client_mod, "time", types.SimpleNamespace(
        monotonic=lambda: time.monotonic() - 86400.0, time=time.time))
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        silent.settimeout(60)
        url = f"https://127.0.0.1:{silent.getsockname()[1]}"

        def close_after_the_cut() -> None:
            conn, _ = silent.accept()
            with conn:
                cut.wait(60)

        closer = threading.Thread(target=close_after_the_cut, daemon=True)
        closer.start()
        try:
            ep = Endpoint(url, Auth(), cacert=certs[0], deadline=0.5, connect_timeout=3600.0,
                          read_timeout=3600.0, max_attempts=1)
            with Recorder().client(ep) as c, pytest.raises(RemoteError) as info:
                c.request("GET", "/info")
        finally:
            cut.set()
            closer.join(60)
    assert info.value.message == f"GET {url}/info: no complete answer within the deadline " \
                                 "of 0.5 s"


def test_a_connect_timeout_shorter_than_the_deadline_is_named_as_such(certs):
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"https://localhost:{silent.getsockname()[1]}"
        ep = Endpoint(url, Auth(), cacert=certs[0], deadline=3600.0, connect_timeout=0.25,
                      read_timeout=3600.0, max_attempts=1)
        with Recorder().client(ep) as c, pytest.raises(RemoteError) as info:
            c.request("GET", "/info")
    assert info.value.message == f"GET {url}/info: connection timed out after 0.25 s"


def test_an_answer_slower_than_the_read_timeout_is_named_as_such(certs):
    def script(seen: Seen):
        yield 2.0  # (the read timeout is 0.2 s: the answer comes too late)
        yield OK

    with ScriptedServer(script, tls=(certs[1], certs[2])) as server, Recorder().client(
            endpoint(server, certs, max_attempts=1, read_timeout=0.2)) as c:
        with pytest.raises(RemoteError) as info:
            c.request("GET", "/info")
        url = f"{server.url()}/info"
    assert info.value.message == f"GET {url}: no answer within the read timeout of 0.2 s"
