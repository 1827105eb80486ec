"""The performance table of issue 12: every hot path against its floor, in one run.

    python bench/table.py [--runs 15] [--tail-rounds 3] [--events 100000] [--million]

Each row runs nodecli and its floor (the least a Python process must do for the same
job: bench/floors/*.py, or ``python -c "import click"`` for a local command) as real
subprocesses, taking turns in every round, so a busy machine slows both alike; the
medians of wall and CPU time (user + system of the child) are compared. Rows:

=================================================  ==========================================
row                                                goal
=================================================  ==========================================
``user list`` (10 users) / ``import click``        <= 1.25x
``token create`` (4096-bit key, password checked)  <= 1.1x   floors/token_create.py
  / the floor
one events page (100 events, ``-o json``)          <= 2.0x   floors/events_page.py
  / the floor
``events tail`` 100k events to jsonl / the floor   <= 1.05x  floors/tail_jsonl.py;
                                                             peak RSS <= 32 MiB, flat to 1M
10,000 users / 10 users: ``user list``, ``-l``,    <= 1.3x each
``xuser list``, ``user add --password-stdin``
=================================================  ==========================================

For ``user add --password-stdin`` the scrypt hash (deliberately slow) costs the same at
10 and at 10,000 users; its cost h is measured in the same rounds as
``floors/scrypt_hash.py`` (exactly that hash, at nodecli's parameters) minus a bare
``python -c pass``, and the row is (add at 10,000 - h) / (add at 10 - h). ``--million``
grows the log to 1,000,000 events afterwards and tails all of it (peak RSS must stay
flat). The emulator runs as its own process (bench/events.py --serve). Ratios are only
meaningful within one run; quote medians of several runs on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import ROOT, child_env, write_users_config  # also puts the checkout on sys.path

BENCH = Path(__file__).resolve().parent
FLOORS = BENCH / "floors"
PASSWORD = "bench-password-1"
# What the installed `nodecli` console script runs.
CONSOLE_SCRIPT = "import sys\nfrom nodecli.cli.main import main\nsys.exit(main())\n"

Cmd = tuple[list[str], dict[str, str], bytes | None]
# Peak RSS is read through this small launcher: a child forked straight from this process
# (which has hashed passwords and generated keys) would report this process's memory.
RSS_LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"peak-rss-kib {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run(cmd: list[str], env: dict[str, str], stdin: bytes | None = None) -> dict[str, float]:
    """Wall ms and CPU ms of one child, which must succeed."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, env=env, stdout=devnull, stderr=subprocess.PIPE,
                                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        if stdin is not None:
            assert proc.stdin is not None
            proc.stdin.write(stdin)
            proc.stdin.close()
        assert proc.stderr is not None
        err = proc.stderr.read()
        _pid, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err.decode(errors='replace')}")
    return {"wall": wall, "cpu": (usage.ru_utime + usage.ru_stime) * 1000}


def peak_rss(cmd: list[str], env: dict[str, str]) -> float:
    """Peak RSS (MiB) of one run of ``cmd``, measured through :data:`RSS_LAUNCHER`."""
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.run([sys.executable, "-c", RSS_LAUNCHER, *cmd], env=env,
                              stdout=devnull, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, check=True)
    line = proc.stderr.decode().strip().splitlines()[-1]
    return int(line.split()[-1]) / 1024


def interleaved(cases: dict[str, Callable[[int], Cmd]], runs: int) -> dict[str, dict[str, float]]:
    """Median wall and CPU ms per case; round 0 warms up and is not counted."""
    got: dict[str, list[dict[str, float]]] = {name: [] for name in cases}
    for i in range(runs + 1):
        for name, make in cases.items():
            measured = run(*make(i))
            if i:
                got[name].append(measured)
    return {name: {"wall": statistics.median(m["wall"] for m in ms),
                   "cpu": statistics.median(m["cpu"] for m in ms)} for name, ms in got.items()}


