"""Token encoder/decoder: golden vectors, round trips, hostile input."""

from __future__ import annotations

import base64
import json
import shutil
import tracemalloc
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.tokens import inspection as token_inspection
from nodecli.tokens import wire as tokens
from nodecli.tokens.inspection import has_scope, parse_scope
from nodecli.tokens.keys import generate_private_key, load_private_key, public_pem_bytes
from nodecli.tokens.wire import (
    MAX_INFLATED,
    TokenError,
    TokenInputError,
    build_payload,
    create_token,
    decode_unverified,
    inflate_bounded,
    token_expiry,
    verify,
)

DATA = Path(__file__).parent / "data"
NOW = datetime(2030, 6, 15, 12, 0, 0, tzinfo=UTC)
GOLDEN = ["golden_groups", "golden_user", "golden_utf8"]


@pytest.fixture(scope="module")
def golden_key(tmp_path_factory: pytest.TempPathFactory):
    # git does not keep the 0600 mode: load a private copy (TEST-ONLY key, see make_golden.sh)
    copy = tmp_path_factory.mktemp("golden") / "golden_key.pem"
    shutil.copyfile(DATA / "golden_key.pem", copy)
    copy.chmod(0o600)
    return load_private_key(copy, state_dir=copy.parent)


@pytest.fixture(scope="module")
def golden_pub() -> bytes:
    return (DATA / "golden_key.pub").read_bytes()


@pytest.fixture(scope="module")
def small_key():
    return generate_private_key(1024)


def _golden(name: str, cols: int) -> str:
    return (DATA / f"{name}.{cols}.token").read_text().strip()


# -- golden vectors (made by tests/data/make_golden.sh with openssl) -------------------------

@pytest.mark.parametrize("name", GOLDEN)
def test_encoder_is_byte_identical_to_manual_procedure(name: str, golden_key) -> None:
    payload_text = (DATA / f"{name}.json").read_bytes()
    claims = json.loads(payload_text)
    ak, role = claims["scope"].removeprefix("node.").rsplit(":", 2)[:2]
    payload = build_payload(ak, claims["user_id"], claims.get("group_ids"), role,
                            datetime.fromisoformat(claims["expires_at"]))
    assert payload == payload_text
    token = create_token(golden_key, ak, claims["user_id"], claims.get("group_ids"), role,
                         claims["expires_at"])
    assert token == _golden(name, 60)


@pytest.mark.parametrize("cols", [60, 76])
@pytest.mark.parametrize("name", GOLDEN)
def test_decoder_accepts_60_and_76_column_signatures(name: str, cols: int, golden_pub) -> None:
    token = _golden(name, cols)
    claims = verify(token, golden_pub, now=NOW)
    assert claims == json.loads((DATA / f"{name}.json").read_bytes())
    assert decode_unverified(token).payload == (DATA / f"{name}.json").read_bytes()


def test_golden_payload_field_order_and_compactness() -> None:
    payload = build_payload("AK1", "alice", ["g1", "g2"], "user",
                            datetime(2031, 1, 1, 0, 0, 0, 999, tzinfo=UTC))
    assert payload == (b'{"user_id":"alice","group_ids":["g1","g2"],"scope":"node.AK1:user:all",'
                       b'"auth_type":"access_key","expires_at":"2031-01-01T00:00:00Z"}')
    no_groups = build_payload("AK1", "alice", None, "admin", "2031-01-01T02:00:00+02:00")
    assert no_groups == (b'{"user_id":"alice","scope":"node.AK1:admin:all",'
                         b'"auth_type":"access_key","expires_at":"2031-01-01T00:00:00Z"}')


def test_inner_layout(small_key) -> None:
    token = create_token(small_key, "AK", "u", None, "admin", NOW + timedelta(hours=1))
    inner = zlib.decompress(base64.b64decode(token))
    _payload, sig = inner.split(b"\n==SIGNATURE==\n")
    lines = sig.split(b"\n")
    assert lines[-1] == b""  # trailing newline
    assert all(len(line) == 60 for line in lines[:-2]) and 0 < len(lines[-2]) <= 60
    assert token == base64.b64encode(zlib.compress(inner)).decode()  # default level
    assert "\n" not in token


