"""nodecli/fsutil.py at the edges its mutation run (issue 33) found unwatched: a terminal
named as a file, a relative folder, a private file's mode from its first instant, a failed
clean-up, the lock's retries and the bound of a read. Each without a timing window: the
moments in between are reached through the interpreter's audit events or a clock of the
test's own."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nodecli import fsutil
from tests.conftest import REPO_ROOT, subprocess_env

# --- a terminal named where a file is expected ---------------------------------------------

TTY_CHILD = textwrap.dedent("""
    import os, sys
    from nodecli import fsutil
    from nodecli.errors import UsageError

    def has_terminal():
        try:
            os.close(os.open("/dev/tty", os.O_RDWR))
            return True
        except OSError:
            return False

    os.setsid()  # a session of its own: no controlling terminal
    master, slave = os.openpty()
    name = os.ttyname(slave)
    os.close(slave)
    before = has_terminal()
    try:
        fsutil.read_limited(name, 100, "CA file")
        said = "read"
    except UsageError as exc:
        said = exc.message
    print(before, has_terminal(), said)
""")


def test_a_terminal_named_as_a_file_is_refused_and_never_taken_as_the_session_s():
    """`--cacert /dev/pts/3` from a process with no terminal (cron, a service): the open
    that finds it is no file must not make it the process's controlling terminal."""
    out = subprocess.run([sys.executable, "-c", TTY_CHILD], env=subprocess_env(),
                         cwd=str(REPO_ROOT), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    before, after, said = out.stdout.split(" ", 2)
    assert (before, after) == ("False", "False"), out.stdout
    assert said.strip().endswith("is a device, not a regular file"), said


# --- folders -------------------------------------------------------------------------------

def test_a_relative_folder_is_made_with_every_missing_parent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert fsutil.ensure_private_dir("a/b/c") == "a/b/c"
    for d in ("a", "a/b", "a/b/c"):
        assert stat.S_IMODE(os.stat(tmp_path / d).st_mode) == 0o700, d


def test_syncing_a_folder_that_is_a_pipe_never_waits_for_a_writer(tmp_path):
    """fsync_dir opens only a folder: a FIFO in its place is passed over at once (a plain
    open of it would wait for a writer forever). In a child, so a hang is bounded."""
    fifo = tmp_path / "not-a-folder"
    os.mkfifo(fifo)
    code = "import sys; from nodecli import fsutil; fsutil.fsync_dir(sys.argv[1]); print('done')"
    out = subprocess.run([sys.executable, "-c", code, str(fifo)], env=subprocess_env(),
                         cwd=str(REPO_ROOT), capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "done\n"), out.stderr


# --- a private file from its first instant, and a failed clean-up -------------------------

_watch: dict[str, Any] = {}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # (an audit hook stays for the life of the process: it acts only while a test sets
    # _watch, and never on its own os.remove)
    hook = _watch.get(event)
    if hook is not None and not _watch.get("busy"):
        _watch["busy"] = True
        try:
            hook(args)
        finally:
            _watch["busy"] = False


@pytest.fixture
def watch():
    if not getattr(sys, "_nodecli_fsutil_audit", False):
        sys.addaudithook(_audit)
        sys._nodecli_fsutil_audit = True  # type: ignore[attr-defined]
    yield _watch
    _watch.clear()


def test_a_private_file_is_never_wider_than_its_mode_even_before_it_is_set(tmp_path, watch):
    """create_exclusive (private keys) creates the file 0600 in the open itself: the
    fchmod after it only undoes a umask, never a wider mode the file had a moment."""
    seen: list[int] = []
    watch["os.chmod"] = lambda args: seen.append(stat.S_IMODE(os.fstat(args[0]).st_mode))
    old = os.umask(0)
    try:
        fsutil.create_exclusive(tmp_path / "key.pem", b"secret")
    finally:
        os.umask(old)
    assert seen == [0o600]
    assert stat.S_IMODE(os.stat(tmp_path / "key.pem").st_mode) == 0o600


def test_a_clean_up_that_fails_never_hides_the_error_that_caused_it(tmp_path, watch):
    """The write fails (here: at the fchmod); removing the half-made file fails too (it is
    gone already): the caller sees the write's error, not the clean-up's."""
    target = tmp_path / "key.pem"

    def fail(args: tuple[Any, ...]) -> None:
        raise OSError(28, "No space left on device")

    watch["os.chmod"] = fail
    watch["os.remove"] = lambda args: os.unlink(args[0])
    with pytest.raises(OSError) as info:
        fsutil.create_exclusive(target, b"secret")
    assert (info.value.errno, info.value.strerror, info.value.filename) == \
        (28, "No space left on device", str(target))
    assert not target.exists()


def test_an_error_without_a_reason_keeps_its_words_and_gains_the_file_name():
    with pytest.raises(OSError) as info:
        fsutil._name_the_file(OSError("the disk went away"), "/srv/x.toml")
    assert (info.value.strerror, info.value.filename) == ("the disk went away", "/srv/x.toml")


# --- the lock's retries --------------------------------------------------------------------

class _Clock:
    """fsutil's clock for one test: real time, but each sleep is recorded instead of slept,
    and the lock's holder lets go at the Nth."""

    def __init__(self, release_at: int, release) -> None:
        self.pauses: list[float] = []
        self.release_at = release_at
        self.release = release

    def monotonic(self) -> float:
        import time

        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        if len(self.pauses) == self.release_at:
            self.release()


@pytest.mark.parametrize(("release_at", "timeout"), [(1, 0.5), (9, 30.0)])
def test_a_waiter_retries_soon_then_less_often_and_takes_a_lock_let_go(
        tmp_path, monkeypatch, release_at, timeout):
    """Pauses of 1 ms doubling up to 50 ms: a lock let go is taken within 50 ms, and a
    timeout under a second is waited for, not given up at once."""
    lock = tmp_path / "config.lock"
    holder = fsutil.try_lock(lock, 0)
    assert holder is not None
    clock = _Clock(release_at, holder)
    monkeypatch.setattr(fsutil, "time", clock)
    release = fsutil.try_lock(lock, timeout)
    assert release is not None
    release()
    expected = [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.05, 0.05, 0.05][:release_at]
    assert clock.pauses == pytest.approx(expected)


# --- the bound of a read -------------------------------------------------------------------

BIG_READ_CHILD = textwrap.dedent("""
    import resource, sys
    from nodecli import fsutil
    from nodecli.errors import UsageError

    limit = 512 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        fsutil.read_limited(sys.argv[1], 65536, "--sink-creds")
    except UsageError as exc:
        print(exc.message)
""")


def test_a_huge_file_is_refused_after_reading_only_its_limit(tmp_path):
    """A 4 GiB file named where 64 KiB is the most: refused, having read 64 KiB + 1 bytes
    (the child's address space is 512 MiB: reading the whole file could not fit)."""
    huge = tmp_path / "creds"
    with open(huge, "wb") as fh:
        fh.truncate(4 * 1024 ** 3)  # sparse: no disk used
    out = subprocess.run([sys.executable, "-c", BIG_READ_CHILD, str(huge)],
                         env=subprocess_env(), cwd=str(REPO_ROOT), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"--sink-creds {Path(huge)} is larger than 65536 bytes\n"


# --- durability and --dry-run of a replaced file -------------------------------------------

def test_the_folder_of_a_file_named_without_one_is_synced_after_the_rename(
        tmp_path, monkeypatch, watch):
    """A bare name is a file of the current folder: "." is opened as a folder and synced,
    so the rename survives a power cut there too."""
    monkeypatch.chdir(tmp_path)
    opened: list[tuple[Any, int]] = []
    watch["open"] = lambda args: opened.append((args[0], args[2]))
    fsutil.atomic_write("state.json", b"{}")
    folders = [p for p, flags in opened
               if isinstance(flags, int) and flags & os.O_DIRECTORY]
    assert folders == ["."]
    assert (tmp_path / "state.json").read_bytes() == b"{}"


@pytest.fixture
def dry_run():
    from nodecli import dryrun

    dryrun.activate()
    try:
        yield
    finally:
        dryrun.activate(False)


def test_under_dry_run_a_file_others_use_stops_and_a_quiet_one_is_skipped(tmp_path, dry_run):
    from nodecli.dryrun import DryRunStop

    with pytest.raises(DryRunStop):
        fsutil.atomic_write(tmp_path / "config.toml", b"x = 1\n")
    fsutil.atomic_write(tmp_path / "cache.json", b"{}", quiet=True)  # no stop
    assert list(tmp_path.iterdir()) == []
