"""`nodecli token ...` and the classic `--bearer-create` through the real entry point."""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import zlib
from datetime import timedelta
from pathlib import Path

import pexpect
import pytest

from nodecli.config.model import NodeUser, TransferUser
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from nodecli.tokens.wire import decode_unverified, token_expiry, verify
from nodecli.users.passwords import hash_password

from .conftest import nodecli_cmd, subprocess_env

DATA = Path(__file__).parent / "data"
PUB = (DATA / "golden_key.pub").read_bytes()
PASSWORD = "s3cret!"


@pytest.fixture
def users(home: Path) -> None:
    """Node users made directly in the config (the users CLI is another part)."""
    store = ConfigStore(resolve_paths(home))
    with store.edit() as cfg:
        cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
        cfg.transfer_users["docroot"] = TransferUser("docroot", [], "/srv/data")
        cfg.transfer_users["bare"] = TransferUser("bare")
        cfg.users["admin"] = NodeUser("admin", "xfer", hash_password(PASSWORD, log_n=10))
        cfg.users["docu"] = NodeUser("docu", "docroot", hash_password(PASSWORD, log_n=10))
        cfg.users["bareu"] = NodeUser("bareu", "bare", hash_password(PASSWORD, log_n=10))
        cfg.users["nopass"] = NodeUser("nopass", "xfer", None)


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys" / "golden.pem"
    path.parent.mkdir()
    shutil.copyfile(DATA / "golden_key.pem", path)  # TEST-ONLY key (make_golden.sh)
    path.chmod(0o600)
    return path


def _create(invoke, *extra: str, env: dict[str, str] | None = None, input: str | None = None):
    return invoke("token", "create", "-u", "admin", "--access-key", "AK1", "--user-id", "alice",
                  *extra, env={"NODECLI_PASSWORD": PASSWORD, **(env or {})}, input=input)


def test_create_prints_only_the_token(invoke, users, key_file: Path, frozen_clock) -> None:
    r = _create(invoke, "--key-file-path", str(key_file), "--group-ids", "g1,g2")
    assert r.exit_code == 0, r
    token = r.stdout.removesuffix("\n")
    assert r.stdout == token + "\n" and "\n" not in token
    claims = verify(token, PUB)
    assert claims == {**claims, "user_id": "alice", "group_ids": ["g1", "g2"],
                      "scope": "node.AK1:admin:all", "auth_type": "access_key"}
    assert token_expiry(claims) == frozen_clock.now + timedelta(hours=1)
    assert claims["expires_at"] == "2030-06-15T13:00:00Z"
    assert "node.AK1:admin:all" in r.stderr and PASSWORD not in r.stderr + r.stdout


def test_create_options(invoke, users, key_file: Path, frozen_clock) -> None:
    r = _create(invoke, "--key-file-path", str(key_file), "--scope-role", "user",
                "--expires-at", "+7d")
    claims = decode_unverified(r.stdout.strip()).claims
    assert claims["scope"] == "node.AK1:user:all" and "group_ids" not in claims
    assert token_expiry(claims) == frozen_clock.now + timedelta(days=7)
    frozen_clock.advance(minutes=30)
    r = _create(invoke, "--key-file-path", str(key_file), "--expires-at", "+2h")
    assert decode_unverified(r.stdout.strip()).claims["expires_at"] == "2030-06-15T14:30:00Z"
    r = _create(invoke, "--key-file-path", str(key_file),
                "--expires-at", "2031-01-01T02:00:00+02:00")
    assert decode_unverified(r.stdout.strip()).claims["expires_at"] == "2031-01-01T00:00:00Z"
    r = _create(invoke, "--key-file-dir", str(key_file.parent / "nope"))
    assert r.exit_code == 2 and "--yes" in r.stderr  # missing key, no terminal, no --yes
    assert not (key_file.parent / "nope").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--expires-at", "2001-01-01T00:00:00Z"), "not in the future"),
        (("--expires-at", "next week"), "--expires-at"),
        (("--token-key-length", "3000"), "power of 2"),
        (("--token-key-length", "512"), "power of 2"),
        (("--token-key-length", "32768"), "power of 2"),
        (("--group-ids", "a,,b"), "group-ids"),
        (("--scope-role", "root"), "root"),
        (("--key-file-dir", "/x", "--key-file-path", "/y"), "not both"),
    ],
)
def test_create_usage_errors(invoke, users, key_file: Path, args, needle: str) -> None:
    r = _create(invoke, "--key-file-path", str(key_file), *args) if "--key-file-path" not in args \
        else _create(invoke, *args)
    assert r.exit_code == 2, r
    assert needle in r.stderr and r.stdout == ""


