"""The root command: global options, the classic administration flags, subcommands."""

from __future__ import annotations

from typing import Any

import click

from nodecli import __version__
from nodecli.cli.lazy import LazyGroup, lazy_completer

# name -> "module:attribute"; imported only when the subcommand runs.
SUBCOMMANDS = {
    "user": ("nodecli.cli.users:user", "Node users: add, list, show, passwd, delete, acl."),
    "xuser": ("nodecli.cli.xusers:xuser", "Transfer users: restrictions or docroot."),
    "config": ("nodecli.cli.config_cmd:config",
               "Config file: path, check, restore, export, import."),
    "completion": ("nodecli.cli.completion:completion", "Print the shell completion script."),
    "key": ("nodecli.cli.keys:key", "RSA key pairs for bearer tokens."),
    "token": ("nodecli.cli.tokens:token", "Create, inspect and verify bearer tokens."),
    "node": ("nodecli.cli.nodes:node", "Node connection profiles and node info."),
    "access-key": ("nodecli.cli.access_keys:access_key",
                   "Access keys: create, list, show, set, delete; verification keys."),
    "permission": ("nodecli.cli.permissions:permission",
                   "Permissions on files: list, grant, revoke, show."),
    "files": ("nodecli.cli.files:files",
              "Browse a node's files: ls, find, tree (every page of every folder)."),
    "access": ("nodecli.cli.access:access",
               "Who may see what: can-i, who-can, what-can (--verify asks the node)."),
    "transfer": ("nodecli.cli.transfers:transfer",
                 "Transfers: start, list, show, watch, cancel, modify."),
    "emulator": ("nodecli.cli.emulator:emulator", "Run the built-in node emulator."),
    "events": ("nodecli.cli.events_ship:events",
               "List, get, tail and ship the node activity log."),
    "service": ("nodecli.cli.service:service", "Collaboration service profiles."),
    "operations": ("nodecli.cli.operations:operations",
                   "List, watch and resolve long-running operations."),
    "workspaces": ("nodecli.cli.workspaces:workspaces", "Create workspaces (202 + operation)."),
    "api": ("nodecli.cli.api:api", "Any request to a node or service, with its credentials."),
    "export": ("nodecli.cli.declare:export_cmd",
               "Write the document of what is: local users, a node's keys and permissions."),
    "diff": ("nodecli.cli.declare:diff_cmd",
             "What apply -f FILE would change (exit 0 none, 1 some, 2+ error)."),
    "apply": ("nodecli.cli.declare:apply_cmd",
              "Make the local users and a node hold what a document says."),
    "exporter": ("nodecli.cli.exporter:exporter",
                 "Serve Prometheus metrics about node profiles."),
}

# other spellings that work but are not shown: the singular or plural a user may guess
ALIASES = {
    "users": "user", "xusers": "xuser", "keys": "key", "tokens": "token", "nodes": "node",
    "access-keys": "access-key", "permissions": "permission", "transfers": "transfer",
    "event": "events", "services": "service", "operation": "operations",
    "workspace": "workspaces",
}


def _flag_name(ctx: click.Context, param_name: str) -> str:
    """How the user spells a parameter: its longest option (``output_format`` -> --output)."""
    for param in ctx.command.params:
        if param.name == param_name and param.opts:
            return max(param.opts, key=len)
    return "--" + param_name.replace("_", "-")


CLASSIC_ACTIONS = ("add", "list_users", "modify", "delete", "bearer_create", "backup",
                   "acl_list", "reload")

HELP = """Administer file-transfer nodes: node users, bearer tokens, events, operations.

\b
Examples (nodecli help COMMAND... shows a command's help):
  nodecli user add alice --xuser aspera
  nodecli xuser add aspera --restriction 'file:////data/*'
  nodecli events tail -f --node prod
  nodecli operations resolve --workspace 17

\b
Classic flags (compatible with the node's administration tool):
  nodecli -au usr1 -x aspera           add node user usr1 on transfer user aspera
  nodecli -mu usr1 -p pass1.1          change usr1's password (prompted if -p omitted)
  nodecli -l                           list node users, transfer users and ACLs
  nodecli -du usr1                     delete node user usr1
  nodecli -u usr1 --bearer-create --access-key AK --user-id 42   mint a bearer token
"""


