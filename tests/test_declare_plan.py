"""nodecli/declare/plan.py's functions in-process, whole rows at a time: what the mutation
run of plan.py found no test holding (docs/development.md, "Equivalent survivors:
nodecli/declare/plan.py"). Reading a node is tested against the emulator elsewhere
(tests/test_declare*.py); here, the comparison of a document with a state given."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from nodecli.config.model import Config, NodeUser, TransferUser
from nodecli.declare import document, plan
from nodecli.declare.plan import LOCAL, Change, NodeState, managed_id
from nodecli.errors import UsageError

HASH_A = "$scrypt$ln=4,r=8,p=1$YWFhYWFhYWFhYWFhYWFhYQ$" + "A" * 43
HASH_B = "$scrypt$ln=4,r=8,p=1$YmJiYmJiYmJiYmJiYmJiYg$" + "B" * 43


def hidden(h: str) -> str:
    return "hash " + hashlib.sha256(h.encode()).hexdigest()[:8]


def doc_of(text: str, base_dir: str = ".") -> document.Document:
    return document.parse(("version: 1\n" + text).encode(), "d.yaml", base_dir)


def rows(changes: list[Change]) -> list[tuple]:
    return [(c.scope, c.kind, c.name, c.action, c.fields, c.ak, c.perm_id, c.ident, c.body)
            for c in changes]


@pytest.fixture(scope="module")
def pem() -> str:
    return GOLDEN


# -- local users ---------------------------------------------------------------------------


def config() -> Config:
    cfg = Config()
    cfg.transfer_users = {"t1": TransferUser("t1", ["file:////a/*"]),
                          "t2": TransferUser("t2", [], "/d2"),
                          "t9": TransferUser("t9", [], "/d9")}
    cfg.users = {"u1": NodeUser("u1", "t1", HASH_A, ["admin"]),
                 "u9": NodeUser("u9", "t2", None, [])}
    return cfg


def test_managed_ids_join_their_parts_with_nul():
    assert managed_id("permission", "ak1", "/a", "user", "x") == "permission\0ak1\0/a\0user\0x"
    assert managed_id("node_user") == "node_user"


def test_local_changes_add_change_and_leave_alone_each_field_before_and_after():
    doc = doc_of("transfer_users:\n  new: {docroot: /n}\n  t1: {restrictions: ['file:////b/*']}"
                 "\n  t2: {docroot: /d2}\n  t3: {}\n"
                 "node_users:\n  u2: {transfer_user: t1, password: '" + HASH_B + "', acls: [admin]}"
                 "\n  u1: {transfer_user: t2, password: '" + HASH_B + "', acls: [admin]}\n"
                 "  u9: {transfer_user: t2}\n")
    changes = plan.local_changes(doc, config(), set(), prune=False)
    assert rows(changes) == [
        (LOCAL, "transfer_user", "new", "add", {"docroot": (None, "/n")}, None, None, (), {}),
        (LOCAL, "transfer_user", "t1", "change",
         {"restrictions": (["file:////a/*"], ["file:////b/*"])}, None, None, (), {}),
        (LOCAL, "transfer_user", "t3", "add", {}, None, None, (), {}),
        (LOCAL, "node_user", "u2", "add",
         {"transfer_user": (None, "t1"), "password": (None, hidden(HASH_B)),
          "acls": (None, ["admin"])}, None, None, (), {}),
        (LOCAL, "node_user", "u1", "change",
         {"transfer_user": ("t1", "t2"), "password": (hidden(HASH_A), hidden(HASH_B))},
         None, None, (), {})]
    # a docroot given where restrictions were: both fields change
    doc = doc_of("transfer_users:\n  t1: {docroot: /x}\n  t2: {restrictions: ['file:////z']}\n")
    assert [c.fields for c in plan.local_changes(doc, config(), set(), False)] == [
        {"restrictions": (["file:////a/*"], None), "docroot": (None, "/x")},
        {"restrictions": (None, ["file:////z"]), "docroot": ("/d2", None)}]


def test_a_password_set_where_there_was_none_is_hidden_on_one_side_only():
    doc = doc_of("node_users:\n  u9: {transfer_user: t2, password: '" + HASH_A + "'}\n")
    (change,) = plan.local_changes(doc, config(), set(), False)
    assert change.fields == {"password": (None, hidden(HASH_A))}
    assert plan._hidden_password(None) is None and plan._hidden_password(3) == 3


def test_prune_lists_the_others_sorted_removed_if_managed_else_left_alone():
    doc = doc_of("transfer_users:\n  t1: {restrictions: ['file:////b/*']}\n"
                 "node_users: {}\n")
    managed = {managed_id("transfer_user", "t9"), managed_id("node_user", "u9")}
    assert rows(plan.local_changes(doc, config(), managed, prune=True)) == [
        (LOCAL, "transfer_user", "t1", "change",
         {"restrictions": (["file:////a/*"], ["file:////b/*"])}, None, None, (), {}),
        (LOCAL, "transfer_user", "t2", "unmanaged", {}, None, None, (), {}),
        (LOCAL, "transfer_user", "t9", "remove", {}, None, None, (), {}),
        (LOCAL, "node_user", "u1", "unmanaged", {}, None, None, (), {}),
        (LOCAL, "node_user", "u9", "remove", {}, None, None, (), {})]
    assert [c.name for c in plan.local_changes(doc, config(), managed, prune=False)] == ["t1"]
    # a section the document leaves out is not looked at, even under --prune
    assert plan.local_changes(doc_of(""), config(), managed, prune=True) == []


def test_apply_local_makes_it_so_and_keeps_what_the_document_leaves_out():
    doc = doc_of("transfer_users:\n  new: {docroot: /n}\n  t1: {restrictions: ['file:////b/*']}"
                 "\nnode_users:\n  u1: {transfer_user: t2}\n"
                 "  u2: {transfer_user: new, password: '" + HASH_B + "', acls: [admin]}\n"
                 "  u3: {transfer_user: new}\n")
    cfg = config()
    changes = plan.local_changes(doc, cfg, set(), False)
    plan.apply_local(doc, cfg, changes, removals=False)
    assert cfg.transfer_users["new"] == TransferUser("new", [], "/n")
    assert cfg.transfer_users["t1"] == TransferUser("t1", ["file:////b/*"], None)
    assert cfg.users["u1"] == NodeUser("u1", "t2", HASH_A, ["admin"])  # kept
    assert cfg.users["u2"] == NodeUser("u2", "new", HASH_B, ["admin"])
    assert cfg.users["u3"] == NodeUser("u3", "new", None, [])
    assert set(cfg.users) == {"u1", "u2", "u3", "u9"}
    assert set(cfg.transfer_users) == {"t1", "t2", "t9", "new"}


def test_apply_local_removes_only_removals_and_only_when_asked():
    cfg = config()
    changes = [Change(LOCAL, "node_user", "u9", "remove"),
               Change(LOCAL, "node_user", "u1", "unmanaged"),
               Change(LOCAL, "transfer_user", "t9", "remove"),
               Change("emu", "node_user", "u1", "remove"),
               Change(LOCAL, "transfer_user", "gone", "remove"),
               Change(LOCAL, "node_user", "ghost", "remove"),
               Change(LOCAL, "node_user", "u1", "change"),
               Change(LOCAL, "transfer_user", "t1", "change")]
    same = doc_of("transfer_users:\n  t1: {restrictions: ['file:////a/*']}\n"
                  "node_users:\n  u1: {transfer_user: t1}\n")
    plan.apply_local(same, cfg, changes, removals=False)
    assert set(cfg.users) == {"u1", "u9"} and set(cfg.transfer_users) == {"t1", "t2", "t9"}
    assert cfg.users["u1"] == config().users["u1"]
    plan.apply_local(same, cfg, changes, removals=True)
    assert set(cfg.users) == {"u1"} and set(cfg.transfer_users) == {"t1", "t2"}
    # removals never add, even given adds
    cfg = config()
    doc = doc_of("transfer_users:\n  new: {}\nnode_users:\n  n: {transfer_user: new}\n")
    plan.apply_local(doc, cfg, plan.local_changes(doc, cfg, set(), False), removals=True)
    assert "new" not in cfg.transfer_users and "n" not in cfg.users


def test_local_digest_data_holds_the_sections_the_document_covers():
    cfg = config()
    assert plan.local_digest_data(doc_of(""), cfg) == {"transfer_users": None,
                                                      "node_users": None}
    data = plan.local_digest_data(doc_of("transfer_users: {}\nnode_users: {}\n"), cfg)
    assert data == {"transfer_users": {"t1": {"restrictions": ["file:////a/*"]},
                                       "t2": {"docroot": "/d2"}, "t9": {"docroot": "/d9"}},
                    "node_users": {"u1": {"transfer_user": "t1", "password": HASH_A,
                                          "acls": ["admin"]},
                                   "u9": {"transfer_user": "t2"}}}
    assert list(data["transfer_users"]) == ["t1", "t2", "t9"]


# -- a node --------------------------------------------------------------------------------


def state() -> NodeState:
    st = NodeState("emu")
    st.keys = {"ak1": {"storage": {"type": "local", "path": "/data"},
                       "configuration": {"a": 1, "b": "x"}, "root_file_id": "1",
                       "verification_key": "fp-old"},
               "ak8": {"storage": {"type": "local", "path": "/d8"}, "configuration": {},
                       "root_file_id": "8", "verification_key": None},
               "ak9": {"storage": {"type": "local", "path": "/d9"}, "configuration": {},
                       "root_file_id": "9", "verification_key": None}}
    st.perms = {"ak1": {("/a", "user", "u"): {"levels": ("list", "read"), "id": "11"},
                        ("/b", "group", "g"): {"levels": ("list",), "id": "12"},
                        ("/c", "user", "v"): {"levels": ("list",), "id": "13"}}}
    return st


def test_a_new_key_is_one_add_with_its_body_then_its_permissions(pem, tmp_path):
    (tmp_path / "k.pem").write_text(pem)
    doc = doc_of("access_keys:\n  new:\n    storage: {path: /n}\n"
                 "    configuration: {a: 1, z: null}\n    verification_key: {file: k.pem}\n"
                 "    secret: env:S\n    permissions:\n"
                 "      - {path: /p, user: u, levels: [read, list]}\n"
                 "  bare: {storage: {path: /b}}\n", str(tmp_path))
    fp = plan.fingerprint_of_pem(pem)
    assert rows(plan.node_changes(doc, NodeState("emu"), set(), False)) == [
        ("emu", "access_key", "new", "add",
         {"storage": (None, {"type": "local", "path": "/n"}),
          "configuration": (None, {"a": 1, "z": None}), "verification_key": (None, fp),
          "secret": (None, "env:S")}, "new", None, (),
         {"storage": {"type": "local", "path": "/n"}, "configuration": {"a": 1},
          "token_verification_key": pem}),
        ("emu", "permission", "new /p user u", "add", {"levels": (None, ["list", "read"])},
         "new", None, ("/p", "user", "u"), {"levels": ["list", "read"]}),
        ("emu", "access_key", "bare", "add",
         {"storage": (None, {"type": "local", "path": "/b"}),
          "secret": (None, "new (stored, printed once)")}, "bare", None, (),
         {"storage": {"type": "local", "path": "/b"}})]


def test_a_new_key_given_only_a_fingerprint_is_refused():
    doc = doc_of("access_keys:\n  new:\n    storage: {path: /n}\n"
                 "    verification_key: {fingerprint: fp1}\n")
    with pytest.raises(UsageError) as info:
        plan.node_changes(doc, NodeState("emu"), set(), False)
    assert info.value.message == ("access key new: a new key needs its verification key as "
                                  "a file or pem, not only its fingerprint")


def test_a_key_there_changes_field_by_field_and_its_permissions_after_it(pem):
    doc = doc_of("access_keys:\n  ak1:\n    storage: {path: /other}\n"
                 "    configuration: {a: 1, b: y, c: true}\n"
                 "    verification_key:\n      pem: |\n" +
                 "".join(f"        {line}\n" for line in pem.splitlines()) +
                 "    permissions:\n"
                 "      - {path: /a, user: u, levels: [read, list]}\n"
                 "      - {path: /b, group: g, levels: [list, write]}\n"
                 "      - {path: /new, user: u, levels: [list]}\n"
                 "  ak8: {storage: {path: /d8}}\n")
    fp = plan.fingerprint_of_pem(pem)
    managed = {managed_id("permission", "ak1", "/c", "user", "v")}
    assert rows(plan.node_changes(doc, state(), managed, prune=True)) == [
        ("emu", "access_key", "ak1", "change",
         {"storage": ({"type": "local", "path": "/data"}, {"type": "local", "path": "/other"}),
          "configuration.b": ("x", "y"), "configuration.c": (None, True),
          "verification_key": ("fp-old", fp)}, "ak1", None, (),
         {"storage": {"type": "local", "path": "/other"},
          "configuration": {"b": "y", "c": True}, "token_verification_key": pem}),
        ("emu", "permission", "ak1 /b group g", "change",
         {"levels": (["list"], ["list", "write"])}, "ak1", "12", ("/b", "group", "g"),
         {"levels": ["list", "write"]}),
        ("emu", "permission", "ak1 /new user u", "add", {"levels": (None, ["list"])},
         "ak1", None, ("/new", "user", "u"), {"levels": ["list"]}),
        ("emu", "permission", "ak1 /c user v", "remove", {}, "ak1", "13",
         ("/c", "user", "v"), {}),
        ("emu", "access_key", "ak9", "unmanaged", {}, "ak9", None, (), {})]


def test_a_key_there_unchanged_is_nothing_and_its_permissions_are_left_unread():
    doc = doc_of("access_keys:\n  ak1:\n    storage: {path: /data}\n"
                 "    configuration: {a: 1}\n    verification_key: {fingerprint: fp-old}\n")
    assert plan.node_changes(doc, state(), set(), prune=False) == []
    # the permissions not listed are not looked at; listed as none, the others go
    doc = doc_of("access_keys:\n  ak1:\n    storage: {path: /data}\n    permissions:\n")
    assert [(c.name, c.action) for c in plan.node_changes(doc, state(), set(), True)] == [
        ("ak1 /a user u", "unmanaged"), ("ak1 /b group g", "unmanaged"),
        ("ak1 /c user v", "unmanaged"), ("ak8", "unmanaged"), ("ak9", "unmanaged")]
    assert plan.node_changes(doc_of(""), state(), set(), prune=True) == []


def test_a_key_whose_permissions_were_not_read_has_each_listed_one_added():
    doc = doc_of("access_keys:\n  ak8:\n    storage: {path: /d8}\n    permissions:\n"
                 "      - {path: /a, user: u, levels: [read]}\n")
    assert [(c.name, c.action) for c in plan.node_changes(doc, state(), set(), False)] == [
        ("ak8 /a user u", "add")]


def test_a_verification_key_changed_by_fingerprint_alone_is_refused():
    doc = doc_of("access_keys:\n  ak8:\n    storage: {path: /d8}\n"
                 "    verification_key: {fingerprint: fp-new}\n")
    with pytest.raises(UsageError) as info:
        plan.node_changes(doc, state(), set(), False)
    assert info.value.message == ("access key ak8: its verification key on emu is none, not "
                                  "fp-new; give the key as a file or pem to change it")
    doc = doc_of("access_keys:\n  ak1:\n    storage: {path: /data}\n"
                 "    verification_key: {fingerprint: fp-new}\n")
    with pytest.raises(UsageError, match="on emu is fp-old, not fp-new;"):
        plan.node_changes(doc, state(), set(), False)


def test_fingerprints_of_pems_and_of_the_documents_key(pem, tmp_path):
    from nodecli.tokens.keys import key_fingerprint, load_public_key_pem

    fp = key_fingerprint(load_public_key_pem(pem))
    assert plan.fingerprint_of_pem(pem) == fp
    assert [plan.fingerprint_of_pem(v) for v in (None, 5, "", " \n")] == [None] * 4
    assert plan.fingerprint_of_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n") == "unreadable"
    spec = doc_of("access_keys:\n  a: {storage: {path: /a}}\n").access_keys["a"]
    assert plan.wanted_fingerprint(spec, ".") == (None, None)
    spec.verification_key = ("fingerprint", "fp1")
    assert plan.wanted_fingerprint(spec, ".") == ("fp1", None)
    spec.verification_key = ("pem", pem)
    assert plan.wanted_fingerprint(spec, ".") == (fp, pem)
    (tmp_path / "k.pem").write_text(pem)
    spec.verification_key = ("file", "k.pem")
    assert plan.wanted_fingerprint(spec, str(tmp_path)) == (fp, pem)
    spec.verification_key = ("file", str(tmp_path / "k.pem"))
    assert plan.wanted_fingerprint(spec, "/nonexistent") == (fp, pem)


def test_permission_changes_by_holder_and_path():
    spec = doc_of("access_keys:\n  ak1:\n    storage: {path: /data}\n    permissions:\n"
                  "      - {path: /a, user: u, levels: [list, read]}\n"
                  "      - {path: /a, group: u, levels: [list]}\n").access_keys["ak1"]
    have = state().perms["ak1"]
    managed = {managed_id("permission", "ak1", "/b", "group", "g")}
    assert rows(plan._permission_changes("emu", "ak1", spec, have, managed, True)) == [
        ("emu", "permission", "ak1 /a group u", "add", {"levels": (None, ["list"])}, "ak1",
         None, ("/a", "group", "u"), {"levels": ["list"]}),
        ("emu", "permission", "ak1 /b group g", "remove", {}, "ak1", "12",
         ("/b", "group", "g"), {}),
        ("emu", "permission", "ak1 /c user v", "unmanaged", {}, "ak1", "13",
         ("/c", "user", "v"), {})]
    assert len(plan._permission_changes("emu", "ak1", spec, have, managed, False)) == 1


def test_a_change_row_says_each_field_before_and_after_and_only_unmanaged_does_not_act():
    c = Change("emu", "access_key", "ak1", "change", {"storage": ("a", "b")}, ak="ak1")
    assert c.row() == {"node": "emu", "kind": "access_key", "name": "ak1", "action": "change",
                       "fields": {"storage": {"before": "a", "after": "b"}}}
    assert [Change("n", "k", "x", a).acts for a in ("add", "change", "remove", "unmanaged")] \
        == [True, True, True, False]


# -- what a plan was made from ---------------------------------------------------------------


def test_the_node_states_digest_data_sorts_the_permissions():
    st = state()
    assert st.digest_data() == {
        "keys": st.keys,
        "perms": {"ak1": [[["/a", "user", "u"], ["list", "read"]],
                          [["/b", "group", "g"], ["list"]],
                          [["/c", "user", "v"], ["list"]]]}}
    st.perms["ak0"] = {}
    assert list(st.digest_data()["perms"]) == ["ak0", "ak1"]


def test_a_digest_changes_with_each_thing_a_plan_was_made_from():
    doc = doc_of("node_users: {}\n")
    first = plan.digest(doc, {"x": 1}, state(), False)
    assert first.startswith("sha256:") and len(first) == 7 + 64
    assert plan.digest(doc_of("node_users: {}\n"), {"x": 1}, state(), False) == first
    other = state()
    other.perms["ak1"][("/a", "user", "u")]["levels"] = ("list",)
    renamed = state()
    renamed.label = "emu2"
    others = [plan.digest(doc_of("transfer_users: {}\n"), {"x": 1}, state(), False),
              plan.digest(doc, {"x": 2}, state(), False),
              plan.digest(doc, {"x": 1}, state(), True),
              plan.digest(doc, {"x": 1}, other, False),
              plan.digest(doc, {"x": 1}, renamed, False),
              plan.digest(doc, {"x": 1}, None, False)]
    assert len({first, *others}) == 7
    data = {"doc": doc.to_dict(), "prune": False, "local": {"x": 1}, "node": None,
            "label": None}
    import json

    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    assert others[-1] == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    # a value YAML reads as a date is digested as its text
    dated = doc_of("access_keys:\n  a: {storage: {path: /a}, configuration: {d: 2026-01-02}}\n")
    assert plan.digest(dated, None, None, False) != plan.digest(
        doc_of("access_keys:\n  a: {storage: {path: /a}, configuration: {d: 2026-01-03}}\n"),
        None, None, False)


# -- secrets of access keys ----------------------------------------------------------------


def test_key_secrets_from_each_reference_once_and_their_refusals(tmp_path):
    from nodecli.config.paths import resolve_paths

    asked: list[str] = []

    def line(prompt: str) -> str:
        asked.append(prompt)
        return "from-stdin"

    (tmp_path / "s.txt").write_text("  from-file \n")
    (tmp_path / "empty.txt").write_text(" \n")
    secrets = plan.KeySecrets(resolve_paths(tmp_path / "home"), "emu", {"S": "from-env"},
                              str(tmp_path), line)
    assert secrets.store_key("ak1") == "access_key:emu/ak1"
    assert plan.KeySecrets(None, "emu", {}, ".", line, "https://h:9092").store_key("a") \
        == "access_key:https://h:9092/a"
    assert secrets.referenced("k1", "stdin") == "from-stdin"
    assert secrets.referenced("k1", "stdin") == "from-stdin"
    assert asked == ["secret of access key 'k1'"]
    assert secrets.referenced("k2", "env:S") == "from-env"
    assert secrets.referenced("k3", "file:s.txt") == "from-file"
    assert secrets.referenced("k4", f"file:{tmp_path / 's.txt'}") == "from-file"
    with pytest.raises(UsageError) as info:
        secrets.referenced("k5", "env:NOPE")
    assert info.value.message == ("access key k5: secret env:NOPE: the variable is not set "
                                  "or empty")
    with pytest.raises(UsageError) as info:
        secrets.referenced("k6", "file:empty.txt")
    assert info.value.message == "access key k6: secret file:empty.txt: the file is empty"
    # the file's bounds: 64 KiB is read, one byte more is refused; bytes that are not
    # UTF-8 are replaced, not a traceback; a missing file names the key
    (tmp_path / "big.txt").write_bytes(b"b" * 65536)
    assert secrets.referenced("k10", "file:big.txt") == "b" * 65536
    (tmp_path / "big.txt").write_bytes(b"b" * 65537)
    with pytest.raises(UsageError) as info:
        secrets.referenced("k11", "file:big.txt")
    assert info.value.message == (f"secret file of access key k11 {tmp_path / 'big.txt'} is "
                                  "larger than 65536 bytes")
    (tmp_path / "latin.txt").write_bytes(b"\xe9t\xe9\n")
    assert secrets.referenced("k12", "file:latin.txt") == "\ufffdt\ufffd"
    from nodecli.errors import NotFoundError

    with pytest.raises(NotFoundError) as info:
        secrets.referenced("k13", "file:nope.txt")
    assert info.value.message == (f"secret file of access key k13 {tmp_path / 'nope.txt'}: "
                                  "no such file")
    # nothing known yet: the store says none; stored, found there
    assert secrets.find(None, "k7") is None
    secrets.remember("k7", "made")
    assert secrets.find(None, "k7") == "made"
    again = plan.KeySecrets(resolve_paths(tmp_path / "home"), "emu", {}, ".", line)
    assert again.find(None, "k7") == "made"
    spec = doc_of("access_keys:\n  k8: {storage: {path: /a}, secret: env:S}\n"
                  ).access_keys["k8"]
    assert secrets.find(spec, "k8") == "from-env"
    spec.secret = "stdin"
    assert secrets.find(spec, "k9") == "from-stdin"
    assert asked == ["secret of access key 'k1'", "secret of access key 'k9'"]


# -- reading a node's permissions: a scripted node -------------------------------------------


def test_a_path_below_the_keys_root_whatever_the_letters_of_the_root():
    assert plan._relative("/dataX/a/b", "/dataX") == "/a/b"
    assert plan._relative("/dataX/", "/dataX/") == "/"
    assert plan._relative("/dataX/a", "/dataX/") == "/a"
    assert plan._relative("/dataXY/a", "/dataX") == "/dataXY/a"  # not below it
    assert plan._relative("//a//b/", "/") == "/a/b"


def answers(files: dict[str, object], self_root: object, listing: object = None):
    """A node's script: the key's own root, its permissions, each file's path."""
    import json

    from tests.scripted_server import reply

    perms = [{"id": "p1", "file_id": "f1", "access_type": "user", "access_id": "u",
              "access_levels": ["read", "list"]},
             {"id": "p2", "file_id": "f2", "access_type": "group", "access_id": "g",
              "access_levels": ["list"]},
             {"id": "p3", "file_id": "f1", "access_type": "user", "access_id": "u",
              "access_levels": ["write"]}]  # the same place again: the first one holds

    def script(seen):
        from urllib.parse import unquote

        path = unquote(seen.target.split("?")[0])
        if path == "/access_keys/self":
            body = {"id": "ak1", "root_file_id": self_root}
        elif path == "/permissions":
            body = perms if listing is None else listing
        elif path.startswith("/files/") and path[7:] in files:
            found = files[path[7:]]
            body = found if isinstance(found, list) else {"id": path[7:], "path": found}
        else:
            yield reply(404, b"{}", [("Content-Type", "application/json")])
            return
        yield reply(200, json.dumps(body).encode(), [("Content-Type", "application/json")])

    return script


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from tests.scripted_server import certificates

    return certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def scripted(certs):
    from nodecli.http.client import Auth, Endpoint, open_client
    from tests.scripted_server import ScriptedServer

    servers = []

    def start(files: dict[str, object], self_root: object, listing: object = None):
        server = ScriptedServer(answers(files, self_root, listing), tls=certs[1:])
        servers.append(server)
        ep = Endpoint(server.url(), Auth("basic", "ak1", "secret-of-ak1"), cacert=certs[0],
                      deadline=5.0, read_timeout=5, max_attempts=1)
        return server, open_client(ep)

    yield start
    for server in servers:
        server.close()