def test_create_refusals(invoke, users, key_file: Path) -> None:
    r = _create(invoke, "--key-file-path", str(key_file), env={"NODECLI_PASSWORD": "wrong"})
    assert r.exit_code == 4 and "wrong password" in r.stderr and r.stdout == ""
    r = invoke("token", "create", "-u", "ghost", "--access-key", "A", "--user-id", "u",
               "--key-file-path", str(key_file), env={"NODECLI_PASSWORD": PASSWORD})
    assert r.exit_code == 5 and "ghost" in r.stderr
    for name, what in (("docu", "docroot"), ("bareu", "no restriction")):
        r = invoke("token", "create", "-u", name, "--access-key", "A", "--user-id", "u",
                   "--key-file-path", str(key_file), env={"NODECLI_PASSWORD": PASSWORD})
        assert r.exit_code == 1, r
        assert what in r.stderr and "restriction" in r.stderr and r.stdout == ""
    r = invoke("token", "create", "-u", "nopass", "--access-key", "A", "--user-id", "u",
               "--key-file-path", str(key_file), env={"NODECLI_PASSWORD": PASSWORD})
    assert r.exit_code == 4 and "no password" in r.stderr


def test_password_sources(invoke, users, key_file: Path) -> None:
    base = ("token", "create", "-u", "admin", "--access-key", "AK1", "--user-id", "alice",
            "--key-file-path", str(key_file))
    r = invoke(*base, "--password-stdin", input=PASSWORD + "\n")
    assert r.exit_code == 0, r
    r = invoke(*base, "-p", PASSWORD)
    assert r.exit_code == 0, r
    r = invoke(*base, "--pwd", "nope")
    assert r.exit_code == 4
    r = invoke(*base)
    assert r.exit_code == 2 and "--password-stdin" in r.stderr and "NODECLI_PASSWORD" in r.stderr


def test_group_readable_key_refused(invoke, users, key_file: Path) -> None:
    key_file.chmod(0o640)
    r = _create(invoke, "--key-file-path", str(key_file))
    assert r.exit_code == 4
    assert "0640" in r.stderr and "chmod 600" in r.stderr and r.stdout == ""


def test_no_key_without_terminal_needs_yes(invoke, users, home: Path) -> None:
    r = _create(invoke, "--token-key-length", "1024")
    assert r.exit_code == 2
    assert "--yes" in r.stderr and "--key-file-path" in r.stderr
    assert not (home / "keys").exists()
    r = _create(invoke, "--token-key-length", "1024", "--yes")
    assert r.exit_code == 0, r
    private = home / "keys" / "AK1" / "private.pem"
    public = home / "keys" / "AK1" / "public.pem"
    assert (os.stat(private).st_mode & 0o777) == 0o600
    assert "set-verification-key AK1" in r.stderr
    verify(r.stdout.strip(), public.read_bytes())
    before = private.read_bytes()
    r = _create(invoke)  # the default key of the access key is reused, never replaced
    assert r.exit_code == 0 and private.read_bytes() == before
    verify(r.stdout.strip(), public.read_bytes())


def test_missing_key_file_path_created_with_yes(invoke, users, tmp_path: Path) -> None:
    path = tmp_path / "new" / "ak1.pem"
    r = _create(invoke, "--key-file-path", str(path), "--token-key-length", "1024")
    assert r.exit_code == 2 and "--yes" in r.stderr and not path.exists()
    r = _create(invoke, "--key-file-path", str(path), "--token-key-length", "1024", "--yes")
    assert r.exit_code == 0, r
    verify(r.stdout.strip(), (tmp_path / "new" / "ak1.pem.pub").read_bytes())
    r = _create(invoke, "--key-file-dir", str(tmp_path / "d"), "--token-key-length", "1024", "-y")
    assert r.exit_code == 0 and (tmp_path / "d" / "public.pem").exists()
    r = _create(invoke, "--key-file-path", str(path), "--token-key-length", "2048")
    assert r.exit_code == 0 and "1024-bit" in r.stderr  # warns: length only for new keys


# -- the classic root flags --------------------------------------------------------------------

