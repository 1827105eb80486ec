"""The scan behind ``files du``: totals of a node's tree, its largest files, ncdu's
export format, and a resumable state (``--resume NAME``).

The scan walks depth first with an explicit stack, so memory holds only the folders
still to list (and the open folders above the one being listed), never a file: a tree
of millions of entries is scanned in flat memory. A folder's entries count only once
its listing is complete (the listing may follow many pages); what a listing gathers is
then applied in one step (:meth:`Scan._commit`). With a state file, a *consistent*
snapshot (the totals, the largest files, the folders still to list, and the length of
the ncdu output written so far) is saved atomically every few seconds and when the
scan stops: a crash at any moment resumes from the last snapshot, a folder listed in
pieces across the crash is listed again from its start, and no folder is counted
twice.

The stack holds two kinds of frame: a folder to list (``L``) and the close of a folder
already listed (``C``), pushed below its subfolders. The ``C`` frames on the stack are
exactly the folders above the next one to list, which gives the totals per folder down
to ``--depth`` (each listing adds to its open ancestors), the closing bracket of
ncdu's nested arrays, and a guard against a node whose folder contains itself.

The lister is any ``list_folder(file_id) -> Iterable[entry]`` with the node's entries
(``id``, ``name``, ``type`` ``file``/``folder``, ``size``...): the engine says nothing
to a node itself, so it is tested with an in-memory tree.
"""

from __future__ import annotations

import heapq
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

from nodecli.errors import NotFoundError, UsageError, shorten
from nodecli.node.files_scan_state import CLOSE, LIST, Ranked, ScanState, Snapshot

__all__ = ["Progress", "Result", "Root", "Scan", "ScanState", "Snapshot", "entry_size"]

Lister = Callable[[str], Iterable[Mapping[str, Any]]]
# files find: an entry, its path and its depth below the root -> its output line, or None
Finder = Callable[[Mapping[str, Any], str, int], bytes | None]

SAVE_EVERY = 2.0  # seconds between snapshots: what a crash costs at most, listing again
PROGRESS_EVERY = 0.2  # seconds between progress reports
NOT_LISTED = "not listed: "  # a skipped folder's reason: the node refused its listing
NOTED_MAX = 100  # skipped folders named in the result (the count goes on)
# a skipped folder's reason as kept: whole as files find says it without --resume (a
# node's URL and message run past 120 characters), bounded in the state
REASON_MAX = 1000
NCDU_MAJOR, NCDU_MINOR = 1, 2


def entry_size(entry: Mapping[str, Any]) -> int:
    """An entry's size in bytes: a non-negative integer, else 0 (a hostile node's
    ``"12"``, ``true``, ``-5`` or ``1e3`` adds nothing)."""
    value = entry.get("size")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def _mtime(entry: Mapping[str, Any]) -> int | None:
    """An entry's modification time as ncdu keeps it (seconds since the epoch), from
    an aware datetime or ISO 8601 text; None when there is none."""
    value = entry.get("mtime")
    if isinstance(value, datetime):
        try:
            return int(value.timestamp())
        except (ValueError, OverflowError, OSError):
            return None
    if not isinstance(value, str) or not value:
        return None
    from nodecli.timeparse import TimeParseError, parse_iso8601

    try:
        return int(parse_iso8601(value).timestamp())
    except (TimeParseError, ValueError, OverflowError, OSError):
        return None


# one encoder for every item: json.dumps with options builds a new one per call
_NCDU_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _ncdu_json(obj: dict[str, Any]) -> bytes:
    """An item of ncdu's format: UTF-8 as it is, not ``\\u`` escapes (ncdu 1.x decodes
    each escape alone, so a character beyond the BMP, a surrogate pair, would come out
    as garbage); a lone surrogate a hostile node sent becomes ``?``."""
    return _NCDU_ENCODER.encode(obj).encode("utf-8", "replace")


def child_path(parent: str, name: str) -> str:
    return (parent.rstrip("/") or "") + "/" + name


@dataclass(slots=True)
class Progress:
    """How far a scan is, for a status line (the counts include resumed runs)."""

    folders: int
    files: int
    size: int  # bytes
    pending: int
    elapsed: float  # seconds of this run
    rate: float  # entries (files and folders) listed per second in this run


