"""The SIGKILL figures of `events ship` into JetStream and syslog: the end-to-end tests
of tests/test_ship_real.py with 10 kills per sink instead of the suite's 3 (each run of
`events ship -f` killed with SIGKILL once the sink holds a batch and before the
checkpoint moves, while the node logs and fails now and then), then a catch-up. The
tests assert the outcome (JetStream: every event once, in order; syslog: every event,
the only repeats the last batch of each killed run); this prints their figures.

    python bench/ship_kills.py            # 10 kills per sink
    python bench/ship_kills.py --kills 20
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=10)
    args = ap.parse_args()
    env = dict(os.environ, NODECLI_TEST_SHIP_KILLS=str(args.kills))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s",
         "tests/test_ship_real.py", "-k", "sigkills or killed_run"],
        cwd=ROOT, env=env, capture_output=True, text=True)
    figures = [line for line in proc.stdout.splitlines() if line.startswith("figures:")]
    for line in figures:
        print(line.removeprefix("figures: "))
    print(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr)
    if proc.returncode != 0:
        print(proc.stdout[-3000:])
        raise SystemExit(proc.returncode)


if __name__ == "__main__":
    main()
