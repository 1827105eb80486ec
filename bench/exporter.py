"""Exporter figures (issue 34): concurrent scrapes with a hung node and half-open
clients, and SIGTERM of a busy exporter (``--max-age 0``: every scrape waits).

    python bench/exporter.py [--node-timeout 5] [--scrapes 8] [--half-open 60] [--rounds 3]

One emulated node over HTTPS and one "hung" node (a socket that accepts and never
answers) behind ``nodecli exporter --all-nodes``. With ``--half-open`` clients holding
half a request each, ``--scrapes`` scrapes are sent at once, ``--rounds`` times: the
slowest scrape is the figure (goal: at most --node-timeout and a little, never N x
--node-timeout). Then, with scrapes waiting and the half-open clients still there, the
exporter gets SIGTERM: its exit status (goal 130) and the tracebacks it printed (goal 0).
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from _common import add_profiles, fleet_home, nodecli_argv, serve_nodes

REQUEST = b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n"


def scrape(port: int, seconds: list[float]) -> None:
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=300) as c:
        c.sendall(REQUEST)
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass
    seconds.append(time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--node-timeout", type=float, default=5.0)
    ap.add_argument("--scrapes", type=int, default=8)
    ap.add_argument("--half-open", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nodecli-exporter-") as tmp:
        home, env = fleet_home(Path(tmp))
        hung = socket.create_server(("127.0.0.1", 0), backlog=512)
        node, ports, ca = serve_nodes(home, 1, 100)
        exporter = None
        half: list[socket.socket] = []
        try:
            add_profiles(env, ports, ca, "emu")
            subprocess.run(nodecli_argv("node", "add", "hung", "--url",
                                   f"https://localhost:{hung.getsockname()[1]}", "--user",
                                   "admin", "--cacert", ca, "--password-stdin", "--no-check"),
                           input="admin-pass\n", env=env, check=True, text=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            exporter = subprocess.Popen(
                nodecli_argv("exporter", "--all-nodes", "--listen", "127.0.0.1:0",
                        "--node-timeout", f"{args.node_timeout:g}",
                        # every scrape waits for a refresh (the case these figures are
                        # about); bench/table.py measures scrapes from the snapshot
                        "--max-age", "0"),
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            assert exporter.stderr is not None
            ready, _, _ = select.select([exporter.stderr], [], [], 60)
            first = exporter.stderr.readline().decode() if ready else ""
            port = int(first.split("127.0.0.1:")[1].split("/")[0])
            for i in range(args.half_open):
                c = socket.create_connection(("127.0.0.1", port), timeout=60)
                c.sendall(REQUEST[: 7 + i % 20])
                half.append(c)
            slowest = []
            for _ in range(args.rounds):
                seconds: list[float] = []
                threads = [threading.Thread(target=scrape, args=(port, seconds))
                           for _ in range(args.scrapes)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                slowest.append(max(seconds))
            tasks = len(os.listdir(f"/proc/{exporter.pid}/task"))
            print(f"{args.scrapes} concurrent scrapes, 1 hung node, {args.half_open} "
                  f"half-open clients, --node-timeout {args.node_timeout:g}:")
            print("  slowest scrape per round   " +
                  "  ".join(f"{s:5.2f} s" for s in slowest) +
                  f"   (goal <= {args.node_timeout:g} s and a little)")
            print(f"  exporter threads           {tasks}")
            waiting = [threading.Thread(target=scrape, args=(port, []), daemon=True)
                       for _ in range(args.scrapes)]
            for t in waiting:
                t.start()
            time.sleep(0.5)  # a bench, not a test: let the scrapes arrive
            exporter.send_signal(signal.SIGTERM)
            code = exporter.wait(timeout=60)
            rest = exporter.stderr.read().decode()
            print(f"SIGTERM with {args.scrapes} scrapes waiting: exit {code} (goal 130), "
                  f"{rest.count('Traceback')} tracebacks (goal 0)")
        finally:
            for c in half:
                c.close()
            if exporter is not None and exporter.poll() is None:
                exporter.kill()
                exporter.wait()
            node.terminate()
            node.wait()
            hung.close()


if __name__ == "__main__":
    main()
