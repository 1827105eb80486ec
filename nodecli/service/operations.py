"""Long-running operations of the collaboration service: list, show, watch, update.

Domain only (no click, no rich): functions take a :class:`nodecli.http.client.Client` opened
on the service and return plain data; progress and decisions go through callbacks.

Paths (interface.md 4.4). Operations are nested under their parent resource:

* ``workspace.create`` under ``/workspaces/{workspace_id}/operations/{id}``;
* ``workspace_membership.create`` under
  ``/workspace_memberships/{workspace_membership_id}/operations/{id}``;
* ``group_membership.create`` under ``/group_memberships/{group_membership_id}/operations/{id}``
  (the last two single-operation paths are not shown by interface.md; they follow the
  nesting rule it states).

The top-level list, whose path interface.md does not show, is ``GET /operations``; it
takes at most one filter (``group_id``, ``group_membership_id``, ``user_id``,
``workspace_id``, ``workspace_membership_id``). Listing by workspace or workspace
membership uses the nested endpoints instead.

Paths that interface.md does not show (the top-level list, the single-operation paths
of memberships, the POST that creates a workspace) are defaults of :class:`ServicePaths`,
which a service profile or a run can override.

Resolving stopped operations is :mod:`nodecli.service.resolve`; creating workspaces
(which starts an operation) is :mod:`nodecli.service.workspaces`.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from nodecli.config.service_paths import DEFAULT_PATHS, ServicePaths
from nodecli.errors import RemoteError, UsageError
from nodecli.http.checks import check_id

if TYPE_CHECKING:
    from nodecli.http.client import Client


STATUSES = ("aborted", "running", "stopped", "success")
FINAL = frozenset({"aborted", "stopped", "success"})
TYPES = ("group_membership.create", "workspace.create", "workspace_membership.create")


# CLI option name -> (top-level query parameter, nested collection or None)
FILTERS: dict[str, tuple[str, str | None]] = {
    "workspace": ("workspace_id", "workspaces"),
    "workspace_membership": ("workspace_membership_id", "workspace_memberships"),
    "group": ("group_id", None),
    "group_membership": ("group_membership_id", None),
    "user": ("user_id", None),
}
FLAG_NAMES = {name: "--" + name.replace("_", "-") for name in FILTERS}
# operation type -> (collection of its parent, property naming the parent)
PARENTS = {
    "workspace.create": ("workspaces", "workspace_id"),
    "workspace_membership.create": ("workspace_memberships", "workspace_membership_id"),
    "group_membership.create": ("group_memberships", "group_membership_id"),
}
PARENT_OPTION = {"workspaces": "workspace", "workspace_memberships": "workspace_membership",
                 "group_memberships": "group_membership"}
MAX_FOLDER_NAME = 255


def folder_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a new folder name, or None when it can."""
    if not isinstance(name, str) or not name.strip():
        return "the folder name is empty"
    if name != name.strip():
        return "the folder name starts or ends with spaces"
    if name in (".", ".."):
        return f"{name!r} is not a folder name"
    if "/" in name or "\\" in name:
        return "the folder name must not contain '/' or '\\'"
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") for c in name):
        return "the folder name contains control characters"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_FOLDER_NAME:
        return f"the folder name is longer than {MAX_FOLDER_NAME} bytes"
    return None


def check_folder_name(name: str) -> str:
    problem = folder_name_problem(name)
    if problem:
        raise UsageError(problem)
    return name


def check_statuses(values: Iterable[str]) -> list[str]:
    out = []
    for value in values:
        for part in value.split(","):
            part = part.strip().lower()
            if part not in STATUSES:
                raise UsageError(f"unknown status {part!r} (use {', '.join(STATUSES)})")
            if part not in out:
                out.append(part)
    return out


