"""What a node says about itself (GET /info): its version, clock and logging setting,
cached per node and identity, and the node versions that features need."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodecli.errors import NodecliError

if TYPE_CHECKING:
    from nodecli.http.client import Client


MIN_EVENTS_VERSION = (3, 6, 0)
MIN_GET_BY_ID_VERSION = (3, 7, 3)
EXPLICIT_LOGGING_VERSION = (3, 7, 4)
PER_KEY_LOGGING_VERSION = (3, 8, 0)
INFO_CACHE_TTL = 120.0
#: a callback that takes one line of progress or log text
Status = Callable[[str], None]


@dataclass(slots=True)
class NodeInfo:
    """What GET /info said: version, clock, and ``logging`` (activity_event_logging as
    /info reports it); ``fetched_at`` is when (``time.time()``)."""

    version: str | None
    current_time: str | None = None
    fetched_at: float = field(default_factory=time.time)
    logging: bool | None = None

    @property
    def version_tuple(self) -> tuple[int, ...] | None:
        if not self.version or not self.version[:1].isdigit():  # "fast": no version known
            return None
        return version_tuple(self.version)

    def at_least(self, v: tuple[int, int, int]) -> bool | None:
        vt = self.version_tuple
        return None if vt is None else vt >= v

    def node_now(self) -> datetime:
        """The node's clock now (its /info current_time plus the time since)."""
        local = datetime.now(UTC)
        if self.current_time:
            from nodecli.timeparse import server_time, shift

            then = server_time(self.current_time)
            if then is None:  # no time a datetime holds (year 10000, 0000-00-00...)
                return local
            return shift(then, timedelta(seconds=max(time.time() - self.fetched_at, 0.0)))
        return local


def version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in str(text).split(".")[:3]:
        m = re.match(r"\d{1,9}", piece)  # (int() refuses 4,301 digits: a version is short)
        parts.append(int(m.group(0)) if m else 0)
    return tuple(parts + [0] * (3 - len(parts)))


def _identity(client: Client) -> str:
    """Whose view of which node a cached /info is: URL, login kind and name."""
    ep = client.endpoint
    return f"{ep.base_url}|{ep.auth.kind}|{ep.auth.username or ep.auth.access_key or ''}"


def _info_cache_file(state_dir: str | os.PathLike[str], who: str) -> Path:
    """``state/cache/info-<crc32 of who>.json``. Two identities may share a name (a
    checksum, not a digest, so that a run need not import hashlib for a file name); the
    file names its identity, so one never reads the other's."""
    from binascii import crc32  # (zlib's CRC-32; the config cache has loaded binascii)

    crc = crc32(who.encode("utf-8", "surrogateescape"))
    return Path(state_dir) / "cache" / f"info-{crc:08x}.json"


def logging_setting(info: dict[str, Any]) -> bool | None:
    """The node's activity_event_logging as GET /info reports it (None: not said)."""
    settings = info.get("settings")
    found = None
    if isinstance(settings, list):
        for s in settings:
            if isinstance(s, dict) and s.get("name") == "activity_event_logging":
                found = bool(s.get("value"))
    return found


def node_info(client: Client, state_dir: str | os.PathLike[str] | None, *,
              ttl: float = INFO_CACHE_TTL,
              log: Status | None = None) -> NodeInfo | None:
    """GET /info once per run, cached per node and identity for ``ttl`` seconds.

    Returns None when the node does not answer /info (bearer tokens may not reach it):
    features are then tried and a 404 explained.
    """
    who = _identity(client)
    path = _info_cache_file(state_dir, who) if state_dir else None
    if path is not None:
        try:
            from nodecli.fsutil import read_regular

            cached = json.loads(read_regular(path, 64 * 1024))
            if (isinstance(cached, dict) and cached.get("who") == who
                    and 0 <= time.time() - float(cached.get("fetched_at", 0)) < ttl):
                return NodeInfo(cached.get("version"), cached.get("current_time"),
                                float(cached["fetched_at"]), cached.get("logging"))
        except (OSError, ValueError, TypeError, KeyError):
            pass
    try:
        data = client.json("GET", "/info")
    except NodecliError as exc:
        if log:
            log(f"GET /info failed ({exc}); node version unknown")
        return None
    if not isinstance(data, dict):
        return None
    version = data.get("version") if isinstance(data.get("version"), str) else None
    now = data.get("current_time") if isinstance(data.get("current_time"), str) else None
    logging = logging_setting(data)
    info = NodeInfo(version, now, time.time(), logging)
    if path is not None:
        from nodecli.fsutil import atomic_write, ensure_private_dir

        with contextlib.suppress(OSError):
            ensure_private_dir(path.parent)
            atomic_write(path, json.dumps({"who": who, "version": version, "current_time": now,
                                           "fetched_at": info.fetched_at,
                                           "logging": logging}).encode(), quiet=True)
    return info


# -- the whole /info document (``node info``) ----------------------------------------


def _capabilities(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, dict):
        return [{"name": str(k), "value": v} for k, v in raw.items()]
    out = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and "name" in item:
                out.append({"name": str(item["name"]), "value": item.get("value")})
            elif isinstance(item, str):
                out.append({"name": item, "value": True})
    return out


def info_document(client: Any) -> dict[str, Any]:
    """GET /info, as the node sent it (a JSON object), with capabilities normalised.

    Unknown fields are kept; ``capabilities`` and ``settings`` become lists of
    ``{name, value}`` whatever shape the node used.
    """
    from nodecli.errors import RemoteError

    info = client.json("GET", "/info")
    if not isinstance(info, dict):
        raise RemoteError(f"{client.endpoint.base_url}/info did not answer with a JSON object")
    info = dict(info)
    info["capabilities"] = _capabilities(info.get("capabilities"))
    if "settings" in info:
        info["settings"] = _capabilities(info.get("settings"))
    return info


def node_clock_offset(client: Client) -> float:
    """The node's clock minus ours, in seconds, from the Date header of one GET /info
    (any answer carries it: no credentials are needed)."""
    from nodecli.errors import RemoteError

    if client.clock_offset is None:
        client.request("GET", "/info", expect=(200, 401, 403, 404))
    if client.clock_offset is None:
        raise RemoteError(f"{client.endpoint.label or client.endpoint.base_url} sent no "
                          "usable Date header: its clock is not known")
    return client.clock_offset
