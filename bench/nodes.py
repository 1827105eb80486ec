"""Benchmark: node commands and the HTTP client against same-run baselines.

Run from the repository root::

    python bench/nodes.py [--runs N] [--requests N]

1. ``nodecli node list`` as a whole process (a local command: must not import the HTTP
   or crypto stacks) against ``python -c "import click"``. Target: within 2x.
2. ``GET /info`` through nodecli's client (one connection, Basic auth, retry policy,
   body limits) against the same requests made with a bare ``httpx2.Client`` (target:
   within 1.5x: the policy layer must be cheap) and, for information, with the standard
   library's ``http.client`` on one keep-alive connection; all against the emulator
   (plain HTTP) running as its own ``nodecli emulator serve`` process.
3. A bearer-authenticated ``POST /ops/transfers`` (the emulator verifies an RSA-2048
   signature per request) against the Basic ``GET /info`` of step 2: the cost of
   node-side token verification.

Only ratios against baselines measured in the same run are meaningful.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import child_env, time_process  # also puts the checkout on sys.path


def _median(fn, runs: int) -> float:
    fn()  # warm-up (byte-code cache, connection)
    return statistics.median(fn() for _ in range(runs))


def _interleaved(fns: list, runs: int) -> list[float]:
    """Medians of ``runs`` rounds, each round running every function once (fair to all)."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for i, fn in enumerate(fns):
            times[i].append(fn())
    return [statistics.median(t) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--requests", type=int, default=300)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = child_env(home)
        from nodecli.config.model import NodeProfile, NodeUser, TransferUser
        from nodecli.config.paths import resolve_paths
        from nodecli.config.store import ConfigStore
        from nodecli.passwords import hash_password

        paths = resolve_paths(home)
        with ConfigStore(paths).edit() as cfg:
            cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
            cfg.users["admin"] = NodeUser("admin", "xfer", hash_password("pw"), ["admin"])
            for i in range(20):
                cfg.nodes[f"n{i}"] = NodeProfile(f"n{i}", f"https://n{i}:9092", user="admin")

        # 1. local command start-up
        base = _median(lambda: time_process([sys.executable, "-c", "import click"], env), args.runs)
        ours = _median(lambda: time_process([sys.executable, "-m", "nodecli", "node", "list"], env),
                       args.runs)
        print(f"node list process: {ours * 1000:.0f} ms vs 'import click' "
              f"{base * 1000:.0f} ms: ratio {ours / base:.2f} (target <= 2)")

        # 2. client overhead against http.client
        from nodecli.http import Auth, Endpoint, open_client

        # the emulator in its own process, as in real use (no GIL shared with the client)
        port_file = Path(tmp) / "port"
        proc = subprocess.Popen([sys.executable, "-m", "nodecli", "emulator", "serve",
                                 "--no-tls", "--port", "0", "--port-file", str(port_file)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not (port_file.exists() and port_file.read_text().endswith("\n")):
            time.sleep(0.05)
        n = args.requests
        try:
            basic = "Basic " + base64.b64encode(b"admin:pw").decode()
            host, port = "127.0.0.1", int(port_file.read_text())
            url = f"http://{host}:{port}"

            def stdlib() -> float:
                conn = http.client.HTTPConnection(host, port, timeout=30)
                start = time.perf_counter()
                for _ in range(n):
                    conn.request("GET", "/info", headers={"Authorization": basic})
                    resp = conn.getresponse()
                    resp.read()
                    assert resp.status == 200
                conn.close()
                return time.perf_counter() - start

            client = open_client(Endpoint(url, Auth("basic", "admin", "pw")))

            def nodecli_client() -> float:
                start = time.perf_counter()
                for _ in range(n):
                    client.json("GET", "/info")
                return time.perf_counter() - start

            import httpx2

            raw = httpx2.Client()

            def plain_httpx() -> float:
                start = time.perf_counter()
                for _ in range(n):
                    resp = raw.get(url + "/info", headers={"Authorization": basic})
                    assert resp.status_code == 200
                return time.perf_counter() - start

            t_std, t_httpx, t_ours = _interleaved([stdlib, plain_httpx, nodecli_client],
                                                  args.runs)
            print(f"GET /info x{n}: nodecli client {t_ours * 1000 / n:.2f} ms/req vs "
                  f"bare httpx2 {t_httpx * 1000 / n:.2f} ms/req: ratio "
                  f"{t_ours / t_httpx:.2f} (target <= 1.5); vs http.client "
                  f"{t_std * 1000 / n:.2f} ms/req: ratio {t_ours / t_std:.2f}")

            # 3. bearer verification on the node side
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import rsa

            from nodecli.node.access_keys import create_access_key, set_verification_key
            from nodecli.tokens import create_token

            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            create_access_key(client, "local", "/data", "akb", "s")
            set_verification_key(client, "akb", key.public_key().public_bytes(
                serialization.Encoding.PEM,
                serialization.PublicFormat.SubjectPublicKeyInfo).decode())
            bearer = open_client(Endpoint(url, Auth(
                "bearer", token=create_token(key, "akb", "u"), access_key="akb")))

            def bearer_posts() -> float:
                start = time.perf_counter()
                for _ in range(n):
                    bearer.json("POST", "/ops/transfers", json_body={"x": 1})
                return time.perf_counter() - start

            t_bearer = _median(bearer_posts, args.runs)
            print(f"POST /ops/transfers with bearer x{n}: {t_bearer * 1000 / n:.2f} ms/req vs "
                  f"Basic GET /info {t_ours * 1000 / n:.2f} ms/req: ratio "
                  f"{t_bearer / t_ours:.2f}")
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
