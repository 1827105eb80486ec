"""nodecli.node.access_survey at its boundaries (issue 33, item 2: its mutation run):
a node's permission object read into the model's, a folder's children, the words a
disagreement is told in, in process; the key's storage and root asked of a scripted
HTTPS node."""

from __future__ import annotations

import json

import pytest

from nodecli.errors import RemoteError, UsageError
from nodecli.node.access_model import Perm
from nodecli.node.access_survey import Entry, Survey, _names, _yes, key_root, to_perm

PATHS = {"10": "/data", "11": "/data/a"}


def test_a_permission_is_read_into_the_models():
    raw = {"id": 7, "access_type": "group", "access_id": 42, "file_id": 11,
           "access_levels": ["list", "bogus", "read", "preview", 3]}
    assert to_perm(raw, PATHS) == Perm("7", "/data/a", "group", "42",
                                       ("list", "read", "preview"), "11")
    assert to_perm({"access_type": "user", "access_id": "u", "file_id": "99",
                    "access_levels": "read"}, PATHS) == Perm("", None, "user", "u", (), "99")
    assert to_perm({"access_type": "user", "access_id": "u"}, PATHS) == Perm(
        "", None, "user", "u", (), "")


@pytest.mark.parametrize("raw", [
    {"access_type": "users", "access_id": "u"}, {"access_type": "USER", "access_id": "u"},
    {"access_id": "u"}, {"access_type": "user"}, {"access_type": "user", "access_id": None},
    {"access_type": "user", "access_id": True}, {"access_type": "group", "access_id": 1.5},
    {"access_type": "group", "access_id": ["g"]}])
def test_a_permission_the_model_cannot_read_is_none(raw):
    assert to_perm(raw, PATHS) is None


def test_a_folders_children_are_the_entries_one_level_below_it():
    s = Survey("ak", "/", "1")
    for p in ("/", "/a", "/a/b", "/a/b/c", "/ab", "/a/x"):
        s.entries[p] = Entry(p, p, "folder")
    assert [e.path for e in s.children("/")] == ["/a", "/ab"]
    assert [e.path for e in s.children("/a")] == ["/a/b", "/a/x"]
    assert [e.path for e in s.children("/a/")] == ["/a/b", "/a/x"]
    assert s.children("/a/b/c") == []
    s.entries["/boX"] = Entry("/boX", "b", "folder")
    s.entries["/boX/y"] = Entry("/boX/y", "y", "file")
    assert [e.path for e in s.children("/boX")] == ["/boX/y"]


def test_a_surveys_model_holds_its_key_root_permissions_and_rules():
    from nodecli.node.access_model import Rules

    perm = Perm("1", "/d", "user", "u", ("read",), "f")
    s = Survey("ak", "/d", "1", perms=[perm])
    m = s.model()
    assert (m.access_key, m.root, list(m.perms), m.rules) == ("ak", "/d", [perm], Rules())
    strict = Rules(inherit_above_root=False, admin_bypass=False, traverse=False)
    assert s.model(strict).rules == strict


def test_the_words_of_a_disagreement():
    assert (_yes(True), _yes(False)) == ("visible", "hidden")
    assert _names(None) == "refused"
    assert _names(frozenset()) == "[]"
    assert _names(frozenset({"b", "a", "c"})) == "[a, b, c]"


# -- the key's storage and root, asked of a scripted node ---------------------------------

@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from tests.scripted_server import certificates

    return certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def node(certs):
    from tests.scripted_server import ScriptedServer, reply

    answer: list = [{}]

    def script(seen):
        yield reply(200, json.dumps(answer[0]).encode(), [("Content-Type", "application/json")],
                    close=False)

    server = ScriptedServer(script, tls=(certs[1], certs[2]))
    yield server, answer
    server.close()


