"""Startup and scaling benchmark for local commands (ratios against a same-run baseline).

    python bench/startup.py [--runs 15]

Measures, as real subprocesses, the median wall time of

* ``python -c "import click"`` (the baseline: the least a click CLI can cost),
* ``nodecli --help`` and ``nodecli user list`` (10 users), started the way the installed
  console script starts them, and also through ``python -m nodecli``,
* ``user list`` and ``user add`` on a 10,000-user config against a 10-user one,

and prints each as a ratio to its baseline (target: local commands within 1.5x of the
click import). It also reports which heavy modules a ``user list`` imports (none of
httpx2, cryptography, rich, filelock, platformdirs should be).

The configs are written directly as TOML with one precomputed password hash, not by
10,000 CLI calls. Bytecode caching is enabled for the child processes (as after a pip
install) and every command is run once before timing.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import child_env, write_users_config  # also puts the checkout on sys.path

# What the installed `nodecli` console script runs.
CONSOLE_SCRIPT = "import sys\nfrom nodecli.cli.main import main\nsys.exit(main())\n"
HEAVY = ("httpx2", "httpx", "httpcore", "cryptography", "rich", "filelock", "platformdirs",
         "tomli_w", "ssl")


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms of the child: user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}: {proc.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return elapsed, cpu


def interleaved(cases: dict[str, tuple[list[str], dict[str, str]]],
                runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall ms, CPU ms) per case. The cases take turns in every round, so a busy
    machine slows all of them alike and the ratios stay meaningful; CPU time is the
    steadier figure on a loaded machine. '{i}' in a command is replaced by the round
    number (distinct user names for adds)."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for i in range(runs + 1):  # round 0 warms up (bytecode, page cache) and is not counted
        for name, (cmd, env) in cases.items():
            measured = run_once([a.replace("{i}", str(i)) for a in cmd], env)
            if i:
                times[name].append(measured)
    return {name: (statistics.median(w for w, _ in values),
                   statistics.median(c for _, c in values))
            for name, values in times.items()}


def heavy_modules(env: dict[str, str], argv: list[str]) -> list[str]:
    code = (
        "import sys, io\n"
        f"sys.argv = {['nodecli', *argv]!r}\n"
        "from nodecli.cli.main import run\n"
        "out = io.StringIO(); real = sys.stdout; sys.stdout = out\n"
        "run(sys.argv[1:])\n"
        "sys.stdout = real\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout.strip().replace("'", '"'))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    from nodecli.users.passwords import hash_password

    password_hash = hash_password("bench-password")  # once, reused for every user
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="nodecli-bench-") as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        write_users_config(small, 10, password_hash)
        write_users_config(large, 10_000, password_hash)
        script = Path(tmp) / "nodecli"
        script.write_text(CONSOLE_SCRIPT)
        env_small, env_large = child_env(small, NODECLI_PASSWORD="bench-password"), \
            child_env(large, NODECLI_PASSWORD="bench-password")
        nodecli = [py, str(script)]

        print(f"python {sys.version.split()[0]}, median of {args.runs} interleaved runs (ms)\n")
        baseline = 'python -c "import click" (baseline)'
        startup = interleaved({
            baseline: ([py, "-c", "import click"], env_small),
            "nodecli --help": ([*nodecli, "--help"], env_small),
            "nodecli user list (10 users)": ([*nodecli, "user", "list"], env_small),
            "nodecli -l (10 users)": ([*nodecli, "-l"], env_small),
            "nodecli xuser list (10 users)": ([*nodecli, "xuser", "list"], env_small),
            "python -m nodecli --help": ([py, "-m", "nodecli", "--help"], env_small),
            "python -m nodecli user list": ([py, "-m", "nodecli", "user", "list"], env_small),
        }, args.runs)
        base_wall, base_cpu = startup[baseline]
        print(f"{'':44} {'wall':>8} {'ratio':>6}  {'cpu':>8} {'ratio':>6}")
        for label, (wall, cpu) in startup.items():
            flag = "" if min(wall / base_wall, cpu / base_cpu) <= 1.5 else "  above 1.5x"
            print(f"{label:44} {wall:8.1f} {wall / base_wall:5.2f}x  {cpu:8.1f} "
                  f"{cpu / base_cpu:5.2f}x{flag}")

        print("\nscaling: 10,000-user config against a 10-user one")
        lists = interleaved({
            "small": ([*nodecli, "user", "list", "-o", "json"], env_small),
            "large": ([*nodecli, "user", "list", "-o", "json"], env_large),
        }, args.runs)
        adds = interleaved({
            "small": ([*nodecli, "user", "add", "bench{i}", "--xuser", "aspera"], env_small),
            "large": ([*nodecli, "user", "add", "bench{i}", "--xuser", "aspera"], env_large),
        }, max(3, args.runs // 3))
        for label, m in (("user list -o json", lists), ("user add", adds)):
            (sw, sc), (lw, lc) = m["small"], m["large"]
            print(f"{label:18} wall 10: {sw:7.1f}  10,000: {lw:7.1f}  ratio {lw / sw:5.2f}x"
                  f"   cpu 10: {sc:7.1f}  10,000: {lc:7.1f}  ratio {lc / sc:5.2f}x")
        print("(user add includes one deliberately slow scrypt hash, ~0.1 s)")

        print("\nheavy modules imported:")
        for argv in (["user", "list"], ["-l"], ["--help"]):
            found = heavy_modules(env_small, argv)
            print(f"  nodecli {' '.join(argv):12} {', '.join(found) if found else 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
