"""Shared fixtures: every test runs in an isolated home with a fixed terminal."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

# Hypothesis's own per-example deadline (200 ms) is a wall-clock assertion: on a loaded
# machine a correct example takes longer and the test fails. A hang is pytest-timeout's
# to catch; the suite asserts no times (a test may still set its own settings).
settings.register_profile("nodecli", deadline=None)
settings.load_profile("nodecli")

REPO_ROOT = Path(__file__).resolve().parent.parent

# the world every command of the tree runs in (the tree_world fixture)
pytest_plugins = ["tests.command_world"]

# A suite started in the background by a shell without job control (`pytest &`) inherits
# SIGINT *ignored*, and every child would too: the tests that press Ctrl-C in a child
# (emulator serve, operations resolve) would then hang. Children get the default, as
# from a terminal (exec resets a handler, never an ignore).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    def __repr__(self) -> str:  # shown by pytest on failure
        return f"Result(exit_code={self.exit_code}, stdout={self.stdout!r}, stderr={self.stderr!r})"


# Times must not depend on the machine's time zone (token expiry, --since, --expires-at):
# the suite runs in a zone east of UTC unless NODECLI_TEST_TZ names another (CI runs the
# time-related tests again in a zone west of UTC). Children inherit TZ.
TEST_TZ = os.environ.get("NODECLI_TEST_TZ", "Asia/Kolkata")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private NODECLI_HOME per test, no colour, 80 columns, no leaked NODECLI_* vars,
    the test time zone."""
    for key in list(os.environ):
        if key.startswith("NODECLI_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("TZ", TEST_TZ)
    time.tzset()
    # Children get the environment a user has: a CI runner's PYTHONUNBUFFERED would hide
    # a missing flush (output lost when a piped process is killed).
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("NODECLI_HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    yield home
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(autouse=True)
def cheap_password_hashes(request: pytest.FixtureRequest,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process ``user add`` and ``passwd`` hash at scrypt ln=4, not the product's 15:
    the suite adds users in hundreds of worlds, and at ln=15 each hash is a tenth of a
    second of CPU. The cost is stored in each hash, so checking is unchanged; nodecli run as
    a subprocess (and a test marked ``real_password_cost``) hashes at the product's cost,
    and tests/test_passwords_golden.py proves that cost is what a stored hash says."""
    if request.node.get_closest_marker("real_password_cost") is None:
        from nodecli.users import passwords

        monkeypatch.setattr(passwords, "DEFAULT_LOG_N", 4)


def live_children() -> dict[int, str]:
    """The pytest process's children that still run (not zombies): pid -> command line.
    From /proc: each thread's ``children`` file (a child belongs to the thread that
    started it)."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that just ended
            pids.update(int(p) for p in (task / "children").read_text().split())
    found: dict[int, str] = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue  # ended; collected whenever its Popen is
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # ended and collected meanwhile
        found[pid] = " ".join(a.decode(errors="replace") for a in argv if a)[:200]
    return found


_CAN_SEE_CHILDREN = Path("/proc/self/task").is_dir() and any(
    (t / "children").exists() for t in Path("/proc/self/task").iterdir())


def children_left(before: set[int]) -> dict[int, str]:
    """The children running now that were not in ``before``, each killed (SIGKILL)."""
    left = {pid: cmd for pid, cmd in live_children().items() if pid not in before}
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return left


def _standard_descriptors() -> list[tuple[int, int] | None]:
    """What descriptors 0, 1 and 2 are (device and inode; None when closed)."""
    found: list[tuple[int, int] | None] = []
    for fd in (0, 1, 2):
        try:
            st = os.fstat(fd)
        except OSError:
            found.append(None)
        else:
            found.append((st.st_dev, st.st_ino))
    return found


@pytest.fixture(autouse=True)
def standard_descriptors_kept(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test leaves descriptors 0, 1 and 2 of the test process as it found them. One
    that closed 0 (or left a socket of its own there) made every later child of the same
    process start without a stdin (pexpect's children: "stdin is not a terminal"), and
    which test had done it was invisible. A descriptor found closed is opened again on
    /dev/null so that the run goes on, and the test fails, naming it."""
    before = _standard_descriptors()
    yield
    after = _standard_descriptors()
    if after != before:
        for fd, now in enumerate(after):
            if now is None:
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
        changed = [fd for fd in (0, 1, 2) if after[fd] != before[fd]]
        pytest.fail(f"{request.node.nodeid} changed standard descriptor(s) {changed} of "
                    "the test process (closed, or left one of its own there)")


@pytest.fixture(autouse=True)
def no_child_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test (and its function-scoped fixtures) reaps every child it starts, also when
    it fails (``reap()`` in a ``finally``, or a fixture). One still running after the
    test is killed here, so the run goes on, and the test errors, naming it. Children of
    wider fixtures (a module's server) were there before the test and are left alone."""
    if not _CAN_SEE_CHILDREN:
        yield
        return
    before = set(live_children())
    yield
    left = children_left(before)
    if left:
        pytest.fail(f"{request.node.nodeid} left {len(left)} child process(es) running "
                    "(reap each in a finally): "
                    + "; ".join(f"{pid}: {cmd}" for pid, cmd in sorted(left.items())),
                    pytrace=False)


class FrozenClock:
    """A clock that stands still until told to move (see ``nodecli.timeparse.clock``)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


FROZEN_NOW = datetime(2030, 6, 15, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> FrozenClock:
    """Every 'now' of in-process nodecli code is FROZEN_NOW (tests never race the clock)."""
    from nodecli import timeparse

    clock = FrozenClock(FROZEN_NOW)
    monkeypatch.setattr(timeparse, "clock", clock)
    return clock


@pytest.fixture
def home(isolated_env: Path) -> Path:
    return isolated_env


@pytest.fixture
def invoke() -> Callable[..., Result]:
    """Run nodecli in-process (through the real entry point's error mapping).

    stdout and stderr are captured separately; ``input`` feeds stdin.
    """
    from nodecli.cli.main import run

    def _invoke(*args: str, input: str | bytes | None = None,
                env: dict[str, str] | None = None) -> Result:
        runner = CliRunner()
        with runner.isolation(input=input, env=env) as (out, err, _):
            code = run(list(args))
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except ValueError:
                pass
            return Result(int(code), out.getvalue().decode(), err.getvalue().decode())

    return _invoke


def reap(proc) -> None:
    """For a test's ``finally``: kill a child (subprocess.Popen or pexpect.spawn) that
    is still running, and collect it, so a failing test never leaves one behind."""
    if hasattr(proc, "terminated"):  # pexpect
        if proc.isalive():
            _show_stacks(proc)
            proc.close(force=True)
        return
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def pty_to_the_end(cmd: list[str], env: dict[str, str], **spawn: object) -> tuple[int, str]:
    """Run ``cmd`` in a real pseudo-terminal (24 x 200, 30 s) to its end: its exit
    status and all it showed; killed in any case."""
    import pexpect

    child = pexpect.spawn(cmd[0], cmd[1:], env=env, encoding="utf-8",
                          **{"timeout": 30, "dimensions": (24, 200), **spawn})
    try:
        child.expect(pexpect.EOF)
        said = child.before
        child.close()
    finally:
        reap(child)
    return child.exitstatus, said


def spawn_stdout_to(out: Path, args: Sequence[str], env: dict[str, str], **spawn: object):
    """``nodecli ARGS > out`` in a real pseudo-terminal (a shell sends stdout to the
    file; stdin and stderr stay on the terminal): a pexpect child, reaped by the caller."""
    import pexpect

    return pexpect.spawn("/bin/sh", ["-c", f'exec "$0" -m nodecli "$@" > {out}',
                                     sys.executable, *args],
                         env=env, cwd=str(REPO_ROOT), encoding="utf-8",
                         **{"timeout": 30, **spawn})


def enter_password_twice(child, user: str, password: str) -> int | None:
    """Answer a pty child's password question for ``user`` and its confirmation, then
    wait for its end: its exit status (the child is closed in any case)."""
    import pexpect

    try:
        child.expect(f"Password for {user}: ")
        child.sendline(password)
        child.expect("Repeat for confirmation: ")
        child.sendline(password)
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return child.exitstatus


def _show_stacks(child) -> None:
    """A pty child still running when its test ends (hung, or the test failed first):
    SIGABRT makes it print every thread's stack (PYTHONFAULTHANDLER, set by
    subprocess_env), shown in the test's report, so a rare hang says where it was."""
    import pexpect

    with contextlib.suppress(OSError):
        os.kill(child.pid, signal.SIGABRT)
    with contextlib.suppress(pexpect.ExceptionPexpect):
        child.expect(pexpect.EOF, timeout=5)
    text = str(child.before)
    # a live status line redrawn for seconds pushes earlier lines out of the tail shown
    # below: name the ones that explain a lost Ctrl-C first
    said = [line.strip()[-300:] for line in text.replace("\r", "\n").split("\n")
            if "Exception ignored" in line or "KeyboardInterrupt" in line]
    print(f"--- the child {child.pid}: Ctrl-C echoed as ^C: {'^C' in text}; "
          f"{len(said)} line(s) of ignored exceptions ---")
    print("\n".join(said[:20]))
    print(f"--- what the child {child.pid} wrote last (SIGABRT: its threads' stacks) ---")
    print(text[-6000:])


def cli_context(cmd, name: str | None = None, parent=None):
    """A context for ``cmd`` made as a real run makes it (its class and its own
    settings, under its parent's). click caches each command's help option the first
    time it is asked for, with the names of the context asking: a bare
    ``click.Context(cmd)`` there would make every later use in the process (the
    generated man page among them) show ``--help`` without ``-h``."""
    return cmd.context_class(cmd, info_name=name, parent=parent, **cmd.context_settings)


def nodecli_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "nodecli", *args]


def subprocess_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)  # as a user runs it (a test may pass it in ``extra``)
    env["PYTHONFAULTHANDLER"] = "1"  # a hung child's stacks on SIGABRT (see reap)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


@pytest.fixture
def run_cli() -> Callable[..., Result]:
    """Run nodecli as a real subprocess (exit codes, signals, permissions, concurrency)."""

    def _run(*args: str, input: str | None = None, env: dict[str, str] | None = None,
             timeout: float = 60, cwd: str | None = None) -> Result:
        proc = subprocess.run(nodecli_cmd(*args), input=input, capture_output=True, text=True,
                              env=subprocess_env(env), timeout=timeout, cwd=cwd)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return _run




# -- stopping a child at a given point (the program's NODECLI_TEST_PAUSE hook) -------------


class PausePoint:
    """The test side of ``NODECLI_TEST_PAUSE=POINT@SOCKET`` (docs/development.md): a Unix
    socket the child connects to when it reaches POINT; it waits there until released.
    No sleeps: :meth:`wait` returns the moment the child is at the point."""

    def __init__(self, point: str) -> None:
        import socket
        import tempfile

        self.point = point
        self.detail = ""  # the words after POINT PID of the last arrival
        self._dir = tempfile.mkdtemp(prefix="nodecli-pause-")  # short: AF_UNIX paths
        self.path = os.path.join(self._dir, "s")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(8)
        self._sock.settimeout(0.2)

    def env(self) -> dict[str, str]:
        return {"NODECLI_TEST_PAUSE": f"{self.point}@{self.path}"}

    def wait(self, proc, timeout: float = 120.0):
        """The connection of ``proc`` (a Popen or a pexpect child) stopped at the point,
        or None when it ended first. ``timeout`` is a ceiling for a hung child, not a
        guess at how long it takes."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                if (proc.poll() is not None if hasattr(proc, "poll")
                        else not proc.isalive()):  # a pexpect child
                    return None
                continue
            conn.settimeout(timeout)
            line = b""
            while not line.endswith(b"\n"):
                chunk = conn.recv(64)
                if not chunk:
                    break
                line += chunk
            if line.split()[:2] == [self.point.encode(), str(proc.pid).encode()]:
                self.detail = b" ".join(line.split()[2:]).decode()  # what the point told
                return conn
            conn.close()  # another process (a child of an earlier cycle, say)
        raise AssertionError(f"the child never reached {self.point} in {timeout:.0f} s")

    @staticmethod
    def release(conn) -> None:
        with contextlib.suppress(OSError):
            conn.sendall(b"go\n")
        conn.close()

    def close(self) -> None:
        import shutil

        self._sock.close()
        shutil.rmtree(self._dir, ignore_errors=True)


@pytest.fixture
def pause_point() -> Iterator[Callable[[str], PausePoint]]:
    """``pause_point("checkpoint-save")``: a PausePoint, closed after the test."""
    made: list[PausePoint] = []

    def _make(point: str) -> PausePoint:
        made.append(PausePoint(point))
        return made[-1]

    yield _make
    for p in made:
        p.close()


# -- the node emulator over real sockets --------------------------------------------------


class EmulatorHandle:
    """A running emulator plus helpers to arrange its data directly."""

    def __init__(self, server, paths) -> None:
        self.server = server
        self.paths = paths

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def state(self):
        return self.server.state

    @property
    def faults(self):
        return self.server.faults

    @property
    def ca_file(self) -> str:
        from nodecli.emulator.app import ca_file

        return ca_file(self.paths)

    def endpoint(self, auth=None, **settings):
        """An http.Endpoint for this emulator that trusts its CA."""
        from nodecli.http.client import Auth, Endpoint

        return Endpoint(self.url, auth or Auth(), cacert=self.ca_file, **settings)

    def add_node_user(self, name: str, password: str, *, xuser: str = "xfer",
                      restrictions: tuple[str, ...] = ("file:////data/*",),
                      acls: tuple[str, ...] = ()) -> None:
        from nodecli.config.model import NodeUser, TransferUser
        from nodecli.config.store import ConfigStore
        from nodecli.users.passwords import hash_password

        with ConfigStore(self.paths).edit() as cfg:
            cfg.transfer_users.setdefault(xuser, TransferUser(xuser, list(restrictions)))
            cfg.users[name] = NodeUser(name, xuser, hash_password(password, log_n=4), list(acls))

    def add_access_key(self, ak_id: str, secret: str, *, owner: str = "admin") -> None:
        self.state.create_access_key(owner, {"id": ak_id, "secret": secret,
                                             "storage": {"type": "local", "path": "/"}})


def _start_emulator(tmp_path_factory: pytest.TempPathFactory, tls: bool):
    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.app import build_server

    paths = resolve_paths(tmp_path_factory.mktemp("emulator-home"))
    server = build_server(paths, tls=tls).start()
    return EmulatorHandle(server, paths)


def _session_emulator(tmp_path_factory: pytest.TempPathFactory, tls: bool):
    handle = _start_emulator(tmp_path_factory, tls=tls)
    handle.add_node_user("admin", "admin-pass", acls=("admin",))
    yield handle
    handle.server.stop()


def _fresh(handle: EmulatorHandle):
    """The session's emulator, reset before the test and its faults cleared after."""
    handle.state.reset()
    handle.faults.clear()
    yield handle
    handle.faults.clear()


@pytest.fixture(scope="session")
def _plain_emulator_session(tmp_path_factory: pytest.TempPathFactory):
    yield from _session_emulator(tmp_path_factory, tls=False)


@pytest.fixture(scope="session")
def _tls_emulator_session(tmp_path_factory: pytest.TempPathFactory):
    yield from _session_emulator(tmp_path_factory, tls=True)


@pytest.fixture
def emulator(_tls_emulator_session: EmulatorHandle,
             monkeypatch: pytest.MonkeyPatch) -> EmulatorHandle:
    """The emulator over HTTPS, as nodes serve, reset for this test. Node user admin /
    admin-pass. Its CA is trusted through NODECLI_CACERT and NODECLI_SERVICE_CACERT (set
    for this test, so in-process and child nodecli alike verify the certificate)."""
    monkeypatch.setenv("NODECLI_CACERT", _tls_emulator_session.ca_file)
    monkeypatch.setenv("NODECLI_SERVICE_CACERT", _tls_emulator_session.ca_file)
    yield from _fresh(_tls_emulator_session)


@pytest.fixture
def tls_emulator(emulator: EmulatorHandle,
                 monkeypatch: pytest.MonkeyPatch) -> EmulatorHandle:
    """The HTTPS emulator with its CA NOT trusted from the environment (tests of --cacert,
    --insecure and TLS failures give it themselves)."""
    monkeypatch.delenv("NODECLI_CACERT")
    monkeypatch.delenv("NODECLI_SERVICE_CACERT")
    return emulator


@pytest.fixture
def plain_emulator(_plain_emulator_session: EmulatorHandle) -> EmulatorHandle:
    """The emulator over plain HTTP, for the tests about http:// URLs."""
    yield from _fresh(_plain_emulator_session)


@pytest.fixture
def node_env(emulator: EmulatorHandle, home: Path) -> dict[str, str]:
    """Environment that points a nodecli subprocess at the emulator as admin."""
    return {"NODECLI_URL": emulator.url, "NODECLI_USER": "admin",
            "NODECLI_PASSWORD": "admin-pass", "NODECLI_HOME": str(home)}


@pytest.fixture
def log(emulator: EmulatorHandle):
    """The emulator's activity log (append, generate, canned replies)."""
    from nodecli.emulator.events import log_for

    return log_for(emulator.state)


@pytest.fixture
def served(emulator: EmulatorHandle) -> Iterator[list[str]]:
    """The request lines the emulator serves during the test, in its access-log format
    (``127.0.0.1 "GET /events?count=5 HTTP/1.1" 200 -``); clear it to count from a point."""
    lines: list[str] = []
    before = emulator.server.access_log
    emulator.server.access_log = lines.append
    yield lines
    emulator.server.access_log = before


@pytest.fixture
def node_version(emulator: EmulatorHandle):
    """Set the emulated node's version for one test (restored after it)."""
    before = emulator.state.version

    def _set(version: str) -> None:
        emulator.state.version = version

    yield _set
    emulator.state.version = before
