"""The first hour (issue 35): what a newcomer meets in the README, the guides and a day
against a remote node. Real HTTPS against the emulator; prompts in a real pty."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from nodecli.tokens.wire import create_token
from tests.conftest import REPO_ROOT, nodecli_cmd, subprocess_env

PW = "admin-pass\n"


def _dead_port() -> int:
    """A local port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _register(invoke, emulator, tmp_path: Path, key, ak: str = "akf") -> None:
    from cryptography.hazmat.primitives import serialization

    emulator.add_access_key(ak, "akf-secret")
    pub = tmp_path / f"{ak}.pub.pem"
    pub.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    r = invoke("access-key", "set-verification-key", ak, "--public-key", str(pub),
               "--url", emulator.url, "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 0, r


def _token_file(tmp_path: Path, token: str, name: str = "tok") -> Path:
    path = tmp_path / name
    path.write_text(token + "\n")
    path.chmod(0o600)
    return path


def _config_bytes(home: Path) -> bytes | None:
    path = home / "config.toml"
    return path.read_bytes() if path.exists() else None


# -- token create -u USER for a user that is not local ---------------------------------------


def test_token_create_for_a_user_not_here_names_both_routes(invoke, home):
    """The remote node's admin is not in this machine's config: the error and its hint
    say how to go on either way (add the node user here, or a minting profile)."""
    r = invoke("token", "create", "-u", "admin", "--access-key", "ak1", "--user-id", "alice",
               "--yes", env={"NODECLI_PASSWORD": "admin-pass"})
    assert r.exit_code == 5 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("nodecli: error: node user 'admin' ")
    assert "this machine's config" in lines[0]
    assert lines[1].startswith("hint: ")
    assert "nodecli user add admin --xuser XUSER" in lines[1]
    assert "nodecli node add NAME --url URL --access-key AK --mint-key" in lines[1]
    assert not (home / "keys").exists()  # nothing was made on the way


def test_token_create_help_names_the_minting_profile(invoke):
    r = invoke("token", "create", "--help")
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "one of this machine's node users" in text
    assert "--mint-key" in text and "node add" in text


# -- node add checks the login ---------------------------------------------------------------


def test_node_add_with_a_wrong_password_saves_nothing(invoke, emulator, home):
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="wrong\n")
    assert r.exit_code == 4, r
    assert r.stderr.startswith("nodecli: error: login check failed, profile 'emu' not "
                               "saved: GET ")
    assert "HTTP 401" in r.stderr and "--no-check" in r.stderr
    assert "secret from --password-stdin" in r.stderr  # not 'stored': nothing was
    assert _config_bytes(home) is None and not (home / "secrets.toml").exists()
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input=PW)
    assert r.exit_code == 0, r
    assert "login checked: GET /info as node user 'admin'" in r.stderr


def test_node_add_of_an_unreachable_node_saves_nothing_unless_no_check(invoke, emulator, home):
    url = f"https://127.0.0.1:{_dead_port()}"
    r = invoke("node", "add", "down", "--url", url, "--user", "admin", "--password-stdin",
               input=PW)
    assert r.exit_code == 6, r
    assert "not saved" in r.stderr and _config_bytes(home) is None
    r = invoke("node", "add", "down", "--url", url, "--user", "admin", "--password-stdin",
               "--no-check", input=PW)
    assert r.exit_code == 0, r
    assert "login checked" not in r.stderr
    assert json.loads(invoke("node", "show", "down", "-o", "json").stdout)["secret_stored"]


def test_node_add_of_a_bearer_profile_reads_one_event_with_its_token(invoke, emulator, home,
                                                                     tmp_path):
    key = _key()
    _register(invoke, emulator, tmp_path, key)
    good = _token_file(tmp_path, create_token(key, "akf", "alice"), "good")
    bad = _token_file(tmp_path, create_token(_key(), "akf", "alice"), "bad")  # other key
    r = invoke("node", "add", "t", "--url", emulator.url, "--access-key", "akf",
               "--bearer-file", str(bad))
    assert r.exit_code == 4, r
    assert "not saved" in r.stderr and _config_bytes(home) is None
    r = invoke("node", "add", "t", "--url", emulator.url, "--access-key", "akf",
               "--bearer-file", str(good))
    assert r.exit_code == 0, r
    assert "login checked: GET /events?count=1 as access key 'akf' with a bearer token" \
        in r.stderr


