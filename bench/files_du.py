"""`files du` of a tree of 1,000,000 entries over HTTPS: time, peak memory and requests,
beside a tree of a tenth of it (memory must stay flat), then the same scan with
--resume killed by SIGKILL half way and resumed: the totals must equal the run that
was not interrupted.

The emulator (this checkout's, its own process, its own CA) serves the generated tree
(``fanout=10,depth=4``: 11,111 folders, and ``files`` files in each) paged by number,
1000 entries a page, and counts the requests it serves.

    python bench/files_du.py                   # 1,000,000 entries
    python bench/files_du.py --small           # and first a tree of 100,000 (flat memory)
    python bench/files_du.py --files 8         # a smaller tree (about 100,000 entries)
    python bench/files_du.py --kills 3         # three SIGKILLs in the resumed scan
    python bench/files_du.py --no-whole        # only the killed and resumed scan

Every scan's totals are checked against the tree's own, added up by the emulator from
its generator without HTTP, and the resumed scan's against the uninterrupted one's.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import PY, ROOT, child_env, nodecli_argv

AK, SECRET = "bench-ak", "bench-secret"
FANOUT, DEPTH = 10, 4
FOLDERS = sum(FANOUT ** d for d in range(DEPTH + 1))  # 11,111 with the mount

SERVE = """
import sys
from nodecli.config.paths import resolve_paths
from nodecli.emulator.app import build_server, ca_file
from nodecli.emulator.generated import Paging, TreeSpec
from nodecli.emulator.storage import storage_of

paths = resolve_paths(sys.argv[1])
server = build_server(paths, persist=False).start()
server.state.create_access_key("admin", {"id": sys.argv[2], "secret": sys.argv[3],
                                         "storage": {"type": "local", "path": "/"}})
storage = storage_of(server.state)
storage.paging = Paging.parse("numbered:1000")
count = [0]
server.access_log = lambda line: count.__setitem__(0, count[0] + 1)
print(server.url, ca_file(paths), flush=True)
for line in sys.stdin:  # "tree SPEC": a new tree; "count": requests since the last count
    word, _, arg = line.strip().partition(" ")
    if word == "tree":
        storage.generate(TreeSpec.parse(arg))
        print("ok", flush=True)
    elif word == "count":
        print(count[0], flush=True)
        count[0] = 0
    elif word == "sum":  # the tree's own totals, from the generator (no HTTP)
        tree, files, size, stack = storage.generated, 0, 0, [storage.generated.node("g")]
        while stack:
            for child in tree.children(stack.pop()):
                if child.type == "folder":
                    stack.append(child)
                else:
                    files, size = files + 1, size + child.size
        print(files, size, flush=True)
