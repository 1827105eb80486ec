"""Benchmark: bearer-token creation and RSA key generation against same-run baselines.

Run from the repository root::

    python bench/tokens.py [--runs N] [--keygen-runs N]

1. Token creation with an existing 4096-bit key, whole process
   (``python -m nodecli token create ...``, password from NODECLI_PASSWORD, default
   scrypt cost), against ``python -c "import cryptography.hazmat.primitives.asymmetric.rsa"``.
   Target: within 3x. The password check is a deliberate cost; its in-process time is
   measured too and the ratio without it is printed alongside.
2. Key generation at 2048 and 4096 bits against ``openssl genrsa`` (whole process each,
   plus the in-process generation call), medians of several runs because RSA
   generation time varies a lot from run to run. Target: within 1.2x.

Only ratios against baselines measured in the same run are meaningful.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import child_env, time_process  # also puts the checkout on sys.path

PASSWORD = "bench-password-1"


def _setup(home: Path) -> Path:
    from nodecli.config.model import NodeUser, TransferUser
    from nodecli.config.paths import resolve_paths
    from nodecli.config.store import ConfigStore
    from nodecli.tokens.keys import generate_key_pair
    from nodecli.users.passwords import hash_password

    paths = resolve_paths(home)
    with ConfigStore(paths).edit() as cfg:
        cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
        cfg.users["admin"] = NodeUser("admin", "xfer", hash_password(PASSWORD))
    key = home / "keys" / "bench" / "private.pem"
    generate_key_pair(key, 4096, state_dir=paths.state_dir)
    return key


def bench_token(runs: int) -> None:
    from nodecli.config.paths import resolve_paths
    from nodecli.config.store import ConfigStore
    from nodecli.users.passwords import verify_password

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        key = _setup(home)
        env = child_env(home, NODECLI_PASSWORD=PASSWORD)
        create = [sys.executable, "-m", "nodecli", "token", "create", "-u", "admin",
                  "--access-key", "AKbench", "--user-id", "alice", "--key-file-path", str(key)]
        baseline = [sys.executable, "-c", "import cryptography.hazmat.primitives.asymmetric.rsa"]
        time_process(create, env)  # warm the file cache (and the key-validation record)
        time_process(baseline, env)
        ours, base = [], []
        for _ in range(runs):
            ours.append(time_process(create, env))
            base.append(time_process(baseline, env))
        phc = ConfigStore(resolve_paths(home)).load().users["admin"].password_hash
        pw = []
        for _ in range(5):
            t = time.perf_counter()
            verify_password(PASSWORD, phc)
            pw.append(time.perf_counter() - t)
        # the same command when the key has never been validated before (first use)
        cold = []
        for _ in range(3):
            (home / "state" / "validated-keys.json").unlink(missing_ok=True)
            cold.append(time_process(create, env))
    m_ours, m_base, m_pw = (statistics.median(x) for x in (ours, base, pw))
    print(f"token create (4096-bit key, whole process), median of {runs}:")
    print(f"  nodecli token create          {m_ours * 1000:7.1f} ms")
    print(f"  python -c 'import ...rsa'     {m_base * 1000:7.1f} ms")
    print(f"  ratio                         {m_ours / m_base:7.2f}x   (target <= 3x)")
    print(f"  of which password check       {m_pw * 1000:7.1f} ms (scrypt ln=15, in-process)")
    print(f"  ratio without password check  {(m_ours - m_pw) / m_base:7.2f}x")
    print(f"  first use (key validation)    {statistics.median(cold) * 1000:7.1f} ms "
          "(once per key: later runs skip RSA validation)")


def bench_keygen(runs: int, bits_list: list[int]) -> None:
    from nodecli.tokens.keys import generate_private_key

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = child_env(home, NODECLI_PASSWORD=PASSWORD)
        for bits in bits_list:
            ours, openssl, inproc = [], [], []
            for i in range(runs):
                ours.append(time_process([sys.executable, "-m", "nodecli", "key", "generate",
                                   str(Path(tmp) / f"k{bits}-{i}.pem"), "--bits", str(bits)], env))
                out = str(Path(tmp) / f"o{bits}-{i}.pem")
                openssl.append(time_process(["openssl", "genrsa", "-out", out, str(bits)], env))
                t = time.perf_counter()
                generate_private_key(bits)
                inproc.append(time.perf_counter() - t)
            m_ours, m_ossl, m_in = (statistics.median(x) for x in (ours, openssl, inproc))
            print(f"key generation {bits} bits, median of {runs}:")
            print(f"  nodecli key generate (process) {m_ours * 1000:7.1f} ms")
            print(f"  generate_private_key (in-proc) {m_in * 1000:7.1f} ms")
            print(f"  openssl genrsa (process)       {m_ossl * 1000:7.1f} ms")
            print(f"  ratio process/process          {m_ours / m_ossl:7.2f}x   (target <= 1.2x)")
            print(f"  ratio in-process/openssl       {m_in / m_ossl:7.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--keygen-runs", type=int, default=9)
    parser.add_argument("--bits", type=int, nargs="*", default=[2048, 4096])
    args = parser.parse_args()
    bench_token(args.runs)
    bench_keygen(args.keygen_runs, args.bits)


if __name__ == "__main__":
    main()