def _root(node, certs, key, access_key="akx"):
    from nodecli.http.client import Auth, Endpoint, open_client

    server, answer = node
    answer[0] = key
    auth = Auth("basic", username=access_key, password="pw-survey", access_key=access_key)
    with open_client(Endpoint(server.url(), auth, cacert=certs[0], deadline=10.0,
                              max_attempts=1)) as c:
        got = key_root(c)
    assert server.seen[-1].target == "/access_keys/self"
    return got


@pytest.mark.parametrize(("key", "root"), [
    ({"id": "ak1", "storage": {"path": "/data//x/"}, "root_file_id": "r1"},
     ("ak1", "/data/x", "r1")),
    ({"id": 5, "storage": {"path": "/"}, "root_file_id": 0}, ("5", "/", "0")),
    ({"storage": {"path": "/d"}, "root_file_id": 9}, ("akx", "/d", "9")),
    ({"id": True, "storage": {"path": "/d"}, "root_file_id": 9}, ("akx", "/d", "9")),
    ({"id": "", "storage": {"path": "/d"}, "root_file_id": 9}, ("akx", "/d", "9"))])
def test_the_keys_id_storage_path_and_root(node, certs, key, root):
    assert _root(node, certs, key) == root


def test_a_key_without_an_id_given_by_a_login_without_one(node, certs):
    from nodecli.http.client import Auth, Endpoint, open_client

    server, answer = node
    answer[0] = {"storage": {"path": "/d"}, "root_file_id": "9"}
    with open_client(Endpoint(server.url(), Auth("bearer", token="t-survey"),
                              cacert=certs[0], deadline=10.0, max_attempts=1)) as c:
        assert key_root(c) == ("", "/d", "9")


@pytest.mark.parametrize(("key", "says"), [
    ({"storage": {"path": "data"}, "root_file_id": "1"}, "storage path"),
    ({"storage": {"path": 5}, "root_file_id": "1"}, "storage path"),
    ({"storage": "/data", "root_file_id": "1"}, "storage path"),
    ({"root_file_id": "1"}, "storage path"),
    ({"storage": {"path": "/d"}}, "root"),
    ({"storage": {"path": "/d"}, "root_file_id": ""}, "root"),
    ({"storage": {"path": "/d"}, "root_file_id": True}, "root"),
    ({"storage": {"path": "/d"}, "root_file_id": 1.5}, "root"),
    ({"storage": {"path": "/d"}, "root_file_id": None}, "root")])
def test_a_key_without_a_usable_storage_path_or_root_is_refused(node, certs, key, says):
    with pytest.raises(RemoteError) as e:
        _root(node, certs, key)
    assert str(e.value) == {
        "storage path": "the node did not say the access key's storage path (storage.path in "
                        "GET /access_keys/self)",
        "root": "the node did not say the access key's root_file_id"}[says]


# -- what the node shows a token of one entry ---------------------------------------------

@pytest.fixture(scope="module")
def files_node(certs):
    from tests.scripted_server import ScriptedServer, reply

    routes: dict[str, list] = {}

    def script(seen):
        todo = routes.get(seen.target) or routes.get(seen.target.split("?")[0],
                                                      [(404, {"error": "no"})])
        status, body = todo.pop(0) if len(todo) > 1 else todo[0]
        yield reply(status, json.dumps(body).encode(), [("Content-Type", "application/json")],
                    close=False)  # (kept open: one TLS handshake a client)

    server = ScriptedServer(script, tls=(certs[1], certs[2]))
    yield server, routes
    server.close()


def _shown(files_node, certs, entry):
    from nodecli.http.client import Auth, Endpoint, open_client
    from nodecli.node.access_survey import shown

    server, _ = files_node
    with open_client(Endpoint(server.url(), Auth("bearer", token="t-shown", access_key="ak"),
                              cacert=certs[0], deadline=10.0, max_attempts=1)) as c:
        return shown(c, entry)


