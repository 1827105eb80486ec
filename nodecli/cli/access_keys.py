"""``nodecli access-key``: create, list, show, change and delete access keys (thin)."""

from __future__ import annotations

from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import (
    CONTEXT,
    InputFile,
    confirm,
    fleet_names,
    fleet_options,
    output_option,
    pass_app,
    read_secret_stdin,
)
from nodecli.cli.lazy import HelpGroup, lazy_completer
from nodecli.cli.remote import node_options, open_node_client, pop_node_options
from nodecli.errors import Aborted, UsageError
from nodecli.render import Column, sanitize

complete_access_keys = lazy_completer("complete_access_keys")

KEY_COLUMNS = [Column("id", "id", whole=True), Column("storage", "storage"),
               Column("root_file_id", "root file id", drop=2),
               Column("verification_key", "verification key", drop=1),
               Column("logging", "activity logging", drop=3)]
# csv: the json field names and values (objects as compact JSON); the verification key's
# fingerprint and the logging summary are the table's
KEY_CSV = [Column(k, k) for k in ("id", "storage", "root_file_id", "configuration")]


@click.group("access-key", cls=HelpGroup, context_settings=CONTEXT,
             help="""Access keys on a node.

\b
  nodecli access-key create --path /data/project --id ak1
  nodecli access-key create --storage aws_s3 --bucket b1 --access-key-id AKIA1 \\
      --storage-secret env:AWS_SECRET
  nodecli access-key create --parent ak1 --path tenant1
  nodecli access-key list
  nodecli access-key tree
  nodecli access-key show ak1
  nodecli access-key set ak1 --activity-event-logging on
  nodecli access-key set-verification-key ak1 --public-key keys/ak1/public.pem
  nodecli access-key delete ak1 --yes
""")
def access_key() -> None:
    pass


STORAGE_CHOICES = ["local", "aws_s3", "ibm-s3", "azure", "azure_sas", "swift"]


@access_key.command("create", context_settings=CONTEXT)
@click.option("--storage", "--storage-type", "storage_type",
              type=click.Choice(STORAGE_CHOICES), metavar="TYPE",
              help="Storage of the key: local, aws_s3, ibm-s3, azure, azure_sas, swift "
                   "(default local; with --parent, the parent's). --storage-type is the "
                   "old spelling.")
@click.option("--path", "storage_path", metavar="/PATH",
              help="Folder the key gives access to (absolute; local storage needs it). "
                   "With --parent: the sub-key's folder, inside the parent's or relative "
                   "to it.")
@click.option("--bucket", metavar="NAME", help="Bucket (aws_s3, ibm-s3).")
@click.option("--endpoint", metavar="HOST",
              help="Object storage endpoint (ibm-s3 needs it; aws_s3: s3.amazonaws.com).")
@click.option("--container", metavar="NAME", help="Container (azure, swift).")
@click.option("--account", metavar="NAME", help="Storage account (azure).")
@click.option("--access-key-id", "access_key_id", metavar="ID",
              help="The storage's access key id (aws_s3, ibm-s3).")
@click.option("--username", metavar="NAME", help="Storage user name (swift).")
@click.option("--storage-secret", "storage_secret", metavar="REF",
              help="Where the storage's secret is: env:NAME, file:PATH or stdin (one "
                   "line, after --password-stdin's and --secret-stdin's). Never the "
                   "secret itself.")
@click.option("--parent", metavar="AK", shell_complete=complete_access_keys,
              help="Create a sub-key of AK (logged in as AK): its storage is AK's, with "
                   "--path under AK's path.")
@click.option("--restriction", "restrictions", multiple=True, metavar="GLOB",
              help="The transfer user's restriction to check the storage against "
                   "(default: what the node's /info reports, else the node user's "
                   "transfer user in the local config). Repeatable.")
@click.option("--no-check", is_flag=True,
              help="Send the key without checking its storage against the restrictions.")