def test_node_add_without_a_secret_is_not_checked(invoke, emulator, home):
    r = invoke("node", "add", "lab", "--url", f"https://127.0.0.1:{_dead_port()}", "--user",
               "admin", "--no-secret")
    assert r.exit_code == 0, r
    assert "login not checked: no password of node user 'admin' given" in r.stderr


# -- node set: one field, the secret stays ---------------------------------------------------


@pytest.fixture
def emu_profile(invoke, emulator, home):
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--cacert", emulator.ca_file, "--password-stdin", input=PW)
    assert r.exit_code == 0, r
    return home


def _show(invoke, name: str = "emu") -> dict:
    r = invoke("node", "show", name, "-o", "json")
    assert r.exit_code == 0, r
    return json.loads(r.stdout)


def test_node_set_changes_one_field_and_keeps_the_secret(invoke, emulator, emu_profile):
    secrets = (emu_profile / "secrets.toml").read_bytes()
    before = _show(invoke)
    other_ca = emu_profile.parent / "ca-copy.pem"
    other_ca.write_bytes(Path(emulator.ca_file).read_bytes())
    r = invoke("node", "set", "emu", "--cacert", str(other_ca))
    assert r.exit_code == 0, r
    assert "updated node profile 'emu': cacert" in r.stderr
    after = _show(invoke)
    assert after["cacert"] == str(other_ca)
    assert {k: v for k, v in after.items() if k != "cacert"} == \
        {k: v for k, v in before.items() if k != "cacert"}
    assert (emu_profile / "secrets.toml").read_bytes() == secrets
    r = invoke("node", "info", "--node", "emu", "-o", "json")  # no password given: stored
    assert r.exit_code == 0, r


def test_node_set_refused_by_the_node_changes_nothing(invoke, emulator, emu_profile):
    config = _config_bytes(emu_profile)
    r = invoke("node", "set", "emu", "--url", f"https://127.0.0.1:{_dead_port()}")
    assert r.exit_code == 6, r
    assert r.stderr.startswith("nodecli: error: login check failed, profile 'emu' not "
                               "changed: GET https://127.0.0.1:")
    assert _config_bytes(emu_profile) == config
    r = invoke("node", "set", "emu", "--user", "nobody")  # admin's password as nobody: 401
    assert r.exit_code == 4, r
    assert _config_bytes(emu_profile) == config
    r = invoke("node", "set", "emu", "--url", "https://127.0.0.1:1", "--no-check")
    assert r.exit_code == 0, r
    assert _show(invoke)["url"] == "https://127.0.0.1:1"


def test_node_set_tls_fields_replace_each_other(invoke, emulator, emu_profile):
    r = invoke("node", "set", "emu", "--insecure", "--no-check")
    assert r.exit_code == 0, r
    shown = _show(invoke)
    assert shown["insecure"] is True and shown["cacert"] is None
    r = invoke("node", "set", "emu", "--cacert", emulator.ca_file)
    assert r.exit_code == 0, r
    shown = _show(invoke)
    assert shown["insecure"] is False and shown["cacert"] == emulator.ca_file
    r = invoke("node", "set", "emu", "--cacert", "", "--no-check")  # '' unsets
    assert r.exit_code == 0, r
    assert _show(invoke)["cacert"] is None


def test_node_set_replaces_the_secret_only_when_given(invoke, emulator, emu_profile):
    r = invoke("node", "set", "emu", "--password-stdin", input="wrong\n")
    assert r.exit_code == 4, r  # checked before it is stored
    assert invoke("node", "info", "--node", "emu").exit_code == 0
    r = invoke("node", "set", "emu", "--password-stdin", input=PW)
    assert r.exit_code == 0 and "updated node profile 'emu': secret" in r.stderr