def test_what_a_token_is_shown_of_a_file_and_a_folder(files_node, certs):
    from nodecli.node.access_survey import Seen

    server, routes = files_node
    routes.clear()
    routes["/files/a%20b%2Fc"] = [(200, {"id": "a b/c"})]
    routes["/files/d"] = [(200, {"id": "d"})]
    routes["/files/d/files"] = [(200, [{"name": "x", "id": "1"}, {"name": "y", "id": "2"}])]
    routes["/files/e"] = [(200, {"id": "e"})]
    routes["/files/e/files"] = [(200, [])]
    n = len(server.seen)
    assert _shown(files_node, certs, Entry("/p/a b", "a b/c", "file")) == Seen(True)
    assert _shown(files_node, certs, Entry("/p/d", "d", "folder")) == Seen(
        True, frozenset({"x", "y"}))
    assert _shown(files_node, certs, Entry("/p/e", "e", "folder")) == Seen(True, frozenset())
    assert list(dict.fromkeys(s.target.split("?")[0] for s in server.seen[n:])) == [
        "/files/a%20b%2Fc", "/files/d", "/files/d/files", "/files/e", "/files/e/files"]
    assert {s.method for s in server.seen[n:]} == {"GET"}


@pytest.mark.parametrize("status", [403, 404])
def test_an_entry_or_a_listing_refused_403_or_404_is_hidden_or_refused(files_node, certs,
                                                                        status):
    from nodecli.node.access_survey import Seen

    _, routes = files_node
    routes.clear()
    routes["/files/h"] = [(status, {"error": "no"})]
    routes["/files/d"] = [(200, {"id": "d"})]
    routes["/files/d/files"] = [(status, {"error": "no"})]
    assert _shown(files_node, certs, Entry("/h", "h", "file")) == Seen(False)
    assert _shown(files_node, certs, Entry("/h", "h", "folder")) == Seen(False)
    assert _shown(files_node, certs, Entry("/d", "d", "folder")) == Seen(True, None)


@pytest.mark.parametrize("status", [401, 500, 400])
def test_any_other_refusal_is_the_error(files_node, certs, status):
    from nodecli.errors import NodecliError

    _, routes = files_node
    routes.clear()
    routes["/files/h"] = [(status, {"error": "no"})]
    routes["/files/d"] = [(200, {"id": "d"})]
    routes["/files/d/files"] = [(status, {"error": "no"})]
    for entry in (Entry("/h", "h", "file"), Entry("/d", "d", "folder")):
        with pytest.raises(NodecliError) as e:
            _shown(files_node, certs, entry)
        assert e.value.status == status


def test_what_the_model_says_a_token_is_shown():
    from nodecli.node.access_model import Subject, user_scope
    from nodecli.node.access_survey import Seen, expected

    s = Survey("ak", "/d", "1", perms=[Perm("p1", "/d/a", "user", "u", ("list",), "2"),
                                       Perm("p2", "/d/b", "user", "u", ("read",), "3")])
    for path, kind in (("/d", "folder"), ("/d/a", "folder"), ("/d/a/f", "file"),
                       ("/d/a/g", "folder"), ("/d/b", "folder"), ("/d/b/h", "file"),
                       ("/d/c", "folder"), ("/d/c/i", "file")):
        s.entries[path] = Entry(path, path, kind)
    m, u = s.model(), Subject("u", scope=user_scope("ak"))
    seen = {p: expected(m, s, u, e) for p, e in s.entries.items()}
    assert seen == {
        "/d": Seen(True, frozenset({"a", "b"})),  # on the way: what leads to a permission
        "/d/a": Seen(True, frozenset({"f", "g"})),  # listable: everything
        "/d/a/f": Seen(True), "/d/a/g": Seen(True, frozenset()),
        "/d/b": Seen(True, None),  # levels but not list: the listing is refused
        "/d/b/h": Seen(True), "/d/c": Seen(False), "/d/c/i": Seen(False)}


