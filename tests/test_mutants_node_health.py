"""nodecli.node.health at its boundaries (issue 33, item 2: the survivors of its mutation
run). In process: --warn/--crit parsing, which state wins, each threshold AT equality
and just short of it (a certificate's days left, a token's seconds left), the version's
features at the version that brings them. The checks that ask a node are proven over
HTTPS in tests/test_health_states.py and below against a scripted server."""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import pytest

from nodecli.errors import UsageError
from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.node.health import (
    CRITICAL,
    DEFAULTS,
    OK,
    SKIPPED,
    UNKNOWN,
    WARNING,
    Check,
    Thresholds,
    _cert_check,
    _token,
    _version,
    worst,
)
from tests.test_mutants_fsutil import watch as watch  # the fixture (an audit hook)

DAY = 86400.0


def test_the_defaults():
    t = Thresholds()
    assert t.warn == {"cert": 30 * DAY, "skew": 2.0, "fresh": 3600.0, "token": 600.0,
                      "failed": 1.0}
    assert t.crit == {"cert": 7 * DAY, "skew": 5.0, "fresh": DAY, "token": 60.0,
                      "failed": 10.0}


def test_warn_and_crit_set_their_own_limits():
    t = Thresholds()
    t.update(" cert=10d, skew=3s,fresh=2h ,token=5m,failed=2.5", "warn")
    assert t.warn == {"cert": 10 * DAY, "skew": 3.0, "fresh": 7200.0, "token": 300.0,
                      "failed": 2.5}
    assert t.crit == {k: v[1] for k, v in DEFAULTS.items()}
    t.update("failed=4", "crit")
    assert t.crit["failed"] == 4.0 and t.warn["failed"] == 2.5
    for nothing in (None, ""):
        t.update(nothing, "warn")
    assert t.warn["failed"] == 2.5


@pytest.mark.parametrize("item", ["bogus=1", "cert=", "cert", "=1", "Cert=1d"])
def test_a_limit_is_name_equals_value(item):
    with pytest.raises(UsageError) as e:
        Thresholds().update(f"skew=1s,{item}", "crit")
    assert str(e.value) == (f"--crit: {item!r} is not NAME=VALUE with NAME one of cert, "
                            "skew, fresh, token, failed")


@pytest.mark.parametrize("item", ["cert=soon", "failed=many", "skew=1", "skew=1s=2",
                                  "token=" + "9" * 40])
def test_a_limit_is_a_duration_or_a_count(item):
    with pytest.raises(UsageError) as e:
        Thresholds().update(item, "warn")
    assert str(e.value) == (f"--warn: {item[:40]!r}: a duration (30d, 2s) or, for failed, "
                            "a count")


def test_a_refused_item_is_shown_in_40_characters():
    with pytest.raises(UsageError) as e:
        Thresholds().update("x" * 50, "warn")
    assert repr("x" * 40) in str(e.value) and "x" * 41 not in str(e.value)


@pytest.mark.parametrize(("name", "value", "state"), [
    ("skew", 1.999, OK), ("skew", 2.0, WARNING), ("skew", 4.999, WARNING),
    ("skew", 5.0, CRITICAL), ("failed", 0, OK), ("failed", 1, WARNING),
    ("failed", 9, WARNING), ("failed", 10, CRITICAL), ("failed", 11, CRITICAL)])
def test_a_growing_value_reaches_each_threshold_at_equality(name, value, state):
    from nodecli.node.health import _up

    assert _up(value, name, Thresholds()) == state


def test_growing_thresholds_given_are_used():
    from nodecli.node.health import _up

    t = Thresholds()
    t.update("failed=3", "warn")
    t.update("failed=5", "crit")
    assert [_up(n, "failed", t) for n in range(7)] == [OK] * 3 + [WARNING] * 2 + \
        [CRITICAL] * 2


def _c(*states: str) -> list[Check]:
    return [Check(f"c{i}", s, "") for i, s in enumerate(states)]


