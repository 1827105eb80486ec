"""Salted slow password hashes in PHC string form, using scrypt from the stdlib.

Format: ``$scrypt$ln=15,r=8,p=1$<salt>$<hash>`` where salt and hash are unpadded
standard base64 (the PHC convention). scrypt with N=2**15, r=8, p=1 costs ~32 MiB
and roughly 0.1 s per check: slow for an attacker, fine for an administrator.
Using ``hashlib.scrypt`` keeps the crypto stack out of local commands.
"""

from __future__ import annotations

import re

# base64, hashlib (OpenSSL), hmac and os.urandom are imported where used: every
# command validates hashes on load, only a few compute them.

DEFAULT_LOG_N = 15
DEFAULT_R = 8
DEFAULT_P = 1
SALT_BYTES = 16
HASH_BYTES = 32
MAX_PASSWORD_BYTES = 4096
# The parameters a stored hash may have: what verify_password computes (anything more is
# refused before it costs gigabytes), so a hash that validates is one that can verify.
MAX_LOG_N = 20
MAX_R = 32
MAX_P = 16
# scrypt needs 128 * r * 2**ln bytes; hashlib gives it at most 2 GiB (maxmem below is
# twice this): a stored hash that would need more could never verify, so it is refused.
MAX_SCRYPT_MEMORY = 512 * 1024 * 1024

_PHC = re.compile(
    r"^\$scrypt\$ln=(?P<ln>\d{1,2}),r=(?P<r>\d{1,2}),p=(?P<p>\d{1,2})"
    r"\$(?P<salt>[A-Za-z0-9+/]{11,88})\$(?P<hash>[A-Za-z0-9+/]{22,88})$"
)


class PasswordError(ValueError):
    pass


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    import base64

    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def _scrypt(password: str, salt: bytes, ln: int, r: int, p: int, dklen: int) -> bytes:
    import hashlib

    n = 1 << ln
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                          maxmem=2 * MAX_SCRYPT_MEMORY + 1024 * 1024, dklen=dklen)


def check_password_text(password: str) -> None:
    """Refuse passwords that cannot be typed back or stored safely."""
    if not password:
        raise PasswordError("the password is empty")
    if len(password.encode("utf-8")) > MAX_PASSWORD_BYTES:
        raise PasswordError(f"the password is longer than {MAX_PASSWORD_BYTES} bytes")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in password):
        raise PasswordError("the password contains control characters")


def hash_password(password: str, *, log_n: int | None = None,
                  salt: bytes | None = None) -> str:
    """PHC scrypt hash of ``password`` at ``log_n`` (:data:`DEFAULT_LOG_N` unless given,
    read when called); ``salt`` is random unless given (tests pin it)."""
    check_password_text(password)
    if log_n is None:
        log_n = DEFAULT_LOG_N
    if salt is None:
        import os

        salt = os.urandom(SALT_BYTES)
    digest = _scrypt(password, salt, log_n, DEFAULT_R, DEFAULT_P, HASH_BYTES)
    return f"$scrypt$ln={log_n},r={DEFAULT_R},p={DEFAULT_P}${_b64(salt)}${_b64(digest)}"


def is_valid_hash(phc: str) -> bool:
    """Whether ``phc`` is a hash :func:`verify_password` can check."""
    m = _PHC.match(phc)
    return m is not None and _in_range(int(m["ln"]), int(m["r"]), int(m["p"]))


def _in_range(ln: int, r: int, p: int) -> bool:
    return (1 <= ln <= MAX_LOG_N and 1 <= r <= MAX_R and 1 <= p <= MAX_P
            and 128 * r * (1 << ln) <= MAX_SCRYPT_MEMORY)


def verify_password(password: str, phc: str | None) -> bool:
    """Constant-time check of ``password`` against a stored PHC hash; False on any doubt."""
    if not phc or not password:
        return False
    m = _PHC.match(phc)
    if not m:
        return False
    ln, r, p = int(m["ln"]), int(m["r"]), int(m["p"])
    if not _in_range(ln, r, p):
        return False
    try:
        salt, expected = _unb64(m["salt"]), _unb64(m["hash"])
        actual = _scrypt(password, salt, ln, r, p, len(expected))
    except (ValueError, MemoryError):
        return False
    import hmac

    return hmac.compare_digest(actual, expected)
