"""nodecli.declare without a node: the document's schema, the local plan, the order of
steps and the record of managed objects (fast: mutation testing runs these)."""

from __future__ import annotations

import pytest

from nodecli.declare import document, execute, plan
from nodecli.errors import UsageError

HASH = "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdA$" + "A" * 43


def parse(text: str):
    return document.parse(text.encode(), "d.yaml")


def refused(text: str) -> str:
    with pytest.raises(UsageError) as info:
        parse(text)
    return info.value.message


def test_a_full_document_reads_into_its_parts():
    doc = parse(f"""version: 1
transfer_users:
  x: {{restrictions: ["file:////data/*"]}}
  y: {{docroot: /srv}}
  z:
node_users:
  u: {{transfer_user: x, password: "{HASH}", acls: [admin]}}
access_keys:
  ak1:
    storage: {{path: /data}}
    configuration: {{note: n, activity_event_logging: null}}
    verification_key: {{fingerprint: "SHA256:abc"}}
    secret: env:AK1
    permissions:
      - {{path: //a/./b/, user: 42, levels: [read, list, read]}}
      - {{path: /, group: eng, levels: [preview]}}
  ak2: {{storage: {{type: local, path: /d}}, permissions: }}
""")
    assert doc.transfer_users == {"x": {"restrictions": ["file:////data/*"]},
                                  "y": {"docroot": "/srv"}, "z": {}}
    assert doc.node_users == {"u": {"transfer_user": "x", "password": HASH, "acls": ["admin"]}}
    ak1 = doc.access_keys["ak1"]
    assert ak1.storage == {"type": "local", "path": "/data"}
    assert ak1.configuration == {"note": "n", "activity_event_logging": None}
    assert ak1.verification_key == ("fingerprint", "SHA256:abc")
    assert ak1.secret == "env:AK1"
    assert [(p.path, p.access_type, p.access_id, p.levels) for p in ak1.permissions] == [
        ("/a/b", "user", "42", ("list", "read")), ("/", "group", "eng", ("preview",))]
    assert doc.access_keys["ak2"].permissions == []
    assert doc.access_keys["ak2"].secret is None and doc.access_keys["ak2"].configuration is None
    # a round trip through the plain form gives the same document
    again = document.from_data(doc.to_dict(), "again")
    assert again.to_dict() == doc.to_dict()


def test_absent_sections_are_not_looked_at_and_empty_ones_are_none():
    doc = parse("version: 1\n")
    assert (doc.transfer_users, doc.node_users, doc.access_keys) == (None, None, None)
    doc = parse("version: 1\nnode_users:\naccess_keys: {}\n")
    assert doc.node_users == {} and doc.access_keys == {} and doc.transfer_users is None


