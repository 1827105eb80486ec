"""``access`` at the boundaries mutation testing found untested (docs/development.md,
"Equivalent survivors: access"): who-can's order within one folder (holder type before
holder id), the hint of a path component that is missing, and a hostile node that lists
an entry with an empty id (over HTTPS, from tests/scripted_server.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from nodecli.errors import ExitCode
from tests.scripted_server import ScriptedServer, Seen, certificates, reply
from tests.test_access_can_i import World

JSON = [("Content-Type", "application/json")]
MISSING_HINT = "hint: paths start at the access key's storage root"


@pytest.fixture
def world(emulator, invoke, home) -> World:
    return World(emulator, invoke, home)


def _rows(r) -> list[dict]:
    assert r.exit_code == 0, r
    return json.loads(r.stdout)


def test_who_can_orders_one_folder_by_holder_type_before_holder_id(world):
    from nodecli.emulator.storage import Permission

    node = world.storage.ensure("/data/shared")
    # "aa" sorts before "staff" by id: the group still comes first, as a group
    world.storage.permissions["900"] = Permission("900", node.id, "user", "aa", ["read"])
    rows = _rows(world.run("ak-all", "who-can", "/shared", "--level", "read", "-o", "json"))
    got = [(r["holder_type"], r["holder_id"], r["permission_id"]) for r in rows]
    assert got[:2] == [("group", "staff", world.perm_ids[("/data/shared", "group", "staff")]),
                       ("user", "aa", "900")]


def test_a_missing_component_is_named_with_the_hint_where_paths_start(world):
    for args in (["can-i", "read", "/project/q9", *world.who("alice")],
                 ["who-can", "/project/q9/x"]):
        r = world.run("ak-all", *args)
        assert r.exit_code == ExitCode.NOT_FOUND, r
        assert r.stderr.splitlines() == [
            "nodecli: error: /project/q9: no such file or folder in access key ak-all's storage "
            "(/data)", MISSING_HINT]


# -- a hostile node: an entry without an id ------------------------------------------------


class NoIdNode:
    """A node whose storage root (file 1, at /data) lists ``x`` with an empty id, ``n``
    with none, and ``y`` (file 2) holding a permission for user u."""

    def answer(self, seen: Seen) -> list[bytes | float]:
        path, _, query = seen.target.partition("?")
        path = path.rstrip("/")
        if path == "/access_keys/self":
            body = {"id": "ak", "storage": {"type": "local", "path": "/data"},
                    "root_file_id": "1"}
        elif path == "/files/1/files":
            body = [{"name": "x", "id": "", "type": "folder"},
                    {"name": "n", "id": None, "type": "folder"},
                    {"name": "y", "id": "2", "type": "folder"}]
        elif path == "/files/2/files":
            body = []
        elif path == "/permissions" and "file_id=2" in query.split("&"):
            body = [{"id": "7", "file_id": "2", "access_type": "user", "access_id": "u",
                     "access_levels": ["list", "read"]}]
        elif path == "/permissions":
            body = []
        else:
            return [reply(404, b'{"error": {"user_message": "no such thing"}}', JSON,
                          close=False)]
        return [reply(200, json.dumps(body).encode(), JSON, close=False)]


@pytest.fixture(scope="module")
def no_id_node(tmp_path_factory) -> Iterator[tuple[ScriptedServer, str]]:
    ca, cert, key = certificates(tmp_path_factory.mktemp("tls"))
    with ScriptedServer(NoIdNode().answer, tls=(cert, key)) as srv:
        yield srv, ca


def _asked_for_an_empty_id(srv: ScriptedServer) -> list[str]:
    return [s.target for s in srv.seen
            if "/files//" in s.target or s.target.endswith("/files/")
            or any(p == "file_id=" for p in s.target.partition("?")[2].split("&"))]


def test_an_entry_with_an_empty_id_is_no_such_file_and_never_asked_for(no_id_node, invoke,
                                                                         home):
    srv, ca = no_id_node
    env = {"NODECLI_URL": srv.url(), "NODECLI_ACCESS_KEY": "ak",
           "NODECLI_PASSWORD": "ak-secret", "NODECLI_CACERT": ca}
    srv.seen.clear()
    for name in ("x", "n"):
        r = invoke("access", "can-i", "read", f"/{name}", "--user-id", "u", env=env)
        assert r.exit_code == ExitCode.NOT_FOUND, r
        assert r.stderr.splitlines() == [
            f"nodecli: error: /{name}: no such file or folder in access key ak's storage (/data)",
            MISSING_HINT]
    r = invoke("access", "can-i", "read", "/y", "--user-id", "u", env=env)
    assert (r.exit_code, r.stdout.splitlines()[0]) == (0, "yes"), r
    # what-can walks the storage: the entries without an id are left out, never asked for
    r = invoke("access", "what-can", "--user-id", "u", "-o", "json", env=env)
    assert [row["path"] for row in _rows(r)] == ["/", "/y"]
    assert _asked_for_an_empty_id(srv) == []


def test_a_key_on_the_node_root_verifies_the_root_listing(world):
    """A folder's children are the entries one component below it: for ``/`` not ``/``
    itself (nor those below ``//``), for ``/data/taX`` not those of ``/data/ta``."""
    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.storage import Permission

    world.emulator.add_access_key("ak-root", "ak-root-secret")
    state_key = world.emulator.state.access_keys["ak-root"]
    state_key.storage = {"type": "local", "path": "/"}
    state_key.token_verification_key = world.emulator.state.access_keys[
        "ak-all"].token_verification_key
    keys = resolve_paths(None).keys_dir
    (keys / "ak-root").mkdir()
    (keys / "ak-root" / "private.pem").write_bytes((keys / "ak-all" / "private.pem")
                                                   .read_bytes())
    (keys / "ak-root" / "private.pem").chmod(0o600)
    world.storage.ensure("/data/taX/f.txt", "file", 1)
    node = world.storage.ensure("/data/taX")
    world.storage.permissions["901"] = Permission("901", node.id, "user", "alice", ["list"])
    r = world.run("ak-root", "what-can", *world.who("alice"), "--verify", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert "the node agrees with the model" in r.stderr
    assert [row["path"] for row in json.loads(r.stdout)][:2] == ["/", "/data"]


# -- --verify against a node that answers otherwise than the emulator ------------------------


class OtherNode:
    """As the key (Basic): root file 1 at /data holds ``y`` (file id ``a/b``: a slash
    in an id) where user u holds read, and ``h`` (file 3) where it holds nothing. As the
    token (Bearer): a hidden file is 403 (not 404), a refused listing 404 (not 403)."""

    hide_y = False  # as the token, y is hidden too (the node disagrees with the model)

    def answer(self, seen: Seen) -> list[bytes | float]:
        token = seen.headers.get("authorization", "").startswith("Bearer ")
        path, _, query = seen.target.partition("?")
        body: object
        if token and self.hide_y and path.startswith("/files/a%2Fb"):
            return [reply(404, b'{"error": {"user_message": "no such file"}}', JSON,
                          close=False)]
        if path == "/access_keys/self":
            body = {"id": "ak", "storage": {"type": "local", "path": "/data"},
                    "root_file_id": "1"}
        elif path == "/files/1/files":
            body = [{"name": "y", "id": "a/b", "type": "folder"}] if token else [
                {"name": "y", "id": "a/b", "type": "folder"},
                {"name": "h", "id": "3", "type": "folder"}]
        elif path in ("/files/1", "/files/a%2Fb"):
            body = {"id": path.rsplit("/", 1)[1]}
        elif path == "/files/a%2Fb/files" and token:
            return [reply(404, b'{"error": {"user_message": "not listable"}}', JSON,
                          close=False)]
        elif path == "/files/3" and token:
            return [reply(403, b'{"error": {"user_message": "forbidden"}}', JSON,
                          close=False)]
        elif path in ("/files/a%2Fb/files", "/files/3/files") and not token:
            body = []
        elif path == "/permissions" and "file_id=a%2Fb" in query.split("&"):
            body = [{"id": "7", "file_id": "a/b", "access_type": "user", "access_id": "u",
                     "access_levels": ["read"]}]
        elif path == "/permissions":
            body = []
        else:
            return [reply(404, b'{"error": {"user_message": "no such thing"}}', JSON,
                          close=False)]
        return [reply(200, json.dumps(body).encode(), JSON, close=False)]


def test_verify_reads_403_and_404_alike_and_quotes_every_id(tmp_path_factory, invoke, home):
    from tests.test_access_can_i import _pems

    folder = tmp_path_factory.mktemp("verify")
    ca, cert, key = certificates(folder)
    pem = folder / "private.pem"
    pem.write_bytes(_pems()[0])
    pem.chmod(0o600)
    node = OtherNode()
    with ScriptedServer(node.answer, tls=(cert, key)) as srv:
        env = {"NODECLI_URL": srv.url(), "NODECLI_ACCESS_KEY": "ak",
               "NODECLI_PASSWORD": "ak-secret", "NODECLI_CACERT": ca}
        r = invoke("access", "what-can", "--user-id", "u", "--verify", "--key-file-path",
                   str(pem), "-o", "json", env=env)
        assert r.exit_code == 0, r.stderr
        # /, /h and /y: visible or not; the listings of / and /y
        assert "verify: the node agrees with the model (5 checks)" in r.stderr, r.stderr
        assert [(row["path"], row["levels"]) for row in json.loads(r.stdout)] == [
            ("/", []), ("/y", ["read"])]
        asked = [s.target for s in srv.seen if s.headers.get("authorization", "")
                 .startswith("Bearer ")]
        assert "/files/a%2Fb" in asked and "/files/3" in asked
        node.hide_y = True
        r = invoke("access", "what-can", "--user-id", "u", "--verify", "--key-file-path",
                   str(pem), env=env)
        assert r.exit_code == 1
        assert r.stderr.splitlines()[0] == "nodecli: error: disagreement at /data/y " \
            "(visible): the node says hidden, the model visible"


# -- a node that describes its access key badly ---------------------------------------------


class KeyNode:
    """GET /access_keys/self answers ``key``; the storage root (whatever its id) is empty
    and holds no permission."""

    def __init__(self) -> None:
        self.key: object = None
        self.perms: list[object] = []

    def answer(self, seen: Seen) -> list[bytes | float]:
        path = seen.target.partition("?")[0]
        if path == "/access_keys/self":
            return [reply(200, json.dumps(self.key).encode(), JSON, close=False)]
        if path == "/permissions":
            return [reply(200, json.dumps(self.perms).encode(), JSON, close=False)]
        if path.startswith("/files/"):
            return [reply(200, b"[]", JSON, close=False)]
        return [reply(404, b'{"error": {"user_message": "no such thing"}}', JSON,
                      close=False)]


@pytest.fixture(scope="module")
def key_node(tmp_path_factory) -> Iterator[tuple[KeyNode, ScriptedServer, str]]:
    ca, cert, key = certificates(tmp_path_factory.mktemp("tls"))
    node = KeyNode()
    with ScriptedServer(node.answer, tls=(cert, key)) as srv:
        yield node, srv, ca


NO_PATH = "the node did not say the access key's storage path (storage.path in GET " \
          "/access_keys/self)"
NO_ROOT = "the node did not say the access key's root_file_id"
GOOD = {"id": "ak-9", "storage": {"type": "local", "path": "/data"}, "root_file_id": "1"}


@pytest.mark.parametrize(("key", "message"), [
    ({**GOOD, "storage": None}, NO_PATH),
    ({**GOOD, "storage": "/data"}, NO_PATH),
    ({**GOOD, "storage": {"type": "local"}}, NO_PATH),
    ({**GOOD, "storage": {"path": 5}}, NO_PATH),
    ({**GOOD, "storage": {"path": "data"}}, NO_PATH),
    ({**GOOD, "storage": {"path": ""}}, NO_PATH),
    ({k: v for k, v in GOOD.items() if k != "root_file_id"}, NO_ROOT),
    ({**GOOD, "root_file_id": True}, NO_ROOT),
    ({**GOOD, "root_file_id": ""}, NO_ROOT),
    ({**GOOD, "root_file_id": None}, NO_ROOT),
    ({**GOOD, "root_file_id": [1]}, NO_ROOT),
])
def test_a_key_without_a_storage_path_or_root_id_is_a_remote_error(key_node, invoke, home,
                                                                    key, message):
    node, srv, ca = key_node
    node.key = key
    env = {"NODECLI_URL": srv.url(), "NODECLI_ACCESS_KEY": "ak-env",
           "NODECLI_PASSWORD": "ak-secret", "NODECLI_CACERT": ca}
    r = invoke("access", "can-i", "read", "/", "--user-id", "u", env=env)
    assert (r.exit_code, r.stderr.splitlines()) == (ExitCode.REMOTE,
                                                    [f"nodecli: error: {message}"])


@pytest.mark.parametrize(("key", "ak", "root"), [
    (GOOD, "ak-9", "/data"),
    ({**GOOD, "id": 42, "root_file_id": 0, "storage": {"path": "/data//x/"}}, "42", "/data/x"),
    ({**GOOD, "id": True}, "ak-env", "/data"),
    ({**GOOD, "id": ""}, "ak-env", "/data"),
    ({k: v for k, v in GOOD.items() if k != "id"}, "ak-env", "/data"),
    ({**GOOD, "id": None, "storage": {"path": "/"}}, "ak-env", "/"),
])
def test_the_key_names_its_id_and_storage_or_the_login_does(key_node, invoke, home, key, ak,
                                                            root):
    node, srv, ca = key_node
    node.key = key
    env = {"NODECLI_URL": srv.url(), "NODECLI_ACCESS_KEY": "ak-env",
           "NODECLI_PASSWORD": "ak-secret", "NODECLI_CACERT": ca}
    r = invoke("access", "can-i", "read", "/", "--user-id", "u", "-o", "json", env=env)
    assert r.exit_code == 1, r.stderr
    body = json.loads(r.stdout)
    assert (body["access_key"], body["node_path"], body["scope"], body["reason"]) == (
        ak, root, f"node.{ak}:user:all", "no-permission")
    srv.seen.clear()
    r = invoke("access", "what-can", "--user-id", "u", "--scope-role", "admin", "-o", "json",
               env=env)
    assert [row["path"] for row in json.loads(r.stdout)] == ["/"]
    root_id = str(key["root_file_id"])
    assert f"/files/{root_id}/files" in [s.target.partition("?")[0] for s in srv.seen]


# -- what the CLI prints, line by line -------------------------------------------------------


def test_what_can_tree_report_and_who_can_table_line_by_line(world):
    r = world.run("ak-all", "what-can", *world.who("erin"), "--verify")
    assert (r.exit_code, r.stdout.splitlines()) == (0, [
        "/  (on the way)", "  fin  list,read", "  project  (on the way)",
        "    q3  (on the way)", "      deep  read"]), r.stderr
    assert r.stderr == "verify: the node agrees with the model (32 checks)\n"
    r = world.run("ak-all", "what-can", *world.who("erin"), "--verify", "--no-traverse")
    assert (r.exit_code, r.stdout) == (1, "  fin  list,read\n      deep  read\n")
    assert r.stderr.splitlines() == [
        *(f"nodecli: error: disagreement at {p} (visible): the node says visible, the "
          "model hidden" for p in ("/data", "/data/project", "/data/project/q3")),
        "nodecli: error: verify: 3 disagreement(s) in 29 checks",
        "hint: the model or the node is wrong: the rule flags (--no-traverse, "
        "--no-inherit-above-root, --no-admin-bypass) say which choice differs; else "
        "report it"]
    r = world.run("ak-all", "what-can", "--user-id", "erin", "--scope", "node.other:user:all")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "nothing visible\n")
    r = world.run("ak-all", "who-can", "/shared/inbox", "-o", "table")
    ids = world.perm_ids
    assert [line.split() for line in r.stdout.splitlines()] == [
        ["type", "holder", "levels", "set", "on", "inherited", "permission"],
        ["group", "staff", "write,mkdir", "/shared/inbox", "no",
         ids[("/data/shared/inbox", "group", "staff")]],
        ["group", "staff", "list,read", "/shared", "yes",
         ids[("/data/shared", "group", "staff")]],
        ["user", "frank", "list", "/", "yes", ids[("/data", "user", "frank")]],
        ["scope", "node.ak-all:admin:all", "all", "(bypasses", "permissions)", "no", "-"],
        ["access_key", "ak-all", "all", "(bypasses", "permissions)", "no", "-"]]


# -- a node whose permissions are odd ---------------------------------------------------------

ODD_PERMS = [
    {"id": "1", "file_id": "1", "access_type": "user", "access_id": "u",
     "access_levels": ["read", "fly", "list"]},  # an unknown level is left out
    {"id": "2", "file_id": "1", "access_type": "role", "access_id": "u",
     "access_levels": ["read"]},  # neither user nor group: left out
    {"id": "3", "file_id": "1", "access_type": "user", "access_id": True,
     "access_levels": ["read"]},  # a holder that is no id: left out
    {"id": "4", "file_id": "1", "access_type": "user", "access_id": None,
     "access_levels": ["read"]},
    {"id": "5", "file_id": "1", "access_type": "user", "access_id": 1.5,
     "access_levels": ["read"]},
    {"id": "6", "file_id": 1, "access_type": "group", "access_id": 7,
     "access_levels": {"read": True}},  # numbers read as text; levels not a list: none
    {"file_id": "99", "access_type": "user", "access_id": "v",
     "access_levels": ["write"]},  # no id; a file outside the storage: above it
    {"id": "8", "access_type": "user", "access_id": "w", "access_levels": ["read"]},
]


def test_odd_permissions_are_read_as_far_as_they_can_be(key_node, invoke, home):
    node, srv, ca = key_node
    node.key = GOOD
    node.perms = ODD_PERMS
    env = {"NODECLI_URL": srv.url(), "NODECLI_ACCESS_KEY": "ak-env",
           "NODECLI_PASSWORD": "ak-secret", "NODECLI_CACERT": ca}
    try:
        rows = _rows(invoke("access", "who-can", "/", "-o", "json", env=env))
    finally:
        node.perms = []
    assert [(r["holder_type"], r["holder_id"], r["levels"], r["set_on"], r["permission_id"],
             r["file_id"]) for r in rows[:-2]] == [
        ("group", "7", [], "/", "6", "1"),
        ("user", "u", ["read", "list"], "/", "1", "1"),
        ("user", "v", ["write"], "(above the storage root, file 99)", "", "99"),
        ("user", "w", ["read"], "(above the storage root, file ?)", "8", "")]


def test_verify_signs_with_the_profile_mint_key_of_the_same_access_key(world, invoke,
                                                                        tmp_path):
    from nodecli.config.paths import resolve_paths

    managed = resolve_paths(None).keys_dir / "ak-all" / "private.pem"
    pem = tmp_path / "mint.pem"
    pem.write_bytes(managed.read_bytes())
    pem.chmod(0o600)
    managed.unlink()  # only the profile's key can sign now
    r = invoke("node", "add", "minted", "--url", world.emulator.url, "--access-key", "ak-all",
               "--mint-key", str(pem), "--mint-user-id", "root", "--mint-scope-role", "admin",
               "--no-check")
    assert r.exit_code == 0, r.stderr
    r = invoke("access", "what-can", "--node", "minted", *world.who("erin"), "--verify")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == "verify: the node agrees with the model (32 checks)\n"


# -- a node whose listings are odd: what the survey walks -------------------------------------


TREE_LISTINGS = {
    "1": [{"name": "ok", "id": "2", "type": "directory"},
          {"name": "ok", "id": "9", "type": "folder"},
          {"name": "a/b", "id": "3", "type": "folder"},
          {"name": "", "id": "4", "type": "folder"},
          {"name": ".", "id": "5", "type": "folder"},
          {"name": "..", "id": "6", "type": "folder"},
          {"name": 5, "id": "7", "type": "folder"},
          {"name": "f", "id": "8", "type": "file"},
          {"name": "nt", "id": "10"}],
    "2": [{"name": "in", "id": "11", "type": "folder"}],
    "11": [],
}


class TreeNode:
    """Root file 1 at /data lists a folder ``ok`` (type ``directory``) twice, names no
    path may hold, and files; ``ok`` holds the folder ``in``. User u holds read on
    ``ok`` (set there) and list above the storage."""


    def answer(self, seen: Seen) -> list[bytes | float]:
        path, _, query = seen.target.partition("?")
        params = query.split("&")
        body: object
        if path == "/access_keys/self":
            body = GOOD
        elif path.startswith("/files/") and path.endswith("/files"):
            body = TREE_LISTINGS.get(path.split("/")[2], [])
        elif path == "/permissions" and "file_id=2" in params:
            # with one the model cannot read, and one on a file the key does not know
            body = [{"id": "1", "file_id": "2", "access_type": "user", "access_id": "u",
                     "access_levels": ["read"]},
                    {"id": "13", "file_id": "2", "access_type": "role", "access_id": "u",
                     "access_levels": ["write"]},
                    {"id": "14", "file_id": "77", "access_type": "user", "access_id": "u",
                     "access_levels": ["delete"]}]
        elif path == "/permissions" and "file_id=1" in params and "inherited=false" \
                not in params:
            # an inherited list that also names one set below (on ok): not taken from it
            body = [{"id": "3", "file_id": "99", "access_type": "user", "access_id": "u",
                     "access_levels": ["list"]},
                    {"id": "12", "file_id": "2", "access_type": "user", "access_id": "u",
                     "access_levels": ["write"]},
                    {"id": "15", "file_id": "99", "access_type": "role", "access_id": "u",
                     "access_levels": ["write"]}]
        elif path == "/permissions":
            body = []
        else:
            return [reply(404, b'{"error": {"user_message": "no such thing"}}', JSON,
                          close=False)]
        return [reply(200, json.dumps(body).encode(), JSON, close=False)]


def test_the_survey_walks_folders_only_once_and_no_name_a_path_cannot_hold(tmp_path_factory,
                                                                           invoke, home):
    ca, cert, key = certificates(tmp_path_factory.mktemp("tls"))
    with ScriptedServer(TreeNode().answer, tls=(cert, key)) as srv:
        env = {"NODECLI_URL": srv.url(), "NODECLI_ACCESS_KEY": "ak-9",
               "NODECLI_PASSWORD": "ak-secret", "NODECLI_CACERT": ca}
        rows = _rows(invoke("access", "what-can", "--user-id", "u", "-o", "json", env=env))
        assert [(r["path"], r["levels"]) for r in rows] == [
            ("/", ["list"]), ("/ok", ["list", "read"]), ("/ok/in", ["list", "read"])]
        # each folder's listing begun once (this node ignores ``page``: its page 2
        # repeats page 1, which ends the listing)
        listed = [s.target.split("/")[2] for s in srv.seen
                  if s.target.partition("?")[0].endswith("/files") and "page=1&" in s.target]
        assert listed == ["1", "2", "11"]
        asked = sorted(p.removeprefix("file_id=") for s in srv.seen
                       if s.target.startswith("/permissions?")
                       for p in s.target.partition("?")[2].split("&")
                       if p.startswith("file_id="))
        # every entry's own permissions (files too), and the root's inherited ones
        assert asked == ["1", "1", "10", "11", "2", "8"]


def test_can_i_json_names_the_subject_as_given_once_and_refuses_empty_ids(world, invoke):
    body = json.loads(world.run("ak-all", "can-i", "read", "/shared", "--user-id", "erin",
                                "--group-id", "staff", "--group-id", "eng", "--group-id",
                                "staff", "--scope-role", "user", "-o", "json").stdout)
    assert (body["answer"], body["user_id"], body["group_ids"], body["scope"]) == (
        "yes", "erin", ["staff", "eng"], "node.ak-all:user:all")
    assert [p["holder_id"] for p in body["because"]] == ["staff"]
    assert [r["verdict"] for r in body["rules"]][:2] == ["pass", "pass"]
    assert body["summary"] == "group staff holds read on /shared (directly)"
    for bad in (["--user-id", ""], ["--user-id", "erin", "--group-id", ""],
                ["--user-id", " "], ["--user-id", "erin", "--group-id", "x" * 257]):
        r = world.run("ak-all", "can-i", "read", "/shared", *bad)
        assert r.exit_code == ExitCode.USAGE, (bad, r)
        assert len(r.stderr.splitlines()) == 1, r.stderr
    r = world.run("ak-all", "can-i", "read", "/shared", "--user-id", "erin", "--group-id",
                  "x" * 256, "-o", "json")
    assert r.exit_code == 1, r.stderr  # 256 characters: an id still
    assert invoke("xuser", "add", "rooted", "--docroot", "/srv/in").exit_code == 0
    r = invoke("user", "add", "rob", "--xuser", "rooted", "--password-stdin", input="pw\n")
    assert r.exit_code == 0, r.stderr
    body = json.loads(invoke("access", "can-i", "read", "/srv//in/a/", "--node-user", "rob",
                             "-o", "json").stdout)
    assert {k: body[k] for k in ("access_key", "user_id", "group_ids", "scope", "because",
                                 "path")} == {
        "access_key": None, "user_id": None, "group_ids": [], "scope": None, "because": [],
        "path": "/srv//in/a/"}
    assert body["node_path"] == "/srv/in/a"


def test_what_can_rows_say_how_each_folder_is_seen(world):
    rows = _rows(world.run("ak-all", "what-can", *world.who("erin"), "-o", "json"))
    fin = world.perm_ids[("/data/fin", "user", "erin")]
    assert rows[:2] == [
        {"path": "/", "type": "folder", "levels": [], "lists": False,
         "via": "on the way to a permitted folder"},
        {"path": "/fin", "type": "folder", "levels": ["list", "read"], "lists": True,
         "via": f"permission {fin}: user erin on /fin"}]
    deep = {r["path"]: r for r in rows}["/project/q3/deep"]
    assert (deep["levels"], deep["lists"]) == (["read"], False)  # levels, not list
    rows = _rows(world.run("ak-fin", "what-can", "--user-id", "erin", "--scope-role",
                           "admin", "-o", "json"))
    assert rows[0] == {"path": "/", "type": "folder", "levels": list(
        ("list", "read", "write", "delete", "mkdir", "rename", "preview")), "lists": True,
        "via": "the token's scope (bypasses permissions)"}
    assert [r["path"] for r in rows] == ["/", "/2025", "/2026"]


def test_a_storage_256_folders_deep_is_walked_and_257_refused(world):
    deepest = "/data/" + "/".join(["d"] * 255)  # 256 components from the node's root
    world.storage.ensure(deepest, "folder")
    r = world.run("ak-all", "what-can", "--user-id", "erin", "--scope-role", "admin",
                  "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert max(row["path"].count("/") for row in json.loads(r.stdout)) == 255  # from /data
    world.storage.ensure(deepest + "/d", "folder")
    r = world.run("ak-all", "what-can", "--user-id", "erin")
    assert (r.exit_code, r.stderr) == (ExitCode.REMOTE, (
        "nodecli: error: access key ak-all's storage goes deeper than 256 folders: a node "
        "that lists a folder inside itself?\n"))


def test_the_survey_holds_max_entries_and_refuses_one_more(world):
    from nodecli.errors import NodecliError
    from nodecli.http.client import Auth, open_client
    from nodecli.node.access_survey import whole

    with open_client(world.emulator.endpoint(Auth("basic", username="ak-fin",
                                                  password="ak-fin-secret"))) as client:
        n = len(whole(client).entries)  # the storage root and everything below it
        assert len(whole(client, max_entries=n).entries) == n
        with pytest.raises(NodecliError) as exc:
            whole(client, max_entries=n - 1)
    assert exc.value.message == (f"access key ak-fin's storage holds more than {n - 1} "
                                 "entries: too many to survey")


def test_a_key_named_neither_by_the_node_nor_by_the_login_is_empty(key_node, invoke, home):
    """A node user's login names no access key; a node that leaves the id out of
    /access_keys/self then leaves the key unnamed: empty, never a made-up name."""
    node, srv, ca = key_node
    node.key = {k: v for k, v in GOOD.items() if k != "id"}
    env = {"NODECLI_URL": srv.url(), "NODECLI_USER": "admin", "NODECLI_PASSWORD": "pw",
           "NODECLI_CACERT": ca}
    r = invoke("access", "can-i", "read", "/", "--user-id", "u", "-o", "json", env=env)
    assert r.exit_code == 1, r.stderr
    body = json.loads(r.stdout)
    assert (body["access_key"], body["scope"]) == ("", "node.:user:all")
