"""nodecli.node.files at the edges of a node's paging, in-process over HTTPS against a
scripted node (tests/scripted_server.py): a folder id that holds a ``/``, a long id in
messages, lists wrapped in an object, an empty page that names a next one, a total
reached exactly, a Link to another origin, exactly ``max_pages`` pages, what a walk's
shared :class:`Paging` learns (and does not), a dropped connection below a walk, the
cost of a path that is not there, and the login check. Written for mutmut's survivors
of nodecli/node/files.py, each proven against its mutant planted by hand."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import pytest

from nodecli.errors import ExitCode
from tests.scripted_server import ScriptedServer, Seen, reply
from tests.test_files_hostile import JSON, certs

__all__ = ["certs"]

# one page of a listing: its body (JSON, or raw bytes) and its extra headers
Page = tuple[Any, list[tuple[str, str]]]
# a folder's listing: (the page number asked, 0 when none; the request) -> its page
Folder = Callable[[int, Seen], Page]


class Drop(Exception):
    """Raised by a folder's script: the node closes the connection without an answer."""


@dataclass
class Node:
    server: ScriptedServer
    ca: str
    folders: dict[str, Folder] = field(default_factory=dict)
    asked: dict[str, list[str]] = field(default_factory=dict)  # raw request targets
    root: dict[str, Any] = field(default_factory=dict)

    def client(self, **auth: Any) -> Any:
        from nodecli.http.client import Auth, Endpoint, open_client

        return open_client(Endpoint(self.server.url(), Auth(**(auth or AK)), cacert=self.ca,
                                    max_attempts=1))

    def listed(self, folder_id: str, **kwargs: Any) -> list[Any]:
        from nodecli.node.files import list_folder

        with self.client() as client:
            return list(list_folder(client, folder_id, **kwargs))


AK = {"kind": "basic", "username": "ak", "password": "ak-secret", "access_key": "ak"}


@pytest.fixture(scope="module")
def scripted(certs: tuple[str, str, str]) -> Iterator[Node]:
    node: Node | None = None

    def answer(seen: Seen) -> list[bytes | float]:
        assert node is not None
        path, _, query = seen.target.partition("?")
        if path == "/access_keys/self":
            return [reply(200, json.dumps({"id": "ak", "root_file_id": node.root["id"]}
                                          ).encode(), JSON)]
        if path == f"/files/{node.root.get('id')}":
            return [reply(200, json.dumps(node.root).encode(), JSON)]
        fid = path[len("/files/"):-len("/files")].replace("%2F", "/")
        if not path.endswith("/files") or fid not in node.folders:
            return [reply(404, b'{"error": "no such folder"}', JSON)]
        node.asked.setdefault(fid, []).append(seen.target)
        page = int(parse_qs(query).get("page", ["0"])[0])
        try:
            body, headers = node.folders[fid](page, seen)
        except Drop:
            raise OSError("dropped") from None  # (the server closes the connection)
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        return [reply(200, raw, [*JSON, *headers])]

    server = ScriptedServer(answer, tls=(certs[1], certs[2]))
    node = Node(server, certs[0])
    try:
        yield node
    finally:
        server.close()


@pytest.fixture
def node(scripted: Node) -> Node:
    scripted.folders.clear()
    scripted.asked.clear()
    scripted.root = {"id": "1", "name": "/", "type": "folder"}
    return scripted


def entry(n: int, kind: str = "file") -> dict[str, Any]:
    return {"id": f"e{n}", "name": f"n{n}", "type": kind}


def names(entries: list[Any]) -> list[str]:
    return [e.name for e in entries]


def pages_of(size: int, count: int, headers: list[tuple[str, str]] | None = None) -> Folder:
    """A node that pages by number only, ``size`` entries a page (whatever per_page
    asks), ``count`` entries in all; ``headers`` on every page."""
    def folder(page: int, seen: Seen) -> Page:
        return [entry(n) for n in range(count)][(page - 1) * size:page * size], headers or []
    return folder


def link(target: str) -> list[tuple[str, str]]:
    return [("Link", f'<{target}>; rel="next"')]


# -- one folder --------------------------------------------------------------------------


