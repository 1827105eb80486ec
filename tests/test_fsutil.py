"""fsutil.atomic_write as seen by an independent reader: old or new content, never less."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nodecli import fsutil
from nodecli.errors import NotFoundError, UsageError
from nodecli.fsutil import PRIVATE_FILE, atomic_write

# A separate process (own interpreter, no shared GIL) that opens and reads the file as
# fast as it can until told to stop, and reports every content it saw.
READER = textwrap.dedent("""
    import os, sys
    path, stop = sys.argv[1], sys.argv[2]
    seen = {}
    reads = 0
    print("ready", flush=True)
    while not os.path.exists(stop):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            reads += 1
            seen[b"<missing>"] = seen.get(b"<missing>", 0) + 1
            continue
        reads += 1
        key = data[:1] + str(len(data)).encode() if data else b"<empty>"
        seen[key] = seen.get(key, 0) + 1
        if data and data != data[:1] * len(data):
            seen[b"<mixed>"] = seen.get(b"<mixed>", 0) + 1
    for k, v in seen.items():
        print(k.decode("latin-1"), v)
    print("reads", reads)
""")

SIZE = 256 * 1024


@pytest.mark.parametrize("durable", [True, False])
def test_reader_never_sees_empty_partial_or_missing_content(tmp_path: Path, durable: bool):
    target = tmp_path / "config.toml"
    stop = tmp_path / "stop"
    atomic_write(target, b"A" * SIZE)
    reader = subprocess.Popen([sys.executable, "-c", READER, str(target), str(stop)],
                              stdout=subprocess.PIPE, text=True)
    assert reader.stdout is not None
    assert reader.stdout.readline().strip() == "ready"
    letters = b"BCDEFGHIJKLMNOPQRSTUVWXYZ"
    writes = 0
    try:
        while writes < 400:
            letter = letters[writes % len(letters):][:1]
            atomic_write(target, letter * SIZE, durable=durable)
            writes += 1
    finally:
        stop.touch()
        out, _ = reader.communicate(timeout=60)
    lines = dict(line.rsplit(" ", 1) for line in out.splitlines())
    reads = int(lines.pop("reads"))
    assert reads > 0
    bad = {k: v for k, v in lines.items() if not (k[:1].isalpha() and k[1:] == str(SIZE))}
    assert bad == {}, f"reader saw {bad} in {reads} reads"
    assert target.read_bytes() == letters[(writes - 1) % len(letters):][:1] * SIZE
    assert (target.stat().st_mode & 0o777) == PRIVATE_FILE
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_symlink_target_refused_and_left_alone(tmp_path: Path):
    real = tmp_path / "real"
    real.write_bytes(b"keep")
    link = tmp_path / "link"
    os.symlink(real, link)
    with pytest.raises(OSError, match="symbolic link"):
        atomic_write(link, b"new")
    assert real.read_bytes() == b"keep" and link.is_symlink()


# -- open_regular / read_regular / read_limited ----------------------------------------------


def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path):
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rescued = []

    def rescue() -> None:  # only runs if open_regular blocked: unblock it, then fail
        rescued.append(True)
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    timer = threading.Timer(10.0, rescue)
    timer.start()
    try:
        with pytest.raises(fsutil.NotRegularFile) as info:
            fsutil.open_regular(fifo)
    finally:
        timer.cancel()
    assert rescued == [], "open_regular waited for a writer on a FIFO"
    assert info.value.kind == "a named pipe (FIFO)"
    assert info.value.filename == str(fifo)


@pytest.mark.parametrize(("make", "kind"), [
    (lambda p: p.mkdir(), "a folder"),
    (lambda p: None, "a device"),  # /dev/null
])
def test_non_regular_files_named_by_kind(tmp_path: Path, make, kind: str):
    target = tmp_path / "x"
    make(target)
    path = target if kind != "a device" else Path(os.devnull)
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(fsutil.NotRegularFile) as info:
        fsutil.open_regular(path)
    assert info.value.kind == kind and info.value.strerror == f"is {kind}, not a regular file"
    assert set(os.listdir("/proc/self/fd")) == before  # the descriptor was closed


def test_open_regular_gives_a_blocking_descriptor(tmp_path: Path):
    f = tmp_path / "f"
    f.write_bytes(b"data")
    fd = fsutil.open_regular(f)
    try:
        assert os.get_blocking(fd) is True
        assert os.read(fd, 10) == b"data"
    finally:
        os.close(fd)


def test_read_regular_reads_at_most_limit_plus_one(tmp_path: Path):
    f = tmp_path / "f"
    f.write_bytes(b"0123456789")
    assert fsutil.read_regular(f) == b"0123456789"
    assert fsutil.read_regular(f, 3) == b"0123"
    assert fsutil.read_regular(f, 9) == b"0123456789"
    assert fsutil.read_regular(f, 0) == b"0"


def test_read_limited_boundaries_and_messages(tmp_path: Path):
    f = tmp_path / "key.pem"
    f.write_bytes(b"x" * 10)
    assert fsutil.read_limited(f, 10) == b"x" * 10
    with pytest.raises(UsageError) as err:
        fsutil.read_limited(f, 9, "key file")
    assert err.value.message == f"key file {f} is larger than 9 bytes"
    with pytest.raises(UsageError) as err:
        fsutil.read_limited(f, 9)
    assert err.value.message == f"file {f} is larger than 9 bytes"
    with pytest.raises(NotFoundError) as nf:
        fsutil.read_limited(tmp_path / "none", 10)
    assert nf.value.message == f"file {tmp_path / 'none'}: no such file"
    with pytest.raises(UsageError) as err:
        fsutil.read_limited(tmp_path, 10, "key file")
    assert err.value.message == f"key file {tmp_path} is a folder, not a regular file"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError) as err:
        fsutil.read_limited(fifo, 10)
    assert err.value.message == f"file {fifo} is a named pipe (FIFO), not a regular file"


# -- stale temporary files -------------------------------------------------------------------


def test_remove_stale_temps_removes_only_old_temps_of_the_named_files(tmp_path: Path):
    now = 1_000_000.0
    old, fresh = now - fsutil.STALE_TEMP_AGE - 1, now - fsutil.STALE_TEMP_AGE + 1

    def make(name: str, mtime: float, folder: bool = False) -> Path:
        p = tmp_path / name
        if folder:
            p.mkdir()
        else:
            p.write_bytes(b"partial")
        os.utime(p, (mtime, mtime))
        return p

    for i in range(5):  # noise first and last, whatever the listing order
        make(f"a-{i}.txt", old)
    stale = [make(".config.toml.41.0123abcd.tmp", old),
             make(".config.toml.bak.7.deadbeef.tmp", old)]
    kept = [
        make(".config.toml.42.0123abcd.tmp", fresh),      # a writer may still be busy
        make(".other.toml.41.0123abcd.tmp", old),         # not one of the named files
        make(".config.toml.41.0123abcdef.tmp", old),      # not our random part
        make(".config.toml.x.0123abcd.tmp", old),         # not a pid
        make("config.toml.41.0123abcd.tmp", old),         # no leading dot
        make(".config.toml.41.0123ABCD.tmp", old),        # upper-case hex is not ours
        make(".config.toml.43.0123abcd.tmp", old, folder=True),
        make(".configXtoml.41.0123abcd.tmp", old),        # the dot is literal
    ]
    link = tmp_path / ".config.toml.44.0123abcd.tmp"
    os.symlink(tmp_path / "a-0.txt", link)
    removed = fsutil.remove_stale_temps(tmp_path, ["config.toml", "config.toml.bak"], now=now)
    assert sorted(removed) == sorted(map(str, stale))
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in kept) and link.is_symlink()
    assert fsutil.remove_stale_temps(tmp_path, [], now=now) == []
    assert fsutil.remove_stale_temps(tmp_path / "missing", ["config.toml"]) == []


def test_remove_stale_temps_uses_the_clock_when_not_given(tmp_path: Path):
    import time

    p = tmp_path / ".config.toml.41.0123abcd.tmp"
    p.write_bytes(b"")
    os.utime(p, (time.time() - 3600, time.time() - 3600))
    q = tmp_path / ".config.toml.42.0123abcd.tmp"
    q.write_bytes(b"")
    assert fsutil.remove_stale_temps(tmp_path, ["config.toml"]) == [str(p)]
    assert q.exists()


def test_temp_name_of_atomic_write_is_recognised_as_stale(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    # The name atomic_write gives its temporary file is the one remove_stale_temps
    # cleans up after a killed writer.
    real_replace = os.replace
    seen: list[str] = []

    def spy(src, dst):
        seen.append(os.path.basename(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    target = tmp_path / "config.toml"
    atomic_write(target, b"new")
    monkeypatch.undo()
    assert len(seen) == 1
    left = tmp_path / seen[0]
    left.write_bytes(b"partial")  # as a SIGKILLed writer would leave it
    os.utime(left, (0, 0))
    assert fsutil.remove_stale_temps(tmp_path, ["config.toml"]) == [str(left)]
    assert target.read_bytes() == b"new"


# -- atomic_write / create_exclusive: links, short writes, errors ----------------------------


def test_planted_link_at_the_temporary_name_is_never_written_through(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    monkeypatch.setattr(os, "urandom", lambda n: b"\x01" * n)
    tmp_name = tmp_path / f".config.toml.{os.getpid()}.{'01' * 4}.tmp"
    os.symlink(victim, tmp_name)
    target = tmp_path / "config.toml"
    with pytest.raises(FileExistsError):
        atomic_write(target, b"attacker-controlled?")
    assert victim.read_bytes() == b"keep"
    assert not target.exists() and tmp_name.is_symlink()


def test_short_writes_are_continued(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # POSIX lets write() take fewer bytes than asked (signals, quotas, pipes)
    real_write = os.write
    calls = []

    def short_write(fd: int, data) -> int:
        calls.append(len(data))
        return real_write(fd, bytes(data[:1000]))

    data = bytes(range(256)) * 20
    monkeypatch.setattr(os, "write", short_write)
    atomic_write(tmp_path / "a", data)
    fsutil.create_exclusive(tmp_path / "b", data)
    monkeypatch.undo()
    assert (tmp_path / "a").read_bytes() == data == (tmp_path / "b").read_bytes()
    assert calls[:6] == [5120, 4120, 3120, 2120, 1120, 120]


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_files_get_their_mode_whatever_the_umask(tmp_path: Path, mode: int):
    old = os.umask(0o077 if mode == 0o640 else 0)
    try:
        atomic_write(tmp_path / "a", b"x", mode)
        fsutil.create_exclusive(tmp_path / "b", b"x", mode)
        atomic_write(tmp_path / "c", b"x")
        fsutil.ensure_private_dir(tmp_path / "d" / "e")
    finally:
        os.umask(old)
    assert (tmp_path / "a").stat().st_mode & 0o777 == mode
    assert (tmp_path / "b").stat().st_mode & 0o777 == mode
    assert (tmp_path / "c").stat().st_mode & 0o777 == PRIVATE_FILE
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "d" / "e").stat().st_mode & 0o777 == 0o700


def test_ensure_private_dir_leaves_existing_folders_alone(tmp_path: Path):
    existing = tmp_path / "shared"
    existing.mkdir()
    existing.chmod(0o755)
    assert fsutil.ensure_private_dir(existing / "new") == existing / "new"
    assert existing.stat().st_mode & 0o777 == 0o755
    assert (existing / "new").stat().st_mode & 0o777 == 0o700


def test_create_exclusive_refuses_existing_and_links(tmp_path: Path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    link = tmp_path / "key"
    os.symlink(victim, link)
    with pytest.raises(FileExistsError):
        fsutil.create_exclusive(link, b"secret")
    with pytest.raises(FileExistsError):
        fsutil.create_exclusive(victim, b"secret")
    assert victim.read_bytes() == b"keep"


def test_failed_write_names_the_file_and_leaves_no_temp(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch):
    import errno

    target = tmp_path / "config.toml"
    target.write_bytes(b"old")

    def disk_full(fd: int, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(OSError) as info:
        atomic_write(target, b"new content")
    monkeypatch.undo()
    assert (info.value.errno, info.value.strerror, info.value.filename) == (
        errno.ENOSPC, "No space left on device", str(target))
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


def test_failed_replace_cleans_up_and_closes_only_its_own_descriptor(tmp_path: Path):
    target = tmp_path / "config.toml"
    target.mkdir()
    (target / "inside").write_bytes(b"keep")  # os.replace cannot put a file over it
    with pytest.raises(IsADirectoryError) as info:
        atomic_write(target, b"new")
    assert info.value.filename is not None
    os.fstat(1)  # the standard descriptors are untouched
    os.fstat(2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]
    assert (target / "inside").read_bytes() == b"keep"


def test_kinds_of_non_regular_files():
    import errno
    import stat as st

    assert fsutil._kind(st.S_IFDIR) == "a folder"
    assert fsutil._kind(st.S_IFIFO) == "a named pipe (FIFO)"
    assert fsutil._kind(st.S_IFSOCK) == "a socket"
    assert fsutil._kind(st.S_IFCHR) == "a device"
    assert fsutil._kind(st.S_IFBLK) == "a device"
    assert fsutil._kind(st.S_IFLNK) == "not a regular file"
    err = fsutil.NotRegularFile(Path("/x"), "a socket")
    assert (err.errno, err.strerror, err.filename, err.kind) == (
        errno.EINVAL, "is a socket, not a regular file", "/x", "a socket")


def test_interrupted_write_leaves_no_temp_and_is_not_rewrapped(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch):
    target = tmp_path / "config.toml"
    target.write_bytes(b"old")

    def interrupted(fd: int, data) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


def test_a_temp_exactly_max_age_old_is_kept(tmp_path: Path):
    now = 1_000_000.0
    p = tmp_path / ".config.toml.41.0123abcd.tmp"
    p.write_bytes(b"")
    os.utime(p, (now - 300.0, now - 300.0))
    assert fsutil.remove_stale_temps(tmp_path, ["config.toml"], now=now, max_age=300.0) == []
    assert fsutil.remove_stale_temps(tmp_path, ["config.toml"], now=now + 0.5,
                                     max_age=300.0) == [str(p)]


def test_require_regular_messages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    f = tmp_path / "ca.pem"
    f.write_bytes(b"x")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert fsutil.require_regular("~/ca.pem") == f
    with pytest.raises(NotFoundError) as nf:
        fsutil.require_regular(tmp_path / "none")
    assert nf.value.message == f"file {tmp_path / 'none'}: no such file"
    with pytest.raises(NotFoundError) as nf:
        fsutil.require_regular(f / "below", "CA file")
    assert nf.value.message == f"CA file {f / 'below'}: no such file"
    with pytest.raises(UsageError) as err:
        fsutil.require_regular(tmp_path, "CA file")
    assert err.value.message == f"CA file {tmp_path} is a folder, not a file"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError) as err:
        fsutil.require_regular(fifo)
    assert err.value.message == f"file {fifo} is a named pipe (FIFO), not a regular file"


# -- the lock ----------------------------------------------------------------------------

HOLDER = textwrap.dedent("""
    import sys, time
    from nodecli.fsutil import try_lock
    release = try_lock(sys.argv[1], 5)
    print("held" if release else "busy", flush=True)
    time.sleep(60)
