"""The HTTP client factory against the emulator over real sockets."""

from __future__ import annotations

import pytest

from nodecli.errors import AuthError, NotFoundError, RemoteError
from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.http.errors import parse_retry_after
from nodecli.http.links import LinkError, iter_link_header, next_link


def _client(emulator, auth: Auth | None = None, **kw):
    logs: list[str] = []
    ep = emulator.endpoint(auth or Auth("basic", "admin", "admin-pass"), **kw)
    client = open_client(ep, log=logs.append)
    client._sleep = lambda s: None  # retries in tests wait for nothing
    return client, logs


def test_basic_auth_accepted_and_refused(emulator):
    client, _ = _client(emulator)
    info = client.json("GET", "/info")
    assert info["transfer_user"] == "xfer"
    bad, _ = _client(emulator, Auth("basic", "admin", "wrong"))
    with pytest.raises(AuthError) as exc:
        bad.json("GET", "/info")
    assert exc.value.status == 401
    assert "HTTP Basic as 'admin'" in (exc.value.hint or "")


def test_access_key_basic_auth(emulator):
    emulator.add_access_key("ak1", "ak-secret")
    client, _ = _client(emulator, Auth("basic", "ak1", "ak-secret"))
    assert client.json("GET", "/info")["version"]


def test_get_retried_through_503_and_resets(emulator):
    emulator.faults.push("503", "reset", "429")
    client, logs = _client(emulator)
    assert client.json("GET", "/info")["version"]
    assert sum(line.startswith("! ") for line in logs) == 3


def test_retries_give_up_with_remote_error(emulator):
    emulator.faults.push("503", "503", "503", "503")
    client, _ = _client(emulator)
    with pytest.raises(RemoteError) as exc:
        client.json("GET", "/info")
    assert exc.value.status == 503


def test_post_is_never_retried(emulator):
    emulator.faults.push("503")
    client, logs = _client(emulator)
    with pytest.raises(RemoteError):
        client.request("POST", "/access_keys", json_body={"storage": {"type": "local"}},
                       expect=(201,))
    assert not any(line.startswith("! ") for line in logs)
    assert emulator.state.access_keys == {}


def test_not_found_maps_to_not_found(emulator):
    client, _ = _client(emulator)
    with pytest.raises(NotFoundError) as exc:
        client.json("GET", "/no/such/thing")
    assert "no such resource" in str(exc.value)


def test_secrets_redacted_from_verbose_log(emulator):
    client, logs = _client(emulator, Auth("basic", "admin", "admin-pass"))
    client.json("GET", "/info")
    text = "\n".join(logs)
    assert "admin-pass" not in text
    assert "YWRtaW46YWRtaW4tcGFzcw" not in text  # base64 of admin:admin-pass
    assert "GET" in text


def test_credentials_never_sent_to_another_origin(emulator):
    client, _logs = _client(emulator)
    other = emulator.url.replace("localhost", "127.0.0.1")
    assert other != emulator.url  # the same server under another origin
    with pytest.raises(AuthError):
        client.json("GET", other + "/info")


def test_non_json_body_is_a_clear_remote_error(emulator):
    emulator.faults.push("garbage")
    client, _ = _client(emulator)
    with pytest.raises(RemoteError, match="not valid JSON"):
        client.json("GET", "/info")


def test_tls_refused_without_ca_and_accepted_with_it(tls_emulator):
    ep = Endpoint(tls_emulator.url, Auth("basic", "admin", "admin-pass"), max_attempts=1)
    with pytest.raises(RemoteError, match="not trusted") as exc:
        open_client(ep).json("GET", "/info")
    assert "--cacert" in (exc.value.hint or "")
    ok = Endpoint(tls_emulator.url, Auth("basic", "admin", "admin-pass"),
                  cacert=tls_emulator.ca_file)
    assert open_client(ok).json("GET", "/info")["version"]
    insecure = Endpoint(tls_emulator.url, Auth("basic", "admin", "admin-pass"), insecure=True)
    assert open_client(insecure).json("GET", "/info")["version"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("5", 5.0), ("0", 0.0), ("99999", 120.0), ("soon", None), ("", None), (None, None),
     ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)],
)
def test_retry_after(value, expected):
    assert parse_retry_after(value) == expected