def fixed(cmd: list[str], env: dict[str, str], stdin: bytes | None = None
          ) -> Callable[[int], Cmd]:
    return lambda _i: (cmd, env, stdin)


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, float, str]] = []

    def add(self, label: str, ours: dict[str, float], floor: dict[str, float], goal: float,
            note: str = "") -> None:
        wall = ours["wall"] / floor["wall"]
        cpu = ours["cpu"] / floor["cpu"]
        self.rows.append((label, wall, cpu, goal, note))
        print(f"  {label:46} {ours['wall']:8.1f} vs {floor['wall']:8.1f} ms  "
              f"wall {wall:5.2f}x  cpu {cpu:5.2f}x  goal <= {goal}x {note}", flush=True)

    def summary(self) -> None:
        print("\nsummary (ratio of medians; goal)")
        for label, wall, cpu, goal, note in self.rows:
            mark = "ok " if wall <= goal else "   "
            print(f"  {mark}{label:46} wall {wall:5.2f}x  cpu {cpu:5.2f}x  goal <= {goal}x "
                  f"{note}")


def start_emulator(tmp: Path) -> tuple[subprocess.Popen[str], str]:
    node = subprocess.Popen([sys.executable, str(BENCH / "events.py"), "--serve",
                             str(tmp / "node")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert node.stdout is not None
    return node, node.stdout.readline().strip()


def generate(node: subprocess.Popen[str], count: int) -> float:
    assert node.stdin is not None and node.stdout is not None
    node.stdin.write(f"{count}\n")
    node.stdin.flush()
    return float(node.stdout.readline())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--tail-rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--page-size", type=int, default=1000)
    ap.add_argument("--million", action="store_true")
    ap.add_argument("--only", default="", help="comma list of: list,token,page,tail,scale")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))

    def wanted(row: str) -> bool:
        return not only or row in only

    from nodecli.passwords import DEFAULT_LOG_N, DEFAULT_P, DEFAULT_R, hash_password

    py = sys.executable
    table = Table()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}; medians of {args.runs} interleaved rounds")
    with tempfile.TemporaryDirectory(prefix="nodecli-bench-") as tmp_name:
        tmp = Path(tmp_name)
        script = tmp / "nodecli"
        script.write_text(CONSOLE_SCRIPT)
        nodecli = [py, str(script)]
        phc = hash_password(PASSWORD)
        small, large = tmp / "small", tmp / "large"
        write_users_config(small, 10, phc)
        write_users_config(large, 10_000, phc)
        env_small = child_env(small, NODECLI_PASSWORD=PASSWORD)
        env_large = child_env(large, NODECLI_PASSWORD=PASSWORD)

        if wanted("list"):
            m = interleaved({"floor": fixed([py, "-c", "import click"], env_small),
                             "ours": fixed([*nodecli, "user", "list"], env_small)}, args.runs)
            table.add("user list (10 users) / import click", m["ours"], m["floor"], 1.25)

        if wanted("token"):
            from tokens import _setup  # bench/tokens.py: a user 'admin' and a 4096-bit key

            home = tmp / "token"
            key = _setup(home)
            env = child_env(home, NODECLI_PASSWORD=PASSWORD)
            ours = [*nodecli, "token", "create", "-u", "admin", "--access-key", "AKbench",
                    "--user-id", "alice", "--key-file-path", str(key)]
            floor = [py, str(FLOORS / "token_create.py"), str(home), "admin", str(key),
                     "AKbench", "alice"]
            run(ours, env)  # first use validates the key once; later uses are measured
            m = interleaved({"floor": fixed(floor, env), "ours": fixed(ours, env)}, args.runs)
            table.add("token create (4096-bit key) / floor", m["ours"], m["floor"], 1.1)

        node = None
        if wanted("page") or wanted("tail"):
            node, url = start_emulator(tmp)
            print(f"  (emulator {url}: {args.events} events in "
                  f"{generate(node, args.events):.1f} s)", flush=True)
            env = child_env(tmp / "client", NODECLI_URL=url, NODECLI_USER="bench",
                            NODECLI_PASSWORD="bench-pass")
        if node is not None and wanted("page"):
            ours = [*nodecli, "events", "list", "--iteration-token", "0", "--count", "100",
                    "-o", "json"]
            floor = [py, str(FLOORS / "events_page.py"), url, "bench", "100"]
            m = interleaved({"floor": fixed(floor, env), "ours": fixed(ours, env)}, args.runs)
            table.add("events page (100 events, -o json) / floor", m["ours"], m["floor"], 2.0)
        if node is not None and wanted("tail"):
            ours = [*nodecli, "events", "tail", "--iteration-token", "0", "--page-size",
                    str(args.page_size), "-o", "jsonl"]
            floor = [py, str(FLOORS / "tail_jsonl.py"), url, "bench", str(args.page_size)]
            m = interleaved({"floor": fixed(floor, env), "ours": fixed(ours, env)},
                            args.tail_rounds)
            rss, rss_floor = peak_rss(ours, env), peak_rss(floor, env)
            table.add(f"events tail {args.events} to jsonl / floor", m["ours"], m["floor"],
                      1.05, f"(peak RSS {rss:.1f} MiB, floor {rss_floor:.1f}; goal <= 32)")
            if args.million:
                more = 1_000_000 - args.events
                print(f"  (log grown to 1,000,000 events in {generate(node, more):.1f} s)")
                start = time.perf_counter()
                big = peak_rss(ours, env)
                print(f"  events tail 1,000,000: {time.perf_counter() - start:.1f} s, peak RSS "
                      f"{big:.1f} MiB ({args.events}: {rss:.1f} MiB; flat, <= 32)")
        if node is not None:
            assert node.stdin is not None
            node.stdin.close()
            node.wait()

        if wanted("scale"):
            for label, argv in (("user list", ["user", "list"]), ("-l", ["-l"]),
                                ("xuser list", ["xuser", "list"])):
                m = interleaved({"small": fixed([*nodecli, *argv], env_small),
                                 "large": fixed([*nodecli, *argv], env_large)}, args.runs)
                table.add(f"{label}: 10,000 users / 10", m["large"], m["small"], 1.3)
            def add(env: dict[str, str]) -> Callable[[int], Cmd]:
                return lambda i: ([*nodecli, "user", "add", f"pw{i}", "--xuser", "aspera",
                                   "--password-stdin"], env, PASSWORD.encode() + b"\n")

            # Every add hashes its password (scrypt, deliberately slow, the same at 10 and
            # at 10,000 users). Its cost h is measured in the same rounds: the floor script
            # doing exactly that hash, minus a bare interpreter start.
            hash_floor = [py, str(FLOORS / "scrypt_hash.py"), str(DEFAULT_LOG_N),
                          str(DEFAULT_R), str(DEFAULT_P)]
            m = interleaved({"small": add(env_small), "large": add(env_large),
                             "hash": fixed(hash_floor, env_small, PASSWORD.encode() + b"\n"),
                             "bare": fixed([py, "-c", "pass"], env_small)},
                            max(5, args.runs // 2))
            h = {k: m["hash"][k] - m["bare"][k] for k in ("wall", "cpu")}
            table.add("user add --password-stdin: 10,000 users / 10",
                      {k: m["large"][k] - h[k] for k in h},
                      {k: m["small"][k] - h[k] for k in h}, 1.3,
                      f"(hash excluded from both: h = {h['wall']:.0f} ms = floors/scrypt_hash.py "
                      f"{m['hash']['wall']:.0f} - python -c pass {m['bare']['wall']:.0f}; "
                      f"with it {m['large']['wall']:.0f} vs {m['small']['wall']:.0f} ms)")
    table.summary()
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(main())
