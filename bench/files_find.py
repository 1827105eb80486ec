"""`files find` and `files tree` of a generated tree over HTTPS, beside a yardstick
measured in the same run: the same tree walked by raw httpx2 (every page of every
folder, depth first, nothing kept), so the figures say what nodecli costs over the
listing itself; peak memory at each size (it must stay flat from the smallest tree to
the largest) and the requests each run made.

The emulator is bench/files_du.py's (this checkout's, its own process and CA), the tree
``fanout=10,depth=4`` (11,111 folders) with ``--files`` files in each, paged by number,
1000 entries a page.

    python bench/files_find.py                       # 11,110 and 999,989 entries
    python bench/files_find.py --files 0 --files 8   # 11,110 and about 100,000 entries
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PY, child_env, nodecli_argv
from files_du import AK, DEPTH, FANOUT, FOLDERS, SECRET, Emulator

YARDSTICK = """
import ssl, sys, httpx2
url, ca, ak, secret, root = sys.argv[1:6]
ctx = ssl.create_default_context(cafile=ca)
entries = 0
with httpx2.Client(base_url=url, auth=(ak, secret), verify=ctx, timeout=60) as client:
    stack = [root]
    while stack:
        fid, page = stack.pop(), 1
        while True:
            resp = client.get(f"/files/{fid}/files", params={"page": page, "per_page": 1000})
            resp.raise_for_status()
            items = resp.json()
            entries += len(items)
            stack.extend(e["id"] for e in items if e["type"] == "folder")
            if len(items) < 1000:
                break
            page += 1
print(entries)
"""


def timed(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = 0
    assert proc.stdout is not None
    for _ in proc.stdout:
        lines += 1
    _pid, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{err}")
    return {"wall": time.perf_counter() - start, "rss": usage.ru_maxrss / 1024,
            "lines": lines}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, action="append",
                    help="files per folder, one tree each (default: 0 and 89)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nodecli-bench-find-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # a run leaves nothing in /tmp
    emu = Emulator(tmp / "emulator")
    try:
        env = child_env(tmp / "home", NODECLI_URL=emu.url, NODECLI_ACCESS_KEY=AK,
                        NODECLI_PASSWORD=SECRET, NODECLI_CACERT=emu.ca)
        rss: dict[str, list[float]] = {}
        for files in args.files or [0, 89]:
            emu.say(f"tree fanout={FANOUT},depth={DEPTH},files={files},seed=1")
            entries = FOLDERS - 1 + FOLDERS * files
            root = subprocess.run(
                nodecli_argv("files", "find", "/", "--depth", "1", "--name", "generated",
                             "-o", "json"), env=env, capture_output=True, check=True)
            root_id = json.loads(root.stdout)[0]["id"]
            emu.say("count")  # requests from here on: the run's own
            yard = timed([PY, "-c", YARDSTICK, emu.url, emu.ca, AK, SECRET, root_id],
                         dict(os.environ))
            print(f"{entries:>9,} entries: yardstick (raw httpx2 walk) {yard['wall']:6.1f} s, "
                  f"peak RSS {yard['rss']:5.1f} MiB, {int(emu.say('count')):,} requests",
                  flush=True)
            for name, argv in (
                    ("files find -o jsonl", nodecli_argv("files", "find", "/generated",
                                                         "-o", "jsonl")),
                    ("files find --resume", nodecli_argv("files", "find", "/generated",
                                                         "--resume", f"b{files}",
                                                         "-o", "jsonl")),
                    ("files tree -o jsonl", nodecli_argv("files", "tree", "/generated",
                                                         "-o", "jsonl"))):
                fig = timed(argv, env)
                rss.setdefault(name, []).append(fig["rss"])
                print(f"{entries:>9,} entries: {name:<20} {fig['wall']:6.1f} s "
                      f"({fig['wall'] / yard['wall']:.2f}x the yardstick), peak RSS "
                      f"{fig['rss']:5.1f} MiB, {fig['lines']:,} lines, "
                      f"{int(emu.say('count')):,} requests", flush=True)
        for name, values in rss.items():
            if len(values) > 1:
                print(f"{name}: peak RSS largest / smallest tree {values[-1] / values[0]:.2f}x")
    finally:
        emu.stop()


if __name__ == "__main__":
    main()