@pytest.mark.parametrize("listed_root", ["", None])
def test_a_key_listed_without_its_root_asks_the_node_for_its_own(scripted, listed_root):
    server, client = scripted({"r1": "/data", "f1": "/data/a", "f2": "/data"}, "r1")
    with client:
        assert plan.read_permissions(client, listed_root) == {
            ("/a", "user", "u"): {"levels": ("list", "read"), "id": "p1"},
            ("/", "group", "g"): {"levels": ("list",), "id": "p2"}}
    assert [(s.method, s.target.split("?")[0]) for s in server.seen] == [
        ("GET", "/access_keys/self"), ("GET", "/files/r1"), ("GET", "/permissions"),
        ("GET", "/files/f1"), ("GET", "/files/f2")]


@pytest.mark.parametrize("self_root", ["", None])
def test_a_key_with_no_root_anywhere_reads_paths_from_the_nodes_root(scripted, self_root):
    server, client = scripted({"f1": "/data/a", "f2": "/data"}, self_root)
    with client:
        assert set(plan.read_permissions(client, "")) == {("/data/a", "user", "u"),
                                                          ("/data", "group", "g")}
    assert [s.target.split("?")[0] for s in server.seen] == [
        "/access_keys/self", "/permissions", "/files/f1", "/files/f2"]


