"""The node's storage as the emulator models it, and who may see what.

Visibility follows interface.md 5.1 for every route, ``/events`` included (through
:func:`event_filter`): a node user sees what its transfer user's restriction or docroot
allows; an access key sees its own storage path; a bearer token sees what lies inside
its access key's path AND where its user id or one of its group ids holds a permission
(a permission on a folder covers what is inside). Events with no file are tenant-wide
(5.1.2: "events are visible to any user in the same tenant space") except for bearer
tokens, which see only events tied to a file they hold a permission on.

Per-key activity logging (6.2, nodes 3.8.0 and later): ``configuration.
activity_event_logging`` of the access key a request authenticates with overrides the
node setting in both directions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nodecli.emulator.server import HttpError, Principal
from nodecli.emulator.state import AccessKey, NodeState

ACCESS_LEVELS = ("list", "read", "write", "delete", "mkdir", "rename", "preview")
LOGGING_KEY = "activity_event_logging"  # in the access key's "configuration" object
PER_KEY_LOGGING = (3, 8, 0)


@dataclass(slots=True)
class FileNode:
    id: str
    path: str
    type: str  # "folder" or "file"
    size: int = 0
    mtime: float | None = None  # seconds since the epoch

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1] or "/"

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type,
                               "path": self.path, "size": self.size}
        if self.mtime is not None:
            import time

            out["mtime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.mtime))
        return out


@dataclass(slots=True)
class Permission:
    id: str
    file_id: str
    access_type: str  # user or group
    access_id: str
    access_levels: list[str]
    tags: Any = None
    # the access key that set it: a key lists its own (GET /permissions without file_id)
    access_key: str | None = None

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "file_id": self.file_id, "access_type": self.access_type,
                "access_id": self.access_id, "access_levels": list(self.access_levels),
                "tags": self.tags}


@dataclass(slots=True)
class Storage:
    """The emulated storage: a file tree with ids, and the permissions on it."""

    by_id: dict[str, FileNode] = field(default_factory=dict)
    by_path: dict[str, FileNode] = field(default_factory=dict)
    permissions: dict[str, Permission] = field(default_factory=dict)
    file_ids: Any = field(default_factory=lambda: itertools.count(1000))
    perm_ids: Any = field(default_factory=lambda: itertools.count(1))
    # playing a faulty node: a permission on /data/fin also covers /data/finance (the
    # folder matched as a string prefix, not component by component)
    prefix_match: bool = False
    # the tree made on demand (nodecli.emulator.generated), and how listings are paged
    generated: Any = None
    paging: Any = None

    def reset(self) -> None:
        self.by_id.clear()
        self.by_path.clear()
        self.permissions.clear()
        self.file_ids = itertools.count(1000)
        self.perm_ids = itertools.count(1)
        self.prefix_match = False
        self.generated = None
        self.paging = None

    def generate(self, spec: Any) -> None:
        """Mount the generated tree of ``spec`` (a generated.TreeSpec; None: none)."""
        from nodecli.emulator.generated import GeneratedTree

        self.generated = GeneratedTree(spec, FileNode) if spec is not None else None
        if spec is not None:
            self.ensure(spec.at.rsplit("/", 1)[0] or "/")

    def get(self, file_id: str) -> FileNode | None:
        """The entry with this id, in memory or generated."""
        node = self.by_id.get(file_id)
        if node is None and self.generated is not None:
            node = self.generated.node(file_id)
        return node

    def at_path(self, path: str) -> FileNode | None:
        if self.generated is not None and within(path, self.generated.spec.at):
            return self.generated.by_path(path)
        return self.by_path.get(path)

    def ensure(self, path: str, kind: str = "folder", size: int = 0) -> FileNode:
        """The node at ``path`` (an absolute path), made with its parent folders."""
        path = normalize(path)
        node = self.at_path(path)
        if node is not None:
            return node
        if self.generated is not None and within(path, self.generated.spec.at):
            raise HttpError(409, f"{path} is inside the generated tree, which is read-only")
        if path != "/":
            self.ensure(path.rsplit("/", 1)[0] or "/")
        node = FileNode(str(next(self.file_ids)), path, kind, size)
        self.by_id[node.id] = node
        self.by_path[path] = node
        return node

    def children(self, node: FileNode) -> list[FileNode]:
        """The folder's entries, held in memory (see :meth:`count` for generated ones)."""
        if self.generated is not None and node.id.startswith("g"):
            return list(self.generated.children(node))
        prefix = node.path.rstrip("/") + "/"
        found = [n for p, n in self.by_path.items()
                 if p.startswith(prefix) and "/" not in p[len(prefix):] and p != prefix]
        if self.generated is not None and node.path == (
                self.generated.spec.at.rsplit("/", 1)[0] or "/"):
            found.append(self.generated.node("g"))
        return sorted(found, key=lambda n: n.path)

    def lineage(self, file_id: str) -> list[str]:
        """The file's id and its folders' ids, up to the root."""
        node = self.get(file_id)
        if node is None:
            return [file_id]
        out = []
        path = node.path
        if self.generated is not None and node.id.startswith("g"):
            out = self.generated.lineage(node.id)
            path = self.generated.spec.at.rsplit("/", 1)[0] or "/"
        while True:
            n = self.by_path.get(path)
            if n is not None:
                out.append(n.id)
            if path == "/":
                return out
            path = path.rsplit("/", 1)[0] or "/"


