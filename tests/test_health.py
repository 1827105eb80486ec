"""node health over HTTPS against the emulator: each check's ok and failing case, the
Nagios line and exit codes, Prometheus text read back by prometheus-client's parser,
and many nodes at once with one of them down."""

from __future__ import annotations

import json

import pytest

from tests.test_long_running import Bearer, bearer  # noqa: F401 - the fixture


def _checks(r) -> dict[str, dict]:
    return {c["check"]: c for c in json.loads(r.stdout)}


def test_a_healthy_node(invoke, node_env, log):
    log.generate(3)
    r = invoke("node", "health", "-o", "json", env=node_env)
    checks = _checks(r)
    assert {k: v["state"] for k, v in checks.items()} == {
        "reachable": "ok", "certificate": "ok", "clock": "ok", "version": "ok",
        "logging": "ok", "fresh events": "ok", "failed transfers": "ok"}, checks
    assert r.exit_code == 0
    assert checks["certificate"]["value"] > 300  # the emulator's certificate: 397 days


def test_a_node_is_asked_on_one_connection(invoke, node_env, emulator, log):
    """Every request of the checks on the connection the first one opened, the TLS
    certificate read from it (no handshake of its own), GET /events (after which a node
    closes the connection) last."""
    log.generate(3)
    before = emulator.server.connections
    r = invoke("node", "health", "-o", "json", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert emulator.server.connections - before == 1
    assert _checks(r)["certificate"]["value"] > 300


def test_each_check_fails_when_it_should(invoke, node_env, emulator, log, node_version):
    emulator.state.clock_offset = 10.0
    log.logging_enabled = False
    node_version("3.7.0")
    r = invoke("node", "health", "-o", "json", "--warn", "cert=500d", env=node_env)
    checks = _checks(r)
    assert r.exit_code == 1
    assert checks["clock"]["state"] == "critical" and "ahead" in checks["clock"]["reason"]
    assert checks["logging"]["state"] == "warning"
    assert checks["fresh events"]["state"] == "critical"  # no event at all
    assert checks["version"]["state"] == "warning"
    assert "per-key activity logging" in checks["version"]["reason"]
    assert checks["certificate"]["state"] == "warning"  # 397 days < 500
    log.logging_enabled = True


def test_the_key_checks_with_a_bearer_profile(invoke, bearer, emulator, tmp_path, home):  # noqa: F811
    keys = home / "keys" / "ak1"
    keys.mkdir(parents=True)
    r = invoke("node", "add", "tok", "--url", emulator.url, "--access-key", "ak1",
               "--cacert", emulator.ca_file, "--mint-key", str(bearer.key_file),
               "--mint-user-id", "alice")
    assert r.exit_code == 0, r.stderr
    r = invoke("node", "health", "--node", "tok", "-o", "json")
    checks = _checks(r)
    assert checks["verification key"]["state"] == "ok"
    assert checks["token"]["state"] == "ok" and "minted" in checks["token"]["reason"]
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    emulator.state.access_keys["ak1"].token_verification_key = other.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    r = invoke("node", "health", "--node", "tok", "-o", "json")
    checks = _checks(r)
    assert checks["reachable"]["state"] == "critical"  # the node refuses our tokens now
    emulator.state.access_keys["ak1"].token_verification_key = None
    r = invoke("node", "health", "--node", "tok", "-o", "json")
    assert _checks(r)["reachable"]["state"] == "critical"


def test_a_mismatched_registered_key_is_critical(invoke, bearer, emulator, node_env, home):  # noqa: F811
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    keys = home / "keys" / "ak1"
    keys.mkdir(parents=True)
    mine = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (keys / "public.pem").write_bytes(mine.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    env = {"NODECLI_URL": emulator.url, "NODECLI_ACCESS_KEY": "ak1",
           "NODECLI_PASSWORD": "ak1-secret"}
    r = invoke("node", "health", "-o", "json", env=env)
    check = _checks(r)["verification key"]
    assert check["state"] == "critical" and "is not the local key" in check["reason"]


def test_failed_transfers_and_an_expiring_token(invoke, bearer, emulator, node_env, tmp_path):  # noqa: F811
    from nodecli.emulator.transfers import book_of

    book = book_of(emulator.state)
    book.seconds = 0.01
    for _ in range(2):
        book.fail_next = True
        book.start("alice", None, {})
    import time

    time.sleep(0.1)
    r = invoke("node", "health", "-o", "json", env=node_env)
    assert _checks(r)["failed transfers"]["state"] == "warning"
    tok = tmp_path / "tok"
    tok.write_text(bearer.token(ttl=120) + "\n")
    tok.chmod(0o600)
    r = invoke("node", "health", "-o", "json", "--url", emulator.url, "--access-key", "ak1",
               "--bearer-file", str(tok))
    check = _checks(r)["token"]
    assert check["state"] == "warning" and "expires in" in check["reason"]


def test_nagios_line_and_exit_codes(invoke, node_env, log, emulator):
    log.generate(1)
    r = invoke("node", "health", "-o", "nagios", env=node_env)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.stdout.startswith("NODECLI HEALTH OK - ") and " | " in r.stdout
    assert "cert_days'=" in r.stdout and ";30;7" in r.stdout
    emulator.state.clock_offset = 3.0
    r = invoke("node", "health", "-o", "nagios", env=node_env)
    assert r.exit_code == 1 and r.stdout.startswith("NODECLI HEALTH WARNING - ")
    emulator.state.clock_offset = 30.0
    r = invoke("node", "health", "-o", "nagios", env=node_env)
    assert r.exit_code == 2 and "CRITICAL" in r.stdout
    r = invoke("node", "health", "-o", "nagios",
               env=dict(node_env, NODECLI_PASSWORD="wrong"))
    assert r.exit_code == 2 and "reachable" in r.stdout


def test_prometheus_text_parses_back(invoke, node_env, log):
    from prometheus_client.parser import text_string_to_metric_families

    log.generate(1)
    r = invoke("node", "health", "-o", "prometheus", env=node_env)
    assert r.exit_code == 0, r.stderr
    families = {f.name: f for f in text_string_to_metric_families(r.stdout)}
    states = {s.labels["check"]: s.value for s in families["nodecli_health_state"].samples}
    assert states["reachable"] == 0 and states["certificate"] == 0
    assert families["nodecli_certificate_days_left"].samples[0].value > 300


def test_many_nodes_with_one_down(invoke, node_env, emulator, log):
    import socket

    log.generate(1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    for name, url in (("a1", emulator.url), ("a2", emulator.url),
                      ("down", f"https://127.0.0.1:{dead}")):
        assert invoke("node", "add", "--no-check", name, "--url", url, "--user", "admin",
                      "--password-stdin", input="admin-pass\n").exit_code == 0
    r = invoke("node", "health", "--all-nodes", "-o", "json")
    rows = json.loads(r.stdout)
    assert r.exit_code == 1
    by_node = {}
    for row in rows:
        by_node.setdefault(row["node"], {})[row["check"]] = row["state"]
    assert by_node["a1"]["reachable"] == by_node["a2"]["reachable"] == "ok"
    assert by_node["down"] == {"reachable": "critical"}
    r = invoke("node", "health", "--nodes", "a*", "-o", "nagios")
    assert r.exit_code == 0 and "on 2 node(s)" in r.stdout
    r = invoke("node", "health", "--nodes", "zz*")
    assert r.exit_code == 2


@pytest.mark.parametrize("flag", ["--warn", "--crit"])
def test_bad_thresholds(invoke, flag):
    for bad in ("cert", "bogus=1d", "cert=soon", "skew=", "failed=x"):
        r = invoke("node", "health", flag, bad, "--url", "https://x:1")
        assert r.exit_code == 2, (bad, r.stderr)


@pytest.mark.parametrize(("days", "state", "words"), [
    (20, "warning", "days left"), (3, "critical", "days left"), (-2, "critical", "expired on")])
def test_a_certificate_that_really_expires(invoke, emulator, home, days, state, words):
    from nodecli.emulator.app import build_server, ca_file

    server = build_server(emulator.paths, persist=False, cert_days=days).start()
    try:
        r = invoke("node", "add", "--no-check", "short", "--url", server.url, "--user", "admin",
                   "--cacert", ca_file(emulator.paths, days), "--password-stdin",
                   input="admin-pass\n")
        assert r.exit_code == 0, r.stderr
        r = invoke("node", "health", "--node", "short", "-o", "json", "--cacert",
                   ca_file(emulator.paths, days))  # (NODECLI_CACERT names the usual CA)
    finally:
        server.stop()
    checks = _checks(r)
    assert r.exit_code == 1
    assert checks["certificate"]["state"] == state and words in checks["certificate"]["reason"]
    if days < 0:  # the node cannot be used at all: said once, and why
        assert checks["reachable"]["state"] == "critical"
        assert checks["certificate"]["value"] < 0


def test_thresholds_kept_in_the_profile(invoke, node_env, emulator, log, home):
    log.generate(1)
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r.stderr
    config = (home / "config.toml").read_text()
    r = invoke("node", "thresholds", "emu", "--warn", "cert=soon")
    assert r.exit_code == 2 and "cert=soon" in r.stderr
    assert (home / "config.toml").read_text() == config  # refused: nothing saved
    r = invoke("node", "thresholds", "emu", "--warn", "cert=500d", "--crit", "skew=9s")
    assert r.exit_code == 0, r.stderr
    assert 'health_warn = "cert=500d"' in (home / "config.toml").read_text()
    r = invoke("node", "thresholds", "emu", "-o", "json")
    effective = {row["name"]: row for row in json.loads(r.stdout)["effective"]}
    assert effective["cert"]["warn"] == 500 * 86400 and effective["skew"]["crit"] == 9
    assert effective["fresh"]["warn"] == 3600  # a default
    r = invoke("node", "health", "--node", "emu", "-o", "json")
    assert _checks(r)["certificate"]["state"] == "warning"  # the profile's 500 days
    r = invoke("node", "health", "--node", "emu", "-o", "nagios", "--warn", "cert=10d")
    assert r.exit_code == 0 and "cert_days'=" in r.stdout  # the flag wins
    assert ";10;7" in r.stdout
    r = invoke("node", "thresholds", "emu")
    assert r.stdout.splitlines()[0].split() == ["threshold", "warning", "critical"]
    rows = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()[1:]}
    assert rows["cert"] == ["500d", "7d"] and rows["skew"] == ["2s", "9s"]
    r = invoke("node", "thresholds", "emu", "--reset")
    assert r.exit_code == 0 and "health_warn" not in (home / "config.toml").read_text()
    r = invoke("node", "thresholds", "nosuch")
    assert r.exit_code != 0 and "nosuch" in r.stderr