@pytest.mark.parametrize("argv,code,says", [
    (("node", "set", "emu"), 2, "nothing to change"),
    (("node", "set", "nope", "--url", "https://x:9092"), 5, "nope"),
    (("node", "set", "emu", "--url", ""), 2, "--url cannot be empty"),
    (("node", "set", "emu", "--url", "ftp://x"), 2, "--url must be an http(s) URL"),
    (("node", "set", "emu", "--cacert", "/no/such/ca.pem"), 5, "no such file"),
])
def test_node_set_bad_input(invoke, emu_profile, argv, code, says):
    config = _config_bytes(emu_profile)
    r = invoke(*argv)
    assert r.exit_code == code, r
    assert says in r.stderr and "Traceback" not in r.stderr
    assert _config_bytes(emu_profile) == config


def test_node_set_keeps_the_health_thresholds(invoke, emu_profile):
    r = invoke("node", "thresholds", "emu", "--warn", "cert=500d")
    assert r.exit_code == 0, r
    assert invoke("node", "set", "emu", "--access-key-header", "X-Other",
                  "--no-check").exit_code == 0
    assert _show(invoke)["health_warn"] == "cert=500d"


# -- events tail: --to FILE says what it wrote; a pipe's reader that stopped early -----------


@pytest.mark.parametrize("n,says", [(1, "wrote 1 event to"), (3, "wrote 3 events to")])
def test_tail_to_a_file_says_how_many_it_wrote(invoke, node_env, log, tmp_path, n, says):
    log.generate(n)
    out = tmp_path / "out.jsonl"
    r = invoke("events", "tail", "--since", "1h", "--to", str(out), env=node_env)
    assert r.exit_code == 0, r
    assert r.stderr.splitlines()[-1] == f"{says} {out}"
    assert len(out.read_bytes().splitlines()) == n
    r = invoke("-q", "events", "tail", "--to", str(out), env=node_env)
    assert r.exit_code == 0 and r.stderr == ""