def test_default_expiry_is_one_hour(small_key) -> None:
    token = create_token(small_key, "AK", "u", now=NOW)
    assert token_expiry(decode_unverified(token).claims) == NOW + timedelta(hours=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("AK:x", "u", None, "admin"), "access key"),
        (("AK", "", None, "admin"), "user id"),
        (("AK", "u\n", None, "admin"), "control"),
        (("AK", "u", ["g", ""], "admin"), "group-ids"),
        (("AK", "u", None, "root"), "role"),
        (("", "u", None, "admin"), "access key"),
    ],
)
def test_create_refuses_bad_inputs(args, message: str, small_key) -> None:
    with pytest.raises(TokenInputError, match=message):
        create_token(small_key, *args, expires_at=NOW + timedelta(hours=1))


def test_group_ids_text_is_split(small_key) -> None:
    token = create_token(small_key, "AK", "u", " g1 ,g2", "user", NOW + timedelta(hours=1))
    assert decode_unverified(token).claims["group_ids"] == ["g1", "g2"]


# -- verify --------------------------------------------------------------------------------

def test_verify_reasons(small_key, golden_key, golden_pub) -> None:
    token = create_token(golden_key, "AK", "u", None, "admin", NOW + timedelta(minutes=5))
    assert verify(token, golden_pub, now=NOW)["user_id"] == "u"
    assert verify("Bearer " + token, golden_pub.decode(), now=NOW)["scope"] == "node.AK:admin:all"
    assert verify(f"  bearer   {token}\n", golden_pub, now=NOW)
    with pytest.raises(TokenError, match="expired at 2030-06-15T12:05:00Z") as exc:
        verify(token, golden_pub, now=NOW + timedelta(minutes=10))
    assert exc.value.reason == "expired"
    # inside the leeway: still valid; leeway 0: expired at the exact second
    assert verify(token, golden_pub, now=NOW + timedelta(minutes=5, seconds=30), leeway=60)
    with pytest.raises(TokenError, match="expired"):
        verify(token, golden_pub, now=NOW + timedelta(minutes=5), leeway=0)
    other = public_pem_bytes(small_key)
    with pytest.raises(TokenError, match="bad signature") as exc:
        verify(token, other, now=NOW)
    assert exc.value.reason == "bad signature"
    assert exc.value.exit_code == 4


def test_signature_checked_before_payload_is_parsed(golden_key, golden_pub) -> None:
    # A payload that is not JSON but correctly signed: only then is it a payload error.
    payload = b"not json"
    signed = tokens.encode_token(payload, tokens.sign_payload(payload, golden_key))
    with pytest.raises(TokenError, match="not JSON"):
        verify(signed, golden_pub, now=NOW)
    # Same payload with a forged signature: refused for the signature, never parsed.
    forged = tokens.encode_token(payload, b"\x00" * 256)
    with pytest.raises(TokenError, match="bad signature"):
        verify(forged, golden_pub, now=NOW)


def test_tampered_payload_fails_signature(golden_key, golden_pub) -> None:
    token = create_token(golden_key, "AK", "bob", None, "user", NOW + timedelta(hours=1))
    d = decode_unverified(token)
    evil = d.payload.replace(b":user:", b":admin:")
    with pytest.raises(TokenError, match="bad signature"):
        verify(tokens.encode_token(evil, d.signature), golden_pub, now=NOW)


def test_verify_requires_claims(golden_key, golden_pub) -> None:
    payload = b'{"user_id":"u","scope":"node.A:user:all"}'
    token = tokens.encode_token(payload, tokens.sign_payload(payload, golden_key))
    with pytest.raises(TokenError, match="expires_at"):
        verify(token, golden_pub, now=NOW)


# -- service OAuth tokens (interface.md 2.5) -----------------------------------------------

