"""A node's files: every page of a folder, paths resolved to entries, a bounded walk.

The public API (``files ls/find/tree`` and ``files du`` build on it; domain only):

* :class:`Entry`: one file or folder as the node described it, checked (``id``, ``name``,
  ``type``, ``size`` in bytes or None, ``mtime`` an aware datetime or None) with the
  ``path`` nodecli built for it (``/`` is the root the credentials see; a child's path
  is its folder's path + ``/`` + its name). ``entry.is_folder``; ``entry.as_dict()``
  is the machine-output form.
* :func:`check_login` refuses (exit 2) node-user credentials before any request: the
  node serves ``/files`` to an access key or a bearer token only.
* :func:`root` (GET /access_keys/self for ``root_file_id``, then GET /files/{root}),
  :func:`stat` (GET /files/{id}), :func:`resolve` (a PATH walked from the root, one
  component at a time, each folder read page by page until the name is found).
* :func:`list_folder` (GET /files/{id}/files): a generator of every entry of every
  page, one page in memory at a time. It follows ``Link: rel="next"`` when the node
  sends one; else it asks for the next ``page`` while ``X-Total-Count`` says more
  remain, or (no total) until an empty page (see below). A Link back to a page already read, a
  page that repeats one already read, or more than ``max_pages`` pages stop it with
  :class:`ListingError` (exit 6). ``on_page(entries_so_far)`` is called after each page.
  Without Link or total a short page is not the end (a node may cap ``per_page``): on to
  an empty page, unless a :class:`Paging` shared by the listings of one walk learnt the
  node's habits (it names next pages by Link; its largest page that more followed).
* :func:`walk`: the entries below a folder, depth first (a folder, then what it holds),
  iterative (no recursion limit), at most ``max_depth`` levels down; its memory is one
  open page per level. :func:`walk_marked` also says which entry is the last of its
  folder (it reads one entry ahead). A folder that holds one of its own ancestors is a
  loop (exit 6).
  ``on_error(folder, error)`` may take a folder that cannot be read (403/404: it is
  skipped); without it, the error stops the walk.
* :func:`parse_size` (``10M``, ``1.5G``: units of 1024 bytes) for ``--min-size``.

Hostile answers (an entry that is not an object, a missing or unusable name, a size
that is not a whole number of bytes, an unreadable time) raise :class:`ListingError`,
naming the request and the entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from nodecli.errors import NodecliError, NotFoundError, RemoteError, UsageError, shorten

if TYPE_CHECKING:
    from nodecli.http.client import Client

DEFAULT_PER_PAGE = 1000
MAX_PAGES = 1_000_000  # per folder: a billion entries at 1000 a page
MAX_DEPTH = 256  # what a path may hold (nodecli.node.permissions.MAX_COMPONENTS)
MAX_NAME = 4096
SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40,
              "P": 1 << 50}


class ListingError(RemoteError):
    """The node answered a listing with something nodecli cannot take as one."""


@dataclass(frozen=True, slots=True)
class Entry:
    id: str
    name: str
    type: str
    path: str
    size: int | None = None
    mtime: datetime | None = None

    @property
    def is_folder(self) -> bool:
        return self.type in ("folder", "directory")

    def as_dict(self) -> dict[str, Any]:
        from nodecli.timeparse import format_utc

        return {"path": self.path, "name": self.name, "type": self.type, "size": self.size,
                "mtime": format_utc(self.mtime) if self.mtime is not None else None,
                "id": self.id}


def _shown(value: Any) -> str:
    """A server's value as JSON (``"12"``, ``null``, ``1.5``), cut to 60 characters."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return shorten(text, 60)


def _bad(what: str, why: str) -> ListingError:
    return ListingError(f"{what}: {why}",
                        hint="the node sent a listing nodecli cannot read; nothing was "
                             "guessed (report it to the node's administrator)")


