"""The scan engine of ``files du`` (nodecli/node/files_scan.py) over in-memory trees:
totals equal a direct sum, the largest files, ncdu's format, and resumes after a crash
at any listing (or inside one) that equal an uninterrupted run; then its boundaries
one by one. The same engine over HTTPS and through a SIGKILL: tests/test_files_du.py."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.errors import ConfigError, ConflictError, NotFoundError, UsageError
from nodecli.node import files_scan as fs
from nodecli.node.files_scan import Root, Scan, ScanState

# -- an in-memory node --------------------------------------------------------------------


class Tree:
    """A node's tree in memory: ``{"name": size}`` is a file, ``{"name": {...}}`` a folder.
    ``list_folder(id)`` gives its entries; ``calls`` counts the listings asked for."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.folders: dict[str, list[dict[str, Any]]] = {}
        self.paths: dict[str, str] = {}
        self.calls = 0
        self._next = 0
        self.root_id = self._add("/data", spec)

    def _add(self, path: str, spec: dict[str, Any]) -> str:
        fid = f"d{self._next}"
        self._next += 1
        self.paths[fid] = path
        entries: list[dict[str, Any]] = []
        for name, value in spec.items():
            if isinstance(value, dict):
                sub = self._add(path + "/" + name, value)
                entries.append({"id": sub, "name": name, "type": "folder", "size": 0})
            else:
                entries.append({"id": f"f{self._next}", "name": name, "type": "file",
                                "size": value})
                self._next += 1
        self.folders[fid] = entries
        return fid

    def list_folder(self, fid: str) -> Iterator[dict[str, Any]]:
        self.calls += 1
        if fid not in self.folders:
            raise NotFoundError(f"no folder {fid}")
        yield from self.folders[fid]

    def root(self) -> Root:
        return Root(self.root_id, "/data", True)


def direct(spec: dict[str, Any], path: str = "/data", depth: int = 0,
           limit: int = 1) -> tuple[list[dict[str, Any]], list[tuple[int, str]], dict[str, int]]:
    """Rows down to ``limit``, every file (size, path) and the totals, by plain recursion."""
    rows: list[dict[str, Any]] = []
    files: list[tuple[int, str]] = []
    tot = {"size": 0, "files": 0, "folders": 0}
    mine = {"path": path, "depth": depth, "size": 0, "files": 0, "folders": 0}
    if depth <= limit:
        rows.append(mine)
    for name in sorted(spec):  # the engine's order: subfolders by name
        value = spec[name]
        if isinstance(value, dict):
            sub_rows, sub_files, sub_tot = direct(value, f"{path}/{name}", depth + 1, limit)
            rows.extend(sub_rows)
            files.extend(sub_files)
            tot["folders"] += 1 + sub_tot["folders"]
            tot["files"] += sub_tot["files"]
            tot["size"] += sub_tot["size"]
        else:
            files.append((value, f"{path}/{name}"))
            tot["files"] += 1
            tot["size"] += value
    mine.update(tot)
    return rows, files, tot


def largest(files: list[tuple[int, str]], n: int) -> list[dict[str, Any]]:
    return [{"path": p, "size": s} for s, p in sorted(files, key=lambda f: (-f[0], f[1]))[:n]]


names = st.text("abcxyz-. ", min_size=1, max_size=3)
trees = st.recursive(
    st.dictionaries(names, st.integers(0, 40), max_size=4),
    lambda inner: st.dictionaries(names, st.one_of(st.integers(0, 40), inner), max_size=5),
    max_leaves=40,
)


def scan(tree: Tree, **kw: Any) -> fs.Result:
    return Scan(tree.list_folder, tree.root(), node="n", **kw).run()


def ncdu_tree(result: fs.Result) -> Any:
    assert result.ncdu is not None
    data = json.loads(result.ncdu.read())
    result.ncdu.close()
    return data


def ncdu_sums(item: Any) -> tuple[int, int]:
    """(size, files) of an ncdu item, as ncdu adds them up."""
    if isinstance(item, dict):
        return item["asize"], 1
    size = files = 0
    for child in item[1:]:
        s, f = ncdu_sums(child)
        size, files = size + s, files + f
    return size, files


