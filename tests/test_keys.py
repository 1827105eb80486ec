"""RSA key files: creation modes, no overwrite, no links, permission refusal, validation cache."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecli.errors import ConflictError, NotFoundError, UsageError
from nodecli.tokens import keys
from nodecli.tokens.keys import (
    KeyFileError,
    KeyPermissionError,
    check_bits,
    fingerprint,
    generate_key_pair,
    load_private_key,
    public_path_for,
    public_pem,
)

DATA = Path(__file__).parent / "data"


@pytest.fixture
def golden_copy(tmp_path: Path) -> Path:
    path = tmp_path / "k" / "golden.pem"
    path.parent.mkdir()
    shutil.copyfile(DATA / "golden_key.pem", path)
    path.chmod(0o600)
    return path


def _mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777


def test_generate_writes_pkcs8_0600_and_spki_beside(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        info = generate_key_pair(tmp_path / "new" / "private.pem", 1024, state_dir=tmp_path)
    finally:
        os.umask(old)
    assert info.public_path == str(tmp_path / "new" / "public.pem")
    assert _mode(info.private_path) == 0o600
    assert _mode(Path(info.private_path).parent) == 0o700
    assert _mode(info.public_path) == 0o644
    assert Path(info.private_path).read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")
    assert Path(info.public_path).read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----\n")
    assert info.bits == 1024
    assert info.fingerprint == fingerprint(info.private_path) == fingerprint(info.public_path)


def test_public_path_naming() -> None:
    assert public_path_for(Path("/x/private.pem")) == "/x/public.pem"
    assert public_path_for("/x/ak1.pem") == "/x/ak1.pem.pub"
    assert public_path_for("id_rsa") == "id_rsa.pub"
    assert public_path_for("keys/private.pem") == "keys/public.pem"


def test_never_overwritten_without_force(golden_copy: Path, tmp_path: Path) -> None:
    before = golden_copy.read_bytes()
    with pytest.raises(ConflictError, match="already exists"):
        generate_key_pair(golden_copy, 1024, state_dir=tmp_path)
    assert golden_copy.read_bytes() == before
    assert not os.path.lexists(public_path_for(golden_copy))
    info = generate_key_pair(golden_copy, 1024, force=True, state_dir=tmp_path)
    assert golden_copy.read_bytes() != before and _mode(golden_copy) == 0o600
    assert info.bits == 1024


def test_existing_public_key_blocks_creation(tmp_path: Path) -> None:
    (tmp_path / "public.pem").write_text("old")
    with pytest.raises(ConflictError, match=r"public\.pem"):
        generate_key_pair(tmp_path / "private.pem", 1024, state_dir=tmp_path)
    assert not (tmp_path / "private.pem").exists()


@pytest.mark.parametrize("fails", ["private", "public"])
@pytest.mark.parametrize("force", [False, True])
def test_a_full_disk_leaves_no_half_pair_and_names_the_file(tmp_path: Path, monkeypatch,
                                                            force: bool, fails: str) -> None:
    import errno

    from nodecli import fsutil

    private, public = tmp_path / "private.pem", tmp_path / "public.pem"
    if force:
        generate_key_pair(private, 1024, state_dir=tmp_path)
    before = {p: p.read_bytes() for p in (private, public) if p.exists()}
    real = fsutil._write_all

    def full_disk(fd: int, data: bytes) -> None:
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        if name.startswith((f"{fails}.pem", f".{fails}.pem")):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(fsutil, "_write_all", full_disk)
    with pytest.raises(OSError, match="No space left") as exc:
        generate_key_pair(private, 1024, force=force, state_dir=tmp_path)
    assert exc.value.filename == str(tmp_path / f"{fails}.pem")
    # as before: no pair (a fresh generation) or the old pair, byte for byte
    assert {p: p.read_bytes() for p in (private, public) if p.exists()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("force", [False, True])
def test_never_written_through_a_symlink(tmp_path: Path, force: bool) -> None:
    target = tmp_path / "victim"
    target.write_text("precious")
    link = tmp_path / "private.pem"
    link.symlink_to(target)
    with pytest.raises(ConflictError, match="symbolic link"):
        generate_key_pair(link, 1024, force=force, state_dir=tmp_path)
    dangling = tmp_path / "dangling.pem"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConflictError, match="symbolic link"):
        generate_key_pair(dangling, 1024, force=force, state_dir=tmp_path)
    assert target.read_text() == "precious" and not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o666])
def test_load_refuses_group_or_world_readable(golden_copy: Path, mode: int) -> None:
    golden_copy.chmod(mode)
    with pytest.raises(KeyPermissionError) as exc:
        load_private_key(golden_copy, state_dir=golden_copy.parent)
    assert f"{mode:04o}" in str(exc.value)
    assert exc.value.hint and "chmod 600" in exc.value.hint
    assert exc.value.exit_code == 4


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_load_accepts_owner_only(golden_copy: Path, mode: int) -> None:
    golden_copy.chmod(mode)
    assert load_private_key(golden_copy, state_dir=golden_copy.parent).key_size == 2048


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        load_private_key(tmp_path / "missing.pem", state_dir=tmp_path)
    bad = tmp_path / "bad.pem"
    for content in (b"garbage", b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                    b"\xff" * 100, b"A" * (keys.MAX_KEY_FILE_BYTES + 10)):
        bad.write_bytes(content)
        bad.chmod(0o600)
        with pytest.raises(KeyFileError):
            load_private_key(bad, state_dir=tmp_path)
    with pytest.raises(KeyFileError, match="folder"):
        load_private_key(tmp_path, state_dir=tmp_path)


def test_load_refuses_non_rsa_and_encrypted(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ec

    ec_key = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "ec.pem"
    path.write_bytes(ec_key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8,
                                          ser.NoEncryption()))
    path.chmod(0o600)
    with pytest.raises(KeyFileError, match="not an RSA"):
        load_private_key(path, state_dir=tmp_path)
    rsa_key = keys.generate_private_key(1024)
    enc = tmp_path / "enc.pem"
    enc.write_bytes(rsa_key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8,
                                          ser.BestAvailableEncryption(b"pw")))
    enc.chmod(0o600)
    with pytest.raises(KeyFileError, match="passphrase"):
        load_private_key(enc, state_dir=tmp_path)


def test_pkcs1_private_key_accepted(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization as ser

    key = keys.generate_private_key(1024)
    path = tmp_path / "pkcs1.pem"
    path.write_bytes(key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.TraditionalOpenSSL,
                                       ser.NoEncryption()))
    path.chmod(0o600)
    assert load_private_key(path, state_dir=tmp_path).private_numbers() == key.private_numbers()


def _invalid_rsa_pem() -> bytes:
    """A PEM whose CRT parameters are wrong: only full RSA validation notices."""
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import rsa

    n = keys.generate_private_key(1024).private_numbers()
    broken = rsa.RSAPrivateNumbers(n.p, n.q, n.d, n.dmp1 + 2, n.dmq1, n.iqmp, n.public_numbers)
    key = broken.private_key(unsafe_skip_rsa_key_validation=True)
    return key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())


def test_validation_runs_once_per_file_content(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = tmp_path / "broken.pem"
    data = _invalid_rsa_pem()
    path.write_bytes(data)
    path.chmod(0o600)
    # First use: full validation catches the broken key and nothing is recorded.
    with pytest.raises(KeyFileError):
        load_private_key(path, state_dir=state)
    assert not (state / keys.VALIDATED_FILE).exists()
    # A recorded content hash means "validated before": the check is skipped.
    keys._remember_validated(hashlib.sha256(data).hexdigest(), state)
    assert load_private_key(path, state_dir=state).key_size == 1024


def test_first_load_records_and_generation_records(golden_copy: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    load_private_key(golden_copy, state_dir=state)
    record = json.loads((state / keys.VALIDATED_FILE).read_text())
    assert hashlib.sha256(golden_copy.read_bytes()).hexdigest() in record["sha256"]
    assert _mode(state / keys.VALIDATED_FILE) == 0o600
    info = generate_key_pair(tmp_path / "g.pem", 1024, state_dir=state)
    record = json.loads((state / keys.VALIDATED_FILE).read_text())
    assert hashlib.sha256(Path(info.private_path).read_bytes()).hexdigest() in record["sha256"]


def test_damaged_validation_record_is_ignored(golden_copy: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / keys.VALIDATED_FILE).write_text("{not json")
    assert load_private_key(golden_copy, state_dir=state).key_size == 2048
    assert len(json.loads((state / keys.VALIDATED_FILE).read_text())["sha256"]) == 1


def test_validation_record_is_bounded(tmp_path: Path) -> None:
    for i in range(keys.VALIDATED_KEEP + 10):
        keys._remember_validated(f"{i:064x}", tmp_path)
    hashes = keys._validated_hashes(tmp_path)
    assert len(hashes) == keys.VALIDATED_KEEP and hashes[-1] == f"{keys.VALIDATED_KEEP + 9:064x}"


def test_fingerprint_and_public_pem_match_openssl(golden_copy: Path) -> None:
    der = subprocess.run(["openssl", "pkey", "-in", str(golden_copy), "-pubout", "-outform",
                          "DER"], capture_output=True, check=True).stdout
    expected = "SHA256:" + base64.b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")
    assert fingerprint(golden_copy) == expected
    assert keys.fingerprint_hex(golden_copy) == hashlib.sha256(der).hexdigest()
    pem = subprocess.run(["openssl", "pkey", "-in", str(golden_copy), "-pubout"],
                         capture_output=True, check=True, text=True).stdout
    assert public_pem(golden_copy) == pem == (DATA / "golden_key.pub").read_text()


def test_public_key_loading_forms(golden_copy: Path, tmp_path: Path) -> None:
    pub = (DATA / "golden_key.pub").read_bytes()
    assert keys.load_public_key_pem(pub).key_size == 2048
    # PKCS#1 "RSA PUBLIC KEY" (OpenSSL 1.x and 3.x both write it with -RSAPublicKey_out)
    pkcs1 = subprocess.run(["openssl", "rsa", "-in", str(golden_copy), "-RSAPublicKey_out"],
                           capture_output=True, check=True).stdout
    assert pkcs1.startswith(b"-----BEGIN RSA PUBLIC KEY-----\n")
    loaded = keys.load_public_key_pem(pkcs1)
    assert loaded.key_size == 2048
    assert loaded.public_numbers() == keys.load_public_key_pem(pub).public_numbers()
    with pytest.raises(KeyFileError, match="private key"):
        keys.load_public_key_pem(golden_copy.read_bytes())
    with pytest.raises(KeyFileError):
        keys.load_public_key_pem("not a key")


@given(st.integers(min_value=-10, max_value=40000))
def test_check_bits(bits: int) -> None:
    ok = bits in (1024, 2048, 4096, 8192, 16384)
    if ok:
        assert check_bits(bits) == bits
    else:
        with pytest.raises(UsageError, match="power of 2"):
            check_bits(bits)


# -- CLI ---------------------------------------------------------------------------------------

def test_cli_key_generate_path_forms(invoke, tmp_path: Path) -> None:
    """A trailing '/' means a folder (created 0700); any other new path is the key file."""
    r = invoke("key", "generate", str(tmp_path / "new" / "ak1") + "/", "--bits", "1024")
    assert r.exit_code == 0, r
    assert _mode(tmp_path / "new" / "ak1") == 0o700
    assert _mode(tmp_path / "new" / "ak1" / "private.pem") == 0o600
    assert (tmp_path / "new" / "ak1" / "public.pem").is_file()
    r = invoke("key", "generate", str(tmp_path / "ak2.pem"), "--bits", "1024")
    assert r.exit_code == 0, r
    assert _mode(tmp_path / "ak2.pem") == 0o600 and (tmp_path / "ak2.pem.pub").is_file()


def test_cli_key_generate_public_fingerprint(invoke, tmp_path: Path) -> None:
    folder = tmp_path / "ak1"
    folder.mkdir()
    r = invoke("key", "generate", str(folder), "--bits", "1024")
    assert r.exit_code == 0, r
    assert r.stdout == ""
    assert "fingerprint SHA256:" in r.stderr and "set-verification-key" in r.stderr
    priv, pub = folder / "private.pem", folder / "public.pem"
    assert _mode(priv) == 0o600
    r = invoke("key", "public", str(priv))
    assert r.exit_code == 0 and r.stdout == pub.read_text()
    r = invoke("key", "fingerprint", str(pub))
    assert r.exit_code == 0 and r.stdout == fingerprint(priv) + "\n"
    r = invoke("key", "fingerprint", str(priv), "-o", "json")
    info = json.loads(r.stdout)
    assert info["bits"] == 1024 and info["kind"] == "private"
    assert info["fingerprint"] == fingerprint(pub)
    r = invoke("key", "generate", str(folder), "--bits", "1024")
    assert r.exit_code == 1 and "already exists" in r.stderr and "--force" in r.stderr
    r = invoke("key", "generate", str(folder), "--bits", "1024", "--force", "-o", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["fingerprint"] != info["fingerprint"]


@pytest.mark.parametrize("bits", ["1000", "512", "32768", "abc"])
def test_cli_key_generate_bad_bits(invoke, tmp_path: Path, bits: str) -> None:
    r = invoke("key", "generate", str(tmp_path / "k.pem"), "--bits", bits)
    assert r.exit_code == 2 and not (tmp_path / "k.pem").exists()


def test_cli_key_public_refuses_open_private_key(invoke, golden_copy: Path) -> None:
    golden_copy.chmod(0o644)
    r = invoke("key", "public", str(golden_copy))
    assert r.exit_code == 4
    assert "0644" in r.stderr and "chmod 600" in r.stderr
    r = invoke("key", "fingerprint", str(golden_copy.parent / "missing.pem"))
    assert r.exit_code == 5


def test_spinner_with_elapsed_time_for_big_keys_in_a_terminal(tmp_path: Path,
                                                              pause_point) -> None:
    """8192 bits: a spinner with elapsed time on stderr while generating (real pty). The
    program is held where the spinner runs and the key is not being made yet (the
    key-generate hook, docs/development.md): the elapsed time ticks, then Ctrl-C erases
    the line, says so and leaves no key behind. (A real 8192-bit key takes from ten
    seconds to over a minute; the sizes themselves are tested with smaller keys.)"""
    import pexpect

    from .conftest import PausePoint, nodecli_cmd, reap, subprocess_env

    target = tmp_path / "big.pem"
    point = pause_point("key-generate")
    cmd = nodecli_cmd("key", "generate", str(target), "--bits", "8192")
    child = pexpect.spawn(cmd[0], cmd[1:], env=subprocess_env(point.env()), encoding="utf-8",
                          timeout=60, dimensions=(24, 200))
    conn = None
    try:
        conn = point.wait(child)
        assert conn is not None, child.read()
        child.expect("generating a 8192-bit RSA key")
        child.expect(r" · [1-9]\d*s")  # the elapsed time on the live status line, ticking
        child.sendintr()
        child.expect(pexpect.EOF)
        said = child.before
    finally:
        if conn is not None:
            PausePoint.release(conn)
        reap(child)
    assert child.exitstatus == 130, said
    assert "nodecli: interrupted" in said and "Traceback" not in said, said
    assert said.rstrip().endswith("nodecli: interrupted"), said  # the line was erased
    assert not target.exists() and not target.with_name("public.pem").exists()