@click.group(
    cls=LazyGroup,
    lazy_subcommands=SUBCOMMANDS,
    aliases=ALIASES,
    invoke_without_command=True,
    help=HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--home", type=click.Path(file_okay=False), envvar="NODECLI_HOME",
              show_envvar=True, help="One folder for config.toml, keys/ and state/.")
@click.option("-v", "--verbose", count=True, help="More messages on stderr (-vv: debug).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors on stderr.")
@click.option("--no-color", is_flag=True, help="No colour (also: NO_COLOR=1).")
@click.option("--dry-run", is_flag=True,
              help="Show what would be sent to a node or written (a config diff), change "
                   "nothing, exit 0. Also after the command.")
@click.option("--deadline", metavar="DURATION", envvar="NODECLI_DEADLINE", show_envvar=True,
              help="Bound on the requests to nodes and services: a command's all "
                   "together (requests, retries, waits), each of a following command's "
                   "(tail -f, watch, top, exporter). Default 120s.")
@click.version_option(__version__, "-V", "-A", "--version", prog_name="nodecli",
                      message="%(prog)s %(version)s")
# --- classic administration flags ---------------------------------------------------
@click.option("-a", "--add", is_flag=True, help="Classic: add node user -u with transfer user -x.")
@click.option("-l", "--list", "list_users", is_flag=True, help="Classic: list node users.")
@click.option("-m", "--modify", is_flag=True, help="Classic: change -u's password or ACLs.")
@click.option("-d", "--delete", is_flag=True, help="Classic: delete node user -u.")
@click.option("-u", "--user", "user", metavar="NAME", help="Classic: node user name.",
              shell_complete=lazy_completer("complete_users"))
@click.option("-p", "--pwd", "--password", "password", metavar="PASS",
              help="Classic: password (visible to other users of the machine: "
                   "prefer the prompt, --password-stdin or NODECLI_PASSWORD).")
@click.option("--password-stdin", is_flag=True, help="Read the password from stdin.")
@click.option("-x", "--xuser", "xuser", metavar="XUSER", help="Classic: transfer user.",
              shell_complete=lazy_completer("complete_transfer_users"))
@click.option("--acl-set", metavar="LIST", help="Classic: replace ACLs (comma-separated).")
@click.option("--acl-add", metavar="LIST", help="Classic: add ACLs (after --acl-set).")
@click.option("--acl-del", metavar="LIST",
              help="Classic: remove ACLs (last: an ACL both added and removed is removed).")
@click.option("--acl-list", is_flag=True, help="Classic: show the ACLs of -u (or all).")
@click.option("-b", "--backup", metavar="FILE", type=click.Path(dir_okay=False),
              help="Classic: write a backup of all user data to FILE.")
@click.option("--reload", is_flag=True, help="Classic: validate the config as the node "
              "service would on reload.")
@click.option("-o", "--output", "output_format", type=click.Choice(["table", "json", "csv"]),
              help="Output format for -l / --acl-list.")
# --- classic bearer-token flags ---------------------------------------------------------
@click.option("--bearer-create", is_flag=True, help="Classic: create a bearer token.")
@click.option("--access-key", metavar="AK", help="Token: access key id.",
              shell_complete=lazy_completer("complete_access_keys"))
@click.option("--user-id", metavar="UID", help="Token: user id granted permissions.")
@click.option("--group-ids", metavar="G1,G2", help="Token: group ids (comma-separated).")
@click.option("--expires-at", metavar="TIME",
              help="Token: expiry, ISO 8601 UTC or +2h/+30m/+7d (default +1h).")
@click.option("--key-file-dir", metavar="DIR", help="Token: folder of the key pair.",
              shell_complete=lazy_completer("complete_dirs"))
