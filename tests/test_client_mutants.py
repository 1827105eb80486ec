"""nodecli.http.client's parts that need no server, at their boundaries (issue 33, item 2:
the survivors of mutation testing): the headers each kind of login sends, how a login is
described, what is redacted, where a path goes, which origin gets credentials, and the
error an unexpected status becomes. In process (a real Client, no request made); what
needs a server is tested over HTTPS in test_http.py and test_https_path.py."""

from __future__ import annotations

import base64

import pytest

from nodecli.errors import AuthError, NotFoundError, RemoteError, UsageError
from nodecli.http.client import (
    DEFAULT_ACCESS_KEY_HEADER,
    IDEMPOTENT,
    USER_AGENT,
    Auth,
    Client,
    Endpoint,
    Response,
)


class Source:
    label = "token file t"

    def __init__(self) -> None:
        self.token = "minted-1"

    def current(self) -> str:
        return self.token

    def seen(self) -> list[str]:
        return ["minted-0", self.token]


def test_constants():
    assert DEFAULT_ACCESS_KEY_HEADER == "X-Vendor-AccessKey"
    assert IDEMPOTENT == {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}
    assert USER_AGENT.startswith("nodecli/")


def test_basic_headers():
    raw = base64.b64encode(b"alice:p:w").decode()
    assert Auth("basic", "alice", "p:w").headers() == {"Authorization": f"Basic {raw}"}
    assert Auth("basic").headers() == {"Authorization": "Basic " + base64.b64encode(b":")
                                       .decode()}
    assert Auth("basic", "é", "ü").headers()["Authorization"] == \
        "Basic " + base64.b64encode("é:ü".encode()).decode()


def test_bearer_headers():
    assert Auth("bearer", token="tok", access_key="ak").headers() == {
        "Authorization": "Bearer tok", "X-Vendor-AccessKey": "ak"}
    assert Auth("bearer", token="tok", access_key="ak", access_key_header="X-Key").headers() \
        == {"Authorization": "Bearer tok", "X-Key": "ak"}
    assert Auth("bearer", token="tok").headers() == {"Authorization": "Bearer tok"}
    assert Auth("bearer", token="old", source=Source()).headers() == \
        {"Authorization": "Bearer minted-1"}


def test_oauth_and_no_headers():
    assert Auth("oauth", token="at", access_key="ak").headers() == {"Authorization": "Bearer at"}
    assert Auth("oauth", source=Source()).headers() == {"Authorization": "Bearer minted-1"}
    assert Auth().headers() == {}
    assert Auth("none", "u", "p").headers() == {}


@pytest.mark.parametrize(("auth", "text"), [
    (Auth("basic", "u", "p", access_key="ak"), "access key 'ak' and its secret over HTTP Basic"),
    (Auth("basic", "u", "p"), "HTTP Basic as 'u'"),
    (Auth("bearer", token="t", access_key="ak"),
     "bearer token with access key 'ak' in header X-Vendor-AccessKey"),
    (Auth("oauth", token="t"), "OAuth bearer token"),
    (Auth(), "no credentials"),
    (Auth("basic", "u", "p", note="password from NODECLI_PASSWORD"),
     "HTTP Basic as 'u' (password from NODECLI_PASSWORD)"),
])
def test_describe(auth, text):
    assert auth.describe() == text


def test_secrets():
    assert Auth("basic", "u", "pw").secrets() == ["pw"]
    assert Auth("bearer", token="tk").secrets() == ["tk"]
    assert Auth("basic", "u", "", token="").secrets() == []
    assert Auth("bearer", token="tk", source=Source()).secrets() == ["tk", "minted-0",
                                                                      "minted-1"]
    assert "pw" not in repr(Auth("basic", "u", "pw"))
    assert "tk" not in repr(Auth("bearer", token="tk"))


def test_endpoint_defaults_and_changes():
    e = Endpoint("https://n:9092")
    assert (e.auth, e.cacert, e.insecure, e.connect_timeout, e.read_timeout, e.deadline,
            e.max_attempts, e.max_body, e.label, e.peer, e.cacert_env, e.proxy,
            e.cross_origin_redirects) == (Auth(), None, False, 10.0, 30.0, None, 4,
                                          64 * 1024 * 1024, "", "node", "NODECLI_CACERT",
                                          None, False)
    a = Auth("basic", "u", "p")
    assert e.with_auth(a) == Endpoint("https://n:9092", auth=a)
    assert e.replace(max_attempts=1).max_attempts == 1 and e.max_attempts == 4


def _resp(status: int = 200, body: bytes = b"", headers: dict | None = None) -> Response:
    return Response(status, headers or {}, body, "https://n:9092/x", 0.1)


def test_response_header_and_json():
    r = _resp(body=b'{"a": [1, 2]}', headers={"content-type": "application/json"})
    assert r.header("Content-Type") == "application/json"
    assert r.header("x-missing") is None
    assert r.json() == {"a": [1, 2]}
    with pytest.raises(RemoteError) as exc:
        _resp(body=b"not json!").json()
    assert str(exc.value) == ("https://n:9092/x: the server sent a response that is not "
                              "valid JSON (9 bytes)")
    assert exc.value.__suppress_context__
    with pytest.raises(RemoteError) as exc:
        _resp(body=b"[" * 100_000).json()
    assert str(exc.value) == "https://n:9092/x: the server sent JSON nested deeper than " \
                             "nodecli reads"


@pytest.fixture
def client():
    c = Client(Endpoint("https://n:9092/base/", auth=Auth("basic", "u", "pw-1")))
    try:
        yield c
    finally:
        c.close()


