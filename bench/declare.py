"""export / diff / apply at scale (ratios against a same-run baseline, request counts).

    python bench/declare.py [--runs 7] [--users 10000] [--permissions 1000]

* ``diff -f`` of a document of 10,000 node users (nothing to change) against
  ``user list`` of the same 10,000 users: the medians of wall and CPU time, taking turns
  (goal: at most 2x); as JSON, as YAML read again (its parse cache used, as ``user
  list`` uses the config's), and as YAML edited before each run (a first read: composed
  by PyYAML, then cached);
* against the emulator over HTTPS (its own thread here, its CA): ``apply -f`` of a key
  with 1,000 permissions, then the requests each apply sends that change something:
  the first (one per object: 1 + 1,000), a second (none: nothing changed), one after a
  single permission changed (exactly 1); and the wall time of the 10,000 users and 1,000
  permissions ``diff`` in one process.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import child_env, write_users_config  # also puts the checkout on sys.path

FIRST_READ = "diff -f (yaml, edited)"


def timed(cmd: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}: {proc.stderr.decode()}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def nodecli(*args: str) -> list[str]:
    return [sys.executable, "-m", "nodecli", *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--permissions", type=int, default=1_000)
    args = parser.parse_args()
    from nodecli.users.passwords import hash_password

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        write_users_config(home, args.users, hash_password("pw", log_n=4))
        env = child_env(home)
        doc = Path(tmp) / "users.yaml"
        doc.write_bytes(subprocess.run(nodecli("export", "--local"), env=env, check=True,
                                       capture_output=True).stdout)
        doc_json = Path(tmp) / "users.json"
        doc_json.write_bytes(subprocess.run(nodecli("export", "--local", "-o", "json"), env=env,
                                            check=True, capture_output=True).stdout)
        edited = Path(tmp) / "edited.yaml"
        edited.write_bytes(doc.read_bytes())
        cases = {"user list": nodecli("user", "list"),
                 "diff -f (json)": nodecli("diff", "-f", str(doc_json)),
                 "diff -f (yaml)": nodecli("diff", "-f", str(doc)),
                 FIRST_READ: nodecli("diff", "-f", str(edited))}
        for cmd in cases.values():
            timed(cmd, env)  # warm the byte-code cache
        results: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
        for run in range(args.runs):
            for name, cmd in cases.items():
                if name == FIRST_READ:  # other bytes: the parse cache does not hold them
                    with edited.open("a") as f:
                        f.write(f"# edit {run}\n")
                results[name].append(timed(cmd, env))
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for k, v in results.items()}
        base = med["user list"]
        print(f"{args.users} users: user list {base[0] * 1000:.0f} ms wall / "
              f"{base[1] * 1000:.0f} ms CPU")
        for name in ("diff -f (json)", "diff -f (yaml)", FIRST_READ):
            mine = med[name]
            print(f"  {name}: {mine[0] * 1000:.0f} ms / {mine[1] * 1000:.0f} ms: "
                  f"{mine[0] / base[0]:.2f}x wall, {mine[1] / base[1]:.2f}x CPU (goal <= 2.0x) "
                  f"{'ok' if mine[1] / base[1] <= 2.0 else '--'}")
        node_part(Path(tmp), home, doc, args.users, args.permissions)


def node_part(tmp: Path, home: Path, users_doc: Path, n_users: int, n_perms: int) -> None:
    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.app import build_server, ca_file
    from nodecli.emulator.storage import storage_of

    emu_home = tmp / "emu"
    emu_paths = resolve_paths(emu_home)
    write_users_config(emu_home, 1, _admin_hash())
    server = build_server(emu_paths, tls=True).start()
    seen: list[str] = []
    server.access_log = seen.append
    try:
        st = storage_of(server.state)
        folders = max(1, n_perms // 20)
        for i in range(folders):
            st.ensure(f"/data/p{i}", "folder")
        env = child_env(home, NODECLI_URL=server.url, NODECLI_USER="user00000",
                        NODECLI_PASSWORD="pw", NODECLI_CACERT=ca_file(emu_paths))
        perms = "".join(f"      - {{path: /p{i % folders}, user: u{i}, levels: [read]}}\n"
                        for i in range(n_perms))
        text = users_doc.read_text() + ("access_keys:\n  big:\n    storage: {path: /data}\n"
                                        "    permissions:\n" + perms)
        doc = tmp / "all.yaml"
        doc.write_text(text)

        def writes() -> int:
            n = sum(1 for line in seen if '"' in line and
                    line.split('"', 1)[1].split(" ")[0] not in ("GET", "HEAD"))
            seen.clear()
            return n

        wall, _ = timed(nodecli("apply", "-f", str(doc)), env)
        print(f"apply of {n_perms} permissions (+1 key): {writes()} writing requests "
              f"(goal {n_perms + 1}), {wall:.2f} s")
        wall, _ = timed(nodecli("diff", "-f", str(doc)), env)
        print(f"diff of {n_users} users and {n_perms} permissions in one process: "
              f"{wall:.2f} s, {len(seen)} reads")
        writes()
        timed(nodecli("apply", "-f", str(doc)), env)
        print(f"second apply: {writes()} writing requests (goal 0)")
        doc.write_text(text.replace("user: u7, levels: [read]", "user: u7, levels: [list]"))
        timed(nodecli("apply", "-f", str(doc)), env)
        print(f"one permission changed: {writes()} writing request(s) (goal 1)")
    finally:
        server.stop()


def _admin_hash() -> str:
    from nodecli.users.passwords import hash_password

    return hash_password("pw", log_n=4)


if __name__ == "__main__":
    main()
