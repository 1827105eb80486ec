"""``access what-can`` over 1,000 permissions: the model alone, and the whole command.

    python bench/access.py [--perms 1000] [--folders 250] [--runs 5]

The storage: FOLDERS folders four levels deep (and one file in each), PERMS permissions
spread over them for 20 users and 8 groups. Rows (medians of ``--runs``):

* ``model what_can``: :meth:`Model.what_can` for one user (3 groups) over every folder,
  in this process (the decision alone);
* ``model who_can``: :meth:`Model.who_can` at every folder (an auditor's sweep);
* ``nodecli access what-can``: the command end to end, a child process over HTTPS to
  the emulator (in this process, its own thread): the key's survey (every folder listed,
  every entry's permissions asked) and the model, ``-o json``;
* the same with ``--verify`` (a token minted, every entry stat'ed and every folder
  listed as the user).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import child_env

PY = sys.executable


def build_tree(folders: int, rng: random.Random) -> list[str]:
    paths = ["/data"]
    while len(paths) < folders + 1:
        base = rng.choice([p for p in paths if p.count("/") < 5])
        paths.append(f"{base}/f{len(paths)}")
    return paths[1:]


def perms_for(paths: list[str], n: int,
              rng: random.Random) -> list[tuple[str, str, str, list[str]]]:
    from nodecli.node.access_model import LEVELS

    out = []
    for _ in range(n):
        kind = rng.choice(["user", "group"])
        who = f"u{rng.randrange(20)}" if kind == "user" else f"g{rng.randrange(8)}"
        out.append((rng.choice(paths), kind, who, rng.sample(LEVELS, rng.randint(1, 3))))
    return out


def median_of(runs: int, fn) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--perms", type=int, default=1000)
    ap.add_argument("--folders", type=int, default=250)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(7)
    paths = build_tree(args.folders, rng)
    perms = perms_for(paths, args.perms, rng)

    from nodecli.node.access_model import Model, Perm, Subject, user_scope

    model = Model("ak", "/data", [Perm(str(i), p, k, w, tuple(lv))
                                  for i, (p, k, w, lv) in enumerate(perms, 1)])
    subject = Subject("u3", ("g1", "g2", "g5"), user_scope("ak"))
    seen = model.what_can(subject, ["/data", *paths])
    t_what = median_of(args.runs, lambda: model.what_can(subject, ["/data", *paths]))
    t_who = median_of(args.runs, lambda: [model.who_can(p) for p in paths])
    print(f"storage: {len(paths)} folders (+1 file each), {len(perms)} permissions; "
          f"user u3 sees {len(seen)} folders")
    print(f"model what_can              {t_what * 1000:8.1f} ms")
    print(f"model who_can, every folder {t_who * 1000:8.1f} ms")

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.app import build_server, ca_file
    from nodecli.emulator.storage import Permission, storage_of

    with tempfile.TemporaryDirectory() as tmp:
        emu_paths = resolve_paths(Path(tmp) / "emu")
        server = build_server(emu_paths, tls=True, persist=False).start()
        try:
            state = server.state
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            ak = state.create_access_key("admin", {"id": "ak", "secret": "s",
                                                   "storage": {"type": "local",
                                                               "path": "/data"}})
            ak.token_verification_key = key.public_key().public_bytes(
                serialization.Encoding.PEM,
                serialization.PublicFormat.SubjectPublicKeyInfo).decode()
            st = storage_of(state)
            for p in paths:
                st.ensure(p + "/file.txt", "file", 1)
            for i, (p, k, w, lv) in enumerate(perms, 1):
                st.permissions[str(i)] = Permission(str(i), st.ensure(p).id, k, w, lv)
            home = Path(tmp) / "home"
            (home / "keys" / "ak").mkdir(parents=True)
            pem = home / "keys" / "ak" / "private.pem"
            pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                              serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
            pem.chmod(0o600)
            env = child_env(home, NODECLI_URL=server.url, NODECLI_ACCESS_KEY="ak",
                            NODECLI_PASSWORD="s", NODECLI_CACERT=ca_file(emu_paths))
            base = [PY, "-m", "nodecli", "access", "what-can", "--user-id", "u3",
                    "--group-id", "g1", "--group-id", "g2", "--group-id", "g5", "-o", "json"]

            def run(*extra: str) -> None:
                subprocess.run([*base, *extra], env=env, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

            t_cmd = median_of(args.runs, run)
            t_verify = median_of(args.runs, lambda: run("--verify"))
        finally:
            server.stop()
    entries = 1 + 2 * len(paths)
    print(f"nodecli access what-can     {t_cmd * 1000:8.1f} ms  (survey of {entries} "
          f"entries over HTTPS)")
    print(f"  ... --verify              {t_verify * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
