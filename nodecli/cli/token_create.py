"""Creating node bearer tokens: ``token create`` and the classic root flags
(``-u NAME --bearer-create``): the node user's password, the key pair (found, chosen or
made), signing, and ``--renew-into`` which keeps a token file fresh.

The token alone goes to stdout followed by a newline; every message goes to stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.cli.common import get_secret
from nodecli.cli.lazy import lazy_completer
from nodecli.errors import NodecliError, UsageError
from nodecli.fsutil import user_path
from nodecli.render import sanitize
from nodecli.timeparse import describe_delta, format_utc, utc_now
from nodecli.tokens.keys import DEFAULT_BITS, PRIVATE_NAME, check_bits, public_path_for

complete_access_keys = lazy_completer("complete_access_keys")
complete_dirs = lazy_completer("complete_dirs")
complete_files = lazy_completer("complete_files")
complete_users = lazy_completer("complete_users")

F = TypeVar("F", bound=Callable[..., Any])

# -- creation (shared by `token create` and the classic root flags) ----------------------------

@dataclass(frozen=True, slots=True)
class TokenRequest:
    """What ``token create`` and ``-u NODEUSER --bearer-create`` were asked for, as typed
    fields (the click options of both, by name)."""

    user: str | None = None
    password: str | None = None
    password_stdin: bool = False
    access_key: str | None = None
    user_id: str | None = None
    group_ids: str | None = None
    expires_at: str | None = None
    key_file_dir: str | None = None
    key_file_path: str | None = None
    scope_role: str = "admin"
    token_key_length: int | None = None
    yes: bool = False
    renew_into: str | None = None
    every: str | None = None
    clock_from_node: str | None = None

    @classmethod
    def from_options(cls, opts: dict[str, Any]) -> TokenRequest:
        """The request from click's parameters (those of other commands are ignored)."""
        given = {f.name: opts[f.name] for f in fields(cls) if opts.get(f.name) is not None}
        return cls(**given)


def _require(value: str | None, flag: str) -> str:
    if value is None or not value.strip():
        raise UsageError(f"{flag} is required to create a bearer token")
    return value


def _cancelled() -> NodecliError:
    from nodecli.errors import Aborted

    return Aborted("aborted: no key pair, token not created")


def _generate(app: App, path: Path, bits: int, access_key: str) -> Path:
    from nodecli.cli.keys import generate_with_progress, report_new_key

    info = generate_with_progress(app, path, bits)
    report_new_key(app, info, access_key)
    return Path(info.private_path)


def _chosen_key_path(app: App, req: TokenRequest, access_key: str) -> Path:
    """The private key file the options name; without them, the access key's own."""
    if req.key_file_path:
        return user_path(req.key_file_path)
    if req.key_file_dir:
        return user_path(req.key_file_dir) / PRIVATE_NAME
    return app.paths.keys_dir / access_key / PRIVATE_NAME


def resolve_key_path(app: App, req: TokenRequest, access_key: str, bits: int) -> Path:
    """The private key to sign with, creating a pair when asked to (docs/tokens.md)."""
    if req.key_file_dir and req.key_file_path:
        raise UsageError("give --key-file-dir or --key-file-path, not both")
    if req.key_file_path or req.key_file_dir:
        path = _chosen_key_path(app, req, access_key)
        if path.is_symlink() or path.exists():
            return path
        if req.yes:
            return _generate(app, path, bits, access_key)
        if not app.term.interactive:
            raise UsageError(f"key file {path} does not exist and stdin is not a terminal: "
                             "use --yes to create it, or give an existing --key-file-path")
        if not click.confirm(f"{path} does not exist. Create a new {bits}-bit RSA key pair "
                             "there?", default=True, err=True):
            raise _cancelled()
        return _generate(app, path, bits, access_key)

    default = _chosen_key_path(app, req, access_key)
    if default.exists():
        app.term.info(f"using key {default}")
        return default
    if req.yes:
        return _generate(app, default, bits, access_key)
    if not app.term.interactive:
        raise UsageError(
            "no key file given and stdin is not a terminal: use --key-file-path PATH (or "
            f"--key-file-dir DIR) for an existing key, or --yes to create {default}")
    if not click.confirm(f"No key file given. Create a new {bits}-bit RSA key pair?",
                         default=True, err=True):
        raise _cancelled()
    while True:
        answer = click.prompt("Private key file", default=str(default), err=True)
        path = user_path(answer)
        if path.is_dir() and not path.is_symlink():
            path = path / PRIVATE_NAME
        taken = [p for p in (path, Path(public_path_for(path)))
                 if p.is_symlink() or p.exists()]
        if not taken:
            return _generate(app, path, bits, access_key)
        app.term.warn(f"{taken[0]} already exists and is never overwritten: choose another name")