def test_link_next_per_rfc8288():
    base = "https://node:9092/events?count=10"
    assert next_link('<https://node:9092/events?iteration_token=1440571>; rel="next"', base) == \
        "https://node:9092/events?iteration_token=1440571"
    assert next_link('</events?iteration_token=7&count=10>; rel=next', base) == \
        "https://node:9092/events?iteration_token=7&count=10"
    assert next_link('<a>; rel="prev", <b>; title="x, y"; rel="last next"', base) == \
        "https://node:9092/b"
    assert next_link('<a>; rel="prev"', base) is None
    assert next_link(None, base) is None


@pytest.mark.parametrize("header", [
    '</events?iteration_token=9>; rel="NEXT"',
    '</events?iteration_token=9>; rel="Next prev"',
    '</events?iteration_token=9>; rel=nExT',
    '</x>; rel="prev", </events?iteration_token=9>; REL="last Next"',
])
def test_link_relation_types_compare_case_insensitively(header):
    # RFC 8288 section 2.1.1: relation types (and parameter names) are case-insensitive
    assert next_link(header, "http://node:9092/events") == \
        "http://node:9092/events?iteration_token=9"


def test_link_rel_must_be_a_whole_token():
    assert next_link('</a>; rel="nextpage"', "http://node/") is None
    assert next_link('</a>; rel="Prev"', "http://node/") is None


def test_retry_after_http_date_relative_to_the_given_now():
    from email.utils import format_datetime, parsedate_to_datetime

    when = "Wed, 21 Oct 2099 07:28:00 GMT"
    ts = parsedate_to_datetime(when).timestamp()
    assert parse_retry_after(when, now=ts - 30) == 30.0
    assert parse_retry_after(when, now=ts + 30) == 0.0  # in the past: retry at once
    # "-0000" means no time zone known (RFC 5322): not usable, not guessed
    assert parse_retry_after("Wed, 21 Oct 2099 07:28:00 -0000", now=ts) is None
    assert format_datetime(parsedate_to_datetime(when)) == "Wed, 21 Oct 2099 07:28:00 +0000"


# -- the Link parser, case by case (RFC 8288 section 3; lenient with garbage) --------------


@pytest.mark.parametrize(("value", "links"), [
    ("<a>", [("a", {})]),
    (' ,\t<a> ; rel = "next" ; title="x\\"y\\\\z"',
     [("a", {"rel": "next", "title": 'x"y\\z'})]),
    ("<a>;rel=next;rel=prev", [("a", {"rel": "next"})]),  # the first occurrence counts
    ("<a>; REL=Next; Title*=UTF-8''x", [("a", {"rel": "Next", "title*": "UTF-8''x"})]),
    ("junk, <b>; rel=next", [("b", {"rel": "next"})]),
    ("junk <b>; rel=next", []),
    ('<a>; rel="x, y", <b>; rel=next', [("a", {"rel": "x, y"}), ("b", {"rel": "next"})]),
    ("<a>; flag; rel=next", [("a", {"flag": "", "rel": "next"})]),
    ('<a>; rel="unterminated', [("a", {"rel": "unterminated"})]),
    ("<a; rel=next", []),
    ("< spaced >; rel=next", [("spaced", {"rel": "next"})]),
    ("<a>; rel=next junk; x=1, <b>", [("a", {"rel": "next"}), ("b", {})]),
    ("<a>; =bad; rel=next", [("a", {})]),
    ('<a>;rel="";x', [("a", {"rel": "", "x": ""})]),
    ("<a>,<b>,,<c>", [("a", {}), ("b", {}), ("c", {})]),
    ("<a>; rel=next\t;\tx=y", [("a", {"rel": "next", "x": "y"})]),
    ("<a>; rel=a;b, <c>", [("a", {"rel": "a", "b": ""}), ("c", {})]),
    ('<a>; x="\\"', [("a", {"x": '"'})]),
    ('<a>; x="1"; y=2', [("a", {"x": "1", "y": "2"})]),
    ("<a>; x=", [("a", {"x": ""})]),
    ("<a>;x =  y ,<b>", [("a", {"x": "y"}), ("b", {})]),
    ("<a>; rel=next <c>, <b>", [("a", {"rel": "next"}), ("b", {})]),  # junk up to ","
    ("<a>, ", [("a", {})]),                       # trailing separators
    ("<a>,", [("a", {})]),
    ("XX<a>; rel=next", []),                       # garbage without a comma: nothing
    ("junk, <b>, <c>", [("b", {}), ("c", {})]),    # garbage skipped to the NEXT comma
    ("junk,<b>", [("b", {})]),
    ("<a>X; rel=next", [("a", {})]),               # parameters start with ";" only
    ("<a>; rel=Xy", [("a", {"rel": "Xy"})]),
    ('<a>; x="ab\\', [("a", {"x": "ab\\"})]),    # a backslash as the last character
    ("", []),
    (None, []),
    ("<a>" + " " * (64 * 1024 - 3), [("a", {})]),  # exactly the size limit
    ("<a>" + " " * (64 * 1024 - 2), []),           # one more: ignored entirely
])
def test_iter_link_header_cases(value, links):
    assert list(iter_link_header(value)) == links