def test_classic_bearer_create(invoke, users, key_file: Path) -> None:
    r = invoke("-u", "admin", "-p", PASSWORD, "--bearer-create", "--access-key", "AK9",
               "--user-id", "bob", "--group-ids", "g", "--scope-role", "user",
               "--key-file-path", str(key_file), "--expires-at", "+2h")
    assert r.exit_code == 0, r
    claims = verify(r.stdout.strip(), PUB)
    assert claims["scope"] == "node.AK9:user:all" and claims["group_ids"] == ["g"]
    assert r.stdout.count("\n") == 1
    r = invoke("-u", "admin", "--bearer-create", "--access-key", "AK9", "--user-id", "bob",
               "--key-file-path", str(key_file), env={"NODECLI_PASSWORD": PASSWORD})
    assert r.exit_code == 0 and verify(r.stdout.strip(), PUB)["scope"] == "node.AK9:admin:all"
    r = invoke("-u", "admin", "--bearer-create", "--access-key", "AK9",
               "--key-file-path", str(key_file), env={"NODECLI_PASSWORD": PASSWORD})
    assert r.exit_code == 2 and "--user-id" in r.stderr
    r = invoke("-u", "admin", "-x", "xfer", "--bearer-create", "--access-key", "AK9",
               "--user-id", "b", "--key-file-path", str(key_file),
               env={"NODECLI_PASSWORD": PASSWORD})
    assert r.exit_code == 2 and "-x" in r.stderr
    r = invoke("-u", "admin", "-p", "bad", "--bearer-create", "--access-key", "AK9",
               "--user-id", "b", "--key-file-path", str(key_file))
    assert r.exit_code == 4


# -- inspect -------------------------------------------------------------------------------------

def _token_for(claims: dict, sign: bool = True) -> str:
    from nodecli.tokens import wire as tokens
    from nodecli.tokens.keys import load_private_key

    payload = json.dumps(claims, separators=(",", ":")).encode()
    if not sign:
        return tokens.encode_token(payload, b"\x00" * 256)
    path = Path(os.environ["NODECLI_HOME"]) / "golden-copy.pem"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / "golden_key.pem", path)
        path.chmod(0o600)
    return tokens.encode_token(payload, tokens.sign_payload(payload, load_private_key(path)))


def test_inspect_text_and_json(invoke) -> None:
    token = (DATA / "golden_groups.76.token").read_text().strip()
    r = invoke("token", "inspect", token)
    assert r.exit_code == 0, r
    assert "alice" in r.stdout and "eng, staff" in r.stdout
    assert "access key AK1a2B, role admin, resource all" in r.stdout
    assert "2031-01-01T00:00:00Z" in r.stdout and "left" in r.stdout
    assert "NOT verified" in r.stdout
    r = invoke("token", "inspect", "-o", "json", "-", input=f"Bearer {token}\n")
    info = json.loads(r.stdout)
    assert info["scopes"] == [{"scope": "node.AK1a2B:admin:all", "kind": "node",
                               "access_key": "AK1a2B", "role": "admin", "resource": "all"}]
    assert info["expired"] is False and info["seconds_left"] > 0
    assert info["signature_bits"] == 2048 and info["claims"]["group_ids"] == ["eng", "staff"]
    r = invoke("token", "inspect", input=token)  # piped stdin without "-"
    assert r.exit_code == 0 and "alice" in r.stdout


def test_inspect_expired_and_service_token(invoke) -> None:
    expired = _token_for({"user_id": {"id": 7, "name": "Zoë\x1b[31m"}, "group_ids": [3, 1],
                          "scope": "user:all node.AK2:user:all",
                          "expires_at": "2020-01-01T00:00:00.000Z"}, sign=False)
    r = invoke("token", "inspect", expired)
    assert r.exit_code == 0, r
    assert "expired" in r.stdout and "\x1b" not in r.stdout
    assert "user scope" in r.stdout and "access key AK2, role user" in r.stdout
    r = invoke("token", "inspect", "-o", "json", expired)
    info = json.loads(r.stdout)
    assert info["expired"] is True and info["user_id"]["id"] == 7


@pytest.mark.parametrize("bad", ["!!!", "QUJD", base64.b64encode(zlib.compress(b"x")).decode()])
def test_inspect_malformed_exit_4(invoke, bad: str) -> None:
    r = invoke("token", "inspect", bad)
    assert r.exit_code == 4 and r.stderr.startswith("nodecli: error: invalid token")
    assert "Traceback" not in r.stderr