def test_a_listed_root_is_taken_as_it_is_and_a_file_without_a_path_is_refused(scripted):
    from nodecli.errors import RemoteError

    server, client = scripted({"r 2": "/data", "f1": "/data/a", "f2": "data"}, "r1")
    with client, pytest.raises(RemoteError) as info:
        plan.read_permissions(client, "r 2")
    assert info.value.message == "GET /files/f2 did not say the file's path"
    assert [s.target.split("?")[0] for s in server.seen] == [
        "/files/r%202", "/permissions", "/files/f1", "/files/f2"]


GOLDEN = (Path(__file__).parent / "data" / "golden_key.pub").read_text()
KEYS = [{"id": "ak1", "storage": {"type": "local", "path": "/data"},
         "configuration": {"a": 1}, "root_file_id": "r1", "token_verification_key": GOLDEN},
        {"id": "ak2", "storage": "not a mapping", "configuration": ["nor", "this"],
         "root_file_id": "r2", "token_verification_key": " "}]


def node_script(permissions_status: int = 200):
    """A node of two keys (one listed oddly), as its admin or as key ak1."""
    import json
    from urllib.parse import unquote

    from tests.scripted_server import reply

    files = {"r1": "/data", "f1": "/data/a"}
    perms = [{"id": "p1", "file_id": "f1", "access_type": "user", "access_id": "u",
              "access_levels": ["read"]}]

    def script(seen):
        path, _, query = unquote(seen.target).partition("?")
        if path == "/access_keys":
            body: object = KEYS if "page=1&" in query else []
        elif path == "/permissions" and permissions_status != 200:
            yield reply(permissions_status, b'{"error": "no"}',
                        [("Content-Type", "application/json")])
            return
        elif path == "/permissions":
            body = perms
        elif path.startswith("/files/") and path[7:] in files:
            body = {"id": path[7:], "path": files[path[7:]]}
        else:
            yield reply(404, b"{}", [("Content-Type", "application/json")])
            return
        yield reply(200, json.dumps(body).encode(), [("Content-Type", "application/json")])

    return script


