"""Events into a NATS JetStream stream (``nats://HOST:PORT/SUBJECT``, ``tls://...``).

Each event's line is published to SUBJECT (``{node}`` in it is the event's node) with the
header ``Nats-Msg-Id: <node>:<event id>``, so that JetStream drops a repeat that comes
inside the stream's duplicate window (a batch sent again after a crash). A batch is
published whole, then every acknowledgement is awaited: :meth:`NatsSink.deliver` returns
only when the stream holds every event of the batch.

nats-py is asyncio: the sink runs one event loop in a thread of its own for its whole
life, so that the client answers the server's pings between batches as it expects to.
The connection is made with nats-py's reconnection off: a lost connection fails the
batch at once (retryable), and the next batch connects again. ``events ship`` is the one
retry loop, with its backoff; nats-py's own loop would queue publishes across an outage
and, at the first connection, retry refused credentials for minutes.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from nodecli.errors import AuthError, UsageError
from nodecli.node.events.batch import Shipped, SinkContext, SinkError

T = TypeVar("T")

DEFAULT_PORT = 4222
NODE_HEADER = "Nodecli-Node"
MSG_ID_HEADER = "Nats-Msg-Id"
# a message id longer than this is replaced by a digest of it (a hostile node's ids)
MAX_MSG_ID = 256
# what a hostile subject or URL may not hold: whitespace breaks the protocol's lines
_SPACE = frozenset(" \t\r\n\f\v")
# room for the close and for the thread to end, beyond the configured timeout
_GRACE = 5.0
# a header value kept as it is: printable ASCII without "%" (most node names and ids)
_PLAIN = re.compile(r"[!-$&-~]*")


def header_value(text: str) -> str:
    """``text`` as a header value that is the same on every run: printable ASCII kept,
    everything else (and ``%``) percent-encoded from UTF-8, a digest past MAX_MSG_ID."""
    if len(text) <= MAX_MSG_ID and _PLAIN.fullmatch(text):
        return text  # (once per event shipped: the common case without the loop below)
    out = "".join(c if "!" <= c <= "~" and c != "%" else
                  "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
                  for c in text)
    if len(out) > MAX_MSG_ID:
        out = "sha256-" + hashlib.sha256(out.encode("ascii")).hexdigest()
    return out


def msg_id(item: Shipped) -> str:
    """The JetStream de-duplication id of an event: ``<node>:<event id>``."""
    return header_value(f"{item.node}:{item.event_id}")


def parse_url(url: str) -> tuple[str, str]:
    """``(server URL, subject template)`` of ``nats://HOST:PORT/SUBJECT``; UsageError
    when the URL cannot name a subject or carries a secret."""
    parts = urlsplit(url)
    shown = url if parts.password is None else "(the URL)"
    if parts.scheme not in ("nats", "tls"):
        raise UsageError(f"not a NATS URL: {shown!r}", hint="nats://HOST:PORT/SUBJECT")
    if parts.username is not None or parts.password is not None:
        raise UsageError("a NATS URL may not carry credentials (they would be on the "
                         "command line)", hint="give a creds file, a token or a user "
                         "and password as docs/shipping.md shows")
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise UsageError(f"bad port in {url!r}") from None
    host = parts.hostname
    subject = unquote(parts.path.lstrip("/"))
    if not host or not subject or parts.query or parts.fragment:
        raise UsageError(f"not a NATS URL: {url!r}", hint="nats://HOST:PORT/SUBJECT")
    check_subject(subject.replace("{node}", "node"))
    bracketed = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{bracketed}:{port}", subject


def check_subject(subject: str) -> str:
    """``subject`` when one can publish to it, else UsageError naming it."""
    tokens = subject.split(".")
    if (not subject or any(c in _SPACE for c in subject) or "" in tokens
            or any(t in ("*", ">") for t in tokens)):
        raise UsageError(f"cannot publish to the NATS subject {subject!r}",
                         hint="a subject is dot-separated tokens, without spaces "
                              "or wildcards: events.{node}")
    return subject


class NatsSink:
    """A connection to one NATS server; one subject template; a loop in a thread."""

    def __init__(self, server: str, subject: str, ctx: SinkContext) -> None:
        self.server = server
        self.subject = subject
        self.ctx = ctx
        self.duplicates = 0  # acknowledgements that said "already held"
        self._nc: Any = None
        self._js: Any = None
        # one per batch in flight (events ship --window): what fails them all
        self._troubles: set[asyncio.Future[Any]] = set()
        self._last_error: Exception | None = None
        # set when a batch fails: later batches in flight are not published (on a new
        # connection, before the failed one is sent again) until resume()
        self._halted = False
        self._connecting = asyncio.Lock()  # batches in flight connect once
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name="nodecli-nats", daemon=True)
        self._thread.start()

    # -- the loop's side ------------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the sink's loop; the caller waits at most timeout + grace."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(self.ctx.timeout + _GRACE)
        except FutureTimeout:
            future.cancel()
            raise SinkError(f"NATS server {self.server} did not answer in "
                            f"{self.ctx.timeout:g} s", retryable=True) from None
        except BaseException:
            future.cancel()  # Ctrl-C: the loop stops waiting too
            raise

    def _tls(self) -> Any:
        import ssl

        if not (self.server.startswith("tls:") or self.ctx.cacert or self.ctx.insecure):
            return None  # the server may still ask for TLS: nats-py then uses the system's
        context = ssl.create_default_context(
            cafile=str(self.ctx.cacert) if self.ctx.cacert else None)
        if self.ctx.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    async def _connect(self) -> None:
        import nats
        from nats.js.errors import APIError

        async def on_error(error: Exception) -> None:
            self._last_error = error  # says why a connection failed (nats-py would log it)
            if isinstance(error, APIError):
                # an acknowledgement that is an error reaches error_cb, not the future
                # of its message (nats-io/nats.py#985): it fails the batch in flight
                self._trouble_with(error)

        async def on_closed() -> None:
            self._trouble_with(ConnectionLost())

        ctx = self.ctx
        if ctx.creds_file is not None:
            try:
                ctx.creds_file.open("rb").close()
            except OSError as error:
                raise SinkError(f"cannot read the NATS creds file {ctx.creds_file}: "
                                f"{error.strerror}") from None
        options: dict[str, Any] = {
            "servers": [self.server], "name": "nodecli events ship",
            # one attempt: nats-py tries a server max_reconnect_attempts + 1 times
            "allow_reconnect": False, "max_reconnect_attempts": 1,
            "reconnect_time_wait": 0, "connect_timeout": max(1, round(ctx.timeout)),
            "error_cb": on_error, "disconnected_cb": on_closed, "closed_cb": on_closed,
            "tls": self._tls(),
        }
        if ctx.creds_file is not None:
            options["user_credentials"] = str(ctx.creds_file)
        if ctx.token is not None:
            options["token"] = ctx.token
        if ctx.user is not None:
            options["user"] = ctx.user
            options["password"] = ctx.password or ""
        try:
            async with asyncio.timeout(ctx.timeout):
                self._nc = await nats.connect(**options)
        except (OSError, TimeoutError, nats.errors.Error):
            raise
        except ImportError:
            raise SinkError("a NATS creds file needs the nkeys package",
                            hint="pip install 'nodecli[nats]'") from None
        except Exception:
            if ctx.creds_file is None:
                raise
            # nats-py reads the file while connecting; what it raises may quote it
            raise SinkError(f"the NATS creds file {ctx.creds_file} cannot be used",
                            hint="a user JWT and its seed, as nsc or NATS accounts "
                                 "write them") from None
        self._js = self._nc.jetstream(timeout=ctx.timeout,
                                      publish_async_max_pending=1_000_000)

    def _trouble_with(self, error: BaseException) -> None:
        for trouble in self._troubles:
            if not trouble.done():
                trouble.set_exception(error)

    async def _publish(self, batch: Sequence[Shipped]) -> list[Any]:
        """Publish the whole batch, then await every acknowledgement."""
        from nats.errors import MaxPayloadError

        if self._halted:
            raise SinkError(f"an earlier batch to NATS server {self.server} is to be "
                            "sent again first", retryable=True)
        if self._nc is None or self._nc.is_closed:
            async with self._connecting:
                if self._nc is None or self._nc.is_closed:
                    await self._connect()
        futures: list[asyncio.Future[Any]] = []
        trouble: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._troubles.add(trouble)
        per_node: dict[str, tuple[str, str]] = {}  # node -> (subject, node header)
        try:
            async with asyncio.timeout(self.ctx.timeout):
                for item in batch:
                    node = item.node
                    if node not in per_node:
                        per_node[node] = (self.subject.replace("{node}", node),
                                          header_value(node))
                    subject, node_header = per_node[node]
                    try:
                        futures.append(await self._js.publish_async(
                            subject, item.line,
                            headers={MSG_ID_HEADER: msg_id(item), NODE_HEADER: node_header}))
                    except MaxPayloadError:
                        raise SinkError(
                            f"event {item.event_id!r} of {item.node} is {len(item.line)} "
                            f"bytes, more than NATS server {self.server} takes "
                            f"({self._nc.max_payload})") from None
                # one waiter for the whole batch (not one per acknowledgement)
                acks = asyncio.gather(*futures, return_exceptions=True)
                done, _ = await asyncio.wait([acks, trouble],
                                             return_when=asyncio.FIRST_COMPLETED)
                if acks not in done:
                    first = next(i for i, f in zip(batch, futures, strict=True)
                                 if not f.done())
                    acks.cancel()
                    # the gathering ends with CancelledError: taken here, or asyncio
                    # prints "exception was never retrieved" under the error line
                    acks.add_done_callback(_taken)
                    raise self._failure(trouble.exception() or ConnectionLost(), first)
        finally:
            self._troubles.discard(trouble)
            if not trouble.done():
                trouble.cancel()
            for f in futures:
                f.cancel()  # no-op when done; frees nats-py's slot when not
        outcomes = [f.exception() or f.result() for f in futures]
        if any(isinstance(o, BaseException) for o in outcomes):
            self._halted = True  # set on the loop: no later batch is published first
        return outcomes

    async def _close(self) -> None:
        if self._nc is not None and not self._nc.is_closed:
            async with asyncio.timeout(self.ctx.timeout):
                await self._nc.close()

    # -- the caller's side ----------------------------------------------------------

    def connect(self) -> None:
        self._run(self._guard(self._connect(), None))

    def deliver(self, batch: Sequence[Shipped]) -> None:
        if not batch:
            return
        outcomes = self._run(self._guard(self._publish(batch), batch))
        for item, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                raise self._failure(outcome, item)
            if getattr(outcome, "duplicate", False):
                self.duplicates += 1

    def resume(self) -> None:
        """Publish again after a failure (the caller sends the oldest batch first)."""
        self._loop.call_soon_threadsafe(setattr, self, "_halted", False)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self._close())
        except (SinkError, OSError, TimeoutError):
            pass  # closing: nothing more to deliver
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(self.ctx.timeout + _GRACE)
            if not self._thread.is_alive():
                self._loop.close()

    # -- what went wrong ------------------------------------------------------------

    async def _guard(self, coro: Coroutine[Any, Any, T], batch: Sequence[Shipped] | None
                     ) -> T:
        """``coro``'s result, or a SinkError for what nats-py raised in it."""
        try:
            return await coro
        except (SinkError, asyncio.CancelledError):  # cancelled: the caller gave up
            if batch is not None:
                self._halted = True
            raise
        except Exception as error:  # noqa: BLE001 - each is mapped below
            if batch is not None:
                self._halted = True
            if self._nc is not None and not self._nc.is_closed:
                # a half-made or half-used connection is not reused
                await _quietly(self._nc.close(), self.ctx.timeout)
            raise self._failure(error, batch[0] if batch else None) from None

    def _failure(self, error: BaseException, item: Shipped | None) -> SinkError:
        import nats.errors
        import nats.js.errors

        where = f"NATS server {self.server}"
        subject = self.subject if item is None else self.subject.replace("{node}", item.node)
        if isinstance(error, nats.js.errors.NoStreamResponseError | nats.errors.NoRespondersError):
            return SinkError(f"no JetStream stream takes the subject {subject!r} on {where}",
                             hint="create one whose subjects cover it, with a duplicate "
                                  "window (docs/shipping.md)")
        if isinstance(error, nats.js.errors.ServiceUnavailableError):
            return SinkError(f"JetStream is not available on {where}", retryable=True)
        if isinstance(error, nats.js.errors.APIError):
            named = f"event {item.event_id!r} of {item.node}" if item else "a message"
            return SinkError(f"{where} refused {named} on {subject!r}: "
                             f"{error.description or error.code}")
        if isinstance(error, nats.errors.AuthorizationError) or \
                "authorization violation" in str(error).lower():
            return AuthFailure(f"{where} refused the credentials",
                               hint="check the creds file, token or user and password")
        if _is_tls_refusal(error):
            return SinkError(f"TLS with {where} failed: {error}",
                             hint="give the server's CA with --cacert")
        if isinstance(error, TimeoutError | asyncio.TimeoutError):
            return SinkError(f"{where} did not answer in {self.ctx.timeout:g} s",
                             retryable=True)
        if isinstance(error, nats.errors.NoServersError):
            return SinkError(f"cannot connect to {where}: {self._last_error or error}",
                             retryable=True)
        if isinstance(error, ConnectionLost):
            return SinkError(f"the connection to {where} was lost", retryable=True)
        return SinkError(f"{where}: {error or type(error).__name__}", retryable=True)


class AuthFailure(SinkError):
    """The server refused the credentials: waiting does not help."""

    exit_code = AuthError.exit_code


class ConnectionLost(Exception):
    """The connection closed while acknowledgements were awaited."""


def _taken(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def _quietly(coro: Coroutine[Any, Any, Any], timeout: float) -> None:
    try:
        async with asyncio.timeout(timeout):
            await coro
    except Exception:  # noqa: BLE001, S110 - already failing: the first error is told
        pass


def _is_tls_refusal(error: BaseException) -> bool:
    import ssl

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def open_sink(url: str, ctx: SinkContext) -> NatsSink:
    """The sink of ``nats://HOST:PORT/SUBJECT`` (``tls://`` for TLS), connected."""
    try:
        import nats  # noqa: F401 - an optional extra: say how to get it
    except ImportError:
        raise UsageError("shipping to NATS needs the nats-py package",
                         hint="pip install 'nodecli[nats]'") from None
    server, subject = parse_url(url)
    sink = NatsSink(server, subject, ctx)
    try:
        sink.connect()
    except BaseException:
        sink.close()
        raise
    return sink