def test_compare_asks_each_path_and_tells_each_disagreement(files_node, certs):
    from nodecli.http.client import Auth, Endpoint, open_client
    from nodecli.node.access_model import Subject, user_scope
    from nodecli.node.access_survey import Disagreement, compare

    s = Survey("ak", "/d", "1", perms=[Perm("p1", "/d/a", "user", "u", ("list",), "2"),
                                       Perm("p2", "/d/b", "user", "u", ("read",), "3")])
    for path, kind in (("/d", "folder"), ("/d/a", "folder"), ("/d/a/f", "file"),
                       ("/d/a/g", "folder"), ("/d/b", "folder"), ("/d/c", "folder"),
                       ("/d/c/i", "file")):
        s.entries[path] = Entry(path, path.replace("/", "_"), kind)
    server, routes = files_node
    routes.clear()
    for fid in ("_d", "_d_a", "_d_a_f", "_d_b", "_d_c"):
        routes[f"/files/{fid}"] = [(200, {"id": fid})]
    routes["/files/_d/files"] = [(200, [{"name": "a"}, {"name": "b"}])]
    routes["/files/_d_a/files"] = [(200, [{"name": "f"}])]  # g is not listed
    routes["/files/_d_b/files"] = [(403, {"error": "no"})]
    routes["/files/_d_c/files"] = [(200, [])]
    paths = ["/d", "/d/a", "/d/a/f", "/d/a/g", "/d/b", "/d/c", "/d/c/i"]  # g: not shown
    with open_client(Endpoint(server.url(), Auth("bearer", token="t-cmp", access_key="ak"),
                              cacert=certs[0], deadline=10.0, max_attempts=1)) as c:
        checks, out = compare(s.model(), s, Subject("u", scope=user_scope("ak")), c, paths)
        assert (checks, out) == (10, [
            Disagreement("/d/a", "listing", "[f]", "[f, g]"),
            Disagreement("/d/a/g", "visible", "hidden", "visible"),
            Disagreement("/d/c", "visible", "visible", "hidden")])
        with pytest.raises(UsageError) as e:
            compare(s.model(), s, Subject("u"), c, ["/d", "/d/x"])
        assert str(e.value) == "/d/x is not in the surveyed storage"
        assert compare(s.model(), s, Subject("u", scope=user_scope("ak")), c, []) == (0, [])


def _key_client(files_node, certs):
    from nodecli.http.client import Auth, Endpoint, open_client

    server, _ = files_node
    return open_client(Endpoint(server.url(), Auth("basic", username="ak", password="pw-lin",
                                                   access_key="ak"),
                                cacert=certs[0], deadline=10.0, max_attempts=1))


def _lineage_node(routes):
    routes.clear()
    routes["/access_keys/self"] = [(200, {"id": "ak", "storage": {"path": "/d"},
                                          "root_file_id": "r"})]
    routes["/files/r/files"] = [(200, [{"name": "a", "id": "A", "type": "folder"},
                                       {"name": "z", "id": ""}])]
    routes["/files/A/files"] = [(200, [{"name": "f", "id": "F"}])]
    routes["/permissions?file_id=F"] = [(200, [
        {"id": "p1", "access_type": "user", "access_id": "u", "file_id": "A",
         "access_levels": ["read"]},
        {"id": "p2", "access_type": "group", "access_id": "g", "file_id": "ABOVE",
         "access_levels": ["list"]},
        {"id": "bad", "access_type": "robot", "access_id": "r"}])]
    routes["/permissions?file_id=r"] = [(200, [])]


def test_a_paths_lineage_is_its_folders_from_the_root_and_every_permission_there(
        files_node, certs):
    from nodecli.node.access_survey import lineage

    _lineage_node(files_node[1])
    with _key_client(files_node, certs) as c:
        survey, here = lineage(c, "/a/f")
        root_only, top = lineage(c, "/")
    assert here == "/d/a/f"
    assert (survey.access_key, survey.root, survey.root_id) == ("ak", "/d", "r")
    assert survey.entries == {"/d": Entry("/d", "r", "folder"),
                              "/d/a": Entry("/d/a", "A", "folder"),
                              "/d/a/f": Entry("/d/a/f", "F", "file")}
    assert survey.perms == [Perm("p1", "/d/a", "user", "u", ("read",), "A"),
                            Perm("p2", None, "group", "g", ("list",), "ABOVE")]
    assert (top, root_only.entries, root_only.perms) == (
        "/d", {"/d": Entry("/d", "r", "folder")}, [])


