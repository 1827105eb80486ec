"""nodecli.http.client's request() and its retry loop over real sockets (a scripted
HTTPS or plain server), for the survivors of its mutation run (issue 33, item 2): what
is sent (method, JSON body, headers), which methods are retried and how many times, the
deadline spent before an attempt, a wait longer than the time left, the hints a final
failure carries, redirects logged, and what reaches the status line."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from nodecli.errors import NodecliError, RemoteError
from nodecli.http.client import USER_AGENT, Auth, Client, Endpoint
from nodecli.http.deadline import Budget
from tests.scripted_server import ScriptedServer, Seen, certificates, reply
from tests.test_client_retry_mutants import Recorder


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates(tmp_path_factory.mktemp("certs"))


OK = reply(200, b'{"ok":true}', [("Content-Type", "application/json")])


def answers(*parts: bytes):
    """A script answering the n-th request with the n-th answer (the last one after)."""
    def script(seen: Seen):
        yield parts[min(len(script.seen) - 1, len(parts) - 1)]  # type: ignore[attr-defined]
    return script


def serve(certs, *parts: bytes, tls: bool = True) -> ScriptedServer:
    script = answers(*parts)
    server = ScriptedServer(script, tls=(certs[1], certs[2]) if tls else None)
    script.seen = server.seen  # type: ignore[attr-defined]
    return server


def endpoint(server: ScriptedServer, certs, **settings: Any) -> Endpoint:
    base: dict[str, Any] = {"cacert": certs[0], "deadline": 30.0, "max_attempts": 3,
                            "label": "n1"}
    return Endpoint(server.url(), Auth(), **{**base, **settings})


def test_what_is_sent_method_body_and_headers(certs):
    with serve(certs, OK) as server, Recorder().client(endpoint(server, certs)) as c:
        c.request("post", "/a", json_body={"k": [1, 2], "s": "é"})
        c.request("PUT", "/b", json_body={"k": 1}, headers={"Content-Type": "text/x"})
        c.request("DELETE", "/c", body=b"raw")
        c.request("GET", "/d")
    a, b, d, g = server.seen
    assert (a.method, a.body, a.headers["content-type"]) == (
        "POST", json.dumps({"k": [1, 2], "s": "é"}, separators=(",", ":")).encode(),
        "application/json")
    assert (b.method, b.body, b.headers["content-type"]) == ("PUT", b'{"k":1}', "text/x")
    assert (d.method, d.body) == ("DELETE", b"raw") and "content-type" not in d.headers
    assert (g.headers["user-agent"], g.headers["accept"]) == (USER_AGENT, "application/json")


BUSY = reply(503, b'{"message": "busy now"}')


@pytest.mark.parametrize(("method", "retry", "sent"), [
    ("GET", None, 3), ("PUT", None, 3), ("DELETE", None, 3), ("HEAD", None, 3),
    ("OPTIONS", None, 3), ("POST", None, 1), ("PATCH", None, 1), ("POST", True, 3),
    ("GET", False, 1)])
def test_only_idempotent_methods_are_retried_unless_told(certs, method, retry, sent):
    told = Recorder()
    with serve(certs, BUSY) as server, told.client(endpoint(server, certs)) as c:
        with pytest.raises(RemoteError) as info:
            c.request(method, "/x", retry=retry)
        url = f"{server.url()}/x"
    assert len(server.seen) == sent and len(told.slept) == sent - 1
    body = "" if method == "HEAD" else ": busy now"
    assert info.value.message == f"{method} {url}: HTTP 503{body}"
    assert info.value.hint == (None if sent > 1 else
                               "not retried automatically: the request may have taken "
                               "effect; check before repeating it")
    if sent > 1:
        assert told.status[-1] is None and told.status[:-1] == [
            f"retry {n} of 2 in {s:.0f} s: n1: HTTP 503"
            for n, s in enumerate(told.slept, 1)]
        assert [x for x in told.log if x.startswith("! ")] == [
            f"! HTTP 503; retry {n}/2 in {s:.1f} s" for n, s in enumerate(told.slept, 1)]
    else:
        assert told.status == []


@pytest.mark.parametrize("attempts", [1, 2, 4])
def test_exactly_max_attempts_are_made(certs, attempts):
    with serve(certs, BUSY) as server, Recorder().client(
            endpoint(server, certs, max_attempts=attempts)) as c:
        with pytest.raises(RemoteError):
            c.request("GET", "/x")
    assert len(server.seen) == attempts


def test_a_success_after_retries_says_the_status_line_is_done_once(certs):
    told = Recorder()
    with serve(certs, BUSY, OK) as server, told.client(endpoint(server, certs)) as c:
        assert c.request("GET", "/x").status == 200
        c.request("GET", "/x")  # no retry: nothing more on the status line
    assert len(told.status) == 2 and told.status[1] is None


def test_a_wait_longer_than_the_time_left_is_not_waited(certs):
    told = Recorder()
    busy = reply(503, b"", [("Retry-After", "29")])
    with serve(certs, busy) as server, told.client(endpoint(server, certs, deadline=28.0)) \
            as c:
        with pytest.raises(RemoteError) as info:
            c.request("GET", "/x")
    assert len(server.seen) == 1 and told.slept == []
    assert info.value.message.endswith(": HTTP 503") and info.value.hint is None
    told = Recorder()
    with serve(certs, busy, OK) as server, told.client(endpoint(server, certs, deadline=31.0)) \
            as c:
        c.request("GET", "/x")
    assert told.slept == [29.0]


def test_a_spent_deadline_sends_nothing(certs):
    budget = Budget(5.0)
    budget.ends_at = time.monotonic() - 1
    with serve(certs, OK) as server, Recorder().client(
            endpoint(server, certs, deadline=None, budget=budget)) as c:
        with pytest.raises(RemoteError) as info:
            c.request("GET", "/x")
        url = f"{server.url()}/x"
    assert not server.seen
    assert info.value.message == (f"GET {url}: no complete answer within the command's "
                                  "deadline of 5 s (--deadline, NODECLI_DEADLINE)")


def hang_up(seen: Seen):
    raise ValueError("hang up")
    yield b""


@pytest.mark.parametrize(("method", "tls", "hint"), [
    ("GET", True, None),
    ("POST", True, "not retried: the request is not idempotent"),
    ("GET", False, "if the node serves HTTPS, use an https:// URL"),
    ("POST", False, "if the node serves HTTPS, use an https:// URL"),
])
def test_a_broken_connection_after_the_last_attempt_gives_its_hint(certs, method, tls,
                                                                   hint):
    server = ScriptedServer(hang_up, tls=(certs[1], certs[2]) if tls else None)
    with server, Recorder().client(endpoint(server, certs, max_attempts=2)) as c:
        with pytest.raises(RemoteError) as info:
            c.request(method, "/x")
        url = f"{server.url()}/x"
    tries = " after 2 attempts" if method == "GET" else ""
    assert info.value.message == (f"{method} {url}: connection broken: Server disconnected "
                                  f"without sending a response.{tries}")
    assert info.value.hint == hint


def test_redirects_are_followed_and_logged(certs):
    def script(seen: Seen):
        if seen.target == "/a":
            yield reply(302, b"", [("Location", "/b")])
        elif seen.target == "/b":
            yield reply(307, b"", [("Location", "/c")])
        else:
            yield OK

    told = Recorder()
    with ScriptedServer(script, tls=(certs[1], certs[2])) as server, \
            told.client(endpoint(server, certs)) as c:
        assert c.request("GET", "/a").url == f"{server.url()}/c"
        base = server.url()
    assert [s.target for s in server.seen] == ["/a", "/b", "/c"]
    assert [x for x in told.log if x.startswith("> redirected")] == [
        f"> redirected to {base}/b", f"> redirected to {base}/c"]


def test_a_status_not_expected_names_the_node_and_takes_the_callers_hint(certs):
    refused = reply(418, b'{"error": {"user_message": "no  tea\\nhere"}}')
    with serve(certs, refused, OK) as server, Recorder().client(endpoint(server, certs)) as c:
        with pytest.raises(NodecliError) as info:
            c.request("GET", "/x", hint_for=lambda status: f"hint for {status}")
        assert c.request("GET", "/y", expect=(200, 418)).status == 200
        url = f"{server.url()}/x"
    assert (info.value.message, info.value.hint) == (f"GET {url}: HTTP 418: no tea here",
                                                     "hint for 418")


# -- the CA file: read as data, text around its blocks, DER, refused with its name -----


def test_a_ca_file_with_text_around_its_block_or_in_der_is_trusted(certs, tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    pem = open(certs[0], "rb").read()
    noisy = tmp_path / "noisy.pem"
    noisy.write_bytes(b"Issuer: test CA \xff\xfe (not ASCII)\n" + pem + b"\ntrailer\n")
    der = tmp_path / "ca.der"
    der.write_bytes(x509.load_pem_x509_certificate(pem).public_bytes(
        serialization.Encoding.DER))
    for ca in (noisy, der):
        with serve(certs, OK) as server, Recorder().client(
                endpoint(server, certs, cacert=str(ca))) as c:
            assert c.request("GET", "/x").status == 200


@pytest.mark.parametrize("content", [b"-----BEGIN CERTIFICATE-----\nnot base64\n"
                                          b"-----END CERTIFICATE-----\n", b"\x30\x03junk"])
def test_a_ca_file_that_holds_no_certificate_is_a_usage_error_naming_it(tmp_path, content):
    from nodecli.errors import UsageError

    bad = tmp_path / "bad.pem"
    bad.write_bytes(content)
    with pytest.raises(UsageError) as info:
        Client(Endpoint("https://n.example:9092", cacert=str(bad)))
    assert info.value.message.startswith(f"cannot use CA file {bad}: "), info.value.message


@pytest.mark.parametrize("content", [b"", b" \n\t\n"])
def test_an_empty_ca_file_is_refused_not_taken_for_the_system_store(tmp_path, content):
    """ssl.create_default_context(cadata=b"") loads the system's CAs: an empty file
    would have trusted every public CA instead of the one the user named."""
    from nodecli.errors import UsageError

    empty = tmp_path / "empty.pem"
    empty.write_bytes(content)
    with pytest.raises(UsageError) as info:
        Client(Endpoint("https://n.example:9092", cacert=str(empty)))
    assert info.value.message == f"cannot use CA file {empty}: it is empty"


def test_insecure_trusts_any_certificate_and_no_ca_file_uses_the_system_store(certs):
    import ssl

    with serve(certs, OK) as server, Recorder().client(
            endpoint(server, certs, cacert=None, insecure=True)) as c:
        assert c.request("GET", "/x").status == 200
        assert c.tls_context().verify_mode == ssl.CERT_NONE
    with serve(certs, OK) as server, Recorder().client(
            endpoint(server, certs, cacert=None)) as c:
        with pytest.raises(RemoteError, match="is not trusted"):
            c.request("GET", "/x")
        assert c.tls_context().verify_mode == ssl.CERT_REQUIRED


def test_the_environments_proxy_variables_are_not_read_by_the_http_library(certs,
                                                                          monkeypatch):
    """nodecli.http.proxies reads HTTPS_PROXY and NO_PROXY and tells httpx2 exactly; a
    client told "no proxy" goes direct even with HTTPS_PROXY naming a dead port."""
    import socket

    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))  # bound, never listening: a refused connection
        for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{dead.getsockname()[1]}")
        with serve(certs, OK) as server, Recorder().client(endpoint(server, certs)) as c:
            assert c.request("GET", "/x").status == 200
            assert len(server.seen) == 1


@pytest.mark.parametrize(("path", "params", "headers", "shown"), [
    ("/a\udcff", None, None, "/a\\udcff"),
    ("/a", [("k", "v\udcfe")], None, "v\\udcfe"),
    ("/a", {"k\udcfd": "v"}, None, "k\\udcfd"),
    ("/a", None, {"X-K": "h\udcfc"}, "h\\udcfc"),
])
def test_bytes_that_are_not_utf8_are_refused_before_anything_is_sent(certs, path, params,
                                                                     headers, shown):
    from nodecli.errors import UsageError

    with serve(certs, OK) as server, Recorder().client(endpoint(server, certs)) as c:
        with pytest.raises(UsageError) as info:
            c.request("GET", path, params=params, headers=headers)
    assert not server.seen
    assert info.value.message == (f"{shown!r} holds bytes that are not UTF-8 text: ids, "
                                  "tokens and names go to the server as UTF-8")


def test_a_post_refused_keeps_the_callers_hint(certs):
    with serve(certs, BUSY) as server, Recorder().client(endpoint(server, certs)) as c:
        with pytest.raises(RemoteError) as info:
            c.request("POST", "/x", hint_for=lambda status: f"caller's hint for {status}")
    assert info.value.hint == "caller's hint for 503"


def test_a_location_on_an_answer_that_is_not_a_redirect_is_not_followed(certs):
    created = reply(201, b'{"id": "n1"}', [("Location", "/things/n1")])
    with serve(certs, created) as server, Recorder().client(endpoint(server, certs)) as c:
        resp = c.request("POST", "/things", json_body={}, expect=(201,))
    assert resp.status == 201 and [s.target for s in server.seen] == ["/things"]


def test_a_renewed_token_does_not_spend_an_attempt(certs):
    """A 401 whose token the source renews is asked again at once, outside the count:
    with max_attempts 2, then two retried statuses, three requests in all."""

    class Renewing:
        label = "test source"

        def __init__(self) -> None:
            self.renewed = 0

        def current(self) -> str:
            return f"tok-{self.renewed}"

        def seen(self) -> list[str]:
            return []

        def renew(self) -> bool:
            self.renewed += 1
            return True

    source = Renewing()
    with serve(certs, reply(401, b""), BUSY) as server, Recorder().client(Endpoint(
            server.url(), Auth("bearer", access_key="AK", source=source), cacert=certs[0],
            deadline=30.0, max_attempts=2)) as c:
        with pytest.raises(RemoteError):
            c.request("GET", "/x")
    assert [s.headers["authorization"] for s in server.seen] == [
        "Bearer tok-0", "Bearer tok-1", "Bearer tok-1"]
    assert source.renewed == 1
