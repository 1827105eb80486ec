"""nodecli/node/files_scan_state.py at its boundaries, in process: the words of each
refusal of a damaged state, a find's state read back as saved (its filters, the largest
files' paths), the lock released and a killed writer's temporaries removed, the spools'
names and O_NOFOLLOW. Written for mutmut's survivors (docs/development.md), each proven
against its mutant planted by hand."""

from __future__ import annotations

import errno
import json
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from nodecli.errors import ConfigError, ConflictError, UsageError
from nodecli.node.files_scan_state import Ranked, ScanState, Snapshot

FIND = {"name": "*1*", "type": None, "min_size": 5, "newer": "7d", "depth": None}
DAMAGED_HINT = "nothing was changed; --restart starts the scan over"


def snapshot(find: dict[str, Any] | None = None) -> Snapshot:
    snap = Snapshot("n", "/data", "d0", 1, 2, False, "2026-01-02T03:04:05+00:00", find=find)
    snap.stack = [["C", "d0", "/data", 0, "/data"], ["L", "d1", "/data/a", 1, "a"]]
    snap.rows = {"/data": [0, 9, 2, 1]}
    snap.top = [Ranked(3, "/data/x"), Ranked(6, "/data/y")]
    snap.skipped, snap.skipped_count = [{"path": "/data/b", "reason": "gone"}], 1
    return snap


def test_equal_ranks_are_not_less() -> None:
    a = Ranked(5, "/a")
    assert not a < Ranked(5, "/a")  # (irreflexive: a heap keeps equal files in place)
    assert Ranked(5, "/b") < a and not a < Ranked(5, "/b")  # the last path goes first
    assert Ranked(4, "/a") < a and not a < Ranked(4, "/a")


def test_a_find_state_reads_back_as_saved(tmp_path: Path) -> None:
    state = ScanState(tmp_path / "s.json", "s")
    state.save(snapshot(FIND))
    data = json.loads(state.path.read_bytes())
    assert data["options"] == {"depth": 1, "top": 2, "ncdu": False, "find": FIND}
    saved_at = data["saved_at"]
    from datetime import datetime

    assert datetime.fromisoformat(saved_at).utcoffset() == timedelta(0)
    back = state.load()
    assert back is not None and back.find == FIND
    assert sorted((r.size, r.path) for r in back.top) == [(3, "/data/x"), (6, "/data/y")]
    assert back.stack == snapshot().stack and back.rows == {"/data": [0, 9, 2, 1]}
    assert (back.skipped, back.skipped_count) == ([{"path": "/data/b", "reason": "gone"}], 1)
    state.save(snapshot())  # a du's: no find in its options
    assert json.loads(state.path.read_bytes())["options"] == {"depth": 1, "top": 2,
                                                              "ncdu": False}
    du = state.load()
    assert du is not None and du.find is None


