"""Benchmark: `nodecli events ship --to https://collector` against `nodecli events tail
--to FILE` on the same node (the yardstick, measured in the same run; goal >= 0.8x its
events per second), then peak RSS of ship over a small and a large log (goal: flat).

The node (bench/events.py --serve, HTTPS, its own process) and the collector (HTTPS, in
this process, counting without keeping) are shared by both commands; each command is a
subprocess whose peak RSS comes from ``os.wait4``. Both read the same pages (the same
page size and batch size) from iteration token 0 and keep a checkpoint.

    python bench/ship.py                        # 100,000 events, 3 rounds; RSS 10k vs 1M
    python bench/ship.py --events 20000 --rounds 1 --big 100000   # quick look
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from _common import measure_process  # noqa: E402  (after the path is set)

SERVE = Path(__file__).resolve().parent / "events.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--big", type=int, default=1_000_000)
    args = ap.parse_args()

    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.collector import CollectorState, build_collector

    tmp = Path(tempfile.mkdtemp(prefix="nodecli-bench-ship-"))
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

    env = dict(os.environ, NODECLI_HOME=str(tmp / "client"), NODECLI_URL=url,
               NODECLI_USER="bench", NODECLI_PASSWORD="bench-pass", NODECLI_CACERT=ca,
               NODECLI_SINK_CACERT=ca,
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nodecli = [sys.executable, "-m", "nodecli", "events"]
    counter = [0]

    def ship() -> list[str]:
        counter[0] += 1
        return [*nodecli, "ship", "--to", collector.url + "/ingest", "--iteration-token",
                "0", "--batch", str(args.batch), "--checkpoint",
                str(tmp / f"ship-{counter[0]}.json")]

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
        results: dict[str, list[dict[str, float]]] = {"tail --to FILE": [], "ship": []}
        for _ in range(args.rounds):
            results["tail --to FILE"].append(measure_process(tail(), env))
            with open(tmp / f"tail-{counter[0]}.jsonl", "rb") as written:
                assert sum(1 for _ in written) == args.events, "not every event written"
            before = collector.state.events
            results["ship"].append(measure_process(ship(), env))
            assert collector.state.events - before == args.events, "not every event arrived"
        n = args.events
        print(f"\n{n} events, batch/page {args.batch}, best of {args.rounds} rounds:")
        print(f"{'command':16} {'wall s':>8} {'events/s':>10} {'cpu s':>7} {'RSS MiB':>8}")
        best = {k: min(v, key=lambda r: r["wall"]) for k, v in results.items()}
        for name, r in best.items():
            print(f"{name:16} {r['wall']:8.2f} {n / r['wall']:10.0f} {r['cpu']:7.2f} "
                  f"{r['rss_mib']:8.1f}")
        ratio = best["tail --to FILE"]["wall"] / best["ship"]["wall"]
        print(f"ship / tail --to FILE, events per second: {ratio:.2f}x (goal >= 0.8x)")
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
