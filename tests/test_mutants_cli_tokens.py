"""`token inspect` and `token verify` at the points mutation testing found unchecked:
where the token is read from (the argument, `-`, piped stdin; a terminal on stdin is
never waited on), a stdin of blanks, and how `--public-key` is taken (PEM text after
blank lines, a file under `~`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import nodecli_cmd, pty_to_the_end, reap, subprocess_env
from tests.test_token_cli import DATA, PUB

ERR = "nodecli: error: "
TOKEN = (DATA / "golden_user.60.token").read_text().strip()  # expires 2030-06-15T13:00:00Z


@pytest.mark.parametrize("command", [("token", "inspect"),
                                     ("token", "verify", "--public-key", PUB.decode())])
def test_a_terminal_on_stdin_is_not_waited_on_for_a_token(home: Path, command) -> None:
    cmd = nodecli_cmd(*command)
    status, said = pty_to_the_end(cmd, subprocess_env({"NODECLI_HOME": str(home)}))
    assert status == 2, said
    assert said == f"{ERR}give the TOKEN, or '-' and the token on standard input\r\n"


@pytest.mark.parametrize("argv", [(), ("-",)])
def test_a_stdin_of_blanks_holds_no_token(invoke, argv) -> None:
    r = invoke("token", "inspect", *argv, input=" \n\t\r\n")
    assert (r.exit_code, r.stdout) == (4, "")
    assert r.stderr == f"{ERR}invalid token: nothing on standard input\n"


def test_a_token_on_stdin_is_read_whole(invoke) -> None:
    r = invoke("token", "inspect", "-", input=f"\n{TOKEN}\n")
    assert r.exit_code == 0, r
    assert r.stdout.splitlines()[0] == "user_id       42"


def test_the_public_key_as_pem_text_after_blank_lines_or_as_a_file_under_home(
        invoke, tmp_path: Path) -> None:
    r = invoke("token", "verify", TOKEN, "--public-key", "\n\n  " + PUB.decode())
    assert r.exit_code == 0, r
    assert r.stderr.startswith("token valid: signature OK (2048-bit key SHA256:")
    shutil.copyfile(DATA / "golden_key.pub", tmp_path / "golden.pub")
    r = invoke("token", "verify", TOKEN, "--public-key", "~/golden.pub",
               env={"HOME": str(tmp_path)})
    assert r.exit_code == 0, r
    r = invoke("token", "verify", TOKEN, "--public-key", "-----BEGIN PUBLIC KEY-----\nxx\n")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.startswith(f"{ERR}--public-key: not a PEM public key (")


def test_claims_that_are_not_text_are_shown_as_compact_json(invoke, frozen_clock) -> None:
    from tests.test_token_cli import _token_for

    token = _token_for({"user_id": {"id": 7, "name": "Zoë"}, "group_ids": [3, "g"],
                        "scope": "user:all", "expires_at": "2030-06-16T13:00:00Z",
                        "extra": {"a": [1, None]}, "n": 5}, sign=False)
    r = invoke("token", "inspect", token)
    assert r.exit_code == 0, r
    assert r.stdout.splitlines() == [
        'user_id       {"id":7,"name":"Zoë"}',
        "group_ids     3, g",
        "scope         user:all",
        "  user scope  user:all",
        "expires_at    2030-06-16T13:00:00Z (1d 1h left)",
        'extra         {"a":[1,null]}',
        "n             5",
        "signature     2048-bit, NOT verified (token verify --public-key PEM checks it)"]


def test_bytes_on_stdin_that_are_not_text_are_named_as_such(invoke) -> None:
    r = invoke("token", "inspect", "-", input=b"QUJD\xff\xfe\n")
    assert (r.exit_code, r.stdout) == (4, "")
    assert r.stderr == f"{ERR}invalid token: contains bytes that are not base64 text\n"


def _token_of_length(low: int, high: int) -> str:
    """A signed token between ``low`` and ``high`` characters long (a claim of random
    letters, which zlib cannot shrink much)."""
    import json
    import random
    import string

    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    from nodecli.tokens import wire

    key = load_pem_private_key((DATA / "golden_key.pem").read_bytes(), None)
    rnd = random.Random(7)
    letters = "".join(rnd.choice(string.ascii_letters) for _ in range(300_000))
    n = 269_000
    for _ in range(40):
        payload = json.dumps({"user_id": "u", "scope": "self",
                              "expires_at": "2099-01-01T00:00:00Z", "x": letters[:n]},
                             separators=(",", ":")).encode()
        token = wire.encode_token(payload, wire.sign_payload(payload, key))
        if low <= len(token) <= high:
            return token
        n += 200 if len(token) < low else -200
    raise AssertionError("no token of that length")


def test_a_token_near_the_length_limit_is_read_whole_from_stdin(invoke) -> None:
    from nodecli.tokens.wire import MAX_TOKEN_CHARS

    token = _token_of_length(MAX_TOKEN_CHARS - 900, MAX_TOKEN_CHARS - 100)
    r = invoke("token", "inspect", "-", input=token + "\n")
    assert r.exit_code == 0, r
    assert r.stdout.splitlines()[0] == "user_id       u"


def test_a_stdin_that_never_ends_is_read_only_up_to_the_limit(tmp_path: Path) -> None:
    """More than a token can hold arrives and the writer never closes: the command
    reads no more than it needs (the token's limit and 1024 characters of blanks around
    it), refuses, and ends: it never waits for the end of the input."""
    import subprocess

    from nodecli.tokens.wire import MAX_TOKEN_CHARS

    proc = subprocess.Popen(nodecli_cmd("token", "inspect", "-"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=subprocess_env({"NODECLI_HOME": str(tmp_path)}))
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"A" * (MAX_TOKEN_CHARS + 1024))  # all of it is read
        proc.stdin.flush()
        code = proc.wait(timeout=60)  # the writer's end is still open
        assert proc.stderr is not None
        said = proc.stderr.read().decode()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        reap(proc)
    assert code == 4, said
    assert said == f"{ERR}invalid token: longer than {MAX_TOKEN_CHARS} characters\n"
