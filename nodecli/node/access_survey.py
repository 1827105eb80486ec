"""What the access model needs from a node, asked as the access key (which sees its
whole storage), and what a bearer token is shown, asked as the token (``--verify``).

* the key: ``GET /access_keys/self`` (``storage.path``, ``root_file_id``);
* a path's folders and their permissions: the path resolved one component at a time
  (``GET /files/{id}/files``), then ``GET /permissions?file_id=ID`` (with those the node
  counts as inherited: a permission whose file is none of the path's is above the
  key's storage);
* the whole storage: every folder listed, every entry's own permissions
  (``inherited=false``), and the root's inherited ones. Bounded: at most
  :data:`MAX_ENTRIES` entries.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from nodecli.errors import NodecliError, NotFoundError, RemoteError, UsageError
from nodecli.node.access_model import LEVELS, Model, Perm, Rules, join, norm
from nodecli.node.paths import MAX_COMPONENTS, split_path
from nodecli.node.permissions import entries, list_permissions

if TYPE_CHECKING:
    from nodecli.http.client import Client

MAX_ENTRIES = 100_000


@dataclass(slots=True)
class Entry:
    path: str  # node path
    id: str
    type: str  # folder or file


@dataclass(slots=True)
class Survey:
    """An access key's storage as the key sees it (entries by node path) and the
    permissions gathered."""

    access_key: str
    root: str
    root_id: str
    entries: dict[str, Entry] = field(default_factory=dict)
    perms: list[Perm] = field(default_factory=list)

    def model(self, rules: Rules | None = None) -> Model:
        return Model(self.access_key, self.root, self.perms, rules or Rules())

    def children(self, path: str) -> list[Entry]:
        prefix = path.rstrip("/") + "/"
        # not the folder itself: the node's root ``/`` starts with its own prefix
        return [e for p, e in self.entries.items()
                if p.startswith(prefix) and p != path and "/" not in p[len(prefix):]]


def key_root(client: Client) -> tuple[str, str, str]:
    """(access key id, storage path, root file id) of the key this client logs in with."""
    from nodecli.node.access_keys import self_key

    key = self_key(client)
    storage = key.get("storage")
    path = storage.get("path") if isinstance(storage, dict) else None
    root = key.get("root_file_id")
    if not isinstance(path, str) or not path.startswith("/"):
        raise RemoteError("the node did not say the access key's storage path "
                          "(storage.path in GET /access_keys/self)")
    if not isinstance(root, str | int) or isinstance(root, bool) or str(root) == "":
        raise RemoteError("the node did not say the access key's root_file_id")
    ak = key.get("id")
    ak_id = str(ak) if isinstance(ak, str | int) and not isinstance(ak, bool) else ""
    return ak_id or (client.endpoint.auth.access_key or ""), norm(path), str(root)


def to_perm(raw: dict[str, Any], paths: dict[str, str]) -> Perm | None:
    """A node's permission object as the model's (None: not one it can read). ``paths``
    maps file ids to node paths; a file id it lacks is above the key's storage."""
    kind, holder = raw.get("access_type"), raw.get("access_id")
    levels = raw.get("access_levels")
    if kind not in ("user", "group") or not isinstance(holder, str | int) or \
            isinstance(holder, bool):
        return None
    known = tuple(x for x in levels if x in LEVELS) if isinstance(levels, list) else ()
    file_id = str(raw.get("file_id", ""))
    return Perm(str(raw.get("id", "")), paths.get(file_id), str(kind), str(holder),
                known, file_id)


def _own_perms(client: Client, file_id: str, paths: dict[str, str]) -> list[Perm]:
    out = []
    for raw in list_permissions(client, file_id, inherited=False):
        perm = to_perm(raw, paths)
        if perm is not None and perm.path is not None:
            out.append(perm)
    return out


def lineage(client: Client, relative_path: str) -> tuple[Survey, str]:
    """The key, the path's folders from the storage root down, and every permission the
    node counts at the path (its own and inherited); (survey, node path)."""
    parts = split_path(relative_path)
    ak, root, root_id = key_root(client)
    survey = Survey(ak, root, root_id)
    survey.entries[root] = Entry(root, root_id, "folder")
    current, here, walked = root_id, root, ""
    for part in parts:
        match = next((e for e in entries(client, current) if e.get("name") == part), None)
        walked += "/" + part
        if match is None or match.get("id") in (None, ""):
            raise NotFoundError(f"{walked}: no such file or folder in access key {ak}'s "
                                f"storage ({root})",
                                hint="paths start at the access key's storage root")
        here = join(here, part)
        current = str(match["id"])
        survey.entries[here] = Entry(here, current, str(match.get("type") or "file"))
    paths = {e.id: p for p, e in survey.entries.items()}
    for raw in list_permissions(client, current, inherited=True):
        perm = to_perm(raw, paths)
        if perm is not None:
            survey.perms.append(perm)
    return survey, here


