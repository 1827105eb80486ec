"""nodecli.node.permissions at its boundaries (issue 33, item 2: the survivors of its
mutation run). The levels and targets in process; the path walk, the listing and each
request (grant, show, revoke, modify, a file's own permission) against a scripted HTTPS
node: what is asked, exactly, and what each answer becomes."""

from __future__ import annotations

import pytest

from nodecli.errors import AuthError, NotFoundError, RemoteError, UsageError
from nodecli.node import permissions as P

LEVELS = "list, read, write, delete, mkdir, rename, preview"


def test_levels_skip_empty_items_and_repeats_in_the_given_order():
    assert P.parse_levels(",list,, READ ,list,") == ["list", "read"]


def test_an_unknown_level_is_named_in_30_characters_with_the_known_ones():
    with pytest.raises(UsageError) as e:
        P.parse_levels("read, " + "x" * 40 + " ")
    assert str(e.value) == f"unknown access level {'x' * 30!r} (levels: {LEVELS})"


def test_no_level_at_all_names_the_known_ones():
    with pytest.raises(UsageError) as e:
        P.parse_levels(" , ")
    assert str(e.value) == f"--levels needs at least one of {LEVELS}"


@pytest.mark.parametrize(("path", "file_id"), [(None, None), ("/a", "7")])
def test_a_target_is_a_path_or_a_file_id_exactly_one(path, file_id):
    with pytest.raises(UsageError) as e:
        P.check_target(path, file_id)
    assert str(e.value) == "give a PATH or --file-id ID (one of the two)"


@pytest.mark.parametrize("file_id", ["", " ", "a\x00"])
def test_a_bad_file_id_is_refused_naming_the_option(file_id):
    with pytest.raises(UsageError) as e:
        P.check_target(None, file_id)
    assert str(e.value).startswith(("--file-id must be", "invalid --file-id:"))


# -- over HTTPS -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def perm_server(tmp_path_factory):
    from tests.scripted_server import RouteNode, certificates

    node = RouteNode(certificates(tmp_path_factory.mktemp("certs")))
    yield node
    node.close()


@pytest.fixture
def node(perm_server):
    return perm_server.reset()


def _bearer():
    from nodecli.http.client import Auth

    return Auth("bearer", token="tok-perm", access_key="ak")


def _tree(node, folders, statuses=None):
    """The key's root is folder "1"; ``folders`` maps a folder id to its entries;
    ``statuses`` a folder id to the status its listing answers instead."""
    node.routes[("GET", "/access_keys/self")] = [(200, {"id": "ak", "root_file_id": "1"}, [])]
    for fid, items in folders.items():
        node.routes[("GET", f"/files/{fid}/files")] = [(200, items, [])]
    for fid, status in (statuses or {}).items():
        node.routes[("GET", f"/files/{fid}/files")] = [(status, node.NO, [])]


TREE = {"1": [{"name": "a", "id": "2"}, {"name": "blank", "id": ""}],
        "2": [{"name": "b", "id": 3}], "3": []}


def test_a_path_is_walked_from_the_root_one_folder_at_a_time(node):
    _tree(node, TREE)
    with node.client() as c:
        assert P.resolve_path(c, "/a/b") == "3"
        assert P.file_id_for(c, None, "77") == "77"  # an id is taken as it is
    assert [t.split("?")[0] for _, t in node.asked()] == [
        "/access_keys/self", "/files/1/files", "/files/2/files"]


@pytest.mark.parametrize(("path", "where", "stops"), [
    ("/a/b/c", "/a/b/c", "/a/b"),  # the walk went two folders down
    ("/z", "/z", "/"),              # nothing walked: the root
    ("/blank", "/blank", "/"),      # an entry with an empty id is no file
])
def test_a_missing_component_is_named_with_where_the_path_stops(node, path, where, stops):
    _tree(node, TREE)
    with node.client() as c, pytest.raises(NotFoundError) as e:
        P.resolve_path(c, path)
    assert (e.value.message, e.value.hint) == (
        f"{where}: no such file or folder (the path stops at {stops})",
        "paths start at the access key's storage root")


def test_a_bearer_token_is_told_a_file_may_be_hidden_from_it(node):
    _tree(node, TREE)
    with node.client(_bearer()) as c, pytest.raises(NotFoundError) as e:
        P.resolve_path(c, "/a/x")
    assert (e.value.message, e.value.hint) == (
        "/a/x: not visible to this bearer token (the path stops at /a); it does not exist, "
        "or the token's user has no permission on it",
        "the access key itself (--access-key AK with its secret) sees every file of its "
        "storage")


@pytest.mark.parametrize("status", [403, 404])
def test_a_folder_a_token_may_not_list_hides_what_is_in_it(node, status):
    _tree(node, TREE, {"2": status})
    with node.client(_bearer()) as c, pytest.raises(NotFoundError) as e:
        P.resolve_path(c, "/a/b")
    assert e.value.message.startswith("/a/b: not visible to this bearer token (the path "
                                      "stops at /a)")


@pytest.mark.parametrize(("status", "error"), [(403, AuthError), (404, NotFoundError)])
def test_a_key_that_may_not_list_a_folder_gets_the_nodes_answer(node, status, error):
    _tree(node, TREE, {"2": status})
    with node.client() as c, pytest.raises(error) as e:
        P.resolve_path(c, "/a/b")
    assert "no such file or folder" not in e.value.message
    assert "/files/2/files" in e.value.message


def test_permissions_are_listed_with_or_without_the_inherited(node):
    perms = [{"id": "p1"}, "not an object", {"id": "p2"}]
    node.routes[("GET", "/permissions")] = [(200, perms, []), (200, {"permissions": perms}, [])]
    with node.client() as c:
        assert P.list_permissions(c, "5") == [{"id": "p1"}, {"id": "p2"}]
        assert P.list_permissions(c, "5", inherited=False) == [{"id": "p1"}, {"id": "p2"}]
    assert [t for _, t in node.asked()] == ["/permissions?file_id=5",
                                            "/permissions?file_id=5&inherited=false"]


