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