@click.option("--id", "ak_id", metavar="ID", help="Access key id (default: the node makes one).")
@click.option("--secret-stdin", is_flag=True,
              help="Read the key's secret from stdin (after the password line when "
                   "--password-stdin is also given). Default: the node makes one.")
@node_options
@output_option(("table", "json"))
@pass_app
def access_key_create(app: App, storage_type: str | None, storage_path: str | None,
                      bucket: str | None, endpoint: str | None, container: str | None,
                      account: str | None, access_key_id: str | None, username: str | None,
                      storage_secret: str | None, parent: str | None,
                      restrictions: tuple[str, ...], no_check: bool, ak_id: str | None,
                      secret_stdin: bool, output_format: str, **kwargs: Any) -> None:
    """POST /access_keys: a key on local or object storage, or a sub-key.

    \b
      nodecli access-key create --path /data/project --id ak1
      nodecli access-key create --storage aws_s3 --bucket b1 --path /in \\
          --access-key-id AKIA123 --storage-secret env:AWS_SECRET
      nodecli access-key create --parent ak1 --path tenant1 --id ak1-t1
    """
    import os

    from nodecli.node import storage_keys
    from nodecli.node.access_keys import check_ak_id, create_access_key, get_access_key

    conn = pop_node_options(kwargs)
    fields = {"bucket": bucket, "endpoint": endpoint, "container": container,
              "account": account, "access_key_id": access_key_id, "username": username}
    if parent is not None:
        check_ak_id(parent)
        if storage_type or storage_secret or any(v is not None for v in fields.values()):
            raise UsageError("a sub-key's storage is its parent's: give only --parent "
                             "and --path")
        if storage_path is None:
            raise UsageError("--parent needs --path (the sub-key's folder)")
        if conn.get("access_key") not in (None, parent):
            raise UsageError(f"a sub-key is created by its parent: log in as {parent} "
                             f"(not {conn['access_key']})")
        conn["access_key"], conn["node_user"] = parent, None
    storage: dict[str, Any] | None = None
    if storage_secret is not None:
        storage_keys.check_secret_ref(storage_secret, "--storage-secret")
    if parent is None:  # refuse a bad storage before any password is asked
        storage_keys.build_storage(storage_type or "local", storage_path, fields,
                                   "-" if storage_secret else None)
    with open_node_client(app, conn) as client:
        secret = read_secret_stdin("access key secret") if secret_stdin else None
        if parent is not None:
            storage = storage_keys.sub_storage(get_access_key(client, parent),
                                               storage_path or "")
        else:
            value = storage_keys.read_secret_ref(storage_secret, "--storage-secret",
                                                 os.environ, read_secret_stdin) \
                if storage_secret else None
            if value:
                client.add_secret(value)
            storage = storage_keys.build_storage(storage_type or "local", storage_path,
                                                 fields, value)
            if not no_check:
                _check_restrictions(app, client, storage, restrictions)
        data = create_access_key(client, storage, id=ak_id, secret=secret)
    data = storage_keys.masked({k: v for k, v in data.items() if k != "secret"}) | \
        ({"secret": data["secret"]} if data.get("secret") else {})
    if output_format == "json":
        app.term.json(data)
        return
    pairs: list[tuple[str, Any]] = [("id", data.get("id")),
                                    ("storage", storage_keys.summary(data.get("storage")))]
    if parent is not None:
        pairs.append(("parent", parent))
    if data.get("secret"):
        pairs.append(("secret", data["secret"]))
    app.term.fields(pairs)
    if data.get("secret"):
        app.term.warn("the node made this secret and will not show it again: store it now")
    app.term.success(f"created access key {data.get('id')!r}")


