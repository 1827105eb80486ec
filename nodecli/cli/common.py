"""Small CLI helpers shared by every command group (options, secrets, prompts)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])

pass_app = click.make_pass_decorator(App)

#: the context settings of every group
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class UserPath(click.Path):
    """A path option that expands a leading ``~`` itself (``--cacert ~/ca.pem`` works
    even where the shell did not expand it, e.g. inside quotes or a variable)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.startswith("~"):
            # the text stays a string: a trailing "/" (a folder) means something here
            value = os.path.expanduser(value)
        return super().convert(value, param, ctx)


class InputFile(UserPath):
    """A file the command reads (``--cacert``, ``--bearer-file``, ``--spec``...).

    Checked when the option is parsed, before any prompt or request, the same way
    everywhere (``nodecli.fsutil.require_regular``): ``~`` expanded, a missing file
    exits 5 naming it, a folder, FIFO, device or socket exits 2 at once. When the path
    came from an environment variable the hint names the variable.
    """

    def __init__(self, what: str, *, allow_dash: bool = False) -> None:
        super().__init__(dir_okay=False, allow_dash=allow_dash)
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not (self.allow_dash and value == "-"):
            from nodecli.errors import NodecliError
            from nodecli.fsutil import require_regular

            try:
                value = str(require_regular(value, self.what))
            except NodecliError as exc:
                envvar = _env_source(param, ctx)
                if envvar and exc.hint is None:
                    exc.hint = f"the path comes from {envvar}"
                raise
        return super().convert(value, param, ctx)


def _env_source(param: click.Parameter | None, ctx: click.Context | None) -> str | None:
    """The variable a parameter's value was read from, if it came from one."""
    from click.core import ParameterSource

    if param is None or ctx is None or param.name is None or not param.envvar:
        return None
    if ctx.get_parameter_source(param.name) is not ParameterSource.ENVIRONMENT:
        return None
    return param.envvar if isinstance(param.envvar, str) else None


#: the formats of every command that prints a list (docs/reference.md, "Output")
# "wide": the table with every column (a terminal's table leaves out what does not fit)
LIST_FORMATS = ("table", "wide", "json", "jsonl", "csv")


#: formats nodecli makes from a command's JSON form (every command that has json)
SHAPED_FORMATS = ("yaml", "raw", "columns=PATH,...")


class Count(click.ParamType):
    """A whole number from ``low`` up to what a node's 64-bit counter holds. Its help
    says ``x>=low``: the upper bound is a wire limit, not a figure for the reader
    (click's IntRange would print ``9223372036854775807`` in every help page)."""

    name = "integer"
    HIGH = 2**63 - 1

    def __init__(self, low: int) -> None:
        self.low = low

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        number = click.INT.convert(value, param, ctx)
        if number < self.low:
            self.fail(f"{number} is smaller than {self.low}", param, ctx)
        if number > self.HIGH:
            self.fail(f"{number} is more than a node can count (2^63-1)", param, ctx)
        return int(number)



class OutputFormat(click.ParamType):
    """A command's own formats, and where it has json: yaml, raw (with --query) and
    ``columns=PATH,...``."""

    name = "format"

    def __init__(self, choices: tuple[str, ...], shaped: bool = True) -> None:
        self.choices = choices
        self.shaped = shaped and "json" in choices

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        text = str(value)
        if text in self.choices or (self.shaped and (
                text in ("yaml", "raw") or text.startswith("columns="))):
            return text
        shown = ", ".join([*self.choices, *(SHAPED_FORMATS if self.shaped else ())])
        self.fail(f"{text[:40]!r} is not one of {shown}", param, ctx)

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        names = [*self.choices, *(("yaml", "raw", "columns=") if self.shaped else ())]
        return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def output_option(choices: tuple[str, ...] = LIST_FORMATS,
                  default: str = "table", *, shaping: bool = True) -> Callable[[F], F]:
    """``-o/--output FORMAT`` (default: NODECLI_OUTPUT when this command has that format),
    and where the command has json: ``--query EXPR`` (JMESPath), ``--field PATH``
    (repeatable) and ``--no-headers``. A shaped output makes the command produce its
    JSON form, which the Terminal shapes (see nodecli.render.shape)."""
    import functools

    shaped = "json" in choices and shaping
    listed = ", ".join([*choices, *(SHAPED_FORMATS if shaped else ())])

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            query, fields = kwargs.pop("shape_query", None), kwargs.pop("shape_fields", ())
            no_headers = kwargs.pop("shape_no_headers", False)
            fmt = kwargs["output_format"]
            ctx = click.get_current_context()
            if fmt is None:
                preferred = os.environ.get("NODECLI_OUTPUT") or _configured_output(ctx)
                fmt = preferred if preferred and (
                    preferred in choices or (shaped and preferred == "yaml")) else default
            term = ctx.find_object(_app_type()).term if ctx.find_object(_app_type()) \
                else None
            shape = _shape(fmt, query, tuple(fields), no_headers)
            if term is not None:
                term.no_headers = no_headers
                term.shape = shape
            kwargs["output_format"] = "json" if shape is not None else fmt
            return f(*args, **kwargs)

        g: Any = wrapper
        if shaped:
            g = click.option("--no-headers", "shape_no_headers", is_flag=True,
                             help="Tables and csv without their heading line.")(g)
            g = click.option("--field", "shape_fields", multiple=True, metavar="PATH",
                             help="Print the value at PATH (dotted, e.g. data.folder_name; "
                                  "a number indexes a list: acls.0), one line per item. "
                                  "Repeat it for more columns (a tab between).")(g)
            g = click.option("--query", "shape_query", metavar="EXPR",
                             help="A JMESPath expression applied to the JSON form; the "
                                  "result as JSON (-o raw: plain lines).")(g)
        return click.option(
            "-o", "--output", "output_format", type=OutputFormat(choices, shaped),
            default=None,
            help=f"Output format: {listed} [default: {default}, or NODECLI_OUTPUT].",
        )(g)

    return decorate


