"""nodecli.node.access_keys at its boundaries (issue 33, item 2: the survivors of its
mutation run): an id of 1 and 128 characters, the logging setting's body and where it is
read, a deep merge, what `access-key show` says of logging at node 3.7.4 and 3.8.0
exactly, and what create refuses before asking. Pure functions in process; the requests
(list, show, self, create, set-verification-key) against a scripted HTTPS node."""

from __future__ import annotations

import pytest

from nodecli.errors import NodecliError, NotFoundError, UsageError
from nodecli.node.access_keys import (
    check_ak_id,
    describe,
    key_logging,
    logging_body,
    merge,
    not_found,
    require_per_key_logging,
)


@pytest.mark.parametrize("ak", ["a", "A" * 128, "ak_1.x@y+z-w", "0"])
def test_an_id_of_one_to_128_allowed_characters_passes(ak):
    assert check_ak_id(ak) == ak


@pytest.mark.parametrize("ak", ["", "A" * 129, "a b", "a/b", "a\n", "é", "a:b", None])
def test_any_other_id_is_refused_and_shown(ak):
    with pytest.raises(UsageError) as e:
        check_ak_id(ak)
    assert str(e.value) == (f"invalid access key id {str(ak)[:60]!r}: letters, digits and "
                            ". _ @ + - (at most 128)")


def test_a_refused_id_is_shown_in_60_characters():
    with pytest.raises(UsageError) as e:
        check_ak_id("/" * 99)
    assert f"{'/' * 60!r}:" in str(e.value)


@pytest.mark.parametrize(("value", "setting"), [("on", True), ("off", False),
                                                ("inherit", None)])
def test_the_logging_body(value, setting):
    assert logging_body(value) == {"configuration": {"activity_event_logging": setting}}


@pytest.mark.parametrize("value", ["ON", "true", "", "yes"])
def test_a_logging_value_is_on_off_or_inherit(value):
    with pytest.raises(UsageError) as e:
        logging_body(value)
    assert str(e.value) == "--activity-event-logging takes on, off or inherit"


@pytest.mark.parametrize(("key", "own"), [
    ({"configuration": {"activity_event_logging": True}}, True),
    ({"configuration": {"activity_event_logging": False}}, False),
    ({"configuration": {"activity_event_logging": None}}, None),
    ({"configuration": {"activity_event_logging": 1}}, None),
    ({"configuration": {"activity_event_logging": "true"}}, None),
    ({"configuration": {}}, None), ({"configuration": [True]}, None), ({}, None),
    ({"activity_event_logging": True}, None)])
def test_the_keys_own_logging(key, own):
    assert key_logging(key) is own


def test_a_deep_merge_where_the_second_wins():
    base = {"a": 1, "c": {"x": 1, "y": {"p": 1}}, "d": {"k": 1}}
    got = merge(base, {"b": 2, "c": {"y": {"q": 2}, "z": 3}, "d": 5, "a": {"n": 1}})
    assert got == {"a": {"n": 1}, "b": 2, "c": {"x": 1, "y": {"p": 1, "q": 2}, "z": 3},
                   "d": 5}
    assert base == {"a": 1, "c": {"x": 1, "y": {"p": 1}}, "d": {"k": 1}}  # not changed


KEY = {"id": "ak1", "storage": {"type": "local", "path": "/data"}, "root_file_id": "7",
       "configuration": {"activity_event_logging": False}}


def _logging(key, node, version):
    return describe(key, node, version)["activity_event_logging"]


def test_describe_says_the_key():
    got = describe(KEY, True, (4, 0, 0))
    assert {k: v for k, v in got.items() if k != "activity_event_logging"} == {
        "id": "ak1", "storage_type": "local", "storage_path": "/data", "root_file_id": "7",
        "verification_key": False, "verification_key_fingerprint": None}
    bare = describe({"storage": "x"}, None, None)
    assert (bare["id"], bare["storage_type"], bare["storage_path"]) == (None, None, None)


@pytest.mark.parametrize(("version", "logged", "why"), [
    ((3, 7, 3), True, "every event is logged before node 3.7.4"),
    ((3, 7, 4), True, "the node setting (the key has none of its own)"),
    ((3, 7, 9), True, "the node setting (the key has none of its own)"),
    ((3, 8, 0), False, "the key's own setting overrides the node's (3.8.0+)"),
    (None, False, "the key's own setting overrides the node's (3.8.0+)")])