@click.option("--key-file-path", metavar="PATH", help="Token: private key file.",
              shell_complete=lazy_completer("complete_files"))
@click.option("--scope-role", type=click.Choice(["admin", "user"]), help="Token: role "
              "(default admin).")
@click.option("--token-key-length", type=int, metavar="BITS",
              help="Token: RSA key length for a new key (default 4096).")
@click.option("-y", "--yes", is_flag=True, help="Answer yes to confirmations (create key...).")
@click.pass_context
def cli(ctx: click.Context, home: str | None, verbose: int, quiet: bool, no_color: bool,
        dry_run: bool, deadline: str | None, **classic: Any) -> None:
    # Imported here, not at module level: `nodecli --help` and `--version` never get
    # this far, so they skip pathlib, the output module and the app object entirely.
    from nodecli.cli.app import App, Terminal
    from nodecli.config.paths import resolve_paths

    if dry_run:
        from nodecli import dryrun

        dryrun.activate()
    term = Terminal(verbosity=-1 if quiet else verbose, no_color=no_color)
    app = App(paths=resolve_paths(home), term=term)
    if deadline is not None:
        app.budget.seconds = _deadline_seconds(deadline)
    ctx.obj = app
    actions = [name for name in CLASSIC_ACTIONS if classic.get(name)]
    used = [name for name, value in classic.items() if value not in (None, False)]
    if ctx.invoked_subcommand is not None:
        if used:
            flags = ", ".join(_flag_name(ctx, u) for u in used)
            raise click.UsageError(f"classic flags ({flags}) cannot be combined with the "
                                   f"'{ctx.invoked_subcommand}' subcommand")
        return
    if not used:
        click.echo(ctx.get_help())
        ctx.exit(0)
    if (classic.get("acl_set") or classic.get("acl_add") or classic.get("acl_del")) and not (
        classic.get("add") or classic.get("modify")
    ):
        raise click.UsageError("--acl-set/--acl-add/--acl-del go with -a (add) or -m (modify)")
    if len(actions) > 1 and not (set(actions) <= {"add", "acl_list"} or
                                 set(actions) <= {"modify", "acl_list"}):
        flags = ", ".join(_flag_name(ctx, a) for a in actions)
        raise click.UsageError(f"choose one action, not {flags}")
    if not actions:
        raise click.UsageError("no action given: use -a, -l, -m, -d, --bearer-create, -b "
                               "or --acl-list (see -h)")
    from nodecli.cli.classic import run_classic

    run_classic(app, actions, classic)


def _deadline_seconds(text: str) -> float:
    """Seconds of --deadline / NODECLI_DEADLINE: from 1 s to a week."""
    from nodecli.errors import UsageError
    from nodecli.timeparse import TimeParseError, parse_duration

    try:
        seconds = parse_duration(text).total_seconds()
    except TimeParseError as exc:
        raise UsageError(f"--deadline (NODECLI_DEADLINE): {exc}") from None
    if not 1 <= seconds <= 7 * 86400:
        raise UsageError(f"--deadline (NODECLI_DEADLINE): {text.strip()[:40]!r} is not "
                         "between 1s and 1w")
    return seconds


@cli.command("help")
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@click.pass_context
def help_cmd(ctx: click.Context, words: tuple[str, ...]) -> None:
    """Show the help of nodecli or of a command (nodecli help events tail)."""
    here = ctx.find_root()
    cmd: click.Command = here.command
    for word in words:
        if not isinstance(cmd, click.Group):
            raise click.UsageError(f"'{here.command_path}' has no subcommands (so no "
                                   f"'{word}')")
        # resolve_command suggests a close name for a typo, as the command line does
        _, found, _ = cmd.resolve_command(here, [word])
        assert found is not None  # (resolve_command raises for an unknown name)
        here = found.context_class(found, info_name=word, parent=here,
                                   **found.context_settings)
        cmd = found
    click.echo(cmd.get_help(here))
