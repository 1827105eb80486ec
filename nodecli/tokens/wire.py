"""Node bearer tokens and collaboration-service access tokens: build, decode, verify.

Wire format (field-notes.md "Bearer-token wire format"; interface.md 2.5)::

    token   = base64( zlib( inner ) )              standard alphabet, one line, padded
    inner   = payload "\\n==SIGNATURE==\\n" sigtext "\\n"
    payload = compact UTF-8 JSON object, for node tokens in this field order:
              {"user_id":..,"group_ids":[..],"scope":"node.<AK>:<role>:all",
               "auth_type":"access_key","expires_at":"YYYY-MM-DDTHH:MM:SSZ"}
              (group_ids only when given)
    sigtext = base64( RSASSA-PKCS1-v1_5 SHA-512 signature over the payload bytes ),
              wrapped at 60 characters per line

zlib uses the default level, so the same key and inputs give byte-identical tokens.

Decoding treats the input as hostile: the text is bounded in size, base64 must be
strict and canonical (the signature part alone may be wrapped with any whitespace,
since 60- and 76-column wrapping both occur), inflation is bounded (a zlib bomb stops
after ``MAX_INFLATED`` bytes of output), the envelope is split on the LAST delimiter,
and :func:`verify` checks the signature before it parses the payload. Every malformed
input raises :class:`TokenError` and nothing else.

``cryptography`` is imported inside the functions that need it. Reading the claims for
people (scopes, the ``token inspect`` report) is :mod:`nodecli.tokens.inspection`; who may
issue a token is :mod:`nodecli.tokens.issuing`.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from nodecli.errors import AuthError, UsageError
from nodecli.remote_json import float_or_text, int_or_text
from nodecli.timeparse import TimeParseError, describe_delta, format_utc, parse_iso8601, utc_now
from nodecli.values import no_constants, unique_keys

if TYPE_CHECKING:
    from pathlib import Path

    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey, RSAPublicKey

DELIMITER = b"\n==SIGNATURE==\n"
SIGNATURE_WRAP = 60
#: Longest token text accepted (characters, after removing a ``Bearer `` prefix).
MAX_TOKEN_CHARS = 256 * 1024
#: Most bytes inflation may produce; anything larger is refused as a zlib bomb.
MAX_INFLATED = 1024 * 1024
#: A 16384-bit RSA signature is 2048 bytes.
MAX_SIGNATURE_BYTES = 16384 // 8
MAX_JSON_DEPTH = 32
DEFAULT_LEEWAY = 60
DEFAULT_LIFETIME = timedelta(hours=1)
ROLES = ("admin", "user")
AUTH_TYPE = "access_key"

# (compiled on first use, by re's cache: creating a token never reads one)
_B64 = rb"[A-Za-z0-9+/]*={0,2}"
_SIG_SPACE = rb"[ \t\r\n]+"
_BEARER = r"(?i)^(?:authorization:\s*)?bearer(?:\s+|$)"
_ACCESS_KEY = re.compile(r"[A-Za-z0-9_.~-]{1,256}")


class TokenError(AuthError):
    """Any malformed, badly signed or expired token (exit 4).

    ``reason`` is a short machine-friendly cause: ``malformed``, ``bad signature``,
    ``expired``, ``unsupported``.
    """

    def __init__(self, message: str, *, reason: str = "malformed", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


class TokenInputError(UsageError):
    """Unusable values given to build a token (exit 2)."""


@dataclass(frozen=True, slots=True)
class DecodedToken:
    """A token taken apart without any trust: claims, exact payload bytes, signature."""

    claims: dict[str, Any]
    payload: bytes
    signature: bytes

    def __hash__(self) -> int:  # claims is a dict: hashed by the exact bytes instead
        return hash((self.payload, self.signature))

    @property
    def signature_bits(self) -> int:
        return len(self.signature) * 8


# -- building ----------------------------------------------------------------------------

def check_access_key(access_key: str) -> str:
    if (not isinstance(access_key, str) or not _ACCESS_KEY.fullmatch(access_key)
            or not access_key.strip(".")):
        shown = repr(access_key)[:60]
        raise TokenInputError(f"invalid access key id {shown}: use letters, digits and . _ ~ -")
    return access_key


def _check_text(value: object, what: str, limit: int = 1024) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TokenInputError(f"{what} must be a non-empty string")
    if len(value) > limit:
        raise TokenInputError(f"{what} is longer than {limit} characters")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise TokenInputError(f"{what} contains control characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise TokenInputError(f"{what} is not valid Unicode text") from None
    return value


def parse_group_ids(text: str | Sequence[str] | None) -> list[str] | None:
    """``g1,g2`` (or a list) to a list of group ids; ``None`` when not given."""
    if text is None:
        return None
    items = text.split(",") if isinstance(text, str) else list(text)
    groups = [g.strip() if isinstance(g, str) else g for g in items]
    if not groups or any(not g for g in groups):
        raise TokenInputError("--group-ids must be a comma-separated list of non-empty ids")
    return [_check_text(g, "group id", 256) for g in groups]


def node_scope(access_key: str, role: str) -> str:
    if role not in ROLES:
        raise TokenInputError(f"invalid scope role {role!r}: use admin or user")
    return f"node.{check_access_key(access_key)}:{role}:all"


def build_payload(access_key: str, user_id: str, group_ids: Sequence[str] | None,
                  role: str, expires_at: datetime | str) -> bytes:
    """The exact payload bytes (compact UTF-8 JSON, documented field order)."""
    claims: dict[str, Any] = {"user_id": _check_text(user_id, "user id")}
    groups = parse_group_ids(group_ids) if group_ids is not None else None
    if groups is not None:
        claims["group_ids"] = groups
    claims["scope"] = node_scope(access_key, role)
    claims["auth_type"] = AUTH_TYPE
    if isinstance(expires_at, datetime):
        claims["expires_at"] = format_utc(expires_at)
    else:
        try:
            claims["expires_at"] = format_utc(parse_iso8601(expires_at))
        except TimeParseError as exc:
            raise TokenInputError(str(exc)) from None
    return json.dumps(claims, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def wrap_signature(signature: bytes, width: int = SIGNATURE_WRAP) -> bytes:
    text = base64.b64encode(signature)
    return b"\n".join(text[i:i + width] for i in range(0, len(text), width))


def encode_token(payload: bytes, signature: bytes) -> str:
    """Assemble the envelope: payload, delimiter, wrapped signature, newline; zlib; base64."""
    inner = payload + DELIMITER + wrap_signature(signature) + b"\n"
    return base64.b64encode(zlib.compress(inner)).decode("ascii")


def sign_payload(payload: bytes, private_key: RSAPrivateKey) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    return private_key.sign(payload, padding.PKCS1v15(), hashes.SHA512())


def create_token(private_key: RSAPrivateKey | str | Path, access_key: str, user_id: str,
                 group_ids: Sequence[str] | str | None = None, role: str = "admin",
                 expires_at: datetime | str | None = None, *,
                 now: datetime | None = None) -> str:
    """A node bearer token for ``user_id`` on access key ``access_key``.

    ``private_key`` is a loaded RSA key or the path of a private key file (loaded with
    :func:`nodecli.tokens.keys.load_private_key`). ``expires_at`` defaults to one hour from
    ``now``. Raises :class:`TokenInputError` (exit 2) for unusable inputs.
    """
    if isinstance(private_key, str | os.PathLike):
        from nodecli.tokens.keys import load_private_key

        private_key = load_private_key(private_key)
    if isinstance(group_ids, str):
        group_ids = parse_group_ids(group_ids)
    if expires_at is None:
        expires_at = (now or utc_now()) + DEFAULT_LIFETIME
    payload = build_payload(access_key, user_id, group_ids, role, expires_at)
    return encode_token(payload, sign_payload(payload, private_key))


# -- decoding (hostile input) --------------------------------------------------------------

def _bad(message: str) -> TokenError:
    return TokenError(f"invalid token: {message}", reason="malformed")


def clean_token_text(token: str | bytes) -> str:
    """Strip surrounding whitespace and an optional ``Bearer `` prefix; bound the size."""
    if isinstance(token, bytes | bytearray):
        if len(token) > MAX_TOKEN_CHARS + 64:
            raise _bad(f"longer than {MAX_TOKEN_CHARS} characters")
        try:
            token = bytes(token).decode("ascii")
        except UnicodeDecodeError:
            raise _bad("contains bytes that are not base64 text") from None
    if not isinstance(token, str):
        raise _bad("not text")
    if len(token) > MAX_TOKEN_CHARS + 64:
        raise _bad(f"longer than {MAX_TOKEN_CHARS} characters")
    text = re.sub(_BEARER, "", token.strip(), count=1).strip()
    if not text:
        raise _bad("empty")
    if len(text) > MAX_TOKEN_CHARS:
        raise _bad(f"longer than {MAX_TOKEN_CHARS} characters")
    if not text.isascii():
        pos = next(i for i, c in enumerate(text) if not c.isascii())
        raise _bad(f"token is not base64: non-ASCII character at offset {pos}")
    return text


def b64decode_strict(data: bytes, what: str) -> bytes:
    """Standard-alphabet, padded, canonical base64 (no whitespace, no URL-safe letters)."""
    if not re.fullmatch(_B64, data) or len(data) % 4:
        bad = next((i for i, c in enumerate(data) if c not in
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="), None)
        if bad is not None and data[bad] in b" \t\r\n":
            raise _bad(f"{what} contains whitespace at offset {bad} (a token is one line: "
                       "remove the line breaks)")
        if bad is not None:
            shown = chr(data[bad]) if 0x21 <= data[bad] < 0x7F else f"\\x{data[bad]:02x}"
            extra = " (URL-safe base64 is not used by tokens)" if shown in "-_" else ""
            raise _bad(f"{what} is not base64: character {shown!r} at offset {bad}{extra}")
        raise _bad(f"{what} is not valid base64 (wrong length or padding)")
    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        raise _bad(f"{what} is not valid base64 (wrong length or padding)") from None
    if base64.b64encode(raw) != data:
        raise _bad(f"{what} is not canonical base64")
    return raw


def inflate_bounded(data: bytes, limit: int = MAX_INFLATED) -> bytes:
    """zlib-inflate at most ``limit`` bytes; bombs, truncation and trailing junk fail."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise _bad(f"not zlib data ({exc})") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise _bad(f"inflates to more than {limit} bytes (compression bomb?)")
    if not inflater.eof:
        raise _bad("zlib data is truncated")
    if inflater.unused_data:
        raise _bad("data after the end of the zlib stream")
    return out