@pytest.mark.parametrize(("states", "want"), [
    ((), OK), ((SKIPPED,), OK), ((OK, SKIPPED), OK), ((OK, UNKNOWN), UNKNOWN),
    ((UNKNOWN, WARNING), WARNING), ((WARNING, UNKNOWN), WARNING),
    ((CRITICAL, UNKNOWN), CRITICAL), ((UNKNOWN, CRITICAL, WARNING), CRITICAL),
    ((SKIPPED, UNKNOWN, OK), UNKNOWN)])
def test_the_worst_state_wins_and_skipped_decides_nothing(states, want):
    assert worst(_c(*states)) == want


def test_a_check_as_a_dict():
    assert Check("clock", OK, "fine", 1.5, "s").as_dict() == {
        "check": "clock", "state": OK, "reason": "fine", "value": 1.5}


# -- the certificate ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    """(DER of a certificate, its not-after)."""
    from pathlib import Path

    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    from tests.scripted_server import certificates

    pem = Path(certificates(tmp_path_factory.mktemp("certs"))[1]).read_bytes()
    c = x509.load_pem_x509_certificate(pem)
    return c.public_bytes(Encoding.DER), c.not_valid_after_utc


@pytest.mark.parametrize(("left", "state", "reason"), [
    (30 * DAY + 1, OK, "expires {when} (30 days left)"),
    (30 * DAY, WARNING, "expires {when} (30 days left)"),
    (7 * DAY + 1, WARNING, "expires {when} (7 days left)"),
    (7 * DAY, CRITICAL, "expires {when} (7 days left)"),
    (0.5, CRITICAL, "expires {when} (0 days left)"),
    (4320.0, CRITICAL, "expires {when} (0 days left)"),  # 0.05 d: a value of 0.1
    (0.0, CRITICAL, "expired on {when} (0 days ago)"),
    (-3 * DAY, CRITICAL, "expired on {when} (3 days ago)"),
    (-1.25 * DAY, CRITICAL, "expired on {when} (1 days ago)")])
def test_certificate_days_left_at_each_threshold(cert, left, state, reason):
    der, ends = cert
    got = _cert_check(der, None, Thresholds(), ends.timestamp() - left)
    assert (got.name, got.state, got.reason, got.value, got.unit) == (
        "certificate", state, reason.format(when=f"{ends:%Y-%m-%d}"),
        round(left / DAY, 1), "d")


def test_custom_certificate_thresholds_are_used(cert):
    der, ends = cert
    t = Thresholds()
    t.update("cert=2d", "warn")
    t.update("cert=1d", "crit")
    assert _cert_check(der, None, t, ends.timestamp() - 2 * DAY - 1).state == OK
    assert _cert_check(der, None, t, ends.timestamp() - 2 * DAY).state == WARNING
    assert _cert_check(der, None, t, ends.timestamp() - DAY).state == CRITICAL


def test_an_untrusted_certificate_is_critical_and_says_why(cert):
    der, ends = cert
    got = _cert_check(der, "x" * 200, Thresholds(), ends.timestamp() - 100.54 * DAY)
    assert (got.name, got.state, got.reason, got.value, got.unit) == (
        "certificate", CRITICAL, f"not trusted: {'x' * 120} (expires {ends:%Y-%m-%d})",
        100.5, "d")  # days to the tenth
    expired = _cert_check(der, "self-signed", Thresholds(), ends.timestamp() + DAY)
    assert expired.reason.startswith("expired on ")


@pytest.mark.parametrize("der", [None, b""])
def test_no_certificate_shown_is_unknown(der):
    got = _cert_check(der, None, Thresholds(), 0.0)
    assert (got.name, got.state, got.reason) == ("certificate", UNKNOWN,
                                                 "the node showed no certificate")


# -- the version -------------------------------------------------------------------------

