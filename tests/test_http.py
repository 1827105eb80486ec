"""The HTTP client factory against the emulator over real sockets."""

from __future__ import annotations

import pytest

from nodecli.errors import AuthError, NotFoundError, RemoteError
from nodecli.http import Auth, Endpoint, open_client
from nodecli.http_errors import parse_retry_after
from nodecli.links import next_link


def _client(emulator, auth: Auth | None = None, **kw):
    logs: list[str] = []
    ep = Endpoint(emulator.url, auth or Auth("basic", "admin", "admin-pass"), **kw)
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
    other = emulator.url.replace("127.0.0.1", "localhost")
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