""")


def _hold(lock: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_lock_held_by_another_process_times_out_with_one_clear_error(tmp_path):
    from nodecli.errors import NodecliError

    lock = tmp_path / ".config.lock"
    holder = _hold(lock)
    try:
        assert fsutil.try_lock(lock, 0) is None
        with pytest.raises(NodecliError) as exc, fsutil.file_lock(lock, timeout=0.2):
            pytest.fail("the lock was taken twice")
        assert exc.value.message == ("could not lock the config within 0 s: another nodecli "
                                     "is writing")
        assert str(lock) in (exc.value.hint or "")
    finally:
        holder.kill()
        holder.wait()
    # the kernel released it with the killed holder: no stale lock to remove by hand
    release = fsutil.try_lock(lock, 0)
    assert release is not None
    release()
    assert stat.S_IMODE(lock.stat().st_mode) == PRIVATE_FILE


def test_lock_waits_for_a_holder_that_lets_go(tmp_path):
    lock = tmp_path / "x.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER.replace("time.sleep(60)",
                                                                    "sys.stdin.readline()"),
                               str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert fsutil.try_lock(lock, 0) is None
        assert holder.stdin is not None
        holder.stdin.write("go\n")  # the holder exits, and its lock with it
        holder.stdin.flush()
        release = fsutil.try_lock(lock, 30)  # waits for it
        assert release is not None
        assert fsutil.try_lock(lock, 0) is None  # one holder at a time, in one process too
        release()
    finally:
        holder.kill()
        holder.wait()


def test_lock_is_never_taken_through_a_symbolic_link(tmp_path):
    target = tmp_path / "elsewhere"
    lock = tmp_path / ".config.lock"
    lock.symlink_to(target)
    with pytest.raises(OSError):
        fsutil.try_lock(lock, 0)
    assert not target.exists()