# -- totals, the largest, ncdu --------------------------------------------------------------


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(spec=trees, depth=st.integers(0, 4), top=st.integers(0, 6))
def test_totals_equal_a_direct_sum(spec: dict[str, Any], depth: int, top: int) -> None:
    tree = Tree(spec)
    result = scan(tree, depth=depth, top=top, ncdu=True)
    rows, files, tot = direct(spec, limit=depth)
    assert result.rows == rows
    assert (result.size, result.files, result.folders) == (tot["size"], tot["files"],
                                                           tot["folders"])
    assert result.top == largest(files, top)
    assert result.listings == tot["folders"] + 1 == tree.calls
    data = ncdu_tree(result)
    assert data[:2] == [1, 2] and data[2]["progname"] == "nodecli"
    assert data[3][0]["name"] == "/data"
    assert ncdu_sums(data[3]) == (tot["size"], tot["files"])


# -- resume: a crash at any listing, or inside one ---------------------------------------------


class Crash(Exception):
    pass


class KillableState(ScanState):
    """A state whose saves stop when the process is "killed": what a SIGKILL leaves is
    the last snapshot saved before it, and nothing the way out would save."""

    killed = False
    saves = 0

    def save(self, snap: fs.Snapshot) -> None:
        if not self.killed:
            self.saves += 1
            super().save(snap)


def crashing(tree: Tree, at_call: int, at_entry: int, state: KillableState, kill: bool):
    """``tree.list_folder`` that crashes on listing number ``at_call``, after
    ``at_entry`` of its entries (more than it has: at its end, before it completes)."""

    def lister(fid: str) -> Iterator[dict[str, Any]]:
        number = tree.calls + 1
        for i, entry in enumerate(tree.list_folder(fid)):
            if number == at_call and i == at_entry:
                break
            yield entry
        if number == at_call:
            state.killed = kill
            raise Crash(f"listing {number}")

    return lister


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow,
                                                    HealthCheck.function_scoped_fixture])
@given(spec=trees, depth=st.integers(0, 3), top=st.integers(0, 4),
       crashes=st.lists(st.tuples(st.integers(1, 30), st.integers(0, 6), st.booleans()),
                        min_size=1, max_size=3),
       every=st.integers(1, 4))
def test_resume_after_crashes_equals_an_uninterrupted_run(
        tmp_path: Path, spec: dict[str, Any], depth: int, top: int,
        crashes: list[tuple[int, int, bool]], every: int) -> None:
    whole = scan(Tree(spec), depth=depth, top=top, ncdu=True)
    expected_ncdu = ncdu_tree(whole)
    folder = tmp_path / f"s{os.urandom(4).hex()}"
    tree = Tree(spec)
    opts = {"depth": depth, "top": top, "ncdu": True, "save_every": 1e9,
            "save_every_folders": every}
    result = None
    for at_call, at_entry, kill in crashes:
        state = KillableState(folder / "s.json", "s")
        tree.calls = 0
        try:
            result = Scan(crashing(tree, at_call, at_entry, state, kill), tree.root(),
                          node="n", state=state, **opts).run()
        except Crash:
            continue
        break
    if result is None:  # the last run crashed too: one more, to the end
        state = KillableState(folder / "s.json", "s")
        result = Scan(tree.list_folder, tree.root(), node="n", state=state, **opts).run()
    assert result.rows == whole.rows
    assert result.top == whole.top
    assert (result.size, result.files, result.folders) == (whole.size, whole.files,
                                                           whole.folders)
    data = ncdu_tree(result)
    assert data[3] == expected_ncdu[3]  # byte for byte but the header's time
    assert result.finished_at is not None


