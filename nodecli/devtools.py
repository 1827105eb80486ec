"""Generated files: shell completion scripts and the man page.

    python -m nodecli.devtools generate   # write completions/nodecli.{bash,zsh,fish}, man/nodecli.1
    python -m nodecli.devtools check      # exit 1 naming every stale file

Generation is deterministic (no dates, commands and options in a fixed order), so
the committed files can be compared with a fresh generation by the test suite and CI.
The man page is roff written here from the click command tree (no extra dependency).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from nodecli import __version__
from nodecli.errors import ExitCode

ROOT = Path(__file__).resolve().parent.parent

EXIT_MEANINGS = {
    ExitCode.OK: "success",
    ExitCode.ERROR: "error: conflict (already exists, still in use), refused change, "
                    "operation stopped or aborted",
    ExitCode.USAGE: "usage: bad flag or value, or a prompt was needed but stdin is not a "
                    "terminal",
    ExitCode.CONFIG: "the config file is damaged or invalid; nothing was changed",
    ExitCode.AUTH: "authentication or permission refused; invalid or expired token",
    ExitCode.NOT_FOUND: "not found: user, transfer user, key, event, operation, profile",
    ExitCode.REMOTE: "server, network or TLS failure (after retries)",
    ExitCode.CANCELLED: "a watched transfer was cancelled",
    ExitCode.TIMEOUT: "a watch's --timeout passed before the transfer ended",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C, SIGTERM)",
    ExitCode.BROKEN_PIPE: "standard output was closed by the reader (| head); silent",
}

ENVIRONMENT = {
    "NODECLI_HOME": "One folder for config.toml, keys/ and state/ (same as --home).",
    "NODECLI_PASSWORD": "Node user password (user, token and classic commands), or the "
                        "password / access key secret of remote node commands; instead of "
                        "-p, --password-stdin or the prompt.",
    "NODECLI_BEARER": "Bearer token for remote node commands (with --access-key), instead "
                      "of --bearer-file.",
    "NODECLI_TOKEN": "OAuth access token of the collaboration service (operations, "
                     "workspaces, service add), instead of --token-file or the profile.",
    "NODECLI_SECRETS_BACKEND": "file or keyring: where profile secrets are stored.",
    "NODECLI_OUTPUT": "Default -o format of every command that has it (yaml wherever "
                      "there is json); -o wins.",
    "NODECLI_PROXY_PASSWORD": "Password of a proxy whose URL names a user (never on the "
                              "command line); stored with a profile by node add.",
    "HTTPS_PROXY": "Proxy for https:// nodes and services (also https_proxy, HTTP_PROXY, "
                   "ALL_PROXY; NO_PROXY exempts hosts); --proxy and a profile's proxy win.",
    "NO_COLOR": "Any non-empty value disables colour (as does --no-color).",
    "NODECLI_DEBUG": "Show a traceback for internal errors.",
    "NODECLI_SINK_TOKEN": "events ship: the sink's token (HTTP bearer, NATS token); never "
                          "on the command line.",
    "NODECLI_SINK_USER": "events ship: the sink's user (HTTP Basic, NATS).",
    "NODECLI_SINK_PASSWORD": "events ship: the sink's password (HTTP Basic, NATS).",
    "NODECLI_COLLECTOR_TOKEN": "emulator collector: the bearer token it asks for.",
    "_NODECLI_COMPLETE": "Set by the completion scripts; not for direct use.",
}

FILES = (
    ("config.toml", "Node users, transfer users and profiles: TOML with a version key, 0600."),
    ("config.toml.bak", "The previous version of config.toml (nodecli config restore)."),
    (".config.lock", "Lock serialising writers of config.toml."),
    ("secrets.toml", "Profile secrets when no keyring backend is available (0600)."),
    ("keys/", "RSA key pairs for bearer tokens (private keys 0600)."),
    ("state/", "Checkpoints, caches and emulator data."),
)


# -- command tree ------------------------------------------------------------------------


def _subcommand(group: click.Group, ctx: click.Context, name: str) -> click.Command | None:
    """The subcommand (imported: generation documents every command, so a module that
    fails to import is an error here, never a silent gap in the man page)."""
    return group.get_command(ctx, name)


def walk(cmd: click.Command, ctx: click.Context) -> Iterator[tuple[click.Context, click.Command]]:
    """Depth-first (sorted) over the command tree, the root included."""
    yield ctx, cmd
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.list_commands(ctx)):
            sub = _subcommand(cmd, ctx, name)
            if sub is None or sub.hidden:
                continue
            yield from walk(sub, sub.context_class(sub, info_name=name, parent=ctx,
                                                   **sub.context_settings))


# -- roff --------------------------------------------------------------------------------


def roff_escape(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text[:1] in (".", "'"):
        text = "\\&" + text
    return text


def _help_paragraphs(text: str) -> list[str]:
    """Render a click help text: paragraphs filled, ``\\b`` blocks kept verbatim."""
    out: list[str] = []
    for para in inspect.cleandoc(text).split("\n\n"):
        lines = para.split("\n")
        if lines and lines[0].strip() == "\b":
            out.append(".nf")
            out.extend(roff_escape(line) for line in lines[1:])
            out.append(".fi")
        else:
            out.append(roff_escape(" ".join(line.strip() for line in lines if line.strip())))
        out.append(".PP")
    if out and out[-1] == ".PP":
        out.pop()
    return out


def _command_path(ctx: click.Context) -> str:
    return ctx.command_path


def _options(cmd: click.Command, ctx: click.Context) -> list[str]:
    out: list[str] = []
    for param in cmd.get_params(ctx):
        if not isinstance(param, click.Option):
            continue  # arguments appear in the usage line
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        out.append(".TP")
        out.append("\\fB" + roff_escape(names) + "\\fR")
        out.append(roff_escape(help_text) if help_text else "")
    return out


def man_page(cli: click.Command) -> str:
    root_ctx = cli.context_class(cli, info_name="nodecli", **cli.context_settings)
    lines = [
        f'.TH NODECLI 1 "" "nodecli {__version__}" "User Commands"',
        ".SH NAME",
        "nodecli \\- administer file\\-transfer nodes: node users, bearer tokens, events, "
        "operations",
        ".SH SYNOPSIS",
        ".B nodecli",
        "[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".br",
        ".B nodecli",
        "\\-a|\\-m|\\-d|\\-l|\\-b \\fIFILE\\fR|\\-\\-acl\\-list|\\-\\-reload|\\-\\-bearer\\-create "
        "[\\fB\\-u\\fR \\fINAME\\fR] [\\fB\\-x\\fR \\fIXUSER\\fR] [\\fB\\-p\\fR \\fIPASS\\fR] "
        "[\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        *_help_paragraphs(cli.help or ""),
        ".SH OPTIONS",
        *_options(cli, root_ctx),
        ".SH COMMANDS",
    ]
    environment = dict(ENVIRONMENT)
    for ctx, cmd in walk(cli, root_ctx):
        for param in cmd.params:
            envvars = [param.envvar] if isinstance(param.envvar, str) else param.envvar or []
            for var in envvars:
                where = f"{ctx.command_path} {param.opts[-1]}"
                environment.setdefault(var, f"Same as {where}: {param.help or ''}".rstrip(": "))
        if ctx is root_ctx:
            continue
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        lines.append(f'.SS "{roff_escape(_command_path(ctx) + " " + usage)}"')
        lines.extend(_help_paragraphs(cmd.help or cmd.short_help or ""))
        if cmd.epilog:
            lines.append(".PP")
            lines.extend(_help_paragraphs(cmd.epilog))
        opts = _options(cmd, ctx)
        if opts:
            lines.append(".PP")
            lines.append("Options:")
            lines.extend(opts)
    lines += [".SH EXIT STATUS", ".TS", "lB lBx", "l lx.", "code\tmeaning"]
    for code in ExitCode:
        lines.append(f"{int(code)}\tT{{\n{roff_escape(EXIT_MEANINGS[code])}\nT}}")
    lines += [".TE", ".PP",
              "Errors are one line on standard error, starting \\(lqnodecli: error:\\(rq."]
    lines.append(".SH ENVIRONMENT")
    for name in sorted(environment):
        lines += [".TP", f"\\fB{roff_escape(name)}\\fR", roff_escape(environment[name])]
    lines += [
        ".SH FILES",
        "With \\fBNODECLI_HOME\\fR or \\fB\\-\\-home\\fR everything is in that folder; "
        "otherwise in the platform's user config, data and state folders "
        "(\\fBnodecli config path\\fR prints them). Files are created 0600, folders 0700.",
    ]
    for name, text in FILES:
        lines += [".TP", f"\\fI{roff_escape(name)}\\fR", roff_escape(text)]
    lines += [".SH SEE ALSO", "The README of the nodecli project."]
    return "\n".join(lines) + "\n"


# -- generation ----------------------------------------------------------------------------


def generated_files() -> dict[str, str]:
    """Relative path -> content of every generated file."""
    from nodecli.cli.completion import completion_source
    from nodecli.cli.root import cli

    files = {f"completions/nodecli.{shell}": completion_source(shell)
             for shell in ("bash", "zsh", "fish")}
    files["man/nodecli.1"] = man_page(cli)
    return files


def stale_files(root: Path = ROOT) -> list[str]:
    stale = []
    for rel, content in sorted(generated_files().items()):
        path = root / rel
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        if current != content:
            stale.append(rel)
    return stale


def generate(root: Path = ROOT) -> list[str]:
    written = []
    for rel, content in sorted(generated_files().items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            written.append(rel)
    return written


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    """``generate`` or ``check`` the files of the checkout at ``root``."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["generate"]:
        for rel in generate(root):
            print(f"wrote {rel}")
        return 0
    if args == ["check"]:
        stale = stale_files(root)
        for rel in stale:
            print(f"stale: {rel} (run: python -m nodecli.devtools generate)", file=sys.stderr)
        return 1 if stale else 0
    print("usage: python -m nodecli.devtools generate|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
