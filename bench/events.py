"""Benchmark: `nodecli events tail -o jsonl` against a bare http.client + json loop
(bench/floors/tail_jsonl.py, the floor bench/table.py uses too).

Both clients run as subprocesses against the same emulator (its own process, HTTPS,
log pre-filled), fetch the same pages (same page size, same Link chain) and
write jsonl to /dev/null. For each run we report wall time, events/s, CPU seconds of
the client process and its peak RSS (``os.wait4``), and the ratios nodecli / bare.

Then the log grows to 1,000,000 events and nodecli tails all of them: its peak RSS must
stay flat (events are handled page by page, never accumulated).

    python bench/events.py                 # 100k events, 3 rounds, then 1M
    python bench/events.py --events 20000 --rounds 1 --no-million   # quick look
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from _common import measure_process  # noqa: E402  (after the path is set)

FLOOR = Path(__file__).resolve().parent / "floors" / "tail_jsonl.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--page-size", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-million", action="store_true")
    args = ap.parse_args()

    # The emulator runs in its own process: a child forked from a process holding the
    # log would report the parent's memory as its peak RSS.
    tmp = Path(tempfile.mkdtemp(prefix="nodecli-bench-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # a run leaves nothing in /tmp
    node = subprocess.Popen([sys.executable, __file__, "--serve", str(tmp / "node")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert node.stdin is not None and node.stdout is not None
    url, ca = node.stdout.readline().split()

    def generate(count: int) -> float:
        node.stdin.write(f"{count}\n")
        node.stdin.flush()
        return float(node.stdout.readline())

    print(f"emulator: {url}, {args.events} events generated in "
          f"{generate(args.events):.1f} s")

    env = dict(os.environ, NODECLI_HOME=str(tmp / "client"), NODECLI_URL=url,
               NODECLI_USER="bench", NODECLI_PASSWORD="bench-pass", NODECLI_CACERT=ca,
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ours = [sys.executable, "-m", "nodecli", "events", "tail", "--iteration-token", "0",
            "--page-size", str(args.page_size), "-o", "jsonl"]
    bare = [sys.executable, str(FLOOR), url, "bench", str(args.page_size)]
    startup = [sys.executable, "-m", "nodecli", "events", "tail", "--help"]

    results: dict[str, list[dict[str, float]]] = {"nodecli": [], "bare": [], "startup": []}
    for _ in range(args.rounds):
        results["bare"].append(measure_process(bare, env))
        results["nodecli"].append(measure_process(ours, env))
        results["startup"].append(measure_process(startup, env))

    def best(name: str, key: str) -> float:
        return min(r[key] for r in results[name])

    n = args.events
    print(f"\n{n} events, page size {args.page_size}, best of {args.rounds} rounds "
          "(jsonl to /dev/null):")
    print(f"{'client':10} {'wall s':>8} {'events/s':>10} {'cpu s':>7} {'peak RSS MiB':>13}")
    for name in ("bare", "nodecli"):
        w, c, r = best(name, "wall"), best(name, "cpu"), max(x["rss_mib"] for x in results[name])
        print(f"{name:10} {w:8.2f} {n / w:10.0f} {c:7.2f} {r:13.1f}")
    ratio_wall = best("nodecli", "wall") / best("bare", "wall")
    ratio_cpu = best("nodecli", "cpu") / best("bare", "cpu")
    start_wall = best("startup", "wall")
    ratio_steady = (best("nodecli", "wall") - start_wall) / best("bare", "wall")
    print(f"ratio nodecli/bare: wall {ratio_wall:.2f}x, client CPU {ratio_cpu:.2f}x "
          f"(goal, to a file with checkpoint: <= 1.05x; see bench/table.py)")
    print(f"nodecli start-up (tail --help) {start_wall:.2f} s; wall ratio without it "
          f"{ratio_steady:.2f}x")
    busy = best("bare", "cpu") / best("bare", "wall")
    print(f"bare client busy {busy:.0%} of its wall time "
          f"({'the emulator is the bottleneck' if busy < 0.6 else 'the client is the bottleneck'})")

    if args.no_million:
        node.stdin.close()
        node.wait()
        return
    big = 1_000_000
    print(f"\nlog grown to {big} events in {generate(big - args.events):.1f} s")
    r_big = measure_process(ours, env)
    r_small = min(results["nodecli"], key=lambda r: r["wall"])
    print(f"nodecli {big} events: {r_big['wall']:.1f} s, {big / r_big['wall']:.0f} events/s, "
          f"peak RSS {r_big['rss_mib']:.1f} MiB (vs {r_small['rss_mib']:.1f} MiB for "
          f"{args.events}: {r_big['rss_mib'] / r_small['rss_mib']:.2f}x; goal <= 32 MiB, flat)")
    node.stdin.close()
    node.wait()


def serve(home: str, keep_alive: bool = False) -> None:
    """The emulator process (HTTPS, as nodes serve): print its URL and CA file, then
    generate N events per line "N" read (or seed N transfers lasting S seconds, R of them
    still running, per line "transfers N S R")."""
    from nodecli.config.model import NodeUser, TransferUser
    from nodecli.config.paths import resolve_paths
    from nodecli.config.store import ConfigStore
    from nodecli.emulator.app import build_server, ca_file
    from nodecli.emulator.events import log_for
    from nodecli.users.passwords import hash_password

    paths = resolve_paths(Path(home))
    server = build_server(paths, tls=True, keep_alive=keep_alive)
    server.start()
    with ConfigStore(paths).edit() as cfg:
        cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////*"])
        cfg.users["bench"] = NodeUser("bench", "xfer", hash_password("bench-pass", log_n=4),
                                      [])
    log = log_for(server.state)
    print(server.url, ca_file(paths), flush=True)
    for line in sys.stdin:
        t = time.perf_counter()
        words = line.split()
        if words[0] == "transfers":  # "transfers N SECONDS RUNNING": N transfers lasting
            from nodecli.emulator.transfers import book_of  # SECONDS, RUNNING still running

            book = book_of(server.state)
            book.seconds = float(words[2])
            book.seed(int(words[1]))
            long_ago = time.time() - 10 * book.seconds
            for old in book.items[:-int(words[3])]:
                old.start = old.changed = long_ago
        else:
            log.generate(int(words[0]))
        print(f"{time.perf_counter() - t:.3f}", flush=True)
    server.stop()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--serve":
        serve(sys.argv[2], keep_alive="--keep-alive" in sys.argv[3:])
    else:
        main()
