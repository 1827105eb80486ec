"""Commands that run for hours: bearer tokens that renew (a token file replaced, tokens
minted by a profile), a node that restarts or is down for a while, a clock that is
off, and token files kept fresh for other programs. Real sockets, HTTPS, real
processes; the emulator plays the node (tokens that die fast, restarts, skew)."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from nodecli.emulator.app import restart
from nodecli.emulator.events import log_for
from nodecli.emulator.storage import Permission, storage_of
from nodecli.errors import AuthError
from nodecli.http.client import Auth, open_client
from nodecli.tokens.source import FileToken, MintedToken
from nodecli.tokens.wire import create_token, decode_unverified
from tests.conftest import nodecli_cmd, reap, subprocess_env


class Bearer:
    """Access key ak1 on /data with a registered verification key, a folder /data/shared
    on which user alice holds a permission, and a way to make events she may see."""

    def __init__(self, emulator, tmp_path: Path) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.emulator, self.state = emulator, emulator.state
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.key_file = tmp_path / "ak1.pem"
        fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(self.key.private_bytes(serialization.Encoding.PEM,
                                            serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
        emulator.add_access_key("ak1", "ak1-secret")
        ak = self.state.access_keys["ak1"]
        ak.storage = {"type": "local", "path": "/data"}
        ak.token_verification_key = self.key.public_key().public_bytes(
            serialization.Encoding.PEM,
            serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        self.storage = storage_of(self.state)
        folder = self.storage.ensure("/data/shared", "folder")
        self.storage.permissions["p1"] = Permission("p1", folder.id, "user", "alice",
                                                    ["list", "read"])
        self.log = log_for(self.state)
        self.made = 0

    def token(self, ttl: float = 3600) -> str:
        from datetime import UTC, datetime, timedelta

        return create_token(self.key, "ak1", "alice", role="user",
                            expires_at=datetime.now(UTC) + timedelta(seconds=ttl))

    def event(self) -> str:
        self.made += 1
        node = self.storage.ensure(f"/data/shared/f{self.made}.txt", "file", 10)
        stored = self.log.append({"user_id": "svc", "types": ["file.created"],
                                  "data": {"id": node.id, "path": node.path, "size": 10,
                                           "type": "file"}})
        assert stored is not None
        return str(stored["id"])

    def tokens_seen(self) -> int:
        return len(self.state._token_first_seen)


@pytest.fixture
def bearer(emulator, tmp_path) -> Bearer:
    return Bearer(emulator, tmp_path)


def _client(emulator, source):
    c = open_client(emulator.endpoint(Auth("bearer", access_key="ak1",
                                           access_key_header="X-Vendor-AccessKey",
                                           source=source)))
    c._sleep = lambda s: None
    return c


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


# -- token sources -----------------------------------------------------------------------------

def test_a_token_file_is_read_again_when_replaced(tmp_path):
    path = tmp_path / "tok"
    _write_atomically(path, "Bearer one\n")
    source = FileToken(str(path))
    assert source.current() == "one"
    _write_atomically(path, "two-longer\n")
    assert source.current() == "two-longer"
    path.unlink()  # a writer between unlink and rename: the last good token stays
    assert source.current() == "two-longer"
    _write_atomically(path, "\n")  # empty for a moment: likewise
    assert source.current() == "two-longer"
    assert source.renew() is False
    assert source.seen() == ["one", "two-longer"]


def test_a_401_asks_a_minted_source_for_a_new_token_once(bearer, emulator):
    bearer.state.token_max_age = 0.3
    source = MintedToken(str(bearer.key_file), "ak1", "alice", ttl=3600)
    with _client(emulator, source) as client:
        assert client.json("GET", "/access_keys/self")["id"] == "ak1"
        time.sleep(0.4)
        assert client.json("GET", "/access_keys/self")["id"] == "ak1"  # 401, renew, retry
    assert source.minted == 2 and len(set(source.seen())) == 2
    claims = decode_unverified(source.current()).claims
    assert claims["user_id"] == "alice" and claims["scope"] == "node.ak1:user:all"


def test_a_401_with_nothing_newer_is_final(bearer, emulator, tmp_path):
    bearer.state.token_max_age = 0.2
    path = tmp_path / "tok"
    _write_atomically(path, bearer.token())
    with _client(emulator, FileToken(str(path))) as client:
        client.json("GET", "/access_keys/self")
        time.sleep(0.3)
        with pytest.raises(AuthError) as err:
            client.json("GET", "/access_keys/self")
    assert "after its first use" in err.value.message


def test_minted_tokens_are_renewed_before_they_end(bearer):
    now = [1_000_000.0]
    source = MintedToken(str(bearer.key_file), "ak1", "alice", ttl=100,
                         clock=lambda: now[0])
    first = source.current()
    now[0] += 50
    assert source.current() == first
    now[0] += 31  # less than the margin (20 s) is left
    assert source.current() != first and source.minted == 2
    second = source.current()
    assert source.renew() and source.current() != second  # never the same token again


# -- the emulator plays nodes that restart, and clocks that are off ----------------------------

def test_a_restarted_node_refuses_connections_then_serves_the_same_data(emulator, log, invoke,
                                                                      node_env):
    """Looked at while it is down (the restart's own hook), not after a sleep that
    hopes the restart is still under way."""
    import socket

    log.generate(5)
    before = emulator.server
    port = int(emulator.url.rsplit(":", 1)[1])
    refused: list[BaseException] = []

    def look() -> None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=30).close()
        except OSError as exc:
            refused.append(exc)

    emulator.server = restart(before, 0.0, while_down=look)
    assert len(refused) == 1 and isinstance(refused[0], ConnectionRefusedError), refused
    assert emulator.server is not before and emulator.server.port == before.port
    r = invoke("events", "list", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 5


def test_clock_skew_is_said_once_and_token_create_can_follow_the_node(invoke, node_env,
                                                                      emulator, home):
    emulator.state.clock_offset = 120.0
    r = invoke("events", "list", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert r.stderr.count("s ahead of this machine's") == 1
    assert re.search(r"is 1(19|20|21) s ahead", r.stderr), r.stderr
    emulator.state.clock_offset = 0.0
    r = invoke("node", "info", env=node_env)
    assert "ahead of" not in r.stderr and "behind" not in r.stderr
    emulator.state.clock_offset = -3600.0
    invoke("xuser", "add", "x", "-r", "file:////data/*")
    invoke("user", "add", "admin", "--xuser", "x", "--password-stdin", input="pw\n")
    r = invoke("token", "create", "-u", "admin", "--access-key", "ak9", "--user-id", "u",
               "--expires-at", "+2h", "--yes", "--clock-from-node", emulator.url,
               input=None, env={"NODECLI_PASSWORD": "pw"})
    assert r.exit_code == 0, r.stderr
    assert re.search(r"is 36(00|01|99) s behind this machine's", r.stderr), r.stderr
    from nodecli.tokens.wire import token_expiry

    left = token_expiry(decode_unverified(r.stdout.strip()).claims).timestamp() - time.time()
    assert 3600 - 120 < left < 3600 + 120  # +2h on a clock an hour behind


def test_idle_keep_alive_connections_dropped_by_the_node_are_just_opened_again(
        emulator, log, node_env, tmp_path):
    log.keep_alive = True  # the node keeps connections open ...
    emulator.server.idle_timeout = 0.3  # ... and closes them after 0.3 s of silence
    log.generate(3)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(nodecli_cmd("events", "tail", "-f", "--to", str(out), "--since",
                                        "1h", "--interval", "0.6"),
                            env=subprocess_env(node_env), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        for n in range(3):
            # (events, not time: the tail has taken what there is, then stays idle for
            # longer than the node keeps a connection: a lower bound, nothing hoped)
            _wait_for(lambda n=n: len(_ids(out)) >= 3 + 2 * n)
            time.sleep(0.9)
            log.generate(2)
        _wait_for(lambda: len(_ids(out)) >= 9)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            reap(proc)
            emulator.server.idle_timeout, log.keep_alive = None, False
    assert _ids(out) == [str(i) for i in range(1, 10)]
    assert b"reconnecting" not in err, err.decode()


# -- token create --renew-into ------------------------------------------------------------------

def test_renew_into_keeps_a_file_fresh_until_sigterm(home, tmp_path, run_cli, invoke):
    invoke("xuser", "add", "x", "-r", "file:////data/*")
    invoke("user", "add", "admin", "--xuser", "x", "--password-stdin", input="pw\n")
    out = tmp_path / "run" / "token"
    out.parent.mkdir()
    proc = subprocess.Popen(nodecli_cmd("token", "create", "-u", "admin", "--access-key",
                                        "ak1", "--user-id", "svc", "--expires-at", "+1h",
                                        "--yes", "--renew-into", str(out), "--every", "1s"),
                            env=subprocess_env({"NODECLI_HOME": str(home),
                                                "NODECLI_PASSWORD": "pw"}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: set[str] = set()

    def three_seen() -> bool:
        if out.exists():
            seen.add(out.read_text())
            assert stat.S_IMODE(out.stat().st_mode) == 0o600
        return len(seen) >= 3

    try:
        _wait_for(three_seen)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        reap(proc)
    assert len(seen) >= 3  # a new token every second, each written whole
    assert all(decode_unverified(t.strip()).claims["user_id"] == "svc" for t in seen)
    assert proc.returncode == 130 and stdout == b""
    assert b"stopped renewing" in stderr and b"Traceback" not in stderr
    r = invoke("token", "create", "-u", "admin", "--access-key", "ak1", "--user-id", "s",
               "--renew-into", str(out), "--every", "2h", "--yes", env={"NODECLI_PASSWORD": "pw"})
    assert r.exit_code == 2 and "shorter than the token's lifetime" in r.stderr


# -- the whole: a bearer-token tail through rotations, an outage and a restart ------------------

def _wait_for(predicate, ceiling: float = 120.0) -> None:
    """Poll until ``predicate()`` holds; the ceiling is for a hung child, not a guess."""
    end = time.monotonic() + ceiling
    while not predicate():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.05)


def _ids(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["id"] for line in path.read_text().splitlines() if line]


@pytest.mark.slow
def test_bearer_tails_survive_rotations_an_outage_and_a_restart(bearer, emulator, tmp_path,
                                                                 home, invoke):
    """Two `events tail -f --to FILE`: one with a token file another program replaces,
    one with a profile that mints its tokens. The node accepts a token for 3 s after
    its first use (the file is replaced every second: slack for a busy machine), goes
    down twice, one tail is frozen for 2.5 s (a laptop asleep: its
    connection and token are stale when it wakes), and events keep coming: every event
    once, in order."""
    bearer.state.token_max_age = 3.0
    tok = tmp_path / "tok.txt"
    _write_atomically(tok, bearer.token())
    r = invoke("node", "add", "alice", "--url", emulator.url, "--access-key", "ak1",
               "--cacert", emulator.ca_file, "--mint-key", str(bearer.key_file),
               "--mint-user-id", "alice", "--mint-ttl", "10m")
    assert r.exit_code == 0, r.stderr
    base = {"NODECLI_HOME": str(home), "NODECLI_CACERT": emulator.ca_file}
    outs = {"file": tmp_path / "file.jsonl", "mint": tmp_path / "mint.jsonl"}
    args = {"file": ["--url", emulator.url, "--access-key", "ak1", "--bearer-file", str(tok)],
            "mint": ["--node", "alice"]}
    expected = [bearer.event() for _ in range(5)]
    procs = {name: subprocess.Popen(
        nodecli_cmd("events", "tail", "-f", "--to", str(outs[name]), "--iteration-token",
                    "0", "--interval", "0.2", *args[name]),
        env=subprocess_env(base), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for name in outs}
    stop, stop_rotating = threading.Event(), threading.Event()

    def produce() -> None:
        while not stop.wait(0.05):
            expected.append(bearer.event())

    def rotate() -> None:  # another program keeps the token file fresh, as long as the
        while not stop_rotating.wait(1.0):  # tails run (else their last token expires)
            _write_atomically(tok, bearer.token())

    threads = [threading.Thread(target=produce), threading.Thread(target=rotate)]
    for t in threads:
        t.start()
    try:
        time.sleep(3.5)
        emulator.server = restart(emulator.server, 1.0)   # a restart
        procs["mint"].send_signal(signal.SIGSTOP)           # asleep ...
        time.sleep(3.5)
        procs["mint"].send_signal(signal.SIGCONT)           # ... and awake
        time.sleep(0.5)
        emulator.server = restart(emulator.server, 4.0)   # an outage
        time.sleep(3.5)
        stop.set()
        threads[0].join()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(
                len(_ids(p)) < len(expected) for p in outs.values()):
            time.sleep(0.2)
    finally:
        stop.set()
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        try:
            finished = {name: proc.communicate(timeout=60)[1] for name, proc in procs.items()}
        finally:
            stop_rotating.set()
            threads[1].join()
            for proc in procs.values():
                reap(proc)
    for name, proc in procs.items():
        err = finished[name]
        assert proc.returncode == 130, (name, err.decode()[-300:])
        assert b"Traceback" not in err
        assert _ids(outs[name]) == expected, name  # nothing lost, nothing twice, in order
    assert len(expected) > 150
    assert bearer.tokens_seen() >= 5  # the file tail through many, the minting one renewed