@pytest.mark.parametrize(("version", "state", "reason"), [
    ("3.8.0", OK, "3.8.0: every feature nodecli uses"),
    ("4.4.5", OK, "4.4.5: every feature nodecli uses"),
    ("3.7.9", WARNING, "3.7.9: without per-key activity logging, bearer tokens"),
    ("3.7.4", WARNING, "3.7.4: without per-key activity logging, bearer tokens"),
    ("3.7.3", WARNING, "3.7.3: without file lock events, per-key activity logging, "
                       "bearer tokens"),
    ("3.6.0", WARNING, "3.6.0: without events by id, file lock events, per-key activity "
                       "logging, bearer tokens"),
    ("3.5.9", WARNING, "3.5.9: without events, events by id, file lock events, per-key "
                       "activity logging, bearer tokens")])
def test_the_version_lacks_only_what_came_after_it(version, state, reason):
    got = _version({"version": version})
    assert (got.name, got.state, got.reason) == ("version", state, reason)


@pytest.mark.parametrize("info", [{}, {"version": ""}, {"version": 4}])
def test_no_version_is_unknown(info):
    got = _version(info)
    assert (got.name, got.state, got.reason) == ("version", UNKNOWN,
                                                 "the node says no version")


# -- the token's expiry ------------------------------------------------------------------

NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC).timestamp()


def _bearer_token(expires_at) -> str:
    from nodecli.tokens.wire import encode_token

    payload = ('{"user_id":"u","scope":"node.ak1:user:all","auth_type":"access_key",'
               f'"expires_at":{expires_at}}}').encode()
    return encode_token(payload, b"not checked here")


def _token_check(token: str | None, kind: str = "bearer", source=None, t=None):
    auth = Auth(kind, token=token, access_key="ak1", source=source)
    with open_client(Endpoint("https://node.invalid", auth)) as client:
        return _token(client, t or Thresholds(), NOW)


@pytest.mark.parametrize(("left", "state", "reason"), [
    (601, OK, "expires in 10m 1s"), (600, WARNING, "expires in 10m"),
    (61, WARNING, "expires in 1m 1s"), (60, CRITICAL, "expires in 1m"),
    (1, CRITICAL, "expires in 1s")])
def test_token_seconds_left_at_each_threshold(left, state, reason):
    got = _token_check(_bearer_token(f'"2026-06-01T12:{left // 60:02d}:{left % 60:02d}Z"'))
    assert (got.name, got.state, got.reason, got.value, got.unit) == (
        "token", state, reason, float(left), "s")


@pytest.mark.parametrize(("expires", "reason"), [(NOW, "expired 0s ago"),
                                                 (NOW - 90, "expired 1m 30s ago")])
def test_a_token_at_or_past_its_expiry_is_expired(expires, reason):
    got = _token_check(_bearer_token(int(expires)))
    assert (got.name, got.state, got.reason, got.value, got.unit) == (
        "token", CRITICAL, reason, 0.0, "s")


def test_token_thresholds_given_are_used():
    t = Thresholds()
    t.update("token=2m", "warn")
    t.update("token=30s", "crit")
    assert _token_check(_bearer_token(int(NOW + 121)), t=t).state == OK
    assert _token_check(_bearer_token(int(NOW + 120)), t=t).state == WARNING
    assert _token_check(_bearer_token(int(NOW + 31)), t=t).state == WARNING
    assert _token_check(_bearer_token(int(NOW + 30)), t=t).state == CRITICAL


def test_no_token_check_without_a_bearer_login_and_none_for_a_minted_one():
    assert _token_check(None, kind="basic") is None

    class Minted:
        minted = True

        def current(self) -> str:
            return "x"

    got = _token_check(None, source=Minted())
    assert (got.name, got.state, got.reason) == ("token", OK,
                                                 "minted here, renewed before it expires")


def test_a_token_from_a_source_that_does_not_mint_is_read_for_its_expiry():
    class File:
        def current(self) -> str:
            return _bearer_token(int(NOW + 30))

    got = _token_check(None, source=File())
    assert (got.name, got.state, got.reason) == ("token", CRITICAL, "expires in 30s")


@pytest.mark.parametrize("token", ["", "not a token", None])
def test_a_token_that_does_not_decode_is_unknown(token):
    got = _token_check(token)
    assert (got.name, got.state, got.reason) == ("token", UNKNOWN,
                                                 "the bearer token does not decode")


# -- every check over HTTPS, its words said exactly (a scripted node) ---------------------