@pytest.fixture
def scripted_node(certs, tmp_path):
    from nodecli.config.paths import resolve_paths
    from nodecli.http.client import Auth, Endpoint, open_client
    from tests.scripted_server import ScriptedServer

    servers = []

    def start(permissions_status: int = 200):
        server = ScriptedServer(node_script(permissions_status), tls=certs[1:])
        servers.append(server)
        ep = Endpoint(server.url(), Auth("basic", "admin", "admin-pass"), cacert=certs[0],
                      deadline=5.0, read_timeout=5, max_attempts=1)
        secrets = plan.KeySecrets(resolve_paths(tmp_path / "home"), "emu",
                                  {"S1": "secret-of-ak1"}, str(tmp_path), input)
        return server, open_client(ep), secrets

    yield start
    for server in servers:
        server.close()


def test_read_node_takes_each_keys_listed_root_and_reads_only_the_listed_permissions(
        scripted_node):
    from nodecli.http.client import open_client

    server, client, secrets = scripted_node()
    doc = doc_of("access_keys:\n  gone: {storage: {path: /g}, permissions: []}\n"
                 "  ak2: {storage: {path: /d}}\n"
                 "  ak1: {storage: {path: /data}, secret: env:S1, permissions: []}\n")
    with client:
        state = plan.read_node(client, doc, secrets, open_client)
    assert state.label == "emu"
    assert state.keys == {
        "ak1": {"storage": {"type": "local", "path": "/data"}, "configuration": {"a": 1},
                "root_file_id": "r1", "verification_key": plan.fingerprint_of_pem(GOLDEN)},
        "ak2": {"storage": {"type": None, "path": None}, "configuration": {},
                "root_file_id": "r2", "verification_key": None}}
    assert state.perms == {"ak1": {("/a", "user", "u"): {"levels": ("read",), "id": "p1"}}}
    as_key = [s.target.split("?")[0] for s in server.seen
              if s.headers["authorization"] != server.seen[0].headers["authorization"]]
    assert as_key == ["/files/r1", "/permissions", "/files/f1"]  # no /access_keys/self
    assert {s.headers["authorization"] for s in server.seen[-3:]} == {
        "Basic " + base64.b64encode(b"ak1:secret-of-ak1").decode()}


