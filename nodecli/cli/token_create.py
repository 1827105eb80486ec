"""Creating node bearer tokens: ``token create`` and the classic root flags
(``-u NAME --bearer-create``): the node user's password, the key pair (found, chosen or
made), signing, and ``--renew-into`` which keeps a token file fresh.

The token alone goes to stdout followed by a newline; every message goes to stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable
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

def _require(opts: dict[str, Any], key: str, flag: str) -> str:
    value = opts.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
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


def _chosen_key_path(app: App, opts: dict[str, Any], access_key: str) -> Path:
    """The private key file the options name; without them, the access key's own."""
    key_dir, key_path = opts.get("key_file_dir"), opts.get("key_file_path")
    if key_path:
        return user_path(key_path)
    if key_dir:
        return user_path(key_dir) / PRIVATE_NAME
    return app.paths.keys_dir / access_key / PRIVATE_NAME


def resolve_key_path(app: App, opts: dict[str, Any], access_key: str, bits: int) -> Path:
    """The private key to sign with, creating a pair when asked to (docs/tokens.md)."""
    yes = bool(opts.get("yes"))
    key_dir, key_path = opts.get("key_file_dir"), opts.get("key_file_path")
    if key_dir and key_path:
        raise UsageError("give --key-file-dir or --key-file-path, not both")
    if key_path or key_dir:
        path = _chosen_key_path(app, opts, access_key)
        if path.is_symlink() or path.exists():
            return path
        if yes:
            return _generate(app, path, bits, access_key)
        if not app.term.interactive:
            raise UsageError(f"key file {path} does not exist and stdin is not a terminal: "
                             "use --yes to create it, or give an existing --key-file-path")
        if not click.confirm(f"{path} does not exist. Create a new {bits}-bit RSA key pair "
                             "there?", default=True, err=True):
            raise _cancelled()
        return _generate(app, path, bits, access_key)

    default = _chosen_key_path(app, opts, access_key)
    if default.exists():
        app.term.info(f"using key {default}")
        return default
    if yes:
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


def _authenticate(app: App, opts: dict[str, Any], user: Any) -> None:
    """Check the node user's password; a typed one may be retried (3 attempts, like sudo)."""
    from nodecli.errors import AuthError
    from nodecli.tokens.issuing import check_issuer_password

    prompted = (opts.get("password") is None and not opts.get("password_stdin")
                and not os.environ.get("NODECLI_PASSWORD"))
    attempts = PASSWORD_ATTEMPTS if prompted else 1
    for attempt in range(1, attempts + 1):
        password = get_secret(app, value=opts.get("password"),
                              from_stdin=bool(opts.get("password_stdin")),
                              prompt=f"Password for node user {user.name}")
        try:
            check_issuer_password(user, password)
            return
        except AuthError:
            if attempt == attempts:
                raise
            app.term.warn("wrong password, try again")


def _password_given(opts: dict[str, Any]) -> bool:
    """Whether the password comes without a prompt (option, stdin or NODECLI_PASSWORD)."""
    return (opts.get("password") is not None or bool(opts.get("password_stdin"))
            or bool(os.environ.get("NODECLI_PASSWORD")))


def _known_key_path(app: App, opts: dict[str, Any], access_key: str) -> Path | None:
    """The key file :func:`resolve_key_path` will name when it exists already (then no
    question is asked and nothing is created), else None."""
    path = _chosen_key_path(app, opts, access_key)
    return path if path.exists() else None


def _sign_during_password_check(app: App, opts: dict[str, Any], user: Any, path: Path,
                                sign: Callable[[Any], str]) -> tuple[Any, str] | None:
    """The password (asked here when it must be), then the domain's
    :func:`~nodecli.tokens.issuing.sign_while_checking`."""
    from nodecli.tokens.issuing import sign_while_checking

    password = get_secret(app, value=opts.get("password"),
                          from_stdin=bool(opts.get("password_stdin")),
                          prompt=f"Password for node user {user.name}")
    return sign_while_checking(user, password, path, sign, state_dir=app.paths.state_dir)


def create_from_options(app: App, opts: dict[str, Any]) -> None:
    """Validate everything cheap first, then the user, the password, the key; print the token."""
    from nodecli.tokens.issuing import check_issuer, plan_token
    from nodecli.tokens.keys import load_private_key

    name = _require(opts, "user", "-u/--user (node user)")
    access_key = _require(opts, "access_key", "--access-key")
    user_id = _require(opts, "user_id", "--user-id")
    bits_given = opts.get("token_key_length")
    bits = check_bits(bits_given) if bits_given is not None else DEFAULT_BITS
    if opts.get("renew_into") is not None or opts.get("every") is not None:
        from nodecli.tokens.issuing import renewal

        renewal(opts.get("renew_into"), opts.get("every"))  # before the node is asked
    offset = _clock_offset(app, opts["clock_from_node"]) if opts.get("clock_from_node") \
        else 0.0
    now = utc_now() + timedelta(seconds=offset)
    plan = plan_token(access_key=access_key, user_id=user_id, group_ids=opts.get("group_ids"),
                      role=opts.get("scope_role") or "admin", expires_at=opts.get("expires_at"),
                      renew_into=opts.get("renew_into"), every=opts.get("every"), now=now)
    if opts.get("key_file_dir") and opts.get("key_file_path"):
        raise UsageError("give --key-file-dir or --key-file-path, not both")

    user = check_issuer(app.store.load(), name)
    early = _known_key_path(app, opts, access_key) if _password_given(opts) else None
    done = _sign_during_password_check(app, opts, user, early, plan.sign) if early else None
    if early is None:
        _authenticate(app, opts, user)
    path = resolve_key_path(app, opts, access_key, bits)  # an existing key: no question
    if done is not None and path == early:
        key, token = done
    else:
        key = load_private_key(path, state_dir=app.paths.state_dir)
        token = plan.sign(key)
    if bits_given is not None and key.key_size != bits_given:
        app.term.warn(f"{path} is an existing {key.key_size}-bit key: --token-key-length "
                      f"{bits_given} applies only to new keys")
    if plan.renew_into:
        _keep_renewing(app, plan.renew_into, plan.every, lambda at: plan.sign(key, at),
                       plan.lifetime, offset)
        return
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
    create_from_options(app, opts)


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