@pytest.mark.parametrize(("path", "walked"), [("/a/nope", "/a/nope"), ("/z", "/z"),
                                              ("/nope/a", "/nope")])
def test_a_lineage_stops_at_the_first_name_not_there(files_node, certs, path, walked):
    from nodecli.errors import NotFoundError
    from nodecli.node.access_survey import lineage

    _lineage_node(files_node[1])
    with _key_client(files_node, certs) as c, pytest.raises(NotFoundError) as e:
        lineage(c, path)
    assert str(e.value) == f"{walked}: no such file or folder in access key ak's storage (/d)"
    assert e.value.hint == "paths start at the access key's storage root"


def test_an_entrys_own_permissions_are_those_set_on_a_file_the_survey_knows(files_node,
                                                                            certs):
    from nodecli.node.access_survey import _own_perms

    _lineage_node(files_node[1])
    routes = files_node[1]
    routes["/permissions?file_id=F&inherited=false"] = routes.pop("/permissions?file_id=F")
    with _key_client(files_node, certs) as c:
        assert _own_perms(c, "F", {"A": "/d/a", "F": "/d/a/f"}) == [
            Perm("p1", "/d/a", "user", "u", ("read",), "A")]
    assert files_node[0].seen[-1].target == "/permissions?file_id=F&inherited=false"


# -- the whole storage, walked on a scripted node -----------------------------------------

def _whole_node(routes):
    routes.clear()
    routes["/access_keys/self"] = [(200, {"id": "ak", "storage": {"path": "/d"},
                                          "root_file_id": "r"})]
    routes["/permissions"] = [(200, [])]
    routes["/files/r/files"] = [(200, [
        {"name": "", "id": "E1"}, {"name": "x/y", "id": "E2"}, {"name": ".", "id": "E3"},
        {"name": "..", "id": "E4"}, {"name": 5, "id": "E5"}, {"name": None, "id": "E6"},
        {"name": "n1"}, {"name": "n2", "id": ""}, {"name": "n3", "id": None},
        {"name": "a", "id": "A", "type": "folder"}, {"name": "b", "id": 5, "type": "directory"},
        {"name": "a", "id": "A2", "type": "folder"},  # a second "a": the first is kept
        {"name": "f", "id": 7}, {"name": "g", "id": "G", "type": "file"},
        {"name": "zero", "id": 0, "type": "link"}])]
    routes["/files/A/files"] = [(200, [{"name": "c", "id": "C", "type": "folder"}])]
    routes["/files/C/files"] = [(200, [])]
    routes["/files/5/files"] = [(200, [{"name": "h", "id": "H"}])]
    routes["/files/A2/files"] = [(200, [{"name": "never", "id": "N"}])]
    perm = {"access_type": "user", "access_id": "u", "access_levels": ["read"]}
    routes["/permissions?file_id=A&inherited=false"] = [(200, [
        dict(perm, id="p1", file_id="A"), dict(perm, id="up", file_id="UP")])]
    routes["/permissions?file_id=H&inherited=false"] = [(200, [
        dict(perm, id="p4", file_id="H", access_type="group", access_id="g")])]
    routes["/permissions?file_id=C&inherited=false"] = [(200, [  # p1 again: once
        dict(perm, id="p1", file_id="A"), dict(perm, id="p5", file_id="C"),
        {"id": "bad", "access_type": "robot", "access_id": "r", "file_id": "C"}])]
    routes["/permissions?file_id=r"] = [(200, [  # the root's, with those above it
        dict(perm, id="p2", file_id="UP"), dict(perm, id="p2", file_id="UP"),
        dict(perm, id="p3", file_id="A"), dict(perm, id="p1", file_id="UP"),
        dict(perm, id="p6", file_id="UP2", access_levels=["list"]),
        {"id": "bad2", "access_type": "robot", "access_id": "r", "file_id": "UP"}])]


