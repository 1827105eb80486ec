"""SIGTERM and SIGINT end a long-running command whichever of its threads the kernel
hands the signal to. A signal sent to the process may be delivered to any thread not
blocking it; Python runs its handler in the main thread only, when that thread next
runs bytecode, so a main thread asleep in C (time.sleep) is not woken by a signal that
lands in another thread. The tests send the signal to one thread other than the main
one (tgkill), which is what the kernel did now and then on its own."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import nodecli_cmd, reap, subprocess_env
from tests.test_exporter_snapshot import Exporter, _add

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="tgkill and /proc/PID/task are Linux's")

#: the tgkill system call's number (there is no os.tgkill)
SYS_TGKILL = {"x86_64": 234, "aarch64": 131}.get(platform.machine())
#: a ceiling for a hung child only: the command ends as soon as the signal is seen
EXIT_WITHIN = 20


def signal_another_thread(pid: int, sig: int) -> int:
    """Send ``sig`` to one thread of ``pid`` that is not its main thread; its id."""
    if SYS_TGKILL is None:
        pytest.skip(f"no tgkill number for {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    for tid in sorted(int(t) for t in os.listdir(f"/proc/{pid}/task")):
        if tid == pid:
            continue
        if libc.syscall(SYS_TGKILL, pid, tid, sig) == 0:
            return tid
        if ctypes.get_errno() != errno.ESRCH:  # (a thread that ended meanwhile: the next)
            raise OSError(ctypes.get_errno(), "tgkill")
    raise AssertionError("the command has no thread but its main one")


def ended(proc: subprocess.Popen) -> int | None:
    try:
        return proc.wait(timeout=EXIT_WITHIN)
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_the_exporter_ends_on_a_signal_another_thread_takes(invoke, emulator, home, sig):
    _add(invoke, "emu", emulator.url)
    exporter = Exporter(home, "--all-nodes")
    try:
        exporter.scrape()  # the loop, a refresh and its probes have all run
        signal_another_thread(exporter.proc.pid, sig)
        assert ended(exporter.proc) == 130
    finally:
        reap(exporter.proc)
    assert exporter.proc.stderr is not None
    rest = exporter.proc.stderr.read().decode()
    exporter.proc.stderr.close()
    assert "interrupted" in rest and "Traceback" not in rest, rest


def test_the_emulator_with_outages_ends_on_a_signal_another_thread_takes(tmp_path: Path):
    """Between outages it waits --outage-every seconds (an hour here) on the main thread;
    its servers' threads are there to take the signal."""
    ports = tmp_path / "ports"
    proc = subprocess.Popen(nodecli_cmd("emulator", "serve", "--port", "0", "--no-tls",
                                        "--port-file", str(ports), "--outage-every", "3600",
                                        "--outage-length", "1"),
                            env=subprocess_env({"NODECLI_HOME": str(tmp_path / "home")}),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # "stop with Ctrl-C": it is in its wait
            if b"stop with Ctrl-C" in line:
                break
        else:
            raise AssertionError("the emulator ended before serving")
        signal_another_thread(proc.pid, signal.SIGTERM)
        assert ended(proc) is not None, "still running after SIGTERM"
    finally:
        reap(proc)
        if proc.stderr is not None:
            proc.stderr.close()
