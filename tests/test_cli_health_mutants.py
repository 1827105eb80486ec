"""nodecli.cli.health's helpers in process (issue 33 item 2: its mutation run): the
Nagios plugin line and its perfdata, the Prometheus text of the checks, the thresholds
a profile and the flags give, and the local key a profile's tokens are signed with.
``node health`` as a command is in tests/test_health*.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nodecli.cli.health import local_key_of, nagios_line, prometheus_text, thresholds_of
from nodecli.errors import UsageError
from nodecli.node.health import CRITICAL, OK, SKIPPED, UNKNOWN, WARNING, Check, Thresholds


def _results() -> list[tuple[str, list[Check]]]:
    return [("a", [Check("reachable", OK, "fine"),
                   Check("certificate", WARNING, "expires soon", 12.5, "d"),
                   Check("clock", OK, "behind", -0.25, "s"),
                   Check("version", SKIPPED, "not known"),
                   Check("failed transfers", CRITICAL, "12 in the last hour", 12.0)]),
            ("b", [Check("reachable", OK, "fine"),
                   Check("token", UNKNOWN, "no expiry\x1b[31m\nnow", 300.0, "s"),
                   Check("clock", OK, "no value")])]


def test_the_nagios_line_says_what_is_wrong_with_its_perfdata():
    strict = Thresholds()
    strict.update("cert=10d,skew=1s,failed=3,token=2m", "warn")
    line = nagios_line(_results(), {"a": Thresholds(), "b": strict})
    assert line == (
        "NODECLI HEALTH CRITICAL - a certificate: expires soon; a failed transfers: 12 in "
        "the last hour; b token: no expiry?now"
        " | 'a_cert_days'=12.5;30;7 'a_clock_offset'=-0.25s;2;5 "
        "'a_failed_transfers'=12;1;10 'b_token_seconds'=300s;120;60")


def test_a_nagios_line_with_all_well_counts_the_checks_and_nodes():
    results = [("a", [Check("reachable", OK, "fine"), Check("version", SKIPPED, "-")]),
               ("b", [Check("reachable", OK, "fine")])]
    assert nagios_line(results, {"a": Thresholds(), "b": Thresholds()}) == \
        "NODECLI HEALTH OK - 3 checks ok on 2 node(s)"


def test_a_perfdata_label_is_sanitized():
    results = [("n\x1b[2J\tx", [Check("clock", WARNING, "ahead", 3.0, "s")])]
    assert nagios_line(results, {"n\x1b[2J\tx": Thresholds()}) == (
        "NODECLI HEALTH WARNING - n x clock: ahead | 'n x_clock_offset'=3s;2;5")


def test_the_prometheus_text_of_the_checks():
    assert prometheus_text(_results()) == """\
# HELP nodecli_health_state Check state: 0 ok, 1 warning, 2 critical, 3 unknown
# TYPE nodecli_health_state gauge
nodecli_health_state{check="reachable",node="a"} 0.0
nodecli_health_state{check="certificate",node="a"} 1.0
nodecli_health_state{check="clock",node="a"} 0.0
nodecli_health_state{check="failed transfers",node="a"} 2.0
nodecli_health_state{check="reachable",node="b"} 0.0
nodecli_health_state{check="token",node="b"} 3.0
nodecli_health_state{check="clock",node="b"} 0.0
# HELP nodecli_certificate_days_left Days until the node's TLS certificate expires
# TYPE nodecli_certificate_days_left gauge
nodecli_certificate_days_left{node="a"} 12.5
# HELP nodecli_clock_offset_seconds The node's clock minus this machine's
# TYPE nodecli_clock_offset_seconds gauge
nodecli_clock_offset_seconds{node="a"} -0.25
# HELP nodecli_failed_transfers_last_hour Transfers that failed in the last hour
# TYPE nodecli_failed_transfers_last_hour gauge
nodecli_failed_transfers_last_hour{node="a"} 12.0
# HELP nodecli_token_seconds_left Seconds until the profile's bearer token expires
# TYPE nodecli_token_seconds_left gauge
nodecli_token_seconds_left{node="b"} 300.0
"""


def _profile(warn=None, crit=None):
    return SimpleNamespace(name="prod", health_warn=warn, health_crit=crit)


def test_thresholds_are_the_defaults_then_the_profiles_then_the_flags():
    assert thresholds_of(None) == Thresholds()
    assert thresholds_of(_profile()) == Thresholds()
    got = thresholds_of(_profile("skew=3s,failed=2", "skew=9s"), warn="failed=4",
                        crit="cert=1d")
    want = Thresholds()
    want.warn.update(skew=3.0, failed=4.0)
    want.crit.update(skew=9.0, cert=86400.0)
    assert got == want
    assert thresholds_of(None, warn="skew=1s", crit="skew=2s").warn["skew"] == 1.0
    assert thresholds_of(None, warn="skew=1s", crit="skew=2s").crit["skew"] == 2.0


@pytest.mark.parametrize(("warn", "crit", "flag"), [("skew=x", None, "warn"),
                                                    (None, "bogus=1", "crit")])
def test_a_profile_with_thresholds_no_longer_valid_is_named(warn, crit, flag):
    with pytest.raises(UsageError) as e:
        thresholds_of(_profile(warn, crit))
    assert str(e.value).startswith(f"node profile 'prod': --{flag}: ")
    assert e.value.hint == ("set them again with 'nodecli node thresholds prod --warn ... "
                            "--crit ...'")


def _key_pair(folder):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "private.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (folder / "private.pem").chmod(0o600)  # (a private key others may read is refused)
    (folder / "public.pem").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return key


def test_the_local_key_of_a_profile(tmp_path):
    from nodecli.http.client import Auth
    from nodecli.tokens.keys import key_fingerprint

    keys = tmp_path / "keys"
    app = SimpleNamespace(paths=SimpleNamespace(keys_dir=keys))

    def of(auth):
        return local_key_of(app, SimpleNamespace(endpoint=SimpleNamespace(auth=auth)))

    key = _key_pair(keys / "ak1")
    got = of(Auth("bearer", token="t", access_key="ak1"))
    assert key_fingerprint(got) == key_fingerprint(key)
    assert of(Auth("bearer", token="t", access_key="ak2")) is None  # no key pair here
    assert of(Auth("basic", username="u", password="p")) is None  # no access key
    (keys / "ak3").mkdir()
    (keys / "ak3" / "public.pem").write_text("not a key")
    assert of(Auth("bearer", token="t", access_key="ak3")) is None
    # a token minted here: the key it is signed with, wherever that is
    minted = _key_pair(tmp_path / "elsewhere")
    source = SimpleNamespace(key_path=tmp_path / "elsewhere" / "private.pem")
    got = of(Auth("bearer", access_key="ak1", source=source))
    assert key_fingerprint(got) == key_fingerprint(minted)
    (tmp_path / "elsewhere" / "private.pem").write_text("not a key")
    assert of(Auth("bearer", access_key="ak1", source=source)) is None
    assert key_fingerprint(of(Auth("bearer", access_key="ak1", source=object()))) == \
        key_fingerprint(key)  # a source that does not mint: the key pair of the access key


@pytest.mark.parametrize("flag", ["warn", "crit"])
def test_a_bad_flag_is_named(flag):
    with pytest.raises(UsageError) as e:
        thresholds_of(_profile("skew=3s"), **{flag: "bogus=1"})
    assert str(e.value) == (f"--{flag}: 'bogus=1' is not NAME=VALUE with NAME one of cert, "
                            "skew, fresh, token, failed")
