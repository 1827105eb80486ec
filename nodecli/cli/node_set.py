"""``node set``: change some fields of a saved node profile, and the login check that
it shares with ``node add`` (a refused login saves nothing)."""

from __future__ import annotations

from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import InputFile, pass_app, read_secret_stdin
from nodecli.cli.lazy import lazy_completer
from nodecli.cli.remote import complete_node_profiles

complete_access_keys = lazy_completer("complete_access_keys")
complete_users = lazy_completer("complete_users")

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def check_login(app: App, profile: Any, secret: str | None,
                 proxy_password: str | None, *, stored: str | None = None,
                 saved: str = "saved") -> None:
    """Log in to the node as ``profile`` would (nothing is saved yet); a refusal is
    raised with its own exit code, saying that nothing was saved."""
    import os

    from nodecli.cli.remote import open_endpoint
    from nodecli.errors import NodecliError
    from nodecli.profiles.node import check_login, login_target

    if not (profile.user or profile.access_key):
        return  # no login to check: each command gives one
    target = login_target(profile, secret, proxy_password, os.environ, stored=stored)
    if target.secret_needed:
        app.term.info(f"login not checked: no {target.secret_needed} given "
                      "(it is asked per run)")
        return
    try:
        with open_endpoint(app, target.endpoint) as client:
            asked = check_login(client)
    except NodecliError as exc:
        exc.message = (f"login check failed, profile {profile.name!r} not {saved}: "
                       f"{exc.message}")
        exc.args = (exc.message,)
        exc.hint = (f"{exc.hint}; " if exc.hint else "") + \
            "--no-check saves the profile without asking the node"
        raise
    auth = target.endpoint.auth
    who = (f"node user {auth.username!r}" if auth.kind == "basic" and not auth.access_key
           else f"access key {auth.access_key!r}"
           + (" with a bearer token" if auth.kind == "bearer" else ""))
    app.term.info(f"login checked: {asked} as {who}")


@click.command("set", context_settings=CONTEXT)
@click.argument("name", shell_complete=complete_node_profiles)
@click.option("--url", metavar="URL", help="New base URL.")
@click.option("--user", "user", metavar="NAME", shell_complete=complete_users,
              help="New node user (replaces an access key login).")
@click.option("--access-key", metavar="AK", shell_complete=complete_access_keys,
              help="New access key id (replaces a node user login).")
@click.option("--bearer-file", metavar="PATH",
              help="New bearer token file ('' : none, the access key's secret is used).")
@click.option("--cacert", metavar="PEM",
              help="New CA file (turns --insecure off; '' : the system CAs).")
@click.option("--insecure/--verify", default=None,
              help="Turn TLS verification off (test nodes only) or back on.")
@click.option("--access-key-header", metavar="NAME",
              help="Header naming the access key with bearer tokens ('' : the default).")
@click.option("--proxy", metavar="URL", help="HTTP proxy for this node ('' : none).")
@click.option("--mint-key", metavar="PATH", type=InputFile("private key"),
              help="Sign this profile's bearer tokens with this private key (makes a "
                   "profile that signs its own tokens; needs --access-key and --mint-user-id).")
@click.option("--mint-user-id", metavar="UID", help="User id of the minted tokens.")
@click.option("--mint-group-ids", metavar="G1,G2",
              help="Group ids of the minted tokens ('' : none).")
@click.option("--mint-scope-role", type=click.Choice(["user", "admin"]),
              help="Role of the minted tokens.")
@click.option("--mint-ttl", metavar="DURATION", help="Lifetime of each minted token.")
@click.option("--password-stdin", is_flag=True,
              help="Read a new password / access-key secret from stdin and store it.")
@click.option("--no-check", is_flag=True,
              help="Save without logging in to the node first.")
@pass_app
def node_set(app: App, name: str, insecure: bool | None, password_stdin: bool,
             no_check: bool, **changes: str | None) -> None:
    """Change some fields of a saved profile; the others, and the stored secret, stay.

    Like 'aws configure set' or 'kubectl config set-cluster': no re-adding, no retyping
    the password. A field given as '' is unset. When the URL, TLS or login changes, the
    login is checked first (as 'node add' does): a refusal saves nothing.

    \b
    Examples:
      nodecli node set prod --cacert new-ca.pem
      nodecli node set prod --url https://node2:9092
      printf '%s\\n' "$NEW_PASSWORD" | nodecli node set prod --password-stdin
    """
    from nodecli.config.secrets import find_secret, secret_key, store_secret
    from nodecli.errors import UsageError
    from nodecli.profiles import proxy_secret_key, record_stored, unknown_profile
    from nodecli.profiles.node import changed_profile, set_profile

    cfg = app.store.load()
    current = cfg.nodes.get(name)
    if current is None:
        raise unknown_profile("node", name, cfg.nodes)
    ctx = click.get_current_context()
    for key, what in (("bearer_file", "token file"), ("cacert", "CA file")):
        if changes.get(key):  # checked as every file option checks it
            changes[key] = InputFile(what).convert(changes[key], None, ctx)
    mint_changes = {k: changes.pop(k) for k in list(changes) if k.startswith("mint_")}
    mint = None
    if any(v is not None for v in mint_changes.values()):
        from nodecli.profiles.node import changed_mint

        mint = changed_mint(current.mint, **mint_changes)
    fields_given = (any(v is not None for v in changes.values()) or insecure is not None
                    or mint is not None)
    if not fields_given and not password_stdin:
        raise UsageError("nothing to change: give at least one field (see "
                         "'nodecli node set --help')")
    new = changed_profile(current, changes, insecure, mint) if fields_given else current
    if password_stdin and (new.mint is not None or new.bearer_file
                           or not (new.user or new.access_key)):
        raise UsageError("--password-stdin goes with a node user or access key login "
                         "(a bearer profile has no secret to store)")
    secret = read_secret_stdin("secret") if password_stdin else None
    key = secret_key("node", name)
    stored = find_secret(app.paths, key, current.secrets)[0]
    connection = ("url", "cacert", "insecure", "user", "access_key", "bearer_file",
                  "proxy", "access_key_header", "mint")
    moved = any(getattr(new, f) != getattr(current, f) for f in connection)
    if not no_check and (moved or secret is not None):
        check_login(app, new, secret,
                     find_secret(app.paths, proxy_secret_key("node", name), current.secrets)[0],
                     stored=stored, saved="changed")
    set_profile(app.store, new)
    if secret is not None:
        record_stored(app.store, "node", name, store_secret(app.paths, key, secret))
    done = [k.replace("_", "-") for k, v in {**changes, **mint_changes}.items()
            if v is not None]
    if insecure is not None:
        done.append("insecure" if insecure else "verify")
    if secret is not None:
        done.append("secret")
    app.term.success(f"updated node profile {name!r}: {', '.join(done)}")
    old_login = current.access_key or current.user
    if secret is None and stored is not None and (new.access_key or new.user) != old_login:
        app.term.info(f"kept the stored secret (it was for {old_login!r}): give another "
                      "with --password-stdin if it differs")
    if new.insecure and not current.insecure:
        app.term.warn(f"TLS verification is OFF for profile {name!r}")
