"""nodecli.node.files without a node: sizes users type, entries nodes send, the
generated tree's arithmetic and the emulator's paging options."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecli.errors import ExitCode, UsageError


@pytest.mark.parametrize(("text", "size"), [
    ("0", 0), ("1", 1), ("512", 512), ("1B", 1), ("1b", 1), ("1K", 1024), ("1k", 1024),
    ("2KiB", 2048), ("3kb", 3072), ("10M", 10 * 2**20), ("1.5G", 3 * 2**29),
    ("1T", 2**40), ("1P", 2**50), (".5K", 512), ("1.", 1), (" 7M ", 7 * 2**20),
    ("0.0001K", 0), ("1 K", 1024), ("99999999999999999999", 99999999999999999999),
])
def test_sizes_users_type(text, size):
    from nodecli.node.files import parse_size

    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", " ", "K", "KiB", "iB", "B", "-1", "+1", "1X", "1.2.3",
                                  "1e3", "1KK", "1 000", "0x10", "١", "1" * 41, "1.0000000001",
                                  "1iB", "nan", "inf"])
def test_sizes_that_are_no_size_are_refused(text):
    from nodecli.node.files import parse_size

    with pytest.raises(UsageError) as info:
        parse_size(text)
    assert info.value.exit_code == ExitCode.USAGE
    assert info.value.message == (
        f"invalid size {text[:40]!r}: a number of bytes with an optional unit K, M, G, T "
        "or P (1024-based), such as 10M or 1.5G")


@given(st.integers(min_value=0, max_value=10**15), st.sampled_from("KMGTP"))
def test_a_whole_number_of_units_is_exact(n, unit):
    from nodecli.node.files import SIZE_UNITS, parse_size

    assert parse_size(f"{n}{unit}") == n * SIZE_UNITS[unit]
    assert parse_size(f"{n}{unit.lower()}ib") == n * SIZE_UNITS[unit]


def test_entries_as_nodes_send_them():
    from nodecli.node.files import Entry, entry_from

    e = entry_from({"id": 7, "name": "a b", "type": "file", "size": 0,
                    "mtime": "2030-01-02T03:04:05Z", "extra": [1]}, "/x/", "GET")
    assert e == Entry("7", "a b", "file", "/x/a b", 0, datetime(2030, 1, 2, 3, 4, 5,
                                                                  tzinfo=UTC))
    assert not e.is_folder
    assert e.as_dict() == {"path": "/x/a b", "name": "a b", "type": "file", "size": 0,
                           "mtime": "2030-01-02T03:04:05Z", "id": "7"}
    root_child = entry_from({"id": "f", "name": "d", "type": "folder"}, "/", "GET")
    assert (root_child.path, root_child.size, root_child.mtime) == ("/d", None, None)
    assert root_child.is_folder and root_child.as_dict()["mtime"] is None
    assert entry_from({"id": "f", "name": "d", "type": "directory"}, "/", "GET").is_folder
    assert not entry_from({"id": "f", "name": "d", "type": "link"}, "/", "GET").is_folder
    long = entry_from({"id": "i" * 1024, "name": "n" * 4096, "type": "t" * 64}, "/", "GET")
    assert len(long.id) == 1024 and len(long.name) == 4096


@pytest.mark.parametrize(("data", "why"), [
    ({"id": "i" * 1025, "name": "n", "type": "file"}, "an entry has no usable id"),
    ({"id": "", "name": "n", "type": "file"}, 'an entry has no usable id ("")'),
    ({"id": 1.5, "name": "n", "type": "file"}, "an entry has no usable id (1.5)"),
    ({"name": "n", "type": "file"}, "an entry has no usable id (null)"),
    ({"id": "i", "name": "n" * 4097, "type": "file"}, "entry i has no usable name"),
    ({"id": "i", "name": ".", "type": "file"}, 'entry i has no usable name (".")'),
    ({"id": "i", "name": "a\x00b", "type": "file"}, "entry i has no usable name"),
    ({"id": "i", "name": 5, "type": "file"}, "entry i has no usable name (5)"),
    ({"id": "i", "name": "n", "type": ""}, 'entry n has no type ("")'),
    ({"id": "i", "name": "n", "type": "t" * 65}, "entry n has no type"),
    ({"id": "i", "name": "n", "type": 3}, "entry n has no type (3)"),
    ({"id": "i", "name": "n", "type": "file", "size": [1]}, "entry n: its size [1] is not a whole"),
    ({"id": "i", "name": "n", "type": "file", "mtime": ""}, 'entry n: its mtime "" is not an ISO'),
    ({"id": "i", "name": "n", "type": "file", "mtime": "10000-01-01T00:00:00Z"},
     'entry n: its mtime "10000-01-01T00:00:00Z" is not an ISO 8601 time'),
])
def test_entries_nodecli_cannot_take(data, why):
    from nodecli.node.files import ListingError, entry_from

    with pytest.raises(ListingError) as info:
        entry_from(data, "/", "GET /files/1/files (page 2)")
    assert info.value.exit_code == ExitCode.REMOTE
    assert info.value.message.startswith("GET /files/1/files (page 2): " + why)
    assert info.value.hint == ("the node sent a listing nodecli cannot read; nothing was "
                               "guessed (report it to the node's administrator)")


def test_a_size_of_exactly_zero_and_a_huge_one_are_sizes():
    from nodecli.node.files import entry_from

    assert entry_from({"id": 1, "name": "n", "type": "file", "size": 0}, "/", "").size == 0
    assert entry_from({"id": 1, "name": "n", "type": "file", "size": 2**70}, "/", "").size \
        == 2**70


# -- the emulator's tree and paging options ----------------------------------------------


def test_the_generated_tree_counts_and_ids():
    from nodecli.emulator.generated import GeneratedTree, TreeSpec
    from nodecli.emulator.storage import FileNode

    spec = TreeSpec.parse("fanout=3,depth=2,files=4,seed=7")
    assert (spec.folders(), spec.entries()) == (13, 12 + 13 * 4)
    tree = GeneratedTree(spec, FileNode)
    assert [c.id for c in tree.children(tree.node("g"))] == [
        "g.0", "g.1", "g.2", "g.f0", "g.f1", "g.f2", "g.f3"]
    assert [c.id for c in tree.children(tree.node("g.1.2"))] == [f"g.1.2.f{i}" for i in range(4)]
    assert [c.id for c in tree.children(tree.node("g"), 2, 4)] == ["g.2", "g.f0"]
    for bad in ("g.3", "g.0.0.0", "g.f4", "g.01", "g.x", "g.", "h", "g.1.f", "g.f01", ""):
        assert tree.node(bad) is None, bad
    for fid in ("g", "g.2", "g.2.1", "g.2.1.f3", "g.f0"):
        node = tree.node(fid)
        assert tree.by_path(node.path) == node
    assert tree.lineage("g.2.1.f3") == ["g.2.1.f3", "g.2.1", "g.2", "g"]
    one = TreeSpec.parse("fanout=1000,depth=2,files=1000")
    assert one.entries() == 1000 + 1000**2 + (1 + 1000 + 1000**2) * 1000  # ~10^9: free


@pytest.mark.parametrize(("text", "why"), [
    ("fanout=3,depth=2", "the generated tree needs files=N"),
    ("fanout=3,depth=2,files=x", "files is a whole number, not 'x'"),
    ("fanout=3,depth=65,files=1", "depth is at most 64"),
    ("fanout=10,depth=13,files=1", "more than 1000000000000 entries"),
    ("fanout=3,depth=2,files=1,at=rel", "at is an absolute folder path below /"),
    ("fanout=3,depth=2,files=1,at=/", "at is an absolute folder path below /"),
    ("fanout=3,depth=2,files=1,at=/a/../b", "at is an absolute folder path below /"),
    ("fanout=3,depth=2,files=1,colour=red", "expected fanout=F,depth=D,files=N"),
])
def test_generated_tree_options_that_are_refused(text, why):
    from nodecli.emulator.generated import TreeSpec

    with pytest.raises(ValueError, match=why.replace("(", r"\(")):
        TreeSpec.parse(text)


def test_paging_options():
    from nodecli.emulator.generated import Paging

    assert Paging.parse("numbered") == Paging("numbered", None)
    assert Paging.parse("token:7") == Paging("token", 7)
    assert Paging.parse("bare:100000") == Paging("bare", 100000)
    for bad in ("pages", "token:0", "token:100001", "token:x", "token:-1", ""):
        with pytest.raises(ValueError):
            Paging.parse(bad)


def test_emulator_serve_refuses_bad_tree_and_paging_options(invoke):
    r = invoke("emulator", "serve", "--generated-tree", "fanout=1")
    assert r.exit_code == ExitCode.USAGE
    assert r.stderr.splitlines()[0] == ("nodecli: error: --generated-tree: the generated tree "
                                        "needs depth=N")
    r = invoke("emulator", "serve", "--files-paging", "pages")
    assert r.exit_code == ExitCode.USAGE
    assert r.stderr.splitlines()[0].startswith("nodecli: error: --files-paging: paging is "
                                               "one of numbered, token, bare[:SIZE]")
