"""The performance table: every path users run against its floor, in one run.

    python bench/table.py [--runs 15] [--tail-rounds 3] [--events 100000] [--million]
                          [--only page,request,tail,keyring,top,list,token,scale]
                          [--checkout DIR]

Each row runs nodecli and its floor (the least a Python process must do for the same
job: bench/floors/*.py, or ``python -c "import click"`` for a local command) as real
subprocesses, taking turns in every round, so a busy machine slows both alike; the
medians of wall and CPU time (user + system of the child) are compared. Every network
row talks HTTPS to the emulator (its own process, TLS with its own CA, as nodes serve),
and the floors use ``http.client`` + ``ssl`` with the same CA. Rows and goals:

==================================================  ======================================
row                                                 goal
==================================================  ======================================
one events page (100 events, ``-o json``),          <= 2.0x / <= 2.5x
  /info cached / cold, vs floors/events_page.py
an extra request of a keep-alive tail, client CPU   <= 2.0x   (CPU per request: a tail in
  vs floors/tail_jsonl.py                                     pages of 10 minus one in
                                                              pages of 1000, per request)
tail 100,000 events to --to FILE with checkpoint    <= 1.05x; peak RSS <= 32 MiB, flat
  vs floors/tail_jsonl.py (file, fsync, checkpoint)           to 1,000,000 (--million)
  the same / floors/events_page_httpx2.py (the same   <= 1.10x
  request with httpx2 alone: the library's share)
``node info``, keyring installed, secret in the      <= 1.05x
  file / the same without the keyring
``transfer top``: a refresh at 10,000 transfers     <= 1.0x of 300 ms
  (200 running), once the first listed them all
``user list`` (10 users) vs ``import click``        <= 1.35x
``token create`` (4096-bit key, password checked)   <= 1.15x CPU
  vs floors/token_create.py
10,000 users vs 10: ``user list``, ``-l``,          <= 2.0x each
  ``user add --password-stdin`` (hash included)
==================================================  ======================================

``--checkout DIR`` runs the nodecli of another checkout (an older commit, say) against
the same emulator and floors, for before/after figures. Ratios are only meaningful within
one run; quote medians of several runs on a shared machine.
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

# _common also puts this checkout on sys.path (for the emulator and the hashing below)
from _common import ROOT, child_env, use_checkout, write_users_config

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
        self.rows: list[tuple[str, float, float, float, str, str]] = []

    def add(self, label: str, ours: dict[str, float], floor: dict[str, float], goal: float,
            note: str = "", basis: str = "wall") -> None:
        """One row; ``basis`` (wall or cpu) is the ratio the goal applies to."""
        wall = ours["wall"] / floor["wall"]
        cpu = ours["cpu"] / floor["cpu"]
        self.rows.append((label, wall, cpu, goal, note, basis))
        print(f"  {label:48} {ours['wall']:8.1f} vs {floor['wall']:8.1f} ms  "
              f"wall {wall:5.2f}x  cpu {cpu:5.2f}x  goal {basis} <= {goal}x {note}",
              flush=True)

    def summary(self) -> None:
        print("\nsummary (ratio of medians; goal)")
        for label, wall, cpu, goal, note, basis in self.rows:
            mark = "ok " if (wall if basis == "wall" else cpu) <= goal else "-- "
            print(f"  {mark}{label:48} wall {wall:5.2f}x  cpu {cpu:5.2f}x  "
                  f"goal {basis} <= {goal}x {note}")


class Emulator:
    """The bench emulator (bench/events.py --serve) in its own process, over HTTPS."""

    def __init__(self, home: Path, *, keep_alive: bool = False) -> None:
        argv = [sys.executable, str(BENCH / "events.py"), "--serve", str(home)]
        self.proc = subprocess.Popen(argv + (["--keep-alive"] if keep_alive else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url, self.ca = self.proc.stdout.readline().split()

    def generate(self, count: int) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{count}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def env(self, home: Path) -> dict[str, str]:
        return child_env(home, NODECLI_URL=self.url, NODECLI_USER="bench",
                         NODECLI_PASSWORD="bench-pass", NODECLI_CACERT=self.ca)

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def table_top(table: Table, node: Emulator, runs: int) -> None:
    """``transfer top``'s refresh at 10,000 transfers, 200 of them running (the others a
    node's history): the first refresh lists them all, the others ask for what changed.
    In this process, over HTTPS; the ratio is to the goal's budget of 300 ms."""
    from nodecli.http.client import Auth, Endpoint, open_client
    from nodecli.node.transfers import LiveTransfers

    assert node.proc.stdin is not None and node.proc.stdout is not None
    node.proc.stdin.write("transfers 10000 600 200\n")
    node.proc.stdin.flush()
    node.proc.stdout.readline()
    endpoint = Endpoint(node.url, Auth("basic", "bench", "bench-pass"), cacert=node.ca)
    with open_client(endpoint) as client:
        live = LiveTransfers(client)
        start = time.perf_counter()
        count = len(live.refresh())
        first = (time.perf_counter() - start) * 1000
        later = []
        for _ in range(runs):
            start = time.perf_counter()
            live.refresh()
            later.append((time.perf_counter() - start) * 1000)
    median = statistics.median(later)
    budget = {"wall": 300.0, "cpu": 300.0}
    table.add(f"transfer top refresh, {count} / 300 ms", {"wall": median, "cpu": median},
              budget, 1.0, f"(first refresh, a full list: {first:.0f} ms)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--tail-rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--page-size", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=1000,
                    help="extra requests in the keep-alive row (pages of 10 vs 1000)")
    ap.add_argument("--million", action="store_true")
    ap.add_argument("--only", default="",
                    help="comma list of: page,request,tail,keyring,top,list,token,scale")
    ap.add_argument("--checkout", help="run the nodecli of this checkout instead")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    use_checkout(args.checkout)

    def wanted(row: str) -> bool:
        return not only or row in only

    from nodecli.users.passwords import hash_password

    py = sys.executable
    table = Table()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}; medians of {args.runs} interleaved rounds; "
          f"nodecli of {args.checkout or ROOT}")
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

        if wanted("page") or wanted("tail"):
            node = Emulator(tmp / "node")
            print(f"  (emulator {node.url}: {args.events} events in "
                  f"{node.generate(args.events):.1f} s)", flush=True)
            env = node.env(tmp / "client")
            floor_page = [py, str(FLOORS / "events_page.py"), node.url, "bench", "100"]
            page = [*nodecli, "events", "list", "--iteration-token", "0", "--count", "100",
                    "-o", "json"]
            if wanted("page"):
                run(page, env)  # fills the /info cache of the "cached" home
                httpx2_page = [py, str(FLOORS / "events_page_httpx2.py"), node.url, "bench",
                               "100"]
                m = interleaved({"floor": fixed(floor_page, env), "ours": fixed(page, env),
                                 "cold": lambda i: (page, node.env(tmp / f"cold{i}"), None),
                                 "httpx2": fixed(httpx2_page, env)},
                                args.runs)
                table.add("events page (100, -o json), /info cached", m["ours"], m["floor"],
                          2.0)
                table.add("events page (100, -o json), /info cold", m["cold"], m["floor"],
                          2.5)
                table.add("events page, cached / httpx2 alone", m["ours"], m["httpx2"], 1.10)
            if wanted("tail"):
                def tail(i: int) -> Cmd:
                    out = tmp / f"tail{i}.jsonl"
                    return ([*nodecli, "events", "tail", "--iteration-token", "0",
                             "--page-size", str(args.page_size), "--to", str(out),
                             "--checkpoint", f"{out}.checkpoint"], env, None)

                def tail_floor(i: int) -> Cmd:
                    out = tmp / f"floor{i}.jsonl"
                    return ([py, str(FLOORS / "tail_jsonl.py"), node.url, "bench",
                             str(args.page_size), str(out), f"{out}.checkpoint"], env, None)

                m = interleaved({"floor": tail_floor, "ours": tail}, args.tail_rounds)
                rss, rss_floor = peak_rss(tail(1000)[0], env), peak_rss(tail_floor(1000)[0], env)
                table.add(f"tail {args.events} --to FILE --checkpoint", m["ours"], m["floor"],
                          1.05, f"(peak RSS {rss:.1f} MiB, floor {rss_floor:.1f}; goal <= 32)")
                if args.million:
                    more = 1_000_000 - args.events
                    print(f"  (log grown to 1,000,000 events in {node.generate(more):.1f} s)")
                    start = time.perf_counter()
                    big = peak_rss(tail(1001)[0], env)
                    print(f"  tail 1,000,000 --to FILE: {time.perf_counter() - start:.1f} s, "
                          f"peak RSS {big:.1f} MiB ({args.events}: {rss:.1f} MiB; goal flat, "
                          "<= 32)", flush=True)
            node.stop()

        if wanted("request"):
            # CPU of one more request on a kept-alive HTTPS connection: the same events
            # fetched in pages of 10 and of 1000; the difference over the extra requests.
            node = Emulator(tmp / "keepalive", keep_alive=True)
            events = args.requests * 10 * 100 // 99
            node.generate(events)
            env = node.env(tmp / "client")
            cases: dict[str, Callable[[int], Cmd]] = {}
            for size in (10, 1000):
                cases[f"floor{size}"] = fixed([py, str(FLOORS / "tail_jsonl.py"), node.url,
                                               "bench", str(size)], env)
                cases[f"ours{size}"] = fixed([*nodecli, "events", "tail", "--iteration-token",
                                              "0", "--page-size", str(size), "-o", "jsonl"],
                                             env)
                # yardstick: the same loop with httpx2 itself, to tell its cost from ours
                cases[f"httpx2{size}"] = fixed([py, str(FLOORS / "tail_httpx2.py"), node.url,
                                                "bench", str(size)], env)
            m = interleaved(cases, max(3, args.runs // 3))
            extra = events // 10 - events // 1000
            per = {who: {k: (m[f"{who}10"][k] - m[f"{who}1000"][k]) / extra
                         for k in ("wall", "cpu")} for who in ("ours", "floor", "httpx2")}
            table.add("extra keep-alive request, per request", per["ours"], per["floor"], 2.0,
                      f"(cpu {per['ours']['cpu']:.3f} vs {per['floor']['cpu']:.3f} ms, "
                      f"{extra} extra requests)", basis="cpu")
            table.add("  yardstick: httpx2 alone, per request", per["httpx2"], per["floor"],
                      2.0, f"(cpu {per['httpx2']['cpu']:.3f} ms; not a goal: the library's "
                      "own share)", basis="cpu")
            node.stop()

        if wanted("keyring") or wanted("top"):
            node = Emulator(tmp / "node2")
            if wanted("keyring"):
                # the secret in the 0600 file of a profile; with the keyring package
                # installed (as the test extra has it) / the same run with the file forced
                kr_home = tmp / "keyring"
                kr_env = child_env(kr_home, NODECLI_SECRETS_BACKEND="file")
                subprocess.run([*nodecli, "node", "add", "n", "--url", node.url, "--user",
                                "bench", "--cacert", node.ca, "--password-stdin"],
                               input=b"bench-pass\n", env=kr_env, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                # the profile's record says "file": no NODECLI_SECRETS_BACKEND needed
                plain = child_env(kr_home)
                info = [*nodecli, "node", "info", "-o", "json"]
                m = interleaved({"file": fixed(info, kr_env), "ours": fixed(info, plain)},
                                args.runs)
                table.add("node info, keyring installed / not loaded", m["ours"], m["file"],
                          1.05)
            if wanted("top"):
                table_top(table, node, args.runs)
            node.stop()

        if wanted("list"):
            m = interleaved({"floor": fixed([py, "-c", "import click"], env_small),
                             "ours": fixed([*nodecli, "user", "list"], env_small)}, args.runs)
            table.add("user list (10 users) / import click", m["ours"], m["floor"], 1.35)

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
            table.add("token create (4096-bit key) / floor", m["ours"], m["floor"], 1.15,
                      basis="cpu")

        if wanted("scale"):
            for label, argv in (("user list", ["user", "list"]), ("-l", ["-l"])):
                m = interleaved({"small": fixed([*nodecli, *argv], env_small),
                                 "large": fixed([*nodecli, *argv], env_large)}, args.runs)
                table.add(f"{label}: 10,000 users / 10", m["large"], m["small"], 2.0)

            def add(env: dict[str, str]) -> Callable[[int], Cmd]:
                return lambda i: ([*nodecli, "user", "add", f"pw{i}", "--xuser", "aspera",
                                   "--password-stdin"], env, PASSWORD.encode() + b"\n")

            # The password hash (scrypt, the same at 10 and 10,000 users) is included.
            m = interleaved({"small": add(env_small), "large": add(env_large)},
                            max(5, args.runs // 2))
            table.add("user add --password-stdin: 10,000 / 10", m["large"], m["small"], 2.0,
                      "(hash included)")
    table.summary()
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(main())
