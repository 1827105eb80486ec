"""``files ls/find/tree`` against a hostile node (tests/scripted_server.py over HTTPS):
entries that are not entries, pages that loop or repeat, a tree that loops or never
ends, and pagings the emulator does not play (a total without a Link). One line on
stderr, a documented exit code, never a hang."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nodecli.errors import ExitCode
from tests.scripted_server import ScriptedServer, Seen, certificates, reply

JSON = [("Content-Type", "application/json")]
ROOT = {"id": "1", "name": "/", "type": "folder"}


def entry(n: int, **fields: Any) -> dict[str, Any]:
    return {"id": f"e{n}", "name": f"n{n}", "type": "file", "size": n,
            "mtime": "2030-01-01T00:00:00Z", **fields}


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    return certificates(tmp_path_factory.mktemp("tls"))


Listing = Callable[[Seen], tuple[Any, list[tuple[str, str]]]]


@pytest.fixture
def node(certs, invoke) -> Iterator[Callable[[Listing], tuple[Callable[..., Any], Any]]]:
    """``node(listing)``: a node whose root (id 1) is listed by ``listing(seen)`` ->
    (JSON body, headers); returns (run nodecli as access key ak, the server)."""
    servers: list[ScriptedServer] = []

    def start(listing: Listing) -> tuple[Callable[..., Any], Any]:
        def answer(seen: Seen) -> list[bytes | float]:
            path = seen.target.split("?")[0]
            if path == "/access_keys/self":
                body, headers = {"id": "ak", "root_file_id": "1"}, []
            elif path == "/files/1":
                body, headers = ROOT, []
            else:
                body, headers = listing(seen)
            return [reply(200, json.dumps(body).encode(), [*JSON, *headers])]

        server = ScriptedServer(answer, tls=(certs[1], certs[2]))
        servers.append(server)
        env = {"NODECLI_URL": server.url(), "NODECLI_ACCESS_KEY": "ak",
               "NODECLI_PASSWORD": "ak-secret", "NODECLI_CACERT": certs[0]}
        return (lambda *args: invoke(*args, env=env)), server

    yield start
    for server in servers:
        server.close()


def one_error_line(r: Any) -> str:
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("nodecli: error")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr
    return errors[0]


@pytest.mark.parametrize(("page", "words"), [
    ([1, "x"], "an entry is not an object (int)"),
    ([entry(1, name=None)], "entry e1 has no usable name (null)"),
    ([entry(1, name="")], 'has no usable name ("")'),
    ([entry(1, name="a/b")], 'has no usable name ("a/b")'),
    ([entry(1, name="..")], 'has no usable name ("..")'),
    ([entry(1, id=None)], "an entry has no usable id"),
    ([entry(1, id=True)], "an entry has no usable id"),
    ([entry(1, type=None)], "entry n1 has no type (null)"),
    ([entry(1, size="12")], 'entry n1: its size "12" is not a whole number of bytes'),
    ([entry(1, size=1.5)], "its size 1.5 is not a whole number of bytes"),
    ([entry(1, size=True)], "its size true is not a whole number of bytes"),
    ([entry(1, size=-1)], "its size -1 is not a whole number of bytes"),
    ([entry(1, mtime="yesterday")], 'its mtime "yesterday" is not an ISO 8601 time'),
    ([entry(1, mtime=5)], "its mtime 5 is not an ISO 8601 time"),
    ({"files": "nope"}, "the answer is not a list of entries"),
    ("[]", "the answer is not a list of entries"),
])
def test_an_entry_the_client_cannot_take_is_one_line_exit_6(node, page, words):
    run, _ = node(lambda seen: (page, []))
    r = run("files", "ls", "/")
    assert r.exit_code == ExitCode.REMOTE, r
    line = one_error_line(r)
    assert line.startswith("nodecli: error: GET /files/1/files (page 1): "), line
    assert words in line, line
    assert r.stdout == ""


def test_find_and_tree_stop_on_an_entry_they_cannot_take(node):
    run, _ = node(lambda seen: ([entry(1), entry(2, size="2")], []))
    words = 'entry n2: its size "2" is not a whole number of bytes'
    for argv in (("files", "find", "/"), ("files", "tree", "/")):
        r = run(*argv)
        assert r.exit_code == ExitCode.REMOTE, r
        line = one_error_line(r)
        assert line.startswith("nodecli: error: GET /files/1/files (page 1): "), line
        assert words in line, line
        assert r.stdout == ("/\n" if argv[1] == "tree" else "")  # tree: its top first


def test_a_size_absent_or_null_is_no_size(node):
    run, _ = node(lambda seen: ([{"id": "f", "name": "a", "type": "folder"},
                                 entry(2, size=None)], []))
    r = run("files", "ls", "/", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert [x["size"] for x in json.loads(r.stdout)] == [None, None]


def test_a_link_back_to_a_page_already_read_is_a_loop(node):
    def listing(seen: Seen) -> tuple[Any, list[tuple[str, str]]]:
        n = 2 if "page=2" in seen.target else 1
        other = 1 if n == 2 else 2
        return [entry(n)], [("Link", f'</files/1/files?page={other}&per_page=1000>; '
                                     'rel="next"')]

    run, server = node(listing)
    r = run("files", "ls", "/")
    assert r.exit_code == ExitCode.REMOTE
    assert "Link rel=\"next\" leads back to a page already read (after 2 pages)" in \
        one_error_line(r)
    assert len([s for s in server.seen if s.target.startswith("/files/1/files")]) == 2


def test_a_node_repeating_a_page_it_promised_more_after_is_stopped(node):
    """X-Total-Count says 10; every page is the same 2 entries."""
    run, server = node(lambda seen: ([entry(1), entry(2)], [("X-Total-Count", "10")]))
    r = run("files", "ls", "/")
    assert r.exit_code == ExitCode.REMOTE
    assert "page 2 repeats a page already read" in one_error_line(r)
    assert len([s for s in server.seen if s.target.startswith("/files/1/files")]) == 2


def test_a_link_named_page_that_repeats_the_last_is_stopped(node):
    """A node whose Link names a new token each time but serves the same page."""
    def listing(seen: Seen) -> tuple[Any, list[tuple[str, str]]]:
        token = len(seen.target)
        return [entry(1)], [("Link", f'</files/1/files?iteration_token=t{token}x>; '
                                     'rel="next"')]

    run, _ = node(listing)
    r = run("files", "ls", "/")
    assert r.exit_code == ExitCode.REMOTE
    assert "page 2 repeats a page already read" in one_error_line(r)


def test_a_total_without_a_link_is_read_by_page_numbers(node):
    """A node that caps per_page at 3 and says X-Total-Count 7, without Link: three
    pages by number, the last short."""
    def listing(seen: Seen) -> tuple[Any, list[tuple[str, str]]]:
        page = int(seen.target.split("page=")[1].split("&")[0])
        items = [entry(n) for n in range(1, 8)][(page - 1) * 3:page * 3]
        return items, [("X-Total-Count", "7")]

    run, server = node(listing)
    r = run("files", "ls", "/", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert [x["name"] for x in json.loads(r.stdout)] == [f"n{n}" for n in range(1, 8)]
    asked = [s.target for s in server.seen if s.target.startswith("/files/1/files")]
    assert asked == [f"/files/1/files?page={p}&per_page=1000" for p in (1, 2, 3)]


def test_a_total_larger_than_what_comes_ends_on_an_empty_page(node):
    def listing(seen: Seen) -> tuple[Any, list[tuple[str, str]]]:
        return ([entry(1)] if "page=1&" in seen.target else []), [("X-Total-Count", "99")]

    run, server = node(listing)
    r = run("files", "ls", "/", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert len(json.loads(r.stdout)) == 1
    assert len([s for s in server.seen if s.target.startswith("/files/1/files")]) == 2


def test_a_node_that_never_ends_a_list_is_stopped_at_max_pages(node, certs):
    from nodecli.http.client import Auth, Endpoint, open_client
    from nodecli.node.files import ListingError, list_folder

    def listing(seen: Seen) -> tuple[Any, list[tuple[str, str]]]:
        n = len(seen.target)  # a new entry and a new Link every time
        return [entry(n)], [("Link", f'</files/1/files?iteration_token={"x" * n}>; '
                                     'rel="next"')]

    _, server = node(listing)
    endpoint = Endpoint(server.url(), Auth("basic", "ak", "s", access_key="ak"),
                        cacert=certs[0])
    with open_client(endpoint) as client:
        got: list[Any] = []
        with pytest.raises(ListingError, match="more than 3 pages; stopping"):
            got.extend(list_folder(client, "1", max_pages=3))
    assert len(got) == 3


def test_a_folder_that_holds_its_own_ancestor_is_a_loop(node):
    """/files/1/files lists folder 2; /files/2/files lists folder 1 again."""
    def listing(seen: Seen) -> tuple[Any, list[tuple[str, str]]]:
        if seen.target.startswith("/files/1/files"):
            return [{"id": "2", "name": "a", "type": "folder"}], []
        return [{"id": "1", "name": "back", "type": "folder"}], []

    run, _ = node(listing)
    for argv in (("files", "find", "/"), ("files", "tree", "/")):
        r = run(*argv)
        assert r.exit_code == ExitCode.REMOTE, r
        assert "folder /a/back is one of its own ancestors (id 1); the node's tree loops" \
            in one_error_line(r)
    r = run("files", "find", "/", "--depth", "1", "-o", "json")  # not reached: no loop
    assert r.exit_code == 0 and [x["path"] for x in json.loads(r.stdout)] == ["/a"]


def test_a_tree_that_never_ends_is_stopped_at_max_depth(node, monkeypatch):
    import nodecli.node.files as files

    monkeypatch.setattr(files, "MAX_DEPTH", 4)

    def listing(seen: Seen) -> tuple[Any, list[tuple[str, str]]]:
        parent = seen.target.split("/")[2]
        return [{"id": parent + "x", "name": "d", "type": "folder"}], []

    run, _ = node(listing)
    r = run("files", "find", "/", "-o", "jsonl")
    assert r.exit_code == ExitCode.REMOTE, r
    assert "/d/d/d/d: deeper than 4 levels" in one_error_line(r)
    assert len(r.stdout.splitlines()) == 4  # what was found before is out (a stream)
