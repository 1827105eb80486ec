"""--dry-run is one convention over the whole command tree (README, "Conventions"):
every command, run with ``--dry-run`` in a world where it would change something,
sends nothing to the node but the GET/HEAD reads it needs to plan (``api`` sends
nothing at all), writes nothing (the home byte for byte, no new file anywhere), exits 0,
and, when it would have changed something, says what on stdout ending with
``(--dry-run)``.

The commands come from the click tree (tests/command_world.py): a new command is
covered the day it is added.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.command_world import LEAVES, RUNS

NAMES = sorted(" ".join(p) for p, _ in LEAVES)


def _files(root: Path) -> dict[str, str]:
    """Every file under ``root`` and a digest of its bytes (folders too, by name)."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            found[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = "dir"
        for f in filenames:
            full = os.path.join(dirpath, f)
            with open(full, "rb") as fh:
                found[os.path.relpath(full, root)] = hashlib.sha256(fh.read()).hexdigest()
    return found


def _method(line: str) -> str:
    return line.split('"', 1)[1].split(" ", 1)[0] if '"' in line else "?"


@pytest.mark.parametrize("name", NAMES)
def test_dry_run_on_every_command_sends_and_writes_nothing(
        tree_world, served, tmp_path, name):
    world = tree_world
    run = RUNS[name]
    before = _files(tmp_path)  # the home, the keys, the export, the spec: all of it
    served.clear()
    r = world.run(name, before=("--dry-run",))
    assert r.exit_code == 0, r
    assert "Traceback" not in r.stderr
    methods = [_method(line) for line in served]
    if name == "api":
        assert methods == []  # the request is the command: never sent
    else:
        assert [m for m in methods if m not in ("GET", "HEAD")] == [], served
    assert _files(tmp_path) == before
    if run.changes != "nothing":
        assert r.stdout.rstrip().endswith("(--dry-run)"), r
    for secret in ("s3cret-value", "tok-secret-value", "admin-pass", "ak1-secret",
                   "new-pw"):
        assert secret not in r.stdout + r.stderr
    # and the option is taken after the command too
    served.clear()
    r = world.run(name, "--dry-run") if name != "help" else r
    assert r.exit_code == 0, r
    assert [m for m in (_method(line) for line in served) if m not in ("GET", "HEAD")] == []
    assert _files(tmp_path) == before