def whole(client: Client, max_entries: int = MAX_ENTRIES) -> Survey:
    """Every entry of the key's storage and every permission on them (and above)."""
    ak, root, root_id = key_root(client)
    survey = Survey(ak, root, root_id)
    survey.entries[root] = Entry(root, root_id, "folder")
    queue: deque[tuple[str, str]] = deque([(root, root_id)])
    while queue:
        path, fid = queue.popleft()
        for item in entries(client, fid):
            name, item_id = item.get("name"), item.get("id")
            if not isinstance(name, str) or not name or "/" in name or name in (".", "..") \
                    or item_id in (None, ""):
                continue
            child = join(path, name)
            if child in survey.entries:
                continue
            if child.count("/") > MAX_COMPONENTS:
                raise RemoteError(f"access key {ak}'s storage goes deeper than "
                                  f"{MAX_COMPONENTS} folders: a node that lists a folder "
                                  "inside itself?")
            if len(survey.entries) >= max_entries:
                raise NodecliError(f"access key {ak}'s storage holds more than "
                                   f"{max_entries} entries: too many to survey")
            kind = "folder" if item.get("type") in ("folder", "directory") else "file"
            survey.entries[child] = Entry(child, str(item_id), kind)
            if kind == "folder":
                queue.append((child, str(item_id)))
    paths = {e.id: p for p, e in survey.entries.items()}
    seen: set[str] = set()
    for entry in survey.entries.values():
        for perm in _own_perms(client, entry.id, paths):
            if perm.id not in seen:
                seen.add(perm.id)
                survey.perms.append(perm)
    for raw in list_permissions(client, root_id, inherited=True):
        above = to_perm(raw, paths)
        if above is not None and above.id not in seen and above.path is None:
            seen.add(above.id)
            survey.perms.append(above)
    return survey


# -- what the node shows a token ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Seen:
    """What a token is shown of one entry: visible (GET /files/{id}), and for a folder
    the names its listing holds (None: the listing was refused)."""

    visible: bool
    names: frozenset[str] | None = None


def shown(token_client: Client, entry: Entry) -> Seen:
    from nodecli.errors import AuthError

    fid = quote(entry.id, safe="")
    try:
        token_client.json("GET", f"/files/{fid}")
    except (NotFoundError, AuthError) as exc:
        if getattr(exc, "status", None) in (403, 404):
            return Seen(False)
        raise
    if entry.type != "folder":
        return Seen(True)
    try:  # (the pages are read as the names are taken, so inside the try)
        names = frozenset(str(e.get("name")) for e in entries(token_client, entry.id))
    except (NotFoundError, AuthError) as exc:
        if getattr(exc, "status", None) in (403, 404):
            return Seen(True, None)
        raise
    return Seen(True, names)


def expected(model: Model, survey: Survey, subject: Any, entry: Entry) -> Seen:
    """What the model says the node shows ``subject`` of ``entry``: visible or not; a
    listable folder lists everything, one that is only on the way lists what leads to a
    permission, one where levels but not list are held refuses its listing."""
    if not model.visible(subject, entry.path):
        return Seen(False)
    if entry.type != "folder":
        return Seen(True)
    kids = survey.children(entry.path)
    if model.listable(subject, entry.path):
        return Seen(True, frozenset(e.path.rsplit("/", 1)[-1] for e in kids))
    if model.applicable(subject, entry.path):
        return Seen(True, None)
    return Seen(True, frozenset(e.path.rsplit("/", 1)[-1] for e in kids
                                if model.visible(subject, e.path)))


@dataclass(frozen=True, slots=True)
class Disagreement:
    path: str
    check: str  # "visible" or "listing"
    node: str
    model: str


def compare(model: Model, survey: Survey, subject: Any, token_client: Client,
            paths: list[str]) -> tuple[int, list[Disagreement]]:
    """Ask the node, as the token, about each path; (checks made, disagreements)."""
    checks = 0
    out: list[Disagreement] = []
    for path in paths:
        entry = survey.entries.get(path)
        if entry is None:
            raise UsageError(f"{path} is not in the surveyed storage")
        want = expected(model, survey, subject, entry)
        got = shown(token_client, entry)
        checks += 1
        if got.visible != want.visible:
            out.append(Disagreement(path, "visible", _yes(got.visible), _yes(want.visible)))
            continue
        if entry.type == "folder" and got.visible:
            checks += 1
            if got.names != want.names:
                out.append(Disagreement(path, "listing", _names(got.names),
                                        _names(want.names)))
    return checks, out


def _yes(flag: bool) -> str:
    return "visible" if flag else "hidden"


def _names(names: frozenset[str] | None) -> str:
    if names is None:
        return "refused"
    return "[" + ", ".join(sorted(names)) + "]"
