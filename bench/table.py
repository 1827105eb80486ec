"""The performance table: every path users run against its floor, in one run.

    python bench/table.py [--runs 15] [--tail-rounds 3] [--events 100000] [--million]
                          [--only page,request,tail,keyring,top,fleet,exporter,list,
                                  token,scale]
                          [--checkout DIR] [--before DIR]

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
an extra request of a keep-alive tail, client CPU   <= 2.5x   (CPU per request: a tail in
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
``node health -o prometheus`` over 50 / 200 nodes   <= 3.0x / <= 6.0x (client CPU per
  vs the same over 1 node                                     node printed)
a scrape of ``exporter`` over 50 nodes answered    <= 1.0x of 50 ms (its CPU per
  from its snapshot (``--max-age``), no refresh               scrape and node printed; a
  running beside it (``--only exporter``)                     scrape during a refresh)
``user list`` (10 users) vs ``import click``        <= 1.35x
``token create`` (4096-bit key, password checked)   <= 1.15x CPU
  vs floors/token_create.py
10,000 users vs 10: ``user list``, ``-l``,          <= 2.0x each
  ``user add --password-stdin`` (hash included)
==================================================  ======================================

``--checkout DIR`` runs the nodecli of another checkout (an older commit, say) against
the same emulator and floors. ``--before DIR`` runs both: every nodecli child has a twin
running the nodecli of DIR in the same round (in a copy of its home: the two versions
do not share caches), so each row shows before and after from one run. Ratios are only
meaningful within one run; quote medians of several runs on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# _common also puts this checkout on sys.path (for the emulator and the hashing below)
import _common
from _common import (
    ROOT,
    Emulator,
    child_env,
    fleet_home,
    serve_nodes,
    use_checkout,
    write_profiles,
    write_users_config,
)

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


#: the console script the nodecli children run (set in main)
NODECLI: list[str] = []
#: ``--before DIR``: every nodecli child also runs, in the same round, with the nodecli
#: of DIR (its twin), in a copy of its home (the config cache and the profiles of one
#: version are not the other's) and with a case number of its own (files it writes)
BEFORE: Path | None = None
TWIN = 1_000_000


def before_env(env: dict[str, str], copy: bool = True) -> dict[str, str]:
    """The environment of a child's twin: the nodecli of ``--before``, the home's copy
    (made at the twin's first run, from the home as the row set it up, unless ``copy``
    is false: the row prepares the twin's home itself)."""
    assert BEFORE is not None
    twin = dict(env, PYTHONPATH=env["PYTHONPATH"].replace(str(_common.CLIENT_ROOT),
                                                          str(BEFORE), 1))
    home = env.get("NODECLI_HOME")
    if home:
        twin["NODECLI_HOME"] = f"{home}-before"
        if copy and not os.path.exists(twin["NODECLI_HOME"]) and os.path.isdir(home):
            shutil.copytree(home, twin["NODECLI_HOME"],
                            ignore=shutil.ignore_patterns("state"))
    return twin


def interleaved(cases: dict[str, Callable[[int], Cmd]], runs: int) -> dict[str, Any]:
    """Median wall and CPU ms per case (with ``--before``, each nodecli case's twin in
    its "before"); round 0 warms up and is not counted."""
    got: dict[str, list[dict[str, float]]] = {name: [] for name in cases}
    twins: dict[str, list[dict[str, float]]] = {}
    for i in range(runs + 1):
        for name, make in cases.items():
            cmd, env, stdin = make(i)
            measured = run(cmd, env, stdin)
            if i:
                got[name].append(measured)
            if BEFORE is not None and cmd[:len(NODECLI)] == NODECLI:
                cmd, env, stdin = make(i + TWIN)
                measured = run(cmd, before_env(env), stdin)
                if i:
                    twins.setdefault(name, []).append(measured)

    def medians(ms: list[dict[str, float]]) -> dict[str, Any]:
        return {"wall": statistics.median(m["wall"] for m in ms),
                "cpu": statistics.median(m["cpu"] for m in ms)}

    result = {name: medians(ms) for name, ms in got.items()}
    for name, ms in twins.items():
        result[name]["before"] = medians(ms)
    return result


def fixed(cmd: list[str], env: dict[str, str], stdin: bytes | None = None
          ) -> Callable[[int], Cmd]:
    return lambda _i: (cmd, env, stdin)


class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, float, str, str, str]] = []

    def add(self, label: str, ours: dict[str, Any], floor: dict[str, Any], goal: float,
            note: str = "", basis: str = "wall") -> None:
        """One row; ``basis`` (wall or cpu) is the ratio the goal applies to. With
        ``--before``, the same ratio for the nodecli of the other checkout (its floor:
        the floor's own twin when the floor is nodecli too)."""
        wall = ours["wall"] / floor["wall"]
        cpu = ours["cpu"] / floor["cpu"]
        before = ""
        if "before" in ours:
            old, old_floor = ours["before"], floor.get("before", floor)
            before = (f"before: wall {old['wall'] / old_floor['wall']:5.2f}x "
                      f"cpu {old['cpu'] / old_floor['cpu']:5.2f}x "
                      f"({old['wall']:.1f} ms, cpu {old['cpu']:.1f} ms)")
        self.rows.append((label, wall, cpu, goal, note, basis, before))
        print(f"  {label:48} {ours['wall']:8.1f} vs {floor['wall']:8.1f} ms  "
              f"wall {wall:5.2f}x  cpu {cpu:5.2f}x  goal {basis} <= {goal}x {note}",
              flush=True)
        if before:
            print(f"  {'':48} {before}", flush=True)

    def summary(self) -> None:
        print("\nsummary (ratio of medians; goal)")
        for label, wall, cpu, goal, note, basis, before in self.rows:
            mark = "ok " if (wall if basis == "wall" else cpu) <= goal else "-- "
            print(f"  {mark}{label:48} wall {wall:5.2f}x  cpu {cpu:5.2f}x  "
                  f"goal {basis} <= {goal}x {note}")
            if before:
                print(f"     {'':48} {before}")