"""


class Emulator:
    def __init__(self, home: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([PY, "-c", SERVE, str(home), AK, SECRET], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url, self.ca = self.proc.stdout.readline().split()

    def say(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def run(argv: list[str], env: dict[str, str], out: Path,
        kill_when: Path | None = None, kill_at: int = 0) -> dict[str, object]:
    """One nodecli run: wall and CPU seconds, peak RSS (MiB), exit status; stdout to
    ``out``. With ``kill_when``, SIGKILL once the state file there says ``kill_at``
    folders were listed (a benchmark may poll; a test may not)."""
    start = time.perf_counter()
    with open(out, "wb") as fh:
        proc = subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.PIPE)
        killed = False
        if kill_when is not None:
            while proc.poll() is None:
                try:
                    listed = json.loads(kill_when.read_bytes())["counts"]["listings"]
                except (OSError, ValueError, KeyError):
                    listed = 0
                if listed >= kill_at:
                    proc.send_signal(signal.SIGKILL)
                    killed = True
                    break
                time.sleep(0.05)
        _pid, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0 and not killed:
        raise SystemExit(f"command failed ({code}): {' '.join(argv)}\n{err}")
    return {"wall": time.perf_counter() - start, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mib": usage.ru_maxrss / 1024, "killed": killed, "stderr": err}


def totals(out: Path) -> list[dict[str, object]]:
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=89,
                    help="files per folder (89: 999,989 entries below the mount)")
    ap.add_argument("--kills", type=int, default=1)
    ap.add_argument("--small", action="store_true", help="first a tree of a tenth")
    ap.add_argument("--no-whole", action="store_true", help="no uninterrupted scan")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nodecli-bench-du-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # a run leaves nothing in /tmp
    emu = Emulator(tmp / "emulator")
    try:
        home = tmp / "home"
        env = child_env(home, NODECLI_URL=emu.url, NODECLI_ACCESS_KEY=AK,
                        NODECLI_PASSWORD=SECRET, NODECLI_CACERT=emu.ca)
        du = nodecli_argv("files", "du", "/generated", "--depth", "1", "-o", "json")
        rows = []
        sizes = [max(1, args.files // 10), args.files] if args.small else [args.files]
        for files in sizes:
            emu.say(f"tree fanout={FANOUT},depth={DEPTH},files={files},seed=1")
            expected = [int(x) for x in emu.say("sum").split()]
            entries = FOLDERS - 1 + FOLDERS * files
            if args.no_whole and files == args.files:
                break
            emu.say("count")
            fig = run(du, env, tmp / f"du-{files}.json")
            fig["requests"] = int(emu.say("count"))
            fig["entries"] = entries
            rows.append(fig)
            got = totals(tmp / f"du-{files}.json")[0]
            print(f"files du of {entries:>9,} entries: {fig['wall']:6.1f} s wall, "
                  f"{fig['cpu']:6.1f} s CPU, peak RSS {fig['rss_mib']:5.1f} MiB, "
                  f"{fig['requests']:,} requests "
                  f"({fig['entries'] / fig['wall']:,.0f} entries/s); totals equal to the "
                  f"tree's: {'yes' if [got['files'], got['size']] == expected else 'NO'}",
                  flush=True)
        whole = None if args.no_whole else totals(tmp / f"du-{args.files}.json")
        if len(rows) == 2:
            print(f"peak RSS at {rows[1]['entries']:,} / at {rows[0]['entries']:,}: "
                  f"{rows[1]['rss_mib'] / rows[0]['rss_mib']:.2f}x")
        # the same scan with --resume, killed by SIGKILL part way, then resumed
        resume = [*du, "--resume", "bench"]
        state = home / "state" / "scans" / "bench.json"
        emu.say("count")
        parts = []
        for k in range(args.kills):
            at = FOLDERS * (k + 1) // (args.kills + 1)
            fig = run(resume, env, tmp / "killed.json", kill_when=state, kill_at=at)
            fig["requests"] = int(emu.say("count"))
            listed = json.loads(state.read_bytes())["counts"]["listings"]
            parts.append(fig)
            print(f"killed (SIGKILL) with {listed:,} of {FOLDERS:,} folders in its last "
                  f"snapshot: {fig['wall']:.1f} s, {fig['requests']:,} requests", flush=True)
        fig = run(resume, env, tmp / "resumed.json")
        fig["requests"] = int(emu.say("count"))
        parts.append(fig)
        resumed = totals(tmp / "resumed.json")
        same = (whole is None or resumed == whole) \
            and [resumed[0]["files"], resumed[0]["size"]] == expected
        print(f"resumed to the end: {fig['wall']:.1f} s, {fig['cpu']:.1f} s CPU, "
              f"{fig['requests']:,} requests, peak RSS {fig['rss_mib']:.1f} MiB; totals "
              f"equal to the tree's{'' if whole is None else ' and the uninterrupted run'}"
              f"'s: {'yes' if same else 'NO'} ({resumed[0]['files']:,} files, "
              f"{resumed[0]['size']:,} bytes, {resumed[0]['folders']:,} folders)")
        print(f"requests of the killed and resumed scan: "
              f"{sum(int(p['requests']) for p in parts):,}"
              + (f" (uninterrupted: {rows[-1]['requests']:,})" if rows else ""))
        if not same:
            raise SystemExit(1)
    finally:
        emu.stop()


if __name__ == "__main__":
    main()
