"""Benchmark: `nodecli events ship --to https://collector` against `nodecli events tail
--to FILE` on the same node (the yardstick, measured in the same run; goal >= 0.8x its
events per second), then peak RSS of ship over a small and a large log (goal: flat).

The node (bench/events.py --serve, HTTPS, its own process) and the collector (HTTPS, in
this process, counting without keeping) are shared by both commands; each command is a
subprocess whose peak RSS comes from ``os.wait4``. Both read the same pages (the same
page size and batch size) from iteration token 0 and keep a checkpoint, with byte-code
compiled once before the rounds (``child_env``). The table gives the best and the median
wall of the rounds (a busy machine swings by a third) and CPU seconds; ``--windows
1,2,4,8`` runs ship once per ``--window`` in every round (default: ship's own).

    python bench/ship.py                        # 100,000 events, 3 rounds; RSS 10k vs 1M
    python bench/ship.py --events 20000 --rounds 1 --big 100000   # quick look
    python bench/ship.py --rounds 5 --windows 1,2,4,8 --big 100000
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from _common import child_env, measure_process  # noqa: E402  (after the path is set)

SERVE = Path(__file__).resolve().parent / "events.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--big", type=int, default=1_000_000)
    ap.add_argument("--windows", default="",
                    help="comma-separated --window values for ship (default: its own)")
    args = ap.parse_args()
    windows = [int(w) for w in args.windows.split(",") if w.strip()] or [None]

    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.collector import CollectorState, build_collector

    tmp = Path(tempfile.mkdtemp(prefix="nodecli-bench-ship-"))

    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # a run leaves nothing in /tmp
    node = subprocess.Popen([sys.executable, str(SERVE), "--serve", str(tmp / "node")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert node.stdin is not None and node.stdout is not None
    url, ca = node.stdout.readline().split()
    # the collector uses the node's certificate (the same CA file)
    collector = build_collector(resolve_paths(tmp / "node"), CollectorState(keep=False))
    collector.start()

    def generate(count: int) -> float:
        assert node.stdin is not None and node.stdout is not None
        node.stdin.write(f"{count}\n")
        node.stdin.flush()
        return float(node.stdout.readline())

    env = child_env(tmp / "client", NODECLI_URL=url, NODECLI_USER="bench",
                    NODECLI_PASSWORD="bench-pass", NODECLI_CACERT=ca, NODECLI_SINK_CACERT=ca)
    # byte-code once (child_env's cache), as a pip install has it
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "nodecli")],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    nodecli = [sys.executable, "-m", "nodecli", "events"]
    counter = [0]

    def ship(window: int | None = None) -> list[str]:
        counter[0] += 1
        return [*nodecli, "ship", "--to", collector.url + "/ingest", "--iteration-token",
                "0", "--batch", str(args.batch), "--checkpoint",
                str(tmp / f"ship-{counter[0]}.json"),
                *([] if window is None else ["--window", str(window)])]

    def tail() -> list[str]:
        counter[0] += 1
        return [*nodecli, "tail", "--to", str(tmp / f"tail-{counter[0]}.jsonl"),
                "--iteration-token", "0", "--page-size", str(args.batch)]

    if not args.small <= args.events <= args.big:
        raise SystemExit("need --small <= --events <= --big")
    try:
        generate(args.small)
        small = measure_process(ship(), env)  # peak memory over a small log first
        print(f"node {url}: {args.events} events generated in "
              f"{generate(args.events - args.small):.1f} s")
        ships = {w: "ship" if w is None else f"ship -w {w}" for w in windows}
        results: dict[str, list[dict[str, float]]] = {
            "tail --to FILE": [], **{name: [] for name in ships.values()}}
        for _ in range(args.rounds):
            results["tail --to FILE"].append(measure_process(tail(), env))
            with open(tmp / f"tail-{counter[0]}.jsonl", "rb") as written:
                assert sum(1 for _ in written) == args.events, "not every event written"
            for window, name in ships.items():
                before = collector.state.events
                results[name].append(measure_process(ship(window), env))
                assert collector.state.events - before == args.events, \
                    "not every event arrived"
        n = args.events
        print(f"\n{n} events, batch/page {args.batch}, {args.rounds} rounds "
              "(best and median wall, CPU of each):")
        print(f"{'command':16} {'best s':>7} {'events/s':>9} {'cpu s':>6} {'median s':>9} "
              f"{'events/s':>9} {'cpu s':>6} {'RSS MiB':>8}")
        best = {k: min(v, key=lambda r: r["wall"]) for k, v in results.items()}
        median = {k: (statistics.median(r["wall"] for r in v),
                      statistics.median(r["cpu"] for r in v)) for k, v in results.items()}
        for name, r in best.items():
            mid_wall, mid_cpu = median[name]
            print(f"{name:16} {r['wall']:7.2f} {n / r['wall']:9.0f} {r['cpu']:6.2f} "
                  f"{mid_wall:9.2f} {n / mid_wall:9.0f} {mid_cpu:6.2f} {r['rss_mib']:8.1f}")
        for name in ships.values():
            print(f"{name} / tail --to FILE, events per second: best "
                  f"{best['tail --to FILE']['wall'] / best[name]['wall']:.2f}x, median "
                  f"{median['tail --to FILE'][0] / median[name][0]:.2f}x (goal >= 0.8x)")
        grown = generate(args.big - args.events)
        big = measure_process(ship(), env)
        print(f"\npeak RSS of ship: {args.small} events {small['rss_mib']:.1f} MiB, "
              f"{args.big} events {big['rss_mib']:.1f} MiB "
              f"({big['rss_mib'] / small['rss_mib']:.2f}x; goal: flat) "
              f"[log grown in {grown:.0f} s; {args.big / big['wall']:.0f} events/s]")
    finally:
        collector.stop()
        node.stdin.close()
        node.wait()


if __name__ == "__main__":
    main()
