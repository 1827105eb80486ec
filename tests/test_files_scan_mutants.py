"""nodecli/node/files_scan.py at its boundaries, in process over in-memory trees: files
find's scan (its spool, filters and --depth, resumed), the defaults, an interruption at
the first listing, loops through an ancestor, the largest files at an equal size across
listings, ncdu's mtime and header, the snapshot cadence, the progress report's clock
and rate. Written for mutmut's survivors (docs/development.md), each proven against its
mutant planted by hand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from nodecli import __version__
from nodecli.errors import UsageError
from nodecli.node import files_scan as fs
from nodecli.node.files_scan import Root, Scan, ScanState, child_path
from tests.test_files_scan import Tree, ncdu_tree

SPEC = {"a1": {"x1": 1, "y": 2, "s1": {"z1": 3}}, "b": {"w1": 4}, "top1": 5}


def finder(entry: Any, path: str, depth: int) -> bytes | None:
    return (f"{depth} {path}\n".encode() if "1" in str(entry.get("name")) else None)


def find_scan(tree: Tree, **kw: Any) -> Scan:
    return Scan(tree.list_folder, tree.root(), node="n", depth=0, find=finder,
                filters={"name": "*1*"}, **kw)


def lines(result: fs.Result) -> list[str]:
    assert result.ncdu is not None
    with result.ncdu as spool:
        return sorted(spool.read().decode().splitlines())


ALL = ["1 /data/a1", "1 /data/top1", "2 /data/a1/s1", "2 /data/a1/x1", "2 /data/b/w1",
       "3 /data/a1/s1/z1"]


def test_child_paths() -> None:
    assert child_path("/", "a") == "/a"
    assert child_path("/boX", "a") == "/boX/a" and child_path("/d/", "a") == "/d/a"


def test_find_writes_each_match_once_and_resumes(tmp_path: Path) -> None:
    tree = Tree(SPEC)
    assert lines(find_scan(tree).run()) == ALL
    assert tree.calls == 4
    state = ScanState(tmp_path / "s.json", "s")
    calls = 0

    def lister(fid: str) -> Iterator[dict[str, Any]]:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return tree.list_folder(fid)

    with pytest.raises(KeyboardInterrupt):
        Scan(lister, tree.root(), node="n", depth=0, find=finder, filters={"name": "*1*"},
             state=state).run()
    saved = json.loads(state.path.read_bytes())
    assert saved["options"]["find"] == {"name": "*1*"}
    assert not state.spool_path.exists() and state.found_path.exists()
    with pytest.raises(UsageError, match="scan s is a files find"):
        Scan(tree.list_folder, tree.root(), node="n", depth=0, state=state).run()
    fresh = find_scan(tree, state=state).run()
    assert fresh.resumed and not fresh.was_finished and lines(fresh) == ALL
    again = find_scan(tree, state=state).run()
    assert again.resumed and again.was_finished and lines(again) == ALL


@pytest.mark.parametrize(("max_depth", "listed", "found"), [
    (1, 1, ["1 /data/a1", "1 /data/top1"]),
    (2, 3, ALL[:-1]),
])
def test_find_stops_at_its_depth(max_depth: int, listed: int, found: list[str]) -> None:
    tree = Tree(SPEC)
    assert lines(find_scan(tree, max_depth=max_depth).run()) == found
    assert tree.calls == listed


def test_the_defaults_are_a_du_of_depth_1_without_the_largest(tmp_path: Path) -> None:
    tree = Tree({"a": {"b": {"x": 1}}, "y": 2})
    state = ScanState(tmp_path / "s.json", "s")
    result = Scan(tree.list_folder, tree.root(), state=state).run()
    assert [r["path"] for r in result.rows] == ["/data", "/data/a"]
    assert result.top == [] and not result.resumed and result.path == "/data"
    saved = json.loads(state.path.read_bytes())
    assert saved["node"] == "" and saved["options"] == {"depth": 1, "top": 0, "ncdu": False}
    for key in ("started_at", "finished_at"):
        assert datetime.fromisoformat(saved[key]).utcoffset() == timedelta(0)


def test_a_file_at_the_root_with_no_top() -> None:
    result = Scan(lambda fid: [], Root("f1", "/data/f", False, 7), top=0).run()
    assert (result.files, result.size, result.top) == (1, 7, [])
    with pytest.raises(UsageError) as exc:
        Scan(lambda fid: [], Root("f1", "/data/f", False, 7), ncdu=True).run()
    assert exc.value.message == "/data/f is a file: ncdu's format holds a folder"
    assert exc.value.hint == "name the folder that holds it"


def test_an_interruption_at_the_first_listing_saves_the_start(tmp_path: Path) -> None:
    state = ScanState(tmp_path / "s.json", "s")
    tree = Tree({"a": {"x": 1}})

    def interrupted(fid: str) -> Iterator[dict[str, Any]]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Scan(interrupted, tree.root(), node="n", state=state, save_every=1e9).run()
    saved = json.loads(state.path.read_bytes())
    assert saved["stack"] == [["L", tree.root_id, "/data", 0, "/data"]]
    result = Scan(tree.list_folder, tree.root(), node="n", state=state).run()
    assert result.resumed and result.listings == 2 and result.files == 1


def test_an_interruption_after_a_refused_folder_keeps_it(tmp_path: Path) -> None:
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}})
    gone = next(e["id"] for e in tree.folders[tree.root_id] if e["name"] == "a")
    del tree.folders[gone]
    state = ScanState(tmp_path / "s.json", "s")

    def lister(fid: str) -> Iterator[dict[str, Any]]:
        if tree.calls == 2:  # the root, then a (refused): b is interrupted
            raise KeyboardInterrupt
        return tree.list_folder(fid)

    with pytest.raises(KeyboardInterrupt):
        Scan(lister, tree.root(), node="n", state=state, save_every=1e9).run()
    saved = json.loads(state.path.read_bytes())
    assert saved["counts"]["skipped"] == 1 and saved["counts"]["listings"] == 1


@pytest.mark.parametrize(("length", "kept"), [(999, "w" * 999), (1000, "w" * 1000),
                                              (1001, "w" * 999 + "…")])
def test_a_refusal_is_kept_to_1000_characters(length: int, kept: str) -> None:
    tree = Tree({"a": {}})
    gone = next(e["id"] for e in tree.folders[tree.root_id] if e["name"] == "a")
    del tree.folders[gone]

    def lister(fid: str) -> Iterator[dict[str, Any]]:
        if fid == gone:
            from nodecli.errors import NotFoundError

            raise NotFoundError("w" * length)
        return tree.list_folder(fid)

    result = Scan(lister, tree.root()).run()
    assert result.skipped == [{"path": "/data/a", "reason": "not listed: " + kept}]


def test_a_folder_without_an_id_is_noted_and_the_next_is_scanned() -> None:
    tree = Tree({"b": {"x": 1}, "c": {"y": 2}})
    root = tree.folders[tree.root_id]
    b_id = root[0]["id"]
    root.append({"name": "a", "type": "folder"})  # no id
    root.append({"id": b_id, "name": "b2", "type": "folder"})  # b again: once
    result = Scan(tree.list_folder, tree.root(), depth=0).run()
    assert result.skipped == [{"path": "/data/a", "reason": "no id"}]
    assert (result.files, result.size, tree.calls) == (2, 3, 3)


def test_a_loop_through_an_ancestor_and_a_folder_met_again_after_it_closed() -> None:
    """The open folders are the chain from the root; a folder listed and closed may come
    again elsewhere (the same id under two parents): scanned there too."""
    tree = Tree({"a": {"b": {"x": 1}}, "c": {}})
    entries = {e["name"]: e for e in tree.folders[tree.root_id]}
    a_id, c_id = entries["a"]["id"], entries["c"]["id"]
    b_id = tree.folders[a_id][0]["id"]
    tree.folders[b_id].append({"id": a_id, "name": "up", "type": "folder"})
    tree.folders[c_id].append({"id": b_id, "name": "b-again", "type": "folder"})

    def lister(fid: str) -> Iterator[dict[str, Any]]:
        assert tree.calls < 10, "an endless loop"
        return tree.list_folder(fid)

    result = Scan(lister, tree.root(), depth=0).run()
    assert result.skipped == [{"path": "/data/a/b/up", "reason": "inside itself"},
                              {"path": "/data/c/b-again/up/b", "reason": "inside itself"}]
    assert (result.files, tree.calls) == (2, 6)


def test_an_equal_size_in_a_later_listing_takes_the_place_of_a_later_path() -> None:
    tree = Tree({"z": 5, "a": {"x": 5}})
    assert scan_top(tree, 1) == [{"path": "/data/a/x", "size": 5}]


def scan_top(tree: Tree, n: int) -> list[dict[str, Any]]:
    return Scan(tree.list_folder, tree.root(), top=n).run().top


def test_a_folder_named_with_a_slash_is_not_counted_twice() -> None:
    """A hostile node's folder named "a/b" beside a real a/b: one row, each counted once
    (the rows are summed along the open folders down to --depth, not one more)."""
    tree = Tree({"a": {"b": {"x": 1}}, "a/b": {"y": 2}})
    rows = {r["path"]: (r["files"], r["size"])
            for r in Scan(tree.list_folder, tree.root(), depth=1).run().rows}
    assert rows == {"/data": (2, 3), "/data/a": (1, 1), "/data/a/b": (1, 2)}


def test_ncdu_items_keep_their_mtime_and_the_header_its_fields() -> None:
    when = datetime(2024, 3, 2, 10, 0, tzinfo=UTC)
    tree = Tree({"d\udc80": {}})
    tree.folders[tree.root_id] += [
        {"id": "t", "name": "text", "type": "file", "size": 1, "mtime": "2024-03-02T10:00:00Z"},
        {"id": "w", "name": "when", "type": "file", "size": 1, "mtime": when},
        {"id": "n", "name": "number", "type": "file", "size": 1, "mtime": 5},
        {"id": "e", "name": "empty", "type": "file", "size": 1, "mtime": ""},
    ]
    started = datetime.now(UTC)
    data = ncdu_tree(Scan(tree.list_folder, tree.root(), ncdu=True).run())
    meta = data[2]
    assert set(meta) == {"progname", "progver", "timestamp"}
    assert (meta["progname"], meta["progver"]) == ("nodecli", __version__)
    assert abs(meta["timestamp"] - started.timestamp()) < 5
    items = {i["name"]: i.get("mtime") for i in data[3][1:] if isinstance(i, dict)}
    stamp = int(when.timestamp())
    assert items == {"text": stamp, "when": stamp, "number": None, "empty": None}
    folders = [i for i in data[3][1:] if isinstance(i, list)]
    assert folders[0][0]["name"] == "d?"  # a lone surrogate a hostile node sent


class CountingState(ScanState):
    saved: list[int]

    def save(self, snap: fs.Snapshot) -> None:
        self.saved.append(snap.listings)
        super().save(snap)


@pytest.mark.parametrize(("every", "clock_step", "saves"), [
    (2, 0.0, [2, 4, 6, 7]),  # every 2 folders, and at the end
    (None, 1.0, [2, 4, 6, 7]),  # every 2 s on a clock that ticks 1 s a call
    (None, 0.5, [4, 7]),
])
def test_snapshots_come_exactly_every_n_folders_or_seconds(
        tmp_path: Path, every: int | None, clock_step: float, saves: list[int]) -> None:
    tree = Tree({f"d{i}": {} for i in range(6)})
    state = CountingState(tmp_path / "s.json", "s")
    state.saved = []
    now = [100.0]

    def clock() -> float:
        now[0] += clock_step
        return now[0]

    Scan(tree.list_folder, tree.root(), state=state, save_every=2.0 if every is None else 1e9,
         save_every_folders=every, clock=clock).run()
    assert state.saved == saves


@pytest.mark.parametrize("start", [0.0, 100.0])
def test_progress_is_reported_from_the_first_listing_every_fifth_of_a_second(
        start: float) -> None:
    """Listings 0, 0.1, 0.1 and 0.5 s apart on the scan's clock; the last folder is
    refused after one entry (its entry still counts in the rate)."""
    from nodecli.errors import NotFoundError

    tree = Tree({"a": {"x": 1}, "b": {"y": 2}, "c": {"q": 9}})
    ids = {e["name"]: e["id"] for e in tree.folders[tree.root_id]}
    delays = {tree.root_id: 0.0, ids["a"]: 0.1, ids["b"]: 0.1, ids["c"]: 0.5}
    now = [start]

    def lister(fid: str) -> Iterator[dict[str, Any]]:
        now[0] += delays[fid]
        for entry in tree.list_folder(fid):
            yield entry
            if fid == ids["c"]:
                raise NotFoundError("gone")

    seen: list[tuple[float, fs.Progress]] = []
    scan = Scan(lister, tree.root(), depth=0, clock=lambda: now[0],
                progress=lambda p: seen.append((now[0], p)))
    scan.run()
    assert scan.report().rate == pytest.approx(6 / 0.7)  # the last snapshot's
    assert (seen[0][0], seen[0][1].folders, seen[0][1].rate) == (start, 1, 0.0)
    if start == 0.0:  # (exact in binary: each report exactly 0.2 s after the last)
        assert [(t, p.folders, p.files, p.rate) for t, p in seen] == [
            (0.0, 1, 0, 0.0), (0.2, 3, 2, 25.0), (0.7, 3, 2, 6 / 0.7)]


def test_a_resumed_scan_reports_without_a_snapshot_given(tmp_path: Path) -> None:
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}})
    state = ScanState(tmp_path / "s.json", "s")
    with pytest.raises(KeyboardInterrupt):
        Scan(lambda fid: (_ for _ in ()).throw(KeyboardInterrupt) if tree.calls else
             tree.list_folder(fid), tree.root(), node="n", state=state).run()
    scan = Scan(tree.list_folder, tree.root(), node="n", state=state)
    scan.run()
    assert (scan.report().files, scan.report().folders) == (2, 3)


def test_a_state_without_ncdu_is_not_resumed_with_it(tmp_path: Path) -> None:
    tree = Tree({"a": {"x": 1}})
    state = ScanState(tmp_path / "s.json", "s")
    with pytest.raises(KeyboardInterrupt):
        Scan(lambda fid: (_ for _ in ()).throw(KeyboardInterrupt), tree.root(), node="n",
             state=state).run()
    with pytest.raises(UsageError, match=r"^scan s was started with --depth 1 --top 0$"):
        Scan(tree.list_folder, tree.root(), node="n", state=state, ncdu=True).run()
    assert tree.calls == 0
