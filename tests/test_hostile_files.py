"""Hostile files and arguments: refused at once with one line, nothing stored lost.

Each test is a regression test for a defect found by a fuzz campaign through the real
command line (FIFOs that blocked forever, internal errors on non-UTF-8 ids, temp files
left by killed writers, a refused write that still made a .bak, a resume hint that
dropped the connection options, Python type names in messages, a disk-full error that
did not name the file).
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import nodecli_cmd, subprocess_env

TIMEOUT = 20  # a command that blocks on a FIFO would exceed this: the test then fails


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _run(args: list[str | bytes], env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = subprocess.run(nodecli_cmd(*args), capture_output=True, env=subprocess_env(env),
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


def _one_line(stderr: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 2, stderr  # the error, and maybe its hint
    assert "Traceback" not in stderr and "internal error" not in stderr


# -- 1. a path that is not a regular file is refused at once ----------------------------------


@pytest.mark.parametrize("args", [["-l"], ["user", "list"], ["xuser", "add", "x", "-r", "s3://*"]])
def test_config_toml_that_is_a_fifo(home, args):
    _fifo(home / "config.toml")
    code, err = _run(args)
    assert code == 3
    assert "named pipe" in err and "config.toml" in err
    _one_line(err)
    assert (home / "config.toml").is_fifo()  # left as it was


def test_user_named_files_that_are_fifos(home, tmp_path, emulator, invoke):
    assert invoke("xuser", "add", "x", "-r", "file:////data/*").exit_code == 0
    assert invoke("-au", "admin", "-x", "x", "-p", "admin-pass").exit_code == 0
    fifo = _fifo(tmp_path / "pipe")
    node = {"NODECLI_URL": emulator.url, "NODECLI_USER": "admin",
            "NODECLI_PASSWORD": "admin-pass"}
    cases = [
        (["config", "import", str(fifo)], None, 2),
        (["transfer", "start", "--spec", str(fifo), "--access-key", "ak",
          "--bearer-file", str(fifo)], node, 2),
        (["operations", "list", "--url", emulator.url, "--token-file", str(fifo)], None, 2),
        (["token", "create", "-u", "admin", "--access-key", "ak", "--user-id", "u",
          "--key-file-path", str(fifo)], node, 2),
        (["key", "public", str(fifo)], None, 2),
        (["events", "tail", "--since", "1h", "--checkpoint", str(fifo)], node, 2),
        (["events", "tail", "--since", "1h", "--output", str(fifo)], node, 2),
    ]
    for args, env, code_wanted in cases:
        code, err = _run(args, env)
        assert code == code_wanted, (args, code, err)
        assert "pipe" in err or "regular file" in err, (args, err)
        _one_line(err)


def test_home_files_that_are_fifos(home, tmp_path):
    (home / "state").mkdir(parents=True)
    _fifo(home / "state" / "config.cache")  # a cache: not used, no hang
    code, err = _run(["xuser", "add", "x", "-r", "s3://*"])
    assert code == 0, err
    _fifo(home / "secrets.toml")
    code, err = _run(["node", "add", "n", "--url", "https://h:9092", "--user", "u",
                      "--password-stdin"])
    assert code in (2, 3)
    _one_line(err)


# -- 2. bytes that are not UTF-8 in ids ------------------------------------------------------


@pytest.mark.parametrize("args", [
    [b"events", b"get", b"\xc9"],
    [b"events", b"list", b"--iteration-token", b"\xc9"],
    [b"operations", b"list", b"--workspace", b"\xec\x9b5"],
    [b"operations", b"watch", b"1", b"--workspace", b"\xed\xa0\x80"],
    [b"operations", b"show", b"\xff", b"--workspace", b"1"],
    [b"permission", b"show", b"\xc9"],
    [b"access-key", b"show", b"\xc9"],
])
def test_non_utf8_ids_are_usage_errors(args):
    env = {"NODECLI_URL": "http://127.0.0.1:9", "NODECLI_USER": "x", "NODECLI_PASSWORD": "y",
           "NODECLI_SERVICE_URL": "http://127.0.0.1:9", "NODECLI_TOKEN": "opaque"}
    code, err = _run(args, env)
    assert code == 2, err
    _one_line(err)


def test_the_http_client_refuses_undecodable_values_before_sending(emulator):
    from nodecli.errors import UsageError
    from nodecli.http.client import open_client

    with open_client(emulator.endpoint()) as client, pytest.raises(UsageError):
        client.request("GET", "/events", params=[("iteration_token", "\udcc9")])


# -- 3. temp files of killed writers are cleaned under the lock --------------------------------


def test_stale_temp_files_are_removed_on_the_next_write(home, invoke):
    assert invoke("xuser", "add", "x", "-r", "s3://*").exit_code == 0
    old = home / ".config.toml.bak.4242.0badc0de.tmp"
    fresh = home / ".config.toml.4243.0badc0df.tmp"
    foreign = home / ".notes.txt.1.0badc0de.tmp"
    for p in (old, fresh, foreign):
        p.write_text("partial")
    past = time.time() - 3600
    os.utime(old, (past, past))
    os.utime(foreign, (past, past))
    assert invoke("xuser", "add", "y", "-r", "s3://*").exit_code == 0
    assert not old.exists()  # ours and stale: removed
    assert fresh.exists()  # ours but recent (a writer may still be at work): kept
    assert foreign.exists()  # not ours: never touched


# -- 4. a refused change changes nothing ----------------------------------------------------------


def test_symlinked_config_is_refused_without_making_a_backup(home, invoke, tmp_path):
    assert invoke("xuser", "add", "x", "-r", "s3://*").exit_code == 0
    real = tmp_path / "real.toml"
    real.write_bytes((home / "config.toml").read_bytes())
    (home / "config.toml").unlink()
    (home / "config.toml.bak").unlink(missing_ok=True)
    (home / "config.toml").symlink_to(real)
    before = real.read_bytes()
    r = invoke("xuser", "add", "y", "-r", "s3://*")
    assert r.exit_code == 3
    assert "symbolic link" in r.stderr
    assert not (home / "config.toml.bak").exists()
    assert real.read_bytes() == before and (home / "config.toml").is_symlink()


# -- 5. the resume hint is a command that works when pasted ------------------------------------


def test_resume_hint_keeps_the_connection_options_but_no_secret(emulator, log, tmp_path, home):
    log.generate(5)
    ck = tmp_path / "pos.json"
    args = ["events", "tail", "-f", "--since", "1h", "--url", emulator.url, "--user", "admin",
            "--checkpoint", str(ck), "-o", "jsonl"]
    proc = subprocess.Popen(nodecli_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=subprocess_env({"NODECLI_PASSWORD": "admin-pass"}))
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # an event arrived: the tail runs
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.decode()
    assert proc.returncode == 130, text
    hint = next(line for line in text.splitlines() if "resume with:" in line)
    command = hint.split("resume with:", 1)[1].strip()
    assert f"--url {emulator.url}" in command and "--user admin" in command
    assert f"--checkpoint {ck}" in command and "admin-pass" not in text
    # pasted (with the secret from the environment, as before) it resumes: no event again
    import shlex

    pasted = shlex.split(command)[1:]
    pasted.remove("-f")
    done = subprocess.run(nodecli_cmd(*pasted), capture_output=True, timeout=TIMEOUT,
                          env=subprocess_env({"NODECLI_PASSWORD": "admin-pass"}))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().count("\n") == 0  # the checkpoint covered all five


# -- 6. messages speak JSON, and a disk-full error names the file ------------------------------


def test_token_payload_message_names_json_types():
    from nodecli.tokens.wire import TokenError, decode_unverified, encode_token

    for payload, kind in ((b"null", "null"), (b"[1]", "an array"), (b'"s"', "a string"),
                          (b"1.5", "a number"), (b"true", "a boolean")):
        token = encode_token(payload, b"\x00" * 256)
        with pytest.raises(TokenError) as exc:
            decode_unverified(token)
        assert f"payload is {kind}, not an object" in exc.value.message
        assert "NoneType" not in exc.value.message and "list" not in exc.value.message


def test_disk_full_names_the_file(tmp_path, monkeypatch):
    from nodecli import fsutil

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsutil.os, "write", full)
    target = tmp_path / "config.toml"
    with pytest.raises(OSError) as exc:
        fsutil.atomic_write(target, b"data")
    assert exc.value.errno == errno.ENOSPC
    assert exc.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []  # no temp file left behind
