"""Events into a syslog receiver (``syslog+tcp://HOST:PORT``, ``syslog+tls://HOST:PORT``).

Each event is one RFC 5424 message: PRI local0.info, VERSION 1, the event's time (now
when it has none a receiver could read), this machine's host name, APP-NAME nodecli,
this process's id, MSGID the event's first type, the structured data
``[nodecli@32473 node="..." id="..."]`` and the event's JSON (the ``events tail -o
jsonl`` line) as MSG. 32473 is the private enterprise number RFC 5612 reserves for
documentation: nodecli has none of its own. Messages are framed by octet counting
(RFC 6587), so a message may hold any byte, and sent over TLS as RFC 5425 says.

TCP acknowledges nothing: :meth:`SyslogSink.deliver` returns once the kernel took every
byte of the batch. After a crash, or a receiver that went away without closing the
connection, the last batch whose checkpoint was not saved may be sent again: at most
that batch is repeated, and no event is skipped.
"""

from __future__ import annotations

import json
import os
import select
import socket
import ssl
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from nodecli.errors import UsageError
from nodecli.node.events.batch import Shipped, SinkContext, SinkError

DEFAULT_PORTS = {"syslog+tcp": 514, "syslog+tls": 6514}  # RFC 5426 and RFC 5425
FACILITY_LOCAL0, SEVERITY_INFO = 16, 6
PRI = f"<{FACILITY_LOCAL0 * 8 + SEVERITY_INFO}>"
SD_ID = "nodecli@32473"  # RFC 5612's documentation enterprise number
APP_NAME = "nodecli"
NIL = "-"


def printable(text: str, limit: int) -> str:
    """``text`` as a header field: PRINTUSASCII (33-126) only, at most ``limit``
    characters, NILVALUE when nothing is left (RFC 5424 section 6)."""
    kept = "".join(c for c in text if "!" <= c <= "~")[:limit]
    return kept or NIL


def sd_value(text: str) -> str:
    """A PARAM-VALUE: UTF-8 (what is not, a lone surrogate of a node's JSON, as ``\\uXXXX``)
    with ``"``, ``\\`` and ``]`` escaped with a backslash (RFC 5424 6.3.3)."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")


def timestamp(line: bytes, now: datetime | None = None) -> str:
    """The event's ``time`` in UTC as RFC 5424 TIMESTAMP (RFC 3339, microseconds), or
    now when the line has no time with a zone that a receiver could read."""
    try:
        value = json.loads(line).get("time")
        when = datetime.fromisoformat(value).astimezone(UTC) \
            if isinstance(value, str) and datetime.fromisoformat(value).tzinfo else None
    except (ValueError, AttributeError, TypeError, OverflowError, RecursionError):
        when = None
    when = when or now or datetime.now(UTC)
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")


def message(item: Shipped, hostname: str, procid: str, now: datetime | None = None) -> bytes:
    """One RFC 5424 message for ``item``, framed by octet counting (RFC 6587 3.4.1)."""
    msgid = printable(item.types[0] if item.types else "", 32)
    sd = f'[{SD_ID} node="{sd_value(item.node)}" id="{sd_value(item.event_id)}"]'
    head = (f"{PRI}1 {timestamp(item.line, now)} {hostname} {APP_NAME} {procid} "
            f"{msgid} {sd} ")
    body = head.encode("utf-8") + item.line
    return b"%d %s" % (len(body), body)


def parse_url(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of ``syslog+tcp://HOST:PORT``; UsageError otherwise."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"bad port in {url!r}") from None
    if (parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/")
            or parts.query or parts.fragment or parts.username is not None):
        raise UsageError(f"not a syslog URL: {url!r}",
                         hint="syslog+tcp://HOST:PORT or syslog+tls://HOST:PORT")
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


class SyslogSink:
    """One TCP (or TLS) connection to a syslog receiver, made again when it broke."""

    # one byte stream, no acknowledgement to wait for: one batch at a time (--window)
    max_window = 1

    def __init__(self, scheme: str, host: str, port: int, ctx: SinkContext) -> None:
        self.scheme, self.host, self.port, self.ctx = scheme, host, port, ctx
        self.where = f"syslog receiver {host}:{port}"
        self.hostname = printable(socket.gethostname(), 255)
        self.procid = str(os.getpid())
        self._sock: Any = None

    def _tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context(
            cafile=str(self.ctx.cacert) if self.ctx.cacert else None)
        if self.ctx.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def connect(self) -> None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.ctx.timeout)
        except OSError as error:
            raise SinkError(f"cannot connect to {self.where}: {error}",
                            retryable=True) from None
        if self.scheme == "syslog+tls":
            try:
                sock = self._tls().wrap_socket(sock, server_hostname=self.host)
            except ssl.SSLCertVerificationError as error:
                sock.close()
                raise SinkError(f"TLS with {self.where} failed: {error.verify_message}",
                                hint="give the receiver's CA with --cacert") from None
            except (OSError, ssl.SSLError) as error:
                sock.close()
                raise SinkError(f"TLS with {self.where} failed: {error}",
                                retryable=True) from None
        self._sock = sock

    def _closed_by_peer(self) -> bool:
        """True when the receiver closed the connection (a syslog receiver never
        writes: a readable socket is its end, or a TLS record such as a session
        ticket): found before a batch is written into a dead connection."""
        sock = self._sock
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        sock.setblocking(False)
        try:
            return sock.recv(4096) == b""
        except (ssl.SSLWantReadError, BlockingIOError):
            return False
        except OSError:
            return True
        finally:
            sock.settimeout(self.ctx.timeout)

    def _drop(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def deliver(self, batch: Sequence[Shipped]) -> None:
        if not batch:
            return
        if self._sock is not None and self._closed_by_peer():
            self._drop()
        if self._sock is None:
            self.connect()
        data = b"".join(message(item, self.hostname, self.procid) for item in batch)
        try:
            self._sock.sendall(data)  # with a timeout: the whole batch, bounded
        except OSError as error:
            self._drop()
            raise SinkError(f"sending to {self.where} failed: {error or 'timed out'}",
                            retryable=True) from None

    def close(self) -> None:
        if isinstance(self._sock, ssl.SSLSocket):
            try:
                self._sock.unwrap()  # a clean end of TLS (close_notify) for the receiver
            except (OSError, ValueError):
                pass
        self._drop()


def open_sink(url: str, ctx: SinkContext) -> SyslogSink:
    """The sink of ``syslog+tcp://HOST:PORT`` or ``syslog+tls://HOST:PORT``, connected."""
    scheme, host, port = parse_url(url)
    sink = SyslogSink(scheme, host, port, ctx)
    sink.connect()
    return sink
