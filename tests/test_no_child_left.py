"""The suite's own rule: a test reaps every child it starts, also when it fails. The
autouse fixture ``no_child_left_behind`` (tests/conftest.py) finds a child still running
after a test through /proc, kills it and fails the test; these tests prove it sees what
it must (children of any thread) and nothing it must not (a reaped or an ended child)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from tests.conftest import REPO_ROOT, children_left, live_children, reap, subprocess_env

WAITS = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # runs until stdin closes
PAUSES = [sys.executable, "-c", "import signal; signal.pause()"]  # runs until killed


def test_a_child_left_running_is_named_and_killed():
    before = set(live_children())
    # (it says when it runs: Popen returns once exec closed the descriptors it was
    # told to, a moment before the kernel gives the new program its command line)
    proc = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); "
                             "sys.stdin.read()"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        left = children_left(before)
        assert list(left) == [proc.pid]
        assert "sys.stdin.read()" in left[proc.pid]
        assert proc.wait(timeout=60) == -signal.SIGKILL
        assert children_left(before) == {}
    finally:
        reap(proc)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_child_started_by_another_thread_is_seen():
    """/proc lists a child under the thread that started it, while that thread lives."""
    before = set(live_children())
    started: list[subprocess.Popen] = []
    ready, done = threading.Event(), threading.Event()

    def start() -> None:
        started.append(subprocess.Popen(WAITS, stdin=subprocess.PIPE))
        ready.set()
        done.wait(60)

    thread = threading.Thread(target=start)
    thread.start()
    try:
        assert ready.wait(60)
        assert list(children_left(before)) == [started[0].pid]
    finally:
        done.set()
        thread.join()
        for proc in started:
            reap(proc)


def test_reaped_and_ended_children_are_not_left():
    before = set(live_children())
    reaped = subprocess.Popen([sys.executable, "-c", "pass"])
    reaped.wait(timeout=60)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        # ended, not yet collected (a zombie): its Popen collects it whenever it is asked
        os.waitid(os.P_PID, ended.pid, os.WEXITED | os.WNOWAIT)
        assert children_left(before) == {}
    finally:
        reap(ended)
    assert ended.returncode == 0


def test_a_test_that_leaves_a_child_fails_and_the_child_is_gone(tmp_path: Path):
    """A real pytest run of a test that starts a child and forgets it: that test errors,
    naming the child, and the child no longer runs."""
    pidfile = tmp_path / "pid"
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent(f"""
        import subprocess
        def test_forgets_its_child():
            proc = subprocess.Popen({PAUSES!r})
            open({str(pidfile)!r}, "w").write(str(proc.pid))
        """))
    try:
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "-p", "tests.conftest", "--rootdir", str(tmp_path),
                              str(tmp_path / "test_leaky.py")],
                             cwd=REPO_ROOT, env=subprocess_env(), capture_output=True,
                             text=True, timeout=120)
        pid = int(pidfile.read_text())
        assert run.returncode == 1, run.stdout + run.stderr
        assert "1 passed, 1 error" in run.stdout, run.stdout
        assert (f"test_leaky.py::test_forgets_its_child left 1 child process(es) running "
                f"(reap each in a finally): {pid}: {sys.executable} -c import signal; "
                "signal.pause()") in run.stdout, run.stdout
        # the inner pytest ended, and its child (now init's) with it: killed, collected
        assert _running(pid) is False
    finally:
        if pidfile.exists() and _running(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
