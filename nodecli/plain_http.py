"""The transport for plain ``http://`` URLs: the standard library's ``http.client``.

:class:`nodecli.http.Client` keeps every policy (auth, redirects, retries, deadline,
body limit, errors, redaction); a transport only sends one request and hands back the
status, the headers and the body in chunks. ``https://`` URLs go through httpx2 and its
TLS verification, untouched. Plain HTTP needs neither TLS nor httpx2's machinery, and
importing httpx2 and httpcore2 costs more than a whole ``http.client`` exchange; so a
plain URL is served by this module and httpx2 is never imported for it.

What the wire sees matches the httpx2 path: the same query encoding (``params``
replace the URL's query, ``True`` -> ``true``, lists repeat the key), path and query
percent-encoded where needed, one keep-alive connection per host and port (dropped
when the server closed it while idle), connect and read timeouts apart.
Content-Encoding gzip or deflate is decoded if a server sends it unasked.
"""

from __future__ import annotations

import http.client
import select
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

# What stays as it is in a path, a query and a fragment (the WHATWG percent-encode
# sets, as httpx2 uses them); everything else is percent-encoded as UTF-8.
_PRINTABLE = [chr(i) for i in range(0x21, 0x7F)]
_QUERY_SAFE = "".join(c for c in _PRINTABLE if c not in '"#<>')
_PATH_SAFE = "".join(c for c in _QUERY_SAFE if c not in "?`{}")
_FRAGMENT_SAFE = "".join(c for c in _PRINTABLE if c not in '"<>`')
CHUNK = 64 * 1024


class TransportError(Exception):
    """One failed exchange. ``kind``: ``connect-timeout``, ``read-timeout``, ``connect``,
    ``broken`` (the connection failed mid-way or the answer was not HTTP),
    ``invalid-url`` or ``invalid-header``."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind
        self.text = text


def _value(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    return "" if v is None else str(v)


def encode_query(params: Any) -> str:
    """``params`` (a mapping or pairs; a list value repeats its key) as a query string.

    As httpx2 does: the values of a key repeated in pairs are grouped where the key
    first appears, and a key whose value is an empty list leaves a bare ``?``."""
    items = params.items() if hasattr(params, "items") else params
    grouped: dict[str, list[str]] = {}
    for key, value in items:
        values = grouped.setdefault(str(key), [])
        if isinstance(value, list | tuple):
            values += [_value(v) for v in value]
        else:
            values.append(_value(value))
    return urlencode([(k, v) for k, vs in grouped.items() for v in vs]) or (
        "?" if grouped else "")


def remove_dot_segments(path: str) -> str:
    """Drop ``.`` and ``..`` segments as httpx2 does before sending a path (RFC 3986
    section 5.2.4, without keeping a trailing slash: ``/a/b/..`` is ``/a``)."""
    segments = path.split("/")
    if "." not in segments and ".." not in segments:
        return path
    out: list[str] = []
    for seg in segments:
        if seg == "..":
            if out and out != [""]:
                out.pop()
        elif seg != ".":
            out.append(seg)
    return "/".join(out)


def split_url(url: str, params: Any) -> tuple[str, int, str, str]:
    """(host, port, request target, full URL) of an ``http://`` URL plus ``params``."""
    try:
        parts = urlsplit(url)
        port = parts.port or 80
    except ValueError as exc:
        raise TransportError("invalid-url", str(exc)) from None
    host = parts.hostname
    if not host:
        raise TransportError("invalid-url", "no host")
    path = quote(remove_dot_segments(parts.path), safe=_PATH_SAFE)
    if params is not None:
        query = encode_query(params)
        has_query = bool(query)
        query = "" if query == "?" else query
    else:
        query = quote(parts.query, safe=_QUERY_SAFE)
        has_query = "?" in url.partition("#")[0]  # an empty query is kept as it is
    target = (path or "/") + ("?" + query if has_query else "")
    full = "http://" + parts.netloc + path + ("?" + query if has_query else "")
    if "#" in url:
        full += "#" + quote(parts.fragment, safe=_FRAGMENT_SAFE)
    return host, port, target, full


