"""Password hashes checked against a second scrypt implementation.

The golden PHC strings below were computed once with OpenSSL's command-line KDF, not with
nodecli or Python's hashlib, e.g.::

    openssl kdf -keylen 32 -kdfopt hexpass:<utf-8 hex> -kdfopt hexsalt:000102...0f \\
        -kdfopt n:32768 -kdfopt r:8 -kdfopt p:1 -kdfopt maxmem_bytes:1073741824 \\
        -binary SCRYPT | base64

A change of algorithm, parameters, salt handling or encoding in nodecli (or in the
emulator, which verifies with the same module) makes these tests fail.
"""

from __future__ import annotations

import pytest

from nodecli.users import passwords

GOLDEN = [
    ("correct horse battery staple", bytes(range(16)), 15,
     "$scrypt$ln=15,r=8,p=1$AAECAwQFBgcICQoLDA0ODw$eo40JB24mNWRdcaWU4xBdGepdf/laQaEJfFhiNMVnFg"),
    ("pässwörd-ü", b"nodecsalt-2026!!", 15,
     "$scrypt$ln=15,r=8,p=1$bm9kZWNzYWx0LTIwMjYhIQ$GAlIkBwx6jDc2KNCab/bvgrKzMHjG0yzLRJqe8lNRM0"),
    ("x", bytes.fromhex("ffeeddccbbaa99887766554433221100"), 10,
     "$scrypt$ln=10,r=8,p=1$/+7dzLuqmYh3ZlVEMyIRAA$KHAq1qHrh4wxlnB2NyRl6pZyhzLvs2w7DXP0ijnc6Mw"),
]


@pytest.mark.parametrize(("password", "salt", "log_n", "phc"), GOLDEN)
def test_nodecli_hash_equals_openssl_hash(password: str, salt: bytes, log_n: int,
                                          phc: str) -> None:
    assert passwords.hash_password(password, log_n=log_n, salt=salt) == phc


@pytest.mark.parametrize(("password", "salt", "log_n", "phc"), GOLDEN)
def test_openssl_hash_verifies(password: str, salt: bytes, log_n: int, phc: str) -> None:
    assert passwords.is_valid_hash(phc)
    assert passwords.verify_password(password, phc) is True
    assert passwords.verify_password(password + " ", phc) is False
    assert passwords.verify_password(password[:-1] or "y", phc) is False


def test_tampered_golden_hash_fails() -> None:
    password, _, _, phc = GOLDEN[2]
    head, salt_b64, digest = phc.rsplit("$", 2)
    flipped = ("A" if digest[0] != "A" else "B") + digest[1:]
    assert passwords.verify_password(password, f"{head}${salt_b64}${flipped}") is False
    # a different cost parameter with the same salt and digest does not verify either
    assert passwords.verify_password(password, phc.replace("ln=10", "ln=11")) is False


def test_a_digest_that_differs_in_any_byte_is_refused_in_constant_time(monkeypatch) -> None:
    import base64
    import hmac

    password, _, _, phc = GOLDEN[2]
    head, salt_b64, digest_b64 = phc.rsplit("$", 2)
    digest = base64.b64decode(digest_b64 + "=")
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", recording)
    for i in range(len(digest)):
        changed = bytearray(digest)
        changed[i] ^= 0x01
        stored = base64.b64encode(bytes(changed)).decode().rstrip("=")
        assert passwords.verify_password(password, f"{head}${salt_b64}${stored}") is False
    assert passwords.verify_password(password, phc) is True
    # every verdict came from the constant-time comparison of the two whole digests
    assert len(compared) == len(digest) + 1
    assert all(len(a) == len(b) == len(digest) for a, b in compared)


def test_random_salts_differ_but_both_verify() -> None:
    a = passwords.hash_password("s3cret", log_n=4)
    b = passwords.hash_password("s3cret", log_n=4)
    assert a != b
    assert passwords.verify_password("s3cret", a) and passwords.verify_password("s3cret", b)