def _valid(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / "s.json"
    return path, json.loads(snapshot(FIND).to_json())


@pytest.mark.parametrize(("change", "what"), [
    (lambda d: "not json", "not JSON"),
    (lambda d: [], "not a files du state"),
    (lambda d: {**d, "counts": {}}, "fields"),
    (lambda d: {**d, "options": {**d["options"], "find": {"name": ["x"]}}}, "fields"),
    (lambda d: {**d, "options": {**d["options"], "find": {"min_size": True}}}, "fields"),
    (lambda d: {**d, "options": {**d["options"], "find": "x"}}, "fields"),
    (lambda d: {**d, "rows": {}}, "lists"),
    (lambda d: {**d, "stack": [["L", "d1", "/p", 0]]}, "stack"),
    (lambda d: {**d, "rows": [["/p", 0, 1, 2]]}, "rows"),
    (lambda d: {**d, "top": [[1, 2]]}, "top"),
    (lambda d: {**d, "skipped": [{"path": 3}]}, "skipped"),
])
def test_each_damage_is_named(tmp_path: Path, change: Any, what: str) -> None:
    path, data = _valid(tmp_path)
    changed = change(data)
    path.write_text(changed if isinstance(changed, str) else json.dumps(changed))
    with pytest.raises(ConfigError) as exc:
        ScanState(path, "s").load()
    assert exc.value.message == f"scan state {path} is damaged ({what})"
    assert exc.value.hint == DAMAGED_HINT


def test_a_state_of_another_version_says_so(tmp_path: Path) -> None:
    path, data = _valid(tmp_path)
    path.write_text(json.dumps({**data, "version": 2}))
    with pytest.raises(ConfigError) as exc:
        ScanState(path, "s").load()
    assert exc.value.message == f"scan state {path} is of an unknown version"
    assert exc.value.hint == "it was saved by another nodecli; --restart starts over"


def test_a_bad_name_is_quoted_to_40_characters(tmp_path: Path) -> None:
    name = "!" + "n" * 60
    with pytest.raises(UsageError) as exc:
        ScanState.named(tmp_path, name)
    assert exc.value.message == ("invalid scan name '!" + "n" * 38 + "…': letters, digits, "
                                 "'.', '_' and '-' (at most 64)")


def test_the_lock_is_released_and_a_killed_writers_temporaries_removed(tmp_path: Path
                                                                       ) -> None:
    one, two = ScanState.named(tmp_path, "s"), ScanState.named(tmp_path, "s")
    scans = tmp_path / "scans"
    scans.mkdir(mode=0o700)
    stale, fresh = scans / ".s.json.123.0123abcd.tmp", scans / ".s.json.124.0123abcd.tmp"
    stale.write_bytes(b"x"), fresh.write_bytes(b"x")
    old = time.time() - 301
    os.utime(stale, (old, old))
    one.lock()
    try:
        assert one.locked
        assert not stale.exists() and fresh.exists()  # (a live writer's is left alone)
        with pytest.raises(ConflictError) as exc:
            two.lock()
        assert exc.value.message == "scan s is running in another nodecli"
        assert exc.value.hint == ("two scans of one name would count twice; wait for it, "
                                  "stop it, or use another name")
    finally:
        one.unlock()
    assert not one.locked
    two.lock()
    two.unlock()


def test_the_spools_are_named_and_find_has_its_own(tmp_path: Path) -> None:
    state = ScanState.named(tmp_path, "s")
    assert (state.spool_path.name, state.found_path.name) == ("s.ncdu", "s.found")
    with state.open_spool(0, found=True) as spool:
        spool.write(b"match\n")
    assert state.found_path.read_bytes() == b"match\n" and not state.spool_path.exists()
    with pytest.raises(ConfigError) as exc:
        state.open_spool(7, found=True)
    assert exc.value.message == (f"scan state {state.path} is damaged (its matches so far "
                                 f"{state.found_path} is short)")
    with pytest.raises(ConfigError) as exc:
        state.open_spool(1)
    assert exc.value.message == (f"scan state {state.path} is damaged (its ncdu output "
                                 f"{state.spool_path} is short)")


def test_a_spool_that_is_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    state = ScanState.named(tmp_path, "s")
    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep")
    state.path.parent.mkdir(mode=0o700)
    state.found_path.symlink_to(target)
    with pytest.raises(OSError) as exc:
        state.open_spool(0, found=True)
    assert exc.value.errno == errno.ELOOP
    assert target.read_bytes() == b"keep"


def test_a_state_of_another_scan_names_what_it_is_of(tmp_path: Path) -> None:
    """ScanState.check itself (tests/test_files_scan.py refuses through a whole Scan): each
    refusal word for word, long paths and nodes cut at 80 characters."""
    state = ScanState(tmp_path / "s.json", "s")
    p, n = "/" + "p" * 99, "n" * 100
    snap = Snapshot(n, p, "d0", 1, 0, True, "2026-01-02T03:04:05+00:00")
    with pytest.raises(UsageError) as exc:
        state.check(snap, node="m" * 100, path="/" + "q" * 99, depth=1, top=0, ncdu=True)
    assert exc.value.message == (f"scan s is of /{'p' * 78}… on {'n' * 79}…, "
                                 f"not /{'q' * 78}… on {'m' * 79}…")
    assert exc.value.hint == ("use another --resume NAME, or --restart to start this one "
                              "over here")
    for node, path in ((n, "/q"), ("m", p)):  # one of the two differs
        with pytest.raises(UsageError) as exc:
            state.check(snap, node=node, path=path, depth=1, top=0, ncdu=True)
        assert exc.value.message.startswith(f"scan s is of /{'p' * 78}… on {'n' * 79}…, not ")
    with pytest.raises(UsageError) as exc:
        state.check(snap, node=n, path=p, depth=2, top=0, ncdu=False)
    assert exc.value.message == "scan s was started with --depth 1 --top 0 -o ncdu"
    assert exc.value.hint == "resume it with the same options, or --restart"
    state.check(snap, node=n, path=p, depth=1, top=0, ncdu=False)  # ncdu's state, no -o ncdu
    snap.ncdu = False
    with pytest.raises(UsageError) as exc:
        state.check(snap, node=n, path=p, depth=1, top=3, ncdu=False)
    assert exc.value.message == "scan s was started with --depth 1 --top 0"
    with pytest.raises(UsageError) as exc:
        state.check(snap, node=n, path=p, depth=1, top=0, ncdu=True)
    assert exc.value.message == "scan s was started with --depth 1 --top 0"


@pytest.mark.parametrize(("saved", "asked", "was"), [
    (None, FIND, "a files du"),
    (FIND, None, "a files find"),
    (FIND, {**FIND, "name": "*2*"},
     "a files find with other filters (name=*1* min_size=5 newer=7d)"),
    ({"name": None}, {"name": "x"}, "a files find with other filters (none)"),
    ({"name": "x" * 200}, {"name": "y"}, f"a files find with other filters (name={'x' * 114}…)"),
])
def test_a_state_of_another_command_or_filters_says_which(tmp_path: Path, saved: Any,
                                                          asked: Any, was: str) -> None:
    state = ScanState(tmp_path / "s.json", "s")
    snap = Snapshot("n", "/p", "d0", 1, 0, False, "2026-01-02T03:04:05+00:00", find=saved)
    with pytest.raises(UsageError) as exc:
        state.check(snap, node="n", path="/p", depth=1, top=0, ncdu=False, find=asked)
    assert exc.value.message == f"scan s is {was}"
    assert exc.value.hint == ("resume it with the same command, use another --resume NAME, "
                              "or --restart")
    state.check(snap, node="n", path="/p", depth=1, top=0, ncdu=False, find=saved)
