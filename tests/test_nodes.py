"""Node profiles, access keys and transfers directly: profile validation, spec and key
parsing (hostile input)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.errors import ConflictError, NotFoundError, UsageError
from nodecli.node.access_keys import create_access_key, read_public_key_pem
from nodecli.node.info import info_document
from nodecli.node.transfers import load_transfer_spec
from nodecli.profiles import set_default
from nodecli.profiles.node import (
    ProfileSpec,
    add_profile,
    list_profiles,
    remove_profile,
    show_profile,
    validate_profile,
)

HYPO = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


_URLS = st.text(max_size=80) | st.from_regex(
    r"https?://[^/\s]{1,20}(:[0-9]{1,6})?(/\S{0,12})?", fullmatch=True)


@given(name=st.text(max_size=40) | st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,10}",
                                                 fullmatch=True),
       url=_URLS,
       user=st.none() | st.text(max_size=20), header=st.none() | st.text(max_size=30))
@HYPO
def test_validate_profile_never_crashes(name, url, user, header):
    try:
        p = validate_profile(ProfileSpec(name, url, user=user, access_key_header=header))
    except UsageError as exc:
        assert exc.message
        return
    # what is accepted is storable: it survives a config round trip
    from nodecli.config.model import Config
    from nodecli.config.store import dump_config, parse_config_bytes

    cfg = Config()
    cfg.nodes[p.name] = p
    assert parse_config_bytes(dump_config(cfg), "x").nodes[p.name] == p


@given(st.binary(max_size=300))
@HYPO
def test_transfer_spec_hostile_bytes(tmp_path, data):
    path = tmp_path / "spec.json"
    path.write_bytes(data)
    try:
        spec = load_transfer_spec(str(path))
    except UsageError as exc:
        assert "transfer spec" in exc.message
        return
    assert isinstance(spec, dict)


def test_transfer_spec_deep_nesting_and_size(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(UsageError):
        load_transfer_spec(str(deep))
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"x": "a" * (1024 * 1024 + 10)}))
    with pytest.raises(UsageError, match="larger than"):
        load_transfer_spec(str(big))
    with pytest.raises(NotFoundError, match="no such file"):
        load_transfer_spec(str(tmp_path / "missing.json"))
    with pytest.raises(UsageError, match="is a folder"):
        load_transfer_spec(str(tmp_path))


@given(st.binary(max_size=400))
@HYPO
def test_public_key_hostile_bytes(tmp_path, data):
    path = tmp_path / "k.pem"
    path.write_bytes(b"-----BEGIN PUBLIC KEY-----\n" + data)
    with pytest.raises(UsageError):
        read_public_key_pem(str(path))


def test_public_key_not_rsa_is_refused(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "ec.pem"
    path.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    with pytest.raises(UsageError, match="not RSA"):
        read_public_key_pem(str(path))


def test_profile_functions(home):
    from nodecli.config.paths import resolve_paths
    from nodecli.config.store import ConfigStore

    paths = resolve_paths(home)
    store = ConfigStore(paths)
    shown = add_profile(store, paths, ProfileSpec("a", "https://a:9092/", user="u"), "pw")
    assert shown["url"] == "https://a:9092" and shown["default"] is True
    assert shown["secret_stored"] is True
    add_profile(store, paths, ProfileSpec("b", "https://b:9092", access_key="AK"))
    with pytest.raises(ConflictError):
        add_profile(store, paths, ProfileSpec("a", "https://a2:9092"))
    assert [r["name"] for r in list_profiles(store.load())] == ["a", "b"]
    set_default(store, "node", "b")
    assert show_profile(store.load(), paths, None)["name"] == "b"
    with pytest.raises(NotFoundError):
        set_default(store, "node", "zz")
    assert remove_profile(store, paths, "b") is True
    assert store.load().default_node is None
    with pytest.raises(UsageError, match="no default"):
        show_profile(store.load(), paths, None)
    assert "pw" not in (home / "config.toml").read_text()


def test_node_info_normalises_capabilities(emulator):
    from nodecli.http.client import Auth, open_client

    client = open_client(emulator.endpoint(Auth("basic", "admin", "admin-pass")))
    info = info_document(client)
    assert all(set(c) == {"name", "value"} for c in info["capabilities"])
    assert info["transfer_user"] == "xfer"


def test_create_access_key_input_checks(emulator):
    from nodecli.http.client import Auth, open_client

    client = open_client(emulator.endpoint(Auth("basic", "admin", "admin-pass")))
    with pytest.raises(UsageError, match="not supported"):
        create_access_key(client, "s3", "/x")
    with pytest.raises(UsageError, match="invalid access key id"):
        create_access_key(client, "local", "/x", "bad id")
    assert emulator.state.access_keys == {}


@pytest.mark.skipif(sys.platform == "win32", reason="pty")
def test_prompts_in_a_real_terminal(emulator, home):
    import pexpect

    from tests.conftest import nodecli_cmd, subprocess_env

    cmd = nodecli_cmd("node", "info", "--url", emulator.url, "--user", "admin")
    child = pexpect.spawn(cmd[0], cmd[1:], env=subprocess_env(), encoding="utf-8",
                          timeout=30)
    child.expect("Password of node user 'admin'")
    child.sendline("admin-pass")
    child.expect("transfer user +xfer")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "admin-pass" not in (child.before or "")

    cmd = nodecli_cmd("node", "add", "t", "--url", emulator.url, "--user", "admin")
    child = pexpect.spawn(cmd[0], cmd[1:], env=subprocess_env(), encoding="utf-8",
                          timeout=30)
    child.expect("to store")
    child.sendline("admin-pass")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    secrets = Path(os.environ["NODECLI_HOME"]) / "secrets.toml"
    assert "admin-pass" in secrets.read_text()
    assert "admin-pass" not in (Path(os.environ["NODECLI_HOME"]) / "config.toml").read_text()
