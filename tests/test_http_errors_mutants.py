"""nodecli.http.errors at its boundaries (issue 33, item 2: the survivors of mutation
testing): the node's message from a body, the error and exit code a status maps to, TLS
failures explained, Retry-After, the backoff, why a connection could not be opened.
In process and fast: pure functions over values a real answer gives them."""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass

import pytest

from nodecli.errors import (
    AuthError,
    ConflictError,
    ExitCode,
    NodecliError,
    NotFoundError,
    RemoteError,
)
from nodecli.http.errors import (
    MAX_RETRY_AFTER,
    RETRY_STATUSES,
    backoff_delay,
    connect_failure,
    node_message,
    parse_retry_after,
    status_error,
    tls_error,
    with_not_retried,
)


@dataclass
class Login:
    kind: str = "basic"
    note: str = ""
    access_key: str | None = None

    def describe(self) -> str:
        return f"<{self.kind} login>"


# -- node_message --------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "message"), [
    (b"", None),
    (b'{"error": {"user_message": "  no such user  ", "reason": "r"}}', "no such user"),
    (b'{"error": {"reason": "the reason", "message": "m"}}', "the reason"),
    (b'{"error": {"message": "the message", "description": "d"}}', "the message"),
    (b'{"error": {"description": "the description", "detail": "x"}}', "the description"),
    (b'{"error": {"detail": "the detail"}}', "the detail"),
    (b'{"error": {"user_message": "  ", "reason": 5, "message": "third"}}', "third"),
    (b'{"error": {"code": 1}}', None),
    (b'{"reason": "top level"}', "top level"),            # no "error": the object itself
    (b'{"error": "  a plain string  "}', "a plain string"),
    (b'{"error": "   "}', None),
    (b'{"error": 7}', None),
    (b"[1, 2]", None),
    (b'"just a string"', None),
    (b"  plain\n text\tfrom   a proxy  ", "plain text from a proxy"),
    (b"   ", None),
    (b"  <html><body>Bad Gateway</body></html>", None),
    (b"\xff\xfe oops", "\ufffd\ufffd oops"),
])
def test_node_message(body, message):
    assert node_message(body) == message


def test_node_message_is_bounded():
    assert node_message(b'{"error": {"reason": "' + b"x" * 500 + b'"}}') == "x" * 300
    assert node_message(b'{"error": "' + b"y" * 500 + b'"}') == "y" * 300
    assert node_message(b"z" * 299 + b"\n" + b"w" * 50) == "z" * 299   # the first 300 bytes
    assert node_message(b"[" * 100_000) == "[" * 300                   # too deep: as text


# -- Retry-After and the backoff -----------------------------------------------------------


@pytest.mark.parametrize(("value", "seconds"), [
    ("120", 120.0), ("121", MAX_RETRY_AFTER), (" 7 ", 7.0), ("1234567890", 120.0),
    ("12345678901", None), ("-1", None), ("1.5", None), ("", None), (None, None),
])
def test_retry_after_seconds(value, seconds):
    assert parse_retry_after(value) == seconds


def test_retry_after_dates():
    from email.utils import parsedate_to_datetime

    when = "Wed, 21 Oct 2099 07:28:00 GMT"
    ts = parsedate_to_datetime(when).timestamp()
    assert parse_retry_after(when, now=ts - 120) == 120.0
    assert parse_retry_after(when, now=ts - 121) == 120.0
    assert parse_retry_after(when, now=ts) == 0.0
    assert parse_retry_after("Wed, 21 Oct 2099 07:28:00 +0100", now=ts - 3600) == 0.0
    assert 0 < parse_retry_after("Wed, 21 Oct 2099 07:28:00 GMT") <= 120  # from now
    assert parse_retry_after("Wed, 21 Oct 1999 07:28:00 GMT") == 0.0
    assert parse_retry_after("not a date at all") is None
    assert parse_retry_after("Wed, 99 Foo 2099 07:28:00 GMT") is None


