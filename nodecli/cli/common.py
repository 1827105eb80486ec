"""Small CLI helpers shared by every command group (options, secrets, prompts)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])

pass_app = click.make_pass_decorator(App)


class UserPath(click.Path):
    """A path option that expands a leading ``~`` itself (``--cacert ~/ca.pem`` works
    even where the shell did not expand it, e.g. inside quotes or a variable)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.startswith("~"):
            value = os.path.expanduser(value)
        return super().convert(value, param, ctx)


def output_option(choices: tuple[str, ...] = ("table", "json", "csv"),
                  default: str = "table") -> Callable[[F], F]:
    """``-o/--output FORMAT``: machine output; field names in json are stable."""
    return click.option(
        "-o", "--output", "output_format", type=click.Choice(list(choices)), default=default,
        show_default=True, help=f"Output format: {', '.join(choices)}.",
    )


def read_secret_stdin(what: str = "password") -> str:
    """One line from stdin without its newline; an empty line is refused."""
    line = sys.stdin.readline()
    value = line.rstrip("\r\n")
    if not value:
        raise UsageError(f"no {what} on standard input")
    return value


def get_secret(
    app: App,
    *,
    value: str | None,
    from_stdin: bool = False,
    env: str | None = "NODECLI_PASSWORD",
    what: str = "password",
    prompt: str = "Password",
    confirm: bool = False,
    flags: str = "-p/--password, --password-stdin",
) -> str:
    """Resolve a secret: flag > --*-stdin > environment > hidden prompt on a terminal.

    Without a terminal and without any source: exit 2 naming the flags that answer.
    The secret is never echoed.
    """
    if value is not None:
        if not value:
            raise UsageError(f"the {what} is empty")
        return value
    if from_stdin:
        return read_secret_stdin(what)
    if env and os.environ.get(env):
        return os.environ[env]
    if not app.term.interactive:
        names = flags + (f" or {env}" if env else "")
        raise UsageError(f"a {what} is needed and stdin is not a terminal: use {names}")
    secret = click.prompt(prompt, hide_input=True, confirmation_prompt=confirm,
                          err=True, show_default=False)
    if not secret:
        raise UsageError(f"the {what} is empty")
    return secret


def confirm(app: App, question: str, *, yes: bool, flag: str = "--yes",
            default: bool = False) -> bool:
    """Ask on a terminal; without one, ``--yes`` must answer (else exit 2 naming it)."""
    if yes:
        return True
    if not app.term.interactive:
        raise UsageError(f"confirmation needed and stdin is not a terminal: use {flag}")
    return click.confirm(question, default=default, err=True)