def test_logging_follows_the_version_at_each_boundary(version, logged, why):
    assert _logging(KEY, True, version) == {"key": False, "node": True,
                                             "events_logged": logged, "why": why}


def test_logging_without_a_setting_of_its_own_or_the_nodes():
    bare = {"id": "ak1"}
    assert _logging(bare, False, (3, 8, 0))["events_logged"] is False
    assert _logging(bare, None, (3, 8, 0)) == {
        "key": None, "node": None, "events_logged": None,
        "why": "the node setting is not known to this login"}
    assert _logging(bare, None, (3, 7, 3))["events_logged"] is True


def test_describe_fingerprints_a_registered_key(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.tokens.keys import key_fingerprint

    pub = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    pem = pub.public_bytes(serialization.Encoding.PEM,
                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    got = describe({"token_verification_key": pem}, None, None)
    assert (got["verification_key"], got["verification_key_fingerprint"]) == (
        True, key_fingerprint(pub))
    bad = describe({"token_verification_key": "-----BEGIN PUBLIC KEY-----\nx"}, None, None)
    assert (bad["verification_key"], bad["verification_key_fingerprint"]) == (
        True, "unreadable")
    for none in (" \n", "", 5):
        got = describe({"token_verification_key": none}, None, None)
        assert (got["verification_key"], got["verification_key_fingerprint"]) == (False, None)


def test_per_key_logging_needs_node_3_8_0_exactly():
    require_per_key_logging((3, 8, 0), "3.8.0")
    require_per_key_logging(None, None)
    with pytest.raises(NodecliError) as e:
        require_per_key_logging((3, 7, 9), "3.7.9b")
    assert e.value.message == ("this node runs version 3.7.9b: activity_event_logging per "
                               "access key exists from node 3.8.0")
    assert e.value.hint == "set the node-wide activity_event_logging instead, or upgrade"


def test_not_found_names_the_key():
    err = not_found("ak'1")
    assert isinstance(err, NotFoundError) and err.message == "no access key \"ak'1\""


# -- over HTTPS: the requests, asked of a scripted node -----------------------------------

NO = {"error": {"user_message": "no"}}


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from tests.scripted_server import certificates

    return certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def key_server(certs):
    from tests.scripted_server import RouteNode

    node = RouteNode(certs)
    yield node
    node.server.close()


@pytest.fixture
def node(key_server):
    key_server.routes.clear()
    key_server.server.seen.clear()
    return key_server


def _keys(*ids):
    return [{"id": i} for i in ids]


def test_keys_are_listed_page_after_page_until_an_empty_page(node):
    from nodecli.node.access_keys import list_access_keys

    A = "/access_keys"
    node.routes.update({
        ("GET", f"{A}?page=1&per_page=2"): [(200, _keys("a", "b"), [])],
        ("GET", f"{A}?page=2&per_page=2"): [(200, _keys("c"), [])],  # short: not the end
        ("GET", f"{A}?page=3&per_page=2"): [(200, [], [])]})
    with node.client() as c:
        assert [k["id"] for k in list_access_keys(c, page_size=2)] == ["a", "b", "c"]
    assert [t for _, t in node.asked()] == [f"{A}?page=1&per_page=2", f"{A}?page=2&per_page=2",
                                            f"{A}?page=3&per_page=2"]
    node.server.seen.clear()
    node.routes[("GET", f"{A}?page=1&per_page=100")] = [(200, b"", [])]
    with node.client() as c:
        assert list_access_keys(c) == []
    assert [t for _, t in node.asked()] == [f"{A}?page=1&per_page=100"]


def test_a_node_that_ignores_paging_is_read_once_and_a_key_listed_again_is_kept_once(node):
    from nodecli.node.access_keys import list_access_keys

    node.routes[("GET", "/access_keys")] = [(200, _keys("a", "b", 1), [])]
    with node.client() as c:
        assert list_access_keys(c) == [{"id": "a"}, {"id": "b"}, {"id": 1}]
    assert len(node.asked()) == 2  # the second page held nothing new
    node.server.seen.clear()
    node.routes[("GET", "/access_keys")] = [(200, _keys("a", "b"), []), (200, _keys("b", "c"), []),
                                            (200, _keys("c"), [])]
    with node.client() as c:
        assert [k["id"] for k in list_access_keys(c)] == ["a", "b", "c"]
    assert len(node.asked()) == 3


def test_a_link_is_followed_and_a_link_back_is_a_loop(node):
    from nodecli.errors import RemoteError
    from nodecli.node.access_keys import list_access_keys

    first = "/access_keys?page=1&per_page=100"
    node.routes.update({
        ("GET", first): [(200, _keys("a"), node.link("/access_keys?cursor=x"))],
        ("GET", "/access_keys?cursor=x"): [(200, _keys("b"), node.link("/access_keys?cursor=y"))],
        ("GET", "/access_keys?cursor=y"): [(200, [], node.link("/access_keys?cursor=x"))]})
    with node.client() as c:
        assert [k["id"] for k in list_access_keys(c)] == ["a", "b"]
    node.routes[("GET", "/access_keys?cursor=y")] = [(200, _keys("c"),
                                                      node.link("/access_keys?cursor=x"))]
    with node.client() as c, pytest.raises(RemoteError) as e:
        list_access_keys(c)
    url = node.server.url()
    assert str(e.value) == (f"{url}/access_keys?cursor=y: the node's Link rel=\"next\" leads "
                            f"back to a page already read ({url}/access_keys?cursor=x, after 3 "
                            "pages); stopping rather than reading it again")
    node.routes[("GET", "/access_keys?cursor=y")] = [(200, _keys("c"),
                                                      node.link("/access_keys?cursor=y"))]
    with node.client() as c, pytest.raises(RemoteError):
        list_access_keys(c)  # a link to itself: the page just read


@pytest.mark.parametrize(("ak", "path"), [("ak1", "/access_keys/ak1"),
                                          ("a@b+c", "/access_keys/a%40b%2Bc")])
def test_a_key_is_asked_by_its_quoted_id(node, ak, path):
    from nodecli.node.access_keys import delete_access_key, get_access_key, update_access_key

    node.routes[("GET", path)] = [(200, {"id": ak}, [])]
    node.routes[("PUT", path)] = [(204, b"", [])]
    node.routes[("DELETE", path)] = [(204, b"", [])]
    with node.client() as c:
        assert get_access_key(c, ak) == {"id": ak}
        assert update_access_key(c, ak, {"x": 1}) is None
        delete_access_key(c, ak)
    assert node.asked() == [("GET", path), ("PUT", path), ("DELETE", path)]


def test_a_key_that_is_no_object_or_not_there(node):
    from nodecli.errors import AuthError, RemoteError
    from nodecli.node.access_keys import get_access_key

    node.routes[("GET", "/access_keys/k")] = [(200, ["k"], []), (404, NO, []), (403, NO, []),
                                              (410, NO, [])]
    with node.client() as c:
        with pytest.raises(RemoteError) as e:
            get_access_key(c, "k")
        assert str(e.value) == "GET /access_keys/k did not answer with an object"
        with pytest.raises(NotFoundError) as e:
            get_access_key(c, "k")
        assert e.value.hint == ("no access key 'k' that this login may see: list them with "
                                "'nodecli access-key list'")
        with pytest.raises(AuthError) as e:
            get_access_key(c, "k")
        assert e.value.hint == ("a node user changes the keys it owns; an access key changes "
                                "itself; a bearer token needs scope node.AK:admin:all")
        with pytest.raises(NodecliError) as e:
            get_access_key(c, "k")
        assert e.value.hint is None
        with pytest.raises(UsageError):
            get_access_key(c, "a/b")
    assert len(node.asked()) == 4


def test_self_is_the_key_of_the_login_and_a_user_has_none(node):
    from nodecli.errors import AuthError, RemoteError
    from nodecli.http.client import Auth
    from nodecli.node.access_keys import self_key

    user_hint = ("log in with an access key (--access-key AK) or a bearer token "
                 "(--bearer-file with --access-key): a node user has no key of its own")
    node.routes[("GET", "/access_keys/self")] = [(200, {"id": "me"}, []), (200, [1], [])]
    with node.client() as c:
        assert self_key(c) == {"id": "me"}
        with pytest.raises(RemoteError) as e:
            self_key(c)
        assert str(e.value) == "GET /access_keys/self did not answer with an object"
    for status in (400, 401, 403, 404, 500):
        node.routes[("GET", "/access_keys/self")] = [(status, NO, [])]
        with node.client() as c, pytest.raises(NodecliError) as e:
            self_key(c)
        assert e.value.hint == (None if status == 500 else user_hint)
    key = Auth("basic", username="ak1", password="pw-keys", access_key="ak1")
    node.routes[("GET", "/access_keys/self")] = [(401, NO, []), (403, NO, [])]
    with node.client(key) as c:
        with pytest.raises(AuthError) as e:
            self_key(c)
        assert e.value.hint.startswith("the request used access key 'ak1' and its secret")
        with pytest.raises(AuthError) as e:
            self_key(c)
        assert e.value.hint == user_hint
    assert node.asked()[-1] == ("GET", "/access_keys/self")


def test_create_posts_the_storage_the_id_the_secret_and_the_extras(node):
    from nodecli.node.access_keys import create_access_key

    node.routes[("POST", "/access_keys")] = [
        (201, {"id": "ak9", "secret": "s3cret-chosen", "x": 1}, []), (200, b"", []),
        (200, b"not json", []), (200, [1], [])]
    with node.client() as c:
        got = create_access_key(c, "local", "/data", id="ak9", secret="s3cret-chosen",
                                extra={"configuration": {"a": 1}, "storage": "lost"})
        # the chosen secret is never echoed; what the node left out is what was asked
        assert got == {"id": "ak9", "x": 1, "storage": {"type": "local", "path": "/data"}}
        assert create_access_key(c, {"type": "s3", "bucket": "b"}) == {
            "id": None, "storage": {"type": "s3", "bucket": "b"}}
        assert create_access_key(c, "local", id="k2") == {
            "id": "k2", "storage": {"type": "local", "path": "/"}}
        assert create_access_key(c, "local", "/p") == {
            "id": None, "storage": {"type": "local", "path": "/p"}}
    assert node.bodies() == [
        {"configuration": {"a": 1}, "storage": {"type": "local", "path": "/data"},
         "id": "ak9", "secret": "s3cret-chosen"},
        {"storage": {"type": "s3", "bucket": "b"}},
        {"storage": {"type": "local", "path": "/"}, "id": "k2"},
        {"storage": {"type": "local", "path": "/p"}}]
    assert node.asked() == [("POST", "/access_keys")] * 4


def test_create_keeps_a_secret_the_node_did_not_choose_and_hides_a_chosen_one(node):
    from nodecli.node.access_keys import create_access_key

    node.routes[("POST", "/access_keys")] = [(200, {"id": "n", "secret": "made"}, []),
                                             (201, {"id": "n2"}, []),
                                             (400, {"error": {"user_message":
                                                              "bad s3cret-chosen"}}, [])]
    with node.client() as c:
        assert create_access_key(c, "local")["secret"] == "made"
        assert create_access_key(c, "local", secret="s3cret-chosen") == {
            "id": "n2", "storage": {"type": "local", "path": "/"}}  # not echoed: nothing to drop
        with pytest.raises(NodecliError) as e:
            create_access_key(c, "local", secret="s3cret-chosen")
    assert "s3cret-chosen" not in str(e.value) and "bad ***" in str(e.value)


@pytest.mark.parametrize(("kw", "says"), [
    ({"storage_type": "s3"}, "storage type 's3' is not supported (supported: local)"),
    ({"storage_type": "local", "path": "data"},
     "--path must be absolute (start with /), not 'data'"),
    ({"storage_type": "local", "id": "a b"},
     "invalid access key id 'a b': use letters, digits and . _ @ + -"),
    ({"storage_type": "local", "id": "a" * 129},
     f"invalid access key id {'a' * 129!r}: use letters, digits and . _ @ + -")])
def test_create_refuses_before_asking(node, kw, says):
    from nodecli.node.access_keys import create_access_key

    with node.client() as c, pytest.raises(UsageError) as e:
        create_access_key(c, **kw)
    assert str(e.value) == says
    assert node.asked() == []


@pytest.mark.parametrize(("status", "hint"), [
    (409, "access key ids are unique on a node: choose another --id, or leave --id out "
          "and the node makes one"),
    (403, "only a node user may create access keys, and its transfer user needs a "
          "restriction (nodecli xuser ... --restriction)"),
    (400, None), (202, None)])
def test_create_says_why_a_key_was_not_made(node, status, hint):
    from nodecli.node.access_keys import create_access_key

    node.routes[("POST", "/access_keys")] = [(status, NO, [])]
    with node.client() as c, pytest.raises(NodecliError) as e:
        create_access_key(c, "local", id="k")
    assert e.value.hint == hint


@pytest.fixture(scope="module")
def pems(tmp_path_factory):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    d = tmp_path_factory.mktemp("pems")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    files = {
        "private": key.private_bytes(serialization.Encoding.PEM,
                                     serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()),
        "public": pub,
        "encrypted": key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.BestAvailableEncryption(b"pw")),
        "ec": ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        "junk": b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
    }
    for name, data in files.items():
        (d / f"{name}.pem").write_bytes(data)
    return d, pub.decode()


def test_a_public_key_is_read_from_a_public_or_a_private_key_file(pems):
    from nodecli.node.access_keys import read_public_key_pem

    d, pub = pems
    assert read_public_key_pem(str(d / "public.pem")) == (pub, False)
    assert read_public_key_pem(str(d / "private.pem")) == (pub, True)


@pytest.mark.parametrize(("name", "says"), [
    ("encrypted", ": not a usable (unencrypted) PEM private key: "),
    ("junk", ": not a PEM public key (expected -----BEGIN PUBLIC KEY-----)"),
    ("ec", ": bearer tokens are verified with RSA keys; this key is not RSA")])
def test_a_key_file_nodecli_cannot_use_is_refused_and_named(pems, name, says):
    from nodecli.node.access_keys import read_public_key_pem

    d, _ = pems
    with pytest.raises(UsageError) as e:
        read_public_key_pem(str(d / f"{name}.pem"))
    assert str(e.value).startswith(f"{d / name}.pem{says}")
    if name == "encrypted":
        assert "\n" not in str(e.value) and len(str(e.value)) > len(f"{d}/x.pem{says}")


def test_a_key_file_of_64_kib_is_read_and_one_byte_more_is_not(pems, tmp_path):
    from nodecli.node.access_keys import MAX_PEM_BYTES, read_public_key_pem

    _, pub = pems
    assert MAX_PEM_BYTES == 64 * 1024
    f = tmp_path / "big.pem"
    f.write_bytes(pub.encode() + b"\n" * (MAX_PEM_BYTES - len(pub)))
    assert read_public_key_pem(str(f)) == (pub, False)
    f.write_bytes(pub.encode() + b"\n" * (MAX_PEM_BYTES - len(pub) + 1))
    with pytest.raises(UsageError) as e:
        read_public_key_pem(str(f))
    assert str(e.value) == f"PEM key file {f} is larger than {MAX_PEM_BYTES} bytes"


def test_a_key_path_may_start_with_a_tilde(pems, monkeypatch):
    from nodecli.node.access_keys import read_public_key_pem

    d, pub = pems
    monkeypatch.setenv("HOME", str(d))
    assert read_public_key_pem("~/public.pem") == (pub, False)


def test_a_verification_key_is_put_on_the_quoted_key(node):
    from nodecli.errors import AuthError
    from nodecli.node.access_keys import set_verification_key

    node.routes[("PUT", "/access_keys/a%40b")] = [(204, b"", []), (200, {}, []),
                                                  (404, NO, []), (403, NO, []), (202, NO, [])]
    with node.client() as c:
        set_verification_key(c, "a@b", "PEM")
        set_verification_key(c, "a@b", "PEM")
        with pytest.raises(NotFoundError) as e:
            set_verification_key(c, "a@b", "PEM")
        assert e.value.hint == ("no access key 'a@b' on this node: create it with 'nodecli "
                                "access-key create'")
        with pytest.raises(AuthError) as e:
            set_verification_key(c, "a@b", "PEM")
        assert e.value.hint == ("an access key may only change itself; a node user may "
                                "change any key")
        with pytest.raises(NodecliError) as e:
            set_verification_key(c, "a@b", "PEM")
        assert e.value.hint is None
        with pytest.raises(UsageError) as e:
            set_verification_key(c, "a b", "PEM")
        assert str(e.value) == "invalid access key id 'a b'"
    assert node.asked() == [("PUT", "/access_keys/a%40b")] * 5
    assert node.bodies() == [{"token_verification_key": "PEM"}] * 5


def test_a_list_may_be_wrapped_and_anything_else_is_an_error(node):
    from nodecli.errors import RemoteError
    from nodecli.node.access_keys import list_access_keys

    node.routes[("GET", "/access_keys")] = [(200, {"access_keys": _keys("a", "b")}, []),
                                            (200, {"access_keys": []}, []),
                                            (200, {"items": _keys("c")}, []),
                                            (200, [], []), (200, "keys", [])]
    with node.client() as c:
        assert [k["id"] for k in list_access_keys(c)] == ["a", "b"]
        assert [k["id"] for k in list_access_keys(c)] == ["c"]
        with pytest.raises(RemoteError) as e:
            list_access_keys(c)
    assert str(e.value) == "GET /access_keys did not answer with a list"


def test_a_link_back_to_the_first_page_asked_by_number_is_a_loop(node):
    from nodecli.errors import RemoteError
    from nodecli.node.access_keys import list_access_keys

    first = "/access_keys?page=1&per_page=100"
    node.routes.update({
        ("GET", first): [(200, _keys("a"), node.link("/access_keys?cursor=x"))],
        ("GET", "/access_keys?cursor=x"): [(200, _keys("b"), node.link(first))]})
    with node.client() as c, pytest.raises(RemoteError) as e:
        list_access_keys(c)
    assert f"leads back to a page already read ({node.server.url()}{first}, after 2 " \
           "pages)" in str(e.value)
    assert len(node.asked()) == 2


def test_a_relative_link_and_a_link_to_another_host_are_asked_here(node):
    from nodecli.node.access_keys import list_access_keys

    first = "/access_keys?page=1&per_page=100"
    node.routes.update({
        ("GET", first): [(200, _keys("a"), [("Link", '</access_keys?cursor=x>; rel="next"')])],
        ("GET", "/access_keys?cursor=x"): [
            (200, _keys("b"), [("Link", '<https://internal.example:9/keys/v2?cursor=y>; '
                                        'rel="next"')])],
        ("GET", "/access_keys?cursor=y"): [(200, [], [])]})
    with node.client() as c:
        assert [k["id"] for k in list_access_keys(c)] == ["a", "b"]
    assert [t for _, t in node.asked()] == [first, "/access_keys?cursor=x",
                                            "/access_keys?cursor=y"]


def test_a_change_puts_exactly_the_body_and_a_delete_asks_once(node):
    from nodecli.errors import AuthError
    from nodecli.node.access_keys import delete_access_key, update_access_key

    hint_404 = "no access key 'k' that this login may see: list them with 'nodecli access-key list'"
    node.routes[("PUT", "/access_keys/k")] = [(200, {"id": "k", "x": 1}, []), (204, b"", []),
                                              (201, {}, []), (404, NO, []), (403, NO, [])]
    node.routes[("DELETE", "/access_keys/k")] = [(200, b"", []), (204, b"", []), (201, b"", []),
                                                 (404, NO, []), (403, NO, [])]
    with node.client() as c:
        with pytest.raises(UsageError) as e:
            update_access_key(c, "k", {})
        assert str(e.value) == ("nothing to change: give --path, --secret-stdin, "
                                "--activity-event-logging or --set KEY=VALUE")
        assert update_access_key(c, "k", {"x": 1}) == {"id": "k", "x": 1}
        assert update_access_key(c, "k", {"configuration": {"y": None}}) is None
        delete_access_key(c, "k")
        delete_access_key(c, "k")
        for call in (lambda: update_access_key(c, "k", {"x": 2}),
                     lambda: delete_access_key(c, "k")):
            with pytest.raises(NodecliError) as e:
                call()
            assert "HTTP 201" in str(e.value)
            with pytest.raises(NotFoundError) as e:
                call()
            assert e.value.hint == hint_404
            with pytest.raises(AuthError) as e:
                call()
            assert e.value.hint.startswith("a node user changes the keys it owns")
    assert [b for (m, _), b in zip(node.asked(), node.bodies(), strict=True) if m == "PUT"] == [
        {"x": 1}, {"configuration": {"y": None}}, {"x": 2}, {"x": 2}, {"x": 2}]
    assert [m for m, _ in node.asked()].count("DELETE") == 5


def test_a_link_back_to_a_link_the_node_redirected_is_a_loop_too(node):
    from nodecli.errors import RemoteError
    from nodecli.node.access_keys import list_access_keys

    url = node.server.url()
    node.routes.update({
        ("GET", "/access_keys?page=1&per_page=100"): [
            (200, _keys("a"), node.link("/access_keys?cursor=x"))],
        ("GET", "/access_keys?cursor=x"): [
            (302, b"", [("Location", f"{url}/access_keys?cursor=moved")])],
        ("GET", "/access_keys?cursor=moved"): [
            (200, _keys("b"), node.link("/access_keys?cursor=x"))]})
    with node.client() as c, pytest.raises(RemoteError) as e:
        list_access_keys(c)
    assert f"back to a page already read ({url}/access_keys?cursor=x, after 2 pages)" in \
        str(e.value)
    assert len(node.asked()) == 3