def test_a_folder_listed_in_pieces_is_listed_again_from_its_start(tmp_path: Path) -> None:
    spec = {"a": {f"f{i}": i for i in range(10)}, "b": {"x": 5}}
    tree = Tree(spec)
    state = KillableState(tmp_path / "s.json", "s")
    with pytest.raises(Crash):  # listing 2 is /data/a: crashed after 4 of its 10 files
        Scan(crashing(tree, 2, 4, state, False), tree.root(), node="n", state=state,
             ncdu=True, save_every_folders=1).run()
    saved = json.loads(state.path.read_bytes())
    assert saved["counts"] == {"folders": 2, "files": 0, "bytes": 0, "listings": 1,
                               "skipped": 0}
    assert [f[2] for f in saved["stack"] if f[0] == "L"] == ["/data/b", "/data/a"]
    result = Scan(tree.list_folder, tree.root(), node="n", state=ScanState(state.path, "s"),
                  ncdu=True).run()
    assert result.resumed and result.listings == 2
    assert (result.files, result.size) == (11, 50)
    assert ncdu_sums(ncdu_tree(result)[3]) == (50, 11)


def test_an_interruption_saves_what_was_committed(tmp_path: Path) -> None:
    """Ctrl-C (KeyboardInterrupt) in a listing: the state holds every listing before it,
    though no periodic save came."""
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}, "c": {"z": 3}})
    state = ScanState(tmp_path / "s.json", "s")
    calls = 0

    def lister(fid: str) -> Iterator[dict[str, Any]]:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return tree.list_folder(fid)

    with pytest.raises(KeyboardInterrupt):
        Scan(lister, tree.root(), node="n", state=state, save_every=1e9).run()
    saved = json.loads(state.path.read_bytes())
    assert saved["counts"]["listings"] == 2 and saved["counts"]["files"] == 1
    assert saved["finished_at"] is None
    assert stat.S_IMODE(os.stat(state.path).st_mode) == 0o600
    result = Scan(tree.list_folder, tree.root(), node="n", state=state).run()
    assert (result.listings, result.files, result.size) == (2, 3, 6)


# -- the state file ---------------------------------------------------------------------------


def test_a_finished_scan_says_so_and_lists_nothing(tmp_path: Path) -> None:
    tree = Tree({"a": {"x": 7}})
    state = ScanState.named(tmp_path, "nightly")
    first = Scan(tree.list_folder, tree.root(), node="n", state=state).run()
    assert state.path == tmp_path / "scans" / "nightly.json"
    assert not first.was_finished and first.finished_at
    tree.calls = 0
    again = Scan(tree.list_folder, tree.root(), node="n", state=state).run()
    assert again.was_finished and tree.calls == 0
    assert again.rows == first.rows and again.finished_at == first.finished_at
    state.discard()
    fresh = Scan(tree.list_folder, tree.root(), node="n", state=state).run()
    assert not fresh.was_finished and tree.calls == 2


@pytest.mark.parametrize(("change", "words"), [
    ({"node": "other"}, "scan s is of /data on n, not /data on other"),
    ({"path": "/elsewhere"}, "scan s is of /data on n, not /elsewhere on n"),
    ({"depth": 2}, "scan s was started with --depth 1 --top 0"),
    ({"top": 3}, "scan s was started with --depth 1 --top 0"),
    ({"ncdu": True}, "scan s was started with --depth 1 --top 0"),
])
def test_a_state_of_another_scan_is_refused(tmp_path: Path, change: dict[str, Any],
                                            words: str) -> None:
    tree = Tree({"a": {"x": 1}, "b": {}})
    state = ScanState(tmp_path / "s.json", "s")
    with pytest.raises(KeyboardInterrupt):
        Scan(lambda fid: (_ for _ in ()).throw(KeyboardInterrupt), tree.root(), node="n",
             state=state).run()
    before = state.path.read_bytes()
    node = change.pop("node", "n")
    root = Root(tree.root_id, change.pop("path", "/data"), True)
    with pytest.raises(UsageError) as exc:
        Scan(tree.list_folder, root, node=node, state=state, **change).run()
    assert exc.value.message == words
    assert state.path.read_bytes() == before


