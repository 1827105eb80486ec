"""Every reader of a folder listing reads every page, however the node pages it.

A path given to ``permission``, ``access who/can-i`` or a declared document is
resolved by listing folders; so is ``access`` survey's whole storage. Over HTTPS
against the emulator, in its three pagings (numbered pages with a total and a Link;
an opaque token in a Link; page numbers only, no Link and no total), with the entry
sought on the last page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nodecli.errors import NotFoundError
from tests.conftest import EmulatorHandle, _start_emulator

AK, SECRET = "ak-every-page", "ak-every-page-secret"
PAGINGS = ["numbered:3", "token:3", "bare:3"]
COUNT = 8  # three pages of 3: the last holds two


@pytest.fixture(scope="module")
def paged_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorHandle]:
    from nodecli.emulator.storage import storage_of

    handle = _start_emulator(tmp_path_factory, tls=True)
    try:
        handle.add_access_key(AK, SECRET)
        st = storage_of(handle.state)
        with handle.state.lock:
            for i in range(COUNT):
                st.ensure(f"/every/d/f{i:03d}", "file", i)
        yield handle
    finally:
        handle.server.stop()


@pytest.fixture(params=PAGINGS)
def node(request: pytest.FixtureRequest, paged_node: EmulatorHandle,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[EmulatorHandle]:
    from nodecli.emulator.generated import Paging
    from nodecli.emulator.storage import storage_of

    monkeypatch.setenv("NODECLI_CACERT", paged_node.ca_file)
    monkeypatch.setenv("NODECLI_URL", paged_node.url)
    monkeypatch.setenv("NODECLI_ACCESS_KEY", AK)
    monkeypatch.setenv("NODECLI_PASSWORD", SECRET)
    st = storage_of(paged_node.state)
    before = st.paging
    st.paging = Paging.parse(request.param)
    try:
        yield paged_node
    finally:
        st.paging = before


def client_for(handle: EmulatorHandle) -> Any:
    from nodecli.http.client import Auth, open_client

    return open_client(handle.endpoint(Auth("basic", AK, SECRET, access_key=AK)))


def last_id(handle: EmulatorHandle) -> str:
    from nodecli.emulator.storage import storage_of

    return str(storage_of(handle.state).ensure(f"/every/d/f{COUNT - 1:03d}", "file").id)


def test_a_permission_path_is_found_on_the_last_page(node):
    from nodecli.node.permissions import resolve_path

    with client_for(node) as client:
        assert resolve_path(client, f"/every/d/f{COUNT - 1:03d}") == last_id(node)


def test_a_path_the_survey_walks_is_found_on_the_last_page(node):
    from nodecli.node.access_survey import lineage, whole

    with client_for(node) as client:
        survey, here = lineage(client, f"/every/d/f{COUNT - 1:03d}")
        assert survey.entries[here].id == last_id(node)
        everything = whole(client)
    names = sorted(p.rsplit("/", 1)[1] for p in everything.entries if "/every/d/" in p)
    assert names == [f"f{i:03d}" for i in range(COUNT)]


def test_a_declared_permission_s_file_is_found_on_the_last_page(node):
    from nodecli.declare.execute import NodeRunner

    runner = NodeRunner(None, None, None, None)  # type: ignore[arg-type]
    with client_for(node) as client:
        assert runner.file_id(AK, client, f"/every/d/f{COUNT - 1:03d}") == last_id(node)


def test_permission_list_by_path_on_the_last_page(node, invoke):
    r = invoke("permission", "list", f"/every/d/f{COUNT - 1:03d}", "-o", "json")
    assert r.exit_code == 0, r.stderr


@pytest.fixture
def scripted(tmp_path_factory):
    """start(pages) -> (server, client): a node over HTTPS whose root ``r`` lists
    ``pages[n]`` for its page n (by a Link to the next), each a raw JSON body."""
    from nodecli.http.client import Auth, Endpoint, open_client
    from tests.scripted_server import ScriptedServer, certificates, reply

    ca, cert, key = certificates(tmp_path_factory.mktemp("certs"))
    opened = []

    def start(pages):
        def script(seen):
            path, _, query = seen.target.partition("?")
            if path == "/access_keys/self":
                body = {"id": AK, "root_file_id": "r"}
                yield reply(200, json.dumps(body).encode(), [("Content-Type", "application/json")])
                return
            n = int(query.split("cursor=")[1]) if "cursor=" in query else 0
            headers = [("Content-Type", "application/json")]
            if n + 1 < len(pages):
                headers.append(("Link", f'<{server.url()}/files/r/files?cursor={n + 1}>; '
                                        'rel="next"'))
            yield reply(200, json.dumps(pages[n]).encode(), headers)

        server = ScriptedServer(script, tls=(cert, key))
        client = open_client(Endpoint(server.url(), Auth("basic", AK, SECRET, access_key=AK),
                                      cacert=ca, deadline=5.0, read_timeout=5,
                                      max_attempts=1))
        opened.append((server, client))
        return server, client

    try:
        yield start
    finally:
        for server, client in opened:
            client.close()
            server.close()


def test_a_path_is_found_past_entries_that_are_not_objects(scripted):
    """A listing read to resolve a path skips what is not an object (wrapped or not),
    and the pages after the name's are not asked for."""
    from nodecli.node.permissions import resolve_path

    server, client = scripted([[5, "x", None, ["a"], {"id": "1", "name": "b"}],
                               {"files": [7, {"id": "2", "name": "a"}]},
                               [{"id": "3", "name": "c"}]])
    assert resolve_path(client, "/a") == "2"
    assert [s.target.partition("?")[0] for s in server.seen] == [
        "/access_keys/self", "/files/r/files", "/files/r/files"]
    with pytest.raises(NotFoundError):
        resolve_path(client, "/d")  # every page read, then not found
    assert sum(s.target.startswith("/files/r/files") for s in server.seen) == 2 + 3


