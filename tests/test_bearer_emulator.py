"""Bearer tokens end to end: register the verification key, then transfer start.

The emulator verifies tokens as a node would: signature with the access key's
registered key, expiry, scope, and the access-key header.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from pathlib import Path

import pytest

from nodecli.tokens.wire import create_token

PW = "admin-pass\n"


@functools.cache
def _key(n: int = 0):
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _public_pem(tmp_path: Path, key) -> Path:
    from cryptography.hazmat.primitives import serialization

    pub = tmp_path / "public.pem"
    pub.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return pub


def _token_file(tmp_path: Path, token: str, name: str = "token") -> Path:
    path = tmp_path / name
    path.write_text(token + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def registered(invoke, emulator, tmp_path):
    """Access key 'akb' with the public half of _key() registered through the CLI."""
    emulator.add_access_key("akb", "akb-secret")
    pub = _public_pem(tmp_path, _key())
    r = invoke("access-key", "set-verification-key", "akb", "--public-key", str(pub),
               "--url", emulator.url, "--user", "admin", "--password-stdin", input=PW)
    assert r.exit_code == 0, r
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"direction": "receive", "remote_host": "demo",
                                "paths": [{"source": "/data/a.txt"}]}))
    return spec


def _start(invoke, emulator, spec, token_file, *extra, ak="akb"):
    return invoke("transfer", "start", "--spec", str(spec), "--url", emulator.url,
                  "--access-key", ak, "--bearer-file", str(token_file), *extra)


def test_bearer_accepted_for_transfer_start(invoke, emulator, tmp_path, registered):
    tok = _token_file(tmp_path, create_token(_key(), "akb", "user-42", role="user"))
    r = _start(invoke, emulator, registered, tok, "-o", "json")
    assert r.exit_code == 0, r
    data = json.loads(r.stdout)
    assert data["status"] == "running"
    assert data["transfer_spec"]["remote_host"] == "demo"
    assert emulator.state.transfers[-1]["id"] == data["id"]


def test_bearer_from_env_and_profile(invoke, emulator, tmp_path, registered):
    token = create_token(_key(), "akb", "user-42")
    r = invoke("transfer", "start", "--spec", str(registered), "--url", emulator.url,
               "--access-key", "akb", env={"NODECLI_BEARER": token})
    assert r.exit_code == 0, r
    tok = _token_file(tmp_path, token)
    assert invoke("node", "add", "b", "--url", emulator.url, "--access-key", "akb",
                  "--bearer-file", str(tok)).exit_code == 0
    assert invoke("transfer", "start", "--spec", str(registered)).exit_code == 0


def test_expired_token_refused(invoke, emulator, tmp_path, registered):
    past = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    tok = _token_file(tmp_path, create_token(_key(), "akb", "u", expires_at=past))
    r = _start(invoke, emulator, registered, tok)
    assert r.exit_code == 4, r
    assert "expired" in r.stderr
    assert "set-verification-key" in r.stderr  # the 401 hint for bearer tokens


def test_token_signed_by_another_key_refused(invoke, emulator, tmp_path, registered):
    tok = _token_file(tmp_path, create_token(_key(1), "akb", "u"))
    r = _start(invoke, emulator, registered, tok)
    assert r.exit_code == 4, r
    assert "signature" in r.stderr


def test_token_for_another_access_key_refused(invoke, emulator, tmp_path, registered):
    tok = _token_file(tmp_path, create_token(_key(), "other-ak", "u"))
    r = _start(invoke, emulator, registered, tok)
    assert r.exit_code == 4, r
    assert "does not grant access key 'akb'" in r.stderr


def test_unregistered_key_and_unknown_key_refused(invoke, emulator, tmp_path, registered):
    emulator.add_access_key("nokey", "s")
    tok = _token_file(tmp_path, create_token(_key(), "nokey", "u"))
    r = _start(invoke, emulator, registered, tok, ak="nokey")
    assert r.exit_code == 4 and "no token_verification_key" in r.stderr
    r = _start(invoke, emulator, registered, tok, ak="ghost")
    assert r.exit_code == 4 and "unknown access key" in r.stderr


def test_wrong_access_key_header_refused(invoke, emulator, tmp_path, registered):
    tok = _token_file(tmp_path, create_token(_key(), "akb", "u"))
    r = _start(invoke, emulator, registered, tok, "--access-key-header", "X-Other-AccessKey")
    assert r.exit_code == 4, r
    assert "X-Vendor-AccessKey" in r.stderr


def test_garbage_token_refused(invoke, emulator, tmp_path, registered):
    tok = _token_file(tmp_path, "not-a-token")
    r = _start(invoke, emulator, registered, tok)
    assert r.exit_code == 4, r
    assert "invalid token" in r.stderr


def test_bearer_redacted_from_verbose_log(invoke, emulator, tmp_path, registered):
    token = create_token(_key(), "akb", "u")
    tok = _token_file(tmp_path, token)
    r = invoke("-v", "transfer", "start", "--spec", str(registered), "--url", emulator.url,
               "--access-key", "akb", "--bearer-file", str(tok))
    assert r.exit_code == 0, r
    assert "> POST" in r.stderr
    assert token not in r.stderr and token[:40] not in r.stderr


def test_user_role_cannot_change_the_key_admin_role_can(emulator, tmp_path, registered):
    from nodecli.errors import AuthError
    from nodecli.http.client import Auth, open_client
    from nodecli.node.access_keys import set_verification_key

    pem = _public_pem(tmp_path, _key()).read_text()
    user_tok = create_token(_key(), "akb", "u", role="user")
    client = open_client(emulator.endpoint(Auth("bearer", token=user_tok,
                                                     access_key="akb")))
    with pytest.raises(AuthError) as exc:
        set_verification_key(client, "akb", pem)
    assert exc.value.status == 403
    admin_tok = create_token(_key(), "akb", "u", role="admin")
    client = open_client(emulator.endpoint(Auth("bearer", token=admin_tok,
                                                     access_key="akb")))
    set_verification_key(client, "akb", pem)


def test_custom_access_key_header(tmp_path):
    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.app import build_server
    from nodecli.http.client import Auth, Endpoint, open_client

    paths = resolve_paths(tmp_path / "emu")
    server = build_server(paths, tls=False, access_key_header="X-Other-AccessKey").start()
    try:
        server.state.create_access_key("admin", {"id": "akh", "secret": "s",
                                                 "storage": {"type": "local", "path": "/"}})
        pem = _public_pem(tmp_path, _key()).read_text()
        server.state.access_keys["akh"].token_verification_key = pem
        token = create_token(_key(), "akh", "u")
        good = Auth("bearer", token=token, access_key="akh",
                    access_key_header="X-Other-AccessKey")
        out = open_client(Endpoint(server.url, good)).json(
            "POST", "/ops/transfers", json_body={"a": 1})
        assert out["status"] == "running"
    finally:
        server.stop()
