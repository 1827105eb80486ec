"""Permissions on a node's files, and file paths resolved to file ids.

Facts from the public documentation of this node family: ``POST /permissions`` with
``{"file_id", "access_type", "access_id", "access_levels", "tags"}`` (the fields of the
permission event data, interface.md 2.2), ``GET /permissions?file_id=ID``
(``inherited=false`` for the file's own only), ``GET|PUT|DELETE /permissions/{id}``;
``GET /files/{id}`` and ``GET /files/{id}/files`` (a folder's entries, each with ``id``,
``name``, ``type``). An access key's tree starts at its ``root_file_id``; a path is
resolved by walking from there, one component at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from nodecli.errors import AuthError, NotFoundError, RemoteError, UsageError, shorten
from nodecli.node import listed
from nodecli.node.paths import check_id, root_file_id, split_path

if TYPE_CHECKING:
    from nodecli.http.client import Client

ACCESS_LEVELS = ("list", "read", "write", "delete", "mkdir", "rename", "preview")
ACCESS_TYPES = ("user", "group")


def parse_levels(text: str) -> list[str]:
    """``list,read`` -> ["list", "read"] (known levels, no repeats, in the given order)."""
    out: list[str] = []
    for raw in str(text).split(","):
        level = raw.strip().lower()
        if not level:
            continue
        if level not in ACCESS_LEVELS:
            raise UsageError(f"unknown access level {raw.strip()[:30]!r} (levels: "
                             f"{', '.join(ACCESS_LEVELS)})")
        if level not in out:
            out.append(level)
    if not out:
        raise UsageError(f"--levels needs at least one of {', '.join(ACCESS_LEVELS)}")
    return out


def entries(client: Client, folder_id: str) -> Iterator[dict[str, Any]]:
    """A folder's entries as the node gives them, every page, read as they are needed:
    the pages are followed by node/files' one pager, however the node pages (a Link, a
    total, or page numbers to an empty page). Entries that are not objects are skipped;
    the callers check the rest, each as much as it needs (``files`` reads listings
    strictly: node/files.py)."""
    from nodecli.node.files import folder_pages

    for _what, items in folder_pages(client, folder_id):
        yield from (item for item in items if isinstance(item, dict))


def resolve_path(client: Client, path: str) -> str:
    """The file id of ``path``, walking from the access key's root; exit 5 naming the
    first component that is not there."""
    parts = split_path(path)
    current = root_file_id(client)
    walked = ""
    token = client.endpoint.auth.kind == "bearer"
    for part in parts:
        try:  # the first entry of that name: the pages after it are not read
            match = next((e for e in entries(client, current) if e.get("name") == part), None)
        except (NotFoundError, AuthError) as exc:
            if not token or getattr(exc, "status", None) not in (403, 404):
                raise
            match = None  # a folder the token's user may not list hides what is in it
        if match is None or match.get("id") in (None, ""):
            where = shorten(walked + '/' + part)
            stops = f"the path stops at {shorten(walked or '/')}"
            if token:
                # a token's user lists only what it holds a permission on: a file that
                # exists may simply be hidden from it
                raise NotFoundError(
                    f"{where}: not visible to this bearer token ({stops}); it does not "
                    "exist, or the token's user has no permission on it",
                    hint="the access key itself (--access-key AK with its secret) sees "
                         "every file of its storage")
            raise NotFoundError(f"{where}: no such file or folder ({stops})",
                                hint="paths start at the access key's storage root")
        walked += "/" + part
        current = str(match["id"])
    return current


def check_target(path: str | None, file_id: str | None) -> None:
    """A PATH or a --file-id, exactly one, well-formed: checked before any request."""
    if (path is None) == (file_id is None):
        raise UsageError("give a PATH or --file-id ID (one of the two)")
    if path is not None:
        split_path(path)
    else:
        check_id(file_id or "", "--file-id")


def file_id_for(client: Client, path: str | None, file_id: str | None) -> str:
    check_target(path, file_id)
    return file_id if file_id is not None else resolve_path(client, path or "")


def list_permissions(client: Client, file_id: str, inherited: bool = True) -> list[dict[str, Any]]:
    params = [("file_id", file_id)]
    if not inherited:
        params.append(("inherited", "false"))
    return listed(client.json("GET", "/permissions", params=params), "permissions",
                  "GET /permissions")


def grant(client: Client, file_id: str, access_type: str, access_id: str,
          levels: list[str], tags: Any = None) -> dict[str, Any]:
    if access_type not in ACCESS_TYPES:
        raise UsageError("the permission is for a --user or a --group")
    body = {"file_id": file_id, "access_type": access_type,
            "access_id": check_id(access_id, f"--{access_type}"),
            "access_levels": list(levels), "tags": tags}
    data = client.json("POST", "/permissions", json_body=body, expect=(200, 201))
    return data if isinstance(data, dict) else body


def get_permission(client: Client, perm_id: str) -> dict[str, Any]:
    data = client.json("GET", f"/permissions/{quote(check_id(perm_id, 'permission id'), safe='')}")
    if not isinstance(data, dict):
        raise RemoteError("GET /permissions/{id} did not answer with an object")
    return data


def revoke(client: Client, perm_id: str) -> None:
    client.request("DELETE",
                   f"/permissions/{quote(check_id(perm_id, 'permission id'), safe='')}",
                   expect=(200, 204))


def modify(client: Client, perm_id: str, levels: list[str]) -> dict[str, Any]:
    """PUT /permissions/{id} with the new access levels (the rest of it stays)."""
    path = f"/permissions/{quote(check_id(perm_id, 'permission id'), safe='')}"
    data = client.json("PUT", path, json_body={"access_levels": list(levels)},
                       expect=(200, 204))
    return data if isinstance(data, dict) else {"id": perm_id, "access_levels": list(levels)}


def own_permission(client: Client, file_id: str, access_type: str,
                   access_id: str) -> dict[str, Any]:
    """The file's own permission for that user or group (exit 5 when it has none)."""
    mine = [p for p in list_permissions(client, file_id, inherited=False)
            if p.get("access_type") == access_type and str(p.get("access_id")) == access_id
            and str(p.get("file_id", file_id)) == file_id]
    if not mine:
        raise NotFoundError(f"no permission for {access_type} {access_id!r} on that file",
                            hint="grant one with 'nodecli permission grant'")
    return mine[0]


def revoke_for(client: Client, file_id: str, access_type: str, access_id: str) -> list[str]:
    """Delete the file's own permissions for that user or group; their ids."""
    mine = [p for p in list_permissions(client, file_id, inherited=False)
            if p.get("access_type") == access_type and str(p.get("access_id")) == access_id
            and str(p.get("file_id", file_id)) == file_id]
    if not mine:
        raise NotFoundError(f"no permission for {access_type} {access_id!r} on that file")
    for p in mine:
        revoke(client, str(p.get("id")))
    return [str(p.get("id")) for p in mine]