def test_an_ncdu_state_resumes_without_ncdu_and_keeps_its_output(tmp_path: Path) -> None:
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}})
    state = KillableState(tmp_path / "s.json", "s")
    with pytest.raises(Crash):
        Scan(crashing(tree, 3, 0, state, True), tree.root(), node="n", state=state,
             ncdu=True, save_every_folders=1).run()
    assert stat.S_IMODE(os.stat(state.spool_path).st_mode) == 0o600
    Scan(tree.list_folder, tree.root(), node="n", state=ScanState(state.path, "s")).run()
    again = Scan(tree.list_folder, tree.root(), node="n", state=ScanState(state.path, "s"),
                 ncdu=True).run()
    assert again.was_finished
    assert ncdu_sums(ncdu_tree(again)[3]) == (3, 2)


def test_two_scans_of_one_name_never_run_at_once(tmp_path: Path) -> None:
    one = ScanState.named(tmp_path, "big")
    two = ScanState.named(tmp_path, "big")
    one.lock()
    try:
        with pytest.raises(ConflictError, match="scan big is running in another nodecli"):
            two.lock()
        ScanState.named(tmp_path, "other").lock()  # another name is another lock
    finally:
        one.unlock()
    two.lock()
    two.unlock()


@pytest.mark.parametrize("name", ["", "-x", "a/b", "..", "x" * 65, "a b", "é"])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="invalid scan name"):
        ScanState.named(tmp_path, name)


def test_names_at_their_bounds_are_taken(tmp_path: Path) -> None:
    assert ScanState.named(tmp_path, "x" * 64).name == "x" * 64
    assert ScanState.named(tmp_path, "a").name == "a"


@pytest.mark.parametrize("content", [
    b"not json", b"[]", b'{"kind": "other"}',
    b'{"kind": "nodecli-files-du", "version": 1}',
])
def test_a_damaged_state_is_refused_and_left_alone(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(content)
    tree = Tree({"a": 1})
    with pytest.raises(ConfigError, match=r"scan state .* is damaged") as exc:
        Scan(tree.list_folder, tree.root(), node="n", state=ScanState(path, "s")).run()
    assert "--restart" in (exc.value.hint or "")
    assert path.read_bytes() == content and tree.calls == 0


def _saved(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}})
    state = KillableState(tmp_path / "s.json", "s")
    with pytest.raises(Crash):
        Scan(crashing(tree, 3, 0, state, True), tree.root(), node="n", state=state,
             top=2, ncdu=True, save_every_folders=1).run()
    return state.path, json.loads(state.path.read_bytes())


@pytest.mark.parametrize(("where", "value"), [
    ("stack", [["X", "d1", "/p", 0, "p"]]), ("stack", [["L", 1, "/p", 0, "p"]]),
    ("stack", [["L", "d1", "/p", -1, "p"]]), ("stack", [["L", "d1", "/p", 0]]),
    ("rows", [["/data", 0, 1, 2]]), ("rows", [["/data", 0, 1, 2, True]]),
    ("top", [[1, 2]]), ("top", [[-1, "/x"]]), ("skipped", [{"path": 3}]),
    ("stack", {}), ("ncdu_length", -1), ("finished_at", 5),
])
def test_a_state_with_a_bad_field_is_damaged(tmp_path: Path, where: str, value: Any) -> None:
    path, data = _saved(tmp_path)
    data[where] = value
    path.write_text(json.dumps(data))
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}})
    with pytest.raises(ConfigError, match="is damaged"):
        Scan(tree.list_folder, tree.root(), node="n", state=ScanState(path, "s"), top=2,
             ncdu=True).run()


def test_an_ncdu_output_shorter_than_its_state_is_damaged(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    spool = path.with_suffix(".ncdu")
    spool.write_bytes(spool.read_bytes()[: data["ncdu_length"] - 1])
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}})
    with pytest.raises(ConfigError, match=r"ncdu output .* is short"):
        Scan(tree.list_folder, tree.root(), node="n", state=ScanState(path, "s"), top=2,
             ncdu=True).run()


def test_a_state_of_another_version_is_refused(tmp_path: Path) -> None:
    path, data = _saved(tmp_path)
    data["version"] = 2
    path.write_text(json.dumps(data))
    tree = Tree({})
    with pytest.raises(ConfigError, match="unknown version"):
        Scan(tree.list_folder, tree.root(), node="n", state=ScanState(path, "s")).run()


# -- boundaries -------------------------------------------------------------------------------


