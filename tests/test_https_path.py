"""The path nodes serve: HTTPS. Redirects, certificate names, limits and deadlines, repeated
headers and repeated events, each against a real TLS server over sockets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodecli.errors import RemoteError
from nodecli.http.client import Auth, Endpoint, open_client
from tests.scripted_server import ScriptedServer, Seen, certificates, reply

INFO = json.dumps({"application": "node", "version": "4.4.5"}).encode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    return certificates(tmp_path_factory.mktemp("tls"))


def recorder(certs: tuple[str, str, str] | None) -> ScriptedServer:
    """A server that answers everything 200 {} and keeps what reached it."""
    return ScriptedServer(lambda seen: [reply(200, b"{}")],
                          tls=(certs[1], certs[2]) if certs else None)


def redirector(certs: tuple[str, str, str], status: int, location: str) -> ScriptedServer:
    return ScriptedServer(lambda seen: [reply(status, b"", [("Location", location)])],
                          tls=(certs[1], certs[2]))


AUTHS = {
    "basic": Auth("basic", "admin", "s3cret-pw"),
    "bearer": Auth("bearer", token="tok-abc", access_key="ak1"),
    "access key": Auth("basic", "ak1", "ak-secret", access_key="ak1"),
}


@pytest.mark.parametrize("kind", sorted(AUTHS))
@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_to_another_origin_carries_no_credentials(certs, kind, status):
    with recorder(certs) as other:
        # localhost and 127.0.0.1: the same kind of server, another origin
        with redirector(certs, status, other.url("127.0.0.1") + "/info") as node:
            # (followed only as 'api --follow-redirects' asks: by default it is refused,
            # see tests/test_redirects.py)
            ep = Endpoint(node.url(), AUTHS[kind], cacert=certs[0], max_attempts=1,
                          cross_origin_redirects=True)
            with open_client(ep) as client:
                client.request("GET", "/info")
        assert len(other.seen) == 1
        sent = other.seen[0].headers
        assert "authorization" not in sent and "x-vendor-accesskey" not in sent
        for secret in AUTHS[kind].secrets():
            assert secret not in repr(other.seen)


def test_a_same_origin_redirect_keeps_the_credentials(certs):
    def script(seen: Seen):
        if seen.target == "/info":
            return [reply(302, b"", [("Location", "/info2")])]
        return [reply(200, INFO)]

    with ScriptedServer(script, tls=(certs[1], certs[2])) as node:
        ep = Endpoint(node.url(), AUTHS["basic"], cacert=certs[0])
        with open_client(ep) as client:
            assert client.json("GET", "/info")["version"] == "4.4.5"
        assert [s.target for s in node.seen] == ["/info", "/info2"]
        assert all(s.headers["authorization"].startswith("Basic ") for s in node.seen)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_https_never_follows_a_redirect_to_plain_http(certs, status):
    with recorder(None) as plain:
        with redirector(certs, status, plain.url("localhost") + "/info") as node:
            ep = Endpoint(node.url(), AUTHS["basic"], cacert=certs[0])
            with open_client(ep) as client, pytest.raises(RemoteError, match="https to"):
                client.request("GET", "/info")
        assert plain.seen == []


@pytest.mark.parametrize("cmd", [["create", "--path", "/data", "--id", "ak9"],
                                 ["set", "ak9"]], ids=["create (POST)", "set (PUT)"])
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_request_body_is_never_sent_to_another_origin(certs, status, invoke, cmd):
    """access-key create/set --secret-stdin: the secret goes in the body; a node that
    redirects the POST or PUT elsewhere must not get it delivered there."""
    with recorder(certs) as other:
        with redirector(certs, status, other.url("127.0.0.1") + "/access_keys") as node:
            r = invoke("access-key", *cmd, "--secret-stdin", "--url", node.url(),
                       "--user", "admin", "--password-stdin", "--cacert", certs[0],
                       input="admin-pass\nthe-ak-secret\n")
        assert r.exit_code == 6, r
        assert "another origin" in r.stderr and "the-ak-secret" not in r.stderr
        assert r.stdout == ""
        assert other.seen == []
        assert b"the-ak-secret" in node.seen[-1].body


def test_an_unusable_location_is_one_remote_error(certs):
    with redirector(certs, 302, "http://[::1") as node:
        ep = Endpoint(node.url(), AUTHS["basic"], cacert=certs[0])
        with open_client(ep) as client, pytest.raises(RemoteError, match="unusable Location"):
            client.request("GET", "/info")


def test_cacert_refuses_a_certificate_that_names_another_host(tmp_path: Path):
    ca, cert, key = certificates(tmp_path / "other", ("other.example",))
    with ScriptedServer(lambda seen: [reply(200, INFO)], tls=(cert, key)) as node:
        # (the certificate covers other.example and the loopback addresses, not localhost)
        ep = Endpoint(node.url("localhost"), AUTHS["basic"], cacert=ca, max_attempts=1)
        with open_client(ep) as client, pytest.raises(RemoteError, match="not valid for"):
            client.request("GET", "/info")
        assert node.seen == []  # nothing, credentials least of all, was sent


@pytest.mark.parametrize("tls", [True, False], ids=["https", "http"])
def test_the_body_size_limit_holds(certs, tls):
    big = b"[" + b"0," * 5000 + b"0]"
    with ScriptedServer(lambda seen: [reply(200, big)],
                        tls=(certs[1], certs[2]) if tls else None) as node:
        ep = Endpoint(node.url(), cacert=certs[0], max_body=1000)
        with open_client(ep) as client, pytest.raises(RemoteError, match="larger than 1000"):
            client.request("GET", "/events")


def _drip_headers(seen: Seen):
    yield b"HTTP/1.1 200 OK\r\n"
    for i in range(300):  # 30 s of header lines, a byte at a time
        yield f"X-Drip-{i}: ".encode()
        yield 0.1
        yield b"1\r\n"
    yield b"Content-Length: 2\r\n\r\n{}"


def _drip_body(seen: Seen):
    yield b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
    for _ in range(300):
        yield b" "
        yield 0.1


@pytest.mark.parametrize("script", [_drip_headers, _drip_body], ids=["headers", "body"])
@pytest.mark.parametrize("tls", [True, False], ids=["https", "http"])
def test_the_deadline_covers_a_server_that_drips(certs, tls, script):
    """Every read gets a byte within the read timeout, so only the overall deadline can
    end the wait; a server that finishes after 30 s would make this test fail."""
    with ScriptedServer(script, tls=(certs[1], certs[2]) if tls else None) as node:
        ep = Endpoint(node.url(), cacert=certs[0], deadline=1.5, read_timeout=5,
                      max_attempts=1)
        with open_client(ep) as client, pytest.raises(RemoteError, match=r"deadline of 1\.5 s"):
            client.request("GET", "/info")


def test_the_deadline_holds_for_a_later_request_of_the_same_client(certs):
    """The deadline thread sleeps until the first request's deadline and only then looks
    at the second's: the second request, dripping, must still end at its own deadline."""
    def script(seen: Seen):
        if len(node.seen) == 1:
            return [reply(200, b"{}")]
        return _drip_headers(seen)

    with ScriptedServer(script, tls=(certs[1], certs[2])) as node:
        ep = Endpoint(node.url(), cacert=certs[0], deadline=1.5, read_timeout=5,
                      max_attempts=1)
        with open_client(ep) as client:
            assert client.request("GET", "/info").json() == {}
            with pytest.raises(RemoteError, match=r"deadline of 1\.5 s"):
                client.request("GET", "/info")
    assert len(node.seen) == 2


