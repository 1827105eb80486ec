"""Transfers that move in time: POST, GET (paged like /events), GET one, PUT (change a
running one, e.g. ``target_rate_kbps``) and CANCEL on /ops/transfers.

A transfer runs at its target rate until its bytes are done (``completed``), or fails
half way (``failed``, with an ``error_code`` and ``error_desc``) when its remote host
starts with ``fail`` or the book's ``fail_next`` is set, or is cancelled. Its start and
end are logged as ``transfer.started`` / ``transfer.ended`` events (with the
upload/download subtypes) carrying the same data, so events and transfers agree. The
state is computed from the clock when it is read; a sweep logs the ends.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from nodecli.emulator.server import HttpError, Reply, Request, Router
from nodecli.emulator.state import NodeState

FINAL = ("completed", "failed", "cancelled")
FAIL_CODE, FAIL_DESC = 13, "remote host is not reachable (emulated failure)"


@dataclass(slots=True)
class Transfer:
    id: str
    user: str
    access_key: str | None
    spec: dict[str, Any]
    direction: str
    remote_host: str
    rate_kbps: int
    size: int  # bytes
    files: int
    start: float = field(default_factory=time.time)
    fails: bool = False
    done_at_change: float = 0.0  # bytes moved when the rate last changed
    changed: float = 0.0  # when it last changed
    cancelled: float | None = None
    ended_logged: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # what PUT set besides the rate

    def __post_init__(self) -> None:
        self.changed = self.start

    def _moved(self, now: float) -> float:
        return self.done_at_change + self.rate_kbps * 125 * max(now - self.changed, 0.0)

    def end_time(self) -> float:
        """When it ends (completes, or fails half way) at the current rate."""
        goal = self.size / 2 if self.fails else self.size
        left = max(goal - self.done_at_change, 0.0)
        return self.changed + left / max(self.rate_kbps * 125, 1)

    def status(self, now: float) -> str:
        if self.cancelled is not None:
            return "cancelled"
        if now >= self.end_time():
            return "failed" if self.fails else "completed"
        return "running"

    def set_rate(self, kbps: int, now: float) -> None:
        self.done_at_change = min(self._moved(now), float(self.size))
        self.changed, self.rate_kbps = now, kbps

    def snapshot(self, now: float | None = None) -> dict[str, Any]:
        now = time.time() if now is None else now
        status = self.status(now)
        end = None
        if status == "cancelled":
            end = self.cancelled
        elif status != "running":
            end = self.end_time()
        at = end if end is not None else now
        moved = int(min(self._moved(at), self.size / 2 if self.fails else self.size))
        elapsed = max(at - self.start, 0.001)
        return {
            "id": self.id, "status": status, "direction": self.direction,
            "remote_host": self.remote_host, "user_id": self.user,
            "start_time_usec": int(self.start * 1e6),
            "end_time_usec": int(end * 1e6) if end is not None else None,
            "bytes_transferred": moved, "bytes_expected": self.size,
            "files_completed": self.files if status == "completed" else
            int(self.files * moved / max(self.size, 1)),
            "files_expected": self.files,
            "error_code": FAIL_CODE if status == "failed" else 0,
            "error_desc": FAIL_DESC if status == "failed" else "",
            "target_rate_kbps": self.rate_kbps, "min_rate_kbps": 0,
            "current_rate_kbps": self.rate_kbps if status == "running" else 0,
            "avg_rate_kbps": int(moved * 8 / 1000 / elapsed),
            "transfer_spec": self.spec, **self.extra,
        }


class TransferBook:
    """Every transfer of the node, oldest first, and the knobs tests turn."""

    def __init__(self, state: NodeState) -> None:
        self.state = state
        self.items: list[Transfer] = []
        self.seconds = 3.0  # how long a new transfer takes at its target rate
        self.fail_next = False
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()

    def reset(self) -> None:
        with self.state.lock:
            self.items.clear()
            self.seconds, self.fail_next = 3.0, False

    def start(self, user: str, access_key: str | None, spec: dict[str, Any]) -> Transfer:
        rate = spec.get("target_rate_kbps")
        rate = rate if isinstance(rate, int) and not isinstance(rate, bool) and rate > 0 \
            else 10_000
        host_ = spec.get("remote_host")
        host: str = host_ if isinstance(host_, str) else "demo"
        direction: str = "send" if spec.get("direction") == "send" else "receive"
        paths_ = spec.get("paths")
        paths: list[Any] = paths_ if isinstance(paths_, list) else []
        with self.state.lock:
            t = Transfer(str(uuid.uuid4()), user, access_key, spec, direction, host, rate,
                         max(int(rate * 125 * self.seconds), 1), max(len(paths), 1),
                         fails=self.fail_next or host.startswith("fail"))
            self.fail_next = False
            self.items.append(t)
        self._ensure_sweeper()
        return t

    def seed(self, count: int, *, seed: int = 7) -> None:
        """``count`` transfers of several users and hosts: about one in ten ended long
        ago (a few of them failed), the others started over the last minutes and run."""
        import random

        rng = random.Random(seed)
        now = time.time()
        for i in range(count):
            rate = rng.choice((1_000, 10_000, 50_000, 100_000, 500_000))
            spec = {"remote_host": f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                    "direction": rng.choice(("send", "receive")), "target_rate_kbps": rate,
                    "paths": [{"source": f"/data/f{i}-{n}"} for n in range(rng.randint(1, 9))]}
            t = self.start(rng.choice(("alice", "bob", "svc", "admin")), None, spec)
            ended = rng.random() < 0.1
            t.fails = ended and rng.random() < 0.3
            back = rng.uniform(0, self.seconds * (3 if ended else 0.9))
            t.start = t.changed = now - back
            t.ended_logged = ended  # seeded history: no events for it

    def find(self, transfer_id: str) -> Transfer:
        with self.state.lock:
            for t in self.items:
                if t.id == transfer_id:
                    return t
        raise HttpError(404, f"no transfer {transfer_id[:80]!r}")

    def sweep(self) -> None:
        """Log the end of every transfer that has ended and was not logged yet."""
        from nodecli.emulator.events import log_for

        now = time.time()
        ended = []
        with self.state.lock:
            for t in self.items:
                if not t.ended_logged and t.status(now) != "running":
                    t.ended_logged = True
                    ended.append(t)
        log = log_for(self.state)
        for t in ended:
            log.append(_event(t, t.snapshot(now), ended=True), access_key=t.access_key)

    def _ensure_sweeper(self) -> None:
        if self._sweeper is not None:
            return

        def run() -> None:
            while not self._stop.wait(0.1):
                self.sweep()

        self._sweeper = threading.Thread(target=run, name="transfer-sweeper", daemon=True)
        self._sweeper.start()


def _event(t: Transfer, data: dict[str, Any], *, ended: bool) -> dict[str, Any]:
    sub = "download" if t.direction == "send" else "upload"
    data = {k: v for k, v in data.items() if k != "transfer_spec"}
    kind = "ended" if ended else "started"
    return {"user_id": t.user, "types": [f"{sub}.{kind}", f"transfer.{kind}"], "data": data}


def book_of(state: NodeState) -> TransferBook:
    def make() -> TransferBook:
        book = TransferBook(state)
        state.reset_hooks.append(book.reset)
        return book

    return state.extension("transfer_book", make)


def _visible(req: Request, t: Transfer) -> bool:
    p = req.principal
    if p is None or p.kind == "node_user":
        return True
    return t.access_key == p.access_key


def _id(req: Request) -> str:
    assert req.match is not None
    return str(req.match.group("id"))


def _one(req: Request, name: str) -> str | None:
    values = req.query.get(name)
    return values[-1] if values else None


def register(router: Router, state: NodeState) -> None:
    book = book_of(state)

    def mine(req: Request) -> Transfer:
        """The transfer of the path, when this login may see it (404 otherwise)."""
        t = book.find(_id(req))
        if not _visible(req, t):
            raise HttpError(404, f"no transfer {t.id!r}")
        return t

    def start(req: Request) -> Reply:
        spec = req.json()
        if not isinstance(spec, dict):
            raise HttpError(400, "a transfer specification (JSON object) is required")
        p = req.principal
        t = book.start(p.name if p else "admin", p.access_key if p else None, spec)
        snap = t.snapshot()
        hook = state.extensions.get("on_transfer")
        if hook:
            hook(req, {**snap, "event_data": _event(t, snap, ended=False)})
        with state.lock:
            state.transfers.append(snap)
        return Reply(200, snap)

    def listing(req: Request) -> Reply:
        book.sweep()
        token = _one(req, "iteration_token") or "0"
        count = _one(req, "count") or "100"
        # (a node may allow smaller pages: tests set "max_transfer_page")
        most = state.extensions.get("max_transfer_page", 10_000)
        if not token.isdigit() or not count.isdigit() or not 0 < int(count) <= most:
            raise HttpError(400, f"iteration_token and count (1 to {most}) are whole numbers")
        active = (_one(req, "active_only") or "").lower() == "true"
        now = time.time()
        with state.lock:
            rows = [(i, t) for i, t in enumerate(book.items, 1) if i > int(token)
                    and _visible(req, t) and not (active and t.status(now) != "running")]
        page = rows[: int(count)]
        nxt = str(page[-1][0]) if page else token
        link = f'<{req.base_url}/ops/transfers?iteration_token={nxt}&count={count}' + \
            ("&active_only=true" if active else "") + '>; rel="next"'
        return Reply(200, [t.snapshot(now) for _, t in page], {"Link": link})

    def get_one(req: Request) -> Reply:
        book.sweep()
        t = mine(req)
        return Reply(200, t.snapshot())

    def modify(req: Request) -> Reply:
        t = mine(req)
        body = req.json()
        if not isinstance(body, dict):
            raise HttpError(400, "PUT /ops/transfers/{id} takes a JSON object")
        rate = body.get("target_rate_kbps")
        if rate is not None and (not isinstance(rate, int) or isinstance(rate, bool)
                                 or rate <= 0):
            raise HttpError(400, "target_rate_kbps must be a positive whole number")
        now = time.time()
        with state.lock:
            if t.status(now) != "running":
                raise HttpError(409, f"transfer {t.id} is {t.status(now)}: only a running "
                                     "transfer can be changed")
            if rate is not None:
                t.set_rate(rate, now)
            t.extra.update({k: v for k, v in body.items() if k != "target_rate_kbps"
                            and isinstance(k, str) and k not in ("id", "status")})
        return Reply(200, t.snapshot())

    def cancel(req: Request) -> Reply:
        t = mine(req)
        now = time.time()
        with state.lock:
            if t.status(now) == "running":
                t.cancelled = now
        book.sweep()
        return Reply(200, t.snapshot())

    router.add("POST", r"/ops/transfers", start, auth="bearer")
    router.add("GET", r"/ops/transfers", listing, auth="any")
    router.add("GET", r"/ops/transfers/(?P<id>[^/]+)", get_one, auth="any")
    router.add("PUT", r"/ops/transfers/(?P<id>[^/]+)", modify, auth="any")
    router.add("CANCEL", r"/ops/transfers/(?P<id>[^/]+)", cancel, auth="any")
