"""export, diff and apply -f at their edges, against the emulator over HTTPS: what the
mutation run of nodecli/declare/{plan,execute,export}.py found no test holding
(docs/development.md, "Equivalent survivors: declare")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def node(emulator, invoke):
    """Profile ``emu`` (the default) for the emulator as its admin."""
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r
    return emulator


def write(tmp_path: Path, text: str, name: str = "doc.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# -- export --------------------------------------------------------------------------------


def test_export_local_of_an_empty_home_and_of_transfer_users(invoke):
    r = invoke("export", "--local", "-o", "json")
    assert r.exit_code == 0, r
    assert json.loads(r.stdout) == {"version": 1, "transfer_users": {}, "node_users": {}}
    assert invoke("xuser", "add", "aspera", "-r", "file:////data/*").exit_code == 0
    r = invoke("export", "--local", "-o", "json")
    assert json.loads(r.stdout) == {
        "version": 1, "transfer_users": {"aspera": {"restrictions": ["file:////data/*"]}},
        "node_users": {}}


def test_export_of_keys_by_id_whatever_the_node_says_of_their_storage(node, invoke):
    """Keys come out sorted by id (the node lists them as they were made); a storage
    that says no type or no path is the node's default (local, /); another type is kept
    as the node says it; an empty configuration is left out."""
    node.add_access_key("zz", "zz-secret")
    node.state.access_keys["zz"].storage = {"type": "s3", "path": "/bucket"}
    node.state.access_keys["zz"].configuration = {}
    node.add_access_key("mm", "mm-secret")
    node.state.access_keys["mm"].storage = {"path": "/m"}
    node.add_access_key("aa", "aa-secret")
    node.state.access_keys["aa"].storage = {}
    node.state.access_keys["aa"].configuration = {"activity_event_logging": False}
    r = invoke("export", "--node", "emu", "-o", "json")
    assert r.exit_code == 0, r
    keys = json.loads(r.stdout)["access_keys"]
    assert list(keys) == ["aa", "mm", "zz"]
    assert keys == {
        "aa": {"storage": {"type": "local", "path": "/"},
               "configuration": {"activity_event_logging": False}},
        "mm": {"storage": {"type": "local", "path": "/m"}},
        "zz": {"storage": {"type": "s3", "path": "/bucket"}}}
    # no secret known for any of them: their permissions are not exported, each said once
    assert [line.split(":")[2] for line in r.stderr.splitlines()] == [
        " access key aa", " access key mm", " access key zz"], r.stderr


DOC = """\
version: 1
access_keys:
  ak1:
    storage: {type: local, path: /data}
    permissions:
      - {path: /projects/alpha, user: alice, levels: [list, read]}
      - {path: /projects, group: eng, levels: [list]}