@pytest.mark.parametrize(("value", "problem"), [
    ("<ftp://x/e>; rel=next", "'ftp://x/e': not an http or https URL with a host"),
    ("<https://h:0/e>; rel=next", "'https://h:0/e': port 0"),
    ("<https://h:99999/e>; rel=next", "'https://h:99999/e': Port out of range 0-65535"),
    ("<https://[::1/e>; rel=next", "'https://[::1/e': Invalid IPv6 URL"),
    ("<http:e>; rel=next", "'http:e': not an http or https URL with a host"),
    ("<" + "x" * 200 + ":/>; rel=next", f"{'x' * 120!r}: not an http or https URL with a host"),
])
def test_unusable_next_link_is_a_link_error(value, problem):
    with pytest.raises(LinkError) as exc:
        next_link(value, "https://node:9092/events?count=10")
    assert str(exc.value) == problem


@pytest.mark.parametrize(("value", "url"), [
    ("<http://other:1/e>; rel=next", "http://other:1/e"),          # another host is fine
    ("<//other/e>; rel=next", "https://other/e"),
    ("<>; rel=next, </b>; rel=next", "https://node:9092/b"),         # an empty target skipped
    ("</a>; rel=prev, </b>; rel=next", "https://node:9092/b"),
    ("</a>; rel=next, </b>; rel=next", "https://node:9092/a"),       # the first one
    ("</a>; rel=\"first\tnext\"", "https://node:9092/a"),
    ("</a>; rel=\"  next  \"", "https://node:9092/a"),
    ("</a>; rel=next; rel=prev", "https://node:9092/a"),
    ("</a>; rel=prev; rel=next", None),
    ("</a>; title=next", None),
])
def test_next_link_choice(value, url):
    assert next_link(value, "https://node:9092/events?count=10") == url


# -- redaction ----------------------------------------------------------------------------


def test_auth_secrets_are_the_password_and_the_token():
    assert Auth("basic", "u", "pw").secrets() == ["pw"]
    assert Auth("bearer", token="tok", access_key="ak").secrets() == ["tok"]
    assert Auth("oauth", token="tok").secrets() == ["tok"]
    assert Auth("basic", "u", "").secrets() == [] and Auth().secrets() == []


def test_every_secret_redacted_from_messages_and_log_lines(emulator):
    client, logs = _client(emulator, Auth("basic", "admin", "admin-pass"))
    client.add_secret("")  # nothing to redact: text stays as it is
    client.add_secret("body-secret")
    assert client.redact("plain text") == "plain text"
    assert client.redact("admin-pass, body-secret and admin-pass again") == \
        "***, *** and *** again"
    with pytest.raises(NotFoundError) as exc:
        client.json("GET", "/no/such/path?k=body-secret&p=admin-pass")
    assert "body-secret" not in str(exc.value) and "admin-pass" not in str(exc.value)
    assert "k=***&p=***" in str(exc.value)
    client.log("sent body-secret with admin-pass")
    assert logs[-1] == "sent *** with ***"
    assert all("body-secret" not in line and "admin-pass" not in line for line in logs)
    assert any("k=***" in line for line in logs)


def test_no_log_callable_means_no_logging(emulator):
    client = open_client(emulator.endpoint(Auth("basic", "admin", "admin-pass")))
    client.log("nothing happens")  # and nothing fails
    assert client.json("GET", "/info")["transfer_user"] == "xfer"


def test_secrets_never_show_in_a_repr():
    from nodecli.profiles.node import NodeFlags

    auth = Auth("basic", "admin", "pw-123", token="tok-456")
    text = repr(Endpoint("https://x", auth)) + repr(NodeFlags(password="pw-789"))
    assert "pw-123" not in text and "tok-456" not in text and "pw-789" not in text
    assert "admin" in text  # (the rest is shown)
