"""Checks around a request: values that cannot go into a URL or header as they are,
credentials that would cross a network in clear, and a server whose clock is off."""

from __future__ import annotations

import unicodedata
from typing import Any
from urllib.parse import urlsplit

from nodecli.errors import UsageError
from nodecli.values import has_surrogates

MAX_ID = 256  # characters of an id that goes into a URL path
SKEW_WARN = 5.0  # seconds; a Date header has a resolution of one second


def clock_offset_of(date_header: str | None, received: float) -> float | None:
    """The server's clock minus ours, from its Date header (None: no usable date)."""
    if not date_header:
        return None
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(date_header)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    # the Date was set while the answer was made: half a second earlier on average
    return when.timestamp() + 0.5 - received


def in_clear(endpoint: Any) -> bool:
    """True when credentials would cross a network unencrypted: plain http:// to a host
    that is not this machine (a loopback name or address), or through a proxy that is
    not on this machine (a plain-http request goes to the proxy whole, credentials
    included, and the proxy reads and forwards it: even an https:// proxy sees them)."""
    parts = urlsplit(endpoint.base_url)
    if parts.scheme != "http" or endpoint.auth.kind == "none":
        return False
    proxy = getattr(endpoint, "proxy", None)
    if proxy is not None and not _this_machine(proxy.host):
        return True
    return not _this_machine(parts.hostname or "")


def _this_machine(host: str) -> bool:
    import ipaddress

    host = host.lower().strip("[]").rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def header_safe(value: str) -> bool:
    """Whether ``value`` can be sent as an HTTP header value as it is."""
    return (value.isprintable() and value.isascii()) or (
        all(" " <= c <= "~" or "\x80" <= c <= "\xff" for c in value))


def refuse_undecodable(url: str, params: Any, headers: dict[str, str] | None) -> None:
    """Arguments with bytes that are not UTF-8 (the shell passes them through as
    surrogate escapes) cannot go into a URL or a header: a usage error, before anything
    is sent, instead of an encoding error deep in the HTTP stack."""
    values: list[Any] = [url]
    if isinstance(params, dict):
        values += [*params.keys(), *params.values()]
    elif isinstance(params, list | tuple):
        for item in params:
            values += list(item) if isinstance(item, list | tuple) else [item]
    values += list((headers or {}).values())
    for value in values:
        if has_surrogates(value):
            shown = value.encode("utf-8", "backslashreplace").decode("ascii", "replace")
            raise UsageError(f"{shown[:80]!r} holds bytes that are not UTF-8 text: ids, "
                             "tokens and names go to the server as UTF-8")


def check_id(value: str, what: str = "id") -> str:
    """An id that goes into a URL path: non-empty, no '/', no controls, bounded."""
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{what} must not be empty")
    if len(value) > MAX_ID:
        raise UsageError(f"{what} is longer than {MAX_ID} characters")
    if value in (".", "..") or "/" in value or "\\" in value:
        raise UsageError(f"invalid {what} {value[:60]!r}: no '/', '\\', '.' or '..'")
    if any(unicodedata.category(c) == "Cs" for c in value):
        raise UsageError(f"invalid {what}: it holds bytes that are not UTF-8 text")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value):
        raise UsageError(f"invalid {what}: it contains control characters")
    return value


def peer_certificate(extensions: Any) -> bytes | None:
    """The server's certificate (DER) on the TLS connection that carried an answer: its
    ``network_stream`` extension (httpcore's documented one), None over plain http."""
    stream = extensions.get("network_stream")
    ssl_object = stream.get_extra_info("ssl_object") if stream is not None else None
    # (positional: the object may be ssl's own _SSLSocket, which takes no keywords)
    der = ssl_object.getpeercert(True) if ssl_object is not None else None
    return der if isinstance(der, bytes) else None