def test_retry_statuses():
    assert RETRY_STATUSES == {429, 502, 503, 504}
    assert MAX_RETRY_AFTER == 120.0


def test_backoff_delay_is_full_jitter_up_to_the_cap():
    rng = random.getstate()
    try:
        random.seed(1)
        highs = {n: max(backoff_delay(n) for _ in range(400)) for n in (1, 2, 3)}
        assert 0.45 < highs[1] <= 0.5 and 0.9 < highs[2] <= 1.0 and 1.8 < highs[3] <= 2.0
        assert min(backoff_delay(1) for _ in range(400)) < 0.05
        assert 25 < max(backoff_delay(30) for _ in range(400)) <= 30.0  # capped
        assert 7 < max(backoff_delay(9, base=1.0, cap=8.0) for _ in range(400)) <= 8.0
        assert 3.5 < max(backoff_delay(3, base=1.0) for _ in range(400)) <= 4.0
    finally:
        random.setstate(rng)


# -- status_error --------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "cls", "code"), [
    (400, NodecliError, ExitCode.ERROR), (401, AuthError, ExitCode.AUTH),
    (403, AuthError, ExitCode.AUTH), (404, NotFoundError, ExitCode.NOT_FOUND),
    (409, ConflictError, ExitCode.ERROR), (428, NodecliError, ExitCode.ERROR),
    (429, RemoteError, ExitCode.REMOTE), (499, NodecliError, ExitCode.ERROR),
    (500, RemoteError, ExitCode.REMOTE), (503, RemoteError, ExitCode.REMOTE),
    (399, RemoteError, ExitCode.REMOTE), (302, RemoteError, ExitCode.REMOTE),
])
def test_status_error_class_and_exit_code(status, cls, code):
    exc = status_error(status, "the message", auth=Login(), url="https://n:9092/x")
    assert type(exc) is cls
    assert exc.exit_code == code
    assert str(exc) == "the message"
    assert exc.status == status and exc.url == "https://n:9092/x"  # type: ignore[attr-defined]
    assert exc.hint is (None if status not in (401, 403) else exc.hint)


@pytest.mark.parametrize("status", [400, 404, 409, 500])
def test_status_error_passes_the_given_hint(status):
    assert status_error(status, "m", auth=Login(), url="u", hint="do this").hint == "do this"


def test_status_error_auth_hints():
    def hint(status: int, login: Login, given: str | None = None) -> str | None:
        return status_error(status, "m", auth=login, url="u", hint=given).hint

    assert hint(401, Login("bearer")) == (
        "the request used <bearer login>; check the token's expiry and scope, and that "
        "its public key is registered with 'nodecli access-key set-verification-key'")
    assert hint(403, Login("bearer")) == "the request used <bearer login>, which may not do this"
    replace_it = ("replace it: --token-file FILE, NODECLI_TOKEN, or 'nodecli service add "
                  "NAME --url URL --force' for a saved profile")
    assert hint(401, Login("oauth", note="token file t.txt")) == (
        "the service refused the access token (token file t.txt): it may have expired, "
        "been revoked, or been issued by another service (a restarted emulator issues new "
        f"ones); {replace_it}")
    assert hint(403, Login("oauth")) == (
        "the access token (OAuth bearer token) may not do this: get one with the scope it "
        f"needs (user:all, or admin:all for the whole organization); {replace_it}")
    assert hint(401, Login("none")) == "no credentials were sent: give --user or --access-key"
    assert hint(403, Login("none")) == "the request used <none login>, which may not do this"
    assert hint(401, Login("basic", access_key="ak")) == (
        "the request used <basic login>; check the secret, and that the key exists on this "
        "node ('nodecli access-key list' as a node user)")
    assert hint(403, Login("basic", access_key="ak")) == \
        "the request used <basic login>, which may not do this"
    assert hint(401, Login("basic")) == "the request used <basic login>; check the credentials"
    assert hint(403, Login("basic")) == "the request used <basic login>, which may not do this"
    assert hint(401, Login("oauth"), given="mine") == "mine"
    assert hint(403, Login("basic"), given="mine") == "mine"


