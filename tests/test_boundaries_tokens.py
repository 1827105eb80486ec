"""Boundaries of the token sources found by mutation testing: how many old tokens are
kept for redaction, what a token file may hold (a "Bearer " prefix, blanks, 1 MiB), the
renewal margin of a minted token at its exact edges, and the claims a minted token
carries. In-process, on a clock the test turns: no node is needed to mint a token."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nodecli.errors import NotFoundError, UsageError
from nodecli.tokens.source import (
    MAX_SEEN,
    MAX_TOKEN_FILE,
    FileToken,
    MintedToken,
    read_token_file,
)
from nodecli.tokens.wire import decode_unverified, token_expiry


@pytest.fixture(scope="module")
def key_file(tmp_path_factory) -> Path:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path_factory.mktemp("mint") / "ak1.pem"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.private_bytes(serialization.Encoding.PEM,
                                   serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))
    return path


def _expiry(token: str) -> float:
    return token_expiry(decode_unverified(token).claims).timestamp()


# -- token files ------------------------------------------------------------------------------

def test_a_token_file_keeps_the_last_8_tokens_for_redaction(tmp_path):
    assert MAX_SEEN == 8
    path = tmp_path / "tok"
    source = FileToken(str(path))
    assert source.label == f"token file {path}"
    for i in range(9):
        path.write_text(f"token-{i}")
        assert source.current() == f"token-{i}"
        assert source.current() == f"token-{i}"  # read again: not seen twice
        assert source.seen() == [f"token-{j}" for j in range(max(0, i - 7), i + 1)]
    assert len(source.seen()) == 8


def test_a_token_file_renews_only_with_another_token(tmp_path):
    path = tmp_path / "tok"
    path.write_text("one")
    source = FileToken(str(path))
    assert source.current() == "one"
    assert source.renew() is False
    path.write_text("two")
    assert source.renew() is True
    assert source.current() == "two" and source.renew() is False


def test_a_token_file_missing_or_empty_before_any_token_is_an_error(tmp_path):
    path = tmp_path / "tok"
    with pytest.raises(NotFoundError):
        FileToken(str(path)).current()
    path.write_text(" \n")
    with pytest.raises(UsageError, match="is empty"):
        FileToken(str(path)).current()


@pytest.mark.parametrize("text, token", [
    ("Bearer abc\n", "abc"), ("  Bearer   abc  \n", "abc"), ("abc", "abc"),
    ("bearer abc", "bearer abc"), ("Bearerabc", "Bearerabc"), ("\tabc def\n", "abc def"),
])
def test_what_a_token_file_holds(tmp_path, text, token):
    path = tmp_path / "tok"
    path.write_text(text)
    assert read_token_file(path) == token


def test_a_token_file_that_is_only_a_prefix_is_empty(tmp_path):
    path = tmp_path / "tok"
    path.write_text("Bearer  \n")
    with pytest.raises(UsageError, match=f"token file {path} is empty"):
        read_token_file(path)


def test_a_token_file_holds_at_most_1_mib(tmp_path):
    assert MAX_TOKEN_FILE == 1024 * 1024
    path = tmp_path / "tok"
    path.write_bytes(b"t" * MAX_TOKEN_FILE)
    assert len(read_token_file(path)) == MAX_TOKEN_FILE
    path.write_bytes(b"t" * (MAX_TOKEN_FILE + 1))
    with pytest.raises(UsageError, match=f"larger than {MAX_TOKEN_FILE} bytes"):
        read_token_file(path)


# -- minted tokens ----------------------------------------------------------------------------

def _minted(key_file: Path, ttl: float, now: list[float], **kw) -> MintedToken:
    return MintedToken(str(key_file), "ak1", "alice", ttl=ttl, clock=lambda: now[0], **kw)


@pytest.mark.parametrize("ttl, margin", [(3600.0, 300.0), (1500.0, 300.0), (1000.0, 200.0),
                                         (10.0, 2.0), (5.0, 1.0), (3.0, 1.0)])
def test_the_renewal_margin_is_a_fifth_of_the_life_between_1_and_300_seconds(
        key_file, ttl, margin):
    now = [1_000_000.0]
    source = _minted(key_file, ttl, now)
    assert source.margin == margin
    first = source.current()
    now[0] += ttl - margin  # exactly the margin left: still good
    assert source.current() == first and source.minted == 1
    now[0] += 0.5  # less than the margin left
    assert source.current() != first and source.minted == 2


def test_a_minted_token_carries_the_user_groups_role_and_life(key_file):
    now = [1_000_000.0]
    source = MintedToken(str(key_file), "ak1", "alice", ["g1", "g2"], role="admin",
                         ttl=600, clock=lambda: now[0])
    assert source.label == f"token minted for user 'alice' with key {key_file}"
    claims = decode_unverified(source.current()).claims
    assert claims["user_id"] == "alice" and claims["group_ids"] == ["g1", "g2"]
    assert claims["scope"] == "node.ak1:admin:all"
    assert token_expiry(claims) == datetime.fromtimestamp(1_000_600, UTC)
    plain = _minted(key_file, 600, now)
    claims = decode_unverified(plain.current()).claims
    assert "group_ids" not in claims and claims["scope"] == "node.ak1:user:all"


def test_a_token_renewed_within_the_same_second_ends_a_second_later(key_file):
    now = [1_000_000.25]
    source = _minted(key_file, 600, now)
    first = source.current()
    assert _expiry(first) == 1_000_600
    assert source.renew() is True
    second = source.current()
    assert second != first and _expiry(second) == 1_000_601
    assert source.renew() is True and _expiry(source.current()) == 1_000_602
    assert source.minted == 3 and source.seen()[-3:] == [first, second, source.current()]
    now[0] += 10  # later: the life counts from now again
    assert source.renew() is True and _expiry(source.current()) == 1_000_610


def test_the_nodes_clock_learnt_later_mints_a_token_on_it(key_file):
    now = [1_000_000.0]
    source = _minted(key_file, 600, now)
    first = source.current()
    source.offset = 0.0  # the same clock: the token stays
    assert source.current() == first and source.minted == 1
    source.offset = 3600.0  # the node is an hour ahead
    second = source.current()
    assert second != first and _expiry(second) == 1_000_000 + 3600 + 600
    now[0] += 600 - 120  # exactly the margin (120 s) left on the node's clock
    assert source.current() == second
    now[0] += 0.5
    assert source.current() != second and source.minted == 3


def test_a_renewal_right_after_the_clock_changed_still_ends_later(key_file):
    now = [1_000_000.0]
    source = _minted(key_file, 600, now, offset=-30.0)
    first = source.current()
    assert _expiry(first) == 1_000_000 - 30 + 600
    assert source.renew() is True
    assert _expiry(source.current()) == 1_000_000 - 30 + 601


def test_a_minted_token_lives_an_hour_by_default(key_file):
    now = [1_000_000.0]
    source = MintedToken(str(key_file), "ak1", "alice", clock=lambda: now[0])
    assert _expiry(source.current()) == 1_000_000 + 3600


@pytest.mark.parametrize("offset", [-30.0, 3600.0], ids=["behind", "ahead"])
def test_renewals_on_a_node_clock_that_is_off(key_file, offset):
    now = [1_000_000.0]
    source = _minted(key_file, 600, now, offset=offset)
    first = source.current()
    assert _expiry(first) == 1_000_000 + offset + 600
    assert source.renew() is True  # the same second: one second more
    assert source.current() != first
    assert _expiry(source.current()) == 1_000_000 + offset + 601
    now[0] += 10  # ten seconds later: the life counts from the node's now
    assert source.renew() is True
    assert _expiry(source.current()) == 1_000_010 + offset + 600


def test_a_token_file_is_named_in_its_errors_and_read_as_utf8_with_replacements(tmp_path):
    path = tmp_path / "tok"
    with pytest.raises(NotFoundError) as info:
        read_token_file(path)
    assert str(info.value) == f"token file {path}: no such file"
    path.write_bytes(b"\xffabc\n")
    assert read_token_file(path) == "\ufffdabc"
