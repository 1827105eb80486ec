"""``node`` and ``transfer`` command groups (thin: parse, call, render)."""

from __future__ import annotations

from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import (
    CONTEXT,
    InputFile,
    default_profile,
    fleet_names,
    fleet_options,
    output_option,
    pass_app,
    profile_proxy_options,
    proxy_password_for,
    read_secret_stdin,
)
from nodecli.cli.lazy import HelpGroup, lazy_completer
from nodecli.cli.remote import (
    complete_node_profiles,
    node_options,
    open_node_client,
    pop_node_options,
)
from nodecli.render import Column

complete_access_keys = lazy_completer("complete_access_keys")
complete_users = lazy_completer("complete_users")

# -- node ---------------------------------------------------------------------------------


@click.group(cls=HelpGroup,
             context_settings=CONTEXT, help="""Node connection profiles and node info.

\b
  nodecli node add prod --url https://node:9092 --user admin --cacert ca.pem
  nodecli node list
  nodecli node show prod
  nodecli node set prod --cacert new-ca.pem   # one field; the secret stays
  nodecli node default prod
  nodecli node info                 # GET /info on the default profile
  nodecli node info --node prod -o json
  nodecli node remove prod
""")
def node() -> None:
    pass


@node.command("add", context_settings=CONTEXT)
@click.argument("name")
@click.option("--url", required=True, metavar="URL", help="Base URL, e.g. https://node:9092.")
@click.option("--user", "user", metavar="NAME", help="Node user (HTTP Basic).",
              shell_complete=complete_users)
@click.option("--access-key", metavar="AK", shell_complete=complete_access_keys,
              help="Access key id (HTTP Basic with its secret, or with --bearer-file).")
@click.option("--bearer-file", metavar="PATH", type=InputFile("token file"),
              help="File holding a bearer token made for --access-key.")
@click.option("--cacert", metavar="PEM", type=InputFile("CA file"),
              help="CA certificate(s) to trust for this node's TLS certificate.")
@click.option("--insecure", is_flag=True,
              help="Do not verify TLS for this node (test nodes only; warns every run).")
@click.option("--access-key-header", metavar="NAME",
              help="Header naming the access key with bearer tokens "
                   "(default X-Vendor-AccessKey).")
@click.option("--password-stdin", is_flag=True,
              help="Read the password / access-key secret to store from stdin "
                   "(on a terminal you are asked; empty = do not store).")
@click.option("--no-secret", is_flag=True,
              help="Do not store a secret (give it per run: NODECLI_PASSWORD, "
                   "--password-stdin or the prompt).")
@profile_proxy_options("node")
@click.option("--mint-key", metavar="PATH", type=InputFile("private key"),
              help="Sign this profile's bearer tokens here with this private key (only "
                   "its path is saved; the key is never sent): tokens that renew.")
@click.option("--mint-user-id", metavar="UID", help="User id of the minted tokens.")
@click.option("--mint-group-ids", metavar="G1,G2", help="Group ids of the minted tokens.")
@click.option("--mint-scope-role", type=click.Choice(["user", "admin"]), default="user",
              show_default=True, help="Role of the minted tokens.")
@click.option("--mint-ttl", metavar="DURATION", default="1h", show_default=True,
              help="Lifetime of each minted token (renewed before it ends): 30m, 1h, 2d.")
@click.option("--default", "make_default", is_flag=True,
              help="Make this the default profile (the first profile always is).")
@click.option("-f", "--force", is_flag=True, help="Replace an existing profile of that name.")
@click.option("--no-check", is_flag=True,
              help="Save without logging in to the node first (by default a refused or "
                   "unreachable login saves nothing).")