# -- tls_error -----------------------------------------------------------------------------

URL = "https://node.example:9092/info"


def test_tls_name_mismatch():
    for text in ("Hostname mismatch, certificate is not valid for 'x'",
                 "IP address mismatch, certificate is not valid for '10.0.0.1'"):
        exc = tls_error(text, URL, None)
        assert isinstance(exc, RemoteError)
        assert str(exc) == f"TLS: the certificate of node.example:9092 is not valid for " \
                           f"that name ({text})"
        assert exc.hint == "use the host name the certificate was issued for in the URL"
    # "mismatch" alone is not a name mismatch
    assert tls_error("version mismatch", URL, None) is None


@pytest.mark.parametrize("text", ["[SSL: CERTIFICATE_VERIFY_FAILED] self-signed",
                                  "certificate verify failed: unable to get issuer"])
def test_tls_untrusted(text):
    exc = tls_error(text, URL, None)
    assert str(exc) == f"TLS: the certificate of node.example:9092 is not trusted ({text})"
    assert exc.hint == ("give the node's CA with --cacert PEM (or NODECLI_CACERT; for a "
                        "test node only, --insecure)")
    exc = tls_error(text, URL, "/ca.pem", peer="service", cacert_env="NODECLI_SERVICE_CACERT")
    assert exc.hint == ("the certificate is not signed by the CA in /ca.pem: check that "
                        "--cacert names the service's CA")
    exc = tls_error(text, URL, None, peer="service", cacert_env="NODECLI_SERVICE_CACERT")
    assert exc.hint == ("give the service's CA with --cacert PEM (or NODECLI_SERVICE_CACERT; "
                        "for a test service only, --insecure)")


def test_tls_expired():
    text = "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired"
    assert tls_error(text, URL, "/ca.pem").hint == \
        "the node's certificate has expired: renew it on the node"
    assert tls_error(text, URL, None, peer="service").hint == \
        "the service's certificate has expired: renew it on the service"


@pytest.mark.parametrize("text", ["[SSL: WRONG_VERSION_NUMBER] wrong version number",
                                  "[SSL] record layer failure (_ssl.c:1000)",
                                  "packet length too long"])
def test_tls_to_plain_http(text):
    exc = tls_error(text, URL, None)
    assert str(exc) == f"TLS: node.example:9092 does not answer with TLS ({text})"
    assert exc.hint == "the node serves plain HTTP on this port: use an http:// URL"
    assert tls_error(text, URL, None, peer="service").hint == \
        "the service serves plain HTTP on this port: use an http:// URL"


@pytest.mark.parametrize("text", ["SSL: something else", "TLS alert", "ssl eof"])
def test_tls_other_handshake_failure(text):
    exc = tls_error(text, URL, None)
    assert str(exc) == f"TLS handshake with node.example:9092 failed ({text})"
    assert exc.hint is None


def test_not_tls_at_all():
    assert tls_error("Connection refused", URL, None) is None


# -- with_not_retried ----------------------------------------------------------------------

NOT_RETRIED = ("not retried automatically: the request may have taken effect; check "
               "before repeating it")


def test_with_not_retried():
    assert with_not_retried(None)(500) == NOT_RETRIED
    assert with_not_retried(lambda s: None)(500) == NOT_RETRIED
    assert with_not_retried(lambda s: "" if s == 500 else "x")(500) == NOT_RETRIED
    assert with_not_retried(lambda s: f"mine {s}")(502) == "mine 502"


# -- connect_failure -----------------------------------------------------------------------


@dataclass
class Proxy:
    host: str
    port: int