PASSWORD_ATTEMPTS = 3


def _authenticate(app: App, req: TokenRequest, user: Any) -> None:
    """Check the node user's password; a typed one may be retried (3 attempts, like sudo)."""
    from nodecli.errors import AuthError
    from nodecli.tokens.issuing import check_issuer_password

    prompted = (req.password is None and not req.password_stdin
                and not os.environ.get("NODECLI_PASSWORD"))
    attempts = PASSWORD_ATTEMPTS if prompted else 1
    for attempt in range(1, attempts + 1):
        password = get_secret(app, value=req.password, from_stdin=req.password_stdin,
                              prompt=f"Password for node user {user.name}")
        try:
            check_issuer_password(user, password)
            return
        except AuthError:
            if attempt == attempts:
                raise
            app.term.warn("wrong password, try again")


def create_token(app: App, req: TokenRequest) -> None:
    """Validate everything cheap first, then the user, the password, the key; sign and
    print the token."""
    from nodecli.tokens.issuing import check_issuer, plan_token
    from nodecli.tokens.keys import load_private_key

    name = _require(req.user, "-u/--user (node user)")
    access_key = _require(req.access_key, "--access-key")
    user_id = _require(req.user_id, "--user-id")
    bits = check_bits(req.token_key_length) if req.token_key_length is not None \
        else DEFAULT_BITS
    if req.renew_into is not None or req.every is not None:
        from nodecli.tokens.issuing import renewal

        renewal(req.renew_into, req.every)  # before the node is asked
    offset = _clock_offset(app, req.clock_from_node) if req.clock_from_node else 0.0
    now = utc_now() + timedelta(seconds=offset)
    plan = plan_token(access_key=access_key, user_id=user_id, group_ids=req.group_ids,
                      role=req.scope_role, expires_at=req.expires_at,
                      renew_into=req.renew_into, every=req.every, now=now)
    if req.key_file_dir and req.key_file_path:
        raise UsageError("give --key-file-dir or --key-file-path, not both")

    user = check_issuer(app.store.load(), name)
    _authenticate(app, req, user)
    path = resolve_key_path(app, req, access_key, bits)  # an existing key: no question
    key = load_private_key(path, state_dir=app.paths.state_dir)
    if req.token_key_length is not None and key.key_size != req.token_key_length:
        app.term.warn(f"{path} is an existing {key.key_size}-bit key: --token-key-length "
                      f"{req.token_key_length} applies only to new keys")
    if plan.renew_into:
        _keep_renewing(app, plan.renew_into, plan.every, lambda at: plan.sign(key, at),
                       plan.lifetime, offset)
        return
    token = plan.sign(key)
    app.term.data(token)
    app.term.flush()
    left = describe_delta((plan.expires - now).total_seconds())
    app.term.info(f"bearer token for user_id {sanitize(user_id)!r}, scope "
                  f"node.{access_key}:{plan.role}:all, expires {format_utc(plan.expires)} "
                  f"(in {left}), signed with {path}")


def _clock_offset(app: App, where: str) -> float:
    """The node's clock minus ours (--clock-from-node NODE: a profile name or a URL)."""
    from nodecli.profiles.node import node_clock

    label, offset = node_clock(app.store.load(), where, os.environ)
    app.term.info(f"the clock of {label} is {abs(offset):.0f} s "
                  f"{'ahead of' if offset >= 0 else 'behind'} this machine's: tokens are "
                  "signed on the node's clock")
    return offset