def test_a_pipe_without_checkpoint_says_nothing_when_its_reader_stops(node_env, log):
    """Nothing is counted as delivered without a checkpoint: no line for `| head`."""
    log.generate(3000)
    proc = subprocess.Popen(nodecli_cmd("events", "tail", "--since", "1h", "-o", "jsonl"),
                            env=subprocess_env(node_env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        os.read(proc.stdout.fileno(), 4096)
        proc.stdout.close()
        assert proc.wait(timeout=60) == 141
        assert proc.stderr.read() == b""
    finally:
        proc.kill()
        proc.wait()


# -- an end the user chose is not an error ---------------------------------------------------


def _spawn(env: dict[str, str], *args: str) -> pexpect.spawn:
    return pexpect.spawn(sys.executable, ["-m", "nodecli", *args],
                         env=subprocess_env({**env, "TERM": "xterm"}), cwd=str(REPO_ROOT),
                         encoding="utf-8", timeout=30)


def test_answering_no_is_aborted_not_an_error(invoke, home):
    invoke("xuser", "add", "x", "-r", "s3://*")
    assert invoke("user", "add", "u1", "--xuser", "x", "--password-stdin",
                  input="pw\n").exit_code == 0
    child = _spawn({"NODECLI_HOME": str(home)}, "user", "delete", "u1")
    try:
        child.expect(r"\[y/N\]: ")
        child.sendline("n")
        child.expect(pexpect.EOF)
        said = child.before
    finally:
        child.close(force=True)
    assert child.exitstatus == 1
    assert "nodecli: aborted: nothing deleted" in said and "error:" not in said
    assert "u1" in invoke("user", "list").stdout


def test_ctrl_c_in_a_tail_is_interrupted_not_an_error(node_env, log):
    log.generate(2)
    child = _spawn(node_env, "events", "tail", "-f", "--since", "1h", "-o", "jsonl",
                   "--interval", "0.2")
    try:
        child.expect(r'"id":\s*"2"')  # the second event is out: the tail is following
        child.sendintr()
        child.expect(pexpect.EOF)
        said = child.before
    finally:
        child.close(force=True)
    assert child.exitstatus == 130
    # (the events shown may hold "error_code": no line of nodecli's own says error:)
    assert "nodecli: interrupted after 2 events" in said and "error:" not in said


# -- papercuts -------------------------------------------------------------------------------


def _clock_reason(invoke, node_env) -> str:
    r = invoke("node", "health", "-o", "json", env=node_env)
    return next(c for c in json.loads(r.stdout) if c["check"] == "clock")["reason"]


def test_clock_skew_reads_as_english(invoke, emulator, node_env):
    emulator.state.clock_offset = -30.0
    reason = _clock_reason(invoke, node_env)
    assert " s behind this machine (" in reason and "behind of" not in reason
    emulator.state.clock_offset = 30.0
    assert " s ahead of this machine (" in _clock_reason(invoke, node_env)


def test_an_empty_answer_to_a_bearer_token_does_not_call_the_log_empty(invoke, emulator,
                                                                        log, tmp_path):
    from nodecli.http.client import Auth, open_client
    from nodecli.node.events.pages import empty_log_hint
    from nodecli.node.info import NodeInfo

    key = _key()
    _register(invoke, emulator, tmp_path, key)
    log.generate(5)  # the log is not empty; this token's user may see none of it
    auth = Auth("bearer", token=create_token(key, "akf", "nobody"), access_key="akf")
    with open_client(emulator.endpoint(auth)) as client:
        hint = empty_log_hint(client, NodeInfo("4.4.5"))
    assert hint is not None and hint.startswith("no event is visible to this bearer token")
    assert "the node's event log is empty:" not in hint
    with open_client(emulator.endpoint(Auth("basic", "admin", "admin-pass"))) as client:
        assert empty_log_hint(client, NodeInfo("4.4.5")) is None  # admin sees the five


def test_the_unconfigured_transfer_user_warning_comes_when_it_is_recorded(invoke):
    r = invoke("-au", "usr1", "-x", "aspera", "-p", "pw1")
    assert r.exit_code == 0 and r.stderr.count("neither restriction nor docroot") == 1
    r = invoke("-au", "usr2", "-x", "aspera", "-p", "pw2")  # the same state: said already
    assert r.exit_code == 0 and "neither restriction nor docroot" not in r.stderr
    r = invoke("config", "check")  # asked for: still reported
    assert "neither restriction nor docroot" in r.stderr + r.stdout


def _private_pem(tmp_path: Path, key) -> Path:
    from cryptography.hazmat.primitives import serialization

    path = tmp_path / "mint.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    return path


def test_node_set_changes_one_setting_of_a_minting_profile(invoke, emulator, home, tmp_path):
    key = _key()
    _register(invoke, emulator, tmp_path, key)
    pem = _private_pem(tmp_path, key)
    r = invoke("node", "add", "m", "--url", emulator.url, "--access-key", "akf",
               "--mint-key", str(pem), "--mint-user-id", "alice", "--mint-group-ids", "g1",
               "--mint-ttl", "1h")
    assert r.exit_code == 0, r
    r = invoke("node", "set", "m", "--mint-ttl", "30m")
    assert r.exit_code == 0, r
    assert "updated node profile 'm': mint-ttl" in r.stderr
    assert _show(invoke, "m")["mint"] == {"key": str(pem), "user_id": "alice",
                                          "group_ids": ["g1"], "scope_role": "user",
                                          "ttl": 1800}
    r = invoke("node", "set", "m", "--mint-user-id", "bob", "--mint-group-ids", "")
    assert r.exit_code == 0, r
    mint = _show(invoke, "m")["mint"]
    assert mint == {"key": str(pem), "user_id": "bob", "scope_role": "user", "ttl": 1800}


def test_node_set_mint_settings_need_a_minting_profile(invoke, emu_profile):
    config = _config_bytes(emu_profile)
    r = invoke("node", "set", "emu", "--mint-ttl", "30m")
    assert r.exit_code == 2, r
    assert "does not sign its own tokens: give --mint-key PATH" in r.stderr
    assert _config_bytes(emu_profile) == config


def test_a_merged_tail_to_a_file_says_how_many_it_wrote(invoke, emu_profile, log, tmp_path):
    log.generate(3)
    out = tmp_path / "fleet.jsonl"
    r = invoke("events", "tail", "--nodes", "emu", "--since", "1h", "--to", str(out))
    assert r.exit_code == 0, r
    assert r.stderr.splitlines()[-1] == f"wrote 3 events from 1 node(s) to {out}"
    assert len(out.read_bytes().splitlines()) == 3