@dataclass(slots=True)
class Result:
    path: str
    rows: list[dict[str, Any]]  # per folder down to --depth, in tree order
    top: list[dict[str, Any]]  # the largest files, largest first (equal sizes by path)
    folders: int  # folders below the path (the path itself not counted)
    files: int
    size: int  # bytes
    listings: int  # folder listings completed by this run
    resumed: bool  # this run went on from a saved state
    was_finished: bool  # the saved state was already finished: nothing was listed
    finished_at: str | None
    skipped: list[dict[str, str]]  # folders not scanned (vanished, or inside themselves)
    skipped_count: int
    ncdu: IO[bytes] | None = None  # ncdu's export, at its start (the caller closes it)


@dataclass(slots=True)
class Root:
    """What PATH resolved to: its id, its node path, and whether it is a folder."""

    id: str
    path: str
    is_folder: bool
    size: int = 0


class Scan:
    """One run of a scan (see the module's docstring)."""

    def __init__(self, lister: Lister, root: Root, *, node: str = "", depth: int = 1,
                 top: int = 0, ncdu: bool = False, state: ScanState | None = None,
                 progress: Callable[[Progress], None] | None = None,
                 save_every: float = SAVE_EVERY, save_every_folders: int | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 unreadable: Callable[[BaseException], bool] | None = None,
                 find: Finder | None = None, filters: dict[str, Any] | None = None,
                 max_depth: int | None = None) -> None:
        self.lister, self.root, self.node = lister, root, node
        # files find: each match's line goes to the spool as its folder is listed, kept
        # with the folder's commit (so a resume never writes a folder's matches twice)
        self.find, self.filters = find, (filters or {}) if find is not None else None
        self.max_depth = max_depth
        self.depth, self.top_n = depth, top
        self.want_ncdu = ncdu
        # the ncdu output: the state's file with --resume, else a temporary file (a
        # folder that vanishes mid-listing is cut back out of it); Result.ncdu
        self.out: IO[bytes] | None = None
        self.state = state
        self.progress = progress
        self.save_every, self.save_every_folders = save_every, save_every_folders
        self.clock = clock
        # a folder below the path that cannot be listed (deleted meanwhile, refused) is
        # noted and the scan goes on; anything else stops it
        self.unreadable = unreadable or (lambda exc: isinstance(exc, NotFoundError))
        self.snap: Snapshot | None = None
        self._chain: list[list[Any]] = []  # the open folders: the C frames, root first
        self._open: set[str] = set()
        self._dirty = False
        self._since_save = 0
        self.listings = 0
        self.entries = 0

    # -- the run -----------------------------------------------------------------------

    def run(self) -> Result:
        """Scan to the end (or go on from the saved state) and give the totals. With a
        state file, a failure or an interruption saves the last consistent snapshot
        first; the exception then goes on."""
        locked_here = self.state is not None and not self.state.locked
        if locked_here:
            assert self.state is not None
            self.state.lock()
        try:
            return self._run()
        finally:
            if locked_here:
                assert self.state is not None
                self.state.unlock()

    def _run(self) -> Result:
        snap, resumed = self._start(self.want_ncdu)
        if snap.finished_at is not None:
            return self._result(snap, resumed=True, was_finished=True)
        started = self.clock()
        self._last_save = started
        self._last_progress = started - PROGRESS_EVERY  # the first listing is reported
        self._started = started
        try:
            self._walk(snap)
            self._finish(snap)
        except BaseException:
            if self.state is not None and not self._dirty:
                self._save(snap)
            raise
        return self._result(snap, resumed=resumed, was_finished=False)

    def _start(self, want_ncdu: bool) -> tuple[Snapshot, bool]:
        root = self.root
        snap = self.state.load() if self.state is not None else None
        if snap is not None and self.state is not None:
            self.state.check(snap, node=self.node, path=root.path, depth=self.depth,
                             top=self.top_n, ncdu=want_ncdu, find=self.filters)
            if snap.ncdu or snap.find is not None:
                self.out = self.state.open_spool(snap.ncdu_length,
                                                 found=snap.find is not None)
            self._rebuild_chain(snap)
            self.snap = snap
            return snap, True
        if want_ncdu and not root.is_folder:
            raise UsageError(f"{shorten(root.path)} is a file: ncdu's format holds a "
                             "folder", hint="name the folder that holds it")
        snap = Snapshot(self.node, root.path, root.id, self.depth, self.top_n, want_ncdu,
                        datetime.now(UTC).isoformat(), find=self.filters)
        if want_ncdu or self.find is not None:
            if self.state is not None:
                self.out = self.state.open_spool(0, found=self.find is not None)
            else:
                import tempfile

                self.out = tempfile.TemporaryFile()  # Result.ncdu: the caller closes it
        if not root.is_folder:
            snap.files, snap.size = 1, root.size
            self._offer_top(snap.top, root.size, root.path)
        else:
            snap.stack.append([LIST, root.id, root.path, 0, root.path])
            if want_ncdu and self.out is not None:
                self._write(self._ncdu_header(snap))
                snap.ncdu_length = self._tell()
        self.snap = snap
        return snap, False

    def _rebuild_chain(self, snap: Snapshot) -> None:
        self._chain = [f for f in snap.stack if f[0] == CLOSE]
        self._open = {f[1] for f in self._chain}

    def _walk(self, snap: Snapshot) -> None:
        stack = snap.stack
        while stack:
            frame = stack[-1]
            if frame[0] == CLOSE:
                self._dirty = True
                stack.pop()
                self._chain.pop()
                self._open.discard(frame[1])
                if self.out is not None and self.find is None:
                    self._write(b"]")
                    snap.ncdu_length = self._tell()
                self._dirty = False
                continue
            self._list(snap, frame)
            self._after_commit(snap)

    def _list(self, snap: Snapshot, frame: list[Any]) -> None:
        _, fid, path, depth, name = frame
        out = self.out
        files = size = 0
        subs: list[tuple[str, str]] = []
        best: list[Ranked] = []  # this listing's candidates for the largest files
        floor = snap.top[0] if len(snap.top) >= self.top_n > 0 else None
        find = self.find
        if out is not None and find is None:
            info: dict[str, Any] = {"name": name, "asize": 0, "dsize": 0}
            self._write(b",[" + _ncdu_json(info))
        top_n, seen = self.top_n, 0
        write = out.write if out is not None and find is None else None
        encode = _NCDU_ENCODER.encode
        try:
            for entry in self.lister(fid):
                seen += 1
                ename = entry.get("name")
                ename = ename if isinstance(ename, str) and ename else str(entry.get("id"))
                if find is not None:
                    line = find(entry, child_path(path, ename), depth + 1)
                    if line is not None:
                        assert out is not None
                        out.write(line)
                if entry.get("type") == "folder":
                    sid = entry.get("id")
                    subs.append((str(sid) if sid is not None else "", ename))
                    continue
                n = entry_size(entry)
                files += 1
                size += n
                if top_n > 0 and (floor is None or n >= floor.size):
                    cand = Ranked(n, child_path(path, ename))
                    if floor is None or floor < cand:
                        self._offer_top(best, n, cand.path)
                if write is not None:  # (an item of ncdu's format, as _ncdu_json makes it)
                    mtime = _mtime(entry)
                    write(b',{"name":' + encode(ename).encode("utf-8", "replace")
                          + (b',"asize":%d,"dsize":%d' % (n, n))
                          + (b',"mtime":%d}' % mtime if mtime is not None else b"}"))
        except Exception as exc:
            self.entries += seen
            if depth == 0 or not self.unreadable(exc):
                raise
            self._commit_unreadable(snap, frame, str(exc))
            return
        self.entries += seen
        self._commit(snap, frame, files, size, subs, best)

    def _commit(self, snap: Snapshot, frame: list[Any], files: int, size: int,
                subs: list[tuple[str, str]], best: list[Ranked]) -> None:
        """Apply one complete listing: one step, never saved half done."""
        _, fid, path, depth, _name = frame
        subs.sort(key=lambda s: s[1])
        kept: list[list[Any]] = []
        seen: set[str] = set()
        for sid, sname in subs:
            if sid in seen:  # the same folder twice in one listing: counted once
                continue
            seen.add(sid)
            if sid in self._open or sid == fid or not sid:
                self._note_skip(snap, child_path(path, sname),
                                "inside itself" if sid else "no id")
                continue
            if self.max_depth is None or depth + 1 < self.max_depth:
                kept.append([LIST, sid, child_path(path, sname), depth + 1, sname])
        self._dirty = True
        stack = snap.stack
        stack.pop()
        close = [CLOSE, fid, path, depth, _name]
        stack.append(close)
        stack.extend(reversed(kept))
        self._chain.append(close)
        self._open.add(fid)
        if depth <= self.depth:
            snap.rows.setdefault(path, [depth, 0, 0, 0])  # (two folders of one name: one row)
        for opened in self._chain[: self.depth + 1]:
            row = snap.rows.get(opened[2])
            if row is not None:
                row[1] += size
                row[2] += files
                row[3] += len(seen)
        for cand in best:
            self._offer_top(snap.top, cand.size, cand.path)
        snap.folders += len(seen)
        snap.files += files
        snap.size += size
        snap.listings += 1
        self.listings += 1
        if self.out is not None:
            snap.ncdu_length = self._tell()
        self._dirty = False

    def _commit_unreadable(self, snap: Snapshot, frame: list[Any], why: str) -> None:
        """A folder the node does not list (deleted during the scan, refused): noted,
        nothing inside counted; ncdu marks it as a folder it could not read."""
        self._dirty = True
        if self.out is not None:  # what the listing wrote is cut back first
            self._seek(snap.ncdu_length)
        if self.out is not None and self.find is None:
            info = {"name": frame[4], "asize": 0, "dsize": 0, "read_error": True}
            self._write(b",[" + _ncdu_json(info) + b"]")
            snap.ncdu_length = self._tell()
        snap.stack.pop()
        self._note_skip(snap, frame[2], NOT_LISTED + shorten(why, REASON_MAX))
        self._dirty = False

    def _note_skip(self, snap: Snapshot, path: str, why: str) -> None:
        snap.skipped_count += 1
        if len(snap.skipped) < NOTED_MAX:
            snap.skipped.append({"path": path, "reason": why})

    def _offer_top(self, heap: list[Ranked], size: int, path: str) -> None:
        if self.top_n <= 0:
            return
        item = Ranked(size, path)
        if len(heap) < self.top_n:
            heapq.heappush(heap, item)
        elif heap[0] < item:
            heapq.heapreplace(heap, item)

    def _after_commit(self, snap: Snapshot) -> None:
        self._since_save += 1
        now = self.clock()
        if self.state is not None and (
            now - self._last_save >= self.save_every
            or (self.save_every_folders is not None
                and self._since_save >= self.save_every_folders)):
            self._save(snap)
        if self.progress is not None and now - self._last_progress >= PROGRESS_EVERY:
            self._last_progress = now
            self.progress(self.report(snap))

    def report(self, snap: Snapshot | None = None) -> Progress:
        snap = snap or self.snap
        assert snap is not None
        elapsed = max(self.clock() - self._started, 0.0)
        rate = self.entries / elapsed if elapsed > 0 else 0.0
        pending = len(snap.stack) - len(self._chain)  # (the C frames are the chain)
        return Progress(snap.listings, snap.files, snap.size, pending, elapsed, rate)

    def _save(self, snap: Snapshot) -> None:
        assert self.state is not None
        if self.out is not None:
            self.out.flush()
            os.fsync(self.out.fileno())  # the state never counts bytes a crash can lose
        self.state.save(snap)
        self._since_save = 0
        self._last_save = self.clock()

    def _finish(self, snap: Snapshot) -> None:
        if self.out is not None and snap.ncdu:
            self._write(b"]\n")
            snap.ncdu_length = self._tell()
            self.out.flush()
        snap.finished_at = datetime.now(UTC).isoformat()
        if self.state is not None:
            self._save(snap)

    # -- ncdu's export format ------------------------------------------------------------

    def _ncdu_header(self, snap: Snapshot) -> bytes:
        from nodecli import __version__

        meta = {"progname": "nodecli", "progver": __version__,
                "timestamp": int(datetime.fromisoformat(snap.started_at).timestamp())}
        return f"[{NCDU_MAJOR},{NCDU_MINOR},".encode() + _ncdu_json(meta)

    def _write(self, data: bytes) -> None:
        assert self.out is not None
        self.out.write(data)

    def _tell(self) -> int:
        assert self.out is not None
        return self.out.tell()

    def _seek(self, length: int) -> None:
        """Cut the ncdu output back to ``length``."""
        assert self.out is not None
        self.out.seek(length)
        self.out.truncate()

    # -- the result ----------------------------------------------------------------------

    def _result(self, snap: Snapshot, *, resumed: bool, was_finished: bool) -> Result:
        if self.out is not None:
            self.out.flush()
            self.out.seek(0)
        rows = [{"path": p, "depth": v[0], "size": v[1], "files": v[2], "folders": v[3]}
                for p, v in snap.rows.items()]
        if not rows and not snap.stack and snap.finished_at is not None \
                and snap.listings == 0:
            rows = [{"path": snap.path, "depth": 0, "size": snap.size, "files": snap.files,
                     "folders": 0}]
        top = sorted(snap.top, reverse=True)
        return Result(snap.path, rows, [{"path": r.path, "size": r.size} for r in top],
                      snap.folders, snap.files, snap.size, self.listings, resumed,
                      was_finished, snap.finished_at, list(snap.skipped),
                      snap.skipped_count, self.out)
