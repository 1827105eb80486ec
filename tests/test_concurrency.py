"""Real processes: concurrent writers never lose an update; SIGKILL never damages the file."""

from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import time

import pytest

from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from tests.conftest import nodecli_cmd, reap, subprocess_env

pytestmark = pytest.mark.slow


def _spawn(name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        nodecli_cmd("user", "add", name, "--xuser", "aspera"),
        env=subprocess_env({"NODECLI_PASSWORD": "pw-" + name}),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def test_fifty_processes_adding_distinct_users_leave_fifty(home):
    procs = {f"user{i:02d}": _spawn(f"user{i:02d}") for i in range(50)}
    failures = {}
    try:
        for name, proc in procs.items():
            _, err = proc.communicate(timeout=240)
            if proc.returncode != 0:
                failures[name] = (proc.returncode, err.decode())
    finally:
        for proc in procs.values():
            reap(proc)
    assert failures == {}
    cfg = ConfigStore(resolve_paths(home)).load()
    assert sorted(cfg.users) == sorted(procs)
    assert set(cfg.transfer_users) == {"aspera"}


def test_sigkill_at_random_moments_never_damages_or_loses_acknowledged_adds(home):
    store = ConfigStore(resolve_paths(home))
    rng = random.Random(int(os.environ.get("NODECLI_TEST_SEED", "20261122")))
    acknowledged: set[str] = set()
    serial = 0
    for _round in range(12):
        batch = {}
        for _ in range(6):
            serial += 1
            name = f"u{serial:03d}"
            batch[name] = _spawn(name)
        deadline = time.monotonic() + rng.uniform(0.05, 0.9)
        victims = [n for n in batch if rng.random() < 0.6]
        while time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            for name in victims:
                if batch[name].poll() is None:
                    batch[name].send_signal(signal.SIGKILL)
            for name, proc in batch.items():
                proc.communicate(timeout=240)
                if proc.returncode == 0:
                    acknowledged.add(name)
        finally:
            for proc in batch.values():
                reap(proc)
        # After every round: the file parses and every acknowledged add is there.
        cfg = store.load()
        missing = acknowledged - set(cfg.users)
        assert not missing, f"acknowledged adds lost: {sorted(missing)}"
    assert acknowledged, "no writer ever finished: the test proved nothing"
    assert len(acknowledged) < serial, "no writer was ever killed: the test proved nothing"
    # and a normal write still works afterwards (no stale lock left behind)
    proc = _spawn("after")
    try:
        proc.communicate(timeout=120)
    finally:
        reap(proc)
    assert proc.returncode == 0
    assert "after" in store.load().users


WRITER = """
import sys
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from nodecli.users.manage import apply_add_user

store = ConfigStore(resolve_paths())
prefix = sys.argv[1]
for i in range(100000):
    name = f"{prefix}{i:05d}"
    with store.edit() as cfg:
        apply_add_user(cfg, name, transfer_user="aspera", password_hash=None)
    print(name, flush=True)  # acknowledged only once the locked write returned
"""


def test_sigkill_during_back_to_back_writes(home):
    """Writers that do nothing but write, killed at random: kills land inside the write
    (each round stores one to three writes that were done but not yet acknowledged)."""
    store = ConfigStore(resolve_paths(home))
    rng = random.Random(int(os.environ.get("NODECLI_TEST_SEED", "7")))
    acknowledged: set[str] = set()
    expected_min = 0
    for round_no in range(6):
        procs = [subprocess.Popen([nodecli_cmd()[0], "-c", WRITER, f"r{round_no}w{w}x"],
                                  env=subprocess_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for w in range(3)]
        try:
            # Event-driven, not timed: each writer is killed right after its k-th
            # acknowledgement while the others keep writing, whatever the machine's speed.
            # The three are read together: the lock is not fair, so a writer may wait
            # while the others write, and it is its turn once they are killed (reading
            # one writer at a time, a loaded machine starved it past the lock's 30 s).
            wants = {proc: rng.randint(2, 6) for proc in procs}
            seen = {proc: 0 for proc in procs}
            pending = {proc: b"" for proc in procs}

            with selectors.DefaultSelector() as sel:
                for proc in procs:
                    assert proc.stdout is not None
                    sel.register(proc.stdout.fileno(), selectors.EVENT_READ, proc)
                while sel.get_map():
                    ready = sel.select(timeout=120)
                    assert ready, "no writer acknowledged a write in 120 s"
                    for key, _ in ready:
                        proc = key.data
                        data = os.read(key.fd, 65536)
                        assert data or seen[proc] >= wants[proc], proc.stderr.read() \
                            if proc.stderr else "writer died"
                        *lines, pending[proc] = (pending[proc] + data).split(b"\n")
                        for line in lines:  # whole lines: a name is acknowledged with \n
                            acknowledged.add(line.decode())
                            if seen[proc] < wants[proc]:
                                seen[proc] += 1
                                expected_min += 1
                        if seen[proc] >= wants[proc] and proc.returncode is None:
                            proc.send_signal(signal.SIGKILL)
                            proc.wait(timeout=120)
                        if not data:  # killed, and everything it wrote is read
                            sel.unregister(key.fd)
            for proc in procs:
                assert proc.stderr is not None
                assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
        finally:
            for proc in procs:
                reap(proc)
        cfg = store.load()  # parses: never half-written
        missing = acknowledged - set(cfg.users)
        assert not missing, f"acknowledged writes lost: {sorted(missing)[:5]}"
    assert len(acknowledged) >= expected_min >= 36
