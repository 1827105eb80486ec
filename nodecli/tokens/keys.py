"""RSA key pairs for bearer tokens: generate, load safely, fingerprint.

Files
    * Private key: PKCS#8 PEM (``-----BEGIN PRIVATE KEY-----``), created 0600 with
      ``O_CREAT|O_EXCL|O_NOFOLLOW`` so it never exists with wider permissions, is never
      written through a symbolic link and never replaces an existing file unless
      ``force`` is given (then it is replaced atomically, still never through a link).
    * Public key: SubjectPublicKeyInfo PEM (``-----BEGIN PUBLIC KEY-----``) beside it,
      0644: ``public.pem`` next to ``private.pem``, otherwise ``<private path>.pub``.
    * A key folder (``--key-file-dir``) holds ``private.pem`` and ``public.pem``.

Loading refuses, like OpenSSH, a private key file that group or others can read.

Fingerprint: ``SHA256:`` followed by the unpadded standard base64 of the SHA-256 of
the DER SubjectPublicKeyInfo (the OpenSSH presentation, computed over the X.509
public-key structure that nodes receive as verification key). The hex form of the
same digest is available too (:func:`fingerprint_hex`).

RSA key validation (checking p, q, d... on load) is the slowest part of loading a large
key (bench/tokens.py shows it). It is done once per key: after a key was generated here
or validated on first use, the SHA-256 of its file is recorded in
``state/validated-keys.json`` (atomic write) and later loads of the very same bytes skip
re-validation.

``cryptography`` is imported inside the functions, never at module import.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodecli.errors import AuthError, ConflictError, NotFoundError, UsageError
from nodecli.fsutil import (
    StrPath,
    atomic_write,
    create_exclusive,
    ensure_private_dir,
    replacing,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey, RSAPublicKey

MIN_BITS = 1024
MAX_BITS = 16384
DEFAULT_BITS = 4096
PUBLIC_EXPONENT = 65537
MAX_KEY_FILE_BYTES = 64 * 1024
PRIVATE_NAME = "private.pem"
PUBLIC_NAME = "public.pem"
VALIDATED_FILE = "validated-keys.json"
VALIDATED_KEEP = 64


class KeyFileError(UsageError):
    """A key file is missing its key, malformed, not RSA or of an unsupported size (exit 2)."""


class KeyPermissionError(AuthError):
    """A private key file is readable by group or others (exit 4, like a refused login)."""


def check_bits(bits: int) -> int:
    """A power of 2 from 1024 to 16384 (interface.md 8)."""
    if (not isinstance(bits, int) or isinstance(bits, bool) or bits < MIN_BITS
            or bits > MAX_BITS or bits & (bits - 1)):
        raise UsageError(f"invalid key length {bits!r}: use a power of 2 from {MIN_BITS} to "
                         f"{MAX_BITS} bits (1024, 2048, 4096, 8192, 16384)")
    return bits


def public_path_for(private_path: StrPath) -> str:
    """``public.pem`` beside ``private.pem``; otherwise ``<private>.pub``."""
    folder, name = os.path.split(os.fspath(private_path))
    return os.path.join(folder, PUBLIC_NAME if name == PRIVATE_NAME else name + ".pub")


@dataclass(frozen=True, slots=True)
class KeyPairInfo:
    """A key pair just written: its two files, size and fingerprint."""

    private_path: str
    public_path: str
    bits: int
    fingerprint: str


# -- generation --------------------------------------------------------------------------

def generate_private_key(bits: int = DEFAULT_BITS) -> RSAPrivateKey:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=PUBLIC_EXPONENT, key_size=check_bits(bits))


def private_pem_bytes(key: RSAPrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization as ser

    return key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())


def _public(key: RSAPublicKey | RSAPrivateKey) -> RSAPublicKey:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return key.public_key() if isinstance(key, rsa.RSAPrivateKey) else key


def public_pem_bytes(key: RSAPublicKey | RSAPrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization as ser

    pub = _public(key)
    return pub.public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)


def _spki_der(key: RSAPublicKey | RSAPrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization as ser

    pub = _public(key)
    return pub.public_bytes(ser.Encoding.DER, ser.PublicFormat.SubjectPublicKeyInfo)


def key_fingerprint(key: RSAPublicKey | RSAPrivateKey) -> str:
    """``SHA256:<unpadded base64 of SHA-256(SPKI DER)>``."""
    digest = hashlib.sha256(_spki_der(key)).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def key_fingerprint_hex(key: RSAPublicKey | RSAPrivateKey) -> str:
    return hashlib.sha256(_spki_der(key)).hexdigest()


def _refuse_existing(path: str, force: bool) -> None:
    if Path(path).is_symlink():
        raise ConflictError(f"{path} is a symbolic link: refusing to write a key through it")
    if Path(path).exists():
        if Path(path).is_dir():
            raise ConflictError(f"{path} is a folder")
        if not force:
            raise ConflictError(f"{path} already exists: not overwritten",
                                hint="use --force to replace it (the old key stops working)")


def write_key_pair(private_path: StrPath, key: RSAPrivateKey, *, force: bool = False,
                   state_dir: StrPath | None = None) -> KeyPairInfo:
    """Write ``key`` as PKCS#8 PEM (0600, O_EXCL, no link) plus its public PEM beside it."""
    private_path = os.fspath(private_path)
    public_path = public_path_for(private_path)
    _refuse_existing(private_path, force)
    _refuse_existing(public_path, force)
    from nodecli import dryrun

    if dryrun.active():
        raise dryrun.DryRunStop(f"would write the private key {private_path} (0600) and the "
                                f"public key {public_path}; nothing was written (--dry-run)")
    folder = Path(private_path).parent
    if not folder.exists():
        ensure_private_dir(folder)
    data = private_pem_bytes(key)
    # The pair is written whole or not at all (a full disk must not leave a private key
    # without its public key, or a new public key beside the old private one).
    if force and Path(private_path).exists():
        # the new private key is written and synced, the public key replaced, then the
        # private key renamed into place (refuses links, 0600 from creation)
        with replacing(private_path, data, 0o600):
            atomic_write(public_path, public_pem_bytes(key), 0o644)
    else:
        try:
            create_exclusive(private_path, data, 0o600)
        except FileExistsError:
            raise ConflictError(f"{private_path} already exists: not overwritten") from None
        try:
            atomic_write(public_path, public_pem_bytes(key), 0o644)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(private_path)
            raise
    _remember_validated(hashlib.sha256(data).hexdigest(), state_dir)
    return KeyPairInfo(os.fspath(private_path), os.fspath(public_path), key.key_size,
                       key_fingerprint(key))