def _gai(name: str, text: str = "Name or service not known") -> socket.gaierror:
    return socket.gaierror(getattr(socket, name), text)


@pytest.mark.parametrize("name", ["EAI_NONAME", "EAI_NODATA", "EAI_FAIL"])
def test_a_name_that_does_not_exist_is_not_retried(name):
    if not hasattr(socket, name):
        pytest.skip(f"no {name} here")
    reason, hint, retry = connect_failure(_gai(name), "https://nosuch.example:9092/info")
    assert reason == "cannot connect: host nosuch.example does not resolve " \
                     "(Name or service not known)"
    assert hint == ("check the host name (a typo, or a name only a VPN or another DNS server "
                    "knows); not retried: a name that does not exist stays so")
    assert retry is False


def test_a_resolver_without_an_answer_now_is_retried():
    reason, hint, retry = connect_failure(_gai("EAI_AGAIN", "Temporary failure"),
                                          "https://n.example/info")
    assert reason == "cannot connect: host n.example does not resolve (Temporary failure)"
    assert hint == ("the DNS resolver gave no answer: check the network and the resolver "
                    "(/etc/resolv.conf)")
    assert retry is True


def test_a_gaierror_without_strerror_shows_itself():
    err = socket.gaierror("no text")
    reason, _, _ = connect_failure(err, "https://n.example/info")
    assert reason == "cannot connect: host n.example does not resolve (no text)"


def test_the_proxy_host_that_does_not_resolve():
    reason, _, retry = connect_failure(_gai("EAI_NONAME"), "https://n.example/info",
                                       Proxy("px.example", 3128))
    assert reason == "cannot connect: the proxy's host px.example does not resolve " \
                     "(Name or service not known)"
    assert retry is False


@pytest.mark.parametrize(("url", "where"), [
    ("https://n.example:9092/info", "n.example:9092"),
    ("https://n.example/info", "n.example:443"),
    ("http://n.example/info", "n.example:80"),
])
def test_refused(url, where):
    reason, hint, retry = connect_failure(ConnectionRefusedError(111, "refused"), url)
    assert reason == f"cannot connect: {where} refused the connection"
    assert hint == ("nothing listens there: is the node running, and is the port right "
                    "(nodes serve HTTPS on port 9092)?")
    assert retry is True
    reason, hint, retry = connect_failure(ConnectionRefusedError(), url, Proxy("px", 3128))
    assert reason == "cannot connect: proxy px:3128 refused the connection"
    assert hint == "nothing listens there: is the proxy running, on that port?"
    assert retry is True


def _chain(inner: BaseException, depth: int, *, context: bool = False) -> BaseException:
    exc = inner
    for i in range(depth):
        outer = OSError(f"wrapper {i}")
        if context:
            outer.__context__ = exc
        else:
            outer.__cause__ = exc
        exc = outer
    return exc


def test_the_cause_is_found_down_a_chain_of_ten():
    refused = ConnectionRefusedError()
    assert connect_failure(_chain(refused, 9), "https://n/")[0] == \
        "cannot connect: n:443 refused the connection"
    assert connect_failure(_chain(refused, 9, context=True), "https://n/")[0] == \
        "cannot connect: n:443 refused the connection"
    # the 11th link is not looked at: a chain is followed ten deep, never for ever
    outer = _chain(refused, 10)
    assert connect_failure(outer, "https://n/") == ("cannot connect: wrapper 9", None, True)


def test_a_cycle_of_causes_ends():
    a, b = OSError("a"), OSError("b")
    a.__cause__, b.__cause__ = b, a
    assert connect_failure(a, "https://n/") == ("cannot connect: a", None, True)


def test_other_failures_are_retried_with_their_text():
    assert connect_failure(ConnectionResetError("reset by peer"), "https://n/") == \
        ("cannot connect: reset by peer", None, True)
    assert connect_failure(TimeoutError(), "https://n/") == \
        ("cannot connect: TimeoutError", None, True)
