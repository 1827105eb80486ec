"""nodecli.http.client's request path over HTTPS against a scripted server, for the
survivors of its mutation run (issue 33, item 2): a 401 is asked once unless a token
source renews its token; the node's clock is handed to a source that mints tokens only
when it has a clock to set and the node is two seconds or more away."""

from __future__ import annotations

import json
import time
from email.utils import formatdate
from typing import Any

import pytest

from nodecli.errors import AuthError
from nodecli.http.client import Auth, Endpoint, open_client
from tests.scripted_server import ScriptedServer, certificates, reply


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates(tmp_path_factory.mktemp("certs"))


def serve(certs, status: int = 200, ahead: float = 0.0):
    """A server answering every request with ``status`` and a Date ``ahead`` seconds
    ahead of ours."""

    def script(seen):
        headers = [("Content-Type", "application/json"),
                   ("Date", formatdate(time.time() + ahead, usegmt=True))]
        yield reply(status, json.dumps({"ok": status == 200}).encode(), headers)

    return ScriptedServer(script, tls=(certs[1], certs[2]))


def client(server, certs, auth: Auth) -> Any:
    return open_client(Endpoint(server.url(), auth, cacert=certs[0], deadline=10.0,
                                max_attempts=3))


class Renewing:
    """A token source that renews as told, counting the times it is asked."""

    label = "test source"

    def __init__(self, renews: bool) -> None:
        self.renews, self.asked = renews, 0

    def current(self) -> str:
        return f"token-{self.asked}"

    def seen(self) -> list[str]:
        return []

    def renew(self) -> bool:
        self.asked += 1
        return self.renews


def test_a_401_to_a_fixed_token_is_asked_once(certs):
    with serve(certs, 401) as server, client(server, certs, Auth("bearer", token="t")) as c:
        with pytest.raises(AuthError):
            c.request("GET", "/info")
    assert len(server.seen) == 1


@pytest.mark.parametrize(("renews", "requests"), [(True, 2), (False, 1)])
def test_a_401_asks_the_source_once_and_retries_only_a_renewed_token(certs, renews,
                                                                    requests):
    source = Renewing(renews)
    with serve(certs, 401) as server, \
            client(server, certs, Auth("bearer", token="t", source=source)) as c:
        with pytest.raises(AuthError):
            c.request("GET", "/info")
    assert (source.asked, len(server.seen)) == (1, requests)
    assert [s.headers["authorization"] for s in server.seen] == [
        f"Bearer token-{n}" for n in range(requests)]


class Minting(Renewing):
    """A source with a clock to set (as tokens.source.MintedToken)."""

    def __init__(self) -> None:
        super().__init__(False)
        self.offset = 0.0


@pytest.mark.parametrize(("ahead", "set_"), [(0.0, False), (30.0, True), (-30.0, True)])
def test_the_nodes_clock_is_given_to_a_minting_source_two_seconds_away_or_more(certs, ahead,
                                                                              set_):
    source = Minting()
    with serve(certs, ahead=ahead) as server, \
            client(server, certs, Auth("bearer", token="t", source=source)) as c:
        c.request("GET", "/info")
    if set_:
        assert abs(source.offset - ahead) < 2, source.offset
    else:
        assert source.offset == 0.0  # (the Date's second cut: less than 2 s away)


def test_a_source_without_a_clock_is_not_given_one(certs):
    source = Renewing(False)
    with serve(certs, ahead=30.0) as server, \
            client(server, certs, Auth("bearer", token="t", source=source)) as c:
        c.request("GET", "/info")
        assert c.clock_offset is not None and abs(c.clock_offset - 30) < 2
    assert not hasattr(source, "offset")


# -- the thresholds at equality, in process: the Date and the time it came are given --

DATE_TS = 1_800_000_000  # a whole second, as a Date header holds


def check_clock(offset: float, source: Any = None) -> tuple[Any, list[float]]:
    """A client that saw a Date ``offset`` seconds ahead (the Date is taken as made half
    a second before it was sent: nodecli.http.checks.clock_offset_of); the warnings."""
    from nodecli.http.client import Response

    warned: list[float] = []
    c = open_client(Endpoint("https://n.example:9092", Auth("bearer", token="t",
                                                            source=source)),
                    skew=warned.append)
    with c:
        date = formatdate(DATE_TS, usegmt=True)
        c._check_clock(Response(200, {"date": date}, b"", "https://n.example:9092/", 0.0),
                       DATE_TS + 0.5 - offset)
        assert c.clock_offset == offset
    return source, warned


@pytest.mark.parametrize(("offset", "set_"), [(2.0, True), (-2.0, True), (1.9375, False),
                                              (-1.9375, False), (2.5, True)])
def test_a_minting_source_takes_the_nodes_clock_from_two_seconds_away(offset, set_):
    source, _ = check_clock(offset, Minting())
    assert source.offset == (offset if set_ else 0.0)


@pytest.mark.parametrize(("offset", "warned"), [(5.0, False), (-5.0, False),
                                                (5.0625, True), (-5.0625, True)])
def test_a_skew_is_told_beyond_five_seconds(offset, warned):
    from nodecli.http.checks import SKEW_WARN

    assert SKEW_WARN == 5.0
    _, said = check_clock(offset)
    assert said == ([offset] if warned else [])
    source, said = check_clock(offset, Minting())  # told with a source too
    assert said == ([offset] if warned else []) and source.offset == offset