def test_service_token_with_object_user_and_epoch(golden_key, golden_pub) -> None:
    claims = {"user_id": {"id": 17, "name": "Zoë"}, "group_ids": [5, 3, 1],
              "scope": "user:all node.AK9:user:all self",
              "expires_at": "2030-06-15T12:30:00.000Z"}
    payload = json.dumps(claims, separators=(",", ":")).encode()
    token = tokens.encode_token(payload, tokens.sign_payload(payload, golden_key))
    assert verify(token, golden_pub, now=NOW) == claims
    info = token_inspection.inspect(token, now=NOW)
    assert [s.kind for s in info.scopes] == ["user", "node", "self"]
    assert info.seconds_left == 1800 and not info.expired and not info.problems
    assert has_scope(claims, "user:all") and has_scope(claims, "node.AK9:user:all")
    assert not has_scope(claims, "node.AK9:admin:all") and not has_scope(claims, "admin:all")
    epoch = {"user_id": "x", "scope": "self", "expires_at": int(NOW.timestamp()) + 5}
    assert token_expiry(epoch) == NOW + timedelta(seconds=5)


def test_parse_scope_and_admin_implies_user() -> None:
    (s,) = parse_scope("node.AK-1_x:admin:all")
    assert (s.kind, s.access_key, s.role, s.resource) == ("node", "AK-1_x", "admin", "all")
    claims = {"scope": "node.AK:admin:all"}
    assert has_scope(claims, "node.AK:user:all")
    assert not has_scope(claims, "node.OTHER:user:all")
    assert not has_scope({"scope": "node.AK:user:all"}, "node.AK:admin:all")
    assert not has_scope({"scope": 5}, "self")
    assert parse_scope("weird:thing")[0].kind == "other"


def test_inspect_reports_problems_without_failing(golden_key) -> None:
    payload = b'{"scope":7,"expires_at":"soon"}'
    token = tokens.encode_token(payload, tokens.sign_payload(payload, golden_key))
    info = token_inspection.inspect(token, now=NOW)
    assert info.expires_at is None and info.expired is None
    assert any("user_id" in p for p in info.problems)
    assert any("scope" in p for p in info.problems)
    assert info.as_dict()["signature_bits"] == 2048


# -- hostile input -------------------------------------------------------------------------

def _wrap(inner: bytes) -> str:
    return base64.b64encode(zlib.compress(inner)).decode()


SIG = base64.b64encode(b"\x01" * 128)


def test_non_ascii_bytes_raise_token_error() -> None:
    with pytest.raises(TokenError):
        decode_unverified(b"\xff\xfe\x00")
    with pytest.raises(TokenError):
        decode_unverified(12)  # type: ignore[arg-type]


def test_delimiter_inside_user_id_splits_on_last(golden_key, golden_pub) -> None:
    # A user id holding the delimiter text: the builder refuses control characters, and
    # in a foreign token JSON escapes the newlines; the decoder splits on the LAST
    # delimiter, so the claims come back intact.
    user = "a\n==SIGNATURE==\nQUJD"
    with pytest.raises(TokenInputError, match="control"):
        build_payload("AK", user, None, "user", "2031-01-01")
    payload = json.dumps({"user_id": user, "scope": "self", "expires_at": "2031-01-01"},
                         separators=(",", ":")).encode()
    token = tokens.encode_token(payload, tokens.sign_payload(payload, golden_key))
    assert verify(token, golden_pub, now=NOW)["user_id"] == user
    # A hostile payload with a RAW delimiter inside: still split on the last one, so the
    # signature covers everything before it; the payload is then refused as JSON.
    raw_payload = b'{"user_id":"a\n==SIGNATURE==\nQUJD","scope":"self","expires_at":"2031"}'
    raw = tokens.encode_token(raw_payload, tokens.sign_payload(raw_payload, golden_key))
    p, s = tokens.unpack(raw)
    assert p == raw_payload
    tokens.verify_signature(p, s, golden_pub)
    with pytest.raises(TokenError, match="not JSON"):
        verify(raw, golden_pub, now=NOW)