def _check_restrictions(app: App, client: Any, storage: dict[str, Any],
                        given: tuple[str, ...]) -> None:
    """The storage against the transfer user's restrictions: those given, else the
    node's own /info (it speaks for the node user that logged in), else the local
    config's (the node user's transfer user: right when nodecli runs on the node);
    when none is known, say so and go on (the node decides)."""
    from nodecli.errors import NodecliError
    from nodecli.node import storage_keys

    if given:
        storage_keys.check_restrictions(storage, list(given), "--restriction")
        return
    try:
        info = client.json("GET", "/info")
    except NodecliError as exc:  # the node may still take the key: it decides
        app.term.warn(f"could not read the node's /info ({exc.message})")
        info = None
    found = storage_keys.info_restrictions(info)
    if found:
        xname = info.get("transfer_user") if isinstance(info, dict) else None
        storage_keys.check_restrictions(storage, found, f"transfer user {xname!r} "
                                                        "(the node's /info)")
        return
    auth = client.endpoint.auth
    user = auth.username if auth.kind == "basic" and not auth.access_key else None
    cfg = app.store.load()
    node_user = cfg.users.get(user) if user else None
    xuser = cfg.transfer_users.get(node_user.transfer_user) if node_user else None
    if xuser is not None and xuser.restrictions:
        storage_keys.check_restrictions(storage, list(xuser.restrictions),
                                        f"transfer user {xuser.name!r} of node user "
                                        f"{user!r} (local config)")
        return
    app.term.warn("the transfer user's restrictions are not known here (not in the "
                  "node's /info, not in the local config): the storage was not checked; "
                  "give --restriction to check it")


@access_key.command("set-verification-key", context_settings=CONTEXT)
@click.argument("ak", shell_complete=complete_access_keys)
@click.option("--public-key", "public_key", required=True, metavar="PEM",
              type=InputFile("PEM key file"),
              help="PEM public key (a private key file works too: only its public half is "
                   "sent).")
@node_options
@pass_app
def access_key_set_verification_key(app: App, ak: str, public_key: str, **kwargs: Any) -> None:
    """PUT /access_keys/AK {"token_verification_key": PEM}: nodes then accept its tokens.

    \b
      nodecli access-key set-verification-key ak1 --public-key public.pem --node prod
    """
    from nodecli.node.access_keys import read_public_key_pem, set_verification_key

    pem, derived = read_public_key_pem(public_key)
    if derived:
        app.term.info(f"using the public half of {public_key} (the private key is not sent)")
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        set_verification_key(client, ak, pem)
    app.term.success(f"verification key registered for access key {ak!r}")


def _row(key: dict[str, Any]) -> dict[str, Any]:
    from nodecli.node.access_keys import key_logging
    from nodecli.node.storage_keys import summary

    own = key_logging(key)
    return {"id": key.get("id"),
            "storage": summary(key.get("storage")),
            "root_file_id": key.get("root_file_id"),
            "verification_key": "yes" if key.get("token_verification_key") else "no",
            "logging": "inherit" if own is None else "on" if own else "off"}


@access_key.command("list", context_settings=CONTEXT)
@fleet_options
@node_options
@output_option()
@pass_app
def access_key_list(app: App, output_format: str, **kwargs: Any) -> None:
    """List the access keys this login may see (GET /access_keys, every page).

    \b
      nodecli access-key list
      nodecli access-key list -o json     # the node's objects as they came
    """
    from nodecli.node.access_keys import list_access_keys

    conn = pop_node_options(kwargs)
    names = fleet_names(app, conn, kwargs)
    if names is not None:
        from nodecli.cli import fleet

        keys, status = fleet.run(app, conn, names, list_access_keys)
        from nodecli.node.storage_keys import masked

        keys = masked(keys)
        rows = keys if output_format in ("json", "jsonl", "csv") else \
            [{"node": k["node"], **_row(k)} for k in keys]
        app.term.table(rows, fleet.columns(KEY_CSV if output_format == "csv"
                                           else KEY_COLUMNS), output_format,
                       empty="no access keys")
        fleet.finish(status)
        return
    with open_node_client(app, conn) as client:
        keys = list_access_keys(client)
    from nodecli.node.storage_keys import masked

    keys = masked(keys)
    rows = keys if output_format in ("json", "jsonl", "csv") else [_row(k) for k in keys]
    app.term.table(rows, KEY_CSV if output_format == "csv" else KEY_COLUMNS, output_format,
                   empty="no access keys")