def test_read_node_takes_a_keys_secret_from_the_store_when_the_document_has_none(
        scripted_node):
    from nodecli.http.client import open_client

    server, client, secrets = scripted_node()
    plan.KeySecrets(secrets.paths, "emu", {}, ".", input).remember("ak1", "stored-one")
    doc = doc_of("access_keys:\n  ak1: {storage: {path: /data}, permissions: []}\n")
    with client:
        assert list(plan.read_node(client, doc, secrets, open_client).perms) == ["ak1"]
    assert server.seen[-1].headers["authorization"] == \
        "Basic " + base64.b64encode(b"ak1:stored-one").decode()


def test_a_key_refused_by_the_node_says_whose_secret_was_used_and_from_where(scripted_node):
    from nodecli.errors import AuthError
    from nodecli.http.client import open_client

    _server, client, secrets = scripted_node(permissions_status=401)
    doc = doc_of("access_keys:\n  ak1: {storage: {path: /data}, secret: env:S1, "
                 "permissions: []}\n")
    with client, pytest.raises(AuthError) as info:
        plan.read_node(client, doc, secrets, open_client)
    assert info.value.hint.startswith(
        "the request used access key 'ak1' and its secret over HTTP Basic (access key ak1 "
        "of the document; secret from its reference or the store); check the secret")


