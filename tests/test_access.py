"""Access to node storage over real sockets: access keys, permissions, visibility.

The emulator enforces interface.md 5.1 for every route, /events included, and 6.2
(per-key logging over the node setting). The tests prove the rules through the CLI: a
user without permission sees nothing of a folder that has events, a group permission
is honoured, a revoked permission stops new events from being visible.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.errors import UsageError
from nodecli.tokens.wire import create_token

PW = "admin-pass\n"


@functools.cache
def _key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem() -> str:
    from cryptography.hazmat.primitives import serialization

    return _key().public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


class Node:
    """The emulator, an access key 'ak1' on /data with a verification key, and helpers."""

    def __init__(self, emulator, invoke, tmp_path: Path) -> None:
        from nodecli.emulator.events import log_for
        from nodecli.emulator.storage import storage_of

        self.emulator, self.invoke, self.tmp = emulator, invoke, tmp_path
        self.state = emulator.state
        self.log = log_for(emulator.state)
        self.storage = storage_of(emulator.state)
        emulator.add_access_key("ak1", "ak1-secret")
        self.state.access_keys["ak1"].token_verification_key = _pem()
        self.state.access_keys["ak1"].storage = {"type": "local", "path": "/data"}
        self.admin = {"NODECLI_URL": emulator.url, "NODECLI_USER": "admin",
                      "NODECLI_PASSWORD": "admin-pass"}
        self.ak = {"NODECLI_URL": emulator.url, "NODECLI_ACCESS_KEY": "ak1",
                   "NODECLI_PASSWORD": "ak1-secret"}

    def bearer(self, user: str, groups: list[str] | None = None, role: str = "user",
               ak: str = "ak1") -> dict[str, str]:
        token = create_token(_key(), ak, user, groups, role=role)
        path = self.tmp / f"{user}-{role}.tok"
        path.write_text(token + "\n")
        path.chmod(0o600)
        return {"NODECLI_URL": self.emulator.url, "NODECLI_ACCESS_KEY": ak,
                "NODECLI_BEARER": token}

    def file_event(self, path: str) -> str:
        """A file lands at ``path``: its file.created event (tied to its file id)."""
        node = self.storage.ensure(path, "file", 10)
        stored = self.log.append({"user_id": "svc", "types": ["file.created"],
                                  "data": {"id": node.id, "path": node.path, "size": 10,
                                           "type": "file"}})
        assert stored is not None
        return stored["id"]

    def events(self, env: dict[str, str]) -> list[dict]:
        r = self.invoke("events", "tail", "--since", "1d", "-o", "jsonl", env=env)
        assert r.exit_code == 0, r.stderr
        return [json.loads(line) for line in r.stdout.splitlines()]

    def paths_seen(self, env: dict[str, str]) -> set[str]:
        seen = set()
        for e in self.events(env):
            data = e.get("data") or {}
            node = self.storage.by_id.get(str(data.get("file_id") or data.get("id")))
            seen.add(node.path if node else "?")
        return seen


@pytest.fixture
def node(emulator, invoke, tmp_path) -> Node:
    return Node(emulator, invoke, tmp_path)


# -- access keys -----------------------------------------------------------------------------


def test_list_show_and_verification_key_fingerprint(node, invoke):
    r = invoke("access-key", "list", "-o", "json", env=node.admin)
    assert r.exit_code == 0, r.stderr
    (key,) = json.loads(r.stdout)
    assert key["id"] == "ak1" and key["root_file_id"]
    r = invoke("access-key", "show", "ak1", "-o", "json", env=node.admin)
    shown = json.loads(r.stdout)
    from nodecli.tokens.keys import key_fingerprint

    assert shown["verification_key_fingerprint"] == key_fingerprint(_key().public_key())
    assert shown["activity_event_logging"] == {
        "key": None, "node": True, "events_logged": True,
        "why": "the node setting (the key has none of its own)"}
    r = invoke("access-key", "show", "ak1", env=node.admin)
    assert "SHA256:" in r.stdout and "not set (inherits the node's)" in r.stdout


def test_list_follows_pages_until_the_end(node, invoke):
    for i in range(250):
        node.emulator.add_access_key(f"k{i:03d}", "s")
    r = invoke("access-key", "list", "-o", "json", env=node.admin)
    assert r.exit_code == 0, r.stderr
    assert len(json.loads(r.stdout)) == 251


def test_per_key_logging_overrides_the_node_both_ways(node, invoke):
    r = invoke("access-key", "set", "ak1", "--activity-event-logging", "off", env=node.admin)
    assert r.exit_code == 0, r.stderr
    assert node.state.access_keys["ak1"].configuration == {"activity_event_logging": False}
    assert node.log.append({"types": ["file.created"], "data": {}}, access_key="ak1") is None
    assert node.log.append({"types": ["file.created"], "data": {}}) is not None
    r = invoke("access-key", "show", "ak1", "-o", "json", env=node.admin)
    assert json.loads(r.stdout)["activity_event_logging"]["events_logged"] is False
    node.log.logging_enabled = False
    invoke("access-key", "set", "ak1", "--activity-event-logging", "on", env=node.admin)
    assert node.log.append({"types": ["file.created"], "data": {}}, access_key="ak1") is not None
    assert node.log.append({"types": ["file.created"], "data": {}}) is None
    invoke("access-key", "set", "ak1", "--activity-event-logging", "inherit", env=node.admin)
    assert node.state.access_keys["ak1"].configuration == {}
    assert node.log.append({"types": ["file.created"], "data": {}}, access_key="ak1") is None


def test_per_key_logging_is_refused_before_3_8_0_and_nothing_changes(node, invoke):
    before = node.state.version
    node.state.version = "3.7.4"
    try:
        r = invoke("access-key", "set", "ak1", "--activity-event-logging", "on", env=node.admin)
    finally:
        node.state.version = before
    assert r.exit_code == 1
    assert "3.7.4" in r.stderr and "3.8.0" in r.stderr
    assert node.state.access_keys["ak1"].configuration == {}


def test_set_secret_path_and_raw_settings(node, invoke):
    r = invoke("access-key", "set", "ak1", "--secret-stdin", "--path", "/data/projects",
               "--set", "configuration.note=moved", "--set", "configuration.quota=5",
               input="new-secret\n", env=node.admin)
    assert r.exit_code == 0, r.stderr
    assert "new-secret" not in r.stdout + r.stderr
    ak = node.state.access_keys["ak1"]
    assert ak.storage["path"] == "/data/projects"
    assert ak.configuration == {"note": "moved", "quota": 5}
    old = invoke("node", "info", env=node.ak)
    assert old.exit_code == 4
    new = invoke("access-key", "show", "ak1", env={**node.ak, "NODECLI_PASSWORD": "new-secret"})
    assert new.exit_code == 0, new.stderr


def test_delete_needs_yes_without_a_terminal(node, invoke):
    r = invoke("access-key", "delete", "ak1", env=node.admin)
    assert r.exit_code == 2 and "--yes" in r.stderr
    assert "ak1" in node.state.access_keys
    r = invoke("access-key", "delete", "ak1", "--yes", env=node.admin)
    assert r.exit_code == 0, r.stderr
    assert "ak1" not in node.state.access_keys
    r = invoke("access-key", "show", "ak1", env=node.admin)
    assert r.exit_code == 5


@pytest.mark.parametrize("args", [
    ["set", "ak1"], ["set", "ak1", "--set", "=1"], ["set", "ak1", "--set", "a={bad"],
    ["set", "ak1", "--path", "relative"], ["set", "bad id!", "--set", "a=1"],
    ["set", "ak1", "--activity-event-logging", "maybe"], ["show", "a/b"],
])
def test_bad_access_key_input_changes_nothing(node, invoke, args):
    before = (dict(node.state.access_keys["ak1"].storage),
              dict(node.state.access_keys["ak1"].configuration))
    r = invoke("access-key", *args, env=node.admin)
    assert r.exit_code == 2, r
    assert len(r.stderr.strip().splitlines()) <= 2 and "Traceback" not in r.stderr
    assert (node.state.access_keys["ak1"].storage,
            node.state.access_keys["ak1"].configuration) == before


# -- permissions and what a bearer-token user sees (interface.md 5.1) ---------------------------


def test_alice_sees_exactly_the_folder_granted_to_her(node, invoke):
    alpha = [node.file_event("/data/projects/alpha/a1.txt"),
             node.file_event("/data/projects/alpha/sub/a2.txt")]
    node.file_event("/data/projects/beta/b1.txt")
    alice = node.bearer("alice")
    assert node.events(alice) == []  # no permission: nothing, though the log has events
    r = invoke("permission", "grant", "/projects/alpha", "--user", "alice", "--levels",
               "list,read", env=node.ak)
    assert r.exit_code == 0, r.stderr
    seen = node.events(alice)
    assert {e["id"] for e in seen} >= set(alpha)
    assert node.paths_seen(alice) == {"/data/projects/alpha",
                                      "/data/projects/alpha/a1.txt",
                                      "/data/projects/alpha/sub/a2.txt"}
    # the grant itself is logged as a permission event
    assert any("permission.created" in e["types"] for e in seen)


def test_a_group_permission_is_honoured(node, invoke):
    node.file_event("/data/projects/beta/b1.txt")
    node.file_event("/data/projects/alpha/a1.txt")
    bob = node.bearer("bob", ["eng", "staff"])
    r = invoke("permission", "grant", "/projects/beta", "--group", "eng", "--levels", "list",
               env=node.ak)
    assert r.exit_code == 0, r.stderr
    assert node.paths_seen(bob) == {"/data/projects/beta", "/data/projects/beta/b1.txt"}
    assert node.events(node.bearer("carol", ["sales"])) == []


def test_a_revoked_permission_stops_new_events_from_being_visible(node, invoke):
    node.file_event("/data/projects/alpha/a1.txt")
    alice = node.bearer("alice")
    assert invoke("permission", "grant", "/projects/alpha", "--user", "alice", "--levels",
                  "read", env=node.ak).exit_code == 0
    assert node.events(alice)
    r = invoke("permission", "revoke", "/projects/alpha", "--user", "alice", "--yes",
               env=node.ak)
    assert r.exit_code == 0, r.stderr
    fresh = node.file_event("/data/projects/alpha/a3.txt")
    assert fresh not in {e["id"] for e in node.events(alice)}
    assert node.events(alice) == []


def test_list_show_and_revoke_by_id(node, invoke):
    node.storage.ensure("/data/projects/alpha/a.txt", "file")
    admin_token = node.bearer("ops", role="admin")
    r = invoke("permission", "grant", "/projects", "--user", "alice", "--levels",
               "list,read,write", "-o", "json", env=admin_token)
    assert r.exit_code == 0, r.stderr
    perm = json.loads(r.stdout)
    r = invoke("permission", "list", "/projects/alpha/a.txt", "-o", "json", env=node.ak)
    assert [p["id"] for p in json.loads(r.stdout)] == [perm["id"]]  # inherited
    r = invoke("permission", "list", "/projects/alpha/a.txt", "--no-inherited", env=node.ak)
    assert r.exit_code == 0 and "no permissions" in r.stderr
    r = invoke("permission", "show", perm["id"], "-o", "json", env=node.ak)
    assert json.loads(r.stdout)["access_levels"] == ["list", "read", "write"]
    r = invoke("permission", "revoke", perm["id"], "--yes", env=node.ak)
    assert r.exit_code == 0
    assert node.storage.permissions == {}


def test_a_user_role_token_may_not_grant(node, invoke):
    folder = node.storage.ensure("/data/projects", "folder")
    r = invoke("permission", "grant", "--file-id", folder.id, "--user", "alice", "--levels",
               "read", env=node.bearer("alice"))
    assert r.exit_code == 4
    assert "admin:all" in r.stderr
    assert node.storage.permissions == {}
    # and without any permission the path cannot even be resolved: nothing is visible
    r = invoke("permission", "grant", "/projects", "--user", "alice", "--levels", "read",
               env=node.bearer("alice"))
    assert r.exit_code == 5


def test_missing_path_component_is_exit_5_naming_it(node, invoke):
    node.storage.ensure("/data/projects/alpha", "folder")
    r = invoke("permission", "list", "/projects/nope/deeper", env=node.ak)
    assert r.exit_code == 5
    assert "/projects/nope" in r.stderr and "stops at /projects" in r.stderr


def test_a_path_hidden_from_a_token_is_not_called_missing(node, invoke):
    node.storage.ensure("/data/projects/alpha", "folder")
    r = invoke("permission", "list", "/projects/alpha", env=node.bearer("alice"))
    assert r.exit_code == 5
    assert "not visible to this bearer token" in r.stderr
    assert "no such file" not in r.stderr
    r = invoke("permission", "list", "/projects/alpha", env=node.ak)  # the key sees it
    assert r.exit_code == 0, r.stderr


def test_a_refused_access_key_secret_names_the_key_and_where_it_came_from(node, invoke):
    node.storage.ensure("/data/projects", "folder")
    env = dict(node.ak, NODECLI_PASSWORD="wrong")
    r = invoke("permission", "list", "/projects", env=env)
    assert r.exit_code == 4
    assert "access key 'ak1'" in r.stderr and "secret from NODECLI_PASSWORD" in r.stderr
    assert "log in with an access key" not in r.stderr
    # a node user asking for a key's own view still learns to log in with a key
    r = invoke("permission", "list", "/projects", env=node.admin)
    assert r.exit_code != 0 and "log in with an access key" in r.stderr


@pytest.mark.parametrize("args", [
    ["grant", "/projects", "--user", "alice", "--levels", "list,fly"],
    ["grant", "/projects", "--levels", "list"],
    ["grant", "/projects", "--user", "a", "--group", "g", "--levels", "list"],
    ["grant", "projects", "--user", "alice", "--levels", "list"],
    ["grant", "/a/../b", "--user", "alice", "--levels", "list"],
    ["revoke", "3", "--user", "alice", "--yes"],
    ["list"], ["list", "/x", "--file-id", "1"],
])
def test_bad_permission_input_changes_nothing(node, invoke, args):
    node.storage.ensure("/data/projects", "folder")
    r = invoke("permission", *args, env=node.ak)
    assert r.exit_code == 2, r
    assert node.storage.permissions == {}
    assert "Traceback" not in r.stderr


# -- what a node user and an access key see -----------------------------------------------------


def test_node_user_sees_what_its_restriction_allows(node, invoke, emulator):
    node.file_event("/data/projects/alpha/a1.txt")
    node.file_event("/data/projects/beta/b1.txt")
    node.file_event("/elsewhere/x.txt")
    emulator.add_node_user("narrow", "pw", xuser="narrow-x",
                           restrictions=("file:////data/projects/alpha/*",))
    env = {"NODECLI_URL": emulator.url, "NODECLI_USER": "narrow", "NODECLI_PASSWORD": "pw"}
    assert node.paths_seen(env) == {"/data/projects/alpha/a1.txt"}
    assert node.paths_seen(node.admin) == {"/data/projects/alpha/a1.txt",
                                           "/data/projects/beta/b1.txt"}


def test_access_key_sees_its_storage_path_only(node, invoke, emulator):
    node.file_event("/data/projects/alpha/a1.txt")
    node.file_event("/data/projects/beta/b1.txt")
    emulator.add_access_key("ak-beta", "s2")
    node.state.access_keys["ak-beta"].storage = {"type": "local", "path": "/data/projects/beta"}
    env = {"NODECLI_URL": emulator.url, "NODECLI_ACCESS_KEY": "ak-beta",
           "NODECLI_PASSWORD": "s2"}
    assert node.paths_seen(env) == {"/data/projects/beta/b1.txt"}
    r = invoke("permission", "list", "/../alpha", env=env)
    assert r.exit_code == 2


def test_empty_log_hint_names_the_key_setting(node, invoke):
    node.log.logging_enabled = False
    r = invoke("events", "list", env=node.ak)
    assert r.exit_code == 0
    assert "access-key set ak1 --activity-event-logging on" in r.stderr


# -- parsers under hostile input ----------------------------------------------------------------


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=60))
def test_levels_parser_accepts_only_known_levels(text):
    from nodecli.node.permissions import ACCESS_LEVELS, parse_levels

    try:
        levels = parse_levels(text)
    except UsageError:
        return
    assert levels and len(set(levels)) == len(levels)
    assert all(level in ACCESS_LEVELS for level in levels)


@settings(max_examples=300)
@given(st.text(max_size=80))
def test_paths_are_split_or_refused(text):
    from nodecli.node.paths import split_path

    try:
        parts = split_path(text)
    except UsageError:
        return
    assert text.startswith("/") and ".." not in parts and "" not in parts
    assert all("/" not in p for p in parts)


@settings(max_examples=400)
@given(st.text(max_size=60))
def test_set_assignments_are_typed_or_refused(text):
    from nodecli.values import build_object

    try:
        obj = build_object([text])
    except UsageError:
        return
    key = text.split("=", 1)[0].split(".")[0]
    assert key in obj
    json.dumps(obj, allow_nan=False)  # always JSON: no Infinity/NaN


@pytest.mark.parametrize(("text", "value"), [
    ("a=true", True), ("a=false", False), ("a=null", None), ("a=42", 42), ("a=-1.5", -1.5),
    ("a=[1,2]", [1, 2]), ('a="42"', "42"), ("a=hello world", "hello world"),
    ("a={\"b\": 1}", {"b": 1}), ("a=", ""),
])
def test_set_values_are_typed_as_documented(text, value):
    from nodecli.values import build_object

    assert build_object([text]) == {"a": value}


@pytest.mark.parametrize("text", ["a=1e999", "a=-1e999", 'a={"b": 1e400}', "a=[1E309]"])
def test_set_refuses_numbers_json_cannot_carry(text):
    from nodecli.values import build_object

    with pytest.raises(UsageError, match="too large to send as JSON"):
        build_object([text])


@pytest.mark.parametrize("body", ['{"x": 1e999}', '{"x": [-1e400]}'])
def test_body_refuses_numbers_json_cannot_carry(body):
    from nodecli.values import parse_body

    with pytest.raises(UsageError, match="too large to send as JSON"):
        parse_body(body)