def test_a_whole_storage_is_every_entry_below_the_root_and_every_permission(files_node,
                                                                           certs):
    from nodecli.node.access_survey import whole

    _whole_node(files_node[1])
    n = len(files_node[0].seen)
    with _key_client(files_node, certs) as c:
        survey = whole(c)
    assert (survey.access_key, survey.root, survey.root_id) == ("ak", "/d", "r")
    assert list(survey.entries.items()) == [  # folder by folder, in the node's order
        ("/d", Entry("/d", "r", "folder")), ("/d/a", Entry("/d/a", "A", "folder")),
        ("/d/b", Entry("/d/b", "5", "folder")), ("/d/f", Entry("/d/f", "7", "file")),
        ("/d/g", Entry("/d/g", "G", "file")), ("/d/zero", Entry("/d/zero", "0", "file")),
        ("/d/a/c", Entry("/d/a/c", "C", "folder")), ("/d/b/h", Entry("/d/b/h", "H", "file"))]
    assert survey.perms == [
        Perm("p1", "/d/a", "user", "u", ("read",), "A"),
        Perm("p5", "/d/a/c", "user", "u", ("read",), "C"),
        Perm("p4", "/d/b/h", "group", "g", ("read",), "H"),
        Perm("p2", None, "user", "u", ("read",), "UP"),
        Perm("p6", None, "user", "u", ("list",), "UP2")]
    asked = [s.target for s in files_node[0].seen[n:]]
    assert list(dict.fromkeys(t.split("?")[0] for t in asked if t.startswith("/files/"))) == [
        "/files/r/files", "/files/A/files", "/files/5/files", "/files/C/files"]
    assert [t for t in asked if t.startswith("/permissions")] == [
        f"/permissions?file_id={i}&inherited=false" for i in ("r", "A", "5", "7", "G", "0",
                                                              "C", "H")] + [
        "/permissions?file_id=r"]


def test_a_whole_storage_of_more_entries_than_asked_for_is_refused(files_node, certs):
    from nodecli.errors import NodecliError
    from nodecli.node.access_survey import whole

    _whole_node(files_node[1])
    with _key_client(files_node, certs) as c:
        assert len(whole(c, max_entries=8).entries) == 8
        with pytest.raises(NodecliError) as e:
            whole(c, max_entries=7)
    assert type(e.value) is NodecliError
    assert str(e.value) == "access key ak's storage holds more than 7 entries: too many to survey"


@pytest.mark.parametrize("last", [254, 255])
def test_a_whole_storage_goes_at_most_256_components_deep(files_node, certs, last):
    from nodecli.node.access_survey import whole
    from nodecli.node.paths import MAX_COMPONENTS

    assert MAX_COMPONENTS == 256
    _whole_node(files_node[1])
    routes = files_node[1]
    # /d/n/n/...: the folder L<i> is i+1 components deep; L<last> holds a file
    routes["/files/r/files"] = [(200, [{"name": "n", "id": "L1", "type": "folder"}])]
    for i in range(1, last):
        routes[f"/files/L{i}/files"] = [(200, [{"name": "n", "id": f"L{i + 1}",
                                                "type": "folder"}])]
    routes[f"/files/L{last}/files"] = [(200, [{"name": "f", "id": "F"}])]
    with _key_client(files_node, certs) as c:
        if last == 254:
            survey = whole(c)
            deepest = list(survey.entries)[-1]
            assert (deepest.count("/"), survey.entries[deepest].id) == (256, "F")
            return
        with pytest.raises(RemoteError) as e:
            whole(c)
    assert str(e.value) == ("access key ak's storage goes deeper than 256 folders: a node "
                            "that lists a folder inside itself?")