@pytest.mark.parametrize("text,message", [
    ("", "d.yaml: the document: empty"),
    ("[1]\n", "d.yaml:1: the document: must be a mapping"),
    ("version: true\n", "d.yaml:1: version: unsupported version True"),
    ("version: 1\nversion: 1\n", "d.yaml:2: version: given twice"),
    ("version: 1\nnode_users: [a]\n", "d.yaml:2: node_users: must be a mapping"),
    ("version: 1\nnode_users:\n  u: {acls: []}\n", "d.yaml:3: node_users.u: no transfer_user"),
    ("version: 1\nnode_users:\n  u: {transfer_user: x, acls: admin}\n",
     "d.yaml:3: node_users.u.acls: must be a list of words"),
    ("version: 1\nnode_users:\n  u: {transfer_user: x, acls: [nope]}\n",
     "d.yaml:3: node_users.u.acls:"),
    ("version: 1\nnode_users:\n  u: {transfer_user: ''}\n",
     "d.yaml:3: node_users.u.transfer_user: must be text, not empty"),
    ("version: 1\nnode_users:\n  'a b': {transfer_user: x}\n", "d.yaml:3: node_users.a b:"),
    ("version: 1\ntransfer_users:\n  x: {restrictions: 's3://*'}\n",
     "d.yaml:3: transfer_users.x.restrictions: must be a list"),
    ("version: 1\ntransfer_users:\n  x:\n    restrictions:\n      - 's3://*'\n      - ''\n",
     "d.yaml:6: transfer_users.x.restrictions[1]: must be text"),
    ("version: 1\ntransfer_users:\n  x: {docroot: relative}\n",
     "d.yaml:3: transfer_users.x.docroot:"),
    ("version: 1\naccess_keys:\n  'a k': {storage: {path: /d}}\n",
     "d.yaml:3: access_keys.a k: an access key id is letters"),
    ("version: 1\naccess_keys:\n  ak: {}\n", "d.yaml:3: access_keys.ak: no storage"),
    ("version: 1\naccess_keys:\n  ak: {storage: {type: s3, path: /d}}\n",
     "d.yaml:3: access_keys.ak.storage.type: storage type 's3' is not supported"),
    ("version: 1\naccess_keys:\n  ak: {storage: {path: /d, kind: x}}\n",
     "d.yaml:3: access_keys.ak.storage.kind: unknown field"),
    ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n    secret: env:1X\n",
     "d.yaml:5: access_keys.ak.secret: not a variable name"),
    ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n    secret: 'file:'\n",
     "d.yaml:5: access_keys.ak.secret: a secret is never written here"),
    ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n"
     "    verification_key: {file: a, fingerprint: b}\n",
     "d.yaml:5: access_keys.ak.verification_key: one of file, fingerprint or pem"),
    ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n"
     "    verification_key: {pem: not-a-key}\n",
     "d.yaml:5: access_keys.ak.verification_key.pem: must be a PEM public key"),
    ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n    permissions: {}\n",
     "d.yaml:5: access_keys.ak.permissions: must be a list, not a mapping"),
    ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n    permissions:\n"
     "      - {path: /a, user: u, group: g, levels: [read]}\n",
     "d.yaml:6: access_keys.ak.permissions[0]: a user or a group (one of the two)"),
    ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n    permissions:\n"
     "      - {path: /a, user: u, levels: []}\n",
     "d.yaml:6: access_keys.ak.permissions[0].levels: a list of list, read"),
    ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n    permissions:\n"
     "      - {path: a/b, user: u, levels: [read]}\n",
     "d.yaml:6: access_keys.ak.permissions[0].path: a path starts with '/'"),
    ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n    permissions:\n"
     "      - {path: /a/../b, user: u, levels: [read]}\n",
     "d.yaml:6: access_keys.ak.permissions[0].path: a path must not contain '..'"),
    ("version: 1\nnode_users:\n  u: {transfer_user: \"a\\x01\"}\n",
     "d.yaml:3: node_users.u.transfer_user: control characters are not allowed"),
    ("version: 1\n? [a]\n: b\n", "d.yaml:2: ?: a key must be a word"),
])
def test_every_refusal_names_the_line_and_the_place(text, message):
    assert refused(text).startswith(message), refused(text)


def test_bytes_that_are_not_utf8_and_huge_documents_are_refused():
    with pytest.raises(UsageError, match="not UTF-8 text"):
        document.parse(b"version: 1\n\xff\n", "d")
    with pytest.raises(UsageError, match="larger than"):
        document.parse(b" " * (document.MAX_DOCUMENT_BYTES + 1), "d")
    assert len(b" " * document.MAX_DOCUMENT_BYTES) == document.MAX_DOCUMENT_BYTES


def test_levels_compare_as_a_set_in_the_nodes_order():
    assert document.canonical_levels(["read", "list", "read"]) == ("list", "read")
    assert document.canonical_levels(["zz", "preview", "aa"]) == ("preview", "aa", "zz")
    assert document.canonical_levels(None) == ()


