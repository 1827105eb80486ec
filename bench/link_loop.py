"""Link loops of any length end (issue 34): the time each pager takes to stop on a cycle
of 1,001 distinct pages over HTTPS, the lines ``events tail --to FILE`` wrote twice, and
the memory the page trail takes for a million pages.

    python bench/link_loop.py [--pages 1001] [--trail 1000000]

Each command runs as a child process against a scripted TLS server (tests/scripted_server)
serving pages 1 -> 2 -> ... -> N -> 1 (keep-alive); time is the child's wall time, from
start to exit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import child_env  # also puts the checkout on sys.path

from tests.scripted_server import ScriptedServer, Seen, certificates, reply


def cycle_script(pages: int):
    from urllib.parse import parse_qs, urlsplit

    info = json.dumps({"application": "node", "version": "4.4.5"}).encode()
    js = [("Content-Type", "application/json")]

    def script(seen: Seen) -> list[bytes | float]:
        path = seen.target.split("?", 1)[0]
        if path not in ("/events", "/ops/transfers"):
            return [reply(200, info, js, close=False)]
        n = int((parse_qs(urlsplit(seen.target).query).get("iteration_token") or ["1"])[-1])
        item = {"id": str(n), "time": "2030-01-01T00:00:00Z", "types": ["file.created"],
                "user_id": "u", "status": "completed", "data": {"path": f"/f{n}"}}
        link = f'<{path}?iteration_token={n % pages + 1}>; rel="next"'
        return [reply(200, json.dumps([item]).encode(), [*js, ("Link", link)], close=False)]

    return script


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=1001)
    ap.add_argument("--trail", type=int, default=1_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        ca, cert, key = certificates(Path(tmp) / "tls")
        with ScriptedServer(cycle_script(args.pages), tls=(cert, key)) as server:
            env = child_env(home, NODECLI_URL=server.url(), NODECLI_USER="admin",
                            NODECLI_PASSWORD="a-long-password", NODECLI_CACERT=ca)
            out = Path(tmp) / "events.jsonl"
            runs = {
                "events tail --iteration-token 1 --to FILE":
                    ["events", "tail", "--iteration-token", "1", "--to", str(out)],
                "transfer list": ["transfer", "list"],
                "api /events --paginate": ["api", "/events", "--paginate"],
            }
            print(f"cycle of {args.pages} distinct pages over HTTPS")
            for name, argv in runs.items():
                started = time.monotonic()
                done = subprocess.run([sys.executable, "-m", "nodecli", *argv], env=env,
                                      capture_output=True, text=True, timeout=600)
                took = time.monotonic() - started
                line = f"  {name:45s} exit {done.returncode}  {took:6.2f} s"
                if out.exists() and "tail" in name:
                    ids = Counter(json.loads(x)["id"] for x in out.read_text().splitlines())
                    twice = sum(c - 1 for c in ids.values() if c > 1)
                    line += f"  lines {sum(ids.values())}, written twice {twice}"
                print(line)
    from nodecli.http.links import PageTrail

    trail = PageTrail()
    started, cpu = time.monotonic(), time.process_time()
    for i in range(args.trail):
        trail.add(f"{i:x}")
    took, cpu = time.monotonic() - started, time.process_time() - cpu
    print(f"page trail of {args.trail:,} pages: {trail.nbytes / 2**20:.1f} MiB "
          f"({trail.nbytes / args.trail:.0f} bytes a page), {took:.1f} s wall, "
          f"{cpu:.1f} s CPU to add them")

if __name__ == "__main__":
    main()