class Node:
    """A node whose /info, /events, /ops/transfers and /access_keys/ak1 the test sets
    (one server for the module)."""

    def __init__(self, certs) -> None:
        from tests.scripted_server import ScriptedServer

        self.ca = certs[0]
        self.server = ScriptedServer(self._answer, tls=(certs[1], certs[2]))
        self.reset()

    def reset(self) -> None:
        self.info: dict = {"version": "4.1.0", "current_time": "2026-06-01T12:00:03Z",
                           "settings": [{"name": "activity_event_logging", "value": True}]}
        self.events: list = [{"id": "1", "time": "2026-06-01T11:59:00Z", "user_id": "a",
                              "types": ["file.created"], "data": {}}]
        self.transfers: list = []
        self.key: dict | int = {"id": "ak1"}
        self.error = "no key"
        self.date: str | None = None  # a Date header on every answer
        self.server.seen.clear()

    def _answer(self, seen):
        import json

        from tests.scripted_server import reply

        path, _, query = seen.target.partition("?")
        body = {"/info": self.info, "/events": self.events, "/ops/transfers": self.transfers,
                "/access_keys/ak1": self.key, "/access_keys/self": self.key}.get(path)
        if isinstance(body, int) or body is None:
            status = body or 404
            return [reply(status, json.dumps({"error": {"user_message": self.error}}).encode(),
                          [("Content-Type", "application/json")])]
        headers = [("Content-Type", "application/json")]
        if self.date is not None:
            headers.append(("Date", self.date))
        if path == "/events":  # as a node does: only events at or after after_time
            from urllib.parse import parse_qs

            after = parse_qs(query).get("after_time", [""])[0]
            body = [e for e in body if e["time"] >= after]
        if path in ("/events", "/ops/transfers"):
            body = [] if "iteration_token=" in query else body
            headers.append(("Link", f'<{path}?iteration_token=9>; rel="next"'))
        return [reply(200, json.dumps(body).encode(), headers)]

    def checks(self, access_key=None, local_key=None, now=NOW, auth=None) -> dict[str, tuple]:
        return {c.name: (c.state, c.reason, c.value)
                for c in self.run(access_key, local_key, now, auth)}

    def run(self, access_key=None, local_key=None, now=NOW, auth=None) -> list[Check]:
        from nodecli.node.health import run_checks

        auth = auth or Auth("basic", username="admin", password="pw-health")
        with open_client(Endpoint(self.server.url("127.0.0.1"), auth, cacert=self.ca,
                                  max_attempts=1)) as client:
            return run_checks(client, access_key=access_key, local_key=local_key,
                              thresholds=Thresholds(), now=now)


@pytest.fixture(scope="module")
def node_server(tmp_path_factory):
    from tests.scripted_server import certificates

    node = Node(certificates(tmp_path_factory.mktemp("certs")))
    yield node
    node.server.close()


@pytest.fixture
def node(node_server):
    node_server.reset()
    return node_server


def test_a_well_node_says_each_check_in_its_words(node):
    got = node.checks()
    cert = got.pop("certificate")
    assert cert[0] == OK and cert[1].startswith("expires ")
    assert got == {
        "reachable": (OK, "GET /info answered (basic login)", None),
        "clock": (WARNING, "3.0 s ahead of this machine (/info current_time)", 3.0),
        "version": (OK, "4.1.0: every feature nodecli uses", None),
        "logging": (OK, "activity event logging is on", None),
        "fresh events": (OK, "an event within the last 1h", None),
        "failed transfers": (OK, "0 in the last hour", 0.0)}
    asked = [s.target.partition("?")[0] for s in node.server.seen]
    assert asked == ["/info", "/ops/transfers", "/events"]


def test_a_clock_behind_and_logging_off(node):
    node.info["current_time"] = "2026-06-01T11:59:59Z"
    node.info["settings"] = [{"name": "activity_event_logging", "value": False}]
    got = node.checks()
    assert got["clock"] == (OK, "1.0 s behind this machine (/info current_time)", -1.0)
    assert got["logging"] == (WARNING, "activity event logging is off: the node logs no "
                                       "events", None)