def test_a_folder_id_holding_a_slash_is_one_segment_and_paths_start_at_the_root(node):
    node.folders["a/b"] = lambda page, seen: ([entry(1)], [])
    got = node.listed("a/b")
    assert [(e.id, e.path) for e in got] == [("e1", "/n1")]  # parent_path: "/"
    assert node.asked["a/b"][0] == "/files/a%2Fb/files?page=1&per_page=1000"


@pytest.mark.parametrize("length", [60, 61])
def test_a_folder_id_is_named_whole_up_to_60_characters(node, length):
    from nodecli.node.files import ListingError

    fid = "i" * length
    node.folders[fid] = lambda page, seen: ("[]", [])
    with pytest.raises(ListingError) as info:
        node.listed(fid)
    shown = fid if length == 60 else fid[:59] + "…"
    assert info.value.message == (f"GET /files/{shown}/files (page 1): the answer is not a "
                                  "list of entries")
    assert info.value.exit_code == ExitCode.REMOTE


@pytest.mark.parametrize(("body", "expected"), [
    ({"files": [entry(1)]}, ["n1"]),
    ({"items": [entry(2)]}, ["n2"]),
    ({"files": [entry(1)], "items": [entry(2)]}, ["n1"]),
    (b"", []),  # an empty body: an empty folder
])
def test_a_list_wrapped_in_an_object_or_an_empty_body(node, body, expected):
    node.folders["w"] = lambda page, seen: (body, [])
    assert names(node.listed("w")) == expected
    assert len(node.asked["w"]) == (1 if expected == [] else 2)  # (on to an empty page)


def test_an_empty_page_that_names_a_next_page_is_not_the_end(node):
    """A node that leaves out what the login may not see can send an empty page with a
    Link to the next."""
    def folder(page: int, seen: Seen) -> Page:
        if page == 1:
            return [], link("/files/E/files?page=2&per_page=1000")
        return [entry(1)], []
    node.folders["E"] = folder
    assert names(node.listed("E")) == ["n1"]
    assert len(node.asked["E"]) == 2


@pytest.mark.parametrize(("total", "requests"), [(6, 2), (4, 2), (3, 1)])
def test_a_total_reached_exactly_ends_the_list(node, total, requests):
    """Pages of 3 (per_page 1000 asked: the node caps it) and X-Total-Count: the list
    ends on the page that reaches the total, full or not."""
    node.folders["T"] = pages_of(3, total, [("X-Total-Count", str(total))])
    seen: list[int] = []
    assert names(node.listed("T", on_page=seen.append)) == [f"n{n}" for n in range(total)]
    assert seen == [min(3 * p, total) for p in range(1, requests + 1)]  # entries so far
    assert node.asked["T"] == [f"/files/T/files?page={p}&per_page=1000"
                               for p in range(1, requests + 1)]


def test_a_link_to_another_origin_is_asked_of_the_node_with_its_query(node):
    def folder(page: int, seen: Seen) -> Page:
        if page == 1:
            return [entry(1)], link("https://inside.invalid:8443/files/x%2Fy/files?page=2&t=k")
        return [entry(2)], []
    node.folders["x/y"] = folder
    assert names(node.listed("x/y")) == ["n1", "n2"]
    assert node.asked["x/y"] == ["/files/x%2Fy/files?page=1&per_page=1000",
                                 "/files/x%2Fy/files?page=2&t=k"]


def test_exactly_max_pages_pages_are_read_one_more_is_refused(node):
    from nodecli.node.files import ListingError

    def folder(page: int, seen: Seen) -> Page:
        n = int(seen.target.rsplit("=", 1)[1]) if page == 0 else 1
        more = link(f"/files/M/files?token={n + 1}") if n < 3 else []
        return [entry(n)], more
    node.folders["M"] = folder
    assert names(node.listed("M", max_pages=3)) == ["n1", "n2", "n3"]
    with pytest.raises(ListingError) as info:
        node.listed("M", max_pages=2)
    assert info.value.message == ("GET /files/M/files: more than 2 pages; stopping (a node "
                                  "that never ends a list)")


