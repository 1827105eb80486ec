"""The saved place of ``files du --resume NAME`` and ``files find --resume NAME``
(nodecli/node/files_scan.py): the snapshot a scan commits, its state file
(``STATE/scans/NAME.json``) with its lock, validated load and atomic saves, and beside
it the ncdu output (``NAME.ncdu``) or find's matches (``NAME.found``) written so far."""

from __future__ import annotations

import heapq
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from nodecli.errors import ConfigError, ConflictError, UsageError, shorten

STATE_VERSION = 1
STATE_KIND = "nodecli-files-du"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
LIST, CLOSE = "L", "C"  # the stack's frames: a folder to list, the close of one listed


class Ranked:
    """A file in the bounded heap of the largest: the heap's root is the one to drop
    first, the smallest, and among equal sizes the last by path (so the files kept do
    not depend on the order the node lists them in)."""

    __slots__ = ("path", "size")

    def __init__(self, size: int, path: str) -> None:
        self.size, self.path = size, path

    def __lt__(self, other: Ranked) -> bool:
        if self.size != other.size:
            return self.size < other.size
        return self.path > other.path


@dataclass
class Snapshot:
    """Everything a scan has committed: what a state file holds."""

    node: str
    path: str
    root_id: str
    depth: int
    top_n: int
    ncdu: bool
    started_at: str
    stack: list[list[Any]] = field(default_factory=list)
    rows: dict[str, list[int]] = field(default_factory=dict)  # path -> depth, size, files, folders
    top: list[Ranked] = field(default_factory=list)
    folders: int = 0
    files: int = 0
    size: int = 0  # bytes
    listings: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    skipped_count: int = 0
    ncdu_length: int = 0  # the spool's committed length: ncdu's output, or find's matches
    finished_at: str | None = None
    find: dict[str, Any] | None = None  # files find: its filters (None: a files du)

    def to_json(self) -> bytes:
        data = {
            "kind": STATE_KIND, "version": STATE_VERSION, "node": self.node,
            "path": self.path, "root_id": self.root_id,
            "options": {"depth": self.depth, "top": self.top_n, "ncdu": self.ncdu,
                        **({"find": self.find} if self.find is not None else {})},
            "started_at": self.started_at, "saved_at": datetime.now(UTC).isoformat(),
            "finished_at": self.finished_at,
            "counts": {"folders": self.folders, "files": self.files, "bytes": self.size,
                       "listings": self.listings, "skipped": self.skipped_count},
            "stack": self.stack,
            "rows": [[p, *v] for p, v in self.rows.items()],
            "top": [[r.size, r.path] for r in self.top],
            "skipped": self.skipped, "ncdu_length": self.ncdu_length,
        }
        return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def _damaged(path: Path, what: str) -> ConfigError:
    return ConfigError(f"scan state {path} is damaged ({what})",
                       hint="nothing was changed; --restart starts the scan over")


def _ints(values: Any, n: int) -> bool:
    return (isinstance(values, list) and len(values) == n
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                    for v in values))


def _filters(value: Any) -> bool:
    """files find's filters as a state keeps them: None (a du), or names to text,
    whole numbers or null."""
    return value is None or (isinstance(value, dict) and all(
        isinstance(k, str) and (v is None or isinstance(v, str)
                                or (isinstance(v, int) and not isinstance(v, bool)))
        for k, v in value.items()))


def _load_snapshot(raw: bytes, path: Path) -> Snapshot:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise _damaged(path, "not JSON") from None
    if not isinstance(data, dict) or data.get("kind") != STATE_KIND:
        raise _damaged(path, "not a files du state")
    if data.get("version") != STATE_VERSION:
        raise ConfigError(f"scan state {path} is of an unknown version",
                          hint="it was saved by another nodecli; --restart starts over")
    opts, counts = data.get("options"), data.get("counts")
    strings = [data.get(k) for k in ("node", "path", "root_id", "started_at")]
    if not (isinstance(opts, dict) and isinstance(counts, dict)
            and all(isinstance(s, str) for s in strings)
            and _ints([opts.get("depth"), opts.get("top")], 2)
            and isinstance(opts.get("ncdu"), bool)
            and _ints([counts.get(k) for k in ("folders", "files", "bytes", "listings",
                                               "skipped")], 5)
            and _ints([data.get("ncdu_length")], 1)
            and isinstance(data.get("finished_at"), (str, type(None)))
            and _filters(opts.get("find"))):
        raise _damaged(path, "fields")
    node, root_path, root_id, started = (str(s) for s in strings)
    snap = Snapshot(node, root_path, root_id, opts["depth"], opts["top"], opts["ncdu"],
                    started, finished_at=data["finished_at"], find=opts.get("find"))
    snap.folders, snap.files, snap.size, snap.listings, snap.skipped_count = (
        counts["folders"], counts["files"], counts["bytes"], counts["listings"],
        counts["skipped"])
    snap.ncdu_length = data["ncdu_length"]
    stack, rows, top, skipped = (data.get(k) for k in ("stack", "rows", "top", "skipped"))
    if not all(isinstance(x, list) for x in (stack, rows, top, skipped)):
        raise _damaged(path, "lists")
    for frame in stack:  # type: ignore[union-attr]
        if not (isinstance(frame, list) and len(frame) == 5 and frame[0] in (LIST, CLOSE)
                and all(isinstance(x, str) for x in (frame[1], frame[2], frame[4]))
                and _ints([frame[3]], 1)):
            raise _damaged(path, "stack")
    snap.stack = stack  # type: ignore[assignment]
    for row in rows:  # type: ignore[union-attr]
        if not (isinstance(row, list) and len(row) == 5 and isinstance(row[0], str)
                and _ints(row[1:], 4)):
            raise _damaged(path, "rows")
        snap.rows[row[0]] = row[1:]
    for item in top:  # type: ignore[union-attr]
        if not (isinstance(item, list) and len(item) == 2 and _ints(item[:1], 1)
                and isinstance(item[1], str)):
            raise _damaged(path, "top")
        snap.top.append(Ranked(item[0], item[1]))
    heapq.heapify(snap.top)
    for item in skipped:  # type: ignore[union-attr]
        if not (isinstance(item, dict) and all(isinstance(v, str) for v in item.values())):
            raise _damaged(path, "skipped")
    snap.skipped = skipped  # type: ignore[assignment]
    return snap