"""


def seed(emulator) -> None:
    from nodecli.emulator.storage import storage_of

    st = storage_of(emulator.state)
    st.ensure("/data/projects/alpha/a.txt", "file")
    st.ensure("/data/projects/beta", "folder")


@pytest.fixture
def seen(emulator):
    """The requests the emulator answers, as ``METHOD /path`` lines."""
    lines: list[str] = []
    before = emulator.server.access_log
    emulator.server.access_log = lines.append
    yield lines
    emulator.server.access_log = before


def requests(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if '"' in line:
            method, path = line.split('"', 1)[1].split(" ")[:2]
            out.append(f"{method} {path.split('?')[0]}")
    return out


def test_export_reads_each_key_once_from_its_listed_root(node, invoke, tmp_path, seen):
    """The key's root folder is the one the list names: no GET of the key itself; one
    GET per distinct file below it."""
    seed(node)
    assert invoke("apply", "-f", write(tmp_path, DOC)).exit_code == 0
    root = node.state.access_keys["ak1"].root_file_id
    seen.clear()
    r = invoke("export", "--node", "emu", "-o", "json")
    assert r.exit_code == 0, r
    assert json.loads(r.stdout)["access_keys"]["ak1"]["permissions"] == [
        {"path": "/projects", "group": "eng", "levels": ["list"]},
        {"path": "/projects/alpha", "user": "alice", "levels": ["list", "read"]}]
    got = [x for x in requests(seen) if x != "GET /access_keys"]  # (the list's pages)
    assert got[:2] == [f"GET /files/{root}", "GET /permissions"], got
    assert len(got) == 4 and all(x.startswith("GET /files/") for x in got[2:]), got


def test_export_logged_in_as_the_key_exports_its_permissions(node, invoke, tmp_path):
    """Logged in as an access key, its secret is the login's: its permissions are
    exported with no secret stored."""
    seed(node)
    node.add_access_key("ak9", "ak9-secret")
    node.state.access_keys["ak9"].storage = {"type": "local", "path": "/data"}
    env = {"NODECLI_URL": node.url, "NODECLI_ACCESS_KEY": "ak9",
           "NODECLI_PASSWORD": "ak9-secret"}
    assert invoke("permission", "grant", "/projects", "--user", "bob", "--levels", "list",
                  env=env).exit_code == 0
    r = invoke("export", "-o", "json", env=env)
    assert r.exit_code == 0, r
    assert json.loads(r.stdout)["access_keys"]["ak9"]["permissions"] == [
        {"path": "/projects", "user": "bob", "levels": ["list"]}]
    assert "not exported" not in r.stderr


def test_dry_run_prints_each_permission_request_whole(node, invoke, tmp_path, seen):
    seed(node)
    r = invoke("--dry-run", "apply", "-f", write(tmp_path, DOC))
    assert r.exit_code == 0, r
    body = {"file_id": "<id of /projects/alpha>", "access_type": "user", "access_id": "alice",
            "access_levels": ["list", "read"], "tags": None}
    assert "would send: POST /permissions\n" + json.dumps(body, indent=2) in r.stdout
    assert [x for x in requests(seen) if not x.startswith(("GET", "HEAD"))] == []


def test_permissions_of_a_key_made_elsewhere_are_set_with_its_referenced_secret(
        node, invoke, tmp_path, seen):
    """A key nodecli did not make: its secret is the document's reference, for reading
    its permissions and for changing them (no secret in the store)."""
    seed(node)
    node.add_access_key("ak9", "ak9-secret")
    node.state.access_keys["ak9"].storage = {"type": "local", "path": "/data"}
    doc = write(tmp_path, DOC.replace("ak1:", "ak9:").replace(
        "    permissions:", "    secret: env:AK9_SECRET\n    permissions:"))
    r = invoke("apply", "-f", doc, env={"AK9_SECRET": "ak9-secret"})
    assert r.exit_code == 0, r
    assert [x for x in requests(seen) if x.startswith("POST")] == ["POST /permissions"] * 2
    r = invoke("diff", "-f", doc, env={"AK9_SECRET": "ak9-secret"})
    assert r.exit_code == 0, r


# -- the steps, without a node -----------------------------------------------------------


def test_requests_of_permission_changes_and_removals_name_the_id_escaped():
    from nodecli.declare.execute import requests_of
    from nodecli.declare.plan import Change

    change = Change("emu", "permission", "ak1 /a user u", "change", ak="ak1",
                    ident=("/a", "user", "u"), perm_id="7/8", body={"levels": ["read"]})
    assert requests_of(change) == ("PUT", "/permissions/7%2F8", {"access_levels": ["read"]})
    change.action = "remove"
    assert requests_of(change) == ("DELETE", "/permissions/7%2F8", None)


def test_forgetting_a_node_user_keeps_the_permissions_of_a_key_of_its_name():
    from nodecli.declare.execute import forget
    from nodecli.declare.plan import managed_id

    perm = managed_id("permission", "u1", "/a", "user", "x")
    objects = {perm, managed_id("node_user", "u1"), managed_id("access_key", "u1")}
    assert forget(objects, {managed_id("node_user", "u1")}) == {
        perm, managed_id("access_key", "u1")}
    # a key removed takes its permissions with it
    assert forget(objects, {managed_id("access_key", "u1"), managed_id("permission", "u1")}) \
        == {managed_id("node_user", "u1")}


def test_a_new_keys_secret_is_24_random_bytes_shown_once(node, invoke, tmp_path):
    import re

    seed(node)
    r = invoke("apply", "-f", write(tmp_path, DOC))
    assert r.exit_code == 0, r
    (secret,) = re.findall(r"access key ak1: new secret (\S+) \(stored; shown this once\)",
                           r.stdout)
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", secret), secret  # base64url of 24 bytes
    from nodecli.emulator.server import secret_digest

    assert node.state.access_keys["ak1"].secret_digest == secret_digest(secret)


def test_step_names_say_the_node_and_nothing_for_local_users():
    from nodecli.declare.execute import step_name
    from nodecli.declare.plan import LOCAL, Change

    assert step_name(Change(LOCAL, "node_user", "u1", "add")) == "add node user u1"
    assert step_name(Change("emu", "access_key", "ak1", "remove")) == \
        "remove access key ak1 on emu"


def test_apply_adopts_transfer_users_and_node_users_and_the_record_says_so(tmp_path):
    from nodecli.declare import document, execute
    from nodecli.declare.plan import LOCAL, managed_id

    doc = document.parse(b"version: 1\ntransfer_users:\n  x: {}\n  y: {}\n"
                         b"node_users:\n  u: {transfer_user: x}\n", "d.yaml")
    objects = execute.document_objects(doc, LOCAL)
    assert objects == {managed_id("transfer_user", "x"), managed_id("transfer_user", "y"),
                       managed_id("node_user", "u")}
    execute.save_record(tmp_path, LOCAL, objects)
    path = execute.record_path(tmp_path, LOCAL)
    assert json.loads(path.read_text()) == {"version": 1, "node": LOCAL,
                                            "objects": sorted(objects)}


def test_removed_objects_after_other_changes_and_the_records_names(tmp_path):
    import hashlib

    from nodecli.declare import execute
    from nodecli.declare.plan import LOCAL, Change, managed_id

    changes = [Change("n", "node_user", "u0", "add"),
               Change("n", "permission", "ak1 /a user u", "remove", ak="ak1",
                      ident=("/a", "user", "u")),
               Change("n", "access_key", "k2", "remove", ak="k2")]
    assert execute.removed_objects(changes) == {
        managed_id("permission", "ak1", "/a", "user", "u"), managed_id("access_key", "k2"),
        managed_id("permission", "k2")}
    assert execute.record_path(tmp_path, LOCAL) == tmp_path / "declare" / "local.json"
    label = "https://Node-A.example:9092/" + "x" * 40
    digest = hashlib.sha256(label.encode()).hexdigest()[:12]
    assert execute.record_path(tmp_path, label).name == \
        f"{('https_Node-A.example_9092_' + 'x' * 40)[:40]}-{digest}.json"


def test_a_password_change_shows_only_8_hex_digits_of_each_hash(invoke, tmp_path):
    import hashlib

    from nodecli.users.passwords import hash_password

    old, new = hash_password("pw-one", log_n=4), hash_password("pw-two", log_n=4)
    doc = "version: 1\ntransfer_users:\n  x: {{}}\nnode_users:\n  u: {{transfer_user: x, " \
          "password: '{}'}}\n"
    assert invoke("apply", "-f", write(tmp_path, doc.format(old))).exit_code == 0
    r = invoke("diff", "-f", write(tmp_path, doc.format(new), "new.yaml"), "-o", "json")
    assert r.exit_code == 1, r

    def shown(h: str) -> str:
        return "hash " + hashlib.sha256(h.encode()).hexdigest()[:8]

    assert json.loads(r.stdout)[0]["fields"] == {
        "password": {"before": shown(old), "after": shown(new)}}
    assert old not in r.stdout and new not in r.stdout


def test_a_permission_added_to_a_key_there_is_one_whole_row(node, invoke, tmp_path):
    seed(node)
    assert invoke("apply", "-f", write(tmp_path, DOC)).exit_code == 0
    more = DOC + "      - {path: /projects/beta, user: bob, levels: [read]}\n"
    r = invoke("diff", "-f", write(tmp_path, more, "more.yaml"), "-o", "json")
    assert r.exit_code == 1, r
    assert json.loads(r.stdout) == [
        {"node": "emu", "kind": "permission", "name": "ak1 /projects/beta user bob",
         "action": "add", "fields": {"levels": {"before": None, "after": ["read"]}}}]


def test_a_permissions_levels_changed_is_one_whole_diff_row(node, invoke, tmp_path):
    seed(node)
    assert invoke("apply", "-f", write(tmp_path, DOC)).exit_code == 0
    changed = DOC.replace("levels: [list]}", "levels: [list, read]}")
    r = invoke("diff", "-f", write(tmp_path, changed, "changed.yaml"), "-o", "json")
    assert r.exit_code == 1, r
    assert json.loads(r.stdout) == [
        {"node": "emu", "kind": "permission", "name": "ak1 /projects group eng",
         "action": "change", "fields": {"levels": {"before": ["list"],
                                                   "after": ["list", "read"]}}}]
