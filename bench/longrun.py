"""The long run: two bearer-token `events tail -f --to FILE` through token rotations, a
restart and an outage of a node, while events keep coming; then what was lost or
written twice. Not a ratio: the figures of issue 21's closing note.

One tail reads a token file that this script replaces every --rotate-every seconds; the
other uses a node profile that mints its own tokens. The node (the emulator, HTTPS, in
this process) accepts a token for --token-max-age seconds after its first use, so both
tails must renew; it restarts once (down --restart-down seconds) and is out once for
--outage seconds.

    python bench/longrun.py                    # a one-minute outage (about 2.5 minutes)
    python bench/longrun.py --outage 5 --phase 5   # a quick look
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
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--outage", type=float, default=60.0)
    ap.add_argument("--restart-down", type=float, default=2.0)
    ap.add_argument("--phase", type=float, default=20.0, help="seconds between the events")
    ap.add_argument("--token-max-age", type=float, default=10.0)
    ap.add_argument("--rotate-every", type=float, default=6.0)
    ap.add_argument("--event-rate", type=float, default=50.0)
    args = ap.parse_args()

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.app import build_server, ca_file, restart
    from nodecli.emulator.events import log_for
    from nodecli.emulator.storage import Permission, storage_of
    from nodecli.tokens.wire import create_token

    tmp = Path(tempfile.mkdtemp(prefix="nodecli-longrun-"))

    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # a run leaves nothing in /tmp
    home = tmp / "home"
    paths = resolve_paths(str(home))
    server = build_server(paths, persist=False).start()
    state = server.state
    state.token_max_age = args.token_max_age
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_file = tmp / "ak1.pem"
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.private_bytes(serialization.Encoding.PEM,
                                   serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))
    ak = state.create_access_key("admin", {"id": "ak1", "secret": "s",
                                           "storage": {"type": "local", "path": "/data"}})
    ak.token_verification_key = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    storage = storage_of(state)
    folder = storage.ensure("/data/shared", "folder")
    storage.permissions["p1"] = Permission("p1", folder.id, "user", "alice", ["read"])
    log = log_for(state)
    expected: list[str] = []
    lock = threading.Lock()

    def event() -> None:
        node = storage.ensure(f"/data/shared/f{len(expected) + 1}.txt", "file", 1)
        stored = log.append({"user_id": "svc", "types": ["file.created"],
                             "data": {"id": node.id, "path": node.path, "type": "file"}})
        with lock:
            expected.append(str(stored["id"]))

    def token() -> str:
        return create_token(key, "ak1", "alice", role="user",
                            expires_at=datetime.now(UTC) + timedelta(hours=1))

    tok = tmp / "tok.txt"

    def write_token() -> None:
        new = tok.with_name("tok.new")
        new.write_text(token() + "\n")
        os.replace(new, tok)

    write_token()
    env = {**os.environ, "NODECLI_HOME": str(home), "NODECLI_CACERT": ca_file(paths),
           "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONUNBUFFERED", None)
    nodecli = [sys.executable, "-m", "nodecli"]
    subprocess.run([*nodecli, "node", "add", "alice", "--url", server.url, "--access-key",
                    "ak1", "--mint-key", str(key_file), "--mint-user-id", "alice",
                    "--mint-ttl", "1h"], env=env, check=True, capture_output=True)
    outs = {"token file": tmp / "file.jsonl", "minting profile": tmp / "mint.jsonl"}
    login = {"token file": ["--url", server.url, "--access-key", "ak1", "--bearer-file",
                            str(tok)], "minting profile": ["--node", "alice"]}
    procs = {name: subprocess.Popen(
        [*nodecli, "events", "tail", "-f", "--to", str(outs[name]), "--iteration-token", "0",
         "--interval", "0.5", *login[name]], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE) for name in outs}
    stop, stop_rotating = threading.Event(), threading.Event()
    rotations = [0]

    def produce() -> None:
        while not stop.wait(1 / args.event_rate):
            event()

    def rotate() -> None:  # as long as the tails run: their last token must not expire
        while not stop_rotating.wait(args.rotate_every):
            write_token()
            rotations[0] += 1

    threads = [threading.Thread(target=produce), threading.Thread(target=rotate)]
    started = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(args.phase)
    server = restart(server, args.restart_down) or server
    time.sleep(args.phase)
    server = restart(server, args.outage) or server
    time.sleep(args.phase)
    stop.set()
    threads[0].join()

    def ids(path: Path) -> list[str]:
        return [json.loads(line)["id"] for line in path.read_text().splitlines() if line] \
            if path.exists() else []

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(len(ids(p)) < len(expected)
                                              for p in outs.values()):
        time.sleep(0.5)
    duration = time.monotonic() - started
    for proc in procs.values():
        proc.send_signal(signal.SIGTERM)
    errors = {name: proc.communicate(timeout=30)[1] for name, proc in procs.items()}
    stop_rotating.set()
    threads[1].join()
    print(f"duration {duration:.0f} s; events {len(expected)}; restart down "
          f"{args.restart_down:g} s; outage {args.outage:g} s; node accepts a token "
          f"{args.token_max_age:g} s after first use; token file replaced {rotations[0]} "
          f"times; distinct tokens the node saw {len(state._token_first_seen)}")
    for name, proc in procs.items():
        err = errors[name]
        got = ids(outs[name])
        lost = len(set(expected) - set(got))
        twice = len(got) - len(set(got))
        reconnects = err.decode().count("reconnecting")
        print(f"{name:16} exit {proc.returncode}; written {len(got)}; lost {lost}; "
              f"written twice {twice}; in order {got == expected[:len(got)]}; "
              f"reconnect messages {reconnects}")
    server.stop()


if __name__ == "__main__":
    main()
