"""What every benchmark shares: the child environment and timing one process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
#: The checkout whose nodecli the children run (``--checkout``: another one, e.g. an older
#: commit, measured against the same emulator and floors).
CLIENT_ROOT = ROOT


def use_checkout(path: str | None) -> None:
    global CLIENT_ROOT
    if path:
        CLIENT_ROOT = Path(path).resolve()


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment for a nodecli child: its own home, no colour, and byte-code cached as
    after a pip install (the dev shell may set PYTHONDONTWRITEBYTECODE, which makes every
    start compile nodecli again)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(home.parent / "pycache")
    env["PYTHONPATH"] = str(CLIENT_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["NODECLI_HOME"] = str(home)
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def measure_process(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall and CPU seconds and peak RSS (MiB) of one run of ``cmd``, which must succeed
    (its output is dropped; its error text is shown if it fails)."""
    start = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        proc = subprocess.Popen(cmd, env=env, stdout=devnull, stderr=subprocess.PIPE)
        _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"command failed: {' '.join(cmd)}\n{err}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mib": usage.ru_maxrss / 1024}


def time_process(cmd: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one run of ``cmd`` (which must succeed)."""
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def write_users_config(home: Path, n_users: int, password_hash: str) -> None:
    """A config.toml with ``n_users`` node users sharing one hash, written directly (not
    by thousands of CLI calls)."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines = ["version = 1", "", "[transfer_users.aspera]", 'restrictions = ["file:////data/*"]',
             ""]
    for i in range(n_users):
        lines += [f"[users.user{i:05d}]", 'transfer_user = "aspera"',
                  f'password = "{password_hash}"', 'acls = ["admin"]', ""]
    path = home / "config.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    path.chmod(0o600)


# -- emulated nodes ----------------------------------------------------------------------

PY = sys.executable
ADMIN_PASSWORD = "admin-pass"


def nodecli_argv(*args: str) -> list[str]:
    return [PY, "-m", "nodecli", *args]


def fleet_home(tmp: Path) -> tuple[Path, dict[str, str]]:
    """A home whose config.toml holds the node user ``admin`` (the user the emulated
    nodes of :func:`serve_nodes` check), and the environment of a nodecli child on it."""
    from nodecli.users.passwords import hash_password

    home = tmp / "home"
    home.mkdir(mode=0o700, parents=True)
    (home / "config.toml").write_text(
        'version = 1\n\n[transfer_users.xfer]\nrestrictions = ["file:////data/*"]\n\n'
        '[users.admin]\ntransfer_user = "xfer"\n'
        f'password = "{hash_password(ADMIN_PASSWORD, log_n=4)}"\nacls = ["admin"]\n')
    return home, child_env(home)


def serve_nodes(home: Path, count: int, events: int) -> tuple[
        subprocess.Popen[str], list[int], str]:
    """One emulator process (this checkout's emulator, whatever nodecli the children
    run) with ``count`` nodes over HTTPS, each holding ``events`` events: the process,
    the nodes' ports and the CA file."""
    port_file = home.parent / f"ports-{count}-{time.monotonic_ns()}"
    code = (
        "import sys, threading\n"
        "from nodecli.config.paths import resolve_paths\n"
        "from nodecli.emulator.app import build_server, ca_file\n"
        "from nodecli.emulator.events import log_for\n"
        f"paths = resolve_paths({str(home)!r})\n"
        f"servers = [build_server(paths, persist=False).start() for _ in range({count})]\n"
        f"for s in servers: log_for(s.state).generate({events})\n"
        f"open({str(port_file)!r}, 'w').write(''.join(f'{{s.port}}\\n' for s in servers))\n"
        "print(ca_file(paths), flush=True)\n"
        "threading.Event().wait()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([PY, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ca = proc.stdout.readline().strip()
    ports = [int(p) for p in port_file.read_text().split()]
    return proc, ports, ca


def add_profiles(env: dict[str, str], ports: list[int], ca: str, prefix: str) -> list[str]:
    """A node profile per port (``node add``, the password in the secret store) named
    ``prefix`` and a number; their names."""
    names = []
    for i, port in enumerate(ports):
        name = f"{prefix}{i:02d}"
        subprocess.run(nodecli_argv("node", "add", name, "--url", f"https://localhost:{port}",
                                    "--user", "admin", "--cacert", ca, "--password-stdin"),
                       input=ADMIN_PASSWORD + "\n", env=env, check=True, text=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        names.append(name)
    return names


def write_profiles(env: dict[str, str], ports: list[int], ca: str, prefix: str) -> list[str]:
    """As :func:`add_profiles`, but written at once by the children's own nodecli (its
    config store and secret file: hundreds of ``node add`` would take minutes)."""
    names = [f"{prefix}{i:03d}" for i in range(len(ports))]
    code = (
        "import sys\n"
        "from nodecli.config.model import NodeProfile\n"
        "from nodecli.config.paths import resolve_paths\n"
        "from nodecli.config.secrets import FileBackend\n"
        "from nodecli.config.store import ConfigStore\n"
        "paths = resolve_paths(None)\n"
        "names, ports = sys.argv[2::2], sys.argv[3::2]\n"
        "with ConfigStore(paths).edit() as cfg:\n"
        "    for name, port in zip(names, ports):\n"
        "        cfg.nodes[name] = NodeProfile(name, f'https://localhost:{port}', user='admin',"
        " cacert=sys.argv[1])\n"
        "secrets = FileBackend(paths)\n"
        f"for name in names: secrets.set(f'node:{{name}}', {ADMIN_PASSWORD!r})\n")
    argv = [a for name, port in zip(names, ports, strict=True) for a in (name, str(port))]
    subprocess.run([PY, "-c", code, ca, *argv], env=env, check=True)
    return names


class Emulator:
    """The bench emulator (bench/events.py --serve, this checkout's) in its own process,
    over HTTPS: one node whose log grows on demand."""

    def __init__(self, home: Path, *, keep_alive: bool = False) -> None:
        argv = [PY, str(ROOT / "bench" / "events.py"), "--serve", str(home)]
        self.proc = subprocess.Popen(argv + (["--keep-alive"] if keep_alive else []),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url, self.ca = self.proc.stdout.readline().split()

    def generate(self, count: int) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{count}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def env(self, home: Path) -> dict[str, str]:
        return child_env(home, NODECLI_URL=self.url, NODECLI_USER="bench",
                         NODECLI_PASSWORD="bench-pass", NODECLI_CACERT=self.ca)

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()