def _configured_output(ctx: click.Context) -> str | None:
    """``[defaults] output`` of the config (None when unset or the config is unreadable:
    the command itself then reports the config as it always does)."""
    from nodecli.errors import NodecliError

    app = ctx.find_object(_app_type())
    if app is None:
        return None
    try:
        value = app.store.default_output()
    except NodecliError:
        return None
    return str(value) if value else None


def _app_type() -> type:
    from nodecli.cli.app import App

    return App


def _shape(fmt: str, query: str | None, fields: tuple[str, ...], no_headers: bool) -> Any:
    """The shaping a command's output needs (None: its own formats do it)."""
    if query is None and not fields and fmt not in ("yaml", "raw") \
            and not fmt.startswith("columns="):
        return None
    from nodecli.render.shape import Shape

    if fmt == "raw" and query is None and not fields:
        raise UsageError("-o raw prints the result of --query as plain lines: give --query")
    if fields and (fmt == "yaml" or fmt.startswith("columns=")):
        raise UsageError("--field prints raw values: not with -o yaml or -o columns=")
    return Shape.make(fmt, query, fields, no_headers)


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


def default_profile(app: App, kind: str, name: str | None, unset: bool) -> None:
    """``node default`` / ``service default``: print, set or unset (one behaviour)."""
    from nodecli.profiles import set_default

    if name and unset:
        raise UsageError("give NAME or --unset, not both")
    if name is None and not unset:
        cfg = app.store.load()
        current = cfg.default_node if kind == "node" else cfg.default_service
        if current:
            app.term.data(current)
        else:
            app.term.info(f"no default {kind} profile")
        return
    set_default(app.store, kind, name)
    app.term.success(f"default {kind} profile: {name}" if name else
                     f"no default {kind} profile")


def proxy_password_for(proxy: str | None, from_stdin: bool,
                       stdin_taken: str | None = None) -> str | None:
    """The proxy password a profile stores: from stdin (--proxy-password-stdin), else
    NODECLI_PROXY_PASSWORD; None: asked per run (when the proxy names a user)."""
    if from_stdin and not proxy:
        raise UsageError("--proxy-password-stdin goes with --proxy URL")
    if from_stdin and stdin_taken:
        raise UsageError(f"--proxy-password-stdin and {stdin_taken} both read stdin: give "
                         "the proxy's password in NODECLI_PROXY_PASSWORD instead")
    if from_stdin:
        return read_secret_stdin("proxy password")
    return os.environ.get("NODECLI_PROXY_PASSWORD") if proxy else None


def profile_proxy_options(what: str) -> Callable[[F], F]:
    """``--proxy URL`` and ``--proxy-password-stdin`` of ``node add`` / ``service add``."""

    def decorate(f: F) -> F:
        f = click.option("--proxy-password-stdin", is_flag=True,
                         help="Read the proxy's password from stdin and store it (else "
                              "NODECLI_PROXY_PASSWORD when adding, else asked per run).")(f)
        return click.option("--proxy", metavar="URL",
                            help=f"HTTP proxy for this {what}, http://[user@]host:port (its "
                                 "password: see --proxy-password-stdin).")(f)

    return decorate


def fleet_options(f: F) -> F:
    """``--nodes GLOB`` / ``--all-nodes``: a read command over many nodes
    (:mod:`nodecli.cli.fleet`)."""
    f = click.option("--all-nodes", "fleet_all", is_flag=True,
                     help="Every node profile (rows get a node column).")(f)
    return click.option("--nodes", "fleet_glob", metavar="GLOB[,GLOB]",
                        help="Every node profile whose name matches (e.g. 'edge-*' or "
                             "'edge-*,core').")(f)


def fleet_names(app: App, conn: dict[str, Any], kwargs: dict[str, Any]) -> list[str] | None:
    """The profile names of a fleet run (None: the usual one node, which then never
    imports the fleet code)."""
    glob, every = kwargs.pop("fleet_glob", None), kwargs.pop("fleet_all", False)
    if glob is None and not every:
        return None
    if conn.get("node") or conn.get("url"):
        raise UsageError("give --node/--url or --nodes/--all-nodes, not both")
    return select(app.store.load().nodes, glob, every)


def select(profiles: Iterable[str], glob: str | None, every: bool) -> list[str]:
    """The profile names ``--nodes GLOB[,GLOB...]`` / ``--all-nodes`` name, sorted (shell
    globs: * ? [...], matched case-sensitively against the whole name; a profile name
    never holds a comma)."""
    import fnmatch

    globs = [g for g in (glob or "").split(",") if g]
    names = sorted(n for n in profiles
                   if every or any(fnmatch.fnmatchcase(n, g) for g in globs))
    if not names:
        raise UsageError("no node profile matches" if glob else "no node profiles")
    return names
