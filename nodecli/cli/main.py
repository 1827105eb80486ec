"""Process entry point: runs the command tree and maps every failure to an exit code.

This is the ONE place where exceptions become messages and exit codes
(``nodecli.errors.ExitCode``). Nothing below it calls ``sys.exit``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from nodecli.dryrun import DryRunStop
from nodecli.errors import ExitCode, NodecliError, StdoutClosed

if TYPE_CHECKING:
    from nodecli.cli.app import Terminal


def _terminal() -> Terminal:
    from nodecli.cli.app import Terminal

    return Terminal(no_color="--no-color" in sys.argv)


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so interpreter shutdown stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run(argv: Sequence[str] | None = None) -> int:
    """Run nodecli and return the exit code (no ``sys.exit``; used by tests and main)."""
    from nodecli import dryrun

    dryrun.activate(False)  # (set by --dry-run for this run only)
    try:
        return _run(argv)
    finally:
        dryrun.activate(False)


def _run(argv: Sequence[str] | None) -> int:
    from nodecli.cli.root import cli
    if os.environ.get("_NODECLI_COMPLETE"):  # a <TAB>: click answers, then exits
        from nodecli.cli.completers import install_completion_classes

        install_completion_classes()
    try:
        rv = cli.main(args=list(argv) if argv is not None else None, prog_name="nodecli",
                      standalone_mode=False)
        return int(rv) if isinstance(rv, int) else 0
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        sys.stderr.write("\nnodecli: interrupted\n")
        return ExitCode.INTERRUPTED
    except click.exceptions.NoArgsIsHelpError as exc:
        # A group named alone (one created without cls=HelpGroup): its help, success.
        click.echo(exc.ctx.get_help())
        return 0
    except click.ClickException as exc:
        # One line like every other error (click's own form is a 4-line block).
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "nodecli"
        hint = f"see '{command} --help'" if isinstance(exc, click.UsageError) else None
        _terminal().error(exc.format_message(), hint)
        return exc.exit_code
    except DryRunStop as exc:  # --dry-run: what would have happened is the output
        from nodecli.render import sanitize_lines

        sys.stdout.write(sanitize_lines(exc.message) + "\n")
        return ExitCode.OK
    except NodecliError as exc:
        if exc.is_error:
            _terminal().error(exc.message, exc.hint)
        else:  # the user's own choice (Ctrl-C, answering n) is not an error
            _terminal().stopped(exc.message, exc.hint)
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("\nnodecli: interrupted\n")
        return ExitCode.INTERRUPTED
    except (StdoutClosed, BrokenPipeError):
        _silence_stdout()
        return ExitCode.BROKEN_PIPE
    except UnicodeEncodeError as exc:
        if "surrogates not allowed" not in str(exc):
            return _internal(exc)
        # the shell passed bytes that are not UTF-8 (as surrogate escapes) where text is
        # needed: a name, an id, a header or URL value
        _terminal().error("an argument or variable holds bytes that are not UTF-8 text",
                          hint="names, ids, tokens and URLs must be UTF-8 text")
        return ExitCode.USAGE
    except ValueError as exc:
        if "null byte" not in str(exc):
            return _internal(exc)
        # a path with a NUL character (from a profile, a variable or the config)
        _terminal().error("a file path contains a NUL character, which no file name can "
                          "hold", hint="check the paths given in options, variables and "
                                       "profiles ('nodecli node show', 'nodecli config check')")
        return ExitCode.USAGE
    except OSError as exc:
        # Local I/O trouble (disk full, permission denied on a path the user gave).
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        _terminal().error(f"{exc.strerror or exc}{where and ':' + where}")
        return ExitCode.ERROR
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, not a traceback
        return _internal(exc)


def _internal(exc: Exception) -> int:
    if os.environ.get("NODECLI_DEBUG"):
        raise exc
    _terminal().error(
        f"internal error: {type(exc).__name__}: {exc}",
        hint="this is a bug in nodecli; NODECLI_DEBUG=1 shows the traceback",
    )
    return ExitCode.ERROR


def main() -> None:
    """The ``nodecli`` process (console script and ``python -m nodecli``)."""
    import gc

    # A command is a short-lived process that allocates a lot and frees it by reference
    # counting (imports; 10,000 users loaded, listed and written): at the cyclic
    # collector's default pace (a pass every 700 allocations) most passes find nothing.
    # It runs every 20,000 instead (long-running commands are collected just as well).
    # Set here, not on import: a program that imports nodecli keeps its own pace.
    if gc.get_threshold()[0] < 20_000:
        gc.set_threshold(20_000, *gc.get_threshold()[1:])
    from nodecli import interrupt

    # SIGTERM ends a command as Ctrl-C does (exit 130, state saved); both are noted
    # before they raise, so one lost in a finalizer still ends the next pause
    interrupt.install()
    if sys.stdin is None:
        # descriptor 0 was closed at start (`0<&-`; some cron daemons and service
        # managers): Python then has no sys.stdin. Read as an empty stdin, every command
        # says what it says of one (--password-stdin: "no password on standard input";
        # a prompt: "stdin is not a terminal") instead of failing on a missing stream.
        sys.stdin = open(os.devnull, encoding="utf-8")
    code = run()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        code = ExitCode.BROKEN_PIPE
    sys.exit(code)
