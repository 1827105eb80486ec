"""Shared fixtures: every test runs in an isolated home with a fixed terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    def __repr__(self) -> str:  # shown by pytest on failure
        return f"Result(exit_code={self.exit_code}, stdout={self.stdout!r}, stderr={self.stderr!r})"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private NODECLI_HOME per test, no colour, 80 columns, no leaked NODECLI_* vars."""
    for key in list(os.environ):
        if key.startswith("NODECLI_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    monkeypatch.setenv("NODECLI_HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    return home


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


def nodecli_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "nodecli", *args]


def subprocess_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
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