def test_url_for(client):
    assert client.url_for("https://other/a/../b") == "https://other/a/../b"  # as given
    assert client.url_for("https:///x") == "https:///x"  # not joined to the base
    assert client.url_for("Xfile") == "https://n:9092/base/Xfile"
    c = Client(Endpoint("https://n:9092/X"))
    try:
        assert c.url_for("info") == "https://n:9092/X/info"
    finally:
        c.close()
    assert client.url_for("/info") == "https://n:9092/base/info"
    assert client.url_for("info") == "https://n:9092/base/info"
    assert client.url_for("HTTPS://other/x") == "HTTPS://other/x"
    assert client.url_for("a+b.c-d://x") == "a+b.c-d://x"
    assert client.url_for("1x://y").startswith("https://n:9092/base/1x:")  # not a scheme
    assert client.url_for("-x://y").startswith("https://n:9092/base/-x:")


def test_redact_and_log(client):
    seen: list[str] = []
    c = Client(Endpoint("https://n:9092", auth=Auth("basic", "u", "pw-1")), log=seen.append)
    try:
        c.add_secret("")                  # nothing to hide: the text is kept whole
        c.add_secret("body-secret")
        c.log("pw-1 body-secret plain")
        assert seen == ["*** *** plain"]
        assert c.redact("xpw-1x") == "x***x"
    finally:
        c.close()
    assert client.redact("a b") == "a b"


def test_the_proxy_password_is_redacted():
    from nodecli.http.proxies import Proxy

    proxy = Proxy("http", "px", 3128, "pu", "px-pass")
    c = Client(Endpoint("https://n:9092", proxy=proxy))
    try:
        assert c.redact("px-pass at px") == "*** at px"
    finally:
        c.close()
    c = Client(Endpoint("https://n:9092", proxy=Proxy("http", "px", 3128, "pu", "")))
    try:
        assert c.redact("a") == "a"
    finally:
        c.close()


def test_credentials_go_to_the_endpoint_origin_only(client):
    assert client._headers_for("https://N:9092/other", {"X-A": "1"}) == {
        "X-A": "1", "Authorization": "Basic " + base64.b64encode(b"u:pw-1").decode()}
    assert client._headers_for("https://n:9093/x", {"X-A": "1"}) == {"X-A": "1"}
    assert client._headers_for("http://n:9092/x", None) == {}


@pytest.mark.parametrize(("auth", "what"), [
    (Auth("bearer", token="a\nb"), "the bearer token of bearer token with access key None"),
    (Auth("oauth", token="a\rb"), "the bearer token of OAuth bearer token"),
    (Auth("bearer", token="t", access_key="k\x00"), "the X-Vendor-AccessKey header of"),
    (Auth("basic", "u\n", "p"), None),   # base64: always safe
])
def test_a_header_that_cannot_be_sent_is_a_usage_error(auth, what):
    c = Client(Endpoint("https://n:9092", auth=auth))
    try:
        if what is None:
            assert "Authorization" in c._headers_for("https://n:9092/x", None)
            return
        with pytest.raises(UsageError) as exc:
            c._headers_for("https://n:9092/x", None)
        assert str(exc.value).startswith(what)
        assert str(exc.value).endswith("holds a line break, a control character or a "
                                       "character HTTP headers cannot carry")
        assert exc.value.hint == "a token file holds one token on one line"
    finally:
        c.close()


def test_finish(client):
    ok = _resp(204)
    assert client._finish(ok, (200, 204), "GET", None) is ok
    with pytest.raises(NotFoundError) as exc:
        client._finish(_resp(404, b'{"error": {"reason": "no\\n  such  pw-1"}}'), (200,),
                       "DELETE", None)
    assert str(exc.value) == "DELETE https://n:9092/x: HTTP 404: no such ***"
    assert exc.value.hint is None
    with pytest.raises(RemoteError) as exc:
        client._finish(_resp(500), (200,), "GET", lambda s: f"hint {s}")
    assert str(exc.value) == "GET https://n:9092/x: HTTP 500"
    assert exc.value.hint == "hint 500"
    assert exc.value.url == "https://n:9092/x"  # type: ignore[attr-defined]
    with pytest.raises(AuthError):
        client._finish(_resp(401), (200,), "GET", None)


def test_derive_keeps_the_clock_offset(client):
    client.clock_offset = 42.0
    d = client.derive(max_attempts=1)
    try:
        assert d.endpoint.max_attempts == 1 and client.endpoint.max_attempts == 4
        assert d.clock_offset == 42.0
        assert d.endpoint.auth == client.endpoint.auth
    finally:
        d.close()


def test_a_derived_client_keeps_the_callbacks(tmp_path):
    """Over HTTPS: a 503 then a 200, both dated an hour ahead. The derived client logs,
    sleeps, tells its status and the skew through the callbacks of the client it came
    from."""
    from email.utils import formatdate

    from tests.scripted_server import ScriptedServer, certificates, reply

    ca, cert, key = certificates(tmp_path)
    date = formatdate(__import__("time").time() + 3600, usegmt=True)
    answers = iter([reply(503, headers=[("Retry-After", "0"), ("Date", date)]),
                    reply(200, b"{}", [("Date", date)])])
    logs: list[str] = []
    sleeps: list[float] = []
    statuses: list[str | None] = []
    skews: list[float] = []
    with ScriptedServer(lambda seen: [next(answers)], tls=(cert, key)) as server:
        c = Client(Endpoint(server.url(), cacert=ca, max_attempts=1), log=logs.append,
                   sleep=sleeps.append, status=statuses.append, skew=skews.append)
        d = c.derive(max_attempts=2)
        try:
            assert d.request("GET", "/x").status == 200
        finally:
            d.close()
            c.close()
    assert logs
    assert sleeps == [0.0] or len(sleeps) == 1
    assert statuses[0] is not None and statuses[-1] is None
    assert len(skews) == 1 and 3500 < skews[0] < 3700