@access_key.command("show", context_settings=CONTEXT)
@click.argument("ak", shell_complete=complete_access_keys)
@node_options
@output_option(("table", "json"))
@pass_app
def access_key_show(app: App, ak: str, output_format: str, **kwargs: Any) -> None:
    """One access key: storage, root file, its verification key (fingerprint) and whether
    events are logged for it (its own setting, which wins from node 3.8.0, or the node's).

    \b
      nodecli access-key show ak1
      nodecli access-key show ak1 -o json
    """
    from nodecli.node.access_keys import check_ak_id, describe, get_access_key
    from nodecli.node.info import node_info

    check_ak_id(ak)
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        key = get_access_key(client, ak)
        info = node_info(client, app.paths.state_dir, log=app.term.debug)
    from nodecli.node.storage_keys import masked, summary

    key = masked(key)  # every credential-like field, at any depth
    report = describe(key, info.logging if info else None,
                      info.version_tuple if info else None)
    if output_format == "json":
        app.term.json({**report, "storage": key.get("storage"), "key": key})
        return
    logging = report["activity_event_logging"]

    def onoff(value: bool | None, none: str) -> str:
        return none if value is None else "on" if value else "off"

    storage = key.get("storage") if isinstance(key.get("storage"), dict) else {}
    details = {k: v for k, v in storage.items() if k not in ("type", "path")}
    import json

    app.term.fields([
        ("id", report["id"]),
        ("storage", summary(storage)),
        *([("storage fields", json.dumps(details, separators=(",", ":")))]
          if details else []),
        *([("parent", key["parent_id"])] if key.get("parent_id") else []),
        ("root file id", report["root_file_id"]),
        ("verification key", report["verification_key_fingerprint"] or "none registered"),
        ("logging (key)", onoff(logging["key"], "not set (inherits the node's)")),
        ("logging (node)", onoff(logging["node"], "unknown")),
        ("events logged", onoff(logging["events_logged"], "unknown") + f" ({logging['why']})"),
    ])


TREE_COLUMNS = [Column("key", "key", whole=True), Column("storage", "storage"),
                Column("sub_keys", "sub-keys", justify="right", drop=1)]
TREE_CSV = [Column(k, k) for k in ("id", "parent_id", "depth", "storage_type", "storage_url",
                                   "sub_keys")]


@access_key.command("tree", context_settings=CONTEXT)
@node_options
@output_option(("table", "json", "csv"))
@pass_app
def access_key_tree(app: App, output_format: str, **kwargs: Any) -> None:
    """The access keys this login may see, each with its storage and its sub-keys.

    \b
      nodecli access-key tree
      nodecli access-key tree -o json     # depth first: parent_id, depth, sub_keys
      nodecli access-key tree -o csv      # the same rows: id, parent_id, depth...
    """
    from nodecli.node.access_keys import list_access_keys
    from nodecli.node.storage_keys import flatten, tree

    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        rows = flatten(tree(list_access_keys(client)))
    if output_format == "json":
        app.term.json(rows)
        return
    if output_format == "csv":
        app.term.table(rows, TREE_CSV, "csv")
        return
    shown = [{"key": "  " * min(r["depth"], 20) + str(r["id"]),
              "storage": f"{r['storage_type'] or '?'} {r['storage_url'] or '?'}",
              "sub_keys": len(r["sub_keys"])} for r in rows]
    app.term.table(shown, TREE_COLUMNS, output_format, empty="no access keys")


