"""Crash-safe, permission-safe file primitives.

* Files that may hold secrets are created 0600 *at creation time* (``os.open`` with
  the mode, then ``fchmod`` to defeat the umask), never widened afterwards.
* Replacements are atomic: a temporary file in the same folder, ``fsync``,
  ``os.replace``, then ``fsync`` of the folder so the rename itself is durable.
* Nothing is ever written through a symbolic link (``O_NOFOLLOW``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    from pathlib import Path

StrPath = str | os.PathLike[str]
P = TypeVar("P", bound=StrPath)  # ensure_private_dir gives back what it was given

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
STALE_TEMP_AGE = 300.0  # seconds: a temp file of ours this old was left by a killed writer


class NotRegularFile(OSError):
    """A path that must be a regular file is a FIFO, device, socket or folder."""

    def __init__(self, path: StrPath, kind: str) -> None:
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", os.fspath(path))
        self.kind = kind


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular(path: StrPath) -> int:
    """A read-only descriptor of ``path`` if it is a regular file; never blocks.

    O_NONBLOCK makes opening a FIFO return at once (it would otherwise wait for a
    writer forever); the fstat of the very file opened then refuses anything that is
    not a regular file (FIFO, device, socket, folder) with :class:`NotRegularFile`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, _kind(mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: StrPath, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit`` + 1 of them); see open_regular."""
    with os.fdopen(open_regular(path), "rb") as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def remove_stale_temps(folder: StrPath, names: Iterable[str], *,
                       max_age: float = STALE_TEMP_AGE, now: float | None = None) -> list[str]:
    """Remove temporary files of :func:`atomic_write` for ``names`` in ``folder`` that a
    killed writer left behind (older than ``max_age`` seconds). Call under the lock that
    serialises the writers of those files. Returns what was removed."""
    wanted = "|".join(re.escape(n) for n in names)
    if not wanted:
        return []
    pattern = re.compile(rf"\.(?:{wanted})\.\d+\.[0-9a-f]{{8}}\.tmp")
    now = time.time() if now is None else now
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime > max_age:
                os.unlink(entry.path)
                removed.append(entry.path)
        except OSError:
            continue
    return removed


def user_path(text: str | os.PathLike[str]) -> Path:
    """A path as the user typed it, with a leading ``~`` expanded as a shell does (an
    unknown ``~user`` stays as typed, where ``Path.expanduser`` would raise)."""
    return Path(os.path.expanduser(os.fspath(text)))


def ensure_private_dir(path: P) -> P:
    """Create ``path`` (and missing parents) as 0700 folders; leave existing ones alone
    (under --dry-run: create nothing)."""
    from nodecli import dryrun

    if dryrun.active():
        return path
    missing: list[str] = []
    p = os.fspath(cast(StrPath, path))
    while not os.path.exists(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p or not parent:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, PRIVATE_DIR)
        except FileExistsError:
            continue
        os.chmod(d, PRIVATE_DIR)  # mkdir's mode is filtered by the umask
    return path


def fsync_dir(path: StrPath) -> None:
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


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def create_exclusive(path: StrPath, data: bytes, mode: int = PRIVATE_FILE) -> None:
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
    except BaseException as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        _name_the_file(exc, path)
        raise
    os.close(fd)
    fsync_dir(_parent(path))


def _name_the_file(exc: BaseException, path: StrPath) -> None:
    """An OSError of a write without a file name (disk full, quota, I/O error) is raised
    again naming the file that could not be written."""
    if isinstance(exc, OSError) and not exc.filename:
        raise OSError(exc.errno, exc.strerror or str(exc), os.fspath(path)) from None


def temp_name(path: StrPath) -> str:
    """A fresh temporary name beside ``path``, of the form :func:`remove_stale_temps`
    recognises: ``.<name>.<pid>.<8 hex digits>.tmp``."""
    folder, name = os.path.split(os.fspath(path))
    return os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def _parent(path: StrPath) -> str:
    return os.path.dirname(os.fspath(path)) or "."


@contextlib.contextmanager
def replacing(path: StrPath, data: bytes, mode: int = PRIVATE_FILE, *,
              durable: bool = True, quiet: bool = False) -> Iterator[None]:
    """Replace ``path`` with ``data`` atomically and durably, once the block has run.

    The data goes to a temporary file in the same folder, created with ``mode`` from the
    start, and is synced before the block runs; after the block, the temporary file is
    renamed over ``path`` and the folder is synced, so the rename itself survives a power
    cut. A reader (or a crash at any instant) sees either the old content or the new
    one, never a mix. If writing fails, or the block raises, ``path`` is left as it was.
    ``durable=False`` skips the syncs, for caches that are checked before use.

    Under ``--dry-run`` nothing is written: a file others use raises
    :class:`nodecli.dryrun.DryRunStop` saying what would be written; a ``quiet`` one (a
    cache, a checkpoint, the secrets file) is silently not written.
    """
    from nodecli import dryrun

    if dryrun.active():
        if not quiet:
            raise dryrun.write(os.fspath(path), len(data), mode)
        yield
        return
    path = os.fspath(path)
    if os.path.islink(path):
        raise OSError(f"refusing to write through symbolic link {path}")
    tmp = temp_name(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, mode)
    try:
        try:
            os.fchmod(fd, mode)
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        yield
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _name_the_file(exc, path)
        raise
    if durable:
        fsync_dir(_parent(path))


def atomic_write(path: StrPath, data: bytes, mode: int = PRIVATE_FILE, *,
                 durable: bool = True, quiet: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically and durably (see :func:`replacing`)."""
    with replacing(path, data, mode, durable=durable, quiet=quiet):
        pass