def test_a_repeated_page_and_a_link_back_are_named_whole(node):
    from nodecli.node.files import ListingError

    node.folders["R"] = lambda page, seen: ([entry(1)], [("X-Total-Count", "5")])
    with pytest.raises(ListingError) as info:
        node.listed("R")
    assert info.value.message == (
        "GET /files/R/files: page 2 repeats a page already read; the node does not page "
        "this folder: stopping rather than reading it again")
    node.folders["L"] = lambda page, seen: (  # page 2 links back to page 1
        [entry(page)], link(f"/files/L/files?page={3 - page}&per_page=1000"))
    with pytest.raises(ListingError) as info:
        node.listed("L")
    assert info.value.message == (
        "GET /files/L/files: the node's Link rel=\"next\" leads back to a page already "
        "read (after 2 pages); stopping rather than reading it again")


# -- what a walk's listings learn of the node's paging ------------------------------------


def test_a_full_page_then_an_empty_one_teaches_no_cap(node):
    from nodecli.node.files import Paging

    paging = Paging()
    node.folders["F"] = pages_of(3, 3)  # per_page 3: a full page, then an empty one
    assert names(node.listed("F", per_page=3, paging=paging)) == ["n0", "n1", "n2"]
    assert len(node.asked["F"]) == 2
    assert paging == Paging(linked=False, cap=None)
    node.folders["S"] = pages_of(3, 2)  # so a short page is still not the end
    assert names(node.listed("S", per_page=3, paging=paging)) == ["n0", "n1"]
    assert len(node.asked["S"]) == 2


def test_a_cap_learnt_ends_a_shorter_page_not_one_as_long(node):
    """A node capping pages at 3 (5 asked): learnt when more followed a page of 3; then
    a page of 3 is not the end, a page of 2 is."""
    from nodecli.node.files import Paging

    paging = Paging()
    node.folders["A"] = pages_of(3, 5)
    assert len(node.listed("A", per_page=5, paging=paging)) == 5
    assert len(node.asked["A"]) == 2  # (3, then 2 < 3: the end)
    assert paging == Paging(linked=False, cap=3)
    node.folders["B"] = pages_of(3, 4)
    assert len(node.listed("B", per_page=5, paging=paging)) == 4
    assert len(node.asked["B"]) == 2
    node.folders["C"] = pages_of(3, 2)
    assert len(node.listed("C", per_page=5, paging=paging)) == 2
    assert len(node.asked["C"]) == 1
    # pages of 2 asked of a node capping at 3: a page of 2 is full, not the end
    node.folders["D"] = pages_of(2, 5)
    assert len(node.listed("D", per_page=2, paging=paging)) == 5
    assert len(node.asked["D"]) == 3


def test_a_node_seen_paging_by_link_ends_a_page_without_one(node):
    from nodecli.node.files import Paging

    paging = Paging()
    node.folders["K"] = lambda page, seen: (
        ([entry(1)], link("/files/K/files?t=2")) if page == 1 else ([entry(2)], []))
    assert len(node.listed("K", paging=paging)) == 2
    assert paging == Paging(linked=True, cap=None)
    node.folders["J"] = pages_of(3, 2)
    assert len(node.listed("J", paging=paging)) == 2
    assert len(node.asked["J"]) == 1


# -- a walk, a path ------------------------------------------------------------------------


def test_a_connection_dropped_below_a_walk_stops_it_with_the_transport_error(node):
    """on_error takes folders the node refuses (403, 404); a dropped connection has no
    status: the walk stops with it (exit 6), the folder is not skipped."""
    from nodecli.errors import RemoteError
    from nodecli.node.files import ListingError, root, walk_marked

    node.folders["1"] = lambda page, seen: ([entry(1, "folder"), entry(2)], [])

    def dropped(page: int, seen: Seen) -> Page:
        raise Drop
    node.folders["e1"] = dropped
    skipped: list[Any] = []
    with node.client() as client, pytest.raises(RemoteError) as info:
        for _ in walk_marked(client, root(client),
                             on_error=lambda f, exc: skipped.append(f.path)):
            pass
    assert not isinstance(info.value, ListingError)
    assert info.value.exit_code == ExitCode.REMOTE
    assert info.value.message.startswith(f"GET {node.server.url()}/files/e1/files"), info.value
    assert skipped == []