def test_the_csv_columns():
    doc = document.from_csv(f'name,transfer_user,password_hash,acls\nu1,x,"{HASH}",admin '
                            'internal\n'.encode(), "c")
    assert doc["node_users"] == {"u1": {"transfer_user": "x", "password": HASH,
                                        "acls": ["admin", "internal"]}}
    with pytest.raises(UsageError, match="c:3: node user 'u1' a second time"):
        document.from_csv(b"name,transfer_user\nu1,x\nu1,y\n", "c")
    with pytest.raises(UsageError, match="c:2: more fields than the header has"):
        document.from_csv(b"name,transfer_user\nu1,x,z\n", "c")
    with pytest.raises(UsageError, match="c:1: unknown column 'mail'"):
        document.from_csv(b"name,transfer_user,mail\n", "c")
    with pytest.raises(UsageError, match="c:1: the header has no transfer_user column"):
        document.from_csv(b"name\n", "c")


def test_dump_writes_yaml_in_order_and_json():
    data = {"version": 1, "node_users": {"b": {"transfer_user": "x"}, "a": {}}}
    assert document.dump(data, "yaml") == "version: 1\nnode_users:\n  b:\n    transfer_user: " \
                                          "x\n  a: {}\n"
    assert document.dump(data, "json").startswith('{\n  "version": 1,\n')


# -- the local plan --------------------------------------------------------------------------


def cfg_with(**users):
    from nodecli.config.model import Config, NodeUser, TransferUser

    cfg = Config()
    cfg.transfer_users["x"] = TransferUser("x", ["file:////data/*"])
    cfg.transfer_users["old"] = TransferUser("old", [], "/srv")
    for name, acls in users.items():
        cfg.users[name] = NodeUser(name, "x", HASH, list(acls))
    return cfg


def test_local_changes_and_apply_local():
    cfg = cfg_with(u1=["admin"], gone=[])
    doc = parse(f"""version: 1
transfer_users:
  x: {{restrictions: ["file:////data/*"]}}
  new: {{docroot: /n}}
node_users:
  u1: {{transfer_user: x, acls: []}}
  u2: {{transfer_user: new, password: "{HASH}"}}
""")
    managed = {plan.managed_id("node_user", "gone")}
    changes = plan.local_changes(doc, cfg, managed, prune=True)
    assert [(c.kind, c.name, c.action) for c in changes] == [
        ("transfer_user", "new", "add"), ("transfer_user", "old", "unmanaged"),
        ("node_user", "u1", "change"), ("node_user", "u2", "add"),
        ("node_user", "gone", "remove")]
    assert changes[2].fields == {"acls": (["admin"], [])}
    assert changes[3].fields["password"][1].startswith("hash ")
    assert [c.acts for c in changes] == [True, False, True, True, True]
    assert plan.local_changes(doc, cfg, managed, prune=False)[-1].name == "u2"
    plan.apply_local(doc, cfg, changes, removals=False)
    assert cfg.users["u1"].acls == [] and cfg.users["u1"].password_hash == HASH
    assert cfg.users["u2"].transfer_user == "new" and cfg.transfer_users["new"].docroot == "/n"
    assert "gone" in cfg.users
    plan.apply_local(doc, cfg, changes, removals=True)
    assert "gone" not in cfg.users and "old" in cfg.transfer_users
    assert plan.local_changes(doc, cfg, managed, prune=False) == []


def test_a_transfer_user_changed_shows_its_fields():
    cfg = cfg_with()
    doc = parse("version: 1\ntransfer_users:\n  old: {restrictions: ['s3://*']}\n")
    (c,) = plan.local_changes(doc, cfg, set(), prune=False)
    assert c.fields == {"restrictions": (None, ["s3://*"]), "docroot": ("/srv", None)}


def test_paths_below_the_keys_root():
    assert plan._relative("/data/a/b", "/data") == "/a/b"
    assert plan._relative("/data", "/data/") == "/"
    assert plan._relative("/database/x", "/data") == "/database/x"
    assert plan._relative("/a//b/", "/") == "/a/b"


