"""Where a tail stands, kept in a checkpoint file: validated load, atomic save, an
exclusive lock, the named checkpoints of ``--resume NAME``, and the mark of the last
event taken, by which a resumed tail notices that the node's log was reset.

A position alone (an iteration token, or a time and the ids already taken) cannot tell
a log that went on from one that started again: a new log reuses the ids ``1, 2, 3``
and its times are after any saved time. So a checkpoint also keeps the last event taken
(:func:`event_mark`: its id, its time and a digest of its canonical JSON), and a resumed
tail checks, before it writes anything, that the node's event under that id is still
that event (:class:`ResumeCheck`): on the page it reads again when the checkpoint stops
inside a page (the event is on it, so no request is added: this works with every
node), else with ``GET /events/{id}`` on nodes from 3.7.3. A checkpoint without the
mark (saved by an older nodecli) resumes as before, unchecked.
"""

from __future__ import annotations

import hashlib
import json
import os
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
    NodecliError,
    NotFoundError,
    UsageError,
    counted,
    shorten,
)
from nodecli.node.events.pages import EventFilter, event_id, fetch_page

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
    last_event: dict[str, str | None] | None = None  # event_mark() of the last event taken

    def to_json(self) -> bytes:
        data: dict[str, Any] = {
            "version": CHECKPOINT_VERSION, "node": self.node, "filter": self.filter,
            "iteration_token": self.token or None, "after_time": self.after_time,
            "skip_ids": self.skip, "last_ids": self.last_ids,
            "output": self.output, "saved_at": datetime.now(UTC).isoformat(),
        }
        if self.last_event is not None:  # (before any event is taken there is none)
            data["last_event"] = self.last_event
        return json.dumps(data, indent=1).encode() + b"\n"


def event_mark(obj: dict[str, Any]) -> dict[str, str | None] | None:
    """What a checkpoint keeps of the last event taken: its id, its time, and the
    SHA-256 (first 128 bits) of its canonical JSON (keys sorted, no spaces, ASCII), so
    that the same event read from a page or from GET /events/{id} gives the same mark."""
    try:
        canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        return None
    when = obj.get("time")
    return {"id": event_id(obj), "time": when if isinstance(when, str) else None,
            "digest": hashlib.sha256(canonical.encode()).hexdigest()[:32]}


def _valid_mark(mark: Any) -> bool:
    return (isinstance(mark, dict) and isinstance(mark.get("id"), str)
            and isinstance(mark.get("digest"), str)
            and isinstance(mark.get("time"), (str, type(None))))


class LogReset(NodecliError):
    """The node's event under the checkpoint's last id is not the event taken: its log
    was reset (or pruned past the checkpoint). Exit 1, nothing written or saved."""


GAP_TYPE = "nodecli.gap"


class LogGap(NodecliError):
    """The node no longer holds the events after the checkpoint: its log moved on (it
    keeps only the newest) while nothing read it. Exit 1, nothing written or saved,
    unless the user accepts the gap (then :meth:`event` says it in the stream)."""

    def __init__(self, taken: dict[str, str | None], oldest: dict[str, str | None],
                 missed: int, path: Path | None) -> None:
        where = f"checkpoint {path}" if path else "the checkpoint"
        self.taken, self.oldest, self.missed, self.path = taken, oldest, missed, path

        def said(ev: dict[str, str | None]) -> str:
            text = f"event {shorten(str(ev['id']), 60)}"
            return text + (f" of {shorten(str(ev['time']), 40)}" if ev.get("time") else "")

        super().__init__(
            f"events were lost: the node no longer holds the events after {where} (which "
            f"took {said(taken)} last); the oldest it holds is {said(oldest)}: at least "
            f"{counted(missed, 'event')} missed",
            hint="nothing was written or saved; --accept-gap goes on from the oldest event "
                 f"the node holds, after a {GAP_TYPE} event that says what was missed")

    def event(self, node: str) -> tuple[dict[str, Any], str]:
        """The ``nodecli.gap`` event said before the first event after a gap."""
        obj = {"id": f"{GAP_TYPE}:{self.taken['id']}-{self.oldest['id']}",
               "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "types": [GAP_TYPE],
               "data": {"node": node, "checkpoint": str(self.path) if self.path else None,
                        "last_taken": self.taken, "oldest_held": self.oldest,
                        "missed_at_least": self.missed}}
        return obj, json.dumps(obj, ensure_ascii=False)


