"""The built wheel carries what an installed nodecli needs besides its code."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_wheel_installs_the_man_page_into_share_man_man1(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
         str(REPO_ROOT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    wheels = list(tmp_path.glob("nodecli-*.whl"))
    assert len(wheels) == 1
    with zipfile.ZipFile(wheels[0]) as whl:
        names = [n for n in whl.namelist() if n.endswith("share/man/man1/nodecli.1")]
        assert len(names) == 1 and ".data/data/" in names[0]
        page = whl.read(names[0])
    assert page == (REPO_ROOT / "man" / "nodecli.1").read_bytes()
    assert page.startswith(b".TH") or b"\n.TH " in page


def test_ci_runs_the_readmes_set_up_and_test_command():
    """CI installs what the README's second set-up command installs and runs its test
    command (`-n 4` and all); it may add options of its own (no cache folder)."""
    import re
    import shlex

    readme = (REPO_ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines()
                   if "pip install" in line and "[test]" in line and "pytest" in line)
    install, test = (shlex.split(part) for part in command.split(" && ")[1:3])
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert re.search(r"^python -m pip install --quiet -e '\.\[test\]'$", ci, re.M)
    assert install[-1] == ".[test]"
    runs = [shlex.split(line) for line in ci.splitlines() if line.startswith("python -m pytest")]
    assert runs, "no pytest line in .ci/run"
    wanted = test[test.index("pytest") + 1:]
    got = runs[0][runs[0].index("pytest") + 1:]
    assert all(arg in got for arg in wanted) and got.count("-n") == wanted.count("-n")
    assert got[got.index("-n") + 1] == wanted[wanted.index("-n") + 1]