@pass_app
def node_add(app: App, name: str, url: str, user: str | None, access_key: str | None,
             bearer_file: str | None, cacert: str | None, insecure: bool,
             access_key_header: str | None, password_stdin: bool, no_secret: bool,
             proxy: str | None, proxy_password_stdin: bool, mint_key: str | None,
             mint_user_id: str | None,
             mint_group_ids: str | None, mint_scope_role: str, mint_ttl: str,
             make_default: bool, force: bool, no_check: bool) -> None:
    """Save a node profile. Secrets go to the keyring (or a 0600 file), never config.toml.

    The login is checked first (GET /info; a bearer profile reads one event): when the
    node refuses it or cannot be reached, nothing is saved and the exit code is the
    failure's (4 refused, 6 unreachable). --no-check saves without asking the node.

    \b
      nodecli node add prod --url https://node:9092 --user admin --cacert ca.pem
      printf '%s\\n' "$AK_SECRET" | nodecli node add ak --url https://node:9092 \\
          --access-key AK1 --password-stdin
      nodecli node add tok --url https://node:9092 --access-key AK1 --bearer-file tok.txt
      nodecli node add alice --url https://node:9092 --access-key AK1 \\
          --mint-key keys/AK1/private.pem --mint-user-id alice --mint-ttl 1h
    """
    from nodecli.config.model import MintSettings
    from nodecli.profiles.node import ProfileSpec, add_profile, validate_profile

    mint = None
    if mint_key is not None:
        from nodecli.timeparse import TimeParseError, parse_duration

        try:
            ttl = int(parse_duration(mint_ttl).total_seconds())
        except TimeParseError as exc:
            raise click.UsageError(f"--mint-ttl: {exc}") from None
        mint = MintSettings(mint_key, mint_user_id or "",
                            [g for g in (mint_group_ids or "").split(",") if g.strip()],
                            mint_scope_role, ttl)
    elif mint_user_id or mint_group_ids:
        raise click.UsageError("--mint-user-id and --mint-group-ids go with --mint-key PATH")
    spec = ProfileSpec(name, url, user, access_key, bearer_file, cacert, insecure,
                       access_key_header, proxy, mint)
    validate_profile(spec)  # fail on bad input before asking for a secret
    proxy_password = proxy_password_for(
        proxy, proxy_password_stdin, stdin_taken="--password-stdin" if password_stdin else None)
    secret: str | None = None
    needs_secret = bool(user or access_key) and not bearer_file and mint is None
    if password_stdin and no_secret:
        raise click.UsageError("give --password-stdin or --no-secret, not both")
    if password_stdin:
        if not needs_secret:
            raise click.UsageError("--password-stdin goes with --user or --access-key "
                                   "(a bearer profile has no secret to store)")
        secret = read_secret_stdin("secret")
    elif needs_secret and not no_secret and app.term.interactive:
        what = (f"secret of access key {access_key!r}" if access_key
                else f"password of node user {user!r}")
        secret = click.prompt(f"{what.capitalize()} to store (empty: do not store)",
                              hide_input=True, default="", show_default=False, err=True) or None
    if not force:
        from nodecli.errors import ConflictError

        if name in app.store.load().nodes:  # said before the login check, not after
            raise ConflictError(f"node profile {name!r} already exists",
                                hint="use --force to replace it, 'nodecli node set' to "
                                     "change one field, or 'nodecli node remove'")
    if not no_check:
        check_login(app, validate_profile(spec), secret, proxy_password)
    shown = add_profile(app.store, app.paths, spec, secret, replace=force,
                        make_default=make_default, proxy_password=proxy_password)
    app.term.success(f"saved node profile {name!r} ({shown['url']})"
                     + (", the default" if shown["default"] else ""))
    if secret:
        app.term.info(f"secret stored in {shown['secret_backend']}")
    elif needs_secret:
        app.term.info("no secret stored: commands will use --password-stdin, "
                      "NODECLI_PASSWORD or ask on a terminal")
    if insecure:
        app.term.warn(f"TLS verification is OFF for profile {name!r}")


_LIST_COLUMNS = [Column("name", "name", whole=True), Column("default", "default"),
                 Column("url", "url"), Column("auth", "auth", drop=1),
                 Column("tls", "tls", drop=2)]


def _tls_label(row: dict[str, Any]) -> str:
    if not str(row["url"]).startswith("https://"):
        return "none (http)"
    if row["insecure"]:
        return "NOT VERIFIED"
    return f"cacert {row['cacert']}" if row["cacert"] else "system CAs"


@node.command("list", context_settings=CONTEXT)
@output_option()
@pass_app
def node_list(app: App, output_format: str) -> None:
    """List saved node profiles (the default one says yes under default).

    \b
    Examples:
      nodecli node list
      nodecli node list -o json
    """
    from nodecli.profiles.node import list_profiles

    rows = list_profiles(app.store.load())
    columns = _LIST_COLUMNS
    if output_format == "csv":  # the json field names (tls is a table's summary)
        columns = [Column(k, k) for k in ("name", "default", "url", "auth", "insecure",
                                          "cacert")]
    elif output_format in ("table", "wide"):
        rows = [{**r, "tls": _tls_label(r)} for r in rows]
    app.term.table(rows, columns, output_format,
                   empty="no node profiles: add one with 'nodecli node add NAME --url URL'")


@node.command("show", context_settings=CONTEXT)
@click.argument("name", required=False, shell_complete=complete_node_profiles)
@output_option(("table", "json"))
@pass_app
def node_show(app: App, name: str | None, output_format: str) -> None:
    """Show a profile (default: the default one) and where its secret is kept.

    \b
    Examples:
      nodecli node show prod
    """
    from nodecli.profiles.node import show_profile

    info = show_profile(app.store.load(), app.paths, name)
    if output_format == "json":
        app.term.json(info)
        return
    where = (f"stored in {info['secret_backend']}" if info["secret_stored"]
             else "not stored (asked per run)" if info["user"] or info["access_key"]
             else "-")
    if info["bearer_file"]:
        where = "bearer token read from the file at each run"
    if info["mint"]:
        where = "- (tokens are signed here)"
    app.term.fields([
        ("name", info["name"] + (" (default)" if info["default"] else "")),
        ("url", info["url"]),
        ("auth", info["auth"]),
        ("node user", info["user"]),
        ("access key", info["access_key"]),
        ("bearer file", info["bearer_file"]),
        ("access-key header", info["access_key_header"]),
        ("tls", _tls_label(info)),
        ("proxy", info["proxy"] or "the environment's (HTTPS_PROXY ...), if any"),
        ("minted tokens", _mint_label(info["mint"])),
        ("secret", where),
        ("secret store", info["secret_store"]),
    ])


