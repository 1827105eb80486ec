"""``nodecli token``: create, inspect and verify bearer tokens (creation itself, shared
with the classic --bearer-create, is in :mod:`nodecli.cli.token_create`).

The token alone goes to stdout followed by a newline; every message goes to stderr.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import UserPath, output_option, pass_app
from nodecli.cli.lazy import HelpGroup, lazy_completer
from nodecli.cli.token_create import TokenRequest, create_options, create_token
from nodecli.errors import UsageError
from nodecli.render import sanitize
from nodecli.timeparse import describe_delta, format_utc, utc_now
from nodecli.tokens.wire import DEFAULT_LEEWAY, MAX_TOKEN_CHARS, TokenError

complete_files = lazy_completer("complete_files")
# -- reading a token -------------------------------------------------------------------------

def read_token_arg(app: App, token: str | None) -> str | bytes:
    """TOKEN from the argument, or from stdin for ``-`` / no argument with piped input."""
    if token is not None and token != "-":  # noqa: S105 - "-" means stdin
        return token
    if token is None and app.term.stdin_is_tty:
        raise UsageError("give the TOKEN, or '-' and the token on standard input")
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read(MAX_TOKEN_CHARS + 1024) if stream is not None else \
        sys.stdin.read(MAX_TOKEN_CHARS + 1024)
    if not data or not data.strip():
        raise TokenError("invalid token: nothing on standard input")
    return data


def _show(value: Any) -> str:
    from nodecli.render.table import json_text

    text = value if isinstance(value, str) else json_text(value)
    return sanitize(text)


# -- the command group ---------------------------------------------------------------------

@click.group(cls=HelpGroup,
             help="""Create, inspect and verify bearer tokens.

\b
  nodecli token create -u nodeadmin --access-key AK1 --user-id alice --expires-at +2h
  nodecli token inspect "$TOKEN"              claims, scopes, expiry (no key needed)
  nodecli token verify - --public-key public.pem < token.txt    exit 0 valid, 4 not
