"""What an HTTP answer means for the user: the node's own message from any body, the
error (and exit code) a status maps to, TLS failures explained, ``Retry-After`` and the
backoff between retries."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from nodecli.errors import (
    AuthError,
    ConflictError,
    NodecliError,
    NotFoundError,
    RemoteError,
)


class Auth(Protocol):
    """What a message needs of the request's login (``nodecli.http.client.Auth`` has it)."""

    @property
    def kind(self) -> str: ...

    @property
    def note(self) -> str: ...

    @property
    def access_key(self) -> str | None: ...

    def describe(self) -> str: ...

RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_RETRY_AFTER = 120.0


def node_message(body: bytes) -> str | None:
    """The human part of a node error body, if any ({"error": {...}} or plain text)."""
    if not body:
        return None
    from nodecli.remote_json import loads

    try:
        data = loads(body)
    except ValueError:  # TooDeep too
        text = body[:300].decode("utf-8", "replace").strip()
        if text.lstrip().startswith("<"):
            return None  # an HTML error page says nothing useful on one line
        return " ".join(text.split()) or None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            for key in ("user_message", "reason", "message", "description", "detail"):
                value = err.get(key)
                if isinstance(value, str) and value.strip():
                    return value.strip()[:300]
        elif isinstance(err, str) and err.strip():
            return err.strip()[:300]
    return None


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    if re.fullmatch(r"\d{1,10}", value):
        return min(float(value), MAX_RETRY_AFTER)
    import email.utils  # only for an HTTP-date (rare): not on every start

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    delay = when.timestamp() - (time.time() if now is None else now)
    return min(max(delay, 0.0), MAX_RETRY_AFTER)


def backoff_delay(attempt: int, base: float = 0.5, cap: float = 30.0) -> float:
    """Full-jitter exponential backoff for retry number ``attempt`` (1-based)."""
    return random.uniform(0, min(cap, base * (2 ** (attempt - 1))))


def status_error(status: int, message: str, *, auth: Auth, url: str,
                 hint: str | None = None) -> NodecliError:
    """Map an HTTP status to the exception (and so the exit code) users script against."""
    exc: NodecliError
    if status in (401, 403):
        if status == 401 and auth.kind == "bearer":
            default_hint = (f"the request used {auth.describe()}; check the token's expiry "
                            "and scope, and that its public key is registered with "
                            "'nodecli access-key set-verification-key'")
        elif auth.kind == "oauth":
            source = auth.note or "OAuth bearer token"
            replace_it = ("replace it: --token-file FILE, NODECLI_TOKEN, or 'nodecli service "
                          "add NAME --url URL --force' for a saved profile")
            default_hint = (
                f"the service refused the access token ({source}): it may have expired, "
                "been revoked, or been issued by another service (a restarted emulator "
                f"issues new ones); {replace_it}" if status == 401 else
                f"the access token ({source}) may not do this: get one with the scope it "
                f"needs (user:all, or admin:all for the whole organization); {replace_it}")
        elif status == 401 and auth.kind == "none":
            default_hint = "no credentials were sent: give --user or --access-key"
        elif status == 401 and auth.kind == "basic" and auth.access_key:
            default_hint = (f"the request used {auth.describe()}; check the secret, and "
                            "that the key exists on this node ('nodecli access-key list' "
                            "as a node user)")
        elif status == 401:
            default_hint = f"the request used {auth.describe()}; check the credentials"
        else:
            default_hint = f"the request used {auth.describe()}, which may not do this"
        exc = AuthError(message, hint=hint or default_hint)
    elif status == 404:
        exc = NotFoundError(message, hint=hint)
    elif status == 409:
        exc = ConflictError(message, hint=hint)
    elif 400 <= status < 500 and status != 429:
        exc = NodecliError(message, hint=hint)
    else:
        exc = RemoteError(message, hint=hint)
    exc.status = status  # type: ignore[attr-defined]
    exc.url = url  # type: ignore[attr-defined]
    return exc


