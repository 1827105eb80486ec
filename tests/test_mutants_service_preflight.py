"""What the survivors of mutation testing of nodecli/service/preflight.py showed untested
(issue 33): what `service add` and `service show` say a token holds (its user, groups,
scopes and expiry, or that it has no expiry), as a user reads it. Against the emulator's
collaboration service (HTTPS) where a call is made.
"""

from __future__ import annotations

import json

import pytest

from nodecli.emulator.operations import mint_service_token
from tests.test_operations import service as service  # the fixture

FILE_SECRETS = {"NODECLI_SECRETS_BACKEND": "file"}


def _envelope(claims: dict) -> str:
    """A token in the interface.md 2.5 envelope (not signed by a key anyone checks)."""
    from nodecli.tokens.wire import encode_token

    return encode_token(json.dumps(claims, separators=(",", ":")).encode(), b"\x01" * 256)


def _add(invoke, service, token: str):
    return invoke("service", "add", "emu", "--url", service.emulator.url, "--token-stdin",
                  input=token + "\n", env=FILE_SECRETS)


def test_show_gives_each_thing_the_token_says(invoke, service):
    from datetime import UTC, datetime

    token = mint_service_token(service.state, "u1", "user:all self", group_ids=["g1", "g2"],
                               expires_at=datetime(2099, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert _add(invoke, service, token).exit_code == 0
    r = invoke("service", "show", "emu", "-o", "json", env=FILE_SECRETS)
    info = json.loads(r.stdout)["token_info"]
    left = info.pop("seconds_left")
    assert info == {"user_id": "u1", "group_ids": ["g1", "g2"], "scopes": ["user:all", "self"],
                    "expires_at": "2099-01-02T03:04:05Z"}
    assert isinstance(left, int) and left > 70 * 365 * 86400


def test_a_token_without_an_expiry_shows_none_and_is_refused_before_any_call(invoke,
                                                                            service):
    token = _envelope({"user_id": "u1", "scope": "user:all"})
    assert _add(invoke, service, token).exit_code == 0
    r = invoke("service", "show", "emu", "-o", "json", env=FILE_SECRETS)
    info = json.loads(r.stdout)["token_info"]
    assert (info["expires_at"], info["seconds_left"], info["user_id"]) == (None, None, "u1")
    r = invoke("operations", "list", env=FILE_SECRETS)
    assert r.exit_code == 4
    assert r.stderr.splitlines() == [
        "nodecli: error: the service access token has no valid expires_at",
        "hint: get a new token from the authorization server"]
    assert service.requests == []


@pytest.mark.parametrize(("user", "shown"), [
    ("alice", "alice"),
    ("u" * 80, "u" * 80),
    ("u" * 79 + "XY", "u" * 79 + "…"),
])
def test_add_names_the_user_of_the_token(invoke, service, user, shown):
    token = mint_service_token(service.state, user, "user:all")
    r = _add(invoke, service, token)
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[-1] == (
        f"saved service profile 'emu': {service.emulator.url}; a token of user {shown}, "
        "kept in the secrets file")


def test_an_expired_token_is_refused_with_the_fix(invoke, service):
    token = mint_service_token(service.state, "u1", "user:all", -90)
    r = invoke("operations", "list", env={**service.env, "NODECLI_TOKEN": token})
    assert r.exit_code == 4
    (error, hint) = r.stderr.splitlines()
    assert error.startswith("nodecli: error: the service access token expired at ")
    assert error.endswith(" ago); nothing was sent")
    assert hint == ("hint: get a new token and give it with --token-file F, NODECLI_TOKEN, or "
                    "'nodecli service add NAME --url URL --force'")
    assert service.requests == []


def test_a_token_without_the_scope_is_refused_naming_what_it_has(invoke, service):
    token = mint_service_token(service.state, "u1", "self node.ak1:user:all")
    r = invoke("operations", "list", env={**service.env, "NODECLI_TOKEN": token})
    assert r.exit_code == 4
    assert r.stderr.splitlines() == [
        "nodecli: error: the service access token does not allow listing operations: it "
        "needs scope user:all or admin:all and has: self node.ak1:user:all; nothing was sent",
        "hint: ask the authorization server for a token with scope user:all"]
    assert service.requests == []


def test_a_token_with_one_second_left_still_goes():
    from datetime import UTC, datetime, timedelta

    from nodecli.errors import AuthError
    from nodecli.service.preflight import preflight

    now = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)

    def token(left: int) -> str:
        when = (now + timedelta(seconds=left)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return _envelope({"user_id": "u1", "scope": "user:all", "expires_at": when})

    assert preflight(token(1), now=now).seconds_left == 1
    with pytest.raises(AuthError):
        preflight(token(0), now=now)


def test_claims_of_the_wrong_type_are_not_taken(invoke, service):
    """A scope that is not a string holds no scope; group ids that are not a list are
    not shown as groups."""
    token = _envelope({"user_id": "u1", "scope": ["user:all"], "group_ids": "g1",
                       "expires_at": "2099-01-01T00:00:00Z"})
    assert _add(invoke, service, token).exit_code == 0
    r = invoke("service", "show", "emu", "-o", "json", env=FILE_SECRETS)
    info = json.loads(r.stdout)["token_info"]
    assert (info["scopes"], info["group_ids"]) == ([], None)
    r = invoke("operations", "list", env=FILE_SECRETS)
    assert r.exit_code == 4 and "has: none; nothing was sent" in r.stderr
    assert service.requests == []


def test_verbose_says_why_the_pre_flight_was_skipped(invoke, service):
    why = ("invalid token: token is not base64: character '-' at offset 3 (URL-safe base64 "
           "is not used by tokens)")
    r = invoke("-v", "operations", "list", env={**service.env, "NODECLI_TOKEN": "not-a-token"})
    assert r.exit_code == 4
    assert (f"pre-flight skipped: the token from NODECLI_TOKEN is opaque (not the documented "
            f"envelope: {why}); it is sent as it is and the service decides") in r.stderr
