"""``files ls/find/tree`` over HTTPS against the emulator: its generated tree, its two
pagings (numbered pages with a total and a Link; an opaque token in a Link, no total),
and the boundaries of every page and test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

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
def test_list_folder_reads_every_page_whatever_the_paging(node, mode, count):
    from nodecli.node.files import list_folder

    paging(node, mode)
    fid = folder(node, f"/pages/{mode.replace(':', '-')}/n{count}", count)
    requests: list[int] = []
    with client_for(node) as client:
        names = [e.name for e in list_folder(client, fid, per_page=5,
                                             on_page=requests.append)]
    assert names == [f"f{i:03d}" for i in range(count)]
    # full pages are followed, the last short (or, by number, empty) page ends the list
    if mode.startswith("token"):
        expected = max(1, -(-count // 5))
    elif mode.startswith("numbered"):
        expected = max(1, -(-count // 5))
    else:
        expected = count // 5 + 1
    assert len(requests) == expected


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