def test_the_root_is_the_key_s_root_folder_named_slash(node):
    from nodecli.node.files import Entry, resolve

    node.root = {"id": "R", "name": "storage", "type": "directory", "size": 5,
                 "mtime": "2030-01-02T03:04:05Z"}
    with node.client() as client:
        top = resolve(client, "/")
    assert (top.id, top.name, top.type, top.path, top.size) == ("R", "/", "directory", "/", 5)
    assert top == Entry("R", "/", "directory", "/", 5, top.mtime)
    assert top.as_dict()["mtime"] == "2030-01-02T03:04:05Z"


@pytest.mark.parametrize(("auth", "hint"), [
    (AK, "paths start at the access key's storage root"),
    ({"kind": "bearer", "token": "bearer-token", "access_key": "ak"},
     "a bearer token's user sees only what it holds a permission on"),
])
def test_a_missing_name_costs_one_request_per_page_on_a_node_known_to_page_by_link(
        node, auth, hint):
    """resolve's folders share what the first showed: a node that pages by Link ends
    a folder on a page without one (one request, not a second by number)."""
    from nodecli.errors import NotFoundError
    from nodecli.node.files import resolve

    node.folders["1"] = lambda page, seen: (
        ([entry(1, "folder")], link("/files/1/files?t=2")) if page == 1 else
        ([{"id": "e2", "name": "dX", "type": "folder"}], []))
    node.folders["e2"] = lambda page, seen: ([entry(3)], [])
    with node.client(**auth) as client, pytest.raises(NotFoundError) as info:
        resolve(client, "dX/missing")
    assert (info.value.message, info.value.hint) == (
        "/dX/missing: no such file or folder (the path stops at /dX)", hint)
    assert len(node.asked["1"]) == 2
    assert node.asked["e2"] == ["/files/e2/files?page=1&per_page=1000"]


def test_a_path_missing_at_the_root_or_through_a_file_is_named_as_typed(node):
    from nodecli.errors import NotFoundError
    from nodecli.node.files import resolve

    node.folders["1"] = lambda page, seen: ([entry(1)], [("X-Total-Count", "1")])
    with node.client() as client:
        for path, message in (
                ("/nothing", "/nothing: no such file or folder (the path stops at /)"),
                ("/n1/below", "/n1 is a file, not a folder: /n1/below does not exist")):
            with pytest.raises(NotFoundError) as info:
                resolve(client, path)
            assert info.value.message == message
        assert resolve(client, "n1").path == "/n1"


def test_node_user_credentials_are_refused_before_any_request(node):
    from nodecli.errors import UsageError
    from nodecli.node.files import check_login

    before = len(node.server.seen)
    with node.client(kind="basic", username="admin", password="admin-secret") as client, \
            pytest.raises(UsageError) as info:
        check_login(client)
    assert (info.value.message, info.value.hint) == (
        "files are browsed with an access key or a bearer token: a node refuses node-user "
        "credentials on /files",
        "--access-key AK (its secret from NODECLI_PASSWORD, --password-stdin or the "
        "profile), or --bearer-file PATH with --access-key AK")
    for auth in (AK, {"kind": "bearer", "token": "bearer-token", "access_key": "ak"}):
        with node.client(**auth) as client:
            check_login(client)
    assert len(node.server.seen) == before  # (no request is made above)


# -- entries --------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [60, 61])
def test_an_entry_s_id_and_name_are_named_whole_up_to_60_characters(length):
    from nodecli.node.files import ListingError, entry_from

    long = "x" * length
    shown = long if length == 60 else long[:59] + "…"

    def why(**fields: Any) -> str:
        with pytest.raises(ListingError) as info:
            entry_from({"id": "i", "name": long, "type": "file", **fields}, "/", "W")
        return info.value.message

    assert why(id=long, name=None) == f"W: entry {shown} has no usable name (null)"
    assert why(type=None) == f"W: entry {shown} has no type (null)"
    assert why(size=-1) == f"W: entry {shown}: its size -1 is not a whole number of bytes"
    assert why(mtime="x") == f'W: entry {shown}: its mtime "x" is not an ISO 8601 time'


def test_a_child_s_path_keeps_its_folder_s_last_character():
    from nodecli.node.files import entry_from

    for parent, path in (("/aX", "/aX/n"), ("/aX/", "/aX/n"), ("/", "/n"), ("", "/n")):
        assert entry_from({"id": 1, "name": "n", "type": "file"}, parent, "W").path == path
