"""node / access-key / transfer commands through the real CLI, against the emulator."""

from __future__ import annotations

import base64
import functools
import json
import os
import stat
import tomllib
from pathlib import Path

import pytest

PW = "admin-pass\n"


def _info(invoke, emulator, *extra, input=PW, env=None):
    return invoke("node", "info", "--url", emulator.url, *extra, input=input, env=env)


# -- auth modes ---------------------------------------------------------------------------


def test_node_user_basic_accepted_and_refused(invoke, emulator):
    ok = _info(invoke, emulator, "--user", "admin", "--password-stdin")
    assert ok.exit_code == 0, ok
    assert "transfer user  xfer" in ok.stdout
    assert "version" in ok.stdout and "capabilities" in ok.stdout
    bad = _info(invoke, emulator, "--user", "admin", "--password-stdin", input="nope\n")
    assert bad.exit_code == 4, bad
    assert "HTTP 401" in bad.stderr
    # the hint says which credentials were used and where the secret came from
    assert "'admin'" in bad.stderr and "--password-stdin" in bad.stderr
    assert "nope" not in bad.stderr


def test_access_key_basic_accepted_and_refused(invoke, emulator):
    emulator.add_access_key("ak-cli", "ak-secret-1")
    ok = _info(invoke, emulator, "--access-key", "ak-cli", "--password-stdin",
               input="ak-secret-1\n")
    assert ok.exit_code == 0, ok
    bad = _info(invoke, emulator, "--access-key", "ak-cli",
                env={"NODECLI_PASSWORD": "wrong"}, input=None)
    assert bad.exit_code == 4, bad
    assert "access key" in bad.stderr and "NODECLI_PASSWORD" in bad.stderr


def test_node_info_json(invoke, emulator):
    r = _info(invoke, emulator, "--user", "admin", "--password-stdin", "-o", "json")
    assert r.exit_code == 0, r
    info = json.loads(r.stdout)
    assert info["transfer_user"] == "xfer"
    assert info["version"] == emulator.state.version
    assert {"name": "events", "value": True} in info["capabilities"]
    assert "docroot" in info


def test_missing_password_without_terminal_names_the_flag(invoke, emulator):
    r = _info(invoke, emulator, "--user", "admin", input="")
    assert r.exit_code == 2
    assert "--password-stdin" in r.stderr and "NODECLI_PASSWORD" in r.stderr


def test_no_node_at_all_is_a_usage_error(invoke):
    r = invoke("node", "info")
    assert r.exit_code == 2
    assert "--node" in r.stderr and "--url" in r.stderr


# -- TLS ----------------------------------------------------------------------------------


def test_tls_refused_without_cacert_and_accepted_with_it(invoke, tls_emulator):
    refused = _info(invoke, tls_emulator, "--user", "admin", "--password-stdin")
    assert refused.exit_code == 6, refused
    assert "not trusted" in refused.stderr and "--cacert" in refused.stderr
    ok = _info(invoke, tls_emulator, "--user", "admin", "--password-stdin",
               "--cacert", tls_emulator.ca_file)
    assert ok.exit_code == 0, ok
    via_env = _info(invoke, tls_emulator, "--user", "admin", "--password-stdin",
                    env={"NODECLI_CACERT": tls_emulator.ca_file})
    assert via_env.exit_code == 0, via_env


def test_insecure_works_and_warns_every_run(invoke, tls_emulator):
    for _ in range(2):
        r = _info(invoke, tls_emulator, "--user", "admin", "--password-stdin", "--insecure")
        assert r.exit_code == 0, r
        assert "TLS verification is OFF" in r.stderr