def test_depth_0_is_one_row_of_the_whole_tree() -> None:
    result = scan(Tree({"a": {"b": {"c": 5}}, "x": 1}), depth=0)
    assert result.rows == [{"path": "/data", "depth": 0, "size": 6, "files": 2,
                            "folders": 2}]


def test_depth_n_stops_at_n() -> None:
    result = scan(Tree({"a": {"b": {"c": {"d": 5}}}}), depth=2)
    assert [r["path"] for r in result.rows] == ["/data", "/data/a", "/data/a/b"]
    assert [r["size"] for r in result.rows] == [5, 5, 5]
    assert [r["folders"] for r in result.rows] == [3, 2, 1]


def test_top_at_exactly_n_files_and_one_more() -> None:
    files = {f"f{i}": 10 + i for i in range(5)}
    assert [t["size"] for t in scan(Tree(files), top=5).top] == [14, 13, 12, 11, 10]
    assert [t["size"] for t in scan(Tree(files), top=4).top] == [14, 13, 12, 11]
    files["g"] = 9
    assert [t["size"] for t in scan(Tree(files), top=5).top] == [14, 13, 12, 11, 10]
    assert scan(Tree(files), top=0).top == []


def test_equal_sizes_keep_the_first_paths_whatever_the_listing_order() -> None:
    spec = {"b": {"z": 7, "a": 7}, "a": 7, "c": 7, "d": 3}
    tree = Tree(spec)
    for entries in tree.folders.values():
        entries.reverse()
    result = scan(tree, top=3)
    assert result.top == [{"path": "/data/a", "size": 7}, {"path": "/data/b/a", "size": 7},
                          {"path": "/data/b/z", "size": 7}]


def test_an_empty_folder() -> None:
    result = scan(Tree({}), depth=1, top=3, ncdu=True)
    assert result.rows == [{"path": "/data", "depth": 0, "size": 0, "files": 0,
                            "folders": 0}]
    assert result.top == []
    assert ncdu_tree(result)[3] == [{"name": "/data", "asize": 0, "dsize": 0}]
    nested = scan(Tree({"e": {}}), depth=1)
    assert nested.rows[1] == {"path": "/data/e", "depth": 1, "size": 0, "files": 0,
                              "folders": 0}
    assert nested.rows[0]["folders"] == 1


def test_a_file_where_a_folder_was_expected() -> None:
    result = Scan(lambda fid: pytest.fail("a file is not listed"),
                  Root("f1", "/data/big.iso", False, 4096), top=2).run()
    assert result.rows == [{"path": "/data/big.iso", "depth": 0, "size": 4096, "files": 1,
                            "folders": 0}]
    assert result.top == [{"path": "/data/big.iso", "size": 4096}]
    with pytest.raises(UsageError, match="is a file: ncdu's format holds a folder"):
        Scan(lambda fid: [], Root("f1", "/data/big.iso", False, 4096), ncdu=True).run()


def test_a_folder_inside_itself_is_not_scanned_again() -> None:
    tree = Tree({"a": {"x": 1}})
    a_id = next(e["id"] for e in tree.folders[tree.root_id] if e["name"] == "a")
    tree.folders[a_id].append({"id": tree.root_id, "name": "loop", "type": "folder"})
    tree.folders[a_id].append({"id": a_id, "name": "self", "type": "folder"})
    result = scan(tree, depth=2)
    assert (result.files, result.size, tree.calls) == (1, 1, 2)
    assert result.skipped == [{"path": "/data/a/loop", "reason": "inside itself"},
                              {"path": "/data/a/self", "reason": "inside itself"}]


def test_a_folder_listed_twice_in_one_listing_counts_once() -> None:
    tree = Tree({"a": {"x": 1}})
    tree.folders[tree.root_id].append(dict(tree.folders[tree.root_id][0]))
    result = scan(tree)
    assert (result.files, result.folders, tree.calls) == (1, 1, 2)


