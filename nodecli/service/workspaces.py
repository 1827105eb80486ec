"""Creating a workspace: the POST answers 202 with an operation to watch (interface.md 4.4;
its path is not shown there, so it is a :class:`~nodecli.config.service_paths.ServicePaths`
default a profile or a run can override)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nodecli.errors import RemoteError, UsageError

if TYPE_CHECKING:
    from nodecli.http.client import Client
from nodecli.config.service_paths import DEFAULT_PATHS, ServicePaths
from nodecli.service.operations import OpRef, as_operation


@dataclass(slots=True)
class Created:
    """What POST /workspaces answered: the operation to follow (202) or the resource."""

    status: int
    ref: OpRef | None = None
    operation: dict[str, Any] | None = None
    resource: Any = None


def check_workspace_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise UsageError("the workspace name is empty")
    if len(name) > 255:
        raise UsageError("the workspace name is longer than 255 characters")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") for c in name):
        raise UsageError("the workspace name contains control characters")
    return name


def workspace_body(name: str | None = None, fields: dict[str, Any] | None = None,
                   body: dict[str, Any] | None = None) -> dict[str, Any]:
    """The POST body. interface.md does not show it: ``{"name": NAME}`` is a guess, to
    which ``fields`` add (or replace) properties; ``body`` replaces everything."""
    if body is not None:
        if name is not None or fields:
            raise UsageError("--body gives the whole request body: leave out --name and "
                             "--field")
        return body
    if name is None:
        raise UsageError("give the workspace's --name (or the whole request with --body)")
    return {"name": check_workspace_name(name), **(fields or {})}


def create_workspace(client: Client, body: dict[str, Any],
                     paths: ServicePaths = DEFAULT_PATHS) -> Created:
    """POST the body to the workspaces collection; on 202 follow ``Location`` to the
    operation (its path, whatever it is, is kept for later requests)."""
    resp = client.request("POST", paths.create_workspace, json_body=body,
                          expect=(200, 201, 202))
    if resp.status != 202:
        return Created(resp.status, resource=resp.json() if resp.body else None)
    location = resp.header("location")
    if not location:
        raise RemoteError("the service answered 202 Accepted without a Location header")
    from urllib.parse import urljoin

    url = urljoin(resp.url, location)
    ref = OpRef.from_location(location, "workspaces", paths, against=resp.url)
    op = as_operation(client.json("GET", url), location)
    return Created(202, ref=ref, operation=op)
