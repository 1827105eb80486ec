"""nodecli.node.paths at its boundaries (issue 33, item 2: the survivors of its mutation
run): a word of exactly 256 characters passes and 257 do not, each refused Unicode
category, exactly MAX_COMPONENTS components, and the key's root_file_id as a node says
it (a scripted server over HTTPS)."""

from __future__ import annotations

import json

import pytest

from nodecli.errors import RemoteError, UsageError
from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.node.paths import MAX_COMPONENTS, check_id, root_file_id, split_path
from tests.scripted_server import ScriptedServer, certificates, reply


def test_a_word_of_256_characters_passes_and_257_do_not():
    assert check_id("w" * 256, "an id") == "w" * 256
    with pytest.raises(UsageError) as e:
        check_id("w" * 257, "an id")
    assert str(e.value) == "an id must be a non-empty word of at most 256 characters"


@pytest.mark.parametrize("value", ["", " ", "\t", None, 7])
def test_an_empty_or_blank_word_or_no_string_is_refused(value):
    with pytest.raises(UsageError, match=r"^the id must be a non-empty word"):
        check_id(value, "the id")


@pytest.mark.parametrize("char", ["\x00", "\x7f", "\u200b", "\ud800", "\u2028", "\u2029"])
def test_each_refused_category_is_refused(char):
    # Cc, Cc, Cf, Cs, Zl, Zp
    with pytest.raises(UsageError) as e:
        check_id(f"a{char}b", "a name")
    assert str(e.value) == "invalid a name: control characters or bytes that are not UTF-8"


@pytest.mark.parametrize("value", ["a b", "é", "x\u00a0y", "-"])
def test_spaces_and_letters_of_any_script_pass(value):
    assert check_id(value, "a name") == value


def test_a_path_splits_into_its_words():
    assert split_path("/") == []
    assert split_path("/a//./b/") == ["a", "b"]
    assert split_path("/a b/c.d") == ["a b", "c.d"]


@pytest.mark.parametrize("path", ["a/b", "", None, "./a"])
def test_a_path_not_starting_with_a_slash_is_refused_and_shown(path):
    with pytest.raises(UsageError) as e:
        split_path(path)
    assert str(e.value) == ("a path starts with '/' (inside the access key's storage), not "
                            f"{str(path)!r}")


def test_the_refused_path_is_shown_in_60_characters():
    with pytest.raises(UsageError) as e:
        split_path("x" * 100)
    assert str(e.value).endswith(f"not {'x' * 60!r}")


@pytest.mark.parametrize("path", ["/..", "/a/../b", "/a/.."])
def test_dot_dot_is_refused(path):
    with pytest.raises(UsageError) as e:
        split_path(path)
    assert str(e.value) == "a path must not contain '..'"


def test_exactly_max_components_pass_and_one_more_does_not():
    assert MAX_COMPONENTS == 256
    assert split_path("/a" * 256) == ["a"] * 256
    with pytest.raises(UsageError) as e:
        split_path("/a" * 257)
    assert str(e.value) == "a path has at most 256 components"


def test_each_component_is_checked_by_name():
    with pytest.raises(UsageError) as e:
        split_path("/a/b\x01")
    assert str(e.value) == ("invalid a path component: control characters or bytes that "
                            "are not UTF-8")
    with pytest.raises(UsageError, match=r"^a path component must be"):
        split_path("/a/" + "c" * 257)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def node(certs):
    """A node whose GET /access_keys/self answers ``node.key`` (one for the module)."""

    def script(seen):
        yield reply(200, json.dumps(server.key).encode(),  # type: ignore[attr-defined]
                    [("Content-Type", "application/json")])

    server = ScriptedServer(script, tls=(certs[1], certs[2]))
    yield server
    server.close()


def _root(node, certs, key) -> str:
    node.key = key
    node.seen.clear()
    with open_client(Endpoint(node.url(), Auth("basic", username="ak", password="s"),
                              cacert=certs[0], deadline=10.0)) as client:
        try:
            return root_file_id(client)
        finally:
            assert [(s.method, s.target) for s in node.seen] == [
                ("GET", "/access_keys/self")]


@pytest.mark.parametrize(("root", "said"), [("42", "42"), (42, "42"), (0, "0"),
                                            ("r/1", "r/1")])
def test_the_root_file_id_is_said_as_text(node, certs, root, said):
    assert _root(node, certs, {"id": "ak", "root_file_id": root}) == said


@pytest.mark.parametrize("key", [{"id": "ak"}, {"root_file_id": ""}, {"root_file_id": None},
                                 {"root_file_id": True}, {"root_file_id": False},
                                 {"root_file_id": 1.5}, {"root_file_id": ["1"]}])
def test_a_missing_or_odd_root_file_id_is_the_nodes_fault(node, certs, key):
    with pytest.raises(RemoteError) as e:
        _root(node, certs, key)
    assert str(e.value) == "the node did not say the access key's root_file_id"
