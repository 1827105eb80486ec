"""``events ship --to http(s)://...``: each batch one POST of newline-delimited JSON.

The POST carries ``Idempotency-Key: <node>:<first id>:<last id>``, the same each time
the batch is sent (after a retry or a restart), so that a collector can drop a repeat.
A 2xx answer is delivery. 429, 502, 503, 504 and connection failures are retried by
the one HTTP client (nodecli.http: backoff, Retry-After, the command's deadline, a
bounded number of attempts) and are then a retryable :class:`SinkError`; other 5xx are
retryable too. Any other answer is a refusal of that batch: a :class:`SinkError` that
stops shipping before it, or, with a dead-letter file, the batch set aside there (one
line per event, the file 0600) and shipping goes on.

Credentials come from the :class:`SinkContext` (the environment or a file, never
argv): a bearer token, or a user and password (HTTP Basic); the client sends them to
the collector's own origin only, never after a redirect to another.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nodecli.errors import (
    AuthError,
    NodecliError,
    RemoteError,
    UsageError,
    counted,
    shorten,
)
from nodecli.node.events.batch import Shipped, SinkContext, SinkError

if TYPE_CHECKING:
    from nodecli.http.client import Client

ATTEMPTS = 5  # per batch, within the deadline; then the tail's own retry (with -f)
CONTENT_TYPE = "application/x-ndjson"


class HttpSink:
    """POST each batch to ``url`` (see the module text)."""

    def __init__(self, url: str, ctx: SinkContext, *, attempts: int = ATTEMPTS) -> None:
        from nodecli.http.client import Auth, Endpoint, open_client

        if ctx.token and (ctx.user or ctx.password):
            raise UsageError("the HTTP sink takes a token or a user and password, not both")
        if ctx.token:
            auth = Auth(kind="oauth", token=ctx.token, note="NODECLI_SINK_TOKEN or --sink-creds")
        elif ctx.user or ctx.password:
            auth = Auth(kind="basic", username=ctx.user or "", password=ctx.password or "",
                        note="NODECLI_SINK_USER/PASSWORD or --sink-creds")
        else:
            auth = Auth()
        self.url = url
        self.ctx = ctx
        endpoint = Endpoint(url, auth=auth, cacert=str(ctx.cacert) if ctx.cacert else None,
                            insecure=ctx.insecure, read_timeout=ctx.timeout,
                            deadline=ctx.timeout * attempts, max_attempts=attempts,
                            label="the collector", peer="collector",
                            cacert_env="NODECLI_SINK_CACERT")
        # (the client redacts the token and password of its Auth from what it says)
        self.client: Client = open_client(endpoint)
        self.set_aside = 0  # batches written to the dead-letter file

    def deliver(self, batch: Sequence[Shipped]) -> None:
        if not batch:
            return
        from nodecli.node.events.ship import batch_key

        body = b"\n".join([e.line for e in batch]) + b"\n"
        key = batch_key(batch)
        try:
            self.client.request("POST", self.url, body=body, retry=True,
                                expect=tuple(range(200, 300)),
                                headers={"Content-Type": CONTENT_TYPE, "Idempotency-Key": key})
        except UsageError:
            raise
        except AuthError as exc:  # every batch would be refused: stop, whatever is set
            raise SinkError(f"the collector refused the credentials: {exc.message}",
                            hint="the sink's credentials come from NODECLI_SINK_TOKEN, "
                                 "NODECLI_SINK_USER/NODECLI_SINK_PASSWORD or "
                                 "--sink-creds FILE") from None
        except RemoteError as exc:
            status = getattr(exc, "status", None)
            if status is None and exc.message.startswith("TLS"):
                raise SinkError(exc.message, hint="give the collector's CA with --sink-cacert "
                                "PEM (or NODECLI_SINK_CACERT)") from None
            if status is None or status >= 500 or status == 429:
                raise SinkError(f"the collector did not take batch {key}: {exc.message}",
                                retryable=True, hint=exc.hint) from None
            self._refused(batch, key, exc)
        except NodecliError as exc:  # 4xx: this batch is refused
            self._refused(batch, key, exc)

    def _refused(self, batch: Sequence[Shipped], key: str, exc: NodecliError) -> None:
        if self.ctx.dead_letter is None:
            raise SinkError(f"the collector refused batch {key} ({counted(len(batch), 'event')}): "
                            f"{shorten(exc.message, 300)}",
                            hint="the checkpoint stays before this batch; fix what the "
                                 "collector says, or set refused batches aside with "
                                 "--dead-letter FILE") from None
        dead_letter(self.ctx.dead_letter, batch)
        self.set_aside += 1
        if self.ctx.notice is not None:
            self.ctx.notice(f"the collector refused batch {key} ({counted(len(batch), 'event')}): "
                            f"{shorten(exc.message, 200)}; set aside in {self.ctx.dead_letter}")

    def close(self) -> None:
        self.client.close()


def dead_letter(path: Path, batch: Sequence[Shipped]) -> None:
    """Append ``batch`` to ``path`` (created 0600), one event per line, then fsync."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise SinkError(f"cannot open the dead-letter file {path}: {exc.strerror}") from None
    try:
        data = memoryview(b"".join(e.line + b"\n" for e in batch))
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    except OSError as exc:
        raise SinkError(f"cannot write the dead-letter file {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def open_sink(url: str, ctx: SinkContext) -> HttpSink:
    return HttpSink(url, ctx)
