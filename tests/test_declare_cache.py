"""The parse cache of YAML documents (nodecli.declare.cached): the same bytes read again
come from it, other bytes never do, what it holds is checked like a read, and a wrong
document, a JSON one or a dry run leaves none."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodecli import dryrun
from nodecli.config import cache as parse_cache
from nodecli.declare.cached import KEEP, cache_file, parse_cached
from nodecli.errors import UsageError

DOC = b"version: 1\ntransfer_users:\n  x: {}\nnode_users:\n  u1: {transfer_user: x}\n"
OTHER = {"version": 1, "node_users": {"u9": {"transfer_user": "y"}}}


def read(tmp_path: Path, raw: bytes, name: str = "d.yaml"):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(raw)
    return parse_cached(raw, str(p), str(p.parent), tmp_path / "state")


def cache_of(tmp_path: Path, name: str = "d.yaml") -> Path:
    return cache_file(tmp_path / "state", str(tmp_path / name))


def test_the_same_bytes_come_from_the_cache_and_other_bytes_never(tmp_path):
    assert set(read(tmp_path, DOC).node_users or {}) == {"u1"}
    assert parse_cache.load(cache_of(tmp_path), DOC) == {
        "version": 1, "transfer_users": {"x": {}}, "node_users": {"u1": {"transfer_user": "x"}}}
    # what the cache holds for these very bytes is what a read of them gives
    parse_cache.save(cache_of(tmp_path), DOC, OTHER)
    assert set(read(tmp_path, DOC).node_users or {}) == {"u9"}
    # one byte changed, the length the same: read, never the cache's
    edited = DOC.replace(b"u1:", b"u2:")
    assert len(edited) == len(DOC)
    assert set(read(tmp_path, edited).node_users or {}) == {"u2"}
    # and the cache now holds the edited document, for its bytes only
    assert parse_cache.load(cache_of(tmp_path), DOC) is None
    assert set(read(tmp_path, DOC).node_users or {}) == {"u1"}


def test_what_the_cache_holds_is_checked_like_a_read(tmp_path):
    for wrong in ({"version": 2}, {"version": 1, "node_users": {"bad name": {}}},
                  {"version": 1, "node_users": {"u1": {"transfer_user": "x",
                                                        "password": "hunter2"}}}):
        parse_cache.save(cache_of(tmp_path), DOC, wrong)
        doc = read(tmp_path, DOC)
        assert doc.node_users == {"u1": {"transfer_user": "x"}}
        assert doc.source == str(tmp_path / "d.yaml")


def test_a_cached_document_is_of_the_file_it_is_read_from(tmp_path):
    """``file:`` references are relative to the document's folder: the same bytes
    under another name, in another folder, are that folder's document."""
    first = read(tmp_path, DOC, "a/d.yaml")
    parse_cache.save(cache_of(tmp_path, "b/e.yaml"), DOC, parse_cache.load(
        cache_of(tmp_path, "a/d.yaml"), DOC) or {})
    second = read(tmp_path, DOC, "b/e.yaml")
    assert (first.base_dir, first.source) == (str(tmp_path / "a"), str(tmp_path / "a/d.yaml"))
    assert (second.base_dir, second.source) == (str(tmp_path / "b"),
                                                str(tmp_path / "b/e.yaml"))


def test_documents_read_in_turn_keep_theirs_in_at_most_16_files(tmp_path):
    other = DOC.replace(b"u1", b"u2")
    for _ in range(2):
        assert set(read(tmp_path, DOC, "a.yaml").node_users or {}) == {"u1"}
        assert set(read(tmp_path, other, "b.yaml").node_users or {}) == {"u2"}
    assert parse_cache.load(cache_of(tmp_path, "a.yaml"), DOC) is not None
    assert parse_cache.load(cache_of(tmp_path, "b.yaml"), other) is not None
    os.utime(cache_of(tmp_path, "a.yaml"), ns=(0, 0))  # the oldest, whatever the grain
    names = [f"doc{i}.yaml" for i in range(KEEP + 1)]
    for n in names:
        read(tmp_path, DOC + f"# {n}\n".encode(), n)
        # the one just read is always kept, whatever the clock's grain
        assert cache_of(tmp_path, n).exists()
    files = list((tmp_path / "state").iterdir())
    assert len(files) == KEEP == 16 and all(f.name.startswith("document-") for f in files)
    assert not cache_of(tmp_path, "a.yaml").exists()


def test_a_wrong_document_a_json_one_and_a_dry_run_leave_no_cache(tmp_path):
    wrong = DOC + b"  u2: {transfer_user: x, acls: nope}\n"
    with pytest.raises(UsageError) as info:
        read(tmp_path, wrong)
    assert info.value.message.startswith(f"{tmp_path / 'd.yaml'}:6: node_users.u2.acls: ")
    assert read(tmp_path, b'{"version": 1, "node_users": {}}', "d.json").node_users == {}
    dryrun.activate()
    try:
        assert set(read(tmp_path, DOC).node_users or {}) == {"u1"}
    finally:
        dryrun.activate(False)
    assert not (tmp_path / "state").exists()  # no cache of any slot
    read(tmp_path, DOC)
    assert cache_of(tmp_path).exists()
    # a wrong document read after a right one is still named by its line
    with pytest.raises(UsageError) as info:
        read(tmp_path, wrong)
    assert ":6: node_users.u2.acls: " in info.value.message


def test_diff_reads_through_the_cache_and_sees_every_edit(invoke, home, tmp_path):
    from nodecli.config.paths import resolve_paths

    f = tmp_path / "d.yaml"
    f.write_bytes(DOC)
    assert invoke("apply", "-f", str(f)).exit_code == 0
    assert invoke("diff", "-f", str(f)).exit_code == 0
    cache = cache_file(resolve_paths(None).state_dir / "declare", str(f))
    assert parse_cache.load(cache, DOC) is not None
    assert invoke("diff", "-f", str(f)).exit_code == 0
    f.write_bytes(DOC.replace(b"x}", b"y}"))  # the same length
    r = invoke("diff", "-f", str(f), "-o", "json")
    assert r.exit_code == 1, r
    assert json.loads(r.stdout) == [{"node": "(local)", "kind": "node_user", "name": "u1",
                                     "action": "change", "fields": {
                                         "transfer_user": {"before": "x", "after": "y"}}}]


def test_a_dry_run_removes_no_cache_either(tmp_path):
    for i in range(KEEP):
        read(tmp_path, DOC, f"d{i}.yaml")
    before = sorted(p.name for p in (tmp_path / "state").iterdir())
    assert len(before) == KEEP
    dryrun.activate()
    try:
        assert set(read(tmp_path, DOC, "new.yaml").node_users or {}) == {"u1"}
    finally:
        dryrun.activate(False)
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == before


def test_a_json_document_is_read_as_its_file_and_a_path_of_any_bytes_has_a_cache(tmp_path):
    doc = read(tmp_path, b'\n  {"version": 1, "node_users": {}}', "d.json")
    assert (doc.source, doc.base_dir) == (str(tmp_path / "d.json"), str(tmp_path))
    with pytest.raises(UsageError) as info:
        read(tmp_path, b'{"version": 1, "node_users": []}', "e.json")
    assert info.value.message.startswith(f"{tmp_path / 'e.json'}:1: node_users: ")
    assert not (tmp_path / "state").exists()  # JSON, even after white space: no cache
    # a path that is not UTF-8 (a file name of other bytes, as Python decodes it)
    name = os.fsdecode(b"d\xff.yaml")
    assert set(read(tmp_path, DOC, name).node_users or {}) == {"u1"}
    assert cache_of(tmp_path, name).exists()
