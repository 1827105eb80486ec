"""The contract between ``events ship`` and the systems that keep events.

A batch sink takes a batch of events and returns only when the whole batch is held by
the system behind it (JetStream acknowledged every message, the collector answered 2xx,
the syslog stream took every byte): only then may the checkpoint move past the batch.
A sink raises :class:`SinkError` otherwise, and the batch is sent again after a restart.

Sinks are named by the scheme of ``--to URL`` in :data:`SCHEMES` and imported only when
used, so a command that ships nowhere loads none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from nodecli.errors import ExitCode, NodecliError


@dataclass(slots=True)
class Shipped:
    """One event on its way out (a value: nothing changes it; not frozen, as one is
    made for every event shipped and a frozen dataclass is twice as slow to make)."""

    node: str  # the profile name of the node it comes from
    event_id: str
    types: tuple[str, ...]  # the event's types, first as the node lists them
    line: bytes  # what ``events tail -o jsonl`` writes for it, without the newline


@dataclass(frozen=True, slots=True)
class SinkContext:
    """What a sink may need beyond its URL; secrets never come from argv."""

    cacert: Path | None = None  # CA bundle for a TLS sink (else the system's)
    insecure: bool = False  # TLS verification off, by the user's explicit choice
    creds_file: Path | None = None  # NATS .creds file
    token: str | None = None  # a bearer/NATS token, from the environment or a file
    user: str | None = None
    password: str | None = None  # from the environment, a file or a prompt
    dead_letter: Path | None = None  # where a refused batch is set aside (HTTP)
    timeout: float = 30.0  # seconds one delivery may take before it is an error
    # one line for the user (a batch set aside, a reconnection); None: say nothing
    notice: Callable[[str], None] | None = field(default=None, compare=False)


class SinkError(NodecliError):
    """A batch was not delivered; ``retryable`` says whether waiting may help."""

    exit_code = ExitCode.REMOTE

    def __init__(self, message: str, *, retryable: bool = False,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retryable = retryable


class BatchSink(Protocol):
    def deliver(self, batch: Sequence[Shipped]) -> None:
        """Return when every event of ``batch`` is held; raise :class:`SinkError`."""

    def close(self) -> None:
        """Release connections; a sink is not used after this."""


# scheme -> "module:factory"; factory(url: str, ctx: SinkContext) -> BatchSink
SCHEMES: dict[str, str] = {
    "nats": "nodecli.node.events.sink_nats:open_sink",
    "tls": "nodecli.node.events.sink_nats:open_sink",
    "syslog+tcp": "nodecli.node.events.sink_syslog:open_sink",
    "syslog+tls": "nodecli.node.events.sink_syslog:open_sink",
    "http": "nodecli.node.events.sink_http:open_sink",
    "https": "nodecli.node.events.sink_http:open_sink",
}
