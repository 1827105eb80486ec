"""`nodecli emulator serve` as a real process, and emulator state across restarts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import nodecli_cmd, subprocess_env


def _add_admin(home: Path, password: str = "admin-pass") -> None:  # noqa: S107
    from nodecli.config.model import NodeUser, TransferUser
    from nodecli.config.paths import resolve_paths
    from nodecli.config.store import ConfigStore
    from nodecli.users.passwords import hash_password

    with ConfigStore(resolve_paths(home)).edit() as cfg:
        cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
        cfg.users["admin"] = NodeUser("admin", "xfer", hash_password(password, log_n=4),
                                      ["admin"])


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            text = path.read_text()
            if text.endswith("\n"):
                return text.strip()
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"emulator exited {proc.returncode}: {out} {err}")
        time.sleep(0.05)
    raise AssertionError("the emulator never wrote its port file")


@pytest.fixture
def serve(home, tmp_path):
    procs: list[subprocess.Popen] = []

    def _serve(*extra: str) -> tuple[subprocess.Popen, int, Path]:
        port_file = tmp_path / f"port{len(procs)}"
        proc = subprocess.Popen(
            nodecli_cmd("emulator", "serve", "--port", "0", "--port-file", str(port_file),
                        *extra),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env())
        procs.append(proc)
        port = int(_wait_for(port_file, proc).split()[0])
        return proc, port, port_file

    yield _serve
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_serve_https_then_node_info_with_printed_cacert(serve, invoke, home):
    _add_admin(home)
    proc, port, port_file = serve()
    ca = home / "state" / "emulator" / "tls" / "ca.pem"
    url = f"https://localhost:{port}"
    r = invoke("node", "info", "--url", url, "--cacert", str(ca), "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r
    assert "transfer user  xfer" in r.stdout
    refused = invoke("node", "info", "--url", url, "--user", "admin", "--password-stdin",
                     input="admin-pass\n")
    assert refused.exit_code == 6

    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"url     {url}" in out
    assert f"cacert  {ca}" in out
    assert not port_file.exists()  # removed on a clean stop


def test_serve_writes_a_service_token_the_operations_commands_accept(serve, invoke, home,
                                                                       tmp_path):
    token_file = tmp_path / "svc.tok"
    _proc, port, _ = serve("--no-tls", "--service-token-file", str(token_file))
    assert oct(token_file.stat().st_mode & 0o777) == "0o600"
    url = f"http://127.0.0.1:{port}"
    created = invoke("workspaces", "create", "--name", "demo", "--url", url,
                     "--token-file", str(token_file))
    assert created.exit_code == 0, created
    listed = invoke("operations", "list", "--url", url, "--token-file", str(token_file),
                    "-o", "json")
    assert listed.exit_code == 0, listed
    assert [op["type"] for op in json.loads(listed.stdout)] == ["workspace.create"]
    inspected = invoke("token", "inspect", str(token_file.read_text().strip()), "-o", "json")
    assert inspected.exit_code == 0, inspected
    assert "user:all" in inspected.stdout


def test_serve_plain_http_with_version_and_sigint(serve, invoke, home):
    _add_admin(home)
    proc, port, _ = serve("--no-tls", "--node-version", "3.7.4")
    r = invoke("node", "info", "--url", f"http://127.0.0.1:{port}", "--user", "admin",
               "-o", "json", env={"NODECLI_PASSWORD": "admin-pass"})
    assert r.exit_code == 0, r
    assert '"version": "3.7.4"' in r.stdout
    proc.send_signal(signal.SIGINT)
    out, _err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "cacert" not in out


def test_one_process_serves_several_nodes(serve, invoke, home, tmp_path):
    _add_admin(home)
    proc, _port, port_file = serve("--nodes", "3", "--event-rate", "40")
    ports = [int(p) for p in port_file.read_text().split()]
    assert len(set(ports)) == 3
    ca = home / "state" / "emulator" / "tls" / "ca.pem"
    for i, port in enumerate(ports):
        r = invoke("node", "add", f"n{i}", "--url", f"https://localhost:{port}", "--user",
                   "admin", "--cacert", str(ca), "--password-stdin", input="admin-pass\n")
        assert r.exit_code == 0, r.stderr
    r = invoke("node", "info", "--all-nodes", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert sorted(row["node"] for row in json.loads(r.stdout)) == ["n0", "n1", "n2"]
    end = time.monotonic() + 60  # a ceiling for a hung emulator, not a guess
    while True:  # until each node's own generator has logged (an event, not a sleep)
        r = invoke("events", "list", "--all-nodes", "--since", "1h", "-o", "json")
        docs = json.loads(r.stdout)
        if all(d["events"] for d in docs) or time.monotonic() > end:
            break
        time.sleep(0.1)
    assert len(docs) == 3 and all(d["events"] for d in docs)
    proc.send_signal(signal.SIGTERM)
    out, _err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert [line.split()[1] for line in out.splitlines() if line.startswith("url")] == [
        f"https://localhost:{p}" for p in ports]
    assert not port_file.exists()


def test_several_nodes_come_back_after_an_outage(serve, invoke, home):
    _add_admin(home)
    proc, _port, port_file = serve("--nodes", "2", "--outage-every", "2",
                                   "--outage-length", "0.3")
    ports = [int(p) for p in port_file.read_text().split()]
    ca = home / "state" / "emulator" / "tls" / "ca.pem"
    said = []
    for line in proc.stderr:  # the emulator tells each outage on stderr
        said.append(line)
        if "back up" in line:
            break
    assert any("outage: down for 0.3 s" in line for line in said)
    for port in ports:  # both serve again, on the same ports
        r = invoke("node", "info", "--url", f"https://localhost:{port}", "--cacert", str(ca),
                   "--user", "admin", "-o", "json", env={"NODECLI_PASSWORD": "admin-pass"})
        assert r.exit_code == 0, r.stderr
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_serve_port_in_use_is_one_clear_line(serve, run_cli, home):
    _add_admin(home)
    _proc, port, _ = serve("--no-tls")
    r = run_cli("emulator", "serve", "--no-tls", "--port", str(port))
    assert r.exit_code == 1
    assert "in use" in r.stderr and "--port 0" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "args",
    [("--fail-rate", "2"), ("--port", "70000"), ("--node-version", "x;y"),
     ("--access-key-header", "a b"), ("--fail-rate", "0.6", "--reset-rate", "0.6")],
)
def test_serve_rejects_bad_options(invoke, args):
    r = invoke("emulator", "serve", *args)
    assert r.exit_code == 2, r


def test_access_keys_and_verification_keys_survive_restart(tmp_path):
    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.app import build_server
    from nodecli.emulator.server import secret_digest

    paths = resolve_paths(tmp_path / "emu")
    first = build_server(paths, tls=False)
    first.state.create_access_key("admin", {"id": "keep", "secret": "s3",
                                            "storage": {"type": "local", "path": "/d"}})
    with first.state.lock:
        first.state.access_keys["keep"].token_verification_key = "PEM"
    first.state.save_access_keys()
    first.server_close()
    saved = Path(paths.state_dir) / "emulator" / "access_keys.json"
    assert oct(os.stat(saved).st_mode & 0o777) == "0o600"
    assert "s3" not in saved.read_text().replace(secret_digest("s3"), "")

    second = build_server(paths, tls=False)
    ak = second.state.access_keys["keep"]
    assert ak.secret_digest == secret_digest("s3")
    assert ak.token_verification_key == "PEM"
    assert ak.storage == {"type": "local", "path": "/d"}
    second.server_close()


def test_damaged_emulator_state_is_explained(invoke, home):
    folder = home / "state" / "emulator"
    folder.mkdir(parents=True)
    (folder / "access_keys.json").write_text("{not json")
    r = invoke("emulator", "serve", "--port", "0", "--no-tls")
    assert r.exit_code == 3
    assert "access_keys.json" in r.stderr and "remove the file" in r.stderr


def test_faults_clear_restores_every_default():
    """A test that narrows or slows the faults leaves nothing behind for the next one."""
    from nodecli.emulator.server import Faults

    faults = Faults()
    faults.fail_rate = faults.reset_rate = faults.slow_rate = 0.5
    faults.slow_seconds = 0.01
    faults.path_prefix = "/events"
    faults.push("503", "reset")
    faults.clear()
    fresh = Faults()
    assert (faults.fail_rate, faults.reset_rate, faults.slow_rate, faults.slow_seconds,
            faults.path_prefix, faults.queue) == (
        fresh.fail_rate, fresh.reset_rate, fresh.slow_rate, fresh.slow_seconds,
        fresh.path_prefix, [])
    assert faults.next_fault("/info") is None