def _bomb(total: int) -> bytes:
    """A valid zlib stream of ``total`` zero bytes, built without compressing them all."""
    chunk = bytes(1 << 20)
    c = zlib.compressobj(9)
    head = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    body = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    assert c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH) == body
    n = total // len(chunk)
    adler = 1
    for _ in range(n):
        adler = zlib.adler32(chunk, adler)
    # final empty fixed-Huffman block ("\x03\x00") then the Adler-32 of all the output
    return head + body * (n - 1) + b"\x03\x00" + adler.to_bytes(4, "big")


def test_bomb_builder_is_a_real_zlib_stream() -> None:
    assert zlib.decompress(_bomb(8 << 20)) == bytes(8 << 20)


def test_one_gib_zlib_bomb_is_refused_with_little_memory() -> None:
    bomb = _bomb(1 << 30)
    assert len(bomb) < 2_000_000
    token = base64.b64encode(bomb).decode()
    tracemalloc.start()
    try:
        with pytest.raises(TokenError, match="longer than"):  # the text bound stops it
            decode_unverified(token)
        with pytest.raises(TokenError, match="more than"):  # the inflate bound stops it
            inflate_bounded(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MAX_INFLATED  # never near the 1 GiB


def test_bomb_within_the_text_bound_is_refused_by_inflate() -> None:
    bomb = _bomb(64 << 20)
    token = base64.b64encode(bomb).decode()
    assert len(token) < tokens.MAX_TOKEN_CHARS
    tracemalloc.start()
    try:
        with pytest.raises(TokenError, match="compression bomb"):
            decode_unverified(token)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MAX_INFLATED


# -- properties ----------------------------------------------------------------------------

ids = st.text(st.characters(min_codepoint=0x20, blacklist_categories=("Cs",),
                            blacklist_characters="\x7f"), min_size=1, max_size=40) \
    .filter(lambda s: s.strip() != "")
# check_access_key refuses ids made only of dots ("." / ".."): they would be path parts
access_keys = st.from_regex(r"\A[A-Za-z0-9_.~-]{1,30}\Z").filter(lambda ak: ak.strip("."))
expiries = st.datetimes(min_value=datetime(2031, 1, 1), max_value=datetime(2200, 1, 1),
                        timezones=st.just(UTC))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ak=access_keys, user=ids, groups=st.none() | st.lists(ids.filter(lambda g: "," not in g),
                                                             min_size=1, max_size=5),
       role=st.sampled_from(["admin", "user"]), exp=expiries)
def test_round_trip(small_key, ak: str, user: str, groups, role: str, exp: datetime) -> None:
    token = create_token(small_key, ak, user, groups, role, exp)
    claims = verify(token, public_pem_bytes(small_key), now=NOW)
    assert claims["user_id"] == user
    assert claims.get("group_ids") == ([g.strip() for g in groups] if groups else None)
    assert claims["scope"] == f"node.{ak}:{role}:all"
    assert claims["auth_type"] == "access_key"
    assert token_expiry(claims) == exp.replace(microsecond=0)
    assert list(claims) == ["user_id", *(["group_ids"] if groups else []), "scope", "auth_type",
                            "expires_at"]
    assert has_scope(claims, f"node.{ak}:user:all")


def _refused_cleanly(exc: TokenError) -> None:
    assert exc.reason == "malformed"
    assert str(exc).startswith("invalid token: ") and "\n" not in str(exc)


_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=10)
_claims = st.dictionaries(st.text(max_size=12), _json_value, max_size=6)


@settings(max_examples=200)
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_random_input_only_raises_token_error(data) -> None:
    try:
        got = decode_unverified(data)
    except TokenError as exc:
        _refused_cleanly(exc)
    else:  # whatever decodes re-encodes to the same payload and signature
        again = decode_unverified(tokens.encode_token(got.payload, got.signature))
        assert (again.payload, again.signature, again.claims) == \
            (got.payload, got.signature, got.claims)


@settings(max_examples=200)
@given(_claims, st.binary(min_size=1, max_size=300))
def test_any_json_object_envelope_decodes_to_its_claims(claims, signature) -> None:
    payload = json.dumps(claims).encode()
    got = decode_unverified(tokens.encode_token(payload, signature))
    assert got.claims == claims
    assert (got.payload, got.signature) == (payload, signature)