def try_lock(lock_path: StrPath, timeout: float) -> Callable[[], None] | None:
    """Take the exclusive inter-process lock on ``lock_path`` (a separate lock file,
    created 0600, never through a symbolic link) within ``timeout`` seconds (0: one try).

    Returns the function that releases it, or None when another process held it all
    along. The lock is ``flock(2)``'s: the kernel drops it when its holder exits, however
    it exits, so a lock file left behind is never a stale lock. (Done here rather than by
    the filelock package: every writing command would import it, for one system call.)"""
    try:
        import fcntl
    except ImportError:  # no flock(2): the portable implementation
        return _try_portable_lock(lock_path, timeout)
    flags = (os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
    fd = os.open(lock_path, flags, PRIVATE_FILE)
    try:
        deadline = time.monotonic() + timeout
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    os.close(fd)
                    return None
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.05)
    except BaseException:
        os.close(fd)
        raise

    def release() -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    return release


def _try_portable_lock(lock_path: StrPath, timeout: float) -> Callable[[], None] | None:
    from filelock import FileLock, Timeout

    lock = FileLock(os.fspath(lock_path), timeout=timeout, mode=PRIVATE_FILE)
    try:
        lock.acquire()
    except Timeout:
        return None
    return lock.release


@contextlib.contextmanager
def file_lock(
    lock_path: StrPath, *, timeout: float = 30.0, what: str = "the config"
) -> Iterator[None]:
    """Hold the exclusive inter-process lock on ``lock_path`` (see :func:`try_lock`);
    NodecliError naming it when another nodecli keeps it for ``timeout`` seconds."""
    from nodecli.errors import NodecliError

    ensure_private_dir(_parent(lock_path))
    release = try_lock(lock_path, timeout)
    if release is None:
        raise NodecliError(
            f"could not lock {what} within {timeout:.0f} s: another nodecli is writing",
            hint=f"the lock is released when that process ends; 'fuser {lock_path}' "
                 "shows it",
        )
    try:
        yield
    finally:
        release()


def require_regular(path: StrPath, what: str = "file") -> Path:
    """``path`` (``~`` expanded) if it names an existing regular file; nothing is opened.

    The same rules as :func:`read_limited`, checked up front (when the option is parsed,
    before any prompt or request): a missing file is NotFoundError (exit 5) naming it; a
    folder, FIFO, device or socket is UsageError (exit 2) at once (``stat`` never blocks
    where opening a FIFO would wait for a writer).
    """
    from pathlib import Path

    from nodecli.errors import NotFoundError, UsageError

    p = Path(path).expanduser()
    try:
        mode = os.stat(p).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise NotFoundError(f"{what} {p}: no such file") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{what} {p} is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{what} {p} is {_kind(mode)}, not a regular file")
    return p


def read_limited(path: StrPath, limit: int, what: str = "file") -> bytes:
    """Read a file the user named, refusing anything larger than ``limit`` bytes.

    Every failure is one clear line: a missing file is NotFoundError (exit 5), an
    unreadable or oversized one UsageError (exit 2). Never reads more than limit + 1.
    """
    from pathlib import Path

    from nodecli.errors import NotFoundError, UsageError

    p = Path(path).expanduser()
    try:
        raw = read_regular(p, limit)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFoundError(f"{what} {p}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {p} is a folder, not a file") from None
    except NotRegularFile as exc:
        raise UsageError(f"{what} {p} {exc.strerror}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise UsageError(f"{what} {p} is larger than {limit} bytes")
    return raw
