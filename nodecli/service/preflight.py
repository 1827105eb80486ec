"""The pre-flight of a service call: what the access token says about itself.

Pre-flight (:func:`preflight`): before any request, the token is decoded without a key
(interface.md 2.5; the same decoder as ``nodecli token inspect``) and refused with a
clear message when it has expired or lacks the scope the call needs. interface.md calls
the token "opaque to clients": one that does not decode as that envelope is sent as it
is (the pre-flight is skipped, and ``-v`` says so); the service then decides.
Operations and workspaces are resources "of the authenticated user on other
servers that accept the token" (interface.md 5.4), so every call needs ``user:all``;
an ``admin:all`` token (an organization admin's, which interface.md 4.4 lets list the
whole organization) is accepted as well. A ``self``-only or node-only token is refused.
The service still checks the signature: the pre-flight only avoids a bare 401/403.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nodecli.errors import AuthError, shorten

#: Scopes that allow a call to the operations and workspaces resources (any one of them).
OPERATIONS_SCOPES: tuple[str, ...] = ("user:all", "admin:all")
OPAQUE = "opaque: contents unknown"


@dataclass(slots=True)
class TokenInfo:
    """What the pre-flight learnt from the token (decoded without a key).

    ``opaque`` when the token is not the documented envelope (interface.md 2.5 calls
    tokens "opaque to clients"): then nothing else is known.
    """

    user_id: Any
    group_ids: list[Any] | None
    scopes: list[str]
    expires_at: datetime | None
    seconds_left: int | None
    opaque: bool = False
    why_opaque: str = ""

    def as_dict(self) -> dict[str, Any]:
        from nodecli.timeparse import format_utc

        if self.opaque:
            return {"opaque": True, "contents": "unknown"}
        return {"user_id": self.user_id, "group_ids": self.group_ids, "scopes": self.scopes,
                "expires_at": format_utc(self.expires_at) if self.expires_at else None,
                "seconds_left": self.seconds_left}

    def who(self) -> str:
        """For messages: 'user alice' or the opaque note."""
        return OPAQUE if self.opaque else f"user {shorten(self.user_id, 80)}"


def describe_token(token: str, now: datetime | None = None) -> TokenInfo:
    """Decode (no key, no trust) an access token; an opaque :class:`TokenInfo` when it
    is not the documented envelope."""
    from nodecli.timeparse import utc_now
    from nodecli.tokens.wire import TokenError, decode_unverified, token_expiry

    try:
        claims = decode_unverified(token).claims
    except TokenError as exc:
        return TokenInfo(None, None, [], None, None, opaque=True, why_opaque=exc.message)
    try:
        expires: datetime | None = token_expiry(claims)
    except TokenError:
        expires = None
    scope = claims.get("scope")
    scopes = scope.split() if isinstance(scope, str) else []
    groups = claims.get("group_ids")
    now = now or utc_now()
    left = int((expires - now).total_seconds()) if expires else None
    return TokenInfo(claims.get("user_id"), groups if isinstance(groups, list) else None,
                     scopes, expires, left)


def preflight(token: str, needed: Sequence[str] = OPERATIONS_SCOPES, *,
              now: datetime | None = None, what: str = "this call") -> TokenInfo:
    """Refuse an envelope token that is expired or lacks every scope in ``needed``.

    ``needed`` lists alternatives: one of them is enough. Raises :class:`AuthError`
    (exit 4) with the reason and the fix; returns what the token says otherwise. An
    opaque token passes (``info.opaque``): only the service can judge it.
    """
    from nodecli.timeparse import describe_delta, format_utc
    from nodecli.tokens.inspection import has_scope

    info = describe_token(token, now)
    if info.opaque:
        return info
    if info.expires_at is None:
        raise AuthError("the service access token has no valid expires_at",
                        hint="get a new token from the authorization server")
    if info.seconds_left is not None and info.seconds_left <= 0:
        raise AuthError(
            f"the service access token expired at {format_utc(info.expires_at)} "
            f"({describe_delta(-info.seconds_left)} ago); nothing was sent",
            hint="get a new token and give it with --token-file F, NODECLI_TOKEN, or "
                 "'nodecli service add NAME --url URL --force'")
    claims = {"scope": " ".join(info.scopes)}
    if not any(has_scope(claims, s) for s in needed):
        have = " ".join(info.scopes) or "none"
        raise AuthError(
            f"the service access token does not allow {what}: it needs scope "
            f"{' or '.join(needed)} and has: {have}; nothing was sent",
            hint="ask the authorization server for a token with scope user:all")
    return info
