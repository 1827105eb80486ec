"""Boundaries of the token wire format that mutation testing found unchecked: the
values a token may be built from (access key, user id, group ids: their exact limits
and words), the nesting limit of a payload at exactly 32 levels whatever the brackets in
its strings, text a decoder must refuse wherever it sits (a key, a list), numbers no int
or float holds, and the bounds of the token text given as bytes. In-process: no key
is generated (a fixed fake signature; decoding does not check it)."""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from nodecli.tokens import wire
from nodecli.tokens.wire import (
    MAX_TOKEN_CHARS,
    TokenError,
    TokenInputError,
    build_payload,
    check_access_key,
    decode_unverified,
    parse_group_ids,
)

SIG = base64.b64encode(b"\x01" * 128)
WHEN = "2030-06-15T12:00:00Z"


def _token(payload: bytes) -> str:
    return base64.b64encode(zlib.compress(payload + wire.DELIMITER + SIG)).decode()


def _refusal(payload: bytes) -> str:
    with pytest.raises(TokenError) as exc:
        decode_unverified(_token(payload))
    return str(exc.value)


def _input_error(call, *args) -> str:
    with pytest.raises(TokenInputError) as exc:
        call(*args)
    return str(exc.value)


# -- building ---------------------------------------------------------------------------

def test_an_access_key_of_dots_only_is_refused_and_any_other_accepted() -> None:
    for key in (".", "..", "..."):
        assert _input_error(check_access_key, key) == (
            f"invalid access key id {key!r}: use letters, digits and . _ ~ -")
    for key in ("XX", "X.X", ".a.", "~", "-", "_"):
        assert check_access_key(key) == key


def test_a_bad_access_key_is_shown_cut_to_60_characters() -> None:
    key = "a" * 200 + "!"
    shown = repr(key)[:60]
    assert len(shown) == 60
    assert _input_error(check_access_key, key) == (
        f"invalid access key id {shown}: use letters, digits and . _ ~ -")


def test_a_user_id_holds_at_most_1024_characters() -> None:
    payload = build_payload("AK", "u" * 1024, None, "admin", WHEN)
    assert json.loads(payload)["user_id"] == "u" * 1024
    assert _input_error(build_payload, "AK", "u" * 1025, None, "admin", WHEN) == (
        "user id is longer than 1024 characters")
    assert _input_error(build_payload, "AK", " ", None, "admin", WHEN) == (
        "user id must be a non-empty string")


@pytest.mark.parametrize("char", ["\x00", "\x1f", "\x7f"])
def test_a_control_character_in_a_user_id_is_refused(char: str) -> None:
    assert _input_error(build_payload, "AK", f"a{char}b", None, "admin", WHEN) == (
        "user id contains control characters")


@pytest.mark.parametrize("char", [" ", "~", "\x80", "\xa0", "é"])
def test_the_characters_around_the_control_ones_are_kept(char: str) -> None:
    payload = build_payload("AK", f"a{char}b", None, "admin", WHEN)
    assert json.loads(payload)["user_id"] == f"a{char}b"


def test_a_group_id_holds_at_most_256_characters() -> None:
    assert parse_group_ids(["g" * 256]) == ["g" * 256]
    assert _input_error(parse_group_ids, ["g" * 257]) == (
        "group id is longer than 256 characters")
    assert _input_error(parse_group_ids, "a,g\x01") == "group id contains control characters"


def test_a_group_id_that_is_not_text_is_refused_as_such() -> None:
    assert _input_error(parse_group_ids, ["g1", 5]) == "group id must be a non-empty string"
    assert _input_error(parse_group_ids, "a,,b") == (
        "--group-ids must be a comma-separated list of non-empty ids")
    assert parse_group_ids(" a , b ") == ["a", "b"]


# -- decoding ---------------------------------------------------------------------------

def test_32_levels_are_read_even_with_brackets_inside_strings() -> None:
    # more than 32 brackets in all (so the quick scan runs), 32 levels of nesting
    payload = b'{"s":"[[[[{{{{","a":' + b"[" * 31 + b"]" * 31 + b"}"
    assert decode_unverified(_token(payload)).claims == json.loads(payload)
    # an escaped backslash before the closing quote ends the string: what follows counts
    payload = b'{"s":"\\\\","a":' + b"[" * 31 + b"]" * 31 + b"}"
    assert decode_unverified(_token(payload)).claims == json.loads(payload)
    # lists closed before count no more: 32 levels after them are read
    payload = b'{"b":[[],[[]]],"a":' + b"[" * 31 + b"]" * 31 + b"}"
    assert decode_unverified(_token(payload)).claims == json.loads(payload)


def test_33_levels_are_refused_after_an_escape_in_a_string() -> None:
    payload = b'{"s":"\\n","a":' + b"[" * 32 + b"]" * 32 + b"}"
    assert _refusal(payload) == "invalid token: payload nests deeper than 32 levels"


def test_33_levels_reached_after_shallower_lists_closed_are_refused() -> None:
    # levels: { 1, then 30 [ (31), [] at 32 and closed, then [[]] reaches 33
    payload = b'{"a":' + b"[" * 30 + b"[],[[]]" + b"]" * 30 + b"}"
    assert _refusal(payload) == "invalid token: payload nests deeper than 32 levels"


@pytest.mark.parametrize("payload", [
    b'{"\\ud800":1}',            # a lone surrogate as a key
    b'{"a":["ok","\\udfff"]}',   # in a list
    b'{"a":{"b":"\\ud800"}}',    # in a nested object
])
def test_text_no_encoding_holds_is_refused_wherever_it_is(payload: bytes) -> None:
    assert _refusal(payload) == "invalid token: payload holds invalid text or nests too deeply"


def test_numbers_no_int_or_float_holds_are_kept_as_their_text() -> None:
    digits = "1" * 5000
    payload = b'{"n":' + digits.encode() + b',"f":1e999,"g":-1e999,"x":1.5}'
    claims = decode_unverified(_token(payload)).claims
    assert claims == {"n": digits, "f": "1e999", "g": "-1e999", "x": 1.5}


def test_a_json_error_is_cut_to_120_characters() -> None:
    key = "k" * 300
    payload = json.dumps({key: 1}).encode()[:-1] + b',"' + key.encode() + b'":2}'
    message = f"duplicate key {key!r}"[:120]
    assert _refusal(payload) == f"invalid token: payload is not JSON ({message})"


def test_bytes_beyond_the_bound_are_too_long_before_they_are_read_as_text() -> None:
    for size in (MAX_TOKEN_CHARS + 65, MAX_TOKEN_CHARS + 66):
        with pytest.raises(TokenError) as exc:
            decode_unverified(b"\xff" * size)
        assert str(exc.value) == f"invalid token: longer than {MAX_TOKEN_CHARS} characters"
    with pytest.raises(TokenError) as exc:
        decode_unverified(b"\xff" * (MAX_TOKEN_CHARS + 64))
    assert str(exc.value) == "invalid token: contains bytes that are not base64 text"