def test_no_skew_callback_is_no_warning():
    from nodecli.http.client import Response

    with open_client(Endpoint("https://n.example:9092", Auth("bearer", token="t"))) as c:
        c._check_clock(Response(200, {"date": formatdate(DATE_TS, usegmt=True)}, b"",
                                "https://n.example:9092/", 0.0), DATE_TS - 60.0)
        assert c.clock_offset == 60.5


# -- a body's bound, in however many pieces it comes; the -vv log of headers -----------


def serve_body(certs, body: bytes, piece: int):
    """Every request answered with ``body``, sent chunked in pieces of ``piece`` bytes."""

    def script(seen):
        head = (b"HTTP/1.1 200 X\r\nContent-Type: application/octet-stream\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        yield head
        for i in range(0, len(body), piece):
            part = body[i:i + piece]
            yield f"{len(part):x}\r\n".encode() + part + b"\r\n"
        yield b"0\r\n\r\n"

    return ScriptedServer(script, tls=(certs[1], certs[2]))


@pytest.mark.parametrize("piece", [1000, 7, 100_000])
def test_a_body_of_exactly_max_body_bytes_is_read_whole_one_more_is_refused(certs, piece):
    from nodecli.errors import RemoteError

    body = bytes(range(256)) * 391 + b"end"  # 100,099 bytes, every byte value
    for limit, whole in ((len(body), True), (len(body) - 1, False)):
        with serve_body(certs, body, piece) as server, open_client(Endpoint(
                server.url(), Auth(), cacert=certs[0], deadline=10.0, max_attempts=1,
                max_body=limit)) as c:
            if whole:
                assert c.request("GET", "/big").body == body
            else:
                with pytest.raises(RemoteError) as info:
                    c.request("GET", "/big")
                assert info.value.message == (f"{server.url()}/big: response larger than "
                                              f"{limit} bytes; refused")


def test_the_request_log_shows_headers_with_credentials_hidden(certs):
    logged: list[str] = []
    with serve(certs) as server, open_client(
            Endpoint(server.url(), Auth("bearer", token="sekrit", access_key="ak-7"),
                     cacert=certs[0], deadline=10.0, max_attempts=1),
            log=logged.append) as c:
        c.request("GET", "/info", headers={"Cookie": "c=sekrit", "X-Trace": "t-1"})
    line, = [x for x in logged if x.startswith("> headers ")]
    assert "'Authorization': '***'" in line and "'Cookie': '***'" in line
    assert "'X-Vendor-AccessKey': 'ak-7'" in line and "'X-Trace': 't-1'" in line
    assert "sekrit" not in "\n".join(logged)


def test_the_request_log_names_params_time_size_and_answer_headers(certs):
    """-vv: each request with its params (none: no params= at all), each answer with
    its status, time in ms, size, and headers (a cookie set or credentials: ***)."""
    import re

    body = b'{"ok": true}'

    def script(seen):
        yield 0.25
        yield reply(200, body, [("Content-Type", "application/json"),
                                ("Set-Cookie", "s=sekrit"), ("Authorization", "sekrit"),
                                ("X-Other", "v")])

    logged: list[str] = []
    with ScriptedServer(script, tls=(certs[1], certs[2])) as server, open_client(
            Endpoint(server.url(), Auth(), cacert=certs[0], deadline=10.0, max_attempts=1),
            log=logged.append) as c:
        c.request("GET", "/info", params=[("a", "1"), ("b", "x y")])
        c.request("GET", "/info")
        url = f"{server.url()}/info"
    assert [s.target for s in server.seen] == ["/info?a=1&b=x+y", "/info"]
    asked = [x for x in logged if x.startswith("> GET ")]
    assert asked == [f"> GET {url} params=[('a', '1'), ('b', 'x y')]", f"> GET {url}"]
    answered = [x for x in logged if x.startswith(f"< 200 {url} (")]
    assert len(answered) == 2
    for line in answered:
        ms = re.fullmatch(rf"< 200 {re.escape(url)} \((\d+) ms, {len(body)} bytes\)", line)
        assert ms and 250 <= int(ms.group(1)) < 60_000, line
    heads = [x for x in logged if x.startswith("< headers {")]
    assert len(heads) == 2 and all("'set-cookie': '***'" in x and "'authorization': '***'"
                                   in x and "'x-other': 'v'" in x for x in heads), heads
    assert "sekrit" not in "\n".join(logged)


@pytest.mark.parametrize("trusted", ["another CA", "the system's"])
def test_an_untrusted_certificate_is_one_line_naming_the_peer_and_its_fix(certs,
                                                                         tmp_path_factory,
                                                                         trusted):
    from nodecli.errors import RemoteError

    other = certificates(tmp_path_factory.mktemp("other"))[0] if trusted == "another CA" \
        else None
    with serve(certs) as server, open_client(Endpoint(
            server.url(), Auth(), cacert=other, deadline=10.0, max_attempts=1,
            peer="collector", cacert_env="NODECLI_SINK_CACERT")) as c:
        netloc = server.url().split("://")[1]
        with pytest.raises(RemoteError) as info:
            c.request("GET", "/x")
    assert info.value.message.startswith(f"TLS: the certificate of {netloc} is not trusted (")
    assert info.value.hint == (
        f"the certificate is not signed by the CA in {other}: check that --cacert names "
        "the collector's CA" if other else
        "give the collector's CA with --cacert PEM (or NODECLI_SINK_CACERT; for a test "
        "collector only, --insecure)")