def test_the_digest_changes_with_what_was_read():
    doc = parse("version: 1\n")
    state = plan.NodeState("n", {"ak": {"storage": {"path": "/"}}})
    one = plan.digest(doc, {}, state, False)
    assert one == plan.digest(doc, {}, state, False) and one.startswith("sha256:")
    assert one != plan.digest(doc, {}, state, True)
    state.perms["ak"] = {("/", "user", "u"): {"levels": ("read",), "id": "1"}}
    assert one != plan.digest(doc, {}, state, False)


# -- steps and the record ------------------------------------------------------------------


def test_node_steps_in_the_safe_order_and_what_they_send():
    C = plan.Change
    changes = [C("n", "access_key", "k9", "remove", ak="k9"),
               C("n", "permission", "p", "remove", ak="k1", perm_id="7"),
               C("n", "permission", "p", "add", ak="k1", ident=("/a", "user", "u"),
                 body={"levels": ["read"]}),
               C("n", "access_key", "k1", "add", ak="k1", body={"storage": {"path": "/"}}),
               C("n", "permission", "q", "change", ak="k1", perm_id="8",
                 body={"levels": ["list"]}),
               C("n", "access_key", "k2", "change", ak="k2", body={"storage": {"path": "/x"}}),
               C("n", "access_key", "k3", "unmanaged", ak="k3"),
               C(plan.LOCAL, "node_user", "u", "add")]
    steps = execute.node_steps(changes)
    assert [(c.kind, c.action) for c in steps] == execute.ORDER
    sent = [execute.requests_of(c)[:2] for c in steps]
    assert sent == [("POST", "/access_keys"), ("PUT", "/access_keys/k2"),
                    ("POST", "/permissions"), ("PUT", "/permissions/8"),
                    ("DELETE", "/permissions/7"), ("DELETE", "/access_keys/k9")]
    assert execute.requests_of(steps[0])[2] == {"id": "k1", "secret": "***",
                                                "storage": {"path": "/"}}
    assert execute.requests_of(steps[2])[2]["file_id"] == "<id of /a>"


def test_the_record_keeps_what_is_managed(tmp_path):
    assert execute.load_record(tmp_path, "https://n:9092") == set()
    objects = {plan.managed_id("access_key", "k1"), plan.managed_id("permission", "k1", "/",
                                                                     "user", "u"),
               plan.managed_id("permission", "k2", "/", "user", "u")}
    execute.save_record(tmp_path, "https://n:9092", objects)
    assert execute.load_record(tmp_path, "https://n:9092") == objects
    assert execute.load_record(tmp_path, "https://other:9092") == set()
    path = execute.record_path(tmp_path, "https://n:9092")
    assert path.parent.name == "declare" and oct(path.stat().st_mode)[-3:] == "600"
    removed = execute.removed_objects([plan.Change("n", "access_key", "k1", "remove"),
                                       plan.Change("n", "access_key", "k2", "unmanaged")])
    assert execute.forget(objects, removed) == {plan.managed_id("permission", "k2", "/",
                                                                "user", "u")}
    path.write_text("{not json")
    from nodecli.errors import ConfigError

    with pytest.raises(ConfigError, match="unreadable record"):
        execute.load_record(tmp_path, "https://n:9092")


def test_document_objects_are_what_apply_adopts():
    doc = parse("version: 1\nnode_users:\n  u: {transfer_user: x}\naccess_keys:\n  k:\n"
                "    storage: {path: /}\n    permissions:\n"
                "      - {path: /a, group: g, levels: [read]}\n")
    assert execute.document_objects(doc, plan.LOCAL) == {plan.managed_id("node_user", "u")}
    assert execute.document_objects(doc, "n") == {
        plan.managed_id("access_key", "k"), plan.managed_id("permission", "k", "/a", "group",
                                                            "g")}


