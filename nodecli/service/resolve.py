"""Resolving stopped operations (interface.md 4.4): find them, decide, send, watch.

A stopped operation is resolved with ``PUT`` carrying exactly the properties chosen
(:class:`Choice`): on a terminal, "use existing" and "rename" also restart the operation
(``"retry": true``), so "use existing" applied to all is the one body interface.md 4.4
documents as restarting it: ``{"use_existing": true, "retry": true, "apply_to_all": true}``.
Skip sends nothing. Decisions come from a callback (the command layer asks, or applies
the flags), so this module never prompts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nodecli.errors import NodecliError, UsageError

if TYPE_CHECKING:
    from nodecli.http.client import Client
from nodecli.config.service_paths import DEFAULT_PATHS, ServicePaths
from nodecli.http.checks import check_id
from nodecli.service.operations import (
    OpRef,
    as_operation,
    check_folder_name,
    get_operation,
    list_operations,
    parent_ref,
    stop_reason,
    watch_operation,
)

USE_EXISTING, RENAME, RETRY, SKIP = "use-existing", "rename", "retry", "skip"
CHOICES = (USE_EXISTING, RENAME, RETRY, SKIP)


@dataclass(frozen=True, slots=True)
class Choice:
    """How to resolve one stopped operation: the PUT properties to send.

    ``apply_to_all`` None leaves the property out. Build one with :meth:`from_flags`
    (exactly the properties given) or :meth:`prompted` (a terminal answer: use existing
    and rename also restart the operation, ``"retry": true``).
    """

    action: str  # one of CHOICES: how the choice is shown
    use_existing: bool = False
    folder_name: str | None = None
    retry: bool = False
    apply_to_all: bool | None = None

    def __post_init__(self) -> None:
        if self.action not in CHOICES:
            raise ValueError(f"unknown choice {self.action!r}")
        if self.use_existing and self.folder_name is not None:
            raise ValueError("use_existing and folder_name exclude each other")

    @classmethod
    def from_flags(cls, *, use_existing: bool = False, folder_name: str | None = None,
                   retry: bool = False, apply_to_all: bool | None = None) -> Choice | None:
        """The choice the flags make (None when they make none): the body carries
        exactly the properties given. Only --use-existing with --folder-name is refused."""
        if use_existing and folder_name is not None:
            raise UsageError("--use-existing and --folder-name exclude each other (keep the "
                             "existing folder, or create one under a new name)")
        if folder_name is not None:
            check_folder_name(folder_name)
        if not (use_existing or folder_name is not None or retry):
            return None
        action = USE_EXISTING if use_existing else RENAME if folder_name is not None else RETRY
        return cls(action, use_existing, folder_name, retry, apply_to_all)

    @classmethod
    def prompted(cls, action: str, folder_name: str | None = None,
                 apply_to_all: bool | None = None) -> Choice:
        """A terminal answer. Every answer but skip restarts the operation. (The answer
        to an internal_server_error asks nothing about the others: ``apply_to_all``
        None, left out.)"""
        if action == SKIP:
            return cls(SKIP)
        return cls(action, action == USE_EXISTING, folder_name if action == RENAME else None,
                   True, apply_to_all)

    def body(self, op: dict[str, Any]) -> dict[str, Any] | None:
        """The PUT body for ``op`` (None for skip): the properties of this choice, in
        the order interface.md lists them. An internal_server_error takes retry only."""
        if self.action == SKIP:
            return None
        body: dict[str, Any] = {}
        if is_conflict(op):
            if self.use_existing:
                body["use_existing"] = True
            if self.folder_name is not None:
                body["folder_name"] = self.folder_name
        elif not self.retry:
            raise ValueError("only retry applies to an internal_server_error")
        if self.retry:
            body["retry"] = True
        if self.apply_to_all is not None:
            body["apply_to_all"] = self.apply_to_all
        return body

    def label(self) -> str:
        parts = []
        if self.use_existing:
            parts.append("use existing folder")
        if self.folder_name is not None:
            parts.append(f"rename to {self.folder_name!r}")
        if self.action == SKIP:
            parts.append("skip")
        elif self.action == RETRY or (self.retry and not parts):
            parts.append("retry")
        return ", ".join(parts)

    def fits(self, op: dict[str, Any]) -> bool:
        return is_conflict(op) or self.retry or self.action == SKIP


def is_conflict(op: dict[str, Any]) -> bool:
    data = op.get("data")
    return isinstance(data, dict) and data.get("type") == "folder_conflict"


@dataclass(slots=True)
class Outcome:
    """One row of the resolve summary."""

    ref: OpRef
    operation: dict[str, Any]
    choice: str = ""
    final_status: str = ""
    detail: str = ""
    sent: dict[str, Any] | None = None
    error: NodecliError | None = None
    resumed: bool = False

    @property
    def ok(self) -> bool:
        return self.final_status == "success"

    def row(self) -> dict[str, Any]:
        return {"operation": self.ref.op_id, "type": self.operation.get("type"),
                "parent": f"{self.ref.collection}/{self.ref.parent_id}",
                "choice": self.choice, "final_status": self.final_status,
                "detail": self.detail, "body": self.sent}


def find_stopped(client: Client, *, op_ids: Sequence[str] = (),
                 workspace: str | None = None,
                 workspace_membership: str | None = None,
                 group_membership: str | None = None,
                 paths: ServicePaths = DEFAULT_PATHS) -> list[dict[str, Any]]:
    """The stopped operations to resolve: those named, or every stopped one in scope.

    Named operations need their parent (``--workspace``/``--workspace-membership``/
    ``--group-membership``) unless they can be found in the caller's top-level list. A
    named operation that is not stopped stays in the result (reported, not resolved).
    Without names, a group membership's operations come from the top-level list
    filtered by ``group_membership_id`` (interface.md shows no nested list for it).
    """
    parents = {"workspace": workspace, "workspace_membership": workspace_membership,
               "group_membership": group_membership}
    if sum(v is not None for v in parents.values()) > 1:
        raise UsageError("give at most one of --workspace, --workspace-membership and "
                         "--group-membership")
    ids = [check_id(i, "operation id") for i in op_ids]
    if ids and any(v is not None for v in parents.values()):
        ref0 = parent_ref("x", paths=paths, **parents)
        return [get_operation(client, OpRef(ref0.collection, ref0.parent_id, i, ref0.base))
                for i in ids]
    ops = list_operations(client, parents, paths=paths)
    if ids:
        by_id = {str(op.get("id")): op for op in ops}
        missing = [i for i in ids if i not in by_id]
        if missing:
            from nodecli.errors import NotFoundError

            raise NotFoundError(
                f"operation {missing[0]} is not in your operations list",
                hint="name its parent: --workspace ID, --workspace-membership ID or "
                     "--group-membership ID")
        return [by_id[i] for i in ids]
    return [op for op in ops if op.get("status") == "stopped"]


def resolve_operations(
    client: Client,
    operations: Sequence[dict[str, Any]],
    decide: Callable[[dict[str, Any], int, int], Choice],
    *,
    interval: float = 2.0,
    timeout: float | None = None,
    rounds: int = 1,
    paths: ServicePaths = DEFAULT_PATHS,
    on_sent: Callable[[Outcome], None] | None = None,
    on_update: Callable[[Outcome, float], None] | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[Outcome]:
    """Decide, PUT, then watch every resumed operation to its end.

    ``decide(op, index, total)`` returns the :class:`Choice` for one stopped
    operation (it may prompt; an exception such as KeyboardInterrupt stops everything
    and leaves the remaining operations untouched). A PUT that fails is recorded on
    that operation's :class:`Outcome` and the others go on. ``on_sent`` reports each
    PUT's result (the returned status) as it happens. With ``rounds`` > 1, operations
    that resumed and then stopped again (a second conflict) are decided again, up to
    ``rounds`` times in all.
    """
    outcomes: list[Outcome] = []
    pending: list[Outcome] = []
    for op in operations:
        out = Outcome(OpRef.of(op, paths), op)
        outcomes.append(out)
        if op.get("status") == "stopped":
            pending.append(out)
        else:
            out.choice = "-"
            out.final_status = str(op.get("status"))
            out.detail = "not stopped: nothing to resolve"
    for _ in range(max(1, rounds)):
        for index, out in enumerate(pending, 1):
            _decide_and_send(client, out, decide(out.operation, index, len(pending)))
            if on_sent and out.sent is not None:
                on_sent(out)
        for out in pending:
            if out.resumed:
                _watch_outcome(client, out, interval=interval, timeout=timeout,
                               on_update=on_update, sleep=sleep, clock=clock)
        pending = [o for o in pending if o.resumed and o.error is None
                   and o.final_status == "stopped"]
        if not pending:
            break
    return outcomes


def _decide_and_send(client: Client, out: Outcome, choice: Choice) -> None:
    op = out.operation
    label = choice.label() if choice.fits(op) else "skip"
    out.choice = f"{out.choice}, then {label}" if out.choice else label
    out.sent, out.resumed, out.error = None, False, None
    if not choice.fits(op):
        out.final_status = "stopped"
        out.detail = f"{stop_reason(op)}: only retry or skip apply"
        return
    body = choice.body(op)
    if body is None:
        out.final_status = "stopped"
        out.detail = f"skipped ({stop_reason(op)})"
        return
    out.sent = body
    try:
        answer = as_operation(client.json("PUT", out.ref.path, json_body=body), out.ref.path)
    except NodecliError as exc:
        out.error = exc
        out.final_status = "stopped"
        status = getattr(exc, "status", None)
        out.detail = (f"PUT failed ({status})" if status else "PUT failed") + f": {exc.message}"
        return
    out.operation = answer
    out.final_status = str(answer.get("status"))
    out.resumed = answer.get("status") == "running"
    out.detail = "" if out.resumed or out.final_status == "success" else stop_reason(answer)


def _watch_outcome(client: Client, out: Outcome, *, interval: float, timeout: float | None,
                   on_update: Callable[[Outcome, float], None] | None,
                   sleep: Callable[[float], None] | None,
                   clock: Callable[[], float]) -> None:
    try:
        result = watch_operation(
            client, out.ref, interval=interval, timeout=timeout, first=out.operation,
            on_update=(lambda op, t: on_update(out, t)) if on_update else None,
            sleep=sleep, clock=clock)
    except NodecliError as exc:
        out.final_status = "unknown"
        out.detail = f"watch failed: {exc.message}"
        out.error = exc
        return
    out.operation = result.operation
    out.final_status = str(result.operation.get("status"))
    if result.timed_out:
        out.detail = f"still running after {result.elapsed:.0f} s"
    elif out.final_status != "success":
        out.detail = stop_reason(result.operation)