def test_a_listing_that_is_no_list_is_a_remote_error_naming_the_request(node):
    node.routes[("GET", "/permissions")] = [(200, "all of them", [])]
    with node.client() as c, pytest.raises(RemoteError) as e:
        P.list_permissions(c, "5")
    assert str(e.value) == "GET /permissions did not answer with a list"


def test_a_grant_posts_exactly_the_permission(node):
    node.routes[("POST", "/permissions")] = [(200, {"id": "p9"}, []), (201, b"", [])]
    want = {"file_id": "5", "access_type": "group", "access_id": "staff",
            "access_levels": ["read"], "tags": {"t": 1}}
    with node.client() as c:
        assert P.grant(c, "5", "group", "staff", ["read"], {"t": 1}) == {"id": "p9"}
        # a node that answers no object: what was asked is what is
        assert P.grant(c, "5", "group", "staff", ["read"], {"t": 1}) == want
    assert node.bodies() == [want, want]


def test_a_grant_names_what_is_wrong_before_asking(node):
    with node.client() as c:
        with pytest.raises(UsageError) as e:
            P.grant(c, "5", "user", " ", ["read"])
        assert str(e.value).startswith("--user must be a non-empty word")
        with pytest.raises(UsageError) as e:
            P.grant(c, "5", "role", "x", ["read"])
        assert str(e.value) == "the permission is for a --user or a --group"
    assert node.asked() == []


def test_one_permission_by_its_quoted_id(node):
    node.routes[("GET", "/permissions/a%2Fb")] = [(200, {"id": "a/b"}, []), (200, [], [])]
    with node.client() as c:
        assert P.get_permission(c, "a/b") == {"id": "a/b"}
        with pytest.raises(RemoteError) as e:
            P.get_permission(c, "a/b")
        assert str(e.value) == "GET /permissions/{id} did not answer with an object"
        for call in (lambda: P.get_permission(c, ""), lambda: P.revoke(c, ""),
                     lambda: P.modify(c, "", ["read"])):
            with pytest.raises(UsageError) as e:
                call()
            assert str(e.value).startswith("permission id must be a non-empty word")
    assert [t for _, t in node.asked()] == ["/permissions/a%2Fb"] * 2


@pytest.mark.parametrize("status", [200, 204])
def test_a_revoke_deletes_by_the_quoted_id(node, status):
    node.routes[("DELETE", "/permissions/a%2Fb")] = [(status, b"", [])]
    with node.client() as c:
        P.revoke(c, "a/b")
    assert node.asked() == [("DELETE", "/permissions/a%2Fb")]


def test_a_modify_puts_the_levels_and_says_what_it_holds(node):
    node.routes[("PUT", "/permissions/a%2Fb")] = [
        (200, {"id": "a/b", "access_levels": ["list"], "tags": 1}, []), (204, b"", []),
        (200, ["odd"], [])]
    with node.client() as c:
        assert P.modify(c, "a/b", ["list"]) == {"id": "a/b", "access_levels": ["list"],
                                               "tags": 1}
        assert P.modify(c, "a/b", ["read", "list"]) == {"id": "a/b",
                                                        "access_levels": ["read", "list"]}
        assert P.modify(c, "a/b", ["read"]) == {"id": "a/b", "access_levels": ["read"]}
    assert node.asked() == [("PUT", "/permissions/a%2Fb")] * 3
    assert node.bodies() == [{"access_levels": ["list"]}, {"access_levels": ["read", "list"]},
                             {"access_levels": ["read"]}]


# A file's permissions: one of another file (inherited), one of a group of that name,
# one without a file id (the file's own), the file's own for bob, and one for eve.
OWN = [{"id": "p1", "access_type": "user", "access_id": "bob", "file_id": "9"},
       {"id": "p2", "access_type": "group", "access_id": "bob", "file_id": "5"},
       {"id": "p3", "access_type": "user", "access_id": "bob"},
       {"id": "p4", "access_type": "user", "access_id": "bob", "file_id": 5},
       {"id": "p5", "access_type": "user", "access_id": "eve", "file_id": "5"}]


def test_a_files_own_permission_for_a_user(node):
    node.routes[("GET", "/permissions")] = [(200, OWN, [])]
    with node.client() as c:
        assert P.own_permission(c, "5", "user", "bob")["id"] == "p3"
        with pytest.raises(NotFoundError) as e:
            P.own_permission(c, "5", "user", "zed")
    assert (e.value.message, e.value.hint) == (
        "no permission for user 'zed' on that file",
        "grant one with 'nodecli permission grant'")
    assert [t for _, t in node.asked()] == ["/permissions?file_id=5&inherited=false"] * 2


def test_revoking_a_users_permissions_on_a_file_deletes_its_own_only(node):
    node.routes[("GET", "/permissions")] = [(200, OWN, [])]
    for pid in ("p3", "p4"):
        node.routes[("DELETE", f"/permissions/{pid}")] = [(204, b"", [])]
    with node.client() as c:
        assert P.revoke_for(c, "5", "user", "bob") == ["p3", "p4"]
        with pytest.raises(NotFoundError) as e:
            P.revoke_for(c, "5", "group", "eve")
    assert e.value.message == "no permission for group 'eve' on that file"
    assert node.asked() == [("GET", "/permissions?file_id=5&inherited=false"),
                            ("DELETE", "/permissions/p3"), ("DELETE", "/permissions/p4"),
                            ("GET", "/permissions?file_id=5&inherited=false")]
