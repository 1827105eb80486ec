"""Which node and credentials a remote command uses: flag > env > profile > default."""

from __future__ import annotations

import pytest

from nodecli.config.model import Config, NodeProfile
from nodecli.errors import NotFoundError, UsageError
from nodecli.profiles.node import NodeFlags, resolve_node


def _cfg() -> Config:
    cfg = Config()
    cfg.nodes["prod"] = NodeProfile("prod", "https://prod:9092", user="admin",
                                    cacert="/etc/ca.pem")
    cfg.nodes["ak"] = NodeProfile("ak", "https://ak:9092", access_key="AK1",
                                  access_key_header="X-Other-AccessKey")
    cfg.default_node = "prod"
    return cfg


def test_default_profile_used_when_nothing_given():
    t = resolve_node(_cfg(), NodeFlags(), {}, lambda key: "stored" if key == "node:prod" else None)
    assert t.endpoint.base_url == "https://prod:9092"
    assert t.endpoint.auth.username == "admin" and t.endpoint.auth.password == "stored"
    assert t.endpoint.cacert == "/etc/ca.pem"
    assert t.secret_needed is None


def test_flag_beats_env_beats_profile():
    env = {"NODECLI_URL": "https://env:9092", "NODECLI_USER": "envuser",
           "NODECLI_PASSWORD": "envpass"}
    t = resolve_node(_cfg(), NodeFlags(url="https://flag:9092"), env)
    assert t.endpoint.base_url == "https://flag:9092"
    assert t.endpoint.auth.username == "envuser"
    assert t.endpoint.auth.password == "envpass"
    t = resolve_node(_cfg(), NodeFlags(node="prod", user="flaguser"), env)
    assert t.endpoint.base_url == "https://env:9092"
    assert t.endpoint.auth.username == "flaguser"


def test_missing_secret_is_reported_not_invented():
    t = resolve_node(_cfg(), NodeFlags(url="https://x:9092", user="bob"), {})
    assert t.secret_needed == "password of node user 'bob'"
    assert t.with_secret("pw").auth.password == "pw"


def test_bearer_needs_access_key_and_uses_profile_header(tmp_path):
    token = tmp_path / "tok"
    token.write_text("Bearer abc123\n")
    t = resolve_node(_cfg(), NodeFlags(node="ak", bearer_file=str(token)), {})
    assert t.endpoint.auth.kind == "bearer"
    assert t.endpoint.auth.headers() == {"Authorization": "Bearer abc123",
                                         "X-Other-AccessKey": "AK1"}
    with pytest.raises(UsageError, match="--access-key"):
        resolve_node(Config(), NodeFlags(url="https://x", bearer_file=str(token)), {})


def test_unknown_profile_and_no_node():
    with pytest.raises(NotFoundError, match="no node profile 'nope'"):
        resolve_node(_cfg(), NodeFlags(node="nope"), {})
    with pytest.raises(UsageError, match="no node given"):
        resolve_node(Config(), NodeFlags(), {})
    with pytest.raises(UsageError, match="https://"):
        resolve_node(Config(), NodeFlags(url="ftp://x", user="u"), {})


def test_access_key_flag_takes_the_bearer_from_the_environment():
    env = {"NODECLI_BEARER": "tok-from-env"}
    t = resolve_node(Config(), NodeFlags(url="https://x", access_key="AK9"), env)
    assert t.endpoint.auth.kind == "bearer"
    assert t.endpoint.auth.headers()["X-Vendor-AccessKey"] == "AK9"
    # an explicit secret means HTTP Basic with the access key instead
    t = resolve_node(Config(), NodeFlags(url="https://x", access_key="AK9", password="s"), env)
    assert t.endpoint.auth.kind == "basic" and t.endpoint.auth.password == "s"


def test_auth_notes_say_where_credentials_came_from():
    t = resolve_node(_cfg(), NodeFlags(), {}, lambda key: "s3cr3t-from-store")
    assert t.endpoint.auth.password == "s3cr3t-from-store"
    assert t.endpoint.auth.describe() == (
        "HTTP Basic as 'admin' (node user from the profile 'prod'; "
        "secret stored with profile 'prod')")
    t = resolve_node(_cfg(), NodeFlags(url="https://x", user="bob"), {})
    typed = t.with_secret("pw-typed-9").auth
    assert typed.describe() == (
        "HTTP Basic as 'bob' (node user from the flag; secret typed at the prompt)")
    assert "pw-typed-9" not in typed.describe() and typed.password == "pw-typed-9"
