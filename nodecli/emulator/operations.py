"""The collaboration service of the emulator: OAuth access tokens, workspaces, operations.

Routes (interface.md 4.4; paths the spec does not show are nodecli's documented
choices, see docs/operations.md):

* ``GET /operations`` — the top-level list: by default the caller's own operations
  (all of them for an ``admin:all`` token, standing in for an organization admin);
  at most ONE filter among ``group_id``, ``group_membership_id``, ``user_id``,
  ``workspace_id``, ``workspace_membership_id`` (two or more: 400).
* ``GET /workspaces/{id}/operations``, ``GET /workspace_memberships/{id}/operations``
  and ``GET /group_memberships/{id}/operations`` — nested lists.
* ``GET|PUT /{parent}/{id}/operations/{op}`` — one operation; PUT resolves a stopped one.
* ``POST /workspaces`` ``{"name": ...}``, ``POST /workspace_memberships``
  ``{"workspace_id": ..., "user_id": ...}``, ``POST /group_memberships``
  ``{"group_id": ..., "user_id": ...}`` — 202 with ``Location`` naming the operation.

Authentication: ``Authorization: Bearer <access token>`` in the interface.md 2.5
envelope, signed with the emulator's service key (:func:`mint_service_token`). Every
route needs scope ``user:all`` or ``admin:all``.

Operations advance when they are read (deterministic for tests): a running operation
stays running for ``run_polls`` reads, then ends according to its script. Scripts come
from the workspace name (``conflict-*``: one folder conflict, ``conflict3-*``: three,
``error-*``: one internal_server_error, ``abort-*``: aborted) or from
:func:`add_operation`. A PUT with ``apply_to_all`` true resolves the operation's later
conflicts the same way (it then runs on to success).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from nodecli.emulator.server import Handler, HttpError, Principal, Reply, Request, Router
from nodecli.emulator.state import NodeState

SERVICE_SCOPES = ("user:all", "admin:all")
FILTERS = ("group_id", "group_membership_id", "user_id", "workspace_id",
           "workspace_membership_id")
TYPES = ("group_membership.create", "workspace.create", "workspace_membership.create")
PARENT_PATH = {
    "workspace.create": ("workspaces", "workspace_id"),
    "workspace_membership.create": ("workspace_memberships", "workspace_membership_id"),
    "group_membership.create": ("group_memberships", "group_membership_id"),
}
PUT_KEYS = {"use_existing": bool, "folder_name": str, "retry": bool, "apply_to_all": bool}
_NAME_SCRIPT = re.compile(r"^(?P<kind>conflict|error|abort)(?P<count>\d{0,2})-")


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


@dataclass(slots=True)
class Operation:
    id: str
    type: str
    user_id: str
    parent_id: str  # workspace_id / workspace_membership_id / group_membership_id
    folder_name: str
    status: str = "running"
    data: dict[str, Any] | None = None
    created_at: datetime = field(default_factory=_now)
    updated_at: datetime = field(default_factory=_now)
    group_id: str | None = None
    workspace_id: str | None = None  # of a workspace membership
    conflicts_left: int = 0
    errors_left: int = 0
    abort: bool = False
    polls_left: int = 1
    auto_resolve: bool = False

    def public(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "status": self.status,
            "user_id": self.user_id,
            "created_at": _stamp(self.created_at),
            "updated_at": _stamp(self.updated_at),
        }
        d[PARENT_PATH[self.type][1]] = self.parent_id
        if self.data is not None:
            d["data"] = dict(self.data)
        return d

    @property
    def path(self) -> str:
        collection = PARENT_PATH[self.type][0]
        pid, oid = quote(self.parent_id, safe=""), quote(self.id, safe="")
        return f"/{collection}/{pid}/operations/{oid}"


@dataclass(slots=True)
class ServiceState:
    """Everything the emulated collaboration service knows (under ``state.lock``)."""

    private_key: Any = None  # RSA private key that signs access tokens
    public_pem: str = ""
    operations: dict[str, Operation] = field(default_factory=dict)
    workspaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    workspace_memberships: dict[str, dict[str, Any]] = field(default_factory=dict)
    group_memberships: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, list[str]]]] = field(default_factory=list)
    put_bodies: list[tuple[str, Any]] = field(default_factory=list)
    put_raw: list[tuple[str, bytes]] = field(default_factory=list)  # bytes as received
    post_bodies: list[Any] = field(default_factory=list)  # POST /workspaces bodies
    put_errors: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    run_polls: int = 1
    # opaque access tokens this service accepts as they are: token -> user id (a
    # service whose tokens are not the envelope of interface.md 2.5)
    opaque_tokens: dict[str, str] = field(default_factory=dict)
    # where this service serves things interface.md does not show (ServicePaths names:
    # operations, workspaces, workspace_memberships, group_memberships, create_workspace)
    paths: dict[str, str] = field(default_factory=dict)
    ids: Any = field(default_factory=lambda: itertools.count(1))
    parent_ids: Any = field(default_factory=lambda: itertools.count(100))
    key_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        self.operations.clear()
        self.workspaces.clear()
        self.workspace_memberships.clear()
        self.group_memberships.clear()
        self.requests.clear()
        self.put_bodies.clear()
        self.put_raw.clear()
        self.post_bodies.clear()
        self.put_errors.clear()
        self.run_polls = 1
        self.opaque_tokens.clear()
        self.ids = itertools.count(1)
        self.parent_ids = itertools.count(100)

    def next_id(self) -> str:
        return str(next(self.ids))

    def next_parent_id(self) -> str:
        return str(next(self.parent_ids))


def service_state(state: NodeState) -> ServiceState:
    return state.extension("service", ServiceState)


# -- tokens --------------------------------------------------------------------------------

def _ensure_key(svc: ServiceState) -> None:
    with svc.key_lock:
        if svc.private_key is not None:
            return
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        svc.public_pem = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode("ascii")
        svc.private_key = key


def mint_service_token(state: NodeState, user_id: str, scopes: tuple[str, ...] | str = "user:all",
                       expires_in: float = 3600, *, group_ids: list[str] | None = None,
                       expires_at: datetime | None = None) -> str:
    """An OAuth access token (interface.md 2.5) the emulated service accepts.

    ``expires_in`` may be negative to make an already expired token.
    """
    from nodecli.tokens.wire import encode_token, sign_payload

    svc = service_state(state)
    _ensure_key(svc)
    claims: dict[str, Any] = {"user_id": user_id}
    if group_ids is not None:
        claims["group_ids"] = list(group_ids)
    claims["scope"] = scopes if isinstance(scopes, str) else " ".join(scopes)
    when = expires_at or (_now() + timedelta(seconds=expires_in))
    claims["expires_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = json.dumps(claims, separators=(",", ":"), ensure_ascii=False).encode()
    return encode_token(payload, sign_payload(payload, svc.private_key))


def _verifier(state: NodeState, svc: ServiceState) -> Callable[[Request], Principal]:
    def verify(req: Request) -> Principal:
        with state.lock:
            svc.requests.append((req.method, req.path, dict(req.query)))
        header = req.headers.get("Authorization") or ""
        if not header.startswith("Bearer "):
            raise HttpError(401, "an OAuth access token is required (Authorization: Bearer)",
                            {"WWW-Authenticate": 'Bearer realm="service"'})
        opaque_user = svc.opaque_tokens.get(header[7:].strip())
        if opaque_user is not None:
            return Principal("service", opaque_user, claims={"scope": "user:all"})
        from nodecli.tokens.inspection import has_scope
        from nodecli.tokens.wire import TokenError, verify

        _ensure_key(svc)
        try:
            claims = verify(header[7:].strip(), svc.public_pem, leeway=0)
        except TokenError as exc:
            raise HttpError(401, f"access token refused: {exc.message}",
                            {"WWW-Authenticate": 'Bearer error="invalid_token"'}) from None
        if not any(has_scope(claims, s) for s in SERVICE_SCOPES):
            raise HttpError(403, "the access token lacks scope user:all (or admin:all)",
                            {"WWW-Authenticate": 'Bearer error="insufficient_scope"'})
        return Principal("service", str(claims.get("user_id")), claims=claims)

    return verify


# -- arranging data (tests and demos) ----------------------------------------------------------

def _script_from_name(name: str) -> tuple[int, int, bool]:
    """(conflicts, internal errors, abort) scripted by a workspace name."""
    m = _NAME_SCRIPT.match(name)
    if not m:
        return 0, 0, False
    count = int(m["count"] or 1)
    if m["kind"] == "conflict":
        return count, 0, False
    if m["kind"] == "error":
        return 0, count, False
    return 0, 0, True


def add_operation(state: NodeState, op_type: str = "workspace.create", *,
                  parent_id: str | None = None, user_id: str = "u1",
                  status: str = "running", data: dict[str, Any] | None = None,
                  folder_name: str = "folder", conflicts: int = 0, errors: int = 0,
                  abort: bool = False, group_id: str | None = None,
                  workspace_id: str | None = None, polls: int | None = None) -> Operation:
    """Put an operation straight into the service (its parent is created as needed)."""
    if op_type not in TYPES:
        raise ValueError(f"unknown operation type {op_type!r}")
    svc = service_state(state)
    with state.lock:
        op_id = svc.next_id()
        pid = parent_id or svc.next_parent_id()
        if op_type == "workspace.create":
            svc.workspaces.setdefault(pid, {"id": pid, "name": folder_name, "user_id": user_id})
        elif op_type == "workspace_membership.create":
            svc.workspace_memberships.setdefault(
                pid, {"id": pid, "workspace_id": workspace_id, "user_id": user_id})
        else:
            svc.group_memberships.setdefault(
                pid, {"id": pid, "group_id": group_id, "user_id": user_id})
        if status == "stopped" and data is None:
            data = {"type": "folder_conflict", "folder_name": folder_name}
        op = Operation(op_id, op_type, user_id, pid, folder_name, status=status, data=data,
                       group_id=group_id, workspace_id=workspace_id, conflicts_left=conflicts,
                       errors_left=errors, abort=abort,
                       polls_left=svc.run_polls if polls is None else polls)
        svc.operations[op_id] = op
        return op


def fail_next_put(state: NodeState, op_id: str, status: int, message: str = "") -> None:
    """Make the next PUT on ``op_id`` answer ``status`` (400, 404, 409...) untouched."""
    svc = service_state(state)
    with state.lock:
        svc.put_errors.setdefault(op_id, []).append((status, message or f"injected {status}"))


# -- the state machine ---------------------------------------------------------------------------

def _advance(op: Operation) -> None:
    """One read of a running operation: count down, then finish per the script."""
    if op.status != "running":
        return
    if op.polls_left > 0:
        op.polls_left -= 1
        return
    op.updated_at = _now()
    if op.abort:
        op.status = "aborted"
        op.data = None
    elif op.conflicts_left > 0 and not op.auto_resolve:
        op.conflicts_left -= 1
        op.status = "stopped"
        op.data = {"type": "folder_conflict", "folder_name": op.folder_name}
    elif op.errors_left > 0:
        op.errors_left -= 1
        op.status = "stopped"
        op.data = {"type": "internal_server_error"}
    else:
        op.status = "success"
        op.data = None


def _check_folder_name(name: str) -> None:
    if not name.strip() or name in (".", "..") or "/" in name or "\\" in name:
        raise HttpError(400, "folder_name is not a valid folder name")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in name) or len(name) > 255:
        raise HttpError(400, "folder_name is not a valid folder name")


def _resolve(svc: ServiceState, op: Operation, body: Any, run_polls: int) -> None:
    if not isinstance(body, dict):
        raise HttpError(400, "the body must be a JSON object")
    unknown = sorted(set(body) - set(PUT_KEYS))
    if unknown:
        raise HttpError(400, f"unknown properties: {', '.join(unknown)}")
    for key, typ in PUT_KEYS.items():
        if key in body and not isinstance(body[key], typ):
            raise HttpError(400, f"{key} must be a {'boolean' if typ is bool else 'string'}")
    if op.status != "stopped" or not op.data:
        raise HttpError(409, f"operation {op.id} is {op.status}, not stopped")
    kind = op.data.get("type")
    use_existing = body.get("use_existing") is True
    retry = body.get("retry") is True
    folder = body.get("folder_name")
    if kind == "folder_conflict":
        if not (use_existing or retry or folder is not None):
            raise HttpError(400, "a folder conflict needs use_existing, folder_name or retry")
        if use_existing and folder is not None:
            raise HttpError(400, "use_existing and folder_name exclude each other")
        if folder is not None:
            _check_folder_name(folder)
            op.folder_name = folder
    else:
        if not retry or use_existing or folder is not None:
            raise HttpError(400, f"an operation stopped on {kind} can only be retried")
    if body.get("apply_to_all") is True:
        op.auto_resolve = True
    op.status = "running"
    op.data = None
    op.polls_left = run_polls
    op.updated_at = _now()


# -- routes ------------------------------------------------------------------------------------

def register(router: Router, state: NodeState) -> None:
    svc = service_state(state)
    state.extensions["service_verifier"] = _verifier(state, svc)
    state.extensions["mint_service_token"] = lambda *a, **k: mint_service_token(state, *a, **k)

    def reset() -> None:
        svc.reset()

    state.reset_hooks.append(reset)

    def principal_of(req: Request) -> Principal:
        assert req.principal is not None
        return req.principal

    def is_admin(req: Request) -> bool:
        from nodecli.tokens.inspection import has_scope

        return has_scope(principal_of(req).claims, "admin:all")

    def visible(ops: list[Operation]) -> list[dict[str, Any]]:
        for op in ops:
            _advance(op)
        return [op.public() for op in sorted(ops, key=lambda o: int(o.id)
                                             if o.id.isdigit() else 0)]

    def top_list(req: Request) -> Reply:
        given = [(k, req.arg(k)) for k in FILTERS if k in req.query]
        unknown = sorted(set(req.query) - set(FILTERS))
        if unknown:
            raise HttpError(400, f"unknown query parameter {unknown[0]!r}")
        if len(given) > 1:
            raise HttpError(400, "filter by at most one of " + ", ".join(FILTERS) +
                            f" (got {', '.join(k for k, _ in given)})")
        with state.lock:
            ops = list(svc.operations.values())
            if given:
                key, value = given[0]
                ops = [op for op in ops if _matches(svc, op, key, value or "")]
            elif not is_admin(req):
                me = principal_of(req).name
                ops = [op for op in ops if op.user_id == me]
            return Reply(200, visible(ops))

    def nested_list(collection: str, op_type: str) -> Handler:
        def handler(req: Request) -> Reply:
            assert req.match is not None
            pid = req.match.group("pid")
            with state.lock:
                parents = _parents(svc, collection)
                if pid not in parents:
                    raise HttpError(404, f"no {collection[:-1].replace('_', ' ')} {pid!r}")
                ops = [op for op in svc.operations.values() if _belongs(op, collection, pid)]
                return Reply(200, visible(ops))

        return handler

    def find_op(req: Request, collection: str) -> Operation:
        assert req.match is not None
        pid, op_id = req.match.group("pid"), req.match.group("op")
        op = svc.operations.get(op_id)
        if op is None or not _belongs(op, collection, pid):
            raise HttpError(404, f"no operation {op_id!r} under /{collection}/{pid}")
        return op

    def get_one(collection: str) -> Handler:
        def handler(req: Request) -> Reply:
            with state.lock:
                op = find_op(req, collection)
                _advance(op)
                return Reply(200, op.public())

        return handler

    def put_one(collection: str) -> Handler:
        def handler(req: Request) -> Reply:
            body = req.json()
            with state.lock:
                assert req.match is not None
                op_id = req.match.group("op")
                svc.put_bodies.append((op_id, body))
                svc.put_raw.append((op_id, req.body))
                queued = svc.put_errors.get(op_id)
                if queued:
                    status, message = queued.pop(0)
                    raise HttpError(status, message)
                op = find_op(req, collection)
                _resolve(svc, op, body, svc.run_polls)
                return Reply(200, op.public())

        return handler

    def location(op: Operation) -> str:
        collection = PARENT_PATH[op.type][0]
        template = svc.paths.get(collection, f"/{collection}/{{id}}/operations")
        return (template.replace("{id}", quote(op.parent_id, safe="")) + "/" +
                quote(op.id, safe=""))

    def created(op: Operation) -> Reply:
        return Reply(202, {"id": op.parent_id, "operation_id": op.id},
                     {"Location": location(op)})

    def create_workspace(req: Request) -> Reply:
        body = req.json()
        with state.lock:
            svc.post_bodies.append(body)
        name = body.get("name") if isinstance(body, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise HttpError(400, "name (a non-empty string) is required")
        if len(name) > 255 or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
            raise HttpError(400, "name is not a valid workspace name")
        conflicts, errors, abort = _script_from_name(name)
        with state.lock:
            if any(ws["name"] == name for ws in svc.workspaces.values()):
                raise HttpError(409, f"a workspace named {name!r} already exists")
            op = add_operation(state, "workspace.create", user_id=principal_of(req).name,
                               folder_name=name, conflicts=conflicts, errors=errors,
                               abort=abort)
            svc.workspaces[op.parent_id]["name"] = name
        return created(op)

    def create_membership(kind: str) -> Handler:
        op_type = f"{kind}.create"
        owner_key = "workspace_id" if kind == "workspace_membership" else "group_id"

        def handler(req: Request) -> Reply:
            body = req.json()
            if not isinstance(body, dict):
                raise HttpError(400, "the body must be a JSON object")
            owner, user = body.get(owner_key), body.get("user_id")
            if not isinstance(owner, str) or not owner or not isinstance(user, str) or not user:
                raise HttpError(400, f"{owner_key} and user_id (strings) are required")
            with state.lock:
                if kind == "workspace_membership" and owner not in svc.workspaces:
                    raise HttpError(404, f"no workspace {owner!r}")
                ws_name = svc.workspaces.get(owner, {}).get("name", owner)
                folder = f"{ws_name}/{user}" if kind == "workspace_membership" else user
                conflicts, errors, abort = _script_from_name(user)
                op = add_operation(
                    state, op_type, user_id=principal_of(req).name, folder_name=folder,
                    conflicts=conflicts, errors=errors, abort=abort,
                    group_id=owner if kind == "group_membership" else None,
                    workspace_id=owner if kind == "workspace_membership" else None)
            return created(op)

        return handler

    seg = r"[^/]+"

    def route(template: str) -> str:
        return re.escape(template).replace(re.escape("{id}"), rf"(?P<pid>{seg})")

    router.add("GET", route(svc.paths.get("operations", "/operations")), top_list,
               auth="service")
    router.add("POST", route(svc.paths.get("create_workspace", "/workspaces")),
               create_workspace, auth="service")
    router.add("POST", r"/workspace_memberships", create_membership("workspace_membership"),
               auth="service")
    router.add("POST", r"/group_memberships", create_membership("group_membership"),
               auth="service")
    for collection, op_type in (("workspaces", "workspace.create"),
                                ("workspace_memberships", "workspace_membership.create"),
                                ("group_memberships", "group_membership.create")):
        base = route(svc.paths.get(collection, f"/{collection}/{{id}}/operations"))
        router.add("GET", base, nested_list(collection, op_type), auth="service")
        router.add("GET", base + rf"/(?P<op>{seg})", get_one(collection), auth="service")
        router.add("PUT", base + rf"/(?P<op>{seg})", put_one(collection), auth="service")


def _parents(svc: ServiceState, collection: str) -> dict[str, dict[str, Any]]:
    return {"workspaces": svc.workspaces, "workspace_memberships": svc.workspace_memberships,
            "group_memberships": svc.group_memberships}[collection]


def _belongs(op: Operation, collection: str, pid: str) -> bool:
    return PARENT_PATH[op.type][0] == collection and op.parent_id == pid


def _matches(svc: ServiceState, op: Operation, key: str, value: str) -> bool:
    if key == "user_id":
        return op.user_id == value
    if key == "workspace_id":
        return ((op.type == "workspace.create" and op.parent_id == value) or
                (op.type == "workspace_membership.create" and op.workspace_id == value))
    if key == "workspace_membership_id":
        return op.type == "workspace_membership.create" and op.parent_id == value
    if key == "group_membership_id":
        return op.type == "group_membership.create" and op.parent_id == value
    if key == "group_id":
        return op.type == "group_membership.create" and op.group_id == value
    return False