@settings(max_examples=200)
@given(st.binary(max_size=400), st.sampled_from([b"", tokens.DELIMITER]),
       st.binary(max_size=200))
def test_random_inner_only_raises_token_error(head: bytes, delim: bytes, tail: bytes) -> None:
    inner = head + delim + tail
    try:
        got = decode_unverified(_wrap(inner))
    except TokenError as exc:
        _refused_cleanly(exc)
    else:  # only an envelope with a JSON-object payload and a base64 signature decodes
        payload, sep, _ = inner.rpartition(tokens.DELIMITER)
        assert sep and got.payload == payload
        assert got.claims == json.loads(payload.decode("utf-8"))
        assert isinstance(got.claims, dict) and got.signature


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_tokens_never_verify(golden_key, golden_pub, data) -> None:
    token = _golden("golden_user", 60)
    raw = bytearray(base64.b64decode(token))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] ^= data.draw(st.integers(1, 255))
    mutated = base64.b64encode(bytes(raw)).decode()
    try:
        verify(mutated, golden_pub, now=NOW)
    except TokenError:
        return
    # Only a flip in bits that inflate ignores (padding of the last deflate byte) may
    # pass, and then the content is exactly the original.
    assert tokens.unpack(mutated) == tokens.unpack(token)


@given(st.lists(st.sampled_from([" ", "\n", "\r\n", "\t"]), min_size=0, max_size=3),
       st.integers(min_value=4, max_value=120))
def test_signature_whitespace_tolerated(seps, width: int) -> None:
    payload = b'{"user_id":"u","scope":"self","expires_at":"2031-01-01T00:00:00Z"}'
    sig = base64.b64encode(bytes(range(256)))
    sep = "".join(seps).encode() or b"\n"
    wrapped = sep.join(sig[i:i + width] for i in range(0, len(sig), width))
    d = decode_unverified(_wrap(payload + b"\n==SIGNATURE==\n" + wrapped + b"\n"))
    assert d.signature == bytes(range(256)) and d.payload == payload


_GOOD = {"user_id": "u1", "scope": "node.AK1:user:all", "expires_at": "2031-01-01T00:00:00Z"}


@pytest.mark.parametrize(("change", "problem"), [
    ({"user_id": None}, "no user_id claim"),
    ({"user_id": True}, "user_id is neither text, number nor object"),
    ({"user_id": 1.5}, "user_id is neither text, number nor object"),
    ({"scope": None}, "no scope claim"),
    ({"scope": ["node.AK1:user:all"]}, "scope is not a string"),
    ({"group_ids": "g1"}, "group_ids is not a list of ids"),
    ({"group_ids": [1, None]}, "group_ids is not a list of ids"),
    ({"expires_at": None}, "no expires_at claim"),
    ({"expires_at": "soon"}, "expires_at 'soon' is not an ISO 8601 time"),
])
def test_signed_token_with_bad_claims_never_verifies(small_key, change, problem) -> None:
    claims = {k: v for k, v in {**_GOOD, **change}.items() if v is not None}
    assert tokens.claim_problems(claims) == [problem]
    payload = json.dumps(claims).encode()
    token = tokens.encode_token(payload, tokens.sign_payload(payload, small_key))
    with pytest.raises(TokenError) as info:
        verify(token, public_pem_bytes(small_key), now=NOW)
    assert info.value.reason == "malformed" and problem in str(info.value)


def test_good_claims_have_no_problems_and_verify(small_key) -> None:
    claims = {**_GOOD, "user_id": {"id": 7}, "group_ids": ["g", 2]}
    assert tokens.claim_problems(claims) == []
    payload = json.dumps(claims).encode()
    token = tokens.encode_token(payload, tokens.sign_payload(payload, small_key))
    assert verify(token, public_pem_bytes(small_key), now=NOW) == claims
    other = generate_private_key(1024)
    with pytest.raises(TokenError, match="bad signature") as info:
        verify(token, public_pem_bytes(other), now=NOW)
    assert info.value.reason == "bad signature"
    with pytest.raises(TokenError, match="1024-bit") as info:  # wrong length, said in bits
        verify(token, public_pem_bytes(generate_private_key(2048)), now=NOW)
    assert info.value.reason == "bad signature"