""")
def token() -> None:
    pass


@token.command("create")
@create_options
@click.option("--renew-into", metavar="FILE", type=UserPath(dir_okay=False),
              help="Keep FILE holding a fresh token (atomic replace, 0600) for other "
                   "programs, until Ctrl-C or SIGTERM; nothing on stdout.")
@click.option("--every", metavar="DURATION",
              help="How often --renew-into writes a new token (10m, 1h): shorter than "
                   "--expires-at.")
@click.option("--clock-from-node", metavar="NODE",
              help="Sign on this node's clock (a profile name or a URL; its Date header) "
                   "when the machines' clocks differ.")
@pass_app
def create(app: App, **opts: Any) -> None:
    """Mint a node bearer token; it alone is printed on stdout.

    \b
      nodecli token create -u nodeadmin --access-key AK1 --user-id alice --expires-at +2h
      nodecli token create -u nodeadmin --password-stdin --access-key AK1 --user-id 42 \\
          --group-ids eng,staff --scope-role user --key-file-dir ~/keys/ak1 --yes
      nodecli token create -u nodeadmin --access-key AK1 --user-id svc --expires-at +1h \\
          --renew-into /run/svc/token --every 20m

    The node user (-u) is one of this machine's node users ('nodecli -l'): its
    password is checked (prompt, --password-stdin or NODECLI_PASSWORD). For tokens of a
    remote node whose users are not here, save a profile that signs its own tokens
    instead: nodecli node add NAME --url URL --access-key AK --mint-key PRIVATE.pem
    --mint-user-id UID.
    Without --key-file-*, the key pair in the home's keys/AK/ is used, or created when
    you agree (--yes without a terminal).
    """
    create_token(app, TokenRequest.from_options(opts))


@token.command("inspect")
@click.argument("token_text", metavar="[TOKEN|-]", required=False)
@output_option(("text", "json"), default="text")
@pass_app
def inspect_cmd(app: App, token_text: str | None, output_format: str) -> None:
    """Decode a token WITHOUT checking its signature: claims, scopes, expiry, time left.

    Works for node bearer tokens and for the collaboration service's access tokens.
    A leading 'Bearer ' is ignored. Exit 4 if the token cannot be decoded.

    \b
    Examples:
      nodecli token inspect "$TOKEN"
      echo "$TOKEN" | nodecli token inspect - -o json
    """
    from nodecli.tokens.inspection import inspect

    info = inspect(read_token_arg(app, token_text))
    if output_format == "json":
        app.term.json(info.as_dict())
        return
    claims = info.claims
    rows: list[tuple[str, str]] = []
    if "user_id" in claims:
        rows.append(("user_id", _show(claims["user_id"])))
    if "group_ids" in claims:
        groups = claims["group_ids"]
        rows.append(("group_ids", ", ".join(_show(g) for g in groups)
                     if isinstance(groups, list) else _show(groups)))
    for key in ("auth_type", "scope"):
        if key in claims:
            rows.append((key, _show(claims[key])))
    for s in info.scopes:
        if s.kind == "node":
            rows.append(("  node scope", f"access key {_show(s.access_key)}, role "
                         f"{_show(s.role)}, resource {_show(s.resource)}"))
        elif s.kind in ("user", "admin", "self"):
            rows.append((f"  {s.kind} scope", _show(s.raw)))
        else:
            rows.append(("  other scope", _show(s.raw)))
    if info.expires_at is not None:
        rows.append(("expires_at", f"{format_utc(info.expires_at)} ({info.time_left_text()})"))
    elif "expires_at" in claims:
        rows.append(("expires_at", f"{_show(claims['expires_at'])} (unreadable)"))
    for key, value in claims.items():
        if key not in ("user_id", "group_ids", "auth_type", "scope", "expires_at"):
            rows.append((sanitize(str(key)), _show(value)))
    rows.append(("signature", f"{info.signature_bits}-bit, NOT verified (token verify "
                 "--public-key PEM checks it)"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        app.term.data(f"{k.ljust(width)}  {v}")
    for problem in info.problems:
        app.term.warn(f"token claims: {problem}")


def _load_verification_key(value: str) -> Any:
    from nodecli.tokens.keys import load_public_key, load_public_key_pem

    if value.lstrip().startswith("-----BEGIN"):
        return load_public_key_pem(value, "--public-key")
    from nodecli.fsutil import user_path

    return load_public_key(user_path(value))


@token.command("verify")
@click.argument("token_text", metavar="[TOKEN|-]", required=False)
@click.option("--public-key", "public_key", metavar="PEM", required=True,
              shell_complete=complete_files,
              help="Verification key: a PEM file (public key, certificate or private key) "
                   "or the PEM text itself.")
@click.option("--leeway", type=click.FloatRange(0, 3600), default=DEFAULT_LEEWAY,
              show_default=True, help="Seconds of clock skew tolerated after expiry.")
@output_option(("text", "json"), default="text")
@pass_app
def verify_cmd(app: App, token_text: str | None, public_key: str, leeway: float,
               output_format: str) -> None:
    """Check the signature (RSA PKCS#1 v1.5, SHA-512) and the expiry of a token.

    Exit 0 when valid; exit 4 when malformed, badly signed or expired, with the reason
    on stderr (and in the JSON with -o json).

    \b
    Examples:
      nodecli token verify "$TOKEN" --public-key ~/keys/ak1/public.pem
    """
    from nodecli.tokens.keys import key_fingerprint
    from nodecli.tokens.wire import token_expiry, verify

    key = _load_verification_key(public_key)
    text = read_token_arg(app, token_text)
    now = utc_now()
    try:
        claims = verify(text, key, now=now, leeway=leeway)
    except TokenError as exc:
        if output_format == "json":
            app.term.json({"valid": False, "reason": exc.reason, "message": exc.message})
        raise
    expires = token_expiry(claims)
    left = int((expires - now).total_seconds())
    if output_format == "json":
        app.term.json({"valid": True, "claims": claims, "expires_at": format_utc(expires),
                       "seconds_left": left, "key_fingerprint": key_fingerprint(key)})
    when = f"in {describe_delta(left)}" if left > 0 else "within the leeway"
    app.term.success(f"token valid: signature OK ({key.key_size}-bit key "
                     f"{key_fingerprint(key)}), user_id {_show(claims.get('user_id'))}, scope "
                     f"{_show(claims.get('scope'))}, expires {format_utc(expires)} ({when})")
