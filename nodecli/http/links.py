"""``Link`` headers (RFC 8288) and origins: the next page of a paged answer, read from a
hostile header without ever raising anything but :class:`LinkError`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``; never raises. An unusable port (``:99999``,
    ``:x``) gives port -1, which equals no real origin, so no credentials go there."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
        host = (parts.hostname or "").lower()
    except ValueError:
        return "", "", -1
    return parts.scheme.lower(), host, port


def iter_link_header(value: str | None) -> Iterator[tuple[str, dict[str, str]]]:
    """Parse an RFC 8288 ``Link`` header into (target, params) pairs; never raises."""
    if not value or len(value) > 64 * 1024:
        return
    pos, n = 0, len(value)
    while pos < n:
        while pos < n and value[pos] in " \t,":
            pos += 1
        if pos >= n or value[pos] != "<":
            # skip garbage up to the next comma
            nxt = value.find(",", pos)
            if nxt < 0:
                return
            pos = nxt + 1
            continue
        end = value.find(">", pos)
        if end < 0:
            return
        target = value[pos + 1 : end].strip()
        pos = end + 1
        params: dict[str, str] = {}
        while pos < n:
            while pos < n and value[pos] in " \t":
                pos += 1
            if pos >= n or value[pos] != ";":
                break
            pos += 1
            m = re.compile(r"\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*").match(value, pos)
            if not m:
                break
            key = m.group(1).lower()
            pos = m.end()
            val = ""
            if pos < n and value[pos] == "=":
                pos += 1
                while pos < n and value[pos] in " \t":
                    pos += 1
                if pos < n and value[pos] == '"':
                    pos += 1
                    buf = []
                    while pos < n and value[pos] != '"':
                        if value[pos] == "\\" and pos + 1 < n:
                            pos += 1
                        buf.append(value[pos])
                        pos += 1
                    pos += 1
                    val = "".join(buf)
                else:
                    m2 = re.compile(r"[^;,\s]*").match(value, pos)
                    val = m2.group(0) if m2 else ""
                    pos = m2.end() if m2 else pos
            params.setdefault(key, val)
        while pos < n and value[pos] not in ",":
            pos += 1
        yield target, params


class LinkError(ValueError):
    """A ``Link: rel="next"`` target that is not a usable http(s) URL."""


def next_link(value: str | None, base_url: str) -> str | None:
    """The absolute URL of the first ``rel="next"`` link (rel may list several; relation
    types compare case-insensitively, RFC 8288 section 2.1.1).

    Raises :class:`LinkError` when that target is not a usable http(s) URL (a port that
    is not a number from 1 to 65535, an unbalanced IPv6 bracket, no host, another scheme).
    """
    for target, params in iter_link_header(value):
        rels = params.get("rel", "").lower().split()
        if "next" in rels and target:
            shown = repr(target[:120])
            try:
                url = urljoin(base_url, target)
                parts = urlsplit(url)
                port = parts.port
            except ValueError as exc:
                raise LinkError(f"{shown}: {exc}") from None
            if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
                raise LinkError(f"{shown}: not an http or https URL with a host")
            if port == 0:
                raise LinkError(f"{shown}: port 0")
            return url
    return None


@dataclass(frozen=True, slots=True)
class NextPage:
    """Where the next page of a list is asked for: ``url`` (None: the answer named
    none), on the node's own origin; ``foreign_host`` is the host a Link named instead."""

    url: str | None
    foreign_host: str | None = None


def next_page(link_header: str | None, url: str, base_url: str, collection: str) -> NextPage:
    """The one follower of ``Link: rel="next"`` that every pager uses.

    A link that names another origin (a node behind a proxy, NAT or load balancer
    advertising its internal name) is not followed there: its query (the iteration
    token or page number, and whatever else it carries) is asked of ``base_url``'s
    ``collection``, so credentials never go to a host the user did not name.
    Raises :class:`LinkError` for a target that is not a usable URL.
    """
    target = next_link(link_header, url)
    if target is None or origin(target) == origin(base_url):
        return NextPage(target)
    parts = urlsplit(target)
    return NextPage(base_url.rstrip("/") + collection + (f"?{parts.query}" if parts.query else ""),
                    parts.netloc)


class PageTrail:
    """Every page a run has followed, so that a Link leading back to ANY of them (a loop
    of 2 pages or of a million) is seen before that page is read again.

    A page is remembered as a 16-byte BLAKE2b digest of its key (the iteration token, or
    the next-page URL), in one open-addressed table held in a ``bytearray``: 16 bytes a
    slot and at most 3/4 full, so a million pages take 21 to 43 MB (a ``set`` of
    ``bytes`` would take about 100 bytes a page). The hash is keyed with a secret
    chosen per run, so a node cannot pick keys that pile up in one run of slots.
    """

    _WIDTH = 16
    _EMPTY = bytes(_WIDTH)

    def __init__(self, slots: int = 1024) -> None:
        import os

        self._key = os.urandom(16)
        self._slots = max(8, 1 << (slots - 1).bit_length())
        self._table = bytearray(self._slots * self._WIDTH)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """The bytes its table holds (what grows with the pages)."""
        return len(self._table)

    def _digest(self, key: str) -> bytes:
        import hashlib

        d = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=self._WIDTH,
                            key=self._key).digest()
        # never all zeros (that marks an empty slot); the bit set is outside the first 8
        # bytes, which choose the slot
        return d[:-1] + bytes([d[-1] | 1])

    def _find(self, d: bytes) -> tuple[int, bool]:
        """(offset of ``d``'s slot or of the empty slot where it goes, whether found)."""
        mask, w, table = self._slots - 1, self._WIDTH, self._table
        i = int.from_bytes(d[:8], "little") & mask
        while True:
            slot = table[i * w:(i + 1) * w]
            if slot == d:
                return i * w, True
            if slot == self._EMPTY:
                return i * w, False
            i = (i + 1) & mask

    def __contains__(self, key: str) -> bool:
        return self._find(self._digest(key))[1]

    def add(self, key: str) -> bool:
        """Remember ``key``; False when it was remembered already."""
        d = self._digest(key)
        at, found = self._find(d)
        if found:
            return False
        self._table[at:at + self._WIDTH] = d
        self._count += 1
        if self._count * 4 > self._slots * 3:
            self._grow()
        return True

    def _grow(self) -> None:
        w, old = self._WIDTH, self._table
        self._slots *= 2
        self._table = bytearray(self._slots * w)
        for at in range(0, len(old), w):
            d = bytes(old[at:at + w])
            if d != self._EMPTY:
                new_at, _ = self._find(d)
                self._table[new_at:new_at + w] = d
