"""Reading a token's claims: scope names, scope checks, and the ``token inspect`` report.

Nothing here checks a signature: :func:`inspect` describes a token decoded without a key
(:func:`nodecli.tokens.wire.decode_unverified`), and :func:`has_scope` judges claims that the
caller has already verified (or, for the service pre-flight, only reads as a hint).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nodecli.timeparse import describe_left, format_utc, utc_now
from nodecli.tokens.wire import TokenError, claim_problems, decode_unverified, token_expiry

_NODE_SCOPE = re.compile(r"node\.(?P<ak>[^:\s]+):(?P<role>[^:\s]+):(?P<res>[^:\s]+)")


@dataclass(frozen=True, slots=True)
class Scope:
    """One scope name: ``node.AK:role:all``, ``user:all``, ``admin:all``, ``self``..."""

    raw: str
    kind: str  # "node", "user", "admin", "self" or "other"
    access_key: str | None = None
    role: str | None = None
    resource: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"scope": self.raw, "kind": self.kind, "access_key": self.access_key,
                "role": self.role, "resource": self.resource}


@dataclass(slots=True)
class Inspection:
    """What ``token inspect`` shows (machine form: :meth:`as_dict`)."""

    claims: dict[str, Any]
    scopes: list[Scope]
    expires_at: datetime | None
    now: datetime
    signature_bits: int
    payload_bytes: int
    problems: list[str] = field(default_factory=list)

    @property
    def seconds_left(self) -> int | None:
        if self.expires_at is None:
            return None
        return int((self.expires_at - self.now).total_seconds())

    @property
    def expired(self) -> bool | None:
        left = self.seconds_left
        return None if left is None else left <= 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "claims": self.claims,
            "user_id": self.claims.get("user_id"),
            "group_ids": self.claims.get("group_ids"),
            "auth_type": self.claims.get("auth_type"),
            "scopes": [s.as_dict() for s in self.scopes],
            "expires_at": format_utc(self.expires_at) if self.expires_at else None,
            "expired": self.expired,
            "seconds_left": self.seconds_left,
            "signature_bits": self.signature_bits,
            "payload_bytes": self.payload_bytes,
            "problems": list(self.problems),
        }

    def time_left_text(self) -> str:
        left = self.seconds_left
        if left is None:
            return "unknown (no valid expires_at)"
        return describe_left(left)


def parse_scope(scope: str | Iterable[str] | None) -> list[Scope]:
    """Space-separated scope names (or a list of them) to :class:`Scope` entries."""
    if scope is None:
        return []
    names = scope.split() if isinstance(scope, str) else [s for s in scope if isinstance(s, str)]
    out = []
    for name in names:
        m = _NODE_SCOPE.fullmatch(name)
        if m:
            out.append(Scope(name, "node", m["ak"], m["role"], m["res"]))
        elif name in ("user:all", "admin:all"):
            role, res = name.split(":")
            out.append(Scope(name, role, None, role, res))
        elif name == "self":
            out.append(Scope(name, "self"))
        else:
            out.append(Scope(name, "other"))
    return out


def has_scope(claims: dict[str, Any], needed: str) -> bool:
    """True if the token grants ``needed``.

    A ``node.AK:admin:R`` scope also satisfies ``node.AK:user:R`` (administration of an
    access key includes using it); everything else must match exactly.
    """
    scope = claims.get("scope") if isinstance(claims, dict) else None
    granted = parse_scope(scope if isinstance(scope, str) else None)
    if any(s.raw == needed for s in granted):
        return True
    want = parse_scope(needed)
    if len(want) != 1 or want[0].kind != "node" or want[0].role != "user":
        return False
    w = want[0]
    return any(s.kind == "node" and s.access_key == w.access_key and s.role == "admin"
               and s.resource == w.resource for s in granted)


def inspect(token: str | bytes, now: datetime | None = None) -> Inspection:
    """Decode without a key and describe: claims, scopes, expiry, time left, problems."""
    decoded = decode_unverified(token)
    claims = decoded.claims
    problems = claim_problems(claims)
    try:
        expires: datetime | None = token_expiry(claims)
    except TokenError:
        expires = None
    scope = claims.get("scope")
    return Inspection(
        claims=claims,
        scopes=parse_scope(scope if isinstance(scope, str) else None),
        expires_at=expires,
        now=now or utc_now(),
        signature_bits=decoded.signature_bits,
        payload_bytes=len(decoded.payload),
        problems=problems,
    )