@dataclass(frozen=True, slots=True)
class OpRef:
    """Where one operation lives: its parent collection, parent id and its own id.

    ``base`` is the parent's operations path (from :class:`ServicePaths`), or the URL
    the service's own Location header gave, scheme and host included; empty means the
    default nesting.
    """

    collection: str  # workspaces / workspace_memberships / group_memberships
    parent_id: str
    op_id: str
    base: str = ""

    @property
    def path(self) -> str:
        base = self.base or DEFAULT_PATHS.nested(self.collection, self.parent_id)
        return f"{base}/{quote(self.op_id, safe='')}"

    @classmethod
    def of(cls, op: dict[str, Any], paths: ServicePaths = DEFAULT_PATHS) -> OpRef:
        """The reference of an operation object the service returned."""
        op_type = op.get("type")
        op_id = op.get("id")
        if (not isinstance(op_type, str) or op_type not in PARENTS
                or not isinstance(op_id, str | int) or isinstance(op_id, bool)):
            raise RemoteError(f"the service returned an operation of unknown type "
                              f"{str(op_type)[:60]!r}")
        collection, prop = PARENTS[op_type]
        parent = op.get(prop)
        if not isinstance(parent, str | int) or isinstance(parent, bool) or not str(parent):
            raise RemoteError(f"operation {str(op_id)[:60]!r}: the service did not say "
                              f"its {prop}")
        return cls(collection, str(parent), str(op_id), paths.nested(collection, str(parent)))

    @classmethod
    def from_location(cls, location: str, collection: str = "workspaces",
                      paths: ServicePaths = DEFAULT_PATHS, against: str = "") -> OpRef:
        """Parse a 202 ``Location`` header naming an operation of ``collection``:
        ``{paths.<collection>}/{op}`` (default ``.../workspaces/{id}/operations/{op}``,
        any prefix). Later requests go where the service said: ``location`` is resolved
        against the request's URL ``against``, and the base keeps its scheme and host, so
        neither a relative Location nor the service URL's own path prefix is lost or
        doubled (the client sends its credentials to its own origin only)."""
        import re
        from urllib.parse import unquote, urljoin, urlsplit

        split = urlsplit(urljoin(against, location) if against else location)
        path = split.path
        origin = f"{split.scheme}://{split.netloc}" if split.scheme and split.netloc else ""
        template = getattr(paths, collection)
        pattern = re.escape(template).replace(re.escape("{id}"), "([^/]+)") + "/([^/]+)/?$"
        m = re.search(pattern, path)
        if m:
            return cls(collection, unquote(m.group(1)), unquote(m.group(2)),
                       origin + path[: m.start(2) - 1])
        parts = [unquote(p) for p in path.split("/") if p]
        if len(parts) < 4 or parts[-2] != "operations" or parts[-4] not in PARENT_OPTION:
            raise RemoteError(f"the service answered 202 with an unexpected Location "
                              f"{location[:200]!r}")
        return cls(parts[-4], parts[-3], parts[-1],
                   origin + path.rstrip("/").rsplit("/", 1)[0])


def parent_ref(op_id: str, *, workspace: str | None = None,
               workspace_membership: str | None = None,
               group_membership: str | None = None,
               paths: ServicePaths = DEFAULT_PATHS) -> OpRef:
    """The reference of operation ``op_id`` given exactly one parent option."""
    given = [(c, v) for c, v in (("workspaces", workspace),
                                 ("workspace_memberships", workspace_membership),
                                 ("group_memberships", group_membership)) if v is not None]
    if len(given) != 1:
        raise UsageError("name the operation's parent with exactly one of --workspace ID, "
                         "--workspace-membership ID, --group-membership ID")
    collection, pid = given[0]
    pid = check_id(pid, f"--{PARENT_OPTION[collection].replace('_', '-')} id")
    return OpRef(collection, pid, check_id(op_id, "operation id"),
                 paths.nested(collection, pid))


def check_parent(op_id: str, *, workspace: str | None = None,
                 workspace_membership: str | None = None,
                 group_membership: str | None = None) -> None:
    """Refuse two parents or a malformed id (exit 2) before anything is asked or sent;
    no parent at all is allowed (:func:`locate` finds it)."""
    if workspace is not None or workspace_membership is not None or \
            group_membership is not None:
        parent_ref(op_id, workspace=workspace, workspace_membership=workspace_membership,
                   group_membership=group_membership)
    else:
        check_id(op_id, "operation id")


def locate(client: Client, op_id: str, *, paths: ServicePaths = DEFAULT_PATHS,
           workspace: str | None = None, workspace_membership: str | None = None,
           group_membership: str | None = None) -> OpRef:
    """Where operation ``op_id`` lives: under the parent given, else under the parent the
    top-level list (the user's own operations) names for it."""
    if workspace is not None or workspace_membership is not None or group_membership is not None:
        return parent_ref(op_id, workspace=workspace, workspace_membership=workspace_membership,
                          group_membership=group_membership, paths=paths)
    op_id = check_id(op_id, "operation id")
    for op in list_operations(client, {}, (), paths):
        if str(op.get("id")) == op_id:
            try:
                return OpRef.of(op, paths)
            except RemoteError:
                break
    raise UsageError(f"operation {op_id} is not among your operations, so its parent is "
                     "not known: name it with --workspace ID, --workspace-membership ID "
                     "or --group-membership ID")


@dataclass(frozen=True, slots=True)
class ListPlan:
    """Which request ``list_operations`` sends (built and checked before any request)."""

    path: str
    params: dict[str, str]


def plan_list(filters: dict[str, str | None],
              paths: ServicePaths = DEFAULT_PATHS) -> ListPlan:
    """Choose the endpoint: nested where interface.md has one, else the top-level list.

    More than one filter is refused here (exit 2), before any request is made.
    """
    given = {k: v for k, v in filters.items() if v is not None}
    unknown = sorted(set(given) - set(FILTERS))
    if unknown:
        raise UsageError(f"unknown filter {unknown[0]!r}")
    if len(given) > 1:
        names = " and ".join(FLAG_NAMES[k] for k in FILTERS if k in given)
        raise UsageError(f"the operations list takes at most one filter, not {names}",
                         hint="the service filters by one of: " +
                              ", ".join(FLAG_NAMES.values()))
    if not given:
        return ListPlan(paths.operations, {})
    (key, value), = given.items()
    value = check_id(value, f"{FLAG_NAMES[key]} id")
    param, nested = FILTERS[key]
    if nested:
        return ListPlan(paths.nested(nested, value), {})
    return ListPlan(paths.operations, {param: value})


