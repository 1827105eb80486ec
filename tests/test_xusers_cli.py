"""`nodecli xuser ...`: transfer users with restrictions XOR docroot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore


def _cfg(home):
    return ConfigStore(resolve_paths(home)).load()


def _raw(home) -> bytes:
    return Path(ConfigStore(resolve_paths(home)).path).read_bytes()


def test_add_with_several_restrictions_and_list_json(invoke, home):
    r = invoke("xuser", "add", "aspera", "--restriction", "file:////data/*",
               "-r", "!file:////data/private/*", "--restriction", "|s3://mys3/bucket/*|udp://*")
    assert r.exit_code == 0, r
    assert invoke("xuser", "add", "legacy", "--docroot", "/srv/transfer").exit_code == 0
    r = invoke("xuser", "list", "-o", "json")
    assert json.loads(r.stdout) == [
        {"name": "aspera", "docroot": None, "node_users": [],
         "restrictions": ["file:////data/*", "!file:////data/private/*",
                          "s3://mys3/bucket/*", "udp://*"]},
        {"name": "legacy", "restrictions": [], "docroot": "/srv/transfer", "node_users": []},
    ]
    r = invoke("xuser", "show", "aspera", "-o", "json")
    assert json.loads(r.stdout)["file_restriction"] == (
        "|file:////data/*|!file:////data/private/*|s3://mys3/bucket/*|udp://*")


def test_list_table_and_csv(invoke):
    invoke("xuser", "add", "aspera", "-r", "s3://*", "-r", "gs://*")
    invoke("user", "add", "u1", "--xuser", "aspera", "--password-stdin", input="p\n")
    r = invoke("xuser", "list")
    assert r.stdout.splitlines() == [
        "transfer user  restrictions   docroot  node users",
        "aspera         s3://*,gs://*  -        u1",
    ]
    r = invoke("xuser", "list", "-o", "csv")
    assert r.stdout.splitlines()[0] == "name,restrictions,docroot,node_users"


def test_list_form_accepted_in_full_documented_example(invoke, home):
    r = invoke("xuser", "add", "x", "--restriction", "|file:////data/mnt1/*|s3://mys3/bucket/*")
    assert r.exit_code == 0, r
    assert _cfg(home).transfer_users["x"].restrictions == [
        "file:////data/mnt1/*", "s3://mys3/bucket/*"]


@pytest.mark.parametrize("args, code, text", [
    (("-r", "s3://*", "--docroot", "/x"), 2, "restrictions OR a docroot"),
    ((), 2, "--restriction R"),
    (("-r", "ftp://*"), 2, "accepted forms"),
    (("-r", "file:///c:/data/*"), 2, "percent-encode the drive colon"),
    (("-r", "||s3://*"), 2, "empty restriction in list"),
    (("--docroot", "relative/dir"), 2, "not absolute"),
    (("--docroot", ""), 2, "empty"),
    (("--docroot", "/x\x1b[2J"), 2, "control characters"),
])
def test_bad_definitions_refused_without_change(invoke, home, args, code, text):
    invoke("xuser", "add", "keep", "-r", "s3://*")
    before = _raw(home)
    r = invoke("xuser", "add", "new", *args)
    assert r.exit_code == code, r
    assert text in r.stderr
    assert "\x1b" not in r.stderr
    assert _raw(home) == before


def test_add_existing_is_conflict(invoke, home):
    invoke("xuser", "add", "x", "-r", "s3://*")
    r = invoke("xuser", "add", "x", "--docroot", "/y")
    assert r.exit_code == 1 and "already exists" in r.stderr
    assert _cfg(home).transfer_users["x"].restrictions == ["s3://*"]


def test_set_replace_add_remove_and_switch_to_docroot(invoke, home):
    invoke("xuser", "add", "x", "-r", "s3://*")
    assert invoke("xuser", "set", "x", "--add-restriction", "gs://*").exit_code == 0
    assert _cfg(home).transfer_users["x"].restrictions == ["s3://*", "gs://*"]
    assert invoke("xuser", "set", "x", "--remove-restriction", "s3://*").exit_code == 0
    assert _cfg(home).transfer_users["x"].restrictions == ["gs://*"]
    r = invoke("xuser", "set", "x", "--remove-restriction", "nope://*")
    assert r.exit_code == 5
    r = invoke("xuser", "set", "x", "--docroot", "/srv/x")
    assert r.exit_code == 0 and "removed 1 restriction" in r.stderr
    x = _cfg(home).transfer_users["x"]
    assert (x.restrictions, x.docroot) == ([], "/srv/x")
    r = invoke("xuser", "set", "x", "--add-restriction", "s3://*")
    assert r.exit_code == 1 and "has a docroot" in r.stderr
    r = invoke("xuser", "set", "x", "--restriction", "file:////d/*")
    assert r.exit_code == 0 and "removed docroot" in r.stderr
    x = _cfg(home).transfer_users["x"]
    assert (x.restrictions, x.docroot) == (["file:////d/*"], None)
    assert invoke("xuser", "set", "x").exit_code == 2
    assert invoke("xuser", "set", "ghost", "--docroot", "/a").exit_code == 5


def test_delete_referenced_needs_force(invoke, home):
    invoke("xuser", "add", "x", "-r", "s3://*")
    invoke("user", "add", "u1", "--xuser", "x", "--password-stdin", input="p\n")
    before = _raw(home)
    r = invoke("xuser", "delete", "x")
    assert r.exit_code == 1
    assert "used by 1 node user(s): u1" in r.stderr and "--force" in r.stderr
    assert _raw(home) == before
    r = invoke("xuser", "delete", "x", "--force")  # deletes node users: asks first
    assert r.exit_code == 2 and "use --yes" in r.stderr
    assert _raw(home) == before
    r = invoke("xuser", "delete", "x", "--force", "--yes")
    assert r.exit_code == 0, r
    cfg = _cfg(home)
    assert cfg.transfer_users == {} and cfg.users == {}
    assert invoke("xuser", "delete", "x").exit_code == 5


def test_show_table(invoke):
    invoke("xuser", "add", "x", "--docroot", "/srv/x")
    r = invoke("xuser", "show", "x")
    assert r.exit_code == 0
    assert "docroot           /srv/x" in r.stdout