def test_run_steps_reports_what_was_done_and_not():
    from nodecli.errors import RemoteError

    ran, said = [], []

    def fail():
        raise RemoteError("boom")

    steps = [lambda: ran.append(1), fail, lambda: ran.append(3)]
    with pytest.raises(RemoteError):
        execute.run_steps(steps, ["a", "b", "c"], lambda d, n: said.append((d, n)))
    assert ran == [1] and said == [(["a"], ["b", "c"])]


def test_json_documents_take_the_fast_path_and_still_name_the_line():
    text = '{\n  "version": 1,\n  "node_users": {\n    "u": {"transfer_user": "x"}\n  }\n}\n'
    assert parse(text).node_users == {"u": {"transfer_user": "x"}}
    bad = text.replace('"transfer_user": "x"', '"transfer_user": "x", "mail": 1')
    assert refused(bad).startswith("d.yaml:4: node_users.u.mail: unknown field")
    twice = text.replace('"version": 1,', '"version": 1, "version": 1,')
    assert refused(twice).startswith("d.yaml:2: version: given twice")
    assert refused('{\n  "version": 1,\n}\n').startswith("d.yaml:3: not JSON")


AK = "version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n"


@pytest.mark.parametrize("text,message", [
    ("version: 1\naccess_keys: [a]\n", "d.yaml:2: access_keys: must be a mapping (name: "
                                        "value), not a list"),
    ("version: 1\naccess_keys:\n  ak: [1]\n", "d.yaml:3: access_keys.ak: must be a mapping"),
    ("version: 1\naccess_keys:\n  ak: {storage: x}\n",
     "d.yaml:3: access_keys.ak.storage: must be a mapping (name: value), not text"),
    ("version: 1\naccess_keys:\n  ak: {storage: {type: local}}\n",
     "d.yaml:3: access_keys.ak.storage.path: must be an absolute path, not nothing"),
    ("version: 1\naccess_keys:\n  ak: {storage: {path: /d}, key: 1}\n",
     "d.yaml:3: access_keys.ak.key: unknown field (known: storage, configuration, "
     "verification_key, secret, permissions)"),
    ("version: 1\ntransfer_users: [x]\n", "d.yaml:2: transfer_users: must be a mapping"),
    ("version: 1\ntransfer_users:\n  x: [1]\n", "d.yaml:3: transfer_users.x: must be a mapping"),
    ("version: 1\ntransfer_users:\n  x: {dir: /}\n",
     "d.yaml:3: transfer_users.x.dir: unknown field (known: restrictions, docroot)"),
    ("version: 1\ntransfer_users:\n  'a b': {}\n", "d.yaml:3: transfer_users.a b: invalid "
                                                   "transfer user name"),
    ("version: 1\ntransfer_users:\n  x:\n    restrictions: ['nope://*']\n",
     "d.yaml:4: transfer_users.x.restrictions[0]: invalid restriction 'nope://*': unknown "
     "storage scheme 'nope'"),
    ("version: 1\nnode_users:\n  u: {transfer_user: x, mail: 1}\n",
     "d.yaml:3: node_users.u.mail: unknown field (known: transfer_user, password, acls)"),
    ("version: 1\nnode_users:\n  u: {transfer_user: x, password: 5}\n",
     "d.yaml:3: node_users.u.password: must be a password hash"),
    (AK + "    verification_key: x\n", "d.yaml:5: access_keys.ak.verification_key: must be a "
                                        "mapping"),
    (AK + "    verification_key: {key: x}\n",
     "d.yaml:5: access_keys.ak.verification_key.key: unknown field (known: file, "
     "fingerprint, pem)"),
    (AK + "    verification_key: {file: ''}\n",
     "d.yaml:5: access_keys.ak.verification_key.file: must be text, not empty"),
    (AK + "    verification_key: {pem: 5}\n",
     "d.yaml:5: access_keys.ak.verification_key.pem: must be a PEM public key"),
    (AK + "    verification_key: {pem: '-----begin public key-----'}\n",
     "d.yaml:5: access_keys.ak.verification_key.pem: must be a PEM public key"),
    (AK + "    permissions:\n      - 5\n",
     "d.yaml:6: access_keys.ak.permissions[0]: must be a mapping"),
    (AK + "    permissions:\n      - {path: /, user: u, levels: [read], who: x}\n",
     "d.yaml:6: access_keys.ak.permissions[0].who: unknown field (known: path, user, group, "
     "levels)"),
    (AK + "    permissions:\n      - {user: u, levels: [read]}\n",
     "d.yaml:6: access_keys.ak.permissions[0].path: must be a path, not nothing"),
    (AK + "    permissions:\n      - {path: /, user: u, levels: [read, writ]}\n",
     "d.yaml:6: access_keys.ak.permissions[0].levels[1]: unknown level 'writ' (levels: "
     "list, read, write, delete, mkdir, rename, preview)"),
    ("version: 1\ntransfer_users:\n  x: {restrictions: ['s3://*'], docroot: /d}\n",
     "d.yaml:3: transfer_users.x: restrictions or a docroot, not both"),
    ("version: 1\ntransfer_users:\n  x: {docroot: 5}\n",
     "d.yaml:3: transfer_users.x.docroot: must be text, not a number"),
    (AK + "    permissions:\n      - {path: /, user: true, levels: [read]}\n",
     "d.yaml:6: access_keys.ak.permissions[0].user: must be text, not true/false"),
    (AK + "    permissions:\n      - {path: /, group: \"g\\x01\", levels: [read]}\n",
     "d.yaml:6: access_keys.ak.permissions[0].group: control characters are not allowed"),
    (AK + "    permissions:\n      - {path: /a, user: u, levels: [read]}\n"
          "      - {path: /a, user: u, levels: [list]}\n",
     "d.yaml:7: access_keys.ak.permissions[1]: a second permission for user u on /a"),
    (AK + "    configuration: [1]\n",
     "d.yaml:5: access_keys.ak.configuration: must be a mapping (name: value), not a list"),
    (AK + "    secret: 5\n", "d.yaml:5: access_keys.ak.secret: must be a reference "
                              "(env:NAME, file:PATH or stdin), not a number"),
    (AK + "    secret: STDIN\n", "d.yaml:5: access_keys.ak.secret: a secret is never written "
                                  "here: give env:NAME, file:PATH or stdin (or leave it out: "
                                  "a new one is made and stored)"),
    (AK + "    secret: 'env:'\n", "d.yaml:5: access_keys.ak.secret: a secret is never"),
    (AK + "    secret: 'env:a-b'\n", "d.yaml:5: access_keys.ak.secret: not a variable name: "
                                      "'a-b'"),
    (AK + "    secret: 'FILE:x'\n", "d.yaml:5: access_keys.ak.secret: a secret is never"),
])
def test_more_refusals_name_their_place(text, message):
    assert refused(text).startswith(message), refused(text)


@pytest.mark.parametrize("ref", ["stdin", "env:A", "env:lower_1", "env:_X9", "file:x",
                                 "file:/abs/path"])
def test_secret_references_that_are_taken(ref):
    assert parse(AK + f"    secret: '{ref}'\n").access_keys["ak"].secret == ref


def test_verification_keys_by_each_form():
    pem = "-----BEGIN PUBLIC KEY-----\nMII\n-----END PUBLIC KEY-----\n"
    for form, value in (("file", "k.pem"), ("fingerprint", "SHA256:x"), ("pem", pem)):
        quoted = value.replace("\n", "\\n")  # a YAML double-quoted string
        doc = parse(AK + f'    verification_key: {{{form}: "{quoted}"}}\n')
        assert doc.access_keys["ak"].verification_key == (form, value)
        assert document.key_dict(doc.access_keys["ak"])["verification_key"] == {form: value}