def test_inspect_empty_stdin(invoke) -> None:
    r = invoke("token", "inspect", "-", input="")
    assert r.exit_code == 4 and "nothing on standard input" in r.stderr


# -- verify --------------------------------------------------------------------------------------

@pytest.fixture
def pub_file(tmp_path: Path) -> Path:
    path = tmp_path / "golden.pub"
    path.write_bytes(PUB)
    return path


def test_verify_valid(invoke, pub_file: Path) -> None:
    token = (DATA / "golden_user.60.token").read_text().strip()  # expires 2030-06-15T13:00:00Z
    r = invoke("token", "verify", token, "--public-key", str(pub_file))
    assert r.exit_code == 0, r
    assert r.stdout == "" and "token valid" in r.stderr and "SHA256:" in r.stderr
    r = invoke("token", "verify", "-", "--public-key", PUB.decode(), "-o", "json",
               input="Bearer " + token)
    out = json.loads(r.stdout)
    assert r.exit_code == 0 and out["valid"] is True and out["claims"]["user_id"] == "42"


def test_verify_invalid_and_expired(invoke, pub_file: Path, tmp_path: Path,
                                    frozen_clock) -> None:
    other = _token_for({"user_id": "u", "scope": "self", "expires_at": "2099-01-01T00:00:00Z"},
                       sign=False)
    r = invoke("token", "verify", other, "--public-key", str(pub_file))
    assert r.exit_code == 4 and "bad signature" in r.stderr and r.stdout == ""
    r = invoke("token", "verify", other, "--public-key", str(pub_file), "-o", "json")
    assert r.exit_code == 4 and json.loads(r.stdout)["reason"] == "bad signature"
    expired = _token_for({"user_id": "u", "scope": "self",
                          "expires_at": "2030-06-15T11:59:30Z"})  # 30 s before "now"
    r = invoke("token", "verify", expired, "--public-key", str(pub_file), "--leeway", "0")
    assert r.exit_code == 4 and "expired at" in r.stderr
    for leeway, code in (("29", 4), ("30", 4), ("31", 0), ("120", 0)):  # expired AT expires_at
        r = invoke("token", "verify", expired, "--public-key", str(pub_file), "--leeway", leeway)
        assert r.exit_code == code, (leeway, r)
    assert "within the leeway" in r.stderr
    frozen_clock.advance(seconds=-31)  # a second before it expires: valid without leeway
    r = invoke("token", "verify", expired, "--public-key", str(pub_file), "--leeway", "0")
    assert r.exit_code == 0, r
    r = invoke("token", "verify", "garbage!", "--public-key", str(pub_file))
    assert r.exit_code == 4 and "invalid token" in r.stderr
    r = invoke("token", "verify", other, "--public-key", str(tmp_path / "missing.pem"))
    assert r.exit_code == 5
    r = invoke("token", "verify", other, "--public-key", "-----BEGIN PUBLIC KEY-----\nxx\n")
    assert r.exit_code == 2 and "not a PEM public key" in r.stderr


# -- a real terminal ---------------------------------------------------------------------------



def _spawn(*args: str, env: dict[str, str]):
    cmd = nodecli_cmd(*args)
    return pexpect.spawn(cmd[0], cmd[1:], env=subprocess_env(env), encoding="utf-8",
                         timeout=30, dimensions=(24, 200))


def test_interactive_key_creation_and_password_prompt(users, home: Path, tmp_path: Path) -> None:
    target = tmp_path / "chosen" / "mykey.pem"
    child = _spawn("token", "create", "-u", "admin", "--access-key", "AK5", "--user-id", "carol",
                   "--token-key-length", "1024", env={"NODECLI_HOME": str(home)})
    child.expect("Password for node user admin")
    child.sendline(PASSWORD)
    child.expect(r"No key file given\. Create a new 1024-bit RSA key pair\? \[Y/n\]")
    child.sendline("y")
    child.expect(r"Private key file \[.*keys/AK5/private\.pem\]")
    child.sendline(str(target))
    child.expect("set-verification-key AK5")
    child.expect(r"([A-Za-z0-9+/=]{200,})\r\n")
    token = child.match.group(1)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (os.stat(target).st_mode & 0o777) == 0o600
    claims = verify(token, Path(str(target) + ".pub").read_bytes())
    assert claims["user_id"] == "carol"
    assert PASSWORD not in (child.before or "")


