"""Who may issue a node bearer token: the issuing node user and its password check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from nodecli.errors import AuthError, UsageError


def check_issuer(cfg: Any, name: str | None) -> Any:
    """The node user ``name`` from ``cfg`` if it may issue bearer tokens.

    It must exist (exit 5 otherwise), its transfer user must have a restriction (a
    docroot-only transfer user cannot serve access keys or bearer tokens, interface.md
    5.2, so the node would refuse the token: exit 1), and it must have a password (exit 4).
    """
    from nodecli.errors import NodecliError, NotFoundError

    if not name:
        raise UsageError("a node user is needed: -u/--user NAME")
    user = cfg.users.get(name)
    if user is None:
        # A remote node's users are not in this config: name both ways to a token.
        raise NotFoundError(
            f"node user {name!r} does not exist in this machine's config (token create "
            "signs with a local node user's password; it does not ask a remote node)",
            hint=f"either add the node user here ('nodecli user add {name} --xuser XUSER'; "
                 "'nodecli -l' lists them), or, for a remote node, save a profile that "
                 "signs its own tokens: 'nodecli node add NAME --url URL --access-key AK "
                 "--mint-key PRIVATE.pem --mint-user-id UID' (docs/nodes.md)")
    xuser = cfg.transfer_users.get(user.transfer_user)
    if xuser is None or not xuser.restrictions:
        what = "a docroot" if xuser is not None and xuser.docroot is not None else "no restriction"
        raise NodecliError(
            f"node user {name!r} cannot issue bearer tokens: its transfer user "
            f"{user.transfer_user!r} has {what}; access keys and bearer tokens need a "
            "transfer user with a restriction (such as file:////data/*)",
            hint=f"give transfer user {user.transfer_user!r} a restriction instead of a "
                 "docroot (see: nodecli xuser --help)",
        )
    if not user.password_hash:
        raise AuthError(f"node user {name!r} has no password set",
                        hint=f"set one with: nodecli -mu {name}")
    return user


def check_issuer_password(user: Any, password: str) -> None:
    """Verify ``password`` against the node user's stored hash (exit 4 when wrong)."""
    from nodecli.users.passwords import verify_password

    if not getattr(user, "password_hash", None):
        raise AuthError(f"node user {user.name!r} has no password set",
                        hint=f"set one with: nodecli -mu {user.name}")
    if not verify_password(password, user.password_hash):
        raise AuthError(f"wrong password for node user {user.name!r}")


def renew_into(path: str | Path, make: Callable[[], tuple[str, Any]], every: float, *,
               wrote: Callable[[Any], None] | None = None,
               sleep: Callable[[float], None] | None = None,
               rounds: int | None = None) -> int:
    """Keep a token file fresh for other programs: write ``make()``'s token (atomic
    replace, 0600 from creation), wait ``every`` seconds, again; until interrupted (or
    ``rounds`` writes). ``wrote(expires)`` follows each write. Returns the writes made."""
    from nodecli import interrupt
    from nodecli.fsutil import atomic_write

    # (not time.sleep: a signal another thread takes ends the wait at once, and one
    # whose raise was lost ends it too)
    nap = sleep or interrupt.wait
    done = 0
    while rounds is None or done < rounds:
        token, expires = make()
        atomic_write(path, (token + "\n").encode("ascii"), mode=0o600)
        done += 1
        if wrote is not None:
            wrote(expires)
        if rounds is not None and done >= rounds:
            break
        nap(every)
    return done


def renewal(target: str | None, every_text: str | None) -> tuple[Path | None, float]:
    """``token create --renew-into FILE --every DURATION``: (FILE, seconds), checked
    before anything is asked."""

    if (target is None) != (every_text is None):
        raise UsageError("--renew-into FILE and --every DURATION go together")
    if target is None:
        return None, 0.0
    from nodecli.timeparse import TimeParseError, parse_duration

    try:
        every = parse_duration(str(every_text)).total_seconds()
    except TimeParseError as exc:
        raise UsageError(f"--every: {exc}") from None
    if every < 1:
        raise UsageError("--every must be at least 1s")
    from nodecli.fsutil import user_path

    return user_path(target), every


@dataclass(frozen=True, slots=True)
class TokenPlan:
    """A token to issue, checked before any password is asked or key loaded: for whom,
    until when, and (``renew_into``) the file kept fresh every ``every`` seconds with
    tokens that each last ``lifetime``."""

    access_key: str
    user_id: str
    groups: list[str] | None
    role: str
    expires: datetime
    lifetime: timedelta
    renew_into: Path | None = None
    every: float = 0.0

    def sign(self, key: Any, at: datetime | None = None) -> str:
        """The token signed with ``key`` (``at``: a renewal made then, lasting
        ``lifetime``)."""
        from nodecli.tokens.wire import create_token

        expires = self.expires if at is None else at + self.lifetime
        return create_token(key, self.access_key, self.user_id, self.groups, self.role,
                            expires)


def plan_token(*, access_key: str, user_id: str, group_ids: str | None, role: str,
               expires_at: str | None, renew_into: str | None, every: str | None,
               now: datetime) -> TokenPlan:
    """Check a token's options (exit 2 with the reason) and say what will be signed;
    ``now`` is the clock tokens are signed on (the node's, with --clock-from-node)."""
    from nodecli.timeparse import TimeParseError, describe_delta, parse_expiry
    from nodecli.tokens.wire import DEFAULT_LIFETIME, build_payload, parse_group_ids

    target, seconds = renewal(renew_into, every)
    if expires_at is not None:
        if target and not str(expires_at).strip().startswith("+"):
            raise UsageError("--renew-into needs a relative --expires-at (+30m, +2h): "
                             "each renewed token lasts that long")
        try:
            expires = parse_expiry(expires_at, now)
        except TimeParseError as exc:
            raise UsageError(f"--expires-at: {exc}") from None
    else:
        expires = now + DEFAULT_LIFETIME
    lifetime = expires - now
    if target and seconds >= lifetime.total_seconds():
        raise UsageError(f"--every must be shorter than the token's lifetime "
                         f"({describe_delta(lifetime.total_seconds())}): else the file "
                         "would hold expired tokens")
    groups = parse_group_ids(group_ids)
    build_payload(access_key, user_id, groups, role, expires)  # refuses bad values (exit 2)
    return TokenPlan(access_key, user_id, groups, role, expires, lifetime, target, seconds)