@access_key.command("set", context_settings=CONTEXT)
@click.argument("ak", shell_complete=complete_access_keys)
@click.option("--path", "storage_path", metavar="/PATH", help="New storage path.")
@click.option("--secret-stdin", is_flag=True,
              help="Read the new secret from stdin (never from the command line).")
@click.option("--new-secret", "ask_secret", is_flag=True,
              help="Ask for the new secret (hidden, twice) on a terminal.")
@click.option("--activity-event-logging", "logging",
              type=click.Choice(["on", "off", "inherit"]),
              help="Log this key's events or not (nodes 3.8.0+); inherit: the node's setting.")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="Any other property, typed (true/false/null/numbers/JSON, else a "
                   "string; dots nest: configuration.x=1). Repeatable.")
@node_options
@pass_app
def access_key_set(app: App, ak: str, storage_path: str | None, secret_stdin: bool,
                   ask_secret: bool, logging: str | None, assignments: tuple[str, ...],
                   **kwargs: Any) -> None:
    """Change an access key (PUT /access_keys/AK, a partial update).

    \b
      nodecli access-key set ak1 --activity-event-logging on
      printf '%s\\n' "$NEW_SECRET" | nodecli access-key set ak1 --secret-stdin
      nodecli access-key set ak1 --path /data/project2 --set configuration.note=moved
    """
    from nodecli.node.access_keys import (
        check_ak_id,
        logging_body,
        merge,
        require_per_key_logging,
        update_access_key,
    )
    from nodecli.node.info import node_info
    from nodecli.values import build_object

    check_ak_id(ak)
    body: dict[str, Any] = build_object(assignments) if assignments else {}
    if storage_path is not None:
        if not storage_path.startswith("/"):
            raise UsageError(f"--path must be absolute (start with /), not {storage_path!r}")
        body = merge(body, {"storage": {"path": storage_path}})
    if logging is not None:
        body = merge(body, logging_body(logging))
    if secret_stdin and ask_secret:
        raise UsageError("give --secret-stdin or --new-secret, not both")
    if not body and not (secret_stdin or ask_secret):
        raise UsageError("nothing to change: give --path, --secret-stdin, --new-secret, "
                         "--activity-event-logging or --set KEY=VALUE")
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        if secret_stdin:
            body["secret"] = read_secret_stdin("access key secret")
        elif ask_secret:
            if not app.term.interactive:
                raise UsageError("--new-secret asks on a terminal: use --secret-stdin")
            body["secret"] = click.prompt("New secret", hide_input=True,
                                          confirmation_prompt=True, err=True)
        if "secret" in body:
            client.add_secret(str(body["secret"]))
        if logging is not None:
            info = node_info(client, app.paths.state_dir, log=app.term.debug)
            require_per_key_logging(info.version_tuple if info else None,
                                    info.version if info else None)
        update_access_key(client, ak, body)
    changed = sorted(k for k in body if k != "secret") + (["secret"] if "secret" in body else [])
    app.term.success(f"access key {ak!r} changed ({', '.join(changed)})")


@access_key.command("delete", context_settings=CONTEXT)
@click.argument("ak", shell_complete=complete_access_keys)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@node_options
@pass_app
def access_key_delete(app: App, ak: str, yes: bool, **kwargs: Any) -> None:
    """Delete an access key (its tokens stop working at once).

    \b
      nodecli access-key delete ak1            # asks, on a terminal
      nodecli access-key delete ak1 --yes
    """
    from nodecli.node.access_keys import check_ak_id, delete_access_key

    check_ak_id(ak)
    if not confirm(app, f"Delete access key {ak!r}? Its bearer tokens stop working.", yes=yes):
        raise Aborted("aborted: nothing deleted")
    conn = pop_node_options(kwargs)
    with open_node_client(app, conn) as client:
        delete_access_key(client, ak)
    app.term.success(f"deleted access key {sanitize(ak)!r}")