def _mint_label(mint: dict[str, Any] | None) -> str | None:
    if not mint:
        return None
    from nodecli.timeparse import describe_delta

    groups = f", groups {','.join(mint['group_ids'])}" if mint.get("group_ids") else ""
    return (f"user {mint['user_id']}{groups}, role {mint['scope_role']}, each valid "
            f"{describe_delta(mint['ttl'])}, signed with {mint['key']}")


@node.command("remove", context_settings=CONTEXT)
@click.argument("name", shell_complete=complete_node_profiles)
@pass_app
def node_remove(app: App, name: str) -> None:
    """Delete a profile and its stored secret.

    \b
    Examples:
      nodecli node remove staging
    """
    from nodecli.profiles.node import remove_profile

    was_default = remove_profile(app.store, app.paths, name)
    app.term.success(f"removed node profile {name!r}")
    if was_default:
        app.term.info("it was the default: choose another with 'nodecli node default NAME'")


@node.command("default", context_settings=CONTEXT)
@click.argument("name", required=False, shell_complete=complete_node_profiles)
@click.option("--unset", "--clear", "unset", is_flag=True, help="Have no default profile.")
@pass_app
def node_default(app: App, name: str | None, unset: bool) -> None:
    """Set the default profile (without NAME: print it).

    \b
    Examples:
      nodecli node default prod
      nodecli node default          # print it
      nodecli node default --unset
    """
    default_profile(app, "node", name, unset)


def _cap_text(cap: dict[str, Any]) -> str:
    value = cap.get("value")
    if value is True:
        return str(cap["name"])
    if value is False:
        return f"{cap['name']}=no"
    return f"{cap['name']}={json_text(value)}"


def json_text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@node.command("info", context_settings=CONTEXT)
@fleet_options
@node_options
@output_option(("table", "json"))
@pass_app
def node_info_cmd(app: App, output_format: str, **kwargs: Any) -> None:
    """GET /info: version, capabilities, transfer user, docroot.

    \b
      nodecli node info --node prod
      nodecli node info --url https://localhost:9092 --cacert ca.pem --user admin
      nodecli node info -o json | jq -r .version
    """
    from nodecli.node.info import info_document

    conn = pop_node_options(kwargs)
    names = fleet_names(app, conn, kwargs)
    if names is not None:  # one row a node: json keeps every document whole
        from nodecli.cli import fleet

        docs, status = fleet.run(app, conn, names, lambda client: [info_document(client)])
        if output_format == "json":
            app.term.json(docs)
        else:
            app.term.table([{"node": d["node"], "version": d.get("version"),
                             "current_time": d.get("current_time"),
                             "transfer_user": d.get("transfer_user")} for d in docs],
                           fleet.columns([Column("version", "version"),
                                          Column("current_time", "current time", whole=True),
                                          Column("transfer_user", "transfer user")]), "table",
                           empty="no nodes answered")
        fleet.finish(status)
        return
    with open_node_client(app, conn) as client:
        info = info_document(client)
        base = client.endpoint.base_url
    if output_format == "json":
        app.term.json(info)
        return
    restrictions = info.get("restrictions")
    pairs: list[tuple[str, Any]] = [
        ("node", base),
        ("application", info.get("application")),
        ("version", info.get("version")),
        ("node id", info.get("node_id")),
        ("current time", info.get("current_time")),
        ("transfer user", info.get("transfer_user")),
        ("docroot", info.get("docroot")),
    ]
    if isinstance(restrictions, list) and restrictions:
        pairs.append(("restrictions", [str(r) for r in restrictions]))
    if isinstance(info.get("acls"), list):
        pairs.append(("acls", [str(a) for a in info["acls"]]))
    pairs.append(("capabilities", [_cap_text(c) for c in info["capabilities"]]))
    if info.get("settings"):
        pairs.append(("settings", [f"{c['name']}={json_text(c.get('value'))}"
                                   for c in info["settings"]]))
    app.term.fields(pairs)


from nodecli.cli.health import health_cmd, thresholds_cmd  # noqa: E402 - their own module
from nodecli.cli.node_set import check_login, node_set  # noqa: E402 - their own module

node.add_command(health_cmd)
node.add_command(thresholds_cmd)
node.add_command(node_set)