class ScanState:
    """The state file of ``--resume NAME``: an exclusive lock (two scans of one name
    never run at once), a validated load, atomic saves (0600), and beside it the ncdu
    output written so far (``NAME.ncdu``), cut back on resume to what the state counts."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = Path(path)
        self.name = name
        self.spool_path = self.path.with_suffix(".ncdu")
        self.found_path = self.path.with_suffix(".found")  # files find's matches so far
        self._unlock: Callable[[], None] | None = None

    @classmethod
    def named(cls, state_dir: str | Path, name: str) -> ScanState:
        """``STATE/scans/NAME.json``: a name is one scan, of one node and path."""
        if not NAME_RE.fullmatch(name):
            raise UsageError(f"invalid scan name {shorten(name, 40)!r}: letters, digits, "
                             "'.', '_' and '-' (at most 64)")
        return cls(Path(state_dir) / "scans" / f"{name}.json", name)

    def lock(self) -> None:
        from nodecli.fsutil import ensure_private_dir, remove_stale_temps, try_lock

        ensure_private_dir(self.path.parent)
        release = try_lock(self.path.with_name(f".{self.path.name}.lock"), 0)
        if release is None:
            raise ConflictError(f"scan {self.name} is running in another nodecli",
                                hint="two scans of one name would count twice; wait for "
                                     "it, stop it, or use another name")
        self._unlock = release
        remove_stale_temps(self.path.parent, [self.path.name])

    def unlock(self) -> None:
        if self._unlock is not None:
            self._unlock()
            self._unlock = None

    @property
    def locked(self) -> bool:
        return self._unlock is not None

    def discard(self) -> None:
        """Forget the saved scan (``--restart``): the state and its ncdu output."""
        for p in (self.path, self.spool_path, self.found_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass

    def load(self) -> Snapshot | None:
        from nodecli.fsutil import NotRegularFile, read_regular

        try:
            raw = read_regular(self.path)
        except FileNotFoundError:
            return None
        except NotRegularFile as exc:
            raise UsageError(f"scan state {self.path} {exc.strerror}") from None
        except OSError as exc:
            raise ConfigError(f"cannot read scan state {self.path}: {exc.strerror}") from None
        return _load_snapshot(raw, self.path)

    def check(self, snap: Snapshot, *, node: str, path: str, depth: int, top: int,
              ncdu: bool, find: dict[str, Any] | None = None) -> None:
        """Refuse to resume a scan of another node or path, or with other options (a
        du's state is not a find's, nor a find's with other filters)."""
        if snap.find != find:
            was = "a files du" if snap.find is None else "a files find" if find is None \
                else "a files find with other filters (" + shorten(
                    " ".join(f"{k}={v}" for k, v in snap.find.items() if v is not None)
                    or "none", 120) + ")"
            raise UsageError(f"scan {self.name} is {was}",
                             hint="resume it with the same command, use another --resume "
                                  "NAME, or --restart")
        if snap.node != node or snap.path != path:
            raise UsageError(
                f"scan {self.name} is of {shorten(snap.path, 80)} on {shorten(snap.node, 80)}"
                f", not {shorten(path, 80)} on {shorten(node, 80)}",
                hint="use another --resume NAME, or --restart to start this one over here")
        if (snap.depth, snap.top_n) != (depth, top) or (ncdu and not snap.ncdu):
            said = f"--depth {snap.depth} --top {snap.top_n}" + (
                " -o ncdu" if snap.ncdu else "")
            raise UsageError(f"scan {self.name} was started with {said}",
                             hint="resume it with the same options, or --restart")

    def open_spool(self, length: int, *, found: bool = False) -> IO[bytes]:
        """The ncdu output (or with ``found``, files find's matches) so far, cut back to
        the ``length`` the state counts (bytes written after the last snapshot are
        written again)."""
        from nodecli.fsutil import ensure_private_dir

        ensure_private_dir(self.path.parent)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        spool = self.found_path if found else self.spool_path
        fd = os.open(spool, flags, 0o600)
        try:
            os.fchmod(fd, 0o600)
            if os.fstat(fd).st_size < length:
                what = "matches so far" if found else "ncdu output"
                raise _damaged(self.path, f"its {what} {spool} is short")
            os.ftruncate(fd, length)
            os.lseek(fd, length, os.SEEK_SET)
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "r+b")

    def matches(self, spool: IO[bytes]) -> Iterator[Any]:
        """files find's matches from its spool (``open_spool(found=True)``), one at a
        time, so memory stays flat whatever matched. A line that is not JSON (the file
        damaged or edited) makes the state damaged (exit 3), never a traceback."""
        for number, line in enumerate(spool, 1):
            try:
                yield json.loads(line)
            except (ValueError, RecursionError):
                raise _damaged(self.path, f"line {number:,} of its matches "
                               f"{self.found_path} is not JSON") from None

    def save(self, snap: Snapshot) -> None:
        from nodecli.fsutil import atomic_write
        from nodecli.node.events.checkpoint import pause_for_tests

        pause_for_tests("scan-save")  # the scan went on past the last snapshot; not saved
        atomic_write(self.path, snap.to_json(), quiet=True)