def as_operations(data: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise RemoteError(f"{where}: the service did not return a list of operations")
    return data


def as_operation(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict) or not isinstance(data.get("status"), str):
        raise RemoteError(f"{where}: the service did not return an operation")
    return data


def list_operations(client: Client, filters: dict[str, str | None],
                    statuses: Sequence[str] = (),
                    paths: ServicePaths = DEFAULT_PATHS) -> list[dict[str, Any]]:
    """Operations in scope, optionally only those in ``statuses`` (filtered here)."""
    plan = plan_list(filters, paths)
    wanted = check_statuses(statuses)
    ops = as_operations(client.json("GET", plan.path, params=plan.params or None), plan.path)
    if wanted:
        ops = [op for op in ops if op.get("status") in wanted]
    return ops


def get_operation(client: Client, ref: OpRef) -> dict[str, Any]:
    return as_operation(client.json("GET", ref.path), ref.path)


def stop_reason(op: dict[str, Any]) -> str:
    """Human text for why an operation stopped: ``folder_conflict: 'name'`` etc."""
    data = op.get("data")
    if op.get("status") == "aborted":
        kind = data.get("type") if isinstance(data, dict) else None
        return f"aborted ({kind})" if kind else "aborted"
    if not isinstance(data, dict):
        return str(op.get("status", "unknown"))
    kind = str(data.get("type") or "unknown error")
    folder = data.get("folder_name")
    if kind == "folder_conflict" and folder is not None:
        return f"folder_conflict: folder {str(folder)!r} already exists"
    return kind


def conflict_folder(op: dict[str, Any]) -> str | None:
    data = op.get("data")
    if isinstance(data, dict) and data.get("type") == "folder_conflict":
        name = data.get("folder_name")
        return None if name is None else str(name)
    return None


def parent_of(op: dict[str, Any]) -> str | None:
    """'workspace 17' (the parent option and id that show/watch/resolve take), or None."""
    kind = op.get("type")
    parent = PARENTS.get(kind) if isinstance(kind, str) else None
    if parent is None or op.get(parent[1]) in (None, ""):
        return None
    return f"{PARENT_OPTION[parent[0]].replace('_', '-')} {op.get(parent[1])}"


def table_row(op: dict[str, Any]) -> dict[str, Any]:
    """The table columns: id, type, parent, status, conflict folder, user, created,
    updated."""
    return {"id": op.get("id"), "type": op.get("type"), "parent": parent_of(op),
            "status": op.get("status"),
            "conflict_folder": conflict_folder(op), "user_id": op.get("user_id"),
            "created_at": op.get("created_at"), "updated_at": op.get("updated_at")}


@dataclass(slots=True)
class WatchResult:
    operation: dict[str, Any]
    timed_out: bool
    elapsed: float

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.operation.get("status") == "success"


def watch_operation(
    client: Client,
    ref: OpRef,
    *,
    interval: float = 2.0,
    timeout: float | None = None,
    on_update: Callable[[dict[str, Any], float], None] | None = None,
    first: dict[str, Any] | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> WatchResult:
    """Poll until success, stopped or aborted (or ``timeout`` seconds).

    ``on_update(op, elapsed)`` is called after every poll. ``first`` is an operation
    already fetched (saves one request). The interval grows gently (x1.5, up to 4x
    the one given) while nothing changes, and resets on every change.
    """
    if interval <= 0:
        raise UsageError("--interval must be more than 0 seconds")
    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    from nodecli import interrupt

    start = clock()
    op = first if first is not None else get_operation(client, ref)
    delay = interval
    last = (op.get("status"), op.get("updated_at"))
    while True:
        elapsed = clock() - start
        if on_update:
            on_update(op, elapsed)
        status = op.get("status")
        if isinstance(status, str) and status in FINAL:
            return WatchResult(op, False, elapsed)
        if op.get("status") not in STATUSES:
            raise RemoteError(f"operation {ref.op_id}: unknown status "
                              f"{str(op.get('status'))[:40]!r}")
        if timeout is not None and elapsed >= timeout:
            return WatchResult(op, True, elapsed)
        wait = delay if timeout is None else max(0.0, min(delay, timeout - elapsed))
        # (by default not time.sleep: a signal another thread takes ends it at once too)
        (sleep or interrupt.wait)(wait)
        op = get_operation(client, ref)
        now = (op.get("status"), op.get("updated_at"))
        delay = interval if now != last else min(delay * 1.5, interval * 4)
        last = now


def update_operation(client: Client, ref: OpRef, body: dict[str, Any]) -> Any:
    """PUT exactly ``body`` on the operation (the escape hatch for properties
    interface.md does not show); the service's answer as it came."""
    if not isinstance(body, dict):
        raise UsageError("the PUT body must be a JSON object")
    return client.json("PUT", ref.path, json_body=body)