def entry_from(data: Any, parent_path: str, what: str) -> Entry:
    """One entry of a listing, checked; ``what`` names it in errors."""
    from nodecli.timeparse import server_time

    if not isinstance(data, dict):
        raise _bad(what, f"an entry is not an object ({type(data).__name__})")
    file_id = data.get("id")
    if isinstance(file_id, bool) or not isinstance(file_id, str | int) or str(file_id) == "" \
            or len(str(file_id)) > 1024:
        raise _bad(what, f"an entry has no usable id ({_shown(file_id)})")
    name = data.get("name")
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\x00" in name \
            or len(name) > MAX_NAME:
        raise _bad(what, f"entry {shorten(file_id, 60)} has no usable name ({_shown(name)})")
    kind = data.get("type")
    if not isinstance(kind, str) or not kind or len(kind) > 64:
        raise _bad(what, f"entry {shorten(name, 60)} has no type ({_shown(kind)})")
    size = data.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise _bad(what, f"entry {shorten(name, 60)}: its size {_shown(size)} is not a "
                         "whole number of bytes")
    raw_time = data.get("mtime")
    mtime = None
    if raw_time is not None:
        mtime = server_time(raw_time) if isinstance(raw_time, str) else None
        if mtime is None:
            raise _bad(what, f"entry {shorten(name, 60)}: its mtime {_shown(raw_time)} "
                             "is not an ISO 8601 time")
    path = parent_path.rstrip("/") + "/" + name
    return Entry(str(file_id), name, kind, path, size, mtime)


# -- the login and the root ---------------------------------------------------------------


def check_login(client: Client) -> None:
    auth = client.endpoint.auth
    if auth.kind == "basic" and not auth.access_key:
        raise UsageError(
            "files are browsed with an access key or a bearer token: a node refuses "
            "node-user credentials on /files",
            hint="--access-key AK (its secret from NODECLI_PASSWORD, --password-stdin or "
                 "the profile), or --bearer-file PATH with --access-key AK")


def stat(client: Client, file_id: str, path: str = "/") -> Entry:
    """GET /files/{id}, as an entry at ``path``."""
    what = f"GET /files/{shorten(file_id, 60)}"
    data = client.json("GET", f"/files/{quote(file_id, safe='')}")
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if isinstance(data, dict):  # the name is the one on the path (a root's is "/" or "")
        data = {**data, "name": name or "root"}
    entry = entry_from(data, "/", what)
    return Entry(entry.id, name or "/", entry.type, path, entry.size, entry.mtime)


def root(client: Client) -> Entry:
    """The root the credentials see (the access key's ``root_file_id``), as ``/``."""
    from nodecli.node.paths import root_file_id

    check_login(client)
    entry = stat(client, root_file_id(client), "/")
    if not entry.is_folder:
        raise _bad("GET /files/{root}", f"the access key's root is a {entry.type}, not a folder")
    return entry


# -- one folder, every page ---------------------------------------------------------------


def _fingerprint(items: list[Any]) -> str:
    """A page told from another by the ids of its items (the whole item when it has none):
    the same entries sent again with a size or a time that changed meanwhile are the same
    page."""
    h = hashlib.blake2b(digest_size=16)
    for item in items:
        key = item.get("id") if isinstance(item, dict) else None
        # (repr escapes what UTF-8 cannot take, a lone surrogate among them)
        h.update(repr(item if key is None else str(key)).encode() + b"\x00")
    return h.hexdigest()


