"""A deep and wide folder tree made on demand, and how folder listings are paged.

The generated tree (``nodecli emulator serve --generated-tree fanout=F,depth=D,files=N
[,seed=S][,at=/generated]``) is mounted in the node's storage at ``at`` (``/generated``
by default), so the visibility rules of :mod:`nodecli.emulator.storage` apply to it as
to any folder. Every folder down to ``depth`` levels below the mount holds ``fanout``
sub-folders (none at the last level) and ``files`` files. An entry is computed from its
id alone (``g`` for the mount, ``g.3.1`` for its 4th folder's 2nd folder, ``g.3.1.f7``
for a file there): nothing is held per entry, so a tree of millions of entries costs
nothing until it is read, and reading it costs what one folder's page costs. Sizes and
modification times come from a hash of the seed and the id.

Paging of ``GET /files/{id}/files`` (``--files-paging MODE[:SIZE]``):

* ``numbered`` (the default, SIZE the largest ``per_page``, 1000 unless given):
  ``page`` (from 1) and ``per_page`` (default 100); ``X-Total-Count`` gives the number
  of entries the caller may see in the folder and ``Link: rel="next"`` names the next
  page while more remain.
* ``token`` (SIZE the page size, 25 unless given): ``page`` and ``per_page`` are
  ignored; ``Link: rel="next"`` carries an opaque ``iteration_token``; no total, and the
  last page (without a Link) is not empty.
* ``bare`` (SIZE the largest ``per_page``, 1000 unless given): ``page`` and
  ``per_page`` only, no Link and no total: a client reads on to an empty page.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

PAGING_MODES = ("numbered", "token", "bare")
DEFAULT_PER_PAGE = 100
DEFAULT_MAX_PER_PAGE = 1000
DEFAULT_TOKEN_PAGE = 25
# 2024-01-01T00:00:00Z: modification times fall in the year after it
EPOCH = 1704067200
YEAR = 365 * 86400
EXTENSIONS = ("dat", "txt", "log", "csv", "bin", "json")
MAX_ENTRIES = 10**12  # what one tree may hold (keeps ids and totals sane)


@dataclass(frozen=True, slots=True)
class Paging:
    mode: str = "numbered"
    size: int | None = None

    @classmethod
    def parse(cls, text: str) -> Paging:
        """``numbered``, ``token:7``, ``bare:50``..."""
        mode, _, size = str(text).partition(":")
        if mode not in PAGING_MODES:
            raise ValueError(f"paging is one of {', '.join(PAGING_MODES)}[:SIZE], "
                             f"not {text[:40]!r}")
        if not size:
            return cls(mode)
        if not size.isdigit() or not 1 <= int(size) <= 100_000:
            raise ValueError(f"the page SIZE is a whole number from 1 to 100000, not {size[:20]!r}")
        return cls(mode, int(size))


@dataclass(frozen=True, slots=True)
class TreeSpec:
    fanout: int
    depth: int
    files: int
    seed: int = 0
    at: str = "/generated"

    @classmethod
    def parse(cls, text: str) -> TreeSpec:
        """``fanout=F,depth=D,files=N[,seed=S][,at=/PATH]``."""
        values: dict[str, str] = {}
        for item in str(text).split(","):
            key, eq, value = item.strip().partition("=")
            if not eq or key not in ("fanout", "depth", "files", "seed", "at"):
                raise ValueError(f"expected fanout=F,depth=D,files=N[,seed=S][,at=/PATH], "
                                 f"not {text[:60]!r}")
            values[key] = value.strip()
        for key in ("fanout", "depth", "files"):
            if key not in values:
                raise ValueError(f"the generated tree needs {key}=N")
        numbers = {}
        for key in ("fanout", "depth", "files", "seed"):
            raw = values.get(key, "0")
            if not raw.isdigit() or len(raw) > 12:
                raise ValueError(f"{key} is a whole number, not {raw[:20]!r}")
            numbers[key] = int(raw)
        at = values.get("at", "/generated")
        parts = [p for p in at.split("/") if p]
        if not at.startswith("/") or not parts or any(p in (".", "..") for p in parts):
            raise ValueError(f"at is an absolute folder path below /, not {at[:60]!r}")
        spec = cls(numbers["fanout"], numbers["depth"], numbers["files"], numbers["seed"],
                   "/" + "/".join(parts))
        if spec.depth > 64:
            raise ValueError("depth is at most 64")
        if spec.entries() > MAX_ENTRIES:
            raise ValueError(f"the tree would hold more than {MAX_ENTRIES} entries")
        return spec

    def folders(self) -> int:
        """How many folders, the mount included."""
        return sum(self.fanout ** level for level in range(self.depth + 1))

    def entries(self) -> int:
        """How many entries below the mount (folders and files)."""
        return self.folders() - 1 + self.folders() * self.files


class GeneratedTree:
    """The entries of a :class:`TreeSpec`, computed from their ids."""

    def __init__(self, spec: TreeSpec, make: Callable[..., Any]) -> None:
        self.spec = spec
        self.make = make  # storage.FileNode (id, path, type, size, mtime)

    # -- ids and names ----------------------------------------------------------------

    def _hash(self, key: str) -> int:
        d = hashlib.blake2b(f"{self.spec.seed}:{key}".encode(), digest_size=8).digest()
        return int.from_bytes(d, "big")

    @staticmethod
    def folder_name(index: int) -> str:
        return f"dir{index:04d}"

    def file_name(self, parent: str, index: int) -> str:
        ext = EXTENSIONS[self._hash(f"{parent}.x{index}") % len(EXTENSIONS)]
        return f"file{index:05d}.{ext}"

    def parse_id(self, file_id: str) -> tuple[list[int], int | None] | None:
        """(folder indexes, file index or None) of a generated id; None if not one."""
        if file_id == "g":
            return [], None
        if not file_id.startswith("g.") or len(file_id) > 1024:
            return None
        parts = file_id[2:].split(".")
        file_index = None
        if parts[-1].startswith("f"):
            raw = parts.pop()[1:]
            if not raw.isdigit() or (len(raw) > 1 and raw[0] == "0"):
                return None
            file_index = int(raw)
            if file_index >= self.spec.files:
                return None
        if len(parts) > self.spec.depth:
            return None
        folders = []
        for raw in parts:
            if not raw.isdigit() or (len(raw) > 1 and raw[0] == "0"):
                return None
            if int(raw) >= self.spec.fanout:
                return None
            folders.append(int(raw))
        return folders, file_index

    def node(self, file_id: str) -> Any:
        """The FileNode of a generated id, or None."""
        parsed = self.parse_id(file_id)
        if parsed is None:
            return None
        folders, file_index = parsed
        path = self.spec.at + "".join("/" + self.folder_name(i) for i in folders)
        if file_index is None:
            return self._folder(file_id, path)
        return self._file(file_id.rsplit(".", 1)[0], path, file_index)

    def _folder(self, file_id: str, path: str) -> Any:
        return self.make(file_id, path, "folder", 0, EPOCH + self._hash(file_id) % YEAR)

    def _file(self, parent_id: str, parent_path: str, index: int) -> Any:
        file_id = f"{parent_id}.f{index}"
        h = self._hash(file_id)
        # mostly small files, some large: sizes from 0 bytes to about 4 GiB
        size = (h >> 20) % (1 << (12 + (h % 21)))
        return self.make(file_id, f"{parent_path}/{self.file_name(parent_id, index)}", "file",
                         size, EPOCH + (h >> 8) % YEAR)

    def by_path(self, path: str) -> Any:
        """The FileNode at an absolute path inside the mount, or None."""
        at = self.spec.at
        if path == at:
            return self.node("g")
        if not path.startswith(at + "/"):
            return None
        file_id = "g"
        parts = path[len(at) + 1:].split("/")
        for n, part in enumerate(parts):
            if part.startswith("dir") and part[3:].isdigit():
                file_id += f".{int(part[3:])}"
            elif n == len(parts) - 1 and part.startswith("file") and "." in part:
                raw = part[4:].split(".", 1)[0]
                if not raw.isdigit():
                    return None
                file_id += f".f{int(raw)}"
            else:
                return None
        node = self.node(file_id)
        return node if node is not None and node.path == path else None

    # -- listing ----------------------------------------------------------------------

    def count(self, folder_id: str) -> int:
        parsed = self.parse_id(folder_id)
        if parsed is None or parsed[1] is not None:
            return 0
        subfolders = self.spec.fanout if len(parsed[0]) < self.spec.depth else 0
        return subfolders + self.spec.files

    def children(self, folder: Any, start: int = 0, stop: int | None = None) -> Iterator[Any]:
        """The folder's entries from ``start`` to ``stop`` (folders first, by index)."""
        parsed = self.parse_id(folder.id)
        if parsed is None or parsed[1] is not None:
            return
        total = self.count(folder.id)
        stop = total if stop is None else min(stop, total)
        subfolders = total - self.spec.files
        for i in range(max(0, start), stop):
            if i < subfolders:
                child = f"{folder.id}.{i}"
                yield self._folder(child, f"{folder.path}/{self.folder_name(i)}")
            else:
                yield self._file(folder.id, folder.path, i - subfolders)

    def lineage(self, file_id: str) -> list[str]:
        """The ids of the entry and its folders up to the mount."""
        out = []
        while True:
            out.append(file_id)
            if file_id == "g":
                return out
            file_id = file_id.rsplit(".", 1)[0]


def encode_token(folder_id: str, offset: int) -> str:
    raw = json.dumps([folder_id, offset], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str) -> tuple[str, int] | None:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        folder_id, offset = json.loads(raw)
    except (ValueError, TypeError):
        return None
    if not isinstance(folder_id, str) or not isinstance(offset, int) or offset < 0:
        return None
    return folder_id, offset
