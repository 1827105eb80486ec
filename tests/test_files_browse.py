"""``files ls/find/tree`` over HTTPS against the emulator: its generated tree, its two
pagings (numbered pages with a total and a Link; an opaque token in a Link, no total),
and the boundaries of every page and test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from nodecli.errors import ExitCode
from tests.conftest import EmulatorHandle, _start_emulator

AK, SECRET = "ak-files", "ak-files-secret"


@pytest.fixture(scope="module")
def files_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorHandle]:
    """One emulator for the module: a generated tree at /generated (3 folders of 3
    levels, 4 files in each) and a small tree in memory."""
    from nodecli.emulator.generated import TreeSpec
    from nodecli.emulator.storage import storage_of

    handle = _start_emulator(tmp_path_factory, tls=True)
    try:
        handle.add_access_key(AK, SECRET)
        st = storage_of(handle.state)
        st.generate(TreeSpec.parse("fanout=3,depth=2,files=4,seed=7"))
        yield handle
    finally:
        handle.server.stop()


@pytest.fixture
def node(files_node: EmulatorHandle, monkeypatch: pytest.MonkeyPatch) -> EmulatorHandle:
    from nodecli.emulator.storage import storage_of

    monkeypatch.setenv("NODECLI_CACERT", files_node.ca_file)
    monkeypatch.setenv("NODECLI_URL", files_node.url)
    monkeypatch.setenv("NODECLI_ACCESS_KEY", AK)
    monkeypatch.setenv("NODECLI_PASSWORD", SECRET)
    st = storage_of(files_node.state)
    before = st.paging
    yield files_node
    st.paging = before


def paging(handle: EmulatorHandle, text: str) -> None:
    from nodecli.emulator.generated import Paging
    from nodecli.emulator.storage import storage_of

    storage_of(handle.state).paging = Paging.parse(text)


def client_for(handle: EmulatorHandle) -> Any:
    from nodecli.http.client import Auth, open_client

    return open_client(handle.endpoint(Auth("basic", AK, SECRET, access_key=AK)))


def folder(handle: EmulatorHandle, path: str, count: int) -> str:
    """A folder in memory holding ``count`` files (f000, f001...), its id."""
    from nodecli.emulator.storage import storage_of

    st = storage_of(handle.state)
    with handle.state.lock:
        node = st.ensure(path)
        for i in range(count):
            st.ensure(f"{path}/f{i:03d}", "file", i)
    return node.id


PAGINGS = ["numbered:5", "token:5", "bare:5"]


@pytest.mark.parametrize("mode", PAGINGS)
@pytest.mark.parametrize("count", [0, 1, 4, 5, 6, 10, 11])
def test_list_folder_reads_every_page_whatever_the_paging(node, served_files, mode, count):
    from nodecli.node.files import list_folder

    paging(node, mode)
    fid = folder(node, f"/pages/{mode.replace(':', '-')}/n{count}", count)
    pages: list[int] = []
    with client_for(node) as client:
        names = [e.name for e in list_folder(client, fid, per_page=5, on_page=pages.append)]
    assert names == [f"f{i:03d}" for i in range(count)]
    asked = [line for line in served_files if f"/files/{fid}/files" in line]
    assert len(asked) == REQUESTS[mode.split(":")[0]][count], asked
    assert pages == [min(count, 5 * n) for n in range(1, len(pages) + 1)]


# What a first listing costs (pages of 5, the client knowing nothing of the node yet):
# a Link or a total is followed to the last page and no further; a short first page
# without either is not the end (page 2 by number: on a Link node the same page again,
# which ends it; a bare node answers an empty page); a bare node whose full page was
# followed by more caps pages there, so a shorter page then ends the list.
REQUESTS = {
    "numbered": {0: 1, 1: 1, 4: 1, 5: 1, 6: 2, 10: 2, 11: 3},
    "token": {0: 1, 1: 2, 4: 2, 5: 2, 6: 2, 10: 2, 11: 3},
    "bare": {0: 1, 1: 2, 4: 2, 5: 2, 6: 2, 10: 3, 11: 3},
}


@pytest.mark.parametrize(("mode", "requests"), [
    ("token:5", 2 + 3 * 2 + 9 * 1),
    # bare: the first cap is seen at dir0000's 2nd page, after its 3 folders were read
    # (2 requests each: on to an empty page); the other 6 take 1
    ("bare:5", 2 + 3 * 2 + 3 * 2 + 6 * 1),
])
def test_a_walk_learns_the_node_s_paging_and_stops_asking_for_more(node, served_files, mode,
                                                                   requests):
    """/generated holds 7 entries, its folders 7, theirs 4: once the node named a next
    page by Link (token), or sent a full page that more followed (bare), a short page
    without Link ends each folder after one request."""
    from nodecli.node.files import resolve, walk

    paging(node, mode)
    with client_for(node) as client:
        top = resolve(client, "/generated")
        served_files.clear()
        assert len(list(walk(client, top))) == 3 + 9 + 13 * 4
    asked = [line for line in served_files if "/files/g" in line]
    assert len(asked) == requests, asked


def test_a_node_capping_per_page_below_the_request_is_read_to_the_end(node):
    """numbered:5 caps per_page at 5 when 1000 are asked: the total says more."""
    from nodecli.node.files import list_folder

    paging(node, "numbered:5")
    fid = folder(node, "/capped", 12)
    with client_for(node) as client:
        assert len(list(list_folder(client, fid))) == 12


def test_generated_tree_is_served_paged_with_sizes_and_times(node, invoke):
    paging(node, "token:2")
    r = invoke("files", "ls", "/generated", "-o", "json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [x["name"] for x in rows][:3] == ["dir0000", "dir0001", "dir0002"]
    assert len(rows) == 3 + 4
    files = [x for x in rows if x["type"] == "file"]
    assert all(isinstance(x["size"], int) and x["mtime"].startswith("2024-") for x in files)
    assert rows[0]["path"] == "/generated/dir0000"


def test_generated_tree_is_the_same_on_every_read(node):
    from nodecli.node.files import resolve, walk

    with client_for(node) as client:
        top = resolve(client, "/generated")
        first = [e for e, _ in walk(client, top)]
        second = [e for e, _ in walk(client, top)]
    assert first == second
    # 3 + 9 folders below the mount, 4 files in each of the 13 folders
    assert len(first) == 3 + 9 + 13 * 4


# -- the CLI at its boundaries ------------------------------------------------------------


def test_ls_of_an_empty_folder_a_file_and_a_missing_path(node, invoke):
    from nodecli.emulator.storage import storage_of

    paging(node, "numbered")
    folder(node, "/edge/empty", 0)
    r = invoke("files", "ls", "/edge/empty")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "/edge/empty: empty folder\n")
    r = invoke("files", "ls", "/edge/empty", "-o", "json")
    assert (r.exit_code, json.loads(r.stdout)) == (0, [])
    storage_of(node.state).ensure("/edge/one.bin", "file", 7)
    r = invoke("files", "ls", "/edge/one.bin", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert [(x["path"], x["size"]) for x in json.loads(r.stdout)] == [("/edge/one.bin", 7)]
    r = invoke("files", "ls", "/edge/nothing")
    assert r.exit_code == ExitCode.NOT_FOUND
    assert r.stderr.splitlines()[0] == ("nodecli: error: /edge/nothing: no such file or "
                                        "folder (the path stops at /edge)")
    r = invoke("files", "ls", "/edge/one.bin/below")
    assert r.exit_code == ExitCode.NOT_FOUND
    assert r.stderr.splitlines()[0] == ("nodecli: error: /edge/one.bin is a file, not a "
                                        "folder: /edge/one.bin/below does not exist")
    r = invoke("files", "tree", "/edge/one.bin")
    assert r.exit_code == ExitCode.USAGE
    assert r.stderr.splitlines()[0] == ("nodecli: error: /edge/one.bin is a file, not a "
                                        "folder: 'files tree' draws a folder")


def test_a_relative_path_starts_at_the_root(node, invoke):
    r = invoke("files", "ls", "generated/dir0001", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)[0]["path"] == "/generated/dir0001/dir0000"


@pytest.mark.parametrize("mode", ["numbered:3", "token:3"])
def test_tree_and_find_at_depth_0_1_and_all(node, invoke, mode):
    paging(node, mode)
    r = invoke("files", "tree", "/generated", "--depth", "0")
    assert (r.exit_code, r.stdout) == (0, "/generated\n")
    r = invoke("files", "tree", "/generated/dir0002", "--depth", "1")
    assert r.exit_code == 0, r.stderr
    names = _files_of(node, "g.2")
    assert r.stdout.splitlines() == [
        "/generated/dir0002", "├── dir0000/", "├── dir0001/", "├── dir0002/",
        *[f"├── {name}" for name in names[:-1]], f"└── {names[-1]}"]
    r = invoke("files", "find", "/generated", "--depth", "0", "-o", "json")
    assert (r.exit_code, json.loads(r.stdout)) == (0, [])
    r = invoke("files", "find", "/generated", "--depth", "1", "--type", "d", "-o", "json")
    assert [x["path"] for x in json.loads(r.stdout)] == [
        f"/generated/dir000{i}" for i in range(3)]
    r = invoke("files", "find", "/generated", "-o", "jsonl")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == 3 + 9 + 13 * 4
    # depth first: a folder, then what it holds
    assert [x["path"] for x in rows[:3]] == [
        "/generated/dir0000", "/generated/dir0000/dir0000", "/generated/dir0000/dir0000/" +
        _files_of(node, "g.0.0")[0]]
    r = invoke("files", "tree", "/generated", "-o", "json")
    assert max(x["depth"] for x in json.loads(r.stdout)) == 3


def _files_of(handle: EmulatorHandle, folder_id: str) -> list[str]:
    from nodecli.emulator.storage import storage_of

    tree = storage_of(handle.state).generated
    return [tree.file_name(folder_id, i) for i in range(tree.spec.files)]


def _dated(handle: EmulatorHandle, path: str, sizes_times: list[tuple[int, float]]) -> None:
    from nodecli.emulator.storage import storage_of

    st = storage_of(handle.state)
    with handle.state.lock:
        for i, (size, mtime) in enumerate(sizes_times):
            st.ensure(f"{path}/f{i}", "file", size).mtime = mtime


T = 1735689600  # 2025-01-01T00:00:00Z


def test_find_tests_at_their_exact_bounds(node, invoke):
    _dated(node, "/bounds", [(1023, T - 1), (1024, T), (1025, T + 1)])
    folder(node, "/bounds/sub", 0)

    def names(*args: str) -> list[str]:
        r = invoke("files", "find", "/bounds", *args, "-o", "json")
        assert r.exit_code == 0, r.stderr
        return [x["name"] for x in json.loads(r.stdout)]

    assert names("--min-size", "1K") == ["f1", "f2"]
    assert names("--min-size", "1024") == ["f1", "f2"]
    assert names("--min-size", "1025") == ["f2"]
    assert names("--min-size", "0") == ["f0", "f1", "f2"]  # folders have no size to test
    assert names("--newer", "2025-01-01T00:00:00Z") == ["f1", "f2"]
    assert names("--newer", "2025-01-01T00:00:01Z") == ["f2"]
    assert names("--type", "d") == ["sub"]
    assert names("--type", "f", "--min-size", "1025", "--newer", "2024-12-31T23:59:59Z") == \
        ["f2"]


def test_find_name_globs_match_whole_names(node, invoke):
    from nodecli.emulator.storage import storage_of

    st = storage_of(node.state)
    for name in ("a.txt", "a.txt.bak", "b.TXT", ".txt", "xa.txt"):
        st.ensure(f"/globs/{name}", "file", 1)

    def names(glob: str) -> list[str]:
        r = invoke("files", "find", "/globs", "--name", glob, "-o", "json")
        assert r.exit_code == 0, r.stderr
        return sorted(x["name"] for x in json.loads(r.stdout))

    assert names("*.txt") == [".txt", "a.txt", "xa.txt"]
    assert names("a.txt") == ["a.txt"]
    assert names("?.txt") == ["a.txt"]
    assert names("[ab].*") == ["a.txt", "a.txt.bak", "b.TXT"]
    assert names("*.TXT") == ["b.TXT"]


@pytest.mark.parametrize(("argv", "words"), [
    (("find", "/", "--min-size", "10X"), "--min-size: invalid size '10X'"),
    (("find", "/", "--min-size", "-1"), "invalid size '-1'"),
    (("find", "/", "--newer", "soon"), "--newer: invalid start time 'soon'"),
    (("find", "/", "--newer", "2999-01-01T00:00:00Z"), "--newer: start time 2999-01-01"),
])
def test_bad_tests_are_refused_before_any_request(node, invoke, served_files, argv, words):
    r = invoke("files", *argv)
    assert r.exit_code == ExitCode.USAGE
    assert words in r.stderr.splitlines()[0], r.stderr
    assert served_files == []


@pytest.fixture
def served_files(node: EmulatorHandle) -> Iterator[list[str]]:
    lines: list[str] = []
    before = node.server.access_log
    node.server.access_log = lines.append
    yield lines
    node.server.access_log = before


def test_a_node_user_is_told_to_log_in_with_a_key(node, invoke, monkeypatch, served_files):
    monkeypatch.delenv("NODECLI_ACCESS_KEY")
    node.add_node_user("browser", "browser-pass")
    r = invoke("node", "add", "emu", "--url", node.url, "--user", "browser",
               "--password-stdin", "--no-check", input="browser-pass\n")
    assert r.exit_code == 0, r.stderr
    monkeypatch.delenv("NODECLI_URL")
    r = invoke("files", "ls", "/", "--node", "emu")
    assert r.exit_code == ExitCode.USAGE, r
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: files are browsed with an access key or a bearer token: a node "
        "refuses node-user credentials on /files")
    assert served_files == []


def test_a_bearer_token_sees_what_it_holds_a_permission_on(node, invoke, monkeypatch):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.emulator.storage import Permission, storage_of
    from nodecli.tokens.wire import create_token

    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505 - a test key, fast
    ak = node.state.access_keys[AK]
    ak.token_verification_key = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    st = storage_of(node.state)
    st.permissions["p-files"] = Permission("p-files", "g.1", "user", "u-files",
                                           ["list", "read"])
    try:
        monkeypatch.delenv("NODECLI_PASSWORD")
        monkeypatch.setenv("NODECLI_BEARER", create_token(key, AK, "u-files", role="user"))
        r = invoke("files", "ls", "/", "-o", "json")
        assert r.exit_code == 0, r.stderr
        assert [x["name"] for x in json.loads(r.stdout)] == ["generated"]  # on the way
        r = invoke("files", "find", "/generated", "--type", "d", "-o", "json")
        assert [x["path"] for x in json.loads(r.stdout)] == [
            "/generated/dir0001", *[f"/generated/dir0001/dir000{i}" for i in range(3)]]
        r = invoke("files", "find", "/generated", "--type", "f", "-o", "json")
        assert len(json.loads(r.stdout)) == 4 + 3 * 4
        r = invoke("files", "ls", "/generated/dir0002")
        assert r.exit_code == ExitCode.NOT_FOUND
        assert "a bearer token's user sees only what it holds a permission on" in r.stderr
    finally:
        del st.permissions["p-files"]
        ak.token_verification_key = None


def test_a_folder_the_token_may_not_list_is_skipped_with_a_warning_exit_1(node, invoke,
                                                                          monkeypatch):
    """The token's user holds list on dir0001 but only read on dir0002: find lists the
    rest, warns about that folder, exits 1."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.emulator.storage import Permission, storage_of
    from nodecli.tokens.wire import create_token

    paging(node, "numbered")
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505 - a test key, fast
    ak = node.state.access_keys[AK]
    ak.token_verification_key = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    st = storage_of(node.state)
    st.permissions["p-l"] = Permission("p-l", "g.1", "user", "u-skip", ["list", "read"])
    st.permissions["p-r"] = Permission("p-r", "g.2", "user", "u-skip", ["read"])
    try:
        monkeypatch.delenv("NODECLI_PASSWORD")
        monkeypatch.setenv("NODECLI_BEARER", create_token(key, AK, "u-skip", role="user"))
        r = invoke("files", "find", "/generated", "--type", "d", "-o", "json")
        assert r.exit_code == ExitCode.ERROR, r
        assert [x["path"] for x in json.loads(r.stdout)] == [
            "/generated/dir0001", *[f"/generated/dir0001/dir000{i}" for i in range(3)],
            "/generated/dir0002"]
        warning, error = r.stderr.splitlines()
        assert warning.startswith("nodecli: warning: /generated/dir0002: not read (GET ")
        assert warning.endswith("HTTP 403: listing folder g.2 needs the list level)")
        assert error == ("nodecli: error: 1 folder(s) could not be read; what they hold is "
                         "not listed above")
        r = invoke("files", "tree", "/generated/dir0001", "--depth", "1")
        assert r.exit_code == 0, r.stderr  # not reached: nothing skipped
    finally:
        del st.permissions["p-l"], st.permissions["p-r"]
        ak.token_verification_key = None


