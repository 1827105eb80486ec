"""Walks of a hostile node's tree (nodecli/node/files.py over tests/scripted_server.py):
the access key's root with an id holding a ``/`` (one path segment of the request) or
no entry at all (named by its request, the id cut at 60 characters), a loop through a
folder between the root and the last, a folder met again under another parent, a
subfolder that vanished (404), an id a JSON escape made a lone surrogate. Written for
mutmut's survivors of nodecli/node/files.py, each proven against its mutant planted by
hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodecli.errors import ExitCode
from tests.scripted_server import ScriptedServer, Seen, reply
from tests.test_files_hostile import JSON, certs

__all__ = ["certs"]

# a folder id (or "ID@PAGE" for one page of it) -> the status, body (and headers) of its
# listing
Tree = dict[str, tuple[Any, ...]]


def walk(certs: Any, invoke: Any, tree: Tree, *argv: str, slow: float = 0.0,
         env: dict[str, str] | None = None) -> tuple[Any, list[str]]:
    """nodecli ``argv`` against a node whose root is id 1 and whose listings are
    ``tree``'s (a folder not in it: 404), each at least ``slow`` seconds late; the result
    and the request targets."""
    from urllib.parse import parse_qs, unquote

    targets: list[str] = []

    def answer(seen: Seen) -> list[bytes | float]:
        targets.append(seen.target)
        path = unquote(seen.target.split("?")[0])
        status, body = 404, {"error": "no such folder"}
        if path == "/access_keys/self":
            status, body = 200, {"id": "ak", "root_file_id": "1"}
        elif path == "/files/1":
            status, body = 200, {"id": "1", "name": "/", "type": "folder"}
        elif path.startswith("/files/") and path.endswith("/files"):
            fid = path[len("/files/"):-len("/files")]
            page = parse_qs(seen.target.partition("?")[2]).get("page", ["1"])[0]
            status, body, *more = tree.get(f"{fid}@{page}", tree.get(fid, (status, body)))
            answer = reply(status, json.dumps(body).encode(), [*JSON, *(more[0] if more else [])])
            return [*([slow] if slow else []), answer]
        return [reply(status, json.dumps(body).encode(), JSON)]

    server = ScriptedServer(answer, tls=(certs[1], certs[2]))
    try:
        r = invoke(*argv, env={"NODECLI_URL": server.url(), "NODECLI_ACCESS_KEY": "ak",
                               "NODECLI_PASSWORD": "ak-secret", "NODECLI_CACERT": certs[0],
                               **(env or {})})
    finally:
        server.close()
    return r, targets


def folder(fid: str, name: str) -> dict[str, Any]:
    return {"id": fid, "name": name, "type": "folder"}


def file(fid: str, name: str) -> dict[str, Any]:
    return {"id": fid, "name": name, "type": "file", "size": 1}

ROOT_ID = "r/" + "x" * 70  # 72 characters, a slash among them
QUOTED = "r%2F" + "x" * 70


@pytest.mark.parametrize(("root", "words"), [
    ([], "an entry is not an object (list)"),
    ({"id": ROOT_ID, "name": "/", "type": "file"}, "the access key's root is a file"),
])
def test_a_root_that_is_no_folder_is_named_by_its_request(certs, invoke, root: Any,
                                                          words: str) -> None:
    targets: list[str] = []

    def answer(seen: Seen) -> list[bytes | float]:
        targets.append(seen.target)
        path = seen.target.split("?")[0]
        if path == "/access_keys/self":
            body: Any = {"id": "ak", "root_file_id": ROOT_ID}
        elif path == f"/files/{QUOTED}":
            body = root
        else:
            return [reply(404, b"{}", JSON)]
        return [reply(200, json.dumps(body).encode(), JSON)]

    server = ScriptedServer(answer, tls=(certs[1], certs[2]))
    try:
        r = invoke("files", "ls", "-o", "json", env={
            "NODECLI_URL": server.url(), "NODECLI_ACCESS_KEY": "ak",
            "NODECLI_PASSWORD": "ak-secret", "NODECLI_CACERT": certs[0]})
    finally:
        server.close()
    assert r.exit_code == ExitCode.REMOTE, r
    assert f"/files/{QUOTED}" in [t.split("?")[0] for t in targets]
    error = [ln for ln in r.stderr.splitlines() if ln.startswith("nodecli: error")]
    if isinstance(root, list):
        assert error == [f"nodecli: error: GET /files/{ROOT_ID[:59]}…: {words}"], r.stderr
    else:
        assert error == [f"nodecli: error: GET /files/{{root}}: {words}, not a folder"]


def test_a_loop_through_a_folder_between_is_named_with_long_ids_cut(certs, invoke,
                                                                    monkeypatch) -> None:
    import nodecli.node.files as files

    monkeypatch.setattr(files, "MAX_DEPTH", 8)  # (a loop missed would stop there)
    a, b = "a" * 70, "b" * 70
    tree: Tree = {"1": (200, [folder(a, "a")]), a: (200, [folder(b, "b")]),
                  b: (200, [folder(a, "back")])}
    r, _ = walk(certs, invoke, tree, "files", "find", "/", "-o", "jsonl")
    assert r.exit_code == ExitCode.REMOTE, r
    assert r.stderr.splitlines()[0] == (
        f"nodecli: error: GET /files/{b[:59]}…/files: folder /a/b/back is one of its own "
        f"ancestors (id {a[:59]}…); the node's tree loops")


def test_a_folder_met_again_under_another_parent_is_walked_again(certs, invoke) -> None:
    tree: Tree = {"1": (200, [folder("P", "p"), folder("Q", "q")]),
                  "P": (200, [folder("S", "s")]), "Q": (200, [folder("S", "s2")]),
                  "S": (200, [file("F", "f")])}
    r, _ = walk(certs, invoke, tree, "files", "find", "/", "-o", "json")
    assert r.exit_code == 0, r
    assert [x["path"] for x in json.loads(r.stdout)] == ["/p", "/p/s", "/p/s/f", "/q",
                                                         "/q/s2", "/q/s2/f"]


def test_a_subfolder_that_vanished_is_skipped_and_the_walk_goes_on(certs, invoke) -> None:
    tree: Tree = {"1": (200, [folder("A", "a"), folder("B", "b")]),
                  "B": (200, [file("F", "f")])}  # A: 404
    r, _ = walk(certs, invoke, tree, "files", "find", "/", "-o", "json")
    assert r.exit_code == ExitCode.ERROR, r
    assert [x["path"] for x in json.loads(r.stdout)] == ["/a", "/b", "/b/f"]
    assert r.stderr.splitlines()[0].startswith("nodecli: warning: /a: not read (")


def test_an_id_that_is_a_lone_surrogate_is_listed(certs, invoke) -> None:
    tree: Tree = {"1": (200, [file("\udc80", "s"), file("2", "t")])}
    r, _ = walk(certs, invoke, tree, "files", "ls", "/", "-o", "json")
    assert r.exit_code == 0, r
    assert [x["name"] for x in json.loads(r.stdout)] == ["s", "t"]


def test_a_subfolder_refused_for_the_login_itself_stops_the_walk(certs, invoke) -> None:
    """401 is no folder to skip (only 403 and 404 are): the walk stops, exit 4."""
    tree: Tree = {"1": (200, [folder("A", "a"), folder("B", "b")]), "A": (401, {}),
                  "B": (200, [file("F", "f")])}
    r, _ = walk(certs, invoke, tree, "files", "find", "/", "-o", "json")
    assert r.exit_code == ExitCode.AUTH, r


def test_a_folder_that_vanishes_after_its_first_page_is_skipped(certs, invoke) -> None:
    link = [("Link", '</files/A/files?page=2&per_page=1000>; rel="next"')]
    tree: Tree = {"1": (200, [folder("A", "a"), folder("B", "b")]),
                  "A@1": (200, [file("F1", "f1"), file("F2", "f2")], link),
                  "A@2": (404, {}), "B": (200, [file("F", "f")])}
    r, _ = walk(certs, invoke, tree, "files", "tree", "/", "-o", "json")
    assert r.exit_code == ExitCode.ERROR, r
    assert [x["path"] for x in json.loads(r.stdout)] == ["/a", "/a/f1", "/a/f2", "/b",
                                                         "/b/f"]
    assert r.stderr.splitlines()[0].startswith("nodecli: warning: /a: not read (")


def test_a_file_at_the_deepest_level_is_listed(certs, invoke, monkeypatch) -> None:
    import nodecli.node.files as files

    monkeypatch.setattr(files, "MAX_DEPTH", 2)
    tree: Tree = {"1": (200, [folder("A", "a")]), "A": (200, [file("F", "f")])}
    for depth in ((), ("--depth", "2")):
        r, _ = walk(certs, invoke, tree, "files", "find", "/", *depth, "-o", "json")
        assert r.exit_code == 0, r
        assert [x["path"] for x in json.loads(r.stdout)] == ["/a", "/a/f"]


@pytest.mark.parametrize("command", ["find", "tree"])
def test_a_walk_longer_than_the_deadline_gives_it_to_each_request(certs, invoke,
                                                                   command: str) -> None:
    """--deadline 2s and two listings at least 1.05 s each (a lower bound, never a
    hope): the walk takes longer than the deadline, each request less (as files du and
    find --resume; the bench's walk of 1,000,000 entries once ended at 120 s)."""
    tree: Tree = {"1": (200, [folder("A", "a")]), "A": (200, [file("F", "f")])}
    r, _ = walk(certs, invoke, tree, "files", command, "/", "-o", "json", slow=1.05,
                env={"NODECLI_DEADLINE": "2s"})
    assert r.exit_code == 0, r
    assert [x["path"] for x in json.loads(r.stdout)] == ["/a", "/a/f"]
