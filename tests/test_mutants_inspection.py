"""What `token inspect -o json` reports, field by field, and what a scope grants: the
fields mutation testing found unread (group ids, auth type, expiry, payload size,
problems), the scopes that are not node scopes, and the one implication there is (an
access key's admin scope grants its user scope, nothing else). In-process, on tokens
with a fixed fake signature (inspection never checks one)."""

from __future__ import annotations

import base64
import json
import zlib
from datetime import UTC, datetime

from nodecli.tokens import wire
from nodecli.tokens.inspection import has_scope, inspect, parse_scope

NOW = datetime(2030, 6, 15, 12, 0, 0, tzinfo=UTC)
SIG = base64.b64encode(b"\x01" * 256)


def _token(claims: dict) -> tuple[str, bytes]:
    payload = json.dumps(claims, separators=(",", ":")).encode()
    return base64.b64encode(zlib.compress(payload + wire.DELIMITER + SIG)).decode(), payload


def test_the_json_report_of_a_node_token_field_by_field(invoke) -> None:
    claims = {"user_id": "alice", "group_ids": ["eng", "staff"], "scope": "node.AK1:admin:all",
              "auth_type": "access_key", "expires_at": "2030-06-15T13:00:00Z"}
    token, payload = _token(claims)
    assert inspect(token, now=NOW).as_dict() == {
        "claims": claims, "user_id": "alice", "group_ids": ["eng", "staff"],
        "auth_type": "access_key",
        "scopes": [{"scope": "node.AK1:admin:all", "kind": "node", "access_key": "AK1",
                    "role": "admin", "resource": "all"}],
        "expires_at": "2030-06-15T13:00:00Z", "expired": False, "seconds_left": 3600,
        "signature_bits": 2048, "payload_bytes": len(payload), "problems": [],
    }
    r = invoke("token", "inspect", "-o", "json", token)
    shown = json.loads(r.stdout)
    assert r.exit_code == 0 and shown["payload_bytes"] == len(payload)
    assert shown["expires_at"] == "2030-06-15T13:00:00Z" and shown["group_ids"] == ["eng", "staff"]


def test_the_json_report_of_a_token_with_problems() -> None:
    claims = {"user_id": True, "scope": "user:all admin:all self weird:one",
              "expires_at": "soon"}
    token, _ = _token(claims)
    report = inspect(token, now=NOW).as_dict()
    assert report["problems"] == ["user_id is neither text, number nor object",
                                  "expires_at 'soon' is not an ISO 8601 time"]
    assert report["expires_at"] is None and report["expired"] is None
    assert report["group_ids"] is None and report["auth_type"] is None
    assert report["scopes"] == [
        {"scope": "user:all", "kind": "user", "access_key": None, "role": "user",
         "resource": "all"},
        {"scope": "admin:all", "kind": "admin", "access_key": None, "role": "admin",
         "resource": "all"},
        {"scope": "self", "kind": "self", "access_key": None, "role": None, "resource": None},
        {"scope": "weird:one", "kind": "other", "access_key": None, "role": None,
         "resource": None},
    ]


def test_scopes_given_as_a_list_keep_only_the_names() -> None:
    assert [s.raw for s in parse_scope(["node.AK:user:all", 5, None, "self"])] == [
        "node.AK:user:all", "self"]
    assert parse_scope(None) == []


def test_an_admin_scope_grants_the_user_scope_of_its_key_and_nothing_else() -> None:
    admin = {"scope": "node.AK:admin:all"}
    assert has_scope(admin, "node.AK:user:all")
    assert not has_scope(admin, "node.AK:weird:all")       # only "user" is implied
    assert not has_scope(admin, "node.AK:user:all node.B:user:all")  # two at once: exact only
    assert not has_scope(admin, "node.AK:user:other")
    assert not has_scope({"scope": "admin:all"}, "user:all")


def test_claims_that_are_not_an_object_grant_nothing() -> None:
    assert not has_scope(None, "self")  # type: ignore[arg-type]
    assert not has_scope(["self"], "self")  # type: ignore[arg-type]
    assert has_scope({"scope": "a self"}, "self")