def test_permissions_listed_in_a_wrapper_are_read_and_an_answer_that_is_no_list_refused(
        scripted):
    from nodecli.errors import RemoteError

    wrapped = {"permissions": [{"id": "p9", "file_id": "d/1", "access_type": "user",
                                "access_id": "w", "access_levels": ["list"]}]}
    server, client = scripted({"r1": "/data", "d/1": "/data/a"}, "r1", wrapped)
    with client:
        assert plan.read_permissions(client, "r1") == {
            ("/a", "user", "w"): {"levels": ("list",), "id": "p9"}}
    assert server.seen[-1].target == "/files/d%2F1"  # an id is one segment, / and all
    _server, client = scripted({"r1": ["not", "an", "object"]}, "r1")
    with client, pytest.raises(RemoteError) as info:
        plan.read_permissions(client, "r1")
    assert info.value.message == "GET /files/r1 did not say the file's path"
    _server, client = scripted({"r1": "/data"}, "r1", "none here")
    with client, pytest.raises(RemoteError) as info:
        plan.read_permissions(client, "r1")
    assert info.value.message == "GET /permissions did not answer with a list"


def test_a_key_whose_secret_nodecli_does_not_know_is_refused_saying_how(scripted_node):
    from nodecli.errors import AuthError
    from nodecli.http.client import open_client

    server, client, secrets = scripted_node()
    doc = doc_of("access_keys:\n  ak1: {storage: {path: /data}, permissions: []}\n")
    with client, pytest.raises(AuthError) as info:
        plan.read_node(client, doc, secrets, open_client)
    assert info.value.message == ("access key ak1 on emu: its permissions are read as the "
                                  "key, and nodecli does not know its secret")
    assert info.value.hint == ("give it in the document (access_keys.ak1.secret: env:NAME, "
                               "file:PATH or stdin)")
    assert len(server.seen) == 2  # the key list (two pages), nothing as the key