# -- exact messages of the decoder, and its boundaries ----------------------------------------

_BIG = "A" * (tokens.MAX_TOKEN_CHARS + 4)


@pytest.mark.parametrize(("token", "message"), [
    ("", "empty"),
    ("Bearer ", "empty"),
    ("Authorization: Bearer  ", "empty"),
    ("!!!!", "token is not base64: character '!' at offset 0"),
    ("eJw-", "token is not base64: character '-' at offset 3 (URL-safe base64 is not used by "
             "tokens)"),
    ("eJw_", "token is not base64: character '_' at offset 3 (URL-safe base64 is not used by "
             "tokens)"),
    ("eJw", "token is not valid base64 (wrong length or padding)"),
    ("QQ=", "token is not valid base64 (wrong length or padding)"),
    ("QR==", "token is not canonical base64"),
    ("QQ==QQ==", "token is not valid base64 (wrong length or padding)"),
    ("QUJD\nREVG", "token contains whitespace at offset 4 (a token is one line: remove the "
                   "line breaks)"),
    ("QUJD\tREVG", "token contains whitespace at offset 4 (a token is one line: remove the "
                   "line breaks)"),
    ("QU\x01D", "token is not base64: character '\\\\x01' at offset 2"),
    ("QUJD\x7f", "token is not base64: character '\\\\x7f' at offset 4"),
    ("QUJD~", "token is not base64: character '~' at offset 4"),
    ("QUJDé", "token is not base64: non-ASCII character at offset 4"),
    (base64.b64encode(b"plain text, not zlib").decode(),
     "not zlib data (Error -3 while decompressing data: incorrect header check)"),
    (base64.b64encode(zlib.compress(b"x" * 100)[:-6]).decode(), "zlib data is truncated"),
    (base64.b64encode(zlib.compress(b"{}") + b"junk").decode(),
     "data after the end of the zlib stream"),
    (_wrap(b'{"a":1}'), "no ==SIGNATURE== delimiter"),
    (_wrap(b"\n==SIGNATURE==\n" + SIG), "empty payload"),
    (_wrap(b'{"a":1}\n==SIGNATURE==\n'), "empty signature"),
    (_wrap(b'{"a":1}\n==SIGNATURE==\n\n \n'), "empty signature"),
    (_wrap(b'{"a":1}\n==SIGNATURE==\nAAA*'), "signature is not base64: character '*' at "
                                             "offset 3"),
    (_wrap(b'{"a":1}\n==SIGNATURE==\n' + b"A" * 4000), "signature is too long"),
    (_wrap(b'\xff\xfe{}\n==SIGNATURE==\n' + SIG), "payload is not UTF-8 (byte 0)"),
    (_wrap(b'[1,2]\n==SIGNATURE==\n' + SIG), "payload is an array, not an object"),
    (_wrap(b'"s"\n==SIGNATURE==\n' + SIG), "payload is a string, not an object"),
    (_wrap(b'null\n==SIGNATURE==\n' + SIG), "payload is null, not an object"),
    (_wrap(b'{"a":NaN}\n==SIGNATURE==\n' + SIG), "payload is not JSON (NaN is not JSON)"),
    (_wrap(b'{"a":1,"a":2}\n==SIGNATURE==\n' + SIG),
     "payload is not JSON (duplicate key 'a')"),
    (_wrap(b'{"a":"\\ud800"}\n==SIGNATURE==\n' + SIG),
     "payload holds invalid text or nests too deeply"),
    (_wrap(b'\xef\xbb\xbf{}\n==SIGNATURE==\n' + SIG), "payload starts with a byte-order mark"),
    (_wrap(b'{"a":' + b"[" * 32 + b"]" * 32 + b"}\n==SIGNATURE==\n" + SIG),
     "payload nests deeper than 32 levels"),
    (_wrap(b'{"a":' * 33 + b"1" + b"}" * 33 + b"\n==SIGNATURE==\n" + SIG),
     "payload nests deeper than 32 levels"),
    (_wrap(b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n==SIGNATURE==\n" + SIG),
     "payload nests deeper than 32 levels"),  # (never a RecursionError)
    (_BIG, f"longer than {tokens.MAX_TOKEN_CHARS} characters"),
    ("é" * 10, "token is not base64: non-ASCII character at offset 0"),
    (b"\xff\xfe", "contains bytes that are not base64 text"),
    (b"A" * (tokens.MAX_TOKEN_CHARS + 65), f"longer than {tokens.MAX_TOKEN_CHARS} characters"),
    (12, "not text"),
])
def test_decoder_messages_are_exact(token, message) -> None:
    """Every malformed token: one exact line (never a traceback), exit 4."""
    with pytest.raises(TokenError) as exc:
        decode_unverified(token)
    assert str(exc.value) == f"invalid token: {message}"
    assert exc.value.reason == "malformed" and exc.value.exit_code == 4


@pytest.mark.parametrize("payload", [
    b'{"a":' + b"[" * 31 + b"]" * 31 + b"}",               # 32 levels: the limit
    b'{"a":' * 32 + b"1" + b"}" * 32,
    b'{"a":"' + b"[" * 40 + b'"}',                         # brackets in a string do not nest
    b'{"a":"\\"' + b"[" * 40 + b'"}',                      # nor after an escaped quote
    b'{"a":"\\\\"}',
])
def test_decoder_accepts_nesting_up_to_the_limit(payload: bytes) -> None:
    got = decode_unverified(_wrap(payload + b"\n==SIGNATURE==\n" + SIG))
    assert got.claims == json.loads(payload) and got.payload == payload


def test_token_text_limits_are_inclusive() -> None:
    # exactly MAX_TOKEN_CHARS after removing the prefix and whitespace: read as base64
    body = "A" * tokens.MAX_TOKEN_CHARS
    with pytest.raises(TokenError) as exc:
        decode_unverified("Bearer " + body + "\n")
    assert "longer than" not in str(exc.value)
    with pytest.raises(TokenError) as exc:
        decode_unverified(body + "AAAA")
    assert str(exc.value) == f"invalid token: longer than {tokens.MAX_TOKEN_CHARS} characters"
    assert tokens.clean_token_text(b"  Bearer\tQUJD \n") == "QUJD"
    assert tokens.clean_token_text("authorization: BEARER QUJD") == "QUJD"
    assert tokens.clean_token_text("bearerQUJD") == "bearerQUJD"  # a prefix needs a space


def test_inflate_bound_is_exact() -> None:
    data = zlib.compress(b"x" * 1000)
    assert inflate_bounded(data, 1000) == b"x" * 1000
    with pytest.raises(TokenError) as exc:
        inflate_bounded(data, 999)
    assert str(exc.value) == "invalid token: inflates to more than 999 bytes (compression bomb?)"


def test_signature_length_bound_is_exact() -> None:
    limit = (tokens.MAX_SIGNATURE_BYTES * 4) // 3 + 4
    ok = base64.b64encode(b"\x01" * ((limit // 4) * 3))
    assert len(ok) <= limit
    assert tokens.split_envelope(b"{}" + tokens.DELIMITER + ok)[1] == b"\x01" * ((limit // 4) * 3)
    too_long = b"A" * (limit + 1)
    with pytest.raises(TokenError, match="signature is too long"):
        tokens.split_envelope(b"{}" + tokens.DELIMITER + too_long)


def test_wrap_signature_lines_and_envelope_layout() -> None:
    sig = bytes(range(256)) * 2
    wrapped = tokens.wrap_signature(sig)
    lines = wrapped.split(b"\n")
    assert all(len(line) == 60 for line in lines[:-1]) and 0 < len(lines[-1]) <= 60
    assert b"".join(lines) == base64.b64encode(sig)
    assert tokens.wrap_signature(sig, 76).split(b"\n")[0] == base64.b64encode(sig)[:76]
    inner = zlib.decompress(base64.b64decode(tokens.encode_token(b'{"a":1}', sig)))
    assert inner == b'{"a":1}' + tokens.DELIMITER + wrapped + b"\n"


def test_verify_messages_are_exact(small_key, golden_key, golden_pub) -> None:
    token = create_token(golden_key, "AK", "u", None, "admin", NOW + timedelta(minutes=5))
    with pytest.raises(TokenError) as exc:
        verify(token, golden_pub, now=NOW + timedelta(minutes=10))
    assert str(exc.value) == "token expired at 2030-06-15T12:05:00Z (5m ago)"
    # a negative leeway counts as none; a float leeway is honoured to the second
    with pytest.raises(TokenError, match="expired"):
        verify(token, golden_pub, now=NOW + timedelta(minutes=5), leeway=-30)
    assert verify(token, golden_pub, now=NOW + timedelta(minutes=5, seconds=1), leeway=1.5)
    with pytest.raises(TokenError, match="expired"):
        verify(token, golden_pub, now=NOW + timedelta(minutes=5, seconds=2), leeway=1.5)
    assert verify(token, golden_pub, now=NOW + timedelta(minutes=5, seconds=59))  # default 60
    with pytest.raises(TokenError):
        verify(token, golden_pub, now=NOW + timedelta(minutes=6))
    with pytest.raises(TokenError) as exc:
        verify(token, public_pem_bytes(small_key), now=NOW)
    assert str(exc.value) == ("token invalid: bad signature (2048-bit signature, 1024-bit key: "
                              "signed with another key)")
    other = generate_private_key(2048)
    with pytest.raises(TokenError) as exc:
        verify(token, public_pem_bytes(other), now=NOW)
    assert str(exc.value) == ("token invalid: bad signature (not signed by the matching "
                              "private key, or altered)")
    assert exc.value.reason == "bad signature"


@pytest.mark.parametrize(("claims", "message"), [
    ({}, "invalid token: no expires_at claim"),
    ([], "invalid token: no expires_at claim"),
    ({"expires_at": None}, "invalid token: no expires_at claim"),
    ({"expires_at": True}, "invalid token: expires_at is not a time"),
    ({"expires_at": [1]}, "invalid token: expires_at is not a time"),
    ({"expires_at": 1e300}, "invalid token: expires_at is out of range"),
    ({"expires_at": "x" * 50}, f"invalid token: expires_at {'x' * 40!r} is not an ISO 8601 "
                               "time"),
])
def test_token_expiry_refusals(claims, message) -> None:
    with pytest.raises(TokenError) as exc:
        token_expiry(claims)
    assert str(exc.value) == message


def test_token_expiry_forms() -> None:
    assert token_expiry({"expires_at": "2030-06-15T12:00:00Z"}) == NOW
    assert token_expiry({"expires_at": NOW.timestamp()}) == NOW
    assert token_expiry({"expires_at": 0}) == datetime(1970, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("kind", [str, bytes])
def test_surrounding_whitespace_counts_only_up_to_64_characters(kind) -> None:
    limit = tokens.MAX_TOKEN_CHARS

    def message(text: str) -> str:
        with pytest.raises(TokenError) as exc:
            decode_unverified(text if kind is str else text.encode())
        return str(exc.value)

    too_long = f"invalid token: longer than {limit} characters"
    # the text itself is at the limit: read (and refused as not zlib), never "too long"
    assert message("A" * limit).startswith("invalid token: not zlib data")
    assert message(" " * 64 + "A" * limit).startswith("invalid token: not zlib data")
    assert message(" " * 65 + "A" * limit) == too_long


def test_signature_text_at_the_length_limit_is_read() -> None:
    limit = (tokens.MAX_SIGNATURE_BYTES * 4) // 3 + 4
    with pytest.raises(TokenError) as exc:
        tokens.split_envelope(b"{}" + tokens.DELIMITER + b"A" * limit)
    assert str(exc.value) == "invalid token: signature is not valid base64 (wrong length or " \
                             "padding)"