@pytest.mark.parametrize("mode", ["numbered:2", "token:2", "bare:2"])
def test_tree_draws_the_last_of_each_folder_across_pages(node, invoke, mode):
    """Pages of 2: the last entry of a folder is known only from the next page."""
    from nodecli.emulator.storage import storage_of

    paging(node, mode)
    st = storage_of(node.state)
    for path in ("/draw/a/x", "/draw/a/y/deep", "/draw/b", "/draw/c/z"):
        st.ensure(path, "file" if path.endswith(("x", "deep", "b", "z")) else "folder")
    r = invoke("files", "tree", "/draw")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == [
        "/draw",
        "├── a/",
        "│   ├── x",
        "│   └── y/",
        "│       └── deep",
        "├── b",
        "└── c/",
        "    └── z"]
    r = invoke("files", "tree", "/draw", "--depth", "1")
    assert r.stdout.splitlines() == ["/draw", "├── a/", "├── b", "└── c/"]


def test_resolve_asks_for_the_page_size_it_is_given(node, served_files):
    from nodecli.node.files import resolve

    paging(node, "numbered")
    with client_for(node) as client:
        assert resolve(client, "/generated/dir0001/dir0002", per_page=2).id == "g.1.2"
    asked = [line for line in served_files if "/files/g" in line]
    assert asked and all("per_page=2 " in line for line in asked), asked


@pytest.mark.parametrize("mode", ["numbered:100", "token:40"])
def test_a_path_past_the_first_page_is_found_by_permission_and_access(node, invoke, mode):
    """permission and access commands find a path by its folder's listing: every page
    of it (a node pages at 100 or fewer), not the first alone."""
    who = "u-" + mode.split(":")[0]
    folder(node, "/data/wide", 150)  # (one module-wide node: each mode grants its own)
    paging(node, mode)
    r = invoke("permission", "grant", "/data/wide/f149", "--user", who, "--levels", "read")
    assert r.exit_code == 0, r.stderr
    r = invoke("permission", "list", "/data/wide/f149", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert who in [p["access_id"] for p in json.loads(r.stdout)]
    r = invoke("access", "who-can", "/data/wide/f149", "--access-key", AK, "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert who in r.stdout