class Response:
    """Status, lower-cased headers (repeated ones joined with ', ') and the body chunks."""

    def __init__(self, raw: http.client.HTTPResponse, url: str,
                 on_abort: Any) -> None:
        self._raw = raw
        self._on_abort = on_abort
        self.url = url
        self.status_code = raw.status
        headers: dict[str, str] = {}
        for name, value in raw.getheaders():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        self.headers = headers

    def iter_bytes(self) -> Iterator[bytes]:
        import zlib

        encoding = self.headers.get("content-encoding", "").strip().lower()
        inflater = (zlib.decompressobj(47) if encoding in ("gzip", "x-gzip")
                    else zlib.decompressobj() if encoding == "deflate" else None)
        done = False
        try:
            while True:
                try:
                    data = self._raw.read1(CHUNK)
                except TimeoutError:
                    raise TransportError("read-timeout", "timed out") from None
                except (http.client.HTTPException, OSError) as exc:
                    raise TransportError("broken", str(exc) or type(exc).__name__) from None
                if not data:
                    # read1 never marks a Content-Length body finished: close the
                    # response (the socket stays open for keep-alive) so the
                    # connection takes the next request
                    self._raw.close()
                    break
                if inflater is None:
                    yield data
                    continue
                try:  # bounded steps: a compression bomb meets the caller's size limit
                    out = inflater.decompress(data, CHUNK)
                    while True:
                        if out:
                            yield out
                        if not inflater.unconsumed_tail:
                            break
                        out = inflater.decompress(inflater.unconsumed_tail, CHUNK)
                except zlib.error as exc:
                    raise TransportError("broken", f"bad {encoding} body: {exc}") from None
            done = True
        finally:
            if not done:
                self._on_abort()


class Transport:
    """Keep-alive ``http.client`` connections, one per (host, port)."""

    def __init__(self, *, connect_timeout: float, read_timeout: float,
                 headers: dict[str, str]) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.headers = headers
        self._conns: dict[tuple[str, int], http.client.HTTPConnection] = {}

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def _connection(self, host: str, port: int) -> http.client.HTTPConnection:
        conn = self._conns.get((host, port))
        if conn is not None and conn.sock is not None:
            # an idle connection the server closed (or wrote to) is not reused
            readable, _, _ = select.select([conn.sock], [], [], 0)
            if readable:
                conn.close()
        if conn is None:
            conn = self._conns[(host, port)] = http.client.HTTPConnection(host, port)
        if conn.sock is None:
            conn.timeout = self.connect_timeout
            try:
                conn.connect()
            except TimeoutError:
                conn.close()
                raise TransportError("connect-timeout", "timed out") from None
            except OSError as exc:
                conn.close()
                raise TransportError("connect", str(exc) or type(exc).__name__) from None
            assert conn.sock is not None
            conn.sock.settimeout(self.read_timeout)
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def send(self, method: str, url: str, *, params: Any, content: bytes | None,
             headers: dict[str, str]) -> Response:
        host, port, target, full = split_url(url, params)
        merged = {k.lower(): (k, v) for k, v in self.headers.items()}
        merged.update({k.lower(): (k, v) for k, v in headers.items()})
        conn = self._connection(host, port)
        try:
            conn.putrequest(method, target)
            for name, value in merged.values():
                conn.putheader(name, value)
            if content is not None:
                conn.putheader("Content-Length", str(len(content)))
            conn.endheaders(content)
            raw = conn.getresponse()
        except http.client.InvalidURL as exc:
            conn.close()
            raise TransportError("invalid-url", str(exc)) from None
        except ValueError as exc:  # a header value http.client refuses (CR, LF...)
            conn.close()
            raise TransportError("invalid-header", str(exc)) from None
        except TimeoutError:
            conn.close()
            raise TransportError("read-timeout", "timed out") from None
        except (http.client.HTTPException, OSError) as exc:
            conn.close()
            raise TransportError("broken", str(exc) or type(exc).__name__) from None
        return Response(raw, full, conn.close)