def test_files_ls_of_a_folder_longer_to_read_than_the_deadline_ends_well(invoke, certs_dir):
    """Five pages, each 0.7 s to come, under --deadline 3s: each request has the whole
    deadline (as find, tree and du), so the listing outlives it and is whole."""
    from tests.scripted_server import ScriptedServer, certificates, reply

    ca, cert, key = certificates(certs_dir)
    pages = 5

    def script(seen):
        path, _, query = seen.target.partition("?")
        headers = [("Content-Type", "application/json")]
        if path == "/access_keys/self":
            body: Any = {"id": AK, "root_file_id": "r"}
        elif path == "/files/r":
            body = {"id": "r", "name": "", "type": "folder"}
        else:
            n = int(query.split("cursor=")[1]) if "cursor=" in query else 0
            yield 0.7
            body = [{"id": f"e{n}", "name": f"e{n}", "type": "file"}]
            if n + 1 < pages:
                headers.append(("Link", f'<{server.url()}/files/r/files?cursor={n + 1}>; '
                                        'rel="next"'))
        yield reply(200, json.dumps(body).encode(), headers)

    with ScriptedServer(script, tls=(cert, key)) as server:
        r = invoke("--deadline", "3s", "files", "ls", "/", "-o", "jsonl",
                   env={"NODECLI_URL": server.url(), "NODECLI_CACERT": ca,
                        "NODECLI_ACCESS_KEY": AK, "NODECLI_PASSWORD": SECRET})
    assert r.exit_code == 0, r
    assert [json.loads(line)["name"] for line in r.stdout.splitlines()] == [
        f"e{n}" for n in range(pages)]


@pytest.fixture
def certs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("certs")


def numbered_node(certs_dir, pages):
    """A node over HTTPS paging ``/files/r/files`` by number only (no Link, no total):
    ``pages(n)`` is the body of page n (from 1); the pages asked are counted."""
    from tests.scripted_server import ScriptedServer, certificates, reply

    ca, cert, key = certificates(certs_dir)
    asked: list[int] = []

    def script(seen):
        from urllib.parse import parse_qs, urlsplit

        n = int(parse_qs(urlsplit(seen.target).query).get("page", ["1"])[0])
        asked.append(n)
        yield reply(200, json.dumps(pages(n)).encode(), [("Content-Type", "application/json")])

    return ScriptedServer(script, tls=(cert, key)), ca, asked


def test_a_node_that_ignores_page_ends_the_listing_though_sizes_change(certs_dir):
    """The same entries again, their sizes grown meanwhile (a file being written): the
    same page, so a node that ignores ``page`` gave all it has."""
    from nodecli.http.client import Auth, Endpoint, open_client
    from nodecli.node.files import list_folder

    server, ca, asked = numbered_node(certs_dir, lambda n: [
        {"id": "a", "name": "a", "type": "file", "size": n},
        {"id": "b", "name": "b", "type": "file", "size": 10 * n}])
    with server, open_client(Endpoint(server.url(), Auth("basic", AK, SECRET, access_key=AK),
                                      cacert=ca, deadline=5.0, max_attempts=1)) as client:
        got = [(e.name, e.size) for e in list_folder(client, "r", per_page=2, max_pages=5)]
    assert got == [("a", 1), ("b", 10)] and asked == [1, 2]


def test_pages_of_items_that_are_not_objects_differ_by_those_items(certs_dir):
    """Page 2 holds what page 1 held but for an item that is not an object: another page,
    read (the lenient reader skips that item), and the empty page 3 ends the listing."""
    from nodecli.http.client import Auth, Endpoint, open_client
    from nodecli.node.permissions import entries

    bodies = {1: [5, {"id": "a", "name": "a"}], 2: [6, {"id": "a", "name": "a"}], 3: []}
    server, ca, asked = numbered_node(certs_dir, lambda n: bodies.get(n, []))
    with server, open_client(Endpoint(server.url(), Auth("basic", AK, SECRET, access_key=AK),
                                      cacert=ca, deadline=5.0, max_attempts=1)) as client:
        assert [e["name"] for e in entries(client, "r")] == ["a", "a"]
    assert asked == [1, 2, 3]


def test_an_id_that_is_not_unicode_text_is_read(certs_dir):
    """A lone surrogate (JSON ``"\\ud800"``) in an id and in an item that is not an
    object: the page is told from others all the same, never an internal error."""
    from nodecli.http.client import Auth, Endpoint, open_client
    from nodecli.node.permissions import entries

    bodies = {1: ["\ud800", {"id": "\udcff", "name": "a"}], 2: []}
    server, ca, asked = numbered_node(certs_dir, lambda n: bodies.get(n, []))
    with server, open_client(Endpoint(server.url(), Auth("basic", AK, SECRET, access_key=AK),
                                      cacert=ca, deadline=5.0, max_attempts=1)) as client:
        assert [e["id"] for e in entries(client, "r")] == ["\udcff"]
    assert asked == [1, 2]