def generate_key_pair(private_path: StrPath, bits: int = DEFAULT_BITS, *, force: bool = False,
                      state_dir: StrPath | None = None) -> KeyPairInfo:
    """Generate an RSA key and write the pair; refuses before the slow part if it cannot write."""
    check_bits(bits)
    private_path = os.fspath(private_path)
    _refuse_existing(private_path, force)
    _refuse_existing(public_path_for(private_path), force)
    return write_key_pair(private_path, generate_private_key(bits), force=force,
                          state_dir=state_dir)


# -- loading -----------------------------------------------------------------------------

def _read_key_file(path: StrPath, *, private: bool) -> bytes:
    """Read a key file (bounded), checking the mode of the very file that was opened."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):
        raise NotFoundError(f"key file {path}: no such file") from None
    except IsADirectoryError:
        raise KeyFileError(f"{path} is a folder, not a key file") from None
    except PermissionError:
        raise KeyPermissionError(f"cannot read key file {path}: permission denied") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise KeyFileError(f"{path} is a folder, not a key file")
        if not stat.S_ISREG(st.st_mode):
            raise KeyFileError(f"{path} is not a regular file")
        if private and os.name == "posix" and st.st_mode & 0o077:
            mode = stat.S_IMODE(st.st_mode)
            raise KeyPermissionError(
                f"private key {path} has permissions {mode:04o}: accessible by group or others, "
                "refusing to use it",
                hint=f"chmod 600 '{path}' (a private key must be readable only by its owner)",
            )
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_KEY_FILE_BYTES + 1)
    if len(data) > MAX_KEY_FILE_BYTES:
        raise KeyFileError(f"{path} is too large to be a key file")
    return data


def _check_size(key: RSAPublicKey | RSAPrivateKey, path: StrPath) -> None:
    if not MIN_BITS <= key.key_size <= MAX_BITS:
        raise KeyFileError(f"{path}: RSA key of {key.key_size} bits: supported sizes are "
                           f"{MIN_BITS} to {MAX_BITS}")


def _rsa_private(key: object, path: StrPath) -> RSAPrivateKey:
    from cryptography.hazmat.primitives.asymmetric import rsa

    if not isinstance(key, rsa.RSAPrivateKey):
        raise KeyFileError(f"{path}: not an RSA private key")
    _check_size(key, path)
    return key


def _rsa_public(key: object, path: StrPath) -> RSAPublicKey:
    from cryptography.hazmat.primitives.asymmetric import rsa

    if not isinstance(key, rsa.RSAPublicKey):
        raise KeyFileError(f"{path}: not an RSA public key")
    _check_size(key, path)
    return key


def _state_dir(state_dir: StrPath | None) -> Path:
    if state_dir is not None:
        return Path(state_dir)
    from nodecli.config.paths import resolve_paths

    return resolve_paths().state_dir


def _validated_path(state_dir: StrPath | None) -> Path:
    return _state_dir(state_dir) / VALIDATED_FILE


def _validated_hashes(state_dir: StrPath | None) -> list[str]:
    try:
        from nodecli.fsutil import read_regular

        data = json.loads(read_regular(_validated_path(state_dir), 1024 * 1024))
    except (OSError, ValueError):
        return []
    hashes = data.get("sha256") if isinstance(data, dict) else None
    if not isinstance(hashes, list):
        return []
    return [h for h in hashes if isinstance(h, str) and len(h) == 64]


def _remember_validated(file_hash: str, state_dir: StrPath | None) -> None:
    """Record that the key file with this SHA-256 was validated (best effort)."""
    with contextlib.suppress(OSError):
        hashes = [h for h in _validated_hashes(state_dir) if h != file_hash]
        hashes.append(file_hash)
        hashes = hashes[-VALIDATED_KEEP:]
        path = _validated_path(state_dir)
        ensure_private_dir(path.parent)
        body = {"comment": "SHA-256 of private key files already validated by nodecli",
                "sha256": hashes}
        atomic_write(path, (json.dumps(body, indent=1) + "\n").encode("ascii"), quiet=True)


class NotValidatedYet(Exception):
    """``load_private_key(..., known_only=True)`` met a key never validated before."""


def load_private_key(path: StrPath, *, state_dir: StrPath | None = None,
                     known_only: bool = False) -> RSAPrivateKey:
    """Load an RSA private key (PKCS#8 or PKCS#1 PEM, unencrypted) from ``path``.

    Refuses files readable by group or others (:class:`KeyPermissionError`, exit 4),
    missing files (:class:`~nodecli.errors.NotFoundError`, exit 5) and anything that is
    not an RSA private key of 1024-16384 bits (:class:`KeyFileError`, exit 2). The RSA
    validation runs only the first time a given file content is seen; ``known_only``
    raises :class:`NotValidatedYet` for a content not seen before (nothing recorded).
    """
    path = os.fspath(path)
    data = _read_key_file(path, private=True)
    file_hash = hashlib.sha256(data).hexdigest()
    known = file_hash in _validated_hashes(state_dir)
    if known_only and not known:
        raise NotValidatedYet(str(path))
    try:
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        loaded = load_pem_private_key(data, password=None,
                                      unsafe_skip_rsa_key_validation=known)
    except TypeError:
        raise KeyFileError(
            f"{path}: the private key is encrypted with a passphrase, which nodecli does "
            "not support",
            hint=f"write a decrypted copy: openssl pkey -in '{path}' -out NEW.pem "
                 "(then chmod 600 NEW.pem)",
        ) from None
    except Exception as exc:  # noqa: BLE001 - any parser failure is a bad key file
        raise KeyFileError(f"{path}: not a valid PEM private key ({_short(exc)})") from None
    key = _rsa_private(loaded, path)
    if not known:
        _remember_validated(file_hash, state_dir)
    return key


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:120]


def load_public_key_pem(data: bytes | str, source: str = "public key") -> RSAPublicKey:
    """An RSA public key from PEM text: SPKI, PKCS#1 ``RSA PUBLIC KEY`` or a certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization as ser

    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    if len(raw) > MAX_KEY_FILE_BYTES:
        raise KeyFileError(f"{source}: too large to be a public key")
    if b"PRIVATE KEY-----" in raw:
        raise KeyFileError(f"{source}: this is a private key; give the public key "
                           "(nodecli key public PRIVATE.pem prints it)")
    try:
        loaded: object = (x509.load_pem_x509_certificate(raw).public_key()
                          if b"-----BEGIN CERTIFICATE-----" in raw
                          else ser.load_pem_public_key(raw))
    except Exception as exc:  # noqa: BLE001 - any parser failure is a bad key
        raise KeyFileError(f"{source}: not a PEM public key ({_short(exc)})") from None
    return _rsa_public(loaded, source)


def load_public_key(path: StrPath) -> RSAPublicKey:
    """An RSA public key from a PEM file (public key, certificate) or a private key file."""
    path = os.fspath(path)
    data = _read_key_file(path, private=False)
    if b"PRIVATE KEY-----" in data:
        return load_private_key(path).public_key()
    return load_public_key_pem(data, path)


def public_pem(path: StrPath) -> str:
    """The SPKI PEM (``-----BEGIN PUBLIC KEY-----``) of a private or public key file."""
    return public_pem_bytes(load_public_key(path)).decode("ascii")


def fingerprint(path: StrPath) -> str:
    """``SHA256:...`` fingerprint of a private or public key file (see module doc)."""
    return key_fingerprint(load_public_key(path))


def fingerprint_hex(path: StrPath) -> str:
    return key_fingerprint_hex(load_public_key(path))


def describe_key(path: StrPath) -> dict[str, Any]:
    """Facts about a key file for display: path, kind, bits, fingerprints."""
    path = os.fspath(path)
    key = load_public_key(path)
    data = _read_key_file(path, private=False)
    return {
        "path": path,
        "kind": "private" if b"PRIVATE KEY-----" in data else "public",
        "bits": key.key_size,
        "fingerprint": key_fingerprint(key),
        "sha256_hex": key_fingerprint_hex(key),
    }
