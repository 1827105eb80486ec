"""What every benchmark shares: the child environment and timing one process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment for a nodecli child: its own home, no colour, and byte-code cached as
    after a pip install (the dev shell may set PYTHONDONTWRITEBYTECODE, which makes every
    start compile nodecli again)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(home.parent / "pycache")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["NODECLI_HOME"] = str(home)
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def time_process(cmd: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one run of ``cmd`` (which must succeed)."""
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start
