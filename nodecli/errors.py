"""Exit codes and the exception hierarchy that maps onto them.

Every failure the user can cause or meet is raised as a :class:`NodecliError`
subclass. The CLI entry point (``nodecli.cli.main``) is the one place that turns
them into a one-line message on stderr and an exit code.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Documented process exit codes (docs/reference.md, "Exit codes")."""

    OK = 0
    ERROR = 1  # generic failure: conflict, refused operation, stopped operation
    USAGE = 2  # bad flags or input, missing answer to a prompt without a terminal
    CONFIG = 3  # config file damaged or invalid; nothing was changed
    AUTH = 4  # authentication or permission refused; invalid or expired token
    NOT_FOUND = 5  # the named user, key, event, operation... does not exist
    REMOTE = 6  # server, network or TLS failure after retries
    CANCELLED = 7  # a watched transfer was cancelled
    TIMEOUT = 8  # a watch's --timeout passed before the transfer ended
    INTERRUPTED = 130  # Ctrl-C / SIGINT / SIGTERM
    BROKEN_PIPE = 141  # stdout closed by the reader (``| head``); exits silently


class NodecliError(Exception):
    """Base of every expected failure. ``hint`` is printed on a second line."""

    exit_code: ExitCode = ExitCode.ERROR
    #: False for an end the user chose (Ctrl-C, a confirmation answered no): printed
    #: without the ``error:`` prefix, with the same exit code.
    is_error: bool = True

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(NodecliError):
    exit_code = ExitCode.USAGE


class ConfigError(NodecliError):
    exit_code = ExitCode.CONFIG


class AuthError(NodecliError):
    exit_code = ExitCode.AUTH


class NotFoundError(NodecliError):
    exit_code = ExitCode.NOT_FOUND


class ConflictError(NodecliError):
    """The thing to create already exists, or the change contradicts stored state."""

    exit_code = ExitCode.ERROR


class RemoteError(NodecliError):
    exit_code = ExitCode.REMOTE


class Cancelled(NodecliError):
    exit_code = ExitCode.CANCELLED


class TimedOut(NodecliError):
    exit_code = ExitCode.TIMEOUT


class Interrupted(NodecliError):
    exit_code = ExitCode.INTERRUPTED
    is_error = False


def counted(n: int, word: str, plural: str | None = None) -> str:
    """How many of what, as a person says it: '1 event', '2 events', '0 events';
    ``plural`` where adding an s is not the word ('batch', 'batches')."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def interrupted_after(events: int, nodes: int | None = None) -> str:
    """What a stream the user stopped says: how many events went out (from how many
    nodes), 'event' for one."""
    said = f"interrupted after {counted(events, 'event')}"
    return said if nodes is None else f"{said} from {nodes} node(s)"


class Aborted(NodecliError):
    """A confirmation answered no: nothing was changed (exit 1, not shown as an error)."""

    exit_code = ExitCode.ERROR
    is_error = False


class StdoutClosed(Exception):
    """stdout's reader went away (``| head``). Deliberately not an OSError: click's
    ``main`` swallows EPIPE and exits 1; this passes through it to our entry point,
    which exits 141 silently."""


def shorten(value: object, limit: int = 200) -> str:
    """``value`` as text of at most ``limit`` characters (cut with '…'), for quoting a
    server's or a user's string inside a message. Making it safe for a terminal is the
    writer's job (``cli.app.Terminal``), not the caller's."""
    text = "" if value is None else str(value)
    if "\n" in text or "\r" in text:  # a quoted string never adds a line to a message
        text = text.replace("\r", "?").replace("\n", "?")
    return text if len(text) <= limit else text[: limit - 1] + "…"
