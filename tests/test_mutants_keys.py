"""Key files at the edges mutation testing found unchecked: key sizes at exactly 16384
bits and a non-power of 2, a key file of exactly 64 KiB and one byte more, a FIFO
refused at once (never a blocked open), the public key of a forced rewrite 0644, the
validation record (its exact bytes, a damaged or oversized one, an unwritable state
folder, --dry-run), `known_only`, certificates, and each refusal's exact words.
In-process; no key is generated (the golden test key and public numbers are used)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nodecli import dryrun
from nodecli.errors import ConflictError, NotFoundError, UsageError
from nodecli.tokens import keys
from nodecli.tokens.keys import (
    MAX_KEY_FILE_BYTES,
    KeyFileError,
    NotValidatedYet,
    check_bits,
    describe_key,
    key_fingerprint,
    key_fingerprint_hex,
    load_private_key,
    load_public_key,
    load_public_key_pem,
    write_key_pair,
)

DATA = Path(__file__).parent / "data"


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "k" / "golden.pem"
    path.parent.mkdir()
    shutil.copyfile(DATA / "golden_key.pem", path)  # TEST-ONLY key (make_golden.sh)
    path.chmod(0o600)
    return path


def _message(kind, call, *args, **kwargs) -> tuple[str, str | None]:
    with pytest.raises(kind) as exc:
        call(*args, **kwargs)
    return exc.value.message, exc.value.hint


def _public_pem(bits: int) -> bytes:
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import rsa

    n = (1 << (bits - 1)) | 1  # any odd modulus of that size: a public key is not checked
    return rsa.RSAPublicNumbers(65537, n).public_key().public_bytes(
        ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)


def test_key_sizes_up_to_16384_bits_and_only_powers_of_2() -> None:
    assert check_bits(16384) == 16384 and check_bits(1024) == 1024
    for bits in (1536, 3072, 16385, 1023):
        with pytest.raises(UsageError):
            check_bits(bits)
    assert load_public_key_pem(_public_pem(16384)).key_size == 16384
    assert _message(KeyFileError, load_public_key_pem, _public_pem(16392)) == (
        "public key: RSA key of 16392 bits: supported sizes are 1024 to 16384", None)


def test_a_key_file_of_exactly_64_kib_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    pem = (DATA / "golden_key.pub").read_bytes()
    path = tmp_path / "k.pub"
    path.write_bytes(pem + b"\n" * (MAX_KEY_FILE_BYTES - len(pem)))
    assert load_public_key(path).key_size == 2048
    path.write_bytes(pem + b"\n" * (MAX_KEY_FILE_BYTES + 1 - len(pem)))
    assert _message(KeyFileError, load_public_key, path) == (
        f"{path} is too large to be a key file", None)


def test_a_huge_key_file_is_refused_after_reading_64_kib(tmp_path: Path) -> None:
    import tracemalloc

    path = tmp_path / "huge.pub"
    with open(path, "wb") as fh:
        fh.truncate(256 * 1024 * 1024)  # sparse: nothing written to the disk
    tracemalloc.start()
    try:
        assert _message(KeyFileError, load_public_key, path) == (
            f"{path} is too large to be a key file", None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


def test_a_fifo_is_refused_at_once_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "key.pem"
    os.mkfifo(fifo, 0o600)
    got: list[BaseException] = []
    reader = threading.Thread(target=lambda: _catch(got, load_private_key, fifo,
                                                    state_dir=tmp_path), daemon=True)
    reader.start()
    try:
        reader.join(30)  # (the right code returns at once; a blocked open never does)
        assert not reader.is_alive(), "opening a FIFO blocked"
    finally:
        if reader.is_alive():  # release a blocked open so the thread ends
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(30)
    assert isinstance(got[0], KeyFileError) and got[0].message == f"{fifo} is not a regular file"


def _catch(got: list, call, *args, **kwargs) -> None:
    try:
        call(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - handed to the test
        got.append(exc)


def test_refusals_say_which_file_and_why(tmp_path: Path, golden: Path) -> None:
    missing = tmp_path / "missing.pem"
    assert _message(NotFoundError, load_private_key, missing, state_dir=tmp_path) == (
        f"key file {missing}: no such file", None)
    bad = tmp_path / "bad.pem"
    bad.write_bytes(b"garbage")
    bad.chmod(0o600)
    message, _ = _message(KeyFileError, load_private_key, bad, state_dir=tmp_path)
    assert message.startswith(f"{bad}: not a valid PEM private key (") and "None" not in message
    assert len(message) == len(f"{bad}: not a valid PEM private key ()") + 120
    assert _message(KeyFileError, load_public_key, bad)[0].startswith(
        f"{bad}: not a PEM public key (")
    message, _ = _message(KeyFileError, load_public_key_pem, b"junk")
    assert message.startswith("public key: not a PEM public key (") and "(None)" not in message
    # text that no encoding holds is a bad key, not a crash
    assert _message(KeyFileError, load_public_key_pem, "\ud800")[0].startswith(
        "public key: not a PEM public key (")
    assert _message(ConflictError, keys.generate_key_pair, golden, 1024,
                    state_dir=tmp_path) == (
        f"{golden} already exists: not overwritten",
        "use --force to replace it (the old key stops working)")


def test_an_ec_private_key_is_named_as_such(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ec

    path = tmp_path / "ec.pem"
    path.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption()))
    path.chmod(0o600)
    assert _message(KeyFileError, load_private_key, path, state_dir=tmp_path) == (
        f"{path}: not an RSA private key", None)


def test_an_encrypted_key_is_told_how_to_decrypt_it(tmp_path: Path, golden: Path) -> None:
    from cryptography.hazmat.primitives import serialization as ser

    key = load_private_key(golden, state_dir=tmp_path)
    path = tmp_path / "enc.pem"
    path.write_bytes(key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8,
                                       ser.BestAvailableEncryption(b"pass")))
    path.chmod(0o600)
    assert _message(KeyFileError, load_private_key, path, state_dir=tmp_path) == (
        f"{path}: the private key is encrypted with a passphrase, which nodecli does not "
        "support",
        f"write a decrypted copy: openssl pkey -in '{path}' -out NEW.pem (then chmod 600 "
        "NEW.pem)")


def test_a_certificate_gives_its_public_key(tmp_path: Path, golden: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.x509.oid import NameOID

    key = load_private_key(golden, state_dir=tmp_path)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "node")])
    start = datetime(2030, 1, 1, tzinfo=UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1).not_valid_before(start)
            .not_valid_after(start + timedelta(days=1)).sign(key, hashes.SHA256()))
    loaded = load_public_key_pem(cert.public_bytes(ser.Encoding.PEM))
    assert key_fingerprint(loaded) == key_fingerprint(key)


def test_describe_key_of_a_private_and_a_public_file(golden: Path) -> None:
    pub = golden.parent / "golden.pub"
    shutil.copyfile(DATA / "golden_key.pub", pub)
    key = load_public_key(pub)
    facts = {"bits": 2048, "fingerprint": key_fingerprint(key),
             "sha256_hex": key_fingerprint_hex(key)}
    assert describe_key(pub) == {"path": str(pub), "kind": "public", **facts}
    golden.chmod(0o600)
    assert describe_key(golden)["kind"] == "private"


def test_a_forced_rewrite_keeps_the_private_key_0600_and_the_public_0644(
        tmp_path: Path, golden: Path) -> None:
    key = load_private_key(golden, state_dir=tmp_path)
    target = tmp_path / "w" / "private.pem"
    target.parent.mkdir()
    write_key_pair(target, key, state_dir=tmp_path)
    write_key_pair(target, key, force=True, state_dir=tmp_path)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE((target.parent / "public.pem").stat().st_mode) == 0o644
    new = tmp_path / "n.pem"
    write_key_pair(new, key, state_dir=tmp_path)
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(str(new) + ".pub").stat().st_mode) == 0o644


# -- the validation record ---------------------------------------------------------------

def _hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_validation_record_exact_bytes(tmp_path: Path, golden: Path) -> None:
    load_private_key(golden, state_dir=tmp_path)
    record = tmp_path / keys.VALIDATED_FILE
    body = {"comment": "SHA-256 of private key files already validated by nodecli",
            "sha256": [_hash(golden)]}
    assert record.read_bytes() == (json.dumps(body, indent=1) + "\n").encode()


def test_known_only_refuses_a_key_never_validated(tmp_path: Path, golden: Path) -> None:
    with pytest.raises(NotValidatedYet):
        load_private_key(golden, state_dir=tmp_path, known_only=True)
    assert not (tmp_path / keys.VALIDATED_FILE).exists()
    load_private_key(golden, state_dir=tmp_path)
    assert load_private_key(golden, state_dir=tmp_path, known_only=True).key_size == 2048


@pytest.mark.parametrize("content", [
    b"[1, 2]",                                              # not an object
    json.dumps({"sha256": [5, "ab", None]}).encode(),       # not hashes
])
def test_a_damaged_record_is_replaced(tmp_path: Path, golden: Path, content: bytes) -> None:
    record = tmp_path / keys.VALIDATED_FILE
    record.write_bytes(content)
    load_private_key(golden, state_dir=tmp_path)
    assert json.loads(record.read_bytes())["sha256"] == [_hash(golden)]


def test_a_record_longer_than_what_is_read_is_not_trusted(tmp_path: Path, golden: Path) -> None:
    record = tmp_path / keys.VALIDATED_FILE
    head = json.dumps({"sha256": [_hash(golden)], "pad": ""}).encode()[:-2]
    record.write_bytes(head + b"x" * (1024 * 1024 + 2 - len(head) - 2) + b'"}')
    assert len(record.read_bytes()) == 1024 * 1024 + 2  # (1 MiB + 1 are read)
    with pytest.raises(NotValidatedYet):  # too large to be read: as if absent
        load_private_key(golden, state_dir=tmp_path, known_only=True)
    load_private_key(golden, state_dir=tmp_path)
    assert json.loads(record.read_bytes())["sha256"] == [_hash(golden)]  # written anew


def test_an_unwritable_state_folder_does_not_stop_a_load(tmp_path: Path, golden: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert load_private_key(golden, state_dir=blocker / "state").key_size == 2048


def test_a_load_under_dry_run_records_nothing_and_does_not_stop(tmp_path: Path,
                                                                golden: Path) -> None:
    dryrun.activate()
    try:
        assert load_private_key(golden, state_dir=tmp_path).key_size == 2048
    finally:
        dryrun.activate(False)
    assert not (tmp_path / keys.VALIDATED_FILE).exists()


def test_a_private_key_of_512_bits_is_refused_by_name(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import rsa

    # two fixed 256-bit primes: a key too small to generate, built from its numbers
    p = 88789212920950175237344697142359786845565445017672548946138507467189104661073
    q = 88295405331382765328512095447520654268962797289115389159545554692528640603471
    d = pow(65537, -1, (p - 1) * (q - 1))
    key = rsa.RSAPrivateNumbers(p, q, d, rsa.rsa_crt_dmp1(d, p), rsa.rsa_crt_dmq1(d, q),
                                rsa.rsa_crt_iqmp(p, q),
                                rsa.RSAPublicNumbers(65537, p * q)).private_key()
    path = tmp_path / "small.pem"
    path.write_bytes(key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8,
                                       ser.NoEncryption()))
    path.chmod(0o600)
    assert _message(KeyFileError, load_private_key, path, state_dir=tmp_path) == (
        f"{path}: RSA key of 512 bits: supported sizes are 1024 to 16384", None)


# -- another process at the same files -------------------------------------------------------

def test_a_private_key_made_after_the_checks_is_refused_not_replaced(
        tmp_path: Path, golden: Path, monkeypatch) -> None:
    """Without --force, a file that appears at the private key's path after the checks
    (here: while the key's folder is being made) is kept, and the write refused."""
    key = load_private_key(golden, state_dir=tmp_path)
    target = tmp_path / "new" / "private.pem"
    real = keys.ensure_private_dir

    def and_another_process_writes(path):
        made = real(path)
        target.write_bytes(b"theirs")  # the other process got there first
        return made

    monkeypatch.setattr(keys, "ensure_private_dir", and_another_process_writes)
    assert _message(ConflictError, write_key_pair, target, key, state_dir=tmp_path) == (
        f"{target} already exists: not overwritten", None)
    assert target.read_bytes() == b"theirs"
    assert not (tmp_path / "new" / "public.pem").exists()


def test_a_public_key_not_written_is_reported_when_the_private_one_is_gone_too(
        tmp_path: Path, golden: Path, monkeypatch) -> None:
    """The public key cannot be written (a full disk) and the private key just written
    cannot be removed (another process removed it first): the user is told of the full
    disk, not of the failed clean-up."""
    import errno

    from nodecli import fsutil

    key = load_private_key(golden, state_dir=tmp_path)
    target = tmp_path / "w" / "private.pem"
    target.parent.mkdir()
    real = fsutil._write_all

    def full_disk(fd: int, data: bytes) -> None:
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".public.pem"):
            target.unlink()  # the private key is gone: its clean-up will fail
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(fsutil, "_write_all", full_disk)
    with pytest.raises(OSError) as exc:
        write_key_pair(target, key, state_dir=tmp_path)
    assert (exc.type, exc.value.errno, exc.value.filename) == (
        OSError, errno.ENOSPC, str(tmp_path / "w" / "public.pem"))
    assert list(target.parent.iterdir()) == []