def test_a_folder_that_vanishes_is_noted_and_the_scan_goes_on() -> None:
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}})
    gone = next(e["id"] for e in tree.folders[tree.root_id] if e["name"] == "a")
    tree.folders[gone] = [{"id": "f9", "name": "half", "type": "file", "size": 50}]

    def lister(fid: str) -> Iterator[dict[str, Any]]:
        yield from tree.list_folder(fid)
        if fid == gone:  # after a first page: the folder is deleted meanwhile
            raise NotFoundError("not found")

    result = Scan(lister, tree.root(), ncdu=True).run()
    assert (result.files, result.size) == (1, 2)
    assert result.skipped == [{"path": "/data/a", "reason": "not listed: not found"}]
    assert ncdu_tree(result)[3][1] == [{"name": "a", "asize": 0, "dsize": 0,
                                        "read_error": True}]
    with pytest.raises(NotFoundError):  # the path itself: nothing to scan
        Scan(lambda fid: tree.list_folder("nope"), tree.root()).run()


@pytest.mark.parametrize("size", [-5, "12", True, 1.5, None, [1]])
def test_a_size_that_is_no_size_adds_nothing(size: Any) -> None:
    tree = Tree({"x": 3})
    tree.folders[tree.root_id].append({"id": "h", "name": "h", "type": "file", "size": size})
    result = scan(tree, top=5)
    assert (result.files, result.size) == (2, 3)


def test_an_entry_without_a_name_is_named_by_its_id() -> None:
    tree = Tree({})
    tree.folders[tree.root_id] = [{"id": "f7", "type": "file", "size": 1},
                                  {"id": "f8", "name": "", "type": "file", "size": 2}]
    assert [t["path"] for t in scan(tree, top=2).top] == ["/data/f8", "/data/f7"]


def test_progress_reports_counts_and_a_rate() -> None:
    seen: list[fs.Progress] = []
    now = [0.0]

    def clock() -> float:
        now[0] += 0.25
        return now[0]

    scan(Tree({"a": {"x": 1, "y": 2}, "b": {}}), progress=seen.append, clock=clock)
    assert seen and seen[-1].folders >= 2
    last = seen[-1]
    assert (last.files, last.size) == (2, 3)
    assert last.rate > 0 and last.pending >= 0


def test_an_interruption_inside_a_commit_saves_nothing_half_done(tmp_path: Path) -> None:
    """Ctrl-C while a listing is being applied (the state is half changed): the way out
    leaves the last snapshot as it was, and the resume counts that listing once."""
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}})

    class CutShort(Scan):
        def _offer_top(self, heap: list[Any], size: int, path: str) -> None:
            if self.snap is not None and heap is self.snap.top and path == "/data/b/y":
                raise KeyboardInterrupt  # after the stack moved on, before the totals
            super()._offer_top(heap, size, path)

    state = ScanState(tmp_path / "s.json", "s")
    with pytest.raises(KeyboardInterrupt):
        CutShort(tree.list_folder, tree.root(), node="n", state=state, top=1,
                 save_every_folders=1).run()
    saved = json.loads(state.path.read_bytes())
    assert saved["counts"]["files"] == 1 and saved["counts"]["listings"] == 2
    result = Scan(tree.list_folder, tree.root(), node="n", state=state, top=1).run()
    assert (result.files, result.size, result.listings) == (2, 3, 1)
    assert result.top == [{"path": "/data/b/y", "size": 2}]


def test_the_ncdu_output_is_cut_back_to_what_the_state_counts(tmp_path: Path) -> None:
    """Killed inside a listing whose folder then shrinks: what that listing had written
    past the snapshot is gone from the output, not left at its end."""
    tree = Tree({"a": {f"file-{i}": i for i in range(20)}, "b": {"y": 2}})
    state = KillableState(tmp_path / "s.json", "s")
    with pytest.raises(Crash):
        Scan(crashing(tree, 2, 19, state, True), tree.root(), node="n", state=state,
             ncdu=True, save_every_folders=1).run()
    a_id = next(e["id"] for e in tree.folders[tree.root_id] if e["name"] == "a")
    del tree.folders[a_id][1:]
    result = Scan(tree.list_folder, tree.root(), node="n", state=ScanState(state.path, "s"),
                  ncdu=True).run()
    assert ncdu_tree(result)[3][1:] == [
        [{"name": "a", "asize": 0, "dsize": 0}, {"name": "file-0", "asize": 0, "dsize": 0}],
        [{"name": "b", "asize": 0, "dsize": 0}, {"name": "y", "asize": 2, "dsize": 2}]]


