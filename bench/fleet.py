"""Fleet figures: health over many nodes against one, and a merged tail against separate
tails, in one run.

    python bench/fleet.py [--nodes 50] [--tail-nodes 20] [--events 5000] [--runs 5]

Every node is an emulated node over HTTPS with its own log, all served by one emulator
process (as ``nodecli emulator serve --nodes N`` serves them, here with the events
made up front); every node profile is in the children's home. Rows and goals (issue 23):

========================================================  ==============================
row                                                       goal
========================================================  ==============================
``node health --all-nodes`` over N nodes vs one node      wall <= 3.0x
``events tail --all-nodes --to FILE`` over M nodes        CPU < 1.0x, wall <= 1.0x
  vs M ``events tail --node X --to FILE`` side by side    (keeps up, costs less)
========================================================  ==============================

Medians of ``--runs`` rounds; the two commands of a row take turns in every round, so a
busy machine slows both alike. CPU is user + system time of the children.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from _common import add_profiles, fleet_home, nodecli_argv, serve_nodes


def run_all(cmds: list[list[str]], env: dict[str, str]) -> tuple[float, float]:
    """Run the commands side by side; (wall seconds, children's CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for c in cmds]
    codes = [p.wait() for p in procs]
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if any(codes):
        raise SystemExit(f"a command failed ({codes}): {cmds[0]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--tail-nodes", type=int, default=20)
    ap.add_argument("--events", type=int, default=5000, help="events per tailed node")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nodecli-fleet-") as tmp:
        home, env = fleet_home(Path(tmp))
        procs = []
        try:
            health_proc, health_ports, ca = serve_nodes(home, args.nodes, 20)
            procs.append(health_proc)
            tail_proc, tail_ports, _ = serve_nodes(home, args.tail_nodes, args.events)
            procs.append(tail_proc)
            health = add_profiles(env, health_ports, ca, "h")
            tails = add_profiles(env, tail_ports, ca, "t")
            one = nodecli_argv("node", "health", "--node", health[0], "-o", "json")
            many = nodecli_argv("node", "health", "--nodes", "h*", "-o", "json")
            walls: dict[str, list[float]] = {"one": [], "many": []}
            for _ in range(args.runs):
                walls["one"].append(run_all([one], env)[0])
                walls["many"].append(run_all([many], env)[0])
            w1, wn = statistics.median(walls["one"]), statistics.median(walls["many"])
            print(f"node health, 1 node           {w1 * 1000:8.0f} ms")
            print(f"node health, {args.nodes} nodes        {wn * 1000:8.0f} ms   "
                  f"{wn / w1:5.2f}x   (goal <= 3.0x)")
            out = Path(tmp) / "out"
            out.mkdir()
            merged_w, merged_c, sep_w, sep_c = [], [], [], []
            for r in range(args.runs):
                files = Path(tmp) / f"round{r}"
                files.mkdir()
                merged = nodecli_argv("events", "tail", "--nodes", "t*", "--since", "1d",
                                 "--to", str(files / "merged.jsonl"))
                separate = [nodecli_argv("events", "tail", "--node", name, "--since", "1d",
                                    "--to", str(files / f"{name}.jsonl")) for name in tails]
                w, c = run_all([merged], env)
                merged_w.append(w)
                merged_c.append(c)
                w, c = run_all(separate, env)
                sep_w.append(w)
                sep_c.append(c)
                lines = sum(1 for _ in open(files / "merged.jsonl", "rb"))
                if lines != args.events * args.tail_nodes:
                    raise SystemExit(f"merged tail wrote {lines} lines")
            mw, mc = statistics.median(merged_w), statistics.median(merged_c)
            sw, sc = statistics.median(sep_w), statistics.median(sep_c)
            n = args.tail_nodes
            print(f"{n} separate tails, {args.events} events each: wall {sw:6.2f} s, "
                  f"CPU {sc:6.2f} s")
            print(f"merged tail of {n} nodes:               wall {mw:6.2f} s, "
                  f"CPU {mc:6.2f} s   wall {mw / sw:4.2f}x, CPU {mc / sc:4.2f}x "
                  "(goal: CPU < 1.0x, wall <= 1.0x)")
            print(f"({os.cpu_count()} CPUs; medians of {args.runs} runs)")
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    main()