def test_a_header_sent_twice_is_read_whole(certs):
    def script(seen: Seen):
        return [b"HTTP/1.1 200 OK\r\nLink: </events?iteration_token=1>; rel=\"prev\"\r\n"
                b"Link: </events?iteration_token=9>; rel=\"next\"\r\n"
                b"Content-Length: 2\r\nConnection: close\r\n\r\n[]"]

    from nodecli.http.links import next_link

    with ScriptedServer(script, tls=(certs[1], certs[2])) as node:
        url = node.url()
        with open_client(Endpoint(url, cacert=certs[0])) as client:
            resp = client.request("GET", "/events")
    link = resp.header("link") or ""
    assert "iteration_token=1" in link and "iteration_token=9" in link
    assert next_link(link, resp.url) == url + "/events?iteration_token=9"


def _event(n: int) -> dict[str, object]:
    return {"id": str(n), "time": f"2030-01-01T00:00:0{n}Z", "user_id": "u",
            "types": ["file.created"], "data": {"path": f"/f{n}"}}


def test_a_page_that_repeats_the_last_event_prints_it_once(certs, invoke, monkeypatch):
    """Page 1: events 1, 2; page 2 starts again at 2 (a node whose token points at the
    last event rather than after it): 2 is printed once."""
    pages = {None: ([1, 2], "2"), "2": ([2, 3], "3"), "3": ([], "3")}

    def script(seen: Seen):
        if seen.target.startswith("/info"):
            return [reply(200, INFO)]
        from urllib.parse import parse_qs, urlsplit

        token = parse_qs(urlsplit(seen.target).query).get("iteration_token", [None])[-1]
        ids, nxt = pages[token]
        body = json.dumps([_event(i) for i in ids]).encode()
        return [reply(200, body, [("Link", f'</events?iteration_token={nxt}>; rel="next"')])]

    monkeypatch.setenv("NODECLI_CACERT", certs[0])
    with ScriptedServer(script, tls=(certs[1], certs[2])) as node:
        r = invoke("events", "tail", "--url", node.url(), "--user", "admin",
                   "--password-stdin", "-o", "jsonl", input="pw\n")
    assert r.exit_code == 0, r
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["1", "2", "3"]
