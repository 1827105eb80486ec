"""export, diff and apply -f at their edges, against the emulator over HTTPS: what the
mutation run of nodecli/declare/{plan,execute,export}.py found no test holding
(docs/development.md, "Equivalent survivors: declare")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def node(emulator, invoke):
    """Profile ``emu`` (the default) for the emulator as its admin."""
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r
    return emulator


def write(tmp_path: Path, text: str, name: str = "doc.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# -- export --------------------------------------------------------------------------------


def test_export_local_of_an_empty_home_and_of_transfer_users(invoke):
    r = invoke("export", "--local", "-o", "json")
    assert r.exit_code == 0, r
    assert json.loads(r.stdout) == {"version": 1, "transfer_users": {}, "node_users": {}}
    assert invoke("xuser", "add", "aspera", "-r", "file:////data/*").exit_code == 0
    r = invoke("export", "--local", "-o", "json")
    assert json.loads(r.stdout) == {
        "version": 1, "transfer_users": {"aspera": {"restrictions": ["file:////data/*"]}},
        "node_users": {}}


def test_export_of_keys_by_id_whatever_the_node_says_of_their_storage(node, invoke):
    """Keys come out sorted by id (the node lists them as they were made); a storage
    that says no type or no path is the node's default (local, /); another type is kept
    as the node says it; an empty configuration is left out."""
    node.add_access_key("zz", "zz-secret")
    node.state.access_keys["zz"].storage = {"type": "s3", "path": "/bucket"}
    node.state.access_keys["zz"].configuration = {}
    node.add_access_key("mm", "mm-secret")
    node.state.access_keys["mm"].storage = {"path": "/m"}
    node.add_access_key("aa", "aa-secret")
    node.state.access_keys["aa"].storage = {}
    node.state.access_keys["aa"].configuration = {"activity_event_logging": False}
    r = invoke("export", "--node", "emu", "-o", "json")
    assert r.exit_code == 0, r
    keys = json.loads(r.stdout)["access_keys"]
    assert list(keys) == ["aa", "mm", "zz"]
    assert keys == {
        "aa": {"storage": {"type": "local", "path": "/"},
               "configuration": {"activity_event_logging": False}},
        "mm": {"storage": {"type": "local", "path": "/m"}},
        "zz": {"storage": {"type": "s3", "path": "/bucket"}}}
    # no secret known for any of them: their permissions are not exported, each said once
    assert [line.split(":")[2] for line in r.stderr.splitlines()] == [
        " access key aa", " access key mm", " access key zz"], r.stderr