def test_interactive_existing_name_is_asked_again_and_no_means_no(users, home: Path,
                                                                  tmp_path: Path) -> None:
    taken = tmp_path / "taken.pem"
    taken.write_text("not a key")
    child = _spawn("token", "create", "-u", "admin", "--access-key", "AK6", "--user-id", "d",
                   "--token-key-length", "1024",
                   env={"NODECLI_HOME": str(home), "NODECLI_PASSWORD": PASSWORD})
    child.expect(r"Create a new 1024-bit RSA key pair\?")
    child.sendline("")  # default yes
    child.expect("Private key file")
    child.sendline(str(taken))
    child.expect("already exists")
    child.expect("Private key file")
    child.sendline(str(tmp_path / "fresh.pem"))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and taken.read_text() == "not a key"
    assert (tmp_path / "fresh.pem.pub").exists()
    child = _spawn("token", "create", "-u", "admin", "--access-key", "AK7", "--user-id", "d",
                   env={"NODECLI_HOME": str(home), "NODECLI_PASSWORD": PASSWORD})
    child.expect(r"Create a new 4096-bit RSA key pair\?")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1 and not (home / "keys" / "AK7").exists()


def test_token_and_key_modules_do_not_import_crypto_or_rich() -> None:
    import subprocess

    code = ("import sys, nodecli.cli.tokens, nodecli.cli.keys, nodecli.tokens.wire, "
            "nodecli.tokens.keys, nodecli.tokens.inspection, nodecli.tokens.issuing, "
            "nodecli.timeparse; from nodecli.cli.main import run; "
            "rc = run(['token', 'inspect', '--help']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('cryptography', 'rich', 'httpx', 'httpx2')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=subprocess_env(), check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_typed_password_may_be_retried(users, home: Path, key_file: Path) -> None:
    child = _spawn("token", "create", "-u", "admin", "--access-key", "AK8", "--user-id", "e",
                   "--key-file-path", str(key_file), env={"NODECLI_HOME": str(home)})
    for _ in range(2):
        child.expect("Password for node user admin")
        child.sendline("wrong")
        child.expect("wrong password, try again")
    child.expect("Password for node user admin")
    child.sendline(PASSWORD)
    child.expect(r"([A-Za-z0-9+/=]{200,})\r\n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    child = _spawn("token", "create", "-u", "admin", "--access-key", "AK8", "--user-id", "e",
                   "--key-file-path", str(key_file), env={"NODECLI_HOME": str(home)})
    for _ in range(3):
        child.expect("Password for node user admin")
        child.sendline("wrong")
    child.expect("wrong password for node user 'admin'")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 4


def test_key_work_during_the_password_check_stays_private(invoke, users, key_file: Path,
                                                          home: Path) -> None:
    """The key is loaded and the token signed while scrypt runs: a wrong password still
    shows nothing but the refusal, and records nothing about the key."""
    record = home / "state" / "validated-keys.json"
    r = _create(invoke, "--key-file-path", str(key_file), env={"NODECLI_PASSWORD": "nope"})
    assert r.exit_code == 4 and r.stdout == "" and "wrong password" in r.stderr
    assert not record.exists()  # a never-validated key is not validated before the check
    r = _create(invoke, "--key-file-path", str(key_file))
    assert r.exit_code == 0 and record.exists()  # first use: validated and recorded
    recorded = record.read_bytes()
    r = _create(invoke, "--key-file-path", str(key_file), env={"NODECLI_PASSWORD": "nope"})
    assert r.exit_code == 4 and r.stdout == "" and "bearer token" not in r.stderr
    key_file.chmod(0o640)  # a known key made readable by the group: refused, after the check
    r = _create(invoke, "--key-file-path", str(key_file), env={"NODECLI_PASSWORD": "nope"})
    assert r.exit_code == 4 and "wrong password" in r.stderr and "0640" not in r.stderr
    r = _create(invoke, "--key-file-path", str(key_file))
    assert r.exit_code == 4 and "0640" in r.stderr and r.stdout == ""
    key_file.chmod(0o600)
    r = _create(invoke, "--key-file-path", str(key_file))
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    key = load_pem_private_key(key_file.read_bytes(), None)
    assert r.exit_code == 0 and verify(r.stdout.strip(), key.public_key())["user_id"] == "alice"
    assert record.read_bytes() == recorded