class ResumeCheck:
    """Checks, once, that the node still holds the last event a checkpoint took.

    When the checkpoint stops inside a page (``skip`` names the ids taken from it), the
    page read again from the same start holds those events first, ending with the
    marked one: :meth:`see` compares each event of that page, and a page that leaves
    the ids taken before reaching the marked event (:meth:`left_skip`), or a log that
    ends before it (:meth:`page_end`), is a reset too. Otherwise the next page does not
    hold the event, and :meth:`fetch` asks the node for it by id (nodes from 3.7.3;
    older nodes refuse an iteration token past the end of a new log, see
    docs/events.md).
    """

    def __init__(self, cp: Checkpoint | None, path: Path | None) -> None:
        mark = cp.last_event if cp is not None else None
        self.mark = mark if _valid_mark(mark) else None
        self.path = path
        self.on_page = self.mark is not None and cp is not None and self.mark["id"] in cp.skip
        self.by_id = self.mark is not None and not self.on_page

    @property
    def pending(self) -> bool:
        return self.on_page or self.by_id

    def _reset(self, what: str) -> LogReset:
        assert self.mark is not None
        where = f"checkpoint {self.path}" if self.path else "the checkpoint"
        taken = f"event {shorten(str(self.mark['id']), 60)}"
        if self.mark.get("time"):
            taken += f" of {shorten(str(self.mark['time']), 40)}"
        fix = (f"; to start over, delete {self.path} and choose a start with --since or "
               "--iteration-token") if self.path else ""
        return LogReset(f"the node's log was reset: {what} ({where} took {taken} last)",
                        hint="the events after that point are not the ones the checkpoint "
                             f"counts on; nothing was skipped or written{fix}")

    def fetch(self, client: Client, supports_get_by_id: bool | None) -> None:
        """Ask the node for the marked event by id (once, when the page cannot show it)."""
        if not self.by_id:
            return
        if not supports_get_by_id:
            self.by_id = False  # an older node (or one of unknown version): not asked
            return
        from urllib.parse import quote

        from nodecli.remote_json import loads

        assert self.mark is not None
        eid = str(self.mark["id"])
        try:
            resp = client.request("GET", "/events/" + quote(eid, safe=""))
        except NotFoundError:
            self.by_id = False
            gap = self._gap(client)
            if gap is None:
                raise self._reset(f"it no longer holds event {shorten(eid, 60)}") from None
            if gap.missed == 0:
                return  # only the event taken last was dropped: nothing is missing
            raise gap from None
        try:
            obj = loads(resp.body)
        except ValueError:
            obj = None
        self.by_id = False
        self._compare(obj if isinstance(obj, dict) else {})

    def _gap(self, client: Client) -> LogGap | None:
        """The node dropped the event taken last because its log moved on (it keeps only
        so many events), not because the log started again: the oldest event it still
        holds comes after the one taken. Ids are positions on the nodes whose ids are
        numbers (the documented tokens are too), which also counts the events missed;
        other ids cannot tell a gap from a reset, and a reset it stays."""
        assert self.mark is not None
        eid = str(self.mark["id"])
        try:
            first = fetch_page(client, "/events", [("count", "1")])
        except NodecliError:
            return None
        if not first.items or not eid.isdigit():
            return None
        oldest = first.items[0][0]
        oid = event_id(oldest)
        if not oid.isdigit() or int(oid) <= int(eid):
            return None
        when = oldest.get("time")
        return LogGap(self.mark, {"id": oid, "time": when if isinstance(when, str) else None},
                      int(oid) - int(eid) - 1, self.path)

    def _compare(self, obj: dict[str, Any]) -> None:
        assert self.mark is not None
        now = event_mark(obj)
        if now is None or now["digest"] != self.mark["digest"]:
            when = now.get("time") if now else None
            said = f" (of {shorten(str(when), 40)})" if when else ""
            raise self._reset(f"its event {shorten(str(self.mark['id']), 60)}{said} is "
                              "another event")

    def see(self, eid: str, obj: dict[str, Any]) -> None:
        """An event of the page read again (call before anything of the page is written)."""
        if self.on_page and self.mark is not None and eid == self.mark["id"]:
            self.on_page = False
            self._compare(obj)

    def left_skip(self, eid: str) -> None:
        """The page went past the ids taken without holding the marked event."""
        if self.on_page:
            raise self._reset(f"event {shorten(eid, 60)} comes where the checkpoint's "
                              "events were")

    def page_end(self, caught_up: bool) -> None:
        """The end of a page read again: a log that ends before the marked event."""
        if self.on_page and caught_up:
            raise self._reset("it ends before the events the checkpoint took")


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
        mark = data.get("last_event")
        if mark is not None and not _valid_mark(mark):
            raise ConfigError(f"checkpoint {self.path} is damaged (last_event)", hint=fix)
        if not token:
            from nodecli.timeparse import TimeParseError, parse_iso8601

            try:
                parse_iso8601(str(after))
            except TimeParseError:
                raise ConfigError(f"checkpoint {self.path} is damaged (after_time)",
                                  hint=fix) from None
        return Checkpoint(token or "", after if not token else None, [str(x) for x in skip],
                          [str(x) for x in last], node or "", self.flt.as_dict(), output,
                          mark)

    def save(self, cp: Checkpoint) -> None:
        from nodecli.fsutil import atomic_write

        pause_for_tests("checkpoint-save")  # what it covers is written; it is not saved yet
        cp.node = self.node
        cp.filter = self.flt.as_dict()
        atomic_write(self.path, cp.to_json(), quiet=True)


TEST_PAUSE_ENV = "NODECLI_TEST_PAUSE"


def pause_for_tests(point: str, detail: str = "") -> None:
    """A hook for the test suite only (docs/development.md): with NODECLI_TEST_PAUSE set
    to ``POINT@SOCKET``, reaching ``point`` connects to the Unix socket SOCKET, says
    ``POINT PID`` (and ``detail``, which tells apart threads that wait there together)
    and waits for any answer (or the socket's close), so a test stops the program
    exactly there, then kills it or lets it go on. Unset (always, outside the tests) it
    costs one environment lookup."""
    spec = os.environ.get(TEST_PAUSE_ENV)
    if not spec:
        return
    name, _, where = spec.partition("@")
    if name != point or not where:
        return
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(where)
            said = f"{point} {os.getpid()} {' '.join(detail.split())}".rstrip()
            conn.sendall(f"{said}\n".encode())
            conn.recv(16)
    except OSError:
        return  # nobody listening: the test is over, go on


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