def test_a_node_that_says_no_logging_or_time(node):
    node.info = {"version": "4.1.0"}
    got = node.checks()
    assert got["logging"] == (SKIPPED, "the node does not report activity_event_logging",
                              None)
    assert got["clock"] == (UNKNOWN, "the node says no time", None)  # and no Date header


def test_no_event_within_the_day_or_only_within_it(node):
    node.events = []
    assert node.checks()["fresh events"] == (CRITICAL, "no event in the last 1d", None)


@pytest.mark.parametrize(("key", "state", "reason"), [
    ({"id": "ak1", "configuration": {"activity_event_logging": False}}, WARNING,
     "ak1: logging off for this key"),
    ({"id": "ak1", "configuration": {"activity_event_logging": True}}, OK, "ak1: logged"),
    ({"id": "ak1"}, OK, "ak1: follows the node setting"),
    (404, UNKNOWN, "ak1: GET {url}/access_keys/ak1: HTTP 404: no key")])
def test_the_keys_own_logging(node, key, state, reason):
    node.key = key
    got = node.checks(access_key="ak1")
    url = node.server.url("127.0.0.1")
    assert got["key logging"] == (state, reason.format(url=url), None)


def test_the_verification_key_against_the_local_one(node):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.tokens.keys import key_fingerprint

    mine = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def pem(k) -> str:
        return k.public_key().public_bytes(
            serialization.Encoding.PEM,
            serialization.PublicFormat.SubjectPublicKeyInfo).decode()

    fp, ofp = key_fingerprint(mine), key_fingerprint(other)
    cases = [({"id": "ak1"}, mine, (WARNING, "ak1 has none registered: bearer tokens are "
                                             "refused")),
             ({"token_verification_key": " "}, mine, (WARNING, "ak1 has none registered: "
                                                               "bearer tokens are refused")),
             ({"token_verification_key": pem(mine)}, None,
              (UNKNOWN, "no local key pair for ak1")),
             ({"token_verification_key": "-----BEGIN PUBLIC KEY-----\nxx"}, mine,
              (CRITICAL, "ak1: the registered key is unreadable")),
             ({"token_verification_key": pem(other)}, mine,
              (CRITICAL, f"ak1: registered {ofp} is not the local key {fp}")),
             ({"token_verification_key": pem(mine)}, mine,
              (OK, f"ak1: {fp} matches the local key")),
             (403, mine, (UNKNOWN, f"ak1: GET {node.server.url('127.0.0.1')}/access_keys/"
                                   "ak1: HTTP 403: no key"))]
    for key, local, want in cases:
        node.key = key
        state, reason, _ = node.checks(access_key="ak1", local_key=local)[
            "verification key"]
        assert (state, reason) == want, key


def test_a_bearer_login_asks_its_key_and_skips_what_a_token_may_not_read(node):
    token = _bearer_token(int(NOW + 3600))
    got = node.checks(auth=Auth("bearer", token=token, access_key="ak1"))
    got.pop("certificate")
    assert got == {
        "reachable": (OK, "GET /access_keys/self answered (bearer login)", None),
        "clock": (UNKNOWN, "the node says no time", None),
        "version": (SKIPPED, "a bearer token may not read GET /info: the version is not "
                             "known", None),
        "logging": (SKIPPED, "a bearer token may not read GET /info: the node's "
                             "activity_event_logging is not known", None),
        "fresh events": (OK, "an event within the last 1h", None),
        "failed transfers": (OK, "0 in the last hour", 0.0),
        "token": (OK, "expires in 1h", 3600.0)}
    assert [s.target.partition("?")[0] for s in node.server.seen] == [
        "/access_keys/self", "/ops/transfers", "/events"]


def test_an_unreachable_node_is_one_critical_line(node):
    node.info = 500
    url = node.server.url("127.0.0.1")
    got = node.checks()
    assert got == {"reachable": (CRITICAL, f"GET /info: remote: GET {url}/info: HTTP 500: "
                                           "no key", None)}
    node.key = 401
    got = node.checks(auth=Auth("bearer", token="tok-401-x", access_key="ak1"))
    assert list(got) == ["reachable"]
    assert got["reachable"][1].startswith(f"GET /access_keys/self: auth: GET {url}/")