def test_plain_http_against_tls_port_is_explained(invoke, tls_emulator):
    url = tls_emulator.url.replace("https://", "http://")
    r = invoke("node", "info", "--url", url, "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 6, r
    assert "https://" in r.stderr


# -- retries and redaction ----------------------------------------------------------------


def test_get_retried_through_503_and_reset_shown_with_v(invoke, emulator):
    emulator.faults.push("503", "reset")
    r = invoke("-v", "node", "info", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input=PW)
    assert r.exit_code == 0, r
    assert r.stderr.count("retry ") == 2


def test_post_is_not_retried(invoke, emulator):
    emulator.faults.push("503")
    r = invoke("-v", "access-key", "create", "--path", "/data/a", "--id", "once", "--no-check",
               "--url", emulator.url, "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 6, r
    assert "retry " not in r.stderr
    assert "not retried" in r.stderr
    assert "once" not in emulator.state.access_keys
    again = invoke("access-key", "create", "--path", "/data/a", "--id", "once",
                   "--url", emulator.url, "--user", "admin", "--password-stdin", input=PW)
    assert again.exit_code == 0, again


def test_verbose_log_redacts_secrets(invoke, emulator):
    secret = "Zq9-very-secret-pw"
    emulator.add_node_user("redact", secret)
    ak_secret = "ak-very-secret-0123"
    r = invoke("-v", "access-key", "create", "--path", "/data/r", "--id", "ak-redact",
               "--secret-stdin", "--url", emulator.url, "--user", "redact",
               "--password-stdin", input=f"{secret}\n{ak_secret}\n")
    assert r.exit_code == 0, r
    assert "> POST" in r.stderr and "< 201" in r.stderr
    basic = base64.b64encode(f"redact:{secret}".encode()).decode()
    for needle in (secret, basic, basic[:16], ak_secret):
        assert needle not in r.stderr
        assert needle not in r.stdout
    # and the key works with the secret that was read from stdin
    ok = _info(invoke, emulator, "--access-key", "ak-redact", "--password-stdin",
               input=ak_secret + "\n")
    assert ok.exit_code == 0, ok


# -- access keys --------------------------------------------------------------------------


def test_access_key_create_and_409_explained(invoke, emulator):
    args = ("access-key", "create", "--storage-type", "local", "--path", "/data/p",
            "--id", "dup", "--url", emulator.url, "--user", "admin", "--password-stdin")
    first = invoke(*args, "-o", "json", input=PW)
    assert first.exit_code == 0, first
    data = json.loads(first.stdout)
    assert data["id"] == "dup"
    assert data["storage"] == {"type": "local", "path": "/data/p"}
    second = invoke(*args, input=PW)
    assert second.exit_code == 1, second
    assert "409" in second.stderr and "already exists" in second.stderr
    assert "another --id" in second.stderr


def test_access_key_create_without_secret_shows_the_generated_one(invoke, emulator):
    r = invoke("access-key", "create", "--path", "/data/g", "--url", emulator.url,
               "--user", "admin", "--password-stdin", "-o", "json", input=PW)
    assert r.exit_code == 0, r
    data = json.loads(r.stdout)
    ok = _info(invoke, emulator, "--access-key", data["id"], "--password-stdin",
               input=data["secret"] + "\n")
    assert ok.exit_code == 0, ok


def test_access_key_create_bad_path_is_usage(invoke, emulator):
    r = invoke("access-key", "create", "--path", "relative", "--url", emulator.url,
               "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 2
    assert "absolute" in r.stderr


@functools.cache
def _rsa_key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _rsa_pair(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization

    key = _rsa_key()
    priv = tmp_path / "private.pem"
    pub = tmp_path / "public.pem"
    priv.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    pub.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return priv, pub


def test_set_verification_key(invoke, emulator, tmp_path):
    emulator.add_access_key("ak-vk", "s")
    _priv, pub = _rsa_pair(tmp_path)
    r = invoke("access-key", "set-verification-key", "ak-vk", "--public-key", str(pub),
               "--url", emulator.url, "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 0, r
    stored = emulator.state.access_keys["ak-vk"].token_verification_key
    assert stored.strip() == pub.read_text().strip()
    missing = invoke("access-key", "set-verification-key", "nope", "--public-key", str(pub),
                     "--url", emulator.url, "--user", "admin", "--password-stdin", input=PW)
    assert missing.exit_code == 5
    assert "access-key create" in missing.stderr


def test_set_verification_key_from_private_key_sends_only_public_half(invoke, emulator,
                                                                       tmp_path):
    emulator.add_access_key("ak-vk2", "s")
    priv, pub = _rsa_pair(tmp_path)
    r = invoke("access-key", "set-verification-key", "ak-vk2", "--public-key", str(priv),
               "--url", emulator.url, "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 0, r
    stored = emulator.state.access_keys["ak-vk2"].token_verification_key
    assert stored.strip() == pub.read_text().strip()
    assert "PRIVATE" not in stored


def test_set_verification_key_rejects_non_key(invoke, emulator, tmp_path):
    junk = tmp_path / "junk.pem"
    junk.write_text("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n")
    r = invoke("access-key", "set-verification-key", "x", "--public-key", str(junk),
               "--url", emulator.url, "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 2
    assert "not a PEM public key" in r.stderr


# -- transfer start -----------------------------------------------------------------------


def test_transfer_start_needs_a_bearer_token(invoke, emulator, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text('{"direction": "receive", "paths": [{"source": "/a"}]}')
    r = invoke("transfer", "start", "--spec", str(spec), "--url", emulator.url,
               "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 2
    assert "bearer" in r.stderr


@pytest.mark.parametrize("content", ["[1, 2]", "{", "", "\xff"])
def test_transfer_spec_must_be_a_json_object(invoke, emulator, tmp_path, content):
    spec = tmp_path / "spec.json"
    spec.write_bytes(content.encode("latin-1"))
    tok = tmp_path / "tok"
    tok.write_text("abc")
    r = invoke("transfer", "start", "--spec", str(spec), "--url", emulator.url,
               "--access-key", "ak", "--bearer-file", str(tok))
    assert r.exit_code == 2, r
    assert "transfer spec" in r.stderr


# -- profiles -----------------------------------------------------------------------------


def test_profile_crud_and_secret_storage(invoke, emulator, home):
    add = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
                 "--password-stdin", input=PW)
    assert add.exit_code == 0, add
    cfg_text = (home / "config.toml").read_text()
    assert "admin-pass" not in cfg_text
    assert tomllib.loads(cfg_text)["nodes"]["emu"] == {"url": emulator.url, "user": "admin",
                                                       "secrets": "file"}
    secrets_file = home / "secrets.toml"
    assert stat.S_IMODE(os.stat(secrets_file).st_mode) == 0o600
    assert "admin-pass" in secrets_file.read_text()

    dup = invoke("node", "add", "emu", "--url", emulator.url)
    assert dup.exit_code == 1 and "already exists" in dup.stderr

    lst = invoke("node", "list")
    assert lst.exit_code == 0 and "emu" in lst.stdout and "node user admin" in lst.stdout
    rows = json.loads(invoke("node", "list", "-o", "json").stdout)
    assert rows[0]["name"] == "emu" and rows[0]["default"] is True

    show = invoke("node", "show", "emu", "-o", "json")
    data = json.loads(show.stdout)
    assert data["secret_stored"] is True
    assert data["secret_backend"].startswith("file ")
    assert "admin-pass" not in show.stdout
    assert "stored in file" in invoke("node", "show").stdout

    # the first profile is the default: node info needs nothing else
    info = invoke("node", "info")
    assert info.exit_code == 0, info

    rm = invoke("node", "remove", "emu")
    assert rm.exit_code == 0
    assert "admin-pass" not in secrets_file.read_text()
    assert invoke("node", "show", "emu").exit_code == 5
    assert invoke("node", "remove", "emu").exit_code == 5


def test_default_and_precedence_flag_env_profile(invoke, emulator, home):
    assert invoke("node", "add", "good", "--url", emulator.url, "--user", "admin",
                  "--password-stdin", input=PW).exit_code == 0
    assert invoke("node", "add", "--no-check", "bad", "--url", emulator.url, "--user", "admin",
                  "--password-stdin", input="wrong\n").exit_code == 0
    assert invoke("node", "default", "bad").exit_code == 0
    assert invoke("node", "default").stdout.strip() == "bad"

    assert invoke("node", "info").exit_code == 4  # default profile
    assert invoke("node", "info", env={"NODECLI_NODE": "good"}).exit_code == 0  # env > default
    assert invoke("node", "info", "--node", "bad",
                  env={"NODECLI_NODE": "good"}).exit_code == 4  # flag > env
    # env password beats the profile's stored secret
    assert invoke("node", "info", env={"NODECLI_PASSWORD": "admin-pass"}).exit_code == 0
    # env user beats the profile's user; a flag beats the env again
    env = {"NODECLI_NODE": "good", "NODECLI_USER": "nobody", "NODECLI_PASSWORD": "x"}
    assert invoke("node", "info", env=env).exit_code == 4
    assert invoke("node", "info", "--user", "admin", "--password-stdin", input=PW,
                  env=env).exit_code == 0
    # env URL overrides the profile (and drops it): a missing password is then asked for
    r = invoke("node", "info", env={"NODECLI_URL": emulator.url})
    assert r.exit_code == 2 and "no credentials" in r.stderr

    assert invoke("node", "default", "nope").exit_code == 5
    assert invoke("node", "default", "--clear").exit_code == 0
    assert invoke("node", "default").stdout == ""


def test_profile_without_secret_uses_env_or_stdin(invoke, emulator):
    r = invoke("node", "add", "nosecret", "--url", emulator.url, "--user", "admin")
    assert r.exit_code == 0, r
    assert "no secret stored" in r.stderr
    assert json.loads(invoke("node", "show", "-o", "json").stdout)["secret_stored"] is False
    assert invoke("node", "info").exit_code == 2
    assert invoke("node", "info", env={"NODECLI_PASSWORD": "admin-pass"}).exit_code == 0
    assert invoke("node", "info", "--password-stdin", input=PW).exit_code == 0


def test_profile_with_access_key_header_and_force(invoke, emulator, home):
    assert invoke("node", "add", "p", "--url", emulator.url, "--user", "admin",
                  "--password-stdin", input=PW).exit_code == 0
    r = invoke("node", "add", "p", "--url", emulator.url, "--access-key", "AK1",
               "--access-key-header", "X-Other-AccessKey", "--force")
    assert r.exit_code == 0, r
    data = json.loads(invoke("node", "show", "p", "-o", "json").stdout)
    assert data["access_key"] == "AK1" and data["user"] is None
    assert data["access_key_header"] == "X-Other-AccessKey"
    assert data["secret_stored"] is False  # --force dropped the old password
    assert "admin-pass" not in (home / "secrets.toml").read_text()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--url", "ftp://x"), "--url"),
        (("--url", "https://u:p@x"), "credentials"),
        (("--url", "https://x", "--user", "a", "--access-key", "b"), "not both"),
        (("--url", "https://x", "--bearer-file", __file__), "--access-key"),  # a real file
        (("--url", "https://x", "--access-key-header", "bad header"), "header"),
        (("--url", "http://x", "--insecure"), "https"),
    ],
)
def test_node_add_rejects_bad_input(invoke, home, args, needle):
    r = invoke("node", "add", "p", *args)
    assert r.exit_code == 2, r
    assert needle in r.stderr
    assert not (home / "config.toml").exists()


def test_node_add_bad_name(invoke, home):
    r = invoke("node", "add", "-bad", "--url", "https://x")
    assert r.exit_code == 2
    r = invoke("node", "add", "a/b", "--url", "https://x")
    assert r.exit_code == 2 and "invalid profile name" in r.stderr


def test_node_list_empty(invoke):
    r = invoke("node", "list")
    assert r.exit_code == 0 and r.stdout == ""
    assert invoke("node", "list", "-o", "json").stdout.strip() == "[]"


def test_https_against_plain_http_port_is_explained(invoke, plain_emulator):
    url = plain_emulator.url.replace("http://", "https://")
    r = invoke("node", "info", "--url", url, "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 6, r
    assert "does not answer with TLS" in r.stderr and "http://" in r.stderr


def test_profile_names_complete_in_the_shell(invoke, run_cli, home):
    for name in ("prod", "prod-ak", "lab"):
        assert invoke("node", "add", name, "--url", "https://x:9092").exit_code == 0
    env = {"_NODECLI_COMPLETE": "bash_complete", "COMP_WORDS": "nodecli node show pr",
           "COMP_CWORD": "3"}
    r = run_cli(env=env)
    assert r.stdout.split() == ["plain,prod", "plain,prod-ak"]
    env["COMP_WORDS"], env["COMP_CWORD"] = "nodecli node info --node l", "4"
    assert run_cli(env=env).stdout.split() == ["plain,lab"]


def test_insecure_profile_warns_on_every_use(invoke, tls_emulator):
    r = invoke("node", "add", "lab", "--url", tls_emulator.url, "--user", "admin",
               "--insecure", "--password-stdin", input=PW)
    assert r.exit_code == 0 and "TLS verification is OFF" in r.stderr
    assert "NOT VERIFIED" in invoke("node", "list").stdout
    for _ in range(2):
        info = invoke("node", "info", "--node", "lab")
        assert info.exit_code == 0, info
        assert "TLS verification is OFF" in info.stderr


def test_401_hint_names_the_environment_as_source(invoke, emulator):
    r = invoke("node", "info", "--url", emulator.url,
               env={"NODECLI_USER": "admin", "NODECLI_PASSWORD": "bad"})
    assert r.exit_code == 4, r
    assert "node user from the environment; secret from NODECLI_PASSWORD" in r.stderr


@pytest.mark.parametrize("kind", ["node", "service"])
@pytest.mark.parametrize("unset", ["--unset", "--clear"])
def test_default_profile_behaves_the_same_for_nodes_and_services(invoke, tmp_path, kind, unset):
    token = tmp_path / "tok"
    token.write_text("opaque-token\n")
    extra = ["--token-file", str(token)] if kind == "service" else ["--access-key", "ak"]
    for name in ("a", "b"):
        r = invoke(kind, "add", name, "--url", "https://h.example:9092", *extra)
        assert r.exit_code == 0, r.stderr
    assert invoke(kind, "default", "b").exit_code == 0
    assert invoke(kind, "default").stdout == "b\n"
    r = invoke(kind, "default", "zz")
    assert r.exit_code == 5 and f"no {kind} profile 'zz' (profiles: a, b)" in r.stderr
    assert invoke(kind, "default").stdout == "b\n"  # a refused change changed nothing
    r = invoke(kind, "default", "a", unset)
    assert r.exit_code == 2 and "not both" in r.stderr
    assert invoke(kind, "default", unset).exit_code == 0
    r = invoke(kind, "default")
    assert r.stdout == "" and f"no default {kind} profile" in r.stderr
