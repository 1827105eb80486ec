"""A click group that imports its subcommands only when they are used."""

from __future__ import annotations

import importlib
from typing import Any

import click


class HelpGroup(click.Group):
    """A group that, named alone (``nodecli user``), prints its help to stdout and exits 0.

    click's default treats a bare group as a usage error (exit 2, help on stderr).
    Every group of the tree uses this class; ``nodecli.cli.main`` also maps click's
    "no args is help" error the same way, so a group added without ``cls=`` behaves alike.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        return super().parse_args(ctx, args)


# Options of the root command that may also follow the subcommand
# (``nodecli events tail -q``, ``nodecli user list --home DIR``).
GLOBAL_FLAGS = {"-q": "quiet", "--quiet": "quiet", "--no-color": "no_color",
                "--dry-run": "dry_run"}
GLOBAL_VALUED = {"--home": "home"}


def _option_names(cmd: click.Command) -> tuple[set[str], set[str]]:
    """(every option spelling of ``cmd``, the spellings that take a value)."""
    names: set[str] = set()
    valued: set[str] = set()
    for param in cmd.params:
        if isinstance(param, click.Option):
            spellings = [*param.opts, *param.secondary_opts]
            names.update(spellings)
            if not param.is_flag and not param.count:
                valued.update(param.opts)
    return names, valued


def hoist_global_options(ctx: click.Context, cmd: click.Command | None,
                         tokens: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Take the root's global options out of the tokens following a subcommand.

    The subcommand path is followed through nested groups so that an option the
    command defines itself (or a value of one of its options) is never taken.
    Tokens after ``--`` are left alone. Returns (remaining tokens, found values).
    """
    found: dict[str, Any] = {}
    kept: list[str] = []
    own: set[str] = set()
    valued: set[str] = set()
    if cmd is not None:
        own, valued = _option_names(cmd)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "--":
            kept.extend(tokens[i:])
            break
        if isinstance(cmd, click.Group) and not tok.startswith("-"):
            sub = cmd.get_command(ctx, tok)
            if sub is not None:
                cmd = sub
                sub_own, sub_valued = _option_names(sub)
                own |= sub_own
                valued |= sub_valued
            kept.append(tok)
            i += 1
            continue
        name = tok.split("=", 1)[0]
        if name in own:
            kept.append(tok)
            if name in valued and "=" not in tok and i + 1 < len(tokens):
                kept.append(tokens[i + 1])
                i += 1
        elif tok in GLOBAL_FLAGS:
            found[GLOBAL_FLAGS[tok]] = True
        elif tok == "--verbose" or (len(tok) > 1 and tok[0] == "-" and set(tok[1:]) == {"v"}):
            found["verbose"] = found.get("verbose", 0) + (1 if tok == "--verbose"
                                                          else len(tok) - 1)
        elif name in GLOBAL_VALUED:
            if "=" in tok:
                found[GLOBAL_VALUED[name]] = tok.split("=", 1)[1]
            elif i + 1 < len(tokens):
                found[GLOBAL_VALUED[name]] = tokens[i + 1]
                i += 1
            else:
                raise click.UsageError(f"option '{name}' requires an argument", ctx=ctx)
        else:
            kept.append(tok)
        i += 1
    return kept, found


class LazyGroup(HelpGroup):
    """Subcommands are named ``"module:attribute"`` and imported on first use.

    ``nodecli user list`` therefore never imports the modules behind ``events`` or
    ``token`` (and with them the HTTP and crypto stacks).
    """

    def __init__(self, *args: Any, lazy_subcommands: dict[str, tuple[str, str]] | None = None,
                 aliases: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # name -> ("module:attribute", one-line help shown by --help without importing)
        self.lazy_subcommands = dict(lazy_subcommands or {})
        # other spellings (``users`` for ``user``): they work, but help and completion
        # show only the command's own name
        self.aliases = dict(aliases or {})

    def visible_commands(self, ctx: click.Context) -> list[str]:
        """The names help and completion show (no aliases, no hidden commands)."""
        names = set(self.lazy_subcommands)
        for name in super().list_commands(ctx):
            cmd = super().get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                names.add(name)
        return sorted(names)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # the commands first: they are what a newcomer looks for, before the many flags
        self.format_commands(ctx, formatter)
        click.Command.format_options(self, ctx, formatter)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = click.utils.make_str(args[0])
        if (self.get_command(ctx, name) is None and not ctx.resilient_parsing
                and not name.startswith("-")):
            # click suggests from the commands it holds; the lazy ones are not among them
            from difflib import get_close_matches

            close = get_close_matches(name, self.visible_commands(ctx), n=1)
            also = f" Did you mean {close[0]!r}?" if close else ""
            raise click.UsageError(f"No such command {name!r}.{also}", ctx=ctx)
        cmd_name, cmd, rest = super().resolve_command(ctx, args)
        if not ctx.resilient_parsing:  # before the root's callback reads its parameters
            rest, found = hoist_global_options(ctx, cmd, rest)
            for key, value in found.items():
                if key == "verbose":
                    ctx.params[key] = (ctx.params.get(key) or 0) + value
                else:
                    ctx.params[key] = value
        return cmd_name, cmd, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy_subcommands[name][1]) for name in sorted(self.lazy_subcommands)]
        for name in super().list_commands(ctx):
            cmd = super().get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(formatter.width)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            from nodecli.errors import StdoutClosed

            raise StdoutClosed() from exc

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd_name = self.aliases.get(cmd_name, cmd_name)
        if cmd_name in self.lazy_subcommands:
            module_name, attr = self.lazy_subcommands[cmd_name][0].split(":")
            module = importlib.import_module(module_name)
            cmd = getattr(module, attr)
            if not isinstance(cmd, click.Command):
                raise TypeError(f"{module_name}:{attr} is not a click command")
            return cmd
        return super().get_command(ctx, cmd_name)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        """Complete subcommand names from the table, without importing any of them.

        click's default imports every subcommand to read its help, which would pull in
        the HTTP and crypto stacks on each <TAB>.
        """
        from click.shell_completion import CompletionItem

        results = [CompletionItem(name, help=self.lazy_subcommands[name][1])
                   for name in sorted(self.lazy_subcommands) if name.startswith(incomplete)]
        for name in super().list_commands(ctx):
            cmd = super().get_command(ctx, name)
            if cmd is not None and not cmd.hidden and name.startswith(incomplete):
                results.append(CompletionItem(name, help=cmd.get_short_help_str()))
        # options of this group (click's Command.shell_complete handles them)
        results.extend(click.Command.shell_complete(self, ctx, incomplete))
        return results


def lazy_completer(name: str) -> Any:
    """The completion function ``nodecli.cli.completers.<name>``, imported only when the
    shell asks for completions (a command's options are declared at every start)."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> Any:
        from nodecli.cli import completers

        return getattr(completers, name)(ctx, param, incomplete)

    complete.__name__ = name
    return complete