def test_info_that_is_no_object_is_critical(node):
    node.info = [1]
    assert node.checks() == {"reachable": (CRITICAL, "GET /info did not answer with an "
                                                     "object", None)}


# -- the certificate when the client's connection did not show one ------------------------

def test_a_plain_http_node_or_one_through_a_proxy_is_not_probed():
    from nodecli.http.proxies import Proxy
    from nodecli.node.health import _cert

    with open_client(Endpoint("http://127.0.0.1:9", Auth())) as c:
        got = _cert(c, Thresholds(), NOW)
    assert (got.name, got.state, got.reason) == ("certificate", UNKNOWN,
                                                 "plain http: no certificate")
    proxy = Proxy("http", "127.0.0.1", 9)
    with open_client(Endpoint("https://127.0.0.1:9", Auth(), proxy=proxy)) as c:
        got = _cert(c, Thresholds(), NOW)
    assert (got.name, got.state, got.reason) == ("certificate", UNKNOWN,
                                                 "through a proxy: not probed")


@pytest.mark.timeout(60)
def test_its_own_handshake_with_a_silent_node_is_bounded_by_the_wait_given():
    import socket
    import ssl

    from nodecli.node.health import _peer_certificate

    with socket.socket() as silent:  # connects (the backlog), never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        with pytest.raises(TimeoutError):
            _peer_certificate(silent.getsockname(), ssl.create_default_context(), 0.2)


def test_an_untrusted_node_says_why_in_its_certificate_check(node, tmp_path):
    from nodecli.node.health import run_checks
    from tests.scripted_server import certificates

    other_ca = certificates(tmp_path / "other")[0]  # a CA that did not sign the node's
    with open_client(Endpoint(node.server.url("127.0.0.1"), Auth("basic", username="a",
                                                                  password="pw-health"),
                              cacert=other_ca, max_attempts=1)) as client:
        got = {c.name: c for c in run_checks(client, access_key=None, local_key=None,
                                             thresholds=Thresholds(), now=NOW)}
    assert list(got) == ["reachable", "certificate"]
    assert got["reachable"].state == CRITICAL
    port = node.server.port
    assert got["reachable"].reason.startswith(
        f"GET /info: remote: TLS: the certificate of 127.0.0.1:{port} is not trusted")
    assert (got["certificate"].state, got["certificate"].reason[:13]) == (CRITICAL,
                                                                         "not trusted: ")


def test_a_long_error_is_cut_to_its_check(node):
    node.error = "e" * 400
    node.key = 404
    got = node.checks(access_key="ak1", local_key=object())
    for name, limit in (("key logging", 150), ("verification key", 150)):
        reason = got[name][1]
        assert reason.startswith("ak1: GET ") and len(reason) == len("ak1: ") + limit, name
    node.info = 500
    reason = node.checks()["reachable"][1]
    assert reason.startswith("GET /info: remote: GET ")
    assert len(reason) == len("GET /info: remote: ") + 200


def test_its_own_handshake_reads_the_certificate_trusted_or_not(node, tmp_path):
    from nodecli.node.health import _cert
    from tests.scripted_server import certificates

    url = node.server.url("127.0.0.1")
    with open_client(Endpoint(url, Auth(), cacert=node.ca)) as c:  # nothing asked yet
        got = _cert(c, Thresholds(), NOW)
    assert (got.state, got.reason[:8]) == (OK, "expires ")
    assert got.reason.endswith(" days left)")
    other_ca = certificates(tmp_path / "other")[0]
    with open_client(Endpoint(url, Auth(), cacert=other_ca)) as c:
        got = _cert(c, Thresholds(), NOW)
    assert got.state == CRITICAL
    assert got.reason.startswith("not trusted: unable to get local issuer certificate "
                                 "(expires ")
    assert node.server.seen == []  # handshakes only: no request was sent