def split_envelope(inner: bytes) -> tuple[bytes, bytes]:
    """(payload, signature bytes): split on the LAST delimiter, whitespace-tolerant signature."""
    payload, sep, sigtext = inner.rpartition(DELIMITER)
    if not sep:
        raise _bad("no ==SIGNATURE== delimiter")
    if not payload:
        raise _bad("empty payload")
    compact = re.sub(_SIG_SPACE, b"", sigtext)
    if not compact:
        raise _bad("empty signature")
    if len(compact) > (MAX_SIGNATURE_BYTES * 4) // 3 + 4:
        raise _bad("signature is too long")
    return payload, b64decode_strict(compact, "signature")


def unpack(token: str | bytes) -> tuple[bytes, bytes]:
    """Take the envelope apart: (payload bytes, signature bytes). No trust implied."""
    text = clean_token_text(token)
    compressed = b64decode_strict(text.encode("ascii"), "token")
    return split_envelope(inflate_bounded(compressed))


def _depth_ok(value: Any, depth: int = 0) -> bool:
    if depth > MAX_JSON_DEPTH:
        return False
    if isinstance(value, dict):
        return all(_depth_ok(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return all(_depth_ok(v, depth + 1) for v in value)
    return True


def _encodable(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodable(k) and _encodable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_encodable(v) for v in value)
    return True


def parse_claims(payload: bytes) -> dict[str, Any]:
    """The payload as a JSON object (strict UTF-8, no duplicate keys, bounded nesting)."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(f"payload is not UTF-8 (byte {exc.start})") from None
    if text.startswith("\ufeff"):
        raise _bad("payload starts with a byte-order mark")
    # Cheap depth pre-check so hostile nesting never reaches the recursive parser deeply.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _too_deep(text):
        raise _bad(f"payload nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        # (a number no int or float holds is kept as its text: a claim, not a crash)
        claims = json.loads(text, object_pairs_hook=unique_keys, parse_constant=no_constants,
                            parse_int=int_or_text, parse_float=float_or_text)
    except (ValueError, RecursionError) as exc:
        raise _bad(f"payload is not JSON ({_first_line(exc)})") from None
    if not isinstance(claims, dict):
        raise _bad(f"payload is {json_kind(claims)}, not an object")
    if not _depth_ok(claims) or not _encodable(claims):
        raise _bad("payload holds invalid text or nests too deeply")
    return claims


def _too_deep(text: str) -> bool:
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:120]


def decode_unverified(token: str | bytes) -> DecodedToken:
    """Decode a node bearer token or service access token WITHOUT checking its signature.

    For display only: nothing in the result is trustworthy until :func:`verify` passed.
    """
    payload, signature = unpack(token)
    return DecodedToken(parse_claims(payload), payload, signature)


# -- verification ----------------------------------------------------------------------------

def _public_key(public_key: RSAPublicKey | str | bytes) -> RSAPublicKey:
    if isinstance(public_key, str | bytes):
        from nodecli.tokens.keys import load_public_key_pem

        return load_public_key_pem(public_key)
    return public_key


def verify_signature(payload: bytes, signature: bytes,
                     public_key: RSAPublicKey | str | bytes) -> None:
    """RSASSA-PKCS1-v1_5 SHA-512 check; :class:`TokenError` ``bad signature`` on failure."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    key = _public_key(public_key)
    expected = (key.key_size + 7) // 8
    if len(signature) != expected:
        raise TokenError(
            f"token invalid: bad signature ({len(signature) * 8}-bit signature, "
            f"{key.key_size}-bit key: signed with another key)", reason="bad signature")
    try:
        key.verify(signature, payload, padding.PKCS1v15(), hashes.SHA512())
    except InvalidSignature:
        raise TokenError("token invalid: bad signature (not signed by the matching private key, "
                         "or altered)", reason="bad signature") from None


def token_expiry(claims: dict[str, Any]) -> datetime:
    """``expires_at`` as an aware UTC datetime (ISO 8601 text or seconds since the epoch)."""
    value = claims.get("expires_at") if isinstance(claims, dict) else None
    if value is None:
        raise _bad("no expires_at claim")
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise _bad("expires_at is out of range") from None
    if not isinstance(value, str):
        raise _bad("expires_at is not a time")
    try:
        return parse_iso8601(value)
    except TimeParseError:
        raise _bad(f"expires_at {value[:40]!r} is not an ISO 8601 time") from None


def verify(token: str | bytes, public_key_pem: RSAPublicKey | str | bytes,
           now: datetime | None = None, leeway: float = DEFAULT_LEEWAY) -> dict[str, Any]:
    """Check signature, then claims and expiry; return the (now trusted) claims.

    Raises :class:`TokenError` with ``reason`` ``malformed``, ``bad signature`` or
    ``expired`` and a one-line message. ``leeway`` seconds of clock skew are allowed.
    """
    payload, signature = unpack(token)
    verify_signature(payload, signature, public_key_pem)
    claims = parse_claims(payload)
    problems = claim_problems(claims)
    if problems:
        raise _bad(problems[0])
    expires = token_expiry(claims)
    now = now or utc_now()
    if now >= expires + timedelta(seconds=max(0.0, float(leeway))):
        ago = describe_delta((now - expires).total_seconds())
        raise TokenError(f"token expired at {format_utc(expires)} ({ago} ago)", reason="expired")
    return claims


# -- claims --------------------------------------------------------------------------------------

def claim_problems(claims: dict[str, Any]) -> list[str]:
    """Structural problems of a claims object (empty list when well formed)."""
    problems = []
    user_id = claims.get("user_id")
    if user_id is None:
        problems.append("no user_id claim")
    elif isinstance(user_id, bool) or not isinstance(user_id, str | int | dict):
        problems.append("user_id is neither text, number nor object")
    scope = claims.get("scope")
    if scope is None:
        problems.append("no scope claim")
    elif not isinstance(scope, str):
        problems.append("scope is not a string")
    groups = claims.get("group_ids")
    if groups is not None and not (isinstance(groups, list) and
                                   all(isinstance(g, str | int) for g in groups)):
        problems.append("group_ids is not a list of ids")
    if "expires_at" not in claims:
        problems.append("no expires_at claim")
    else:
        try:
            token_expiry(claims)
        except TokenError as exc:
            problems.append(exc.message.removeprefix("invalid token: "))
    return problems


def json_kind(value: Any) -> str:
    """How JSON names a value's type, for messages: 'an array', 'null', 'a string'..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
