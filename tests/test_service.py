"""Service resolution (flag > env > profile > default) and the token pre-flight."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from nodecli.config.model import Config, ServiceProfile
from nodecli.errors import AuthError, NotFoundError, UsageError
from nodecli.profiles.service import ServiceFlags, resolve_service
from nodecli.service.preflight import preflight

NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


def _token(scope: str = "user:all", expires: datetime | None = None, **extra) -> str:
    """A token in the interface.md 2.5 envelope; the signature is not checked here."""
    import json

    from nodecli.tokens.wire import encode_token

    claims = {"user_id": "u1", **extra, "scope": scope,
              "expires_at": (expires or NOW + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    return encode_token(json.dumps(claims, separators=(",", ":")).encode(), b"\x01" * 256)


def _cfg(tmp_path) -> Config:
    tok = tmp_path / "tok"
    tok.write_text("file-token\n")
    cfg = Config()
    cfg.services["a"] = ServiceProfile("a", "https://a.example", cacert="/ca.pem")
    cfg.services["b"] = ServiceProfile("b", "https://b.example", token_file=str(tok))
    cfg.default_service = "a"
    return cfg


def _lookup(key: str) -> str | None:
    return {"service:a": "stored-a"}.get(key)


def test_default_profile_and_stored_token(tmp_path):
    t = resolve_service(_cfg(tmp_path), ServiceFlags(), {}, _lookup)
    assert t.endpoint.base_url == "https://a.example"
    assert t.endpoint.cacert == "/ca.pem"
    assert t.token == "stored-a" and t.endpoint.auth.kind == "oauth"
    assert t.endpoint.auth.headers() == {"Authorization": "Bearer stored-a"}


def test_precedence_flag_env_profile(tmp_path):
    cfg = _cfg(tmp_path)
    env = {"NODECLI_SERVICE": "b", "NODECLI_TOKEN": "env-token",
           "NODECLI_SERVICE_URL": "https://env.example"}
    t = resolve_service(cfg, ServiceFlags(), env, _lookup)
    assert (t.endpoint.base_url, t.token) == ("https://env.example", "env-token")
    t = resolve_service(cfg, ServiceFlags(service="a", url="https://flag.example"), env, _lookup)
    assert (t.endpoint.base_url, t.token) == ("https://flag.example", "env-token")
    t = resolve_service(cfg, ServiceFlags(service="b"), {}, _lookup)
    assert t.token == "file-token"  # the profile's token file beats nothing else
    flag_file = tmp_path / "flag"
    flag_file.write_text("Bearer flag-token")
    t = resolve_service(cfg, ServiceFlags(token_file=str(flag_file)), env, _lookup)
    assert t.token == "flag-token"


def test_url_without_profile_has_no_token(tmp_path):
    t = resolve_service(_cfg(tmp_path), ServiceFlags(url="https://x.example"), {}, _lookup)
    assert t.profile is None and t.token is None


def test_errors(tmp_path):
    with pytest.raises(NotFoundError):
        resolve_service(_cfg(tmp_path), ServiceFlags(service="zz"), {})
    with pytest.raises(UsageError):
        resolve_service(Config(), ServiceFlags(), {})
    with pytest.raises(UsageError):
        resolve_service(Config(), ServiceFlags(url="ftp://x"), {})
    with pytest.raises(UsageError):
        resolve_service(Config(), ServiceFlags(url="https://x", token_file=str(tmp_path)), {})


def test_preflight_accepts_user_or_admin_scope():
    assert preflight(_token("user:all"), now=NOW).user_id == "u1"
    assert preflight(_token("self admin:all"), now=NOW).scopes == ["self", "admin:all"]
    info = preflight(_token(group_ids=["g1", "g0"]), now=NOW)
    assert info.group_ids == ["g1", "g0"] and info.seconds_left == 3600


@pytest.mark.parametrize(("token", "text"), [
    (_token(expires=NOW - timedelta(seconds=5)), "expired at 2030-06-01T11:59:55Z (5s ago)"),
    (_token(expires=NOW), "expired"),
    (_token("self"), "needs scope user:all or admin:all and has: self"),
    (_token("node.ak:admin:all"), "has: node.ak:admin:all"),
    (_token(""), "has: none"),
    (_token(expires=NOW - timedelta(days=1)), "(1d ago)"),
])
def test_preflight_refusals(token, text):
    with pytest.raises(AuthError) as info:
        preflight(token, now=NOW)
    assert text in info.value.message


@pytest.mark.parametrize("token", ["garbage", "eyJhbGciOiJIUzI1NiJ9.e30.sig", "a" * 5000,
                                   "opaque-\u00e9-token"])
def test_preflight_lets_an_opaque_token_through(token):
    """interface.md 2.5: "opaque to clients". Not the envelope: nothing is known, the
    token is sent and the service decides."""
    info = preflight(token, now=NOW)
    assert info.opaque and info.user_id is None and info.scopes == []
    assert info.as_dict() == {"opaque": True, "contents": "unknown"}
    assert info.who() == "opaque: contents unknown"