def test_password_text_boundaries() -> None:
    limit = passwords.MAX_PASSWORD_BYTES
    passwords.check_password_text("é" * (limit // 2))  # exactly the limit, in UTF-8 bytes
    with pytest.raises(passwords.PasswordError, match="longer than"):
        passwords.check_password_text("é" * (limit // 2) + "x")
    for bad in ("a\x00", "a\x1fb", "\x7f", "tab\there"):
        with pytest.raises(passwords.PasswordError, match="control characters"):
            passwords.check_password_text(bad)
    for fine in (" ", "~", "\x80", "\xa0", "pässwörd"):  # DEL is the only one above 0x1f
        passwords.check_password_text(fine)


# Cost-parameter boundaries, with digests made by OpenSSL as above (password
# "bound-check", salt 00..0f, n=2**ln); only ln/r/p vary. A hash outside the accepted
# range must be refused before any work, even when its digest is right.
_BOUND_SALT = "AAECAwQFBgcICQoLDA0ODw"
BOUNDARY = [
    # (ln, r, p, digest, accepted)
    (1, 1, 1, "Hdemwcm5XSWVlooQcEXAlv+WJMD4bwaqasjURh4PEa4", True),
    (1, 32, 1, "yNDNeSAUlQg1nb/2QS3BU/10e/WI4po3cj1RcJp9338", True),
    (1, 33, 1, "H0C+DsyG+ijWam+051s3o7HRoEgbBNO+AOl82NVSFpw", False),
    (1, 1, 16, "mWc2J2eQaYbmEABtJfjllxqz0OSfSEYFUpEFoTMvgEg", True),
    (1, 1, 17, "D5DuJCaFatjCU5txRHTcnZ5R2GidY1Kpem8lNBgqNUg", False),
]


@pytest.mark.parametrize(("ln", "r", "p", "digest", "accepted"), BOUNDARY)
def test_verify_cost_parameter_boundaries(ln: int, r: int, p: int, digest: str,
                                          accepted: bool) -> None:
    phc = f"$scrypt$ln={ln},r={r},p={p}${_BOUND_SALT}${digest}"
    assert passwords.verify_password("bound-check", phc) is accepted
    assert passwords.verify_password("bound-checK", phc) is False


@pytest.mark.parametrize(("params", "valid"), [
    ("ln=0,r=8,p=1", False), ("ln=1,r=8,p=1", True), ("ln=19,r=8,p=1", True),
    # scrypt's memory (128 * r * 2**ln) must stay within what hashlib can be given
    ("ln=20,r=4,p=1", True), ("ln=20,r=8,p=1", False), ("ln=17,r=32,p=1", True),
    ("ln=18,r=32,p=1", False),
    ("ln=21,r=8,p=1", False), ("ln=15,r=0,p=1", False), ("ln=15,r=1,p=1", True),
    ("ln=15,r=8,p=0", False), ("ln=15,r=8,p=1", True),
    # the bounds verify_password keeps: a hash that validates is one that can verify
    ("ln=15,r=32,p=1", True), ("ln=15,r=33,p=1", False), ("ln=15,r=99,p=1", False),
    ("ln=15,r=8,p=16", True), ("ln=15,r=8,p=17", False), ("ln=15,r=8,p=99", False),
])
def test_is_valid_hash_parameter_boundaries(params: str, valid: bool) -> None:
    phc = GOLDEN[0][3].replace("ln=15,r=8,p=1", params)
    assert passwords.is_valid_hash(phc) is valid


def test_empty_password_or_hash_never_verifies() -> None:
    # OpenSSL digest of the EMPTY password (hexpass: empty), ln=4: even a hash that
    # matches "" must not let an empty password in.
    empty_phc = f"$scrypt$ln=4,r=8,p=1${_BOUND_SALT}$AdfLIQlgszRE3k0QSFUyWVPW5fMbtvpjabg27VebhU0"
    assert passwords.verify_password("", empty_phc) is False
    assert passwords.verify_password("x", None) is False
    assert passwords.verify_password("x", "") is False


def test_unpadded_base64_keeps_trailing_characters() -> None:
    # a 15-byte salt encodes to 20 characters without padding, the last one an "X"
    salt = b"nodecli-salt-0W"
    phc = passwords.hash_password("x", log_n=4, salt=salt)
    assert phc == ("$scrypt$ln=4,r=8,p=1$bm9kZWNsaS1zYWx0LTBX"
                   "$hzZ8emHwf3aJavrRI5XqPz3o4E7V4GEG3RDr+DfnFqU")
    assert passwords.verify_password("x", phc) is True


def test_control_character_message_is_exact() -> None:
    with pytest.raises(passwords.PasswordError) as err:
        passwords.check_password_text("a\x07")
    assert str(err.value) == "the password contains control characters"


def _stored_costs(home) -> list[str]:
    import re

    text = (home / "config.toml").read_text()
    return re.findall(r"\$scrypt\$(ln=\d+,r=\d+,p=\d+)\$", text)


def test_a_user_added_by_nodecli_is_hashed_at_the_product_cost(run_cli, home):
    """As a user runs it (a subprocess: the suite's cheap in-process cost does not reach
    it), ``user add`` stores scrypt ln=15, r=8, p=1, and ``passwd`` keeps that cost."""
    assert run_cli("xuser", "add", "x", "--docroot", "/srv").exit_code == 0
    r = run_cli("user", "add", "alice", "--xuser", "x", "--password-stdin", input="pw-1\n")
    assert r.exit_code == 0, r.stderr
    assert _stored_costs(home) == ["ln=15,r=8,p=1"]


@pytest.mark.real_password_cost
def test_the_marker_gives_in_process_hashes_the_product_cost(invoke, home):
    assert invoke("xuser", "add", "x", "--docroot", "/srv").exit_code == 0
    r = invoke("user", "add", "alice", "--xuser", "x", "--password-stdin", input="pw-1\n")
    assert r.exit_code == 0, r.stderr
    assert _stored_costs(home) == [f"ln={passwords.DEFAULT_LOG_N},r=8,p=1"] == ["ln=15,r=8,p=1"]


def test_in_process_hashes_are_cheap_and_still_verify(invoke, home):
    assert invoke("xuser", "add", "x", "--docroot", "/srv").exit_code == 0
    r = invoke("user", "add", "alice", "--xuser", "x", "--password-stdin", input="pw-1\n")
    assert r.exit_code == 0, r.stderr
    [cost] = _stored_costs(home)
    assert cost == "ln=4,r=8,p=1"