def _total(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isdigit() and len(value) <= 18 else None


@dataclass(slots=True)
class Paging:
    """What a node showed of its paging, shared by the listings of one walk: whether it
    names next pages by Link (then a page without one is the last), and the largest page
    it sent that more followed (then, without Link or total, a shorter page is the last)."""

    linked: bool = False
    cap: int | None = None


def folder_pages(client: Client, folder_id: str, *, per_page: int = DEFAULT_PER_PAGE,
                 max_pages: int = MAX_PAGES, paging: Paging | None = None,
                 ) -> Iterator[tuple[str, list[Any]]]:
    """Every page of the folder's listing, as the node sent it: ``(what, items)``, with
    ``what`` naming the page in errors and ``items`` the page's list (unwrapped from
    ``{"files": ...}`` or ``{"items": ...}``), not checked. The one follower of a
    folder's pages (see the module's docstring): :func:`list_folder` checks the items,
    node/permissions reads them leniently."""
    from nodecli.http.links import LinkError, PageTrail, next_page

    collection = f"/files/{quote(folder_id, safe='')}/files"
    what = f"GET /files/{shorten(folder_id, 60)}/files"
    trail, pages = PageTrail(8), PageTrail(8)
    promised = False  # a total said more than was read
    paging = Paging() if paging is None else paging
    before = 0  # the size of the page before, when it had no Link and no total
    target: str = collection
    page = 1
    params: list[tuple[str, str]] | None = [("page", "1"), ("per_page", str(per_page))]
    seen = 0
    for count in range(1, max_pages + 1):
        resp = client.request("GET", target, params=params)
        trail.add(resp.url)
        data = resp.json() if resp.body else []
        if isinstance(data, dict):  # a node may wrap the list
            data = data.get("files", data.get("items"))
        if not isinstance(data, list):
            raise _bad(f"{what} (page {count})", "the answer is not a list of entries")
        if data and not pages.add(_fingerprint(data)):
            if params is not None and not promised:
                # asked by number because the last page was full, with no Link and no
                # total: a node that ignores ``page`` gave all it has (a folder of
                # exactly one page on a node that pages by Link)
                return
            raise ListingError(f"{what}: page {count} repeats a page already read; the node "
                               "does not page this folder: stopping rather than reading it "
                               "again")
        if before and data:  # more came after it: the node caps pages at least there
            paging.cap = max(paging.cap or 0, before)
        try:
            link = next_page(resp.header("link"), resp.url, client.endpoint.base_url,
                             collection).url
        except LinkError as exc:
            raise ListingError(f"{what}: the node's Link rel=\"next\" is unusable: {exc}"
                               ) from None
        # (learnt before the entries go out: a walk opens their folders meanwhile)
        paging.linked = paging.linked or link is not None
        yield f"{what} (page {count})", data
        seen += len(data)
        if link is not None:
            if link in trail:
                raise ListingError(f"{what}: the node's Link rel=\"next\" leads back to a page "
                                   f"already read (after {count} pages); stopping rather "
                                   "than reading it again")
            target, params = link, None
            continue
        if not data or paging.linked:  # a node that pages by Link names every next page
            return
        total = _total(resp.header("x-total-count"))
        if total is not None:
            if seen >= total:
                return
            promised = True
        elif paging.cap is not None and len(data) < min(paging.cap, per_page):
            return
        else:  # on to an empty page: a short page is not the end, a node may cap per_page
            before = len(data)
        page += 1
        target, params = collection, [("page", str(page)), ("per_page", str(per_page))]
    raise ListingError(f"{what}: more than {max_pages} pages; stopping (a node that never "
                       "ends a list)")


def list_folder(client: Client, folder_id: str, *, parent_path: str = "/",
                per_page: int = DEFAULT_PER_PAGE, max_pages: int = MAX_PAGES,
                on_page: Callable[[int], None] | None = None,
                paging: Paging | None = None) -> Iterator[Entry]:
    """Every entry of the folder, page after page, each checked (see the module's
    docstring)."""
    seen = 0
    for what, items in folder_pages(client, folder_id, per_page=per_page,
                                    max_pages=max_pages, paging=paging):
        entries = [entry_from(item, parent_path, what) for item in items]
        yield from entries
        seen += len(entries)
        if on_page is not None:
            on_page(seen)


def _find_child(client: Client, folder: Entry, name: str, per_page: int,
                paging: Paging) -> Entry | None:
    for entry in list_folder(client, folder.id, parent_path=folder.path, per_page=per_page,
                             paging=paging):
        if entry.name == name:
            return entry
    return None


def resolve(client: Client, path: str, *, per_page: int = DEFAULT_PER_PAGE) -> Entry:
    """The entry at ``path`` (absolute, from the root the credentials see)."""
    from nodecli.node.paths import split_path

    if isinstance(path, str) and not path.startswith("/"):
        path = "/" + path  # relative to the root the credentials see
    parts = split_path(path)
    current = root(client)
    paging = Paging()
    for part in parts:
        if not current.is_folder:
            raise NotFoundError(f"{shorten(current.path)} is a {current.type}, not a folder: "
                                f"{shorten(path)} does not exist")
        found = _find_child(client, current, part, per_page, paging)
        if found is None:
            hint = ("a bearer token's user sees only what it holds a permission on"
                    if client.endpoint.auth.kind == "bearer" else
                    "paths start at the access key's storage root")
            raise NotFoundError(f"{shorten(current.path.rstrip('/') + '/' + part)}: no such "
                                f"file or folder (the path stops at {shorten(current.path)})",
                                hint=hint)
        current = found
    return current


# -- below a folder -----------------------------------------------------------------------


def walk(client: Client, top: Entry, *, max_depth: int | None = None,
         per_page: int = DEFAULT_PER_PAGE,
         on_error: Callable[[Entry, NodecliError], None] | None = None,
         ) -> Iterator[tuple[Entry, int]]:
    """(entry, depth) for every entry below ``top`` (depth 1: what ``top`` holds), a
    folder before what it holds, at most ``max_depth`` levels down (None: all, up to
    :data:`MAX_DEPTH`)."""
    for entry, depth, _ in walk_marked(client, top, max_depth=max_depth, per_page=per_page,
                                       on_error=on_error):
        yield entry, depth


def walk_marked(client: Client, top: Entry, *, max_depth: int | None = None,
                per_page: int = DEFAULT_PER_PAGE,
                on_error: Callable[[Entry, NodecliError], None] | None = None,
                ) -> Iterator[tuple[Entry, int, bool]]:
    """:func:`walk`, each entry marked True when it is the last of its folder (read one
    entry ahead in each open folder: what a drawing of the tree needs)."""
    limit = MAX_DEPTH if max_depth is None else min(max_depth, MAX_DEPTH)
    if limit < 1 or not top.is_folder:
        return

    def ahead(folder: Entry, listing: Iterator[Entry]) -> Entry | None:
        try:
            return next(listing, None)
        except NodecliError as exc:
            if on_error is None or isinstance(exc, ListingError) or \
                    getattr(exc, "status", None) not in (403, 404):
                raise
            on_error(folder, exc)
            return None

    paging = Paging()

    def opened(folder: Entry) -> list[Any]:
        listing = list_folder(client, folder.id, parent_path=folder.path, per_page=per_page,
                              paging=paging)
        return [folder, listing, ahead(folder, listing)]

    stack = [opened(top)]  # [folder, its listing, its next entry (None: no more)]
    ancestors = {top.id}
    while stack:
        level = stack[-1]
        folder, listing, entry = level
        if entry is None:
            stack.pop()
            ancestors.discard(folder.id)
            continue
        level[2] = ahead(folder, listing)
        depth = len(stack)
        yield entry, depth, level[2] is None
        if entry.is_folder and depth < limit:
            if entry.id in ancestors:
                raise ListingError(f"GET /files/{shorten(folder.id, 60)}/files: folder "
                                   f"{shorten(entry.path)} is one of its own ancestors (id "
                                   f"{shorten(entry.id, 60)}); the node's tree loops")
            ancestors.add(entry.id)
            stack.append(opened(entry))
        elif entry.is_folder and max_depth is None and depth >= MAX_DEPTH:
            raise ListingError(f"{shorten(entry.path)}: deeper than {MAX_DEPTH} levels; "
                               "stopping (a node whose tree never ends)")


# -- what users type ----------------------------------------------------------------------


def parse_size(text: str) -> int:
    """``10M``, ``1.5G``, ``512``, ``2KiB`` -> bytes (units of 1024, rounded down)."""
    import re

    m = re.fullmatch(r"(?a)(\d{1,20}(?:\.\d{0,9})?|\.\d{1,9})\s*([KMGTP]?)(?:I?B)?",
                     str(text).strip().upper()) if len(str(text)) <= 40 else None
    if m is None or (m.group(0).endswith("IB") and not m.group(2)):
        raise UsageError(f"invalid size {str(text)[:40]!r}: a number of bytes with an "
                         "optional unit K, M, G, T or P (1024-based), such as 10M or 1.5G")
    return int(Fraction(m.group(1)) * SIZE_UNITS[m.group(2)])