def tls_error(text: str, url: str, cacert: str | None, *, peer: str = "node",
              cacert_env: str = "NODECLI_CACERT") -> RemoteError | None:
    """A TLS handshake failure as one line with the fix; None for other connect errors.

    ``peer`` ("node", "service") and ``cacert_env`` make the hint name the variable the
    command in question really reads."""
    netloc = urlsplit(url).netloc
    low = text.lower()
    if "mismatch" in low and ("hostname" in low or "ip address" in low):
        return RemoteError(
            f"TLS: the certificate of {netloc} is not valid for that name ({text})",
            hint="use the host name the certificate was issued for in the URL",
        )
    if "certificate_verify_failed" in low or "certificate verify failed" in low:
        if "expired" in low:
            hint = f"the {peer}'s certificate has expired: renew it on the {peer}"
        elif cacert:
            hint = (f"the certificate is not signed by the CA in {cacert}: check that "
                    f"--cacert names the {peer}'s CA")
        else:
            hint = (f"give the {peer}'s CA with --cacert PEM (or {cacert_env}; "
                    f"for a test {peer} only, --insecure)")
        return RemoteError(f"TLS: the certificate of {netloc} is not trusted ({text})",
                           hint=hint)
    if "wrong_version_number" in low or "record layer failure" in low or \
            "packet length too long" in low:
        return RemoteError(
            f"TLS: {netloc} does not answer with TLS ({text})",
            hint=f"the {peer} serves plain HTTP on this port: use an http:// URL",
        )
    if "ssl" in low or "tls" in low:
        return RemoteError(f"TLS handshake with {netloc} failed ({text})")
    return None


def with_not_retried(
    hint_for: Callable[[int], str | None] | None,
) -> Callable[[int], str | None]:
    """The caller's hint, else: why a failed non-idempotent request was not retried."""

    def hint(status: int) -> str | None:
        return (hint_for(status) if hint_for else None) or (
            "not retried automatically: the request may have taken effect; "
            "check before repeating it")

    return hint


def connect_failure(exc: BaseException, url: str, proxy: Any = None
                    ) -> tuple[str, str | None, bool]:
    """A connection that could not be opened: (reason, hint, whether it is worth a retry).

    A name that does not exist (``EAI_NONAME``, ``EAI_NODATA``) or that the resolver
    cannot answer for good (``EAI_FAIL``) stays so for the seconds retries take: it is
    not retried. A resolver that could not answer now (``EAI_AGAIN``), a refused or
    reset connection, are retried as usual. ``proxy`` (a
    :class:`nodecli.http.proxies.Proxy`) is where the connection went, if not to the
    node."""
    import socket

    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    where = f"proxy {proxy.host}:{proxy.port}" if proxy else f"{parts.hostname}:{port}"
    cause: BaseException | None = exc
    for _ in range(10):  # (a chain of causes, never a cycle followed for ever)
        if cause is None:
            break
        if isinstance(cause, socket.gaierror):
            lasting = cause.errno in {getattr(socket, n, None) for n in
                                      ("EAI_NONAME", "EAI_NODATA", "EAI_FAIL")}
            host = f"the proxy's host {proxy.host}" if proxy else f"host {parts.hostname}"
            reason = f"cannot connect: {host} does not resolve ({cause.strerror or cause})"
            hint = ("check the host name (a typo, or a name only a VPN or another DNS "
                    "server knows); not retried: a name that does not exist stays so"
                    if lasting else "the DNS resolver gave no answer: check the network "
                                    "and the resolver (/etc/resolv.conf)")
            return reason, hint, not lasting
        if isinstance(cause, ConnectionRefusedError):
            hint = ("nothing listens there: is the proxy running, on that port?" if proxy
                    else "nothing listens there: is the node running, and is the port "
                         "right (nodes serve HTTPS on port 9092)?")
            return f"cannot connect: {where} refused the connection", hint, True
        cause = cause.__cause__ or cause.__context__
    return f"cannot connect: {str(exc) or type(exc).__name__}", None, True