def normalize(path: str) -> str:
    parts = [p for p in str(path).split("/") if p not in ("", ".")]
    if ".." in parts:
        raise HttpError(400, "a path must not contain '..'")
    return "/" + "/".join(parts)


def safe_normalize(path: str) -> str | None:
    try:
        return normalize(path)
    except HttpError:
        return None


def within(path: str, root: str) -> bool:
    root = normalize(root)
    return root == "/" or path == root or path.startswith(root + "/")


def storage_of(state: NodeState) -> Storage:
    return state.extension("storage", Storage)


def root_of(state: NodeState, ak: AccessKey) -> FileNode:
    node = storage_of(state).ensure(str(ak.storage.get("path") or "/"))
    ak.root_file_id = node.id
    return node


def node_user_matcher(state: NodeState, user: str) -> Callable[[str], bool]:
    """path -> allowed, by the transfer user's docroot or restrictions (file:/// URLs)."""
    xuser = state.transfer_user_of(user)
    if xuser is None:
        return lambda path: False
    if xuser.docroot:
        docroot = xuser.docroot
        return lambda path: within(path, docroot)
    from nodecli.users.restrictions import restriction_matcher

    matches = restriction_matcher(xuser.restrictions)
    return lambda path: matches("file:///" + path)


def bearer_is_admin(principal: Principal, ak_id: str) -> bool:
    """Whether a bearer token is its access key's admin (scope admin:all of that key)."""
    from nodecli.tokens.inspection import has_scope

    scope = principal.claims.get("scope")
    scope = scope if isinstance(scope, str) else ""
    return principal.access_key == ak_id and (
        has_scope(principal.claims, f"node.{ak_id}:admin:all")
        or "admin:all" in scope.split())


def held_permissions(state: NodeState, principal: Principal, file_id: str) -> list[Permission]:
    """The permissions the token's user id or one of its group ids (the token's
    ``group_ids``: every group of the user) holds on the file or a folder above it."""
    st = storage_of(state)
    groups = principal.claims.get("group_ids")
    groups = {str(g) for g in groups} if isinstance(groups, list) else set()
    lineage = set(st.lineage(file_id))
    if st.prefix_match and file_id in st.by_id:
        path = st.by_id[file_id].path
        lineage |= {n.id for p, n in st.by_path.items() if path.startswith(p)}
    return [perm for perm in st.permissions.values()
            if perm.file_id in lineage and (
                (perm.access_type == "user" and perm.access_id == principal.name)
                or (perm.access_type == "group" and perm.access_id in groups))]