def _keep_renewing(app: App, path: Path, every: float, sign: Callable[[Any], str],
                   lifetime: Any, offset: float) -> None:
    """--renew-into: a fresh token in FILE every --every until Ctrl-C or SIGTERM."""
    from nodecli.errors import Interrupted
    from nodecli.tokens.issuing import renew_into

    last: list[Any] = []

    def make() -> tuple[str, Any]:
        now = utc_now() + timedelta(seconds=offset)
        return sign(now), now + lifetime

    def wrote(expires: Any) -> None:
        last[:] = [expires]
        app.term.info(f"wrote a token to {path} (expires {format_utc(expires)}); next in "
                      f"{describe_delta(every)}")

    try:
        renew_into(path, make, every, wrote=wrote)
    except KeyboardInterrupt:
        until = f"; the last token there expires {format_utc(last[0])}" if last else ""
        raise Interrupted(f"stopped renewing {path}{until}") from None


def bearer_create_classic(app: App, opts: dict[str, Any]) -> None:
    """Classic ``nodecli -u NODEUSER [-p PASS] --bearer-create --access-key AK ...``.

    ``opts`` carries the root parameters by name (user, password, password_stdin,
    access_key, user_id, group_ids, expires_at, key_file_dir, key_file_path,
    scope_role, token_key_length, yes). Classic flags of other actions are refused.
    """
    stray = [k for k, v in opts.items() if k not in CLASSIC_TOKEN_KEYS and v not in (None, False)]
    if stray:
        flags = ", ".join(CLASSIC_FLAG_NAMES.get(k, "--" + k.replace("_", "-")) for k in stray)
        raise UsageError(f"--bearer-create does not take {flags}")
    create_token(app, TokenRequest.from_options(opts))


CLASSIC_TOKEN_KEYS = frozenset({
    "bearer_create", "user", "password", "password_stdin", "access_key", "user_id", "group_ids",
    "expires_at", "key_file_dir", "key_file_path", "scope_role", "token_key_length", "yes",
})
CLASSIC_FLAG_NAMES = {"xuser": "-x", "add": "-a", "list_users": "-l", "modify": "-m",
                      "delete": "-d", "backup": "-b", "output_format": "-o"}


def create_options(f: F) -> F:
    options = [
        click.option("-u", "--user", "user", metavar="NAME", required=True,
                     shell_complete=complete_users,
                     help="Local node user ('nodecli -l') whose password authorises "
                          "the token; for a remote node's tokens, save a profile with "
                          "'node add ... --mint-key' instead."),
        click.option("-p", "--pwd", "--password", "password", metavar="PASS",
                     help="Password (visible to other users of the machine: prefer the prompt, "
                          "--password-stdin or NODECLI_PASSWORD)."),
        click.option("--password-stdin", is_flag=True, help="Read the password from stdin."),
        click.option("--access-key", metavar="AK", required=True,
                     shell_complete=complete_access_keys,
                     help="Access key id the token is for (scope node.AK:ROLE:all)."),
        click.option("--user-id", metavar="UID", required=True,
                     help="User granted permissions by the permissions endpoints."),
        click.option("--group-ids", metavar="G1,G2", help="Groups granted permissions."),
        click.option("--expires-at", metavar="TIME",
                     help="ISO 8601 UTC (2031-01-01T00:00:00Z) or +30m/+2h/+7d "
                          "[default: +1h]."),
        click.option("--key-file-dir", metavar="DIR", shell_complete=complete_dirs,
                     help="Folder of the key pair (private.pem, public.pem)."),
        click.option("--key-file-path", metavar="PATH", help="Private key file.",
                     shell_complete=complete_files),
        click.option("--scope-role", type=click.Choice(["admin", "user"]), default="admin",
                     show_default=True, help="admin may change the access key; user may not."),
        click.option("--token-key-length", type=int, metavar="BITS",
                     help="Length of a NEW key: power of 2, 1024-16384 "
                          f"[default: {DEFAULT_BITS}]."),
        click.option("-y", "--yes", is_flag=True,
                     help="Create a missing key pair without asking."),
    ]
    for option in reversed(options):
        f = option(f)
    return f