# One refresh of ``transfer top`` in a child running the measured nodecli: the first
# refresh lists every transfer, the later ones (timed) what changed. An older nodecli,
# without LiveTransfers, lists them all at every refresh.
TOP_CHILD = """import json, statistics, sys, time
from nodecli.http.client import Auth, Endpoint, open_client
url, ca, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    from nodecli.node.transfers import LiveTransfers
except ImportError:
    from nodecli.node.transfers import list_transfers
    def refresh_of(client):
        return lambda: list_transfers(client)
else:
    def refresh_of(client):
        return LiveTransfers(client).refresh
with open_client(Endpoint(url, Auth("basic", "bench", "bench-pass"), cacert=ca)) as client:
    refresh = refresh_of(client)
    start = time.perf_counter()
    count = len(refresh())
    first = time.perf_counter() - start
    walls, cpus = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        refresh()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
print(json.dumps({"count": count, "first": first * 1000,
                  "wall": statistics.median(walls) * 1000,
                  "cpu": statistics.median(cpus) * 1000}))
"""


def table_top(table: Table, node: Emulator, tmp: Path, runs: int) -> None:
    """``transfer top``'s refresh at 10,000 transfers, 200 of them running (the others a
    node's history), over HTTPS; the ratio is to the goal's budget of 300 ms."""
    assert node.proc.stdin is not None and node.proc.stdout is not None
    node.proc.stdin.write("transfers 10000 600 200\n")
    node.proc.stdin.flush()
    node.proc.stdout.readline()
    def refresh(env: dict[str, str]) -> dict[str, Any]:
        proc = subprocess.run([sys.executable, "-c", TOP_CHILD, node.url, node.ca,
                               str(runs)], env=env, cwd=tmp, check=True,
                              capture_output=True, text=True)
        return dict(json.loads(proc.stdout))

    got = refresh(child_env(tmp / "top"))
    if BEFORE is not None:
        got["before"] = refresh(before_env(child_env(tmp / "top")))
    budget = {"wall": 300.0, "cpu": 300.0}
    table.add(f"transfer top refresh, {got['count']} / 300 ms", got, budget, 1.0,
              f"(first refresh, a full list: {got['first']:.0f} ms)")


