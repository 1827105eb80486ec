"""export, diff and apply -f against the emulator over HTTPS (docs/declare.md), and
permission modify."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, reap, subprocess_env

DOC = """\
version: 1
transfer_users:
  aspera: {restrictions: ["file:////data/*"]}
node_users:
  usr1: {transfer_user: aspera, acls: [admin]}
access_keys:
  ak1:
    storage: {type: local, path: /data}
    configuration: {activity_event_logging: true}
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
def node(emulator, invoke):
    """Profile ``emu`` (the default) for the emulator as its admin; folders to grant on."""
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r
    seed(emulator)
    return emulator


@pytest.fixture
def seen(emulator):
    """The requests the emulator answers, as ``METHOD /path`` lines."""
    lines: list[str] = []
    before = emulator.server.access_log
    emulator.server.access_log = lines.append
    yield lines
    emulator.server.access_log = before


def requests(lines: list[str], writes_only: bool = True) -> list[str]:
    out = []
    for line in lines:
        if '"' not in line:
            continue
        method, path = line.split('"', 1)[1].split(" ")[:2]
        if not writes_only or method not in ("GET", "HEAD"):
            out.append(f"{method} {path.split('?')[0]}")
    return out


def write(tmp_path: Path, text: str, name: str = "doc.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def rows(r) -> list[tuple[str, str, str]]:
    return [(x["kind"], x["name"], x["action"]) for x in json.loads(r.stdout)]


def perms_of(emulator, ak: str = "ak1") -> dict[tuple[str, str, str], list[str]]:
    from nodecli.emulator.storage import storage_of

    st = storage_of(emulator.state)
    root = emulator.state.access_keys[ak].storage["path"].rstrip("/")
    return {(st.by_id[p.file_id].path[len(root):] or "/", p.access_type, p.access_id):
            list(p.access_levels) for p in st.permissions.values()}


# -- permission modify ----------------------------------------------------------------------


@pytest.fixture
def as_key(emulator):
    seed(emulator)
    emulator.add_access_key("ak9", "ak9-secret")
    emulator.state.access_keys["ak9"].storage = {"type": "local", "path": "/data"}
    return {"NODECLI_URL": emulator.url, "NODECLI_ACCESS_KEY": "ak9",
            "NODECLI_PASSWORD": "ak9-secret"}


def test_permission_modify_by_path_and_holder_then_by_id(emulator, invoke, as_key, seen):
    r = invoke("permission", "grant", "/projects", "--user", "bob", "--levels", "list",
               "-o", "json", env=as_key)
    assert r.exit_code == 0, r
    pid = json.loads(r.stdout)["id"]
    seen.clear()
    r = invoke("permission", "modify", "/projects", "--user", "bob", "--levels",
               "read,list", env=as_key)
    assert r.exit_code == 0, r
    assert requests(seen) == [f"PUT /permissions/{pid}"]
    assert perms_of(emulator, "ak9") == {("/projects", "user", "bob"): ["read", "list"]}
    r = invoke("permission", "modify", pid, "--levels", "write", "-o", "json", env=as_key)
    assert r.exit_code == 0, r
    assert json.loads(r.stdout)["access_levels"] == ["write"]


def test_permission_modify_refuses_what_is_not_there(emulator, invoke, as_key, seen):
    r = invoke("permission", "grant", "/projects", "--group", "eng", "--levels", "list",
               env=as_key)
    assert r.exit_code == 0
    # an inherited permission is not the file's own: nothing is changed
    r = invoke("permission", "modify", "/projects/alpha", "--group", "eng", "--levels",
               "read", env=as_key)
    assert r.exit_code == 5, r
    assert "no permission for group 'eng'" in r.stderr
    r = invoke("permission", "modify", "/projects", "--user", "eng", "--levels", "read",
               env=as_key)
    assert r.exit_code == 5
    assert perms_of(emulator, "ak9") == {("/projects", "group", "eng"): ["list"]}
    r = invoke("permission", "modify", "7", "--user", "x", "--levels", "read", env=as_key)
    assert r.exit_code == 2 and "go with a PATH" in r.stderr
    assert [x for x in requests(seen) if x.startswith("PUT")] == []


# -- the document ----------------------------------------------------------------------------


@pytest.mark.parametrize("text,line,words", [
    ("version: 2\n", 1, "version: unsupported version 2"),
    ("node_users: {}\n", 1, "the document: no 'version: 1'"),
    ("version: 1\nnode_users:\n  u1: {transfer_user: x, password: hunter2}\n", 3,
     "node_users.u1.password: must be a password hash"),
    ("version: 1\naccess_keys:\n  ak1:\n    storage: {path: /d}\n    secret: s3cr3t\n", 5,
     "access_keys.ak1.secret: a secret is never written here"),
    ("version: 1\naccess_keys:\n  ak1:\n    storage: {path: /d}\n    permissions:\n"
     "      - {path: /a, user: u, levels: [read]}\n      - {path: /a/, user: u, "
     "levels: [list]}\n", 7, "a second permission for user u on /a"),
    ("version: 1\nnode_users:\n  u1: {transfer_user: x}\n  u1: {transfer_user: y}\n", 4,
     "node_users.u1: given twice"),
    ("version: 1\ntransfer_users:\n  x: {docroot: /d, restrictions: ['s3://*']}\n", 3,
     "restrictions or a docroot, not both"),
    ("version: 1\nnode_user: {}\n", 2, "node_user: unknown field"),
    ("version: 1\naccess_keys:\n  ak1: {storage: {path: d}}\n", 3, "must be absolute"),
    ("version: 1\n  bad: [\n", 2, "not YAML or JSON"),
])
def test_a_bad_document_is_one_line_naming_the_line(invoke, tmp_path, text, line, words):
    f = write(tmp_path, text)
    r = invoke("diff", "-f", f)
    assert r.exit_code == 2, r
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    where = f"{f}:{line}: " if line else f"{f}: "
    assert where in r.stderr and words in r.stderr, r.stderr
    assert "s3cr3t" not in r.stderr and "hunter2" not in r.stderr


def test_json_documents_are_read_too(node, invoke, tmp_path):
    doc = {"version": 1, "transfer_users": {"aspera": {"restrictions": ["file:////data/*"]}}}
    f = write(tmp_path, json.dumps(doc), "doc.json")
    r = invoke("diff", "-f", f, "-o", "json")
    assert r.exit_code == 1, r
    assert rows(r) == [("transfer_user", "aspera", "add")]


# -- export ----------------------------------------------------------------------------------


def test_export_local_round_trips_with_hashes_only(invoke, tmp_path):
    invoke("xuser", "add", "aspera", "-r", "file:////data/*")
    assert invoke("user", "add", "usr1", "--xuser", "aspera", "--password-stdin",
                  "--acl", "admin", input="pw-secret\n").exit_code == 0
    for fmt in ("yaml", "json"):
        r = invoke("export", "-o", fmt)
        assert r.exit_code == 0, r
        assert "pw-secret" not in r.stdout and "$scrypt$" in r.stdout
        assert r.stdout.startswith("version: 1\n" if fmt == "yaml" else '{\n  "version": 1,')
        f = write(tmp_path, r.stdout, f"e.{fmt}")
        assert invoke("diff", "-f", f).exit_code == 0
    data = json.loads(invoke("export", "--local", "-o", "json").stdout)
    assert set(data) == {"version", "transfer_users", "node_users"}
    assert data["node_users"]["usr1"]["acls"] == ["admin"]


def test_from_csv_documented_columns(invoke, tmp_path):
    from nodecli.users.passwords import hash_password

    h = hash_password("pw", log_n=4)
    # a hash holds commas: quoted, as any csv writer does
    csv = write(tmp_path, "name,transfer_user,password_hash,acls\n"
                          f'u1,aspera,"{h}",admin;internal\nu2,aspera,,\n', "u.csv")
    r = invoke("export", "--from-csv", csv, "-o", "json")
    assert r.exit_code == 0, r
    assert json.loads(r.stdout)["node_users"] == {
        "u1": {"transfer_user": "aspera", "password": h, "acls": ["admin", "internal"]},
        "u2": {"transfer_user": "aspera"}}
    bad = write(tmp_path, "name,transfer_user,password_hash\nu1,aspera,\nu2,aspera,plain\n",
                "bad.csv")
    r = invoke("export", "--from-csv", bad)
    assert r.exit_code == 2, r
    assert f"{bad}:3: u2.password: must be a password hash" in r.stderr
    r = invoke("export", "--from-csv", write(tmp_path, "user,xuser\n", "h.csv"))
    assert r.exit_code == 2 and "no name column" in r.stderr


# -- diff and apply --------------------------------------------------------------------------


def test_apply_then_diff_is_clean_and_a_second_apply_sends_nothing(node, invoke, tmp_path,
                                                                   seen):
    f = write(tmp_path, DOC)
    r = invoke("diff", "-f", f, "--node", "emu", "-o", "json")
    assert r.exit_code == 1, r
    assert [(k, a) for k, _, a in rows(r)] == [
        ("transfer_user", "add"), ("node_user", "add"), ("access_key", "add"),
        ("permission", "add"), ("permission", "add")]
    seen.clear()
    r = invoke("apply", "-f", f, "--node", "emu")
    assert r.exit_code == 0, r
    # one request per change, in the safe order: the key before its permissions
    assert requests(seen) == ["POST /access_keys", "POST /permissions", "POST /permissions"]
    assert r.stdout.count("new secret") == 1
    secret = r.stdout.split("new secret ", 1)[1].split()[0]
    assert perms_of(node) == {("/projects/alpha", "user", "alice"): ["list", "read"],
                              ("/projects", "group", "eng"): ["list"]}
    assert node.state.access_keys["ak1"].configuration == {"activity_event_logging": True}
    seen.clear()
    r = invoke("diff", "-f", f, "--node", "emu")
    assert r.exit_code == 0, r
    r = invoke("apply", "-f", f, "--node", "emu")
    assert r.exit_code == 0 and "nothing to change" in r.stderr, r
    assert requests(seen) == []  # none for an unchanged object
    # the generated secret was stored: the key logs in with it
    r = invoke("permission", "list", "/projects", env={
        "NODECLI_URL": node.url, "NODECLI_ACCESS_KEY": "ak1", "NODECLI_PASSWORD": secret})
    assert r.exit_code == 0, r


def test_changes_show_fields_before_and_after_and_apply_changes_in_place(node, invoke,
                                                                         tmp_path, seen):
    f = write(tmp_path, DOC)
    assert invoke("apply", "-f", f).exit_code == 0
    changed = DOC.replace("levels: [list]}", "levels: [list, read]}").replace(
        "acls: [admin]", "acls: []").replace("activity_event_logging: true",
                                             "activity_event_logging: false")
    g = write(tmp_path, changed, "changed.yaml")
    r = invoke("diff", "-f", g, "-o", "json")
    assert r.exit_code == 1
    by_kind = {x["kind"]: x for x in json.loads(r.stdout)}
    assert by_kind["permission"]["fields"] == {
        "levels": {"before": ["list"], "after": ["list", "read"]}}
    assert by_kind["node_user"]["fields"] == {"acls": {"before": ["admin"], "after": []}}
    assert by_kind["access_key"]["fields"] == {"configuration.activity_event_logging": {
        "before": True, "after": False}}
    r = invoke("diff", "-f", g)
    assert "levels: [\"list\"] -> [\"list\",\"read\"]" in r.stdout
    seen.clear()
    assert invoke("apply", "-f", g).exit_code == 0
    pid = next(p.id for p in __import__("nodecli.emulator.storage", fromlist=["x"])
               .storage_of(node.state).permissions.values() if p.access_id == "eng")
    assert requests(seen) == ["PUT /access_keys/ak1", f"PUT /permissions/{pid}"]
    assert invoke("diff", "-f", g).exit_code == 0


def test_diff_exit_codes_over_many_nodes_the_worst(node, invoke, tmp_path):
    from nodecli.emulator.storage import storage_of

    f = write(tmp_path, DOC)
    assert invoke("apply", "-f", f).exit_code == 0
    r = invoke("node", "add", "emu-b", "--url", node.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0
    # the same node under two names: no drift, exit 0
    assert invoke("diff", "-f", f, "--nodes", "emu*").exit_code == 0
    # drift: one permission changed behind nodecli's back, seen from both names
    perm = next(p for p in storage_of(node.state).permissions.values()
                if p.access_id == "alice")
    perm.access_levels = ["list"]
    r = invoke("diff", "-f", f, "--all-nodes", "-o", "json")
    assert r.exit_code == 1
    assert [(x["node"], x["kind"], x["action"]) for x in json.loads(r.stdout)] == [
        ("emu", "permission", "change"), ("emu-b", "permission", "change")]
    # a node that cannot be read is an error (>= 2): the worst wins over "changes"
    r = invoke("node", "add", "down", "--url", "https://127.0.0.1:9", "--user", "admin",
               "--no-check", "--password-stdin", input="x\n")
    assert r.exit_code == 0, r
    r = invoke("--deadline", "5s", "diff", "-f", f, "--all-nodes")
    assert r.exit_code == 6, r
    assert "down:" in r.stderr and "emu-b" in r.stdout


def test_prune_removes_only_what_nodecli_created_or_adopted(node, invoke, tmp_path, seen):
    node.add_access_key("theirs", "theirs-secret")  # made by someone else
    f = write(tmp_path, DOC)
    assert invoke("apply", "-f", f).exit_code == 0
    less = DOC.split("  ak1:")[0].replace(
        "  usr1: {transfer_user: aspera, acls: [admin]}\n", "") + "  {}\n"
    less = less.replace("node_users:\n", "node_users: {}\n")
    g = write(tmp_path, less, "less.yaml")
    r = invoke("diff", "-f", g, "--prune", "-o", "json")
    assert r.exit_code == 1
    assert sorted(rows(r)) == [("access_key", "ak1", "remove"),
                               ("access_key", "theirs", "unmanaged"),
                               ("node_user", "usr1", "remove")]
    # without a terminal, removing needs --yes
    r = invoke("apply", "-f", g, "--prune")
    assert r.exit_code == 2 and "--yes" in r.stderr
    seen.clear()
    r = invoke("apply", "-f", g, "--prune", "--yes")
    assert r.exit_code == 0, r
    assert requests(seen) == ["DELETE /access_keys/ak1"]
    assert sorted(node.state.access_keys) == ["theirs"]
    assert invoke("user", "show", "usr1").exit_code == 5
    # removed objects leave the record: a second prune removes nothing
    seen.clear()
    r = invoke("diff", "-f", g, "--prune", "-o", "json")
    assert rows(r) == [("access_key", "theirs", "unmanaged")]
    assert invoke("apply", "-f", g, "--prune", "--yes").exit_code == 0
    assert requests(seen) == []


def _spawn(home, emulator, *args: str):
    import pexpect

    return pexpect.spawn(sys.executable, ["-m", "nodecli", *args],
                         env=subprocess_env({"NODECLI_HOME": str(home), "TERM": "xterm",
                                             "NODECLI_CACERT": emulator.ca_file}),
                         cwd=str(REPO_ROOT), encoding="utf-8", timeout=60)


@pytest.mark.parametrize("answer,code,left", [("n", 1, ["ak1"]), ("y", 0, [])])
def test_apply_asks_before_removing_on_a_terminal(node, invoke, home, tmp_path, answer,
                                                   code, left):
    import pexpect

    assert invoke("apply", "-f", write(tmp_path, DOC)).exit_code == 0
    g = write(tmp_path, "version: 1\naccess_keys: {}\n", "none.yaml")
    child = _spawn(home, node, "apply", "-f", g, "--prune")
    try:
        child.expect(r"Remove 1 object\(s\): remove access key ak1 on emu\? \[y/N\]: ")
        child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == code
    finally:
        reap(child)
    assert sorted(node.state.access_keys) == left


def test_dry_run_prints_every_request_and_the_config_diff(node, invoke, tmp_path, seen,
                                                           home):
    f = write(tmp_path, DOC)
    before = (home / "config.toml").read_bytes()
    r = invoke("--dry-run", "apply", "-f", f)
    assert r.exit_code == 0, r
    out = r.stdout
    assert out.count("would send: POST /access_keys") == 1
    assert out.count("would send: POST /permissions") == 2
    assert '"file_id": "<id of /projects/alpha>"' in out
    assert "+[transfer_users.aspera]" in out and "+[users.usr1]" in out
    assert out.rstrip().endswith("(--dry-run)")
    assert requests(seen) == [] and not node.state.access_keys
    assert (home / "config.toml").read_bytes() == before


def test_a_saved_plan_is_refused_when_the_node_changed(node, invoke, tmp_path, seen):
    f = write(tmp_path, DOC)
    plan = tmp_path / "p.plan"
    r = invoke("apply", "-f", f, "--save-plan", str(plan))
    assert r.exit_code == 0, r
    assert not node.state.access_keys and requests(seen) == []
    saved = json.loads(plan.read_text())
    assert saved["digest"].startswith("sha256:") and len(saved["changes"]) == 5
    assert invoke("xuser", "add", "aspera", "-r", "s3://*").exit_code == 0  # the world moved
    r = invoke("apply", "--plan", str(plan))
    assert r.exit_code == 1 and "the plan is stale" in r.stderr, r
    assert requests(seen) == []
    assert invoke("xuser", "delete", "aspera", "--yes").exit_code == 0
    r = invoke("apply", "--plan", str(plan))
    assert r.exit_code == 0, r
    assert invoke("diff", "-f", f).exit_code == 0


def test_a_failure_midway_says_what_was_done_and_a_second_apply_finishes(node, invoke,
                                                                         tmp_path, seen):
    two = DOC + ("  ak2:\n    storage: {type: local, path: /data/projects}\n"
                 "    permissions:\n      - {path: /beta, user: carol, levels: [read]}\n")
    f = write(tmp_path, two)
    # the node fails the first permission request (500: not retried)
    node.faults.path_prefix = "/permissions"
    node.faults.push("500")
    r = invoke("apply", "-f", f)
    assert r.exit_code == 6, r
    assert "apply stopped: 3 step(s) done, 3 not done" in r.stderr
    assert "done: add access key ak2 on emu" in r.stderr
    assert "not done: add permission ak1 /projects/alpha user alice on emu" in r.stderr
    assert sorted(node.state.access_keys) == ["ak1", "ak2"] and perms_of(node) == {}
    node.faults.clear()
    seen.clear()
    r = invoke("apply", "-f", f)
    assert r.exit_code == 0, r
    assert requests(seen) == ["POST /permissions"] * 3
    assert invoke("diff", "-f", f).exit_code == 0


def test_scale_users_and_permissions_in_one_process(node, invoke, tmp_path, seen):
    from nodecli.emulator.storage import storage_of
    from nodecli.users.passwords import hash_password

    st = storage_of(node.state)
    for i in range(50):
        st.ensure(f"/data/p{i}", "folder")
    h = hash_password("pw", log_n=4)
    users = "".join(f"  u{i}: {{transfer_user: aspera, password: '{h}'}}\n"
                    for i in range(1000))
    perms = "".join(f"      - {{path: /p{i % 50}, user: user{i}, levels: [read]}}\n"
                    for i in range(100))
    text = ("version: 1\ntransfer_users:\n  aspera: {docroot: /data}\nnode_users:\n" + users +
            "access_keys:\n  ak1:\n    storage: {path: /data}\n    permissions:\n" + perms)
    f = write(tmp_path, text)
    r = invoke("apply", "-f", f)
    assert r.exit_code == 0, r
    assert requests(seen) == ["POST /access_keys"] + ["POST /permissions"] * 100
    assert len(perms_of(node)) == 100
    seen.clear()
    assert invoke("diff", "-f", f).exit_code == 0
    # one permission changed: exactly one request
    g = write(tmp_path, text.replace("user7, levels: [read]", "user7, levels: [list]"), "g")
    seen.clear()
    assert invoke("apply", "-f", g).exit_code == 0
    assert len(requests(seen)) == 1 and requests(seen)[0].startswith("PUT /permissions/")


# -- backup and restore between two nodes ------------------------------------------------------


@pytest.fixture(scope="module")
def node_b(tmp_path_factory):
    from tests.conftest import _start_emulator

    handle = _start_emulator(tmp_path_factory, tls=True)
    handle.add_node_user("admin", "admin-pass", acls=("admin",))
    yield handle
    handle.server.stop()


def test_backup_of_a_restored_on_b_then_diff_b_is_clean(node, node_b, invoke, tmp_path,
                                                        monkeypatch):
    node_b.state.reset()
    seed(node_b)
    # each profile trusts its own node's CA (the variable would win over both)
    monkeypatch.delenv("NODECLI_CACERT")
    assert invoke("node", "set", "emu", "--cacert", node.ca_file).exit_code == 0
    r = invoke("node", "add", "b", "--url", node_b.url, "--user", "admin", "--cacert",
               node_b.ca_file, "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r
    pem = tmp_path / "pub.pem"
    assert invoke("key", "generate", str(tmp_path / "kp") + "/", "--bits",
                  "1024").exit_code == 0
    pem = tmp_path / "kp" / "public.pem"
    doc = DOC.replace("    permissions:", f"    verification_key: {{file: {pem}}}\n"
                                         "    permissions:")
    assert invoke("apply", "-f", write(tmp_path, doc), "--node", "emu").exit_code == 0
    r = invoke("export", "--node", "emu")
    assert r.exit_code == 0, r
    assert "BEGIN PUBLIC KEY" in r.stdout and "secret" not in r.stdout
    backup = write(tmp_path, r.stdout, "backup.yaml")
    r = invoke("apply", "-f", backup, "--node", "b")
    assert r.exit_code == 0, r
    assert invoke("diff", "-f", backup, "--node", "b").exit_code == 0
    assert perms_of(node_b) == perms_of(node)
    b_key = node_b.state.access_keys["ak1"]
    assert b_key.token_verification_key == node.state.access_keys["ak1"].token_verification_key
    assert b_key.configuration == {"activity_event_logging": True}


def test_diff_table_fits_a_narrow_terminal_one_line_per_row(node, invoke, home, tmp_path):
    from nodecli.render.text import display_width
    from tests.conventions_world import run_in_pty

    f = write(tmp_path, DOC)
    assert invoke("apply", "-f", f).exit_code == 0
    g = write(tmp_path, DOC.replace("[list, read]", "[list, read, write, delete, mkdir]")
              .replace("acls: [admin]", "acls: [admin, impersonation, internal]"), "g.yaml")
    env = {"NODECLI_HOME": str(home), "NODECLI_CACERT": node.ca_file}
    for columns in (60, 80):
        code, text, err = run_in_pty(["diff", "-f", g], env, columns, tmp_path)
        assert code == 1, (text, err)
        lines = text.rstrip("\n").split("\n")
        assert len(lines) == 1 + 2, text  # the heading, the user and the permission
        assert all(display_width(line) <= columns for line in lines), text
        assert "usr1" in text and "permission" in text


def test_a_keys_permissions_are_its_own_not_those_of_a_key_on_the_same_storage(
        node, invoke, tmp_path):
    node.add_access_key("theirs", "theirs-secret")
    node.state.access_keys["theirs"].storage = {"type": "local", "path": "/data"}
    r = invoke("permission", "grant", "/projects/alpha", "--user", "alice", "--levels", "list",
               env={"NODECLI_URL": node.url, "NODECLI_ACCESS_KEY": "theirs",
                    "NODECLI_PASSWORD": "theirs-secret"})
    assert r.exit_code == 0, r
    f = write(tmp_path, DOC)
    assert invoke("apply", "-f", f).exit_code == 0
    r = invoke("diff", "-f", f, "--prune", "-o", "json")
    assert rows(r) == [("access_key", "theirs", "unmanaged")], r.stdout
    data = json.loads(invoke("export", "--node", "emu", "-o", "json").stdout)
    assert len(data["access_keys"]["ak1"]["permissions"]) == 2