@pytest.mark.parametrize(("when", "state", "reason"), [
    ("2026-06-01T11:00:00Z", OK, "an event within the last 1h"),  # 1 h ago exactly
    ("2026-06-01T10:59:59Z", WARNING, "an event within the last 1d"),
    ("2026-05-31T12:00:00Z", WARNING, "an event within the last 1d"),  # 1 d ago exactly
    ("2026-05-31T11:59:59Z", CRITICAL, "no event in the last 1d")])
def test_fresh_events_within_each_window(node, when, state, reason):
    node.events[0]["time"] = when
    assert node.checks()["fresh events"] == (state, reason, None)


def test_a_bearer_token_that_sees_no_event_says_nothing_of_the_node(node):
    node.events = []
    got = node.checks(auth=Auth("bearer", token=_bearer_token(int(NOW + 3600)),
                                access_key="ak1"))
    assert got["fresh events"][0] == SKIPPED
    assert got["fresh events"][1].startswith("this bearer token sees no event in the last "
                                             "1d, which says nothing of the node's log")


# -- the clock: its offset to the hundredth, which way, and from where ---------------------

def _clock(node, now: float) -> Check:
    return next(c for c in node.run(now=now) if c.name == "clock")


@pytest.mark.parametrize(("behind", "reason", "value"), [
    (3.0, "3.0 s ahead of", 3.0),
    (1.234, "1.2 s ahead of", 1.23),  # the value to the hundredth
    (0.5, "0.5 s ahead of", 0.5),
    (0.0, "0.0 s ahead of", 0.0),  # the same time is not behind
    (-0.25, "0.2 s behind", -0.25)])
def test_the_clock_offset_which_way_and_its_value(node, behind, reason, value):
    said = datetime(2026, 6, 1, 12, 0, 3, tzinfo=UTC).timestamp()  # current_time
    got = _clock(node, said - behind)
    assert (got.reason, got.value, got.unit) == (
        f"{reason} this machine (/info current_time)", value, "s")


def test_without_current_time_the_offset_comes_from_the_date_header(node):
    import re
    import time
    from email.utils import formatdate

    node.info = {"version": "4.1.0"}
    node.date = formatdate(time.time() + 100, usegmt=True)  # a node 100 s ahead
    got = _clock(node, NOW)  # (the Date header is read on this machine's clock)
    assert got.state == CRITICAL and got.unit == "s"
    assert re.fullmatch(r"\d+\.\d s ahead of this machine \(Date header\)", got.reason)
    # (Date says whole seconds; the client counts half a second for the truncation)
    assert 90 < got.value <= 100.5


# -- failed transfers: the last hour, in microseconds, and what counts as failed -----------

def test_failed_transfers_in_the_last_hour_in_microseconds(node):
    hour_ago = int((NOW - 3600) * 1_000_000)  # end_time_usec: microseconds
    node.transfers = [
        {"id": "1", "status": "failed", "end_time_usec": hour_ago},  # exactly an hour ago
        {"id": "2", "status": "failed", "end_time_usec": hour_ago - 1},  # just before
        {"id": "3", "status": "error", "end_time_usec": int(NOW * 1_000_000) - 60},
        {"id": "4", "status": "failed"},  # no end: not in the last hour
        {"id": "5", "status": "failed", "end_time_usec": str(hour_ago)},
        *({"id": str(6 + i), "status": s, "end_time_usec": int(NOW * 1_000_000)}
          for i, s in enumerate(("running", "completed", "cancelled")))]
    assert node.checks()["failed transfers"] == (WARNING, "2 in the last hour", 2.0)


# -- what the client's connection showed, or a handshake of its own -----------------------

def test_the_certificate_is_the_one_the_clients_connection_verified(tmp_path):
    """No handshake of its own once a request was answered: the node may be gone by
    then (a handshake would then fail)."""
    import json

    from nodecli.node.health import _cert
    from tests.scripted_server import ScriptedServer, certificates, reply

    ca, cert, key = certificates(tmp_path)
    server = ScriptedServer(lambda seen: [reply(200, json.dumps({}).encode())],
                            tls=(cert, key))
    try:
        client = open_client(Endpoint(server.url("127.0.0.1"), Auth(), cacert=ca,
                                      max_attempts=1))
        client.request("GET", "/info")
    finally:
        server.close()
    with client:
        got = _cert(client, Thresholds(), NOW)
    assert (got.state, got.reason[:8], got.unit) == (OK, "expires ", "d")


