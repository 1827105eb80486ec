"""A click group that imports its subcommands only when they are used."""

from __future__ import annotations

import importlib
from typing import Any

import click


class LazyGroup(click.Group):
    """Subcommands are named ``"module:attribute"`` and imported on first use.

    ``nodecli user list`` therefore never imports the modules behind ``events`` or
    ``token`` (and with them the HTTP and crypto stacks).
    """

    def __init__(self, *args: Any, lazy_subcommands: dict[str, tuple[str, str]] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # name -> ("module:attribute", one-line help shown by --help without importing)
        self.lazy_subcommands = dict(lazy_subcommands or {})

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
