"""Where a tail stands, kept in a checkpoint file: validated load, atomic save, an
exclusive lock, and the named checkpoints of ``--resume NAME``."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from nodecli.errors import (
    ConfigError,
    ConflictError,
    UsageError,
    shorten,
)
from nodecli.node.events.pages import EventFilter

if TYPE_CHECKING:
    from nodecli.http.client import Client


CHECKPOINT_VERSION = 1
LAST_IDS_KEPT = 100
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(slots=True)
class Checkpoint:
    """Where a tail stands: after ``token`` (or, before the first page, after
    ``after_time``), then the events ``skip`` were already written."""

    token: str
    after_time: str | None = None
    skip: list[str] = field(default_factory=list)
    last_ids: list[str] = field(default_factory=list)
    node: str = ""
    filter: dict[str, str | None] = field(default_factory=dict)
    output: dict[str, Any] | None = None

    def to_json(self) -> bytes:
        return json.dumps({
            "version": CHECKPOINT_VERSION, "node": self.node, "filter": self.filter,
            "iteration_token": self.token or None, "after_time": self.after_time,
            "skip_ids": self.skip, "last_ids": self.last_ids,
            "output": self.output, "saved_at": datetime.now(UTC).isoformat(),
        }, indent=1).encode() + b"\n"


class CheckpointFile:
    """A checkpoint file: exclusive (non-blocking) lock, validated load, atomic save."""

    def __init__(self, path: Path, *, node: str, flt: EventFilter) -> None:
        self.path = Path(path)
        self.node = node
        self.flt = flt
        self._unlock: Callable[[], None] | None = None

    def lock(self) -> None:
        from nodecli.fsutil import ensure_private_dir, try_lock

        ensure_private_dir(self.path.parent)
        release = try_lock(self.path.with_name(f".{self.path.name}.lock"), 0)
        if release is None:
            raise ConflictError(f"checkpoint {self.path} is in use by another 'events tail'",
                                hint="two tails on one checkpoint would interleave; stop the "
                                     "other one or use another checkpoint")
        self._unlock = release

    def unlock(self) -> None:
        if self._unlock is not None:
            self._unlock()
            self._unlock = None

    def load(self) -> Checkpoint | None:
        from nodecli.fsutil import NotRegularFile, read_regular

        try:
            raw = read_regular(self.path, 1024 * 1024)
        except FileNotFoundError:
            return None
        except NotRegularFile as exc:  # refused like every file nodecli reads: exit 2
            raise UsageError(f"checkpoint {self.path} {exc.strerror}") from None
        except OSError as exc:
            raise ConfigError(f"cannot read checkpoint {self.path}: {exc.strerror}") from None
        fix = f"nothing was changed; to start over, delete {self.path}"
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise ConfigError(f"checkpoint {self.path} is damaged (not JSON)", hint=fix) from None
        token = data.get("iteration_token") if isinstance(data, dict) else None
        after = data.get("after_time") if isinstance(data, dict) else None
        if not isinstance(data, dict) or data.get("version") != CHECKPOINT_VERSION or not (
            (isinstance(token, str) and token) or (token is None and isinstance(after, str))
        ):
            raise ConfigError(f"checkpoint {self.path} is damaged or of an unknown version",
                              hint=fix)
        skip = data.get("skip_ids") or []
        last = data.get("last_ids") or []
        if not (isinstance(skip, list) and isinstance(last, list)):
            raise ConfigError(f"checkpoint {self.path} is damaged", hint=fix)
        node = data.get("node")
        if node and node != self.node:
            raise UsageError(f"checkpoint {self.path} belongs to node {shorten(node)}, not "
                             f"{self.node}", hint="use another checkpoint for this node")
        flt = data.get("filter") or {}
        if isinstance(flt, dict) and flt and flt != self.flt.as_dict():
            raise UsageError(f"checkpoint {self.path} was saved with another filter "
                             f"({shorten(json.dumps(flt))})",
                             hint="use the same --type/--type-glob, or another checkpoint")
        output = data.get("output") if isinstance(data.get("output"), dict) else None
        if not token:
            from nodecli.timeparse import TimeParseError, parse_iso8601

            try:
                parse_iso8601(str(after))
            except TimeParseError:
                raise ConfigError(f"checkpoint {self.path} is damaged (after_time)",
                                  hint=fix) from None
        return Checkpoint(token or "", after if not token else None, [str(x) for x in skip],
                          [str(x) for x in last], node or "", self.flt.as_dict(), output)

    def save(self, cp: Checkpoint) -> None:
        from nodecli.fsutil import atomic_write

        cp.node = self.node
        cp.filter = self.flt.as_dict()
        atomic_write(self.path, cp.to_json(), quiet=True)


def node_key(client: Client) -> str:
    """A stable, file-name-safe name for the node and identity being tailed."""
    ep = client.endpoint
    who = ep.auth.username or ep.auth.access_key or ep.auth.kind
    digest = hashlib.sha256(f"{ep.base_url}|{who}".encode()).hexdigest()[:10]
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", ep.label or urlsplit(ep.base_url).netloc)[:40]
    return f"{label}-{digest}"


def resume_path(state_dir: str | Path, client: Client, name: str, flt: EventFilter) -> Path:
    """``state/checkpoints/<node>/<NAME>@<filter>.json`` for ``--resume NAME``."""
    if not NAME_RE.fullmatch(name):
        raise UsageError(f"invalid checkpoint name {name[:40]!r}: letters, digits, '.', '_' "
                         "and '-' (at most 64)")
    key = flt.key()
    if not re.fullmatch(r"[A-Za-z0-9._-]+", key) or len(key) > 80:
        key = "f-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(state_dir) / "checkpoints" / node_key(client) / f"{name}@{key}.json"