def test_a_node_asking_for_a_client_certificate_has_its_own_checked(node):
    """A refusal that speaks of a certificate (a proxy in front of the node asking for a
    client certificate) is followed by the certificate check, on the thresholds."""
    node.info = 400
    node.error = "No required SSL certificate was sent"
    got = node.checks()
    url = node.server.url("127.0.0.1")
    assert list(got) == ["reachable", "certificate"]
    assert got["reachable"] == (CRITICAL, f"GET /info: nodecli: GET {url}/info: HTTP 400: "
                                          "No required SSL certificate was sent", None)
    assert got["certificate"][0] == OK and got["certificate"][1].startswith("expires ")


def test_a_node_that_does_not_speak_tls_says_so_in_its_certificate_check():
    import threading

    listening = socket.create_server(("127.0.0.1", 0))
    listening.settimeout(0.2)
    stop = threading.Event()

    def plain_http() -> None:  # answers the TLS hello with plain HTTP, every connection
        while not stop.is_set():
            try:
                conn, _ = listening.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(10)
                try:
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                    while conn.recv(65536):
                        pass
                except OSError:
                    pass

    thread = threading.Thread(target=plain_http, daemon=True)
    thread.start()
    try:
        from nodecli.node.health import run_checks

        url = f"https://127.0.0.1:{listening.getsockname()[1]}"
        with open_client(Endpoint(url, Auth("basic", username="a", password="pw-health"),
                                  max_attempts=1)) as client:
            got = run_checks(client, access_key=None, local_key=None,
                             thresholds=Thresholds(), now=NOW)
    finally:
        stop.set()
        thread.join(10)
        listening.close()
    assert [(c.name, c.state) for c in got] == [("reachable", CRITICAL),
                                                ("certificate", CRITICAL)]
    assert got[0].reason.startswith(f"GET /info: remote: TLS: 127.0.0.1:"
                                    f"{url.rsplit(':', 1)[1]} does not answer with TLS")
    assert got[1].reason.startswith("TLS handshake failed: ")


def test_fresh_events_ask_for_one_event(node):
    node.checks()
    asked = [s.target for s in node.server.seen if s.target.startswith("/events?")]
    assert asked and all("count=1&" in t + "&" for t in asked), asked


def test_the_time_is_now_when_none_is_given(node):
    from nodecli.node.health import run_checks

    node.info["current_time"] = "2999-01-01T00:00:00Z"  # ahead of any machine running this
    with open_client(Endpoint(node.server.url("127.0.0.1"),
                              Auth("basic", username="admin", password="pw-health"),
                              cacert=node.ca, max_attempts=1)) as client:
        got = {c.name: c for c in run_checks(client, access_key=None, local_key=None,
                                             thresholds=Thresholds())}
    assert got["clock"].reason.endswith(" s ahead of this machine (/info current_time)")
    assert got["certificate"].state == OK


def test_a_node_url_without_a_port_has_its_certificate_asked_on_443(watch):
    """`https://127.0.0.1` (no port), nothing asked yet: the certificate check's own
    handshake connects to port 443, HTTPS's (seen by an audit hook on socket.connect in
    this thread; no test may listen on that port, so what answers there does not
    matter: the port asked is the behaviour)."""
    import threading

    from nodecli.node.health import _cert

    asked: list[tuple[str, int]] = []
    me = threading.get_ident()
    watch["socket.connect"] = lambda args: (threading.get_ident() == me
                                            and asked.append(args[1]))
    with open_client(Endpoint("https://127.0.0.1", Auth(), connect_timeout=5.0)) as c:
        got = _cert(c, Thresholds(), NOW)
    assert asked == [("127.0.0.1", 443)]
    assert got.name == "certificate"