def test_skipped_folders_are_counted_past_the_hundred_named() -> None:
    tree = Tree({})
    tree.folders[tree.root_id] = [{"id": f"gone{i}", "name": f"g{i:03d}", "type": "folder"}
                                  for i in range(fs.NOTED_MAX + 1)]
    result = scan(tree)
    assert result.skipped_count == fs.NOTED_MAX + 1 and len(result.skipped) == fs.NOTED_MAX
    assert result.skipped[0] == {"path": "/data/g000", "reason": "not listed: no folder gone0"}
    assert result.folders == fs.NOTED_MAX + 1


def test_a_folder_that_vanishes_in_a_resumable_ncdu_scan(tmp_path: Path) -> None:
    """The snapshot right after an unreadable folder counts the ncdu output to that
    point: a crash there resumes to a whole export."""
    tree = Tree({"a": {"x": 1}, "b": {"y": 2}, "c": {"z": 3}})
    a_id = next(e["id"] for e in tree.folders[tree.root_id] if e["name"] == "a")
    del tree.folders[a_id]
    state = KillableState(tmp_path / "s.json", "s")
    with pytest.raises(Crash):  # listing 3 is /data/b (after the root and the gone /data/a)
        Scan(crashing(tree, 3, 0, state, True), tree.root(), node="n", state=state,
             ncdu=True, save_every_folders=1).run()
    assert json.loads(state.path.read_bytes())["counts"]["skipped"] == 1
    result = Scan(tree.list_folder, tree.root(), node="n", state=ScanState(state.path, "s"),
                  ncdu=True).run()
    assert (result.files, result.size, result.skipped_count) == (2, 5, 1)
    assert ncdu_sums(ncdu_tree(result)[3]) == (5, 2)


def test_progress_reports_exact_counts_and_rate() -> None:
    seen: list[fs.Progress] = []
    ticks = iter(range(0, 1000))
    scan(Tree({"a": {"x": 1, "y": 2}, "b": {}}), progress=seen.append,
         clock=lambda: float(next(ticks)))
    # one clock reading per listing (and one at the start): each report sees 1 s more
    assert [(p.folders, p.files, p.size, p.pending) for p in seen] == [
        (1, 0, 0, 2), (2, 2, 3, 1), (3, 2, 3, 0)]
    assert [p.elapsed for p in seen] == [2.0, 4.0, 6.0]
    assert [p.rate for p in seen] == [2 / 2.0, 4 / 4.0, 4 / 6.0]  # entries a second


def test_a_refused_name_is_quoted() -> None:
    with pytest.raises(UsageError) as exc:
        ScanState.named("/tmp", "a/b")
    assert exc.value.message.startswith("invalid scan name 'a/b': letters, digits")


def test_a_loop_through_a_folder_opened_before_a_crash_is_seen_after_it(tmp_path: Path) -> None:
    tree = Tree({"a": {"b": {"x": 1}}})
    a_id = next(e["id"] for e in tree.folders[tree.root_id] if e["name"] == "a")
    b_id = next(e["id"] for e in tree.folders[a_id] if e["name"] == "b")
    tree.folders[b_id].append({"id": a_id, "name": "back", "type": "folder"})
    state = KillableState(tmp_path / "s.json", "s")
    with pytest.raises(Crash):  # listing 3 is /data/a/b: killed with / and /data/a open
        Scan(crashing(tree, 3, 0, state, True), tree.root(), node="n", state=state,
             save_every_folders=1).run()

    def bounded(fid: str) -> Iterator[dict[str, Any]]:
        if tree.calls > 20:
            raise AssertionError("the loop was listed again and again")
        return tree.list_folder(fid)

    tree.calls = 0
    result = Scan(bounded, tree.root(), node="n", state=ScanState(state.path, "s")).run()
    assert result.skipped == [{"path": "/data/a/b/back", "reason": "inside itself"}]
    assert (result.files, tree.calls) == (1, 1)
