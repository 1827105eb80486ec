"""Bearer tokens that renew, for commands that run for hours.

A node bearer token lasts an hour by default. Two sources keep one valid without
restarting the command:

* :class:`FileToken`: a token file (``--bearer-file``, a profile's ``bearer_file``) is
  read for each request (another program may replace it, or rewrite it in place) and
  after a 401;
* :class:`MintedToken`: a node profile with a ``mint`` section signs its own tokens with
  a local private key, in the format of ``nodecli token create``, a new one when less
  than a margin of the current one is left. The key stays in this process: it is never
  sent and never written anywhere.

The HTTP client asks the source for the token of each request (``current``) and, after
a 401, once for a new one (``renew``) before it retries the request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from nodecli.errors import UsageError
from nodecli.fsutil import user_path

MAX_SEEN = 8  # old tokens kept for redaction


class TokenSource(Protocol):
    label: str

    def current(self) -> str:
        """The token to send now."""

    def renew(self) -> bool:
        """After a 401: True when there is now another token worth a retry."""

    def seen(self) -> list[str]:
        """Every token handed out (for redaction from logs and messages)."""


class _Seen:
    def __init__(self) -> None:
        self._tokens: list[str] = []
        self.lock = threading.Lock()

    def add(self, token: str) -> None:
        if token not in self._tokens:
            self._tokens = [*self._tokens[-(MAX_SEEN - 1):], token]

    def seen(self) -> list[str]:
        return list(self._tokens)


class FileToken(_Seen):
    """A token file, read for each request and after a 401: what it holds now is the
    token. (Its size and times say nothing certain: a token of the same length written
    in place within one tick of the file system's clock leaves them all as they were, and
    a token file is a few hundred bytes.) A file that is briefly missing or empty (while
    a writer replaces it) keeps the last good token."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = user_path(path)
        self.label = f"token file {path}"
        self._token: str | None = None

    def _read(self) -> str:
        from nodecli.errors import NodecliError

        try:
            token = read_token_file(self.path)
        except (NodecliError, OSError):
            if self._token is not None:
                return self._token
            raise
        if token != self._token:
            self._token = token
            self.add(token)
        return token

    def current(self) -> str:
        with self.lock:
            return self._read()

    def renew(self) -> bool:
        with self.lock:
            old = self._token
            return self._read() != old


class MintedToken(_Seen):
    """Tokens signed here with a private key, renewed ``margin`` before they expire."""

    def __init__(self, key_path: str, access_key: str, user_id: str,
                 group_ids: Sequence[str] = (), role: str = "user", ttl: float = 3600.0,
                 *, clock: Callable[[], float] = time.time, offset: float = 0.0) -> None:
        super().__init__()
        self.key_path = user_path(key_path)
        self.access_key, self.user_id = access_key, user_id
        self.group_ids, self.role, self.ttl = list(group_ids), role, ttl
        self.margin = max(min(ttl / 5, 300.0), 1.0)
        self.label = f"token minted for user {user_id!r} with key {key_path}"
        self._offset = offset  # the node's clock minus ours, when it is known
        self._clock = clock
        self._key: Any = None
        self._token: str | None = None
        self._expires = 0.0
        self.minted = 0

    def _mint(self) -> str:
        from datetime import UTC, datetime

        from nodecli.tokens.wire import create_token

        if self._key is None:
            from nodecli.tokens.keys import load_private_key

            self._key = load_private_key(self.key_path)
        now = self._clock() + self.offset
        expires = int(now + self.ttl)
        if self._token is not None and expires <= int(self._expires + self.offset):
            # signing is deterministic: within the same second the same claims would give
            # the very token just refused, so the new one ends a second later
            expires = int(self._expires + self.offset) + 1
        self._token = create_token(self._key, self.access_key, self.user_id,
                                   self.group_ids or None,
                                   role=self.role,
                                   expires_at=datetime.fromtimestamp(expires, UTC),
                                   now=datetime.fromtimestamp(now, UTC))
        self._expires = expires - self.offset
        self.minted += 1
        self.add(self._token)
        return self._token

    @property
    def offset(self) -> float:
        return self._offset

    @offset.setter
    def offset(self, value: float) -> None:
        """The node's clock, learnt from its answers: a token minted on another clock
        (ours, before the first answer) is not sent again; the next one ends ``ttl``
        after the node's now (one on our clock would live ``ttl`` plus the skew there)."""
        with self.lock:
            if value != self._offset:
                self._offset, self._token = value, None

    def current(self) -> str:
        with self.lock:
            if self._token is None or self._expires - self._clock() < self.margin:
                return self._mint()
            return self._token

    def renew(self) -> bool:
        with self.lock:
            self._mint()
            return True


MAX_TOKEN_FILE = 1024 * 1024


def read_token_file(path: str | Path) -> str:
    """The token a file holds (a leading "Bearer " dropped); refused when empty."""
    from nodecli.fsutil import read_limited

    p = user_path(path)
    raw = read_limited(p, MAX_TOKEN_FILE, "token file")
    token = raw.decode("utf-8", "replace").strip()
    if token.partition(" ")[0] == "Bearer":  # (the prefix alone leaves it empty)
        token = token[7:].strip()
    if not token:
        raise UsageError(f"token file {p} is empty")
    return token
