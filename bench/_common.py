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
#: The checkout whose nodecli the children run (``--checkout``: another one, e.g. an older
#: commit, measured against the same emulator and floors).
CLIENT_ROOT = ROOT


def use_checkout(path: str | None) -> None:
    global CLIENT_ROOT
    if path:
        CLIENT_ROOT = Path(path).resolve()


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment for a nodecli child: its own home, no colour, and byte-code cached as
    after a pip install (the dev shell may set PYTHONDONTWRITEBYTECODE, which makes every
    start compile nodecli again)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(home.parent / "pycache")
    env["PYTHONPATH"] = str(CLIENT_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
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


def write_users_config(home: Path, n_users: int, password_hash: str) -> None:
    """A config.toml with ``n_users`` node users sharing one hash, written directly (not
    by thousands of CLI calls)."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = ["version = 1", "", "[transfer_users.aspera]", 'restrictions = ["file:////data/*"]',
             ""]
    for i in range(n_users):
        lines += [f"[users.user{i:05d}]", 'transfer_user = "aspera"',
                  f'password = "{password_hash}"', 'acls = ["admin"]', ""]
    path = home / "config.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    path.chmod(0o600)