def holds_permission(state: NodeState, principal: Principal, file_id: str) -> bool:
    """The token's user id or one of its group ids holds a permission on the file or a
    folder above it."""
    return bool(held_permissions(state, principal, file_id))


def listing_refused(state: NodeState, principal: Principal | None, node: FileNode) -> bool:
    """A bearer token's user holds permissions at (or above) the folder, none with the
    list level: the folder is visible but its listing is refused. (A folder where it holds
    nothing, on the way to a permitted file, lists what leads there.)"""
    if principal is None or principal.kind != "bearer" or \
            bearer_is_admin(principal, principal.access_key or ""):
        return False
    held = held_permissions(state, principal, node.id)
    return bool(held) and not any("list" in p.access_levels for p in held)


def key_path(state: NodeState, principal: Principal) -> str | None:
    ak = state.access_keys.get(principal.access_key or "")
    return str(ak.storage.get("path") or "/") if ak else None


def file_visible(state: NodeState, principal: Principal | None, node: FileNode) -> bool:
    if principal is None:
        return True
    if principal.kind == "node_user":
        return node_user_matcher(state, principal.name)(node.path)
    root = key_path(state, principal)
    if root is None or not within(node.path, root):
        return False
    if principal.kind == "access_key":
        return True
    if principal.kind == "bearer" and bearer_is_admin(principal, principal.access_key or ""):
        return True  # node.AK:admin:all administers the key and its storage
    if principal.kind == "bearer":
        # browsing: a folder on the way to something permitted is visible too
        st = storage_of(state)
        return holds_permission(state, principal, node.id) or any(
            holds_permission(state, principal, n.id) for p, n in st.by_path.items()
            if within(p, node.path)) or (st.generated is not None and any(
                perm.file_id.startswith("g") and (held := st.get(perm.file_id)) is not None
                and within(held.path, node.path) and holds_permission(state, principal, held.id)
                for perm in st.permissions.values()))
    return False


def event_filter(state: NodeState, principal: Principal | None,
                 ) -> Callable[[str | None, str | None], bool] | None:
    """A predicate (file_id, path) -> visible for this caller's events; None: all."""
    if principal is None:
        return None
    st = storage_of(state)

    def path_of(file_id: str | None, path: str | None) -> str | None:
        if path:
            return path
        node = st.get(file_id or "")
        return node.path if node else None

    if principal.kind == "node_user":
        allowed = node_user_matcher(state, principal.name)

        def node_user(file_id: str | None, path: str | None) -> bool:
            p = path_of(file_id, path)
            norm = safe_normalize(p) if p is not None else None
            return p is None or (norm is not None and allowed(norm))

        return node_user
    root = key_path(state, principal)
    if principal.kind == "access_key":
        def access_key(file_id: str | None, path: str | None) -> bool:
            p = path_of(file_id, path)
            norm = safe_normalize(p) if p is not None else None
            return p is None or (norm is not None and root is not None and within(norm, root))

        return access_key

    def bearer(file_id: str | None, path: str | None) -> bool:
        if not file_id:
            return False
        p = path_of(file_id, path)
        norm = safe_normalize(p) if p is not None else None
        if p is not None and (norm is None or root is None or not within(norm, root)):
            return False
        return holds_permission(state, principal, file_id)

    return bearer


def key_logging(state: NodeState, ak_id: str | None) -> bool | None:
    """The access key's own activity_event_logging (None: not set, or before 3.8.0)."""
    from nodecli.node.info import version_tuple

    if not ak_id or version_tuple(state.version) < PER_KEY_LOGGING:
        return None
    ak = state.access_keys.get(ak_id)
    value = ak.configuration.get(LOGGING_KEY) if ak else None
    return value if isinstance(value, bool) else None


def file_path_for_transfer(spec: dict[str, Any]) -> list[str]:
    """The storage paths a transfer specification names (sources and destinations)."""
    out = []
    for item in spec.get("paths") or []:
        if isinstance(item, dict):
            for key in ("destination", "source"):
                value = item.get(key)
                if isinstance(value, str) and value.startswith("/"):
                    out.append(value)
                    break
    return out
