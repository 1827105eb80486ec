"""A click group that imports its subcommands only when they are used."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click


def _fold_raw(line: str, width: int) -> list[str]:
    """A line of a ``\\b`` block (an example, a two-column list) too long for ``width``,
    broken between words, never inside one: a command example goes on after `` \\``
    (it can still be pasted); a ``command   description`` line gets its description on
    the next lines, under the command, when there is no room beside it."""
    import re
    import textwrap

    indent = line[:len(line) - len(line.lstrip())]
    body = line.strip()

    def wrap(text: str, first: str, rest: str) -> list[str]:
        return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest,
                             break_long_words=False, break_on_hyphens=False) or [first]

    two = re.match(r"(\S.*?\S)( {3,})(\S.*)$", body)
    if two:
        term, gap, text = two.groups()
        column = len(indent) + len(term) + len(gap)
        if column + 24 <= width:
            return wrap(text, indent + term + gap, " " * column)
        head = _fold_raw(indent + term, width) if len(indent + term) > width \
            else [indent + term]
        return [*head, *wrap(text, indent + "    ", indent + "    ")]
    if not body.startswith(("nodecli ", "$ ")):
        return wrap(body, indent, indent)
    wrapped = textwrap.wrap(body, max(width - 2, 10), initial_indent=indent,
                            subsequent_indent=indent + "    ", break_long_words=False,
                            break_on_hyphens=False)
    return [w + " \\" for w in wrapped[:-1]] + wrapped[-1:]


def wrap_help(text: str, width: int, indent: str = "") -> str:
    """click's paragraph wrapping (a paragraph after a ``\\b`` line kept as written),
    but a word is never broken: not at a hyphen (``--password-stdin``), not when longer
    than the line; a kept line too long for the terminal is broken between words."""
    import textwrap

    paragraphs: list[tuple[int, bool, list[str]]] = []
    buf: list[str] = []
    level: int | None = None
    for line in [*text.expandtabs().splitlines(), ""]:
        if line:
            if level is None:
                level = len(line) - len(line.lstrip())
            buf.append(line)
            continue
        if buf:
            raw = buf[0].strip() == "\b"
            paragraphs.append((level or 0, raw, buf[1:] if raw else buf))
        buf, level = [], None
    out = []
    for level, raw, lines in paragraphs:
        pad = indent + " " * level
        if raw:
            kept: list[str] = []
            for line in lines:
                line = pad + line
                kept += [line] if len(line) <= width else _fold_raw(line, width)
            out.append("\n".join(kept))
        else:
            out.append(textwrap.fill(" ".join(x.strip() for x in lines), width,
                                     initial_indent=pad, subsequent_indent=pad,
                                     break_long_words=False, break_on_hyphens=False))
    return "\n\n".join(out)


class HelpFormatter(click.HelpFormatter):
    """click's help layout with words kept whole at any terminal width (click's own
    wrapping breaks ``--password-stdin`` at its hyphen and cuts words longer than the
    line, and leaves a ``\\b`` example wider than the terminal)."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        import textwrap

        first = f"{'Usage: ' if prefix is None else prefix:>{self.current_indent}}{prog} "
        longest = max((len(w) for w in args.split()), default=0)
        rest = " " * (len(first) if self.width - len(first) >= max(20, longest) else
                      self.current_indent + 4)
        self.write("\n".join(textwrap.wrap(
            args, self.width, initial_indent=first, subsequent_indent=rest,
            break_long_words=False, break_on_hyphens=False) or [first.rstrip()]) + "\n")

    def write_text(self, text: str) -> None:
        self.write(wrap_help(text, self.width, " " * self.current_indent))
        self.write("\n")

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        import textwrap

        rows = list(rows)
        first_col = min(max((len(a) for a, _ in rows), default=0), col_max) + col_spacing
        for term, text in rows:
            self.write(f"{'':>{self.current_indent}}{term}")
            if not text:
                self.write("\n")
                continue
            column = first_col + self.current_indent
            room = max(self.width - column, 10)
            if max((len(w) for w in text.split()), default=0) > room or room < 24:
                column = self.current_indent + 4  # a narrow terminal: under the term
                room = max(self.width - column, 10)
                self.write("\n" + " " * column)
            elif len(term) <= first_col - col_spacing:
                self.write(" " * (first_col - len(term)))
            else:
                self.write("\n" + " " * column)
            lines = [ln for par in text.split("\n\n") for ln in textwrap.wrap(
                par.replace("\n", " "), room, break_long_words=False,
                break_on_hyphens=False)] or [""]
            self.write(lines[0] + "\n")
            for line in lines[1:]:
                self.write(" " * column + line + "\n")


class HelpContext(click.Context):
    """The context of every command of the tree: its help uses :class:`HelpFormatter`."""

    formatter_class = HelpFormatter


def adopt(cmd: click.Command) -> click.Command:
    """Give a command of the tree our help layout (click's extension point: the
    command's ``context_class``), whichever decorator made it."""
    if cmd.context_class is click.Context:
        cmd.context_class = HelpContext
    return cmd


class HelpGroup(click.Group):
    """A group that, named alone (``nodecli user``), prints its help to stdout and exits 0.

    click's default treats a bare group as a usage error (exit 2, help on stderr).
    Every group of the tree uses this class; ``nodecli.cli.main`` also maps click's
    "no args is help" error the same way, so a group added without ``cls=`` behaves alike.
    """

    context_class = HelpContext

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        return adopt(cmd) if cmd is not None else None

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


@contextmanager
def _closed_stdout_passes_click() -> Iterator[None]:
    """EPIPE as StdoutClosed: click's ``main`` turns a BrokenPipeError into exit 1; our
    entry point makes StdoutClosed the quiet exit 141 of every closed stdout."""
    try:
        yield
    except BrokenPipeError as exc:
        from nodecli.errors import StdoutClosed

        raise StdoutClosed() from exc


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
        # before the root's callback reads its parameters; and on a <TAB> too (resilient
        # parsing), where the completers read the --home typed after the subcommand
        try:
            rest, found = hoist_global_options(ctx, cmd, rest)
        except click.UsageError:
            if not ctx.resilient_parsing:
                raise
            found = {}  # a <TAB> after a --home still awaiting its value
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

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # the root's eager options (--help, --version) write while the arguments are
        # parsed, before invoke: their closed stdout is the same quiet exit 141
        with _closed_stdout_passes_click():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        with _closed_stdout_passes_click():
            return super().invoke(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd_name = self.aliases.get(cmd_name, cmd_name)
        if cmd_name in self.lazy_subcommands:
            module_name, attr = self.lazy_subcommands[cmd_name][0].split(":")
            module = importlib.import_module(module_name)
            cmd = getattr(module, attr)
            if not isinstance(cmd, click.Command):
                raise TypeError(f"{module_name}:{attr} is not a click command")
            return adopt(cmd)
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
