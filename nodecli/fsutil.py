"""Crash-safe, permission-safe file primitives.

* Files that may hold secrets are created 0600 *at creation time* (``os.open`` with
  the mode, then ``fchmod`` to defeat the umask), never widened afterwards.
* Replacements are atomic: a temporary file in the same folder, ``fsync``,
  ``os.replace``, then ``fsync`` of the folder so the rename itself is durable.
* Nothing is ever written through a symbolic link (``O_NOFOLLOW``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) as 0700 folders; leave existing ones alone."""
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, PRIVATE_DIR)
        except FileExistsError:
            continue
        os.chmod(d, PRIVATE_DIR)  # mkdir's mode is filtered by the umask
    return path


def fsync_dir(path: Path) -> None:
    """Make a rename inside ``path`` durable (no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def create_exclusive(path: Path, data: bytes, mode: int = PRIVATE_FILE) -> None:
    """Create a new file holding ``data``; fail if anything (even a symlink) is there.

    Used for private keys: O_EXCL plus O_NOFOLLOW means no race, no overwrite and no
    write through a planted link; the file never exists with wider permissions.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, mode)
    try:
        os.fchmod(fd, mode)
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)
    fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes, mode: int = PRIVATE_FILE, *,
                 durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically and durably.

    A reader (or a crash at any instant) sees either the old content or the new
    one, never a mix. The temporary file is created with ``mode`` from the start.
    ``durable=False`` skips the fsyncs, for caches that are checked before use.
    """
    path = Path(path)
    if path.is_symlink():
        raise OSError(f"refusing to write through symbolic link {path}")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, mode)
    try:
        os.fchmod(fd, mode)
        _write_all(fd, data)
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(path.parent)


@contextlib.contextmanager
def file_lock(
    lock_path: Path, *, timeout: float = 30.0, what: str = "the config"
) -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``lock_path`` (a separate ``.lock`` file).

    ``filelock`` is imported here, not at module import, to keep read-only commands fast.
    """
    from filelock import FileLock, Timeout

    from nodecli.errors import NodecliError

    ensure_private_dir(lock_path.parent)
    lock = FileLock(str(lock_path), timeout=timeout, mode=PRIVATE_FILE)
    try:
        lock.acquire()
    except Timeout:
        raise NodecliError(
            f"could not lock {what} within {timeout:.0f} s: another nodecli is writing",
            hint=f"if no other nodecli runs, remove the stale lock file {lock_path}",
        ) from None
    try:
        yield
    finally:
        lock.release()


def read_limited(path: str | os.PathLike[str], limit: int, what: str = "file") -> bytes:
    """Read a file the user named, refusing anything larger than ``limit`` bytes.

    Every failure is one clear line: a missing file is NotFoundError (exit 5), an
    unreadable or oversized one UsageError (exit 2). Never reads more than limit + 1.
    """
    from nodecli.errors import NotFoundError, UsageError

    p = Path(path).expanduser()
    try:
        with open(p, "rb") as fh:
            raw = fh.read(limit + 1)
    except FileNotFoundError:
        raise NotFoundError(f"{what} {p}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {p} is a folder, not a file") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise UsageError(f"{what} {p} is larger than {limit} bytes")
    return raw