def table_fleet(table: Table, tmp: Path, nodecli: list[str], runs: int,
                health: bool = True, exporter: bool = True) -> None:
    """``node health`` over 1, 50 and 200 emulated nodes (one emulator process, every
    profile's secret in the file), then the exporter over 50 of them."""
    home, env = fleet_home(tmp / "fleet")
    env["NODECLI_SECRETS_BACKEND"] = "file"
    proc, ports, ca = serve_nodes(home, 200 if health else 50, 20)
    try:
        write_profiles(env, ports, ca, "f")
        fifty = "f00*,f01*,f02*,f03*,f04*"  # f000 to f049
        if not health:
            if exporter:
                table_exporter(table, env, nodecli, fifty, runs, tmp)
            return
        health = [*nodecli, "node", "health", "-o", "prometheus"]  # exit 0 in any state
        m = interleaved({"one": fixed([*health, "--node", "f000"], env),
                         "n50": fixed([*health, "--nodes", fifty], env),
                         "n200": fixed([*health, "--all-nodes"], env)}, max(3, runs // 3))
        one = m["one"]["cpu"]
        for n, goal in ((50, 3.0), (200, 6.0)):
            many = m[f"n{n}"]
            table.add(f"node health, {n} nodes / 1 node", many, m["one"], goal,
                      f"(client CPU per node: {many['cpu'] / n:.1f} ms; each one more: "
                      f"{(many['cpu'] - one) / (n - 1):.1f} ms; one node {one:.0f} ms)")
        if exporter:
            table_exporter(table, env, nodecli, fifty, runs, tmp)
    finally:
        proc.kill()
        proc.wait()


def table_exporter(table: Table, env: dict[str, str], nodecli: list[str], glob: str,
                   runs: int, tmp: Path) -> None:
    """Scrapes of ``nodecli exporter --max-age 600`` over 50 nodes once its first refresh
    is done: each is answered from the snapshot (goal 50 ms of wall time) and starts a
    refresh in the background. In every round a scrape is taken when no refresh runs
    (the row: Prometheus scrapes far less often than a refresh takes), then the round
    waits for the refresh it started to be done (the exporter's
    ``NODECLI_TEST_SCRAPE_NOTE`` says so: no sleeping). Then as many scrapes one after
    another, each meeting the refresh of the one before (printed). The CPU per
    scrape and node counts the refresh each round makes. With ``--before``, the other
    checkout's exporter (every scrape waits for a refresh there) runs beside it and the
    scrapes alternate."""
    import http.client
    import select

    note = tmp / "exporter-note"
    note.write_text("")
    envs = {"after": env | {"NODECLI_TEST_SCRAPE_NOTE": str(note)}} | \
        ({"before": before_env(env)} if BEFORE is not None else {})
    max_age = {"after": ["--max-age", "600"], "before": []}
    exporters = {who: subprocess.Popen([*nodecli, "exporter", "--nodes", glob, "--listen",
                                        "127.0.0.1:0", *max_age[who]], env=e,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True)
                 for who, e in envs.items()}
    try:
        ports = {}
        for who, exporter in exporters.items():
            assert exporter.stderr is not None
            ready, _, _ = select.select([exporter.stderr], [], [], 120)
            line = exporter.stderr.readline() if ready else ""
            if "127.0.0.1:" not in line:
                raise SystemExit(f"exporter ({who}) did not start: {line!r}")
            ports[who] = int(line.split("127.0.0.1:")[1].split("/")[0])

        def scrape(port: int) -> float:
            start = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("GET", "/metrics")
            body = conn.getresponse().read()
            conn.close()
            assert b"nodecli_up" in body
            return (time.perf_counter() - start) * 1000

        def cpu_ms(pid: int) -> float:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")

        def notes() -> list[str]:
            return note.read_text().splitlines()

        def refreshes_done(n: int) -> None:
            deadline = time.monotonic() + 120
            while notes().count("refreshed") < n:
                if time.monotonic() > deadline or exporters["after"].poll() is not None:
                    raise SystemExit(f"the exporter's refresh never ended: {notes()}")
                time.sleep(0.01)

        walls: dict[str, list[float]] = {who: [] for who in exporters}
        during: list[float] = []
        cpu: dict[str, float] = {}
        for who, port in ports.items():
            mark, done = len(notes()), notes().count("refreshed")
            scrape(port)  # waits for the first refresh, or is answered from it...
            if who == "after" and "snapshot" in notes()[mark:]:
                refreshes_done(done + 1)  # ...and started another: none runs after it
            cpu[who] = -cpu_ms(exporters[who].pid)
        first = len(notes())
        for _ in range(runs):
            for who, port in ports.items():
                done = notes().count("refreshed")
                walls[who].append(scrape(port))
                if who == "after":
                    refreshes_done(done + 1)  # the one this scrape started
        for who in exporters:
            per_node = (cpu[who] + cpu_ms(exporters[who].pid)) / runs / 50
            cpu[who] = per_node
        for _ in range(runs):  # one after another: each meets the refresh of the last
            during.append(scrape(ports["after"]))
        said = [n for n in notes()[first:] if n != "refreshed"]
        if said != ["snapshot"] * (2 * runs):
            raise SystemExit(f"scrapes that were not answered from the snapshot: {said}")
        got: dict[str, Any] = {}
        for who in exporters:
            wall = statistics.median(walls[who])
            got[who] = {"wall": wall, "cpu": wall, "per_node": cpu[who]}
        if "before" in got:
            got["after"]["before"] = got["before"]
        before = (f", before {got['before']['per_node']:.1f} ms" if "before" in got else "")
        table.add("exporter scrape from its snapshot, 50 nodes / 50 ms", got["after"],
                  {"wall": 50.0, "cpu": 50.0}, 1.0,
                  f"(exporter CPU per scrape and node, its refresh included: "
                  f"{got['after']['per_node']:.1f} ms{before}; scrapes one after another, "
                  f"a refresh running beside each: {statistics.median(during):.0f} ms)")
    finally:
        for exporter in exporters.values():
            exporter.terminate()
            exporter.wait()


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
                    help="comma list of: page,request,tail,keyring,top,fleet,exporter,list,"
                         "token,scale (fleet includes the exporter)")
    ap.add_argument("--checkout", help="run the nodecli of this checkout instead")
    ap.add_argument("--before", metavar="DIR",
                    help="also run the nodecli of this checkout in every round, beside "
                         "this one (before/after from one run)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    use_checkout(args.checkout)
    global BEFORE
    BEFORE = Path(args.before).resolve() if args.before else None

    def wanted(row: str) -> bool:
        return not only or row in only

    from nodecli.users.passwords import hash_password

    py = sys.executable
    table = Table()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}; medians of {args.runs} interleaved rounds; "
          f"nodecli of {args.checkout or ROOT}"
          + (f", beside the nodecli of {BEFORE} (before)" if BEFORE else ""))
    with tempfile.TemporaryDirectory(prefix="nodecli-bench-") as tmp_name:
        tmp = Path(tmp_name)
        script = tmp / "nodecli"
        script.write_text(CONSOLE_SCRIPT)
        nodecli = [py, str(script)]
        NODECLI[:] = nodecli
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

            def per_request(m10: dict[str, Any], m1000: dict[str, Any]) -> dict[str, Any]:
                got = {k: (m10[k] - m1000[k]) / extra for k in ("wall", "cpu")}
                if "before" in m10:
                    got["before"] = per_request(m10["before"], m1000["before"])
                return got

            per = {who: per_request(m[f"{who}10"], m[f"{who}1000"])
                   for who in ("ours", "floor", "httpx2")}
            table.add("extra keep-alive request, per request", per["ours"], per["floor"], 2.5,
                      f"(cpu {per['ours']['cpu']:.3f} vs {per['floor']['cpu']:.3f} ms, "
                      f"{extra} extra requests)", basis="cpu")
            table.add("  yardstick: httpx2 alone, per request", per["httpx2"], per["floor"],
                      2.5, f"(cpu {per['httpx2']['cpu']:.3f} ms; not a goal: the library's "
                      "own share)", basis="cpu")
            node.stop()

        if wanted("keyring") or wanted("top"):
            node = Emulator(tmp / "node2")
            if wanted("keyring"):
                # the secret in the 0600 file of a profile; with the keyring package
                # installed (as the test extra has it) / the same run with the file forced
                kr_home = tmp / "keyring"
                kr_env = child_env(kr_home, NODECLI_SECRETS_BACKEND="file")
                node_add = [*nodecli, "node", "add", "n", "--url", node.url, "--user",
                            "bench", "--cacert", node.ca, "--password-stdin"]
                # (an older nodecli refuses the profile's record of its secret: the
                # twin's home gets the profile from its own nodecli)
                for add_env in [kr_env] + ([before_env(kr_env, copy=False)] if BEFORE else []):
                    subprocess.run(node_add, input=b"bench-pass\n", env=add_env, check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                # the profile's record says "file": no NODECLI_SECRETS_BACKEND needed
                plain = child_env(kr_home)
                info = [*nodecli, "node", "info", "-o", "json"]
                m = interleaved({"file": fixed(info, kr_env), "ours": fixed(info, plain)},
                                args.runs)
                table.add("node info, keyring installed / not loaded", m["ours"], m["file"],
                          1.05)
            if wanted("top"):
                table_top(table, node, tmp, args.runs)
            node.stop()

        if wanted("fleet") or wanted("exporter"):
            table_fleet(table, tmp, nodecli, args.runs, health=wanted("fleet"),
                        exporter=True)

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
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(main())
