"""``access can-i / who-can / what-can`` over HTTPS against the emulator, and ``--verify``
proving the model against the node: a seeded matrix (6 users with groups, 20+
permissions, nested folders, 3 access keys, one of them on a sub-folder), a node that
disagrees (prefix matching), and the boundaries (the storage root itself, ``/fin`` next
to ``/finance``, trailing slashes, a level held on the parent only, revocation)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

USERS = {  # user -> group ids as its token lists them (most specific first)
    "alice": ["eng-web", "eng", "staff"],
    "bob": ["eng", "staff"],
    "carol": ["finance", "staff"],
    "dave": ["hr", "staff"],
    "erin": [],
    "frank": ["auditors"],
}
FILES = [
    "/data/project/q1/a.txt", "/data/project/q2/b.txt", "/data/project/q3/deep/x.txt",
    "/data/project/q3/notes.txt", "/data/finance/2025/ledger.csv",
    "/data/finance/2026/plan.csv", "/data/fin/tmp.txt", "/data/hr/reviews/r1.txt",
    "/data/shared/inbox/i.txt", "/data/shared/outbox/o.txt", "/data/empty/.keep",
]
PERMS = [  # (node path, holder type, holder id, levels)
    ("/data/project", "group", "eng", ["list"]),
    ("/data/project/q1", "user", "alice", ["list", "read", "write"]),
    ("/data/project/q2", "group", "eng-web", ["read"]),
    ("/data/project/q3", "user", "bob", ["list", "read"]),
    ("/data/project/q3/deep", "user", "erin", ["read"]),
    ("/data/project/q3/notes.txt", "user", "dave", ["read", "preview"]),
    ("/data/finance", "group", "finance", ["list", "read", "write", "delete"]),
    ("/data/finance/2025", "group", "auditors", ["list", "read"]),
    ("/data/finance/2026", "user", "frank", ["preview"]),
    ("/data/fin", "user", "erin", ["list", "read"]),
    ("/data/hr", "group", "hr", ["list"]),
    ("/data/hr/reviews", "user", "dave", ["read", "write", "mkdir", "rename"]),
    ("/data/hr/reviews", "group", "staff", ["preview"]),
    ("/data/shared", "group", "staff", ["list", "read"]),
    ("/data/shared/inbox", "group", "staff", ["write", "mkdir"]),
    ("/data/shared/outbox", "user", "carol", ["delete"]),
    ("/data", "user", "frank", ["list"]),
    ("/data/empty", "user", "alice", []),
    ("/data/project/q1/a.txt", "user", "bob", ["read"]),
    ("/data/finance/2025/ledger.csv", "user", "alice", ["read"]),
    ("/data/shared/outbox", "group", "eng", ["list"]),
]
KEYS = {"ak-all": "/data", "ak-fin": "/data/finance", "ak-proj": "/data/project"}


@functools.cache
def _key():
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505 - a test key, fast to make


def _pems() -> tuple[bytes, str]:
    from cryptography.hazmat.primitives import serialization

    key = _key()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class World:
    def __init__(self, emulator, invoke, home: Path) -> None:
        from nodecli.config.paths import resolve_paths
        from nodecli.emulator.storage import Permission, storage_of

        self.emulator, self.invoke = emulator, invoke
        self.storage = storage_of(emulator.state)
        private, public = _pems()
        keys_dir = resolve_paths(None).keys_dir
        for ak, root in KEYS.items():
            emulator.add_access_key(ak, f"{ak}-secret")
            state_key = emulator.state.access_keys[ak]
            state_key.storage = {"type": "local", "path": root}
            state_key.token_verification_key = public
            folder = keys_dir / ak
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "private.pem").write_bytes(private)
            (folder / "private.pem").chmod(0o600)
        for path in FILES:
            self.storage.ensure(path, "file", 1)
        self.perm_ids = {}
        for i, (path, kind, who, levels) in enumerate(PERMS, 1):
            node = self.storage.ensure(path)
            self.storage.permissions[str(i)] = Permission(str(i), node.id, kind, who,
                                                          list(levels))
            self.perm_ids[(path, kind, who)] = str(i)
        self.storage.perm_ids = iter(range(len(PERMS) + 1, 10_000))

    def env(self, ak: str) -> dict[str, str]:
        return {"NODECLI_URL": self.emulator.url, "NODECLI_ACCESS_KEY": ak,
                "NODECLI_PASSWORD": f"{ak}-secret"}

    def run(self, ak: str, *args: str):
        return self.invoke("access", *args, env=self.env(ak))

    def who(self, user: str) -> list[str]:
        out = ["--user-id", user]
        for g in USERS[user]:
            out += ["--group-id", g]
        return out


@pytest.fixture
def world(emulator, invoke, home) -> World:
    return World(emulator, invoke, home)


def _json(r):
    assert r.exit_code in (0, 1), r
    return json.loads(r.stdout)


# -- the matrix: --verify agrees with the node ------------------------------------------------


def test_the_seeded_matrix_agrees_with_the_node(world):
    assert len(PERMS) >= 20 and len(USERS) >= 5 and len(KEYS) == 3
    checked = 0
    for ak in KEYS:
        for user in USERS:
            r = world.run(ak, "what-can", *world.who(user), "--verify", "-o", "json")
            assert r.exit_code == 0, (ak, user, r.stderr)
            assert "the node agrees with the model" in r.stderr
            checked += int(r.stderr.split("(")[-1].split()[0])
    assert checked > 200  # every entry of every key's storage, as every user


def test_what_can_lists_what_each_user_sees_with_levels(world):
    rows = _json(world.run("ak-all", "what-can", *world.who("alice"), "-o", "json"))
    seen = {r["path"]: r for r in rows}
    assert seen["/project"]["levels"] == ["list"]  # from the group eng (inherited)
    assert seen["/project/q1"]["levels"] == ["list", "read", "write"]
    assert seen["/project/q2"]["levels"] == ["list", "read"]  # eng-web + eng above
    assert seen["/"]["levels"] == [] and "on the way" in seen["/"]["via"]
    assert seen["/empty"]["levels"] == [] and "permission" in seen["/empty"]["via"]
    assert "/fin" not in seen and "/hr/reviews" in seen  # staff: preview on reviews
    assert seen["/hr"]["levels"] == [] and "on the way" in seen["/hr"]["via"]
    assert "/finance" in seen and seen["/finance"]["levels"] == []  # on the way to ledger
    r = world.run("ak-all", "what-can", *world.who("alice"))
    assert r.exit_code == 0, r.stderr
    assert "  project  list\n" in r.stdout and "    q1  list,read,write\n" in r.stdout
    r = world.run("ak-all", "what-can", *world.who("alice"), "-o", "csv")
    assert r.stdout.splitlines()[0] == "path,type,levels,lists,via"


def test_a_key_on_a_sub_folder_sees_permissions_set_above_it(world):
    rows = _json(world.run("ak-fin", "what-can", *world.who("frank"), "-o", "json"))
    seen = {r["path"]: r["levels"] for r in rows}
    # frank's list on /data, above the key's storage, is inherited by all of it
    assert seen == {"/": ["list"], "/2025": ["list", "read"], "/2026": ["list", "preview"]}
    r = world.run("ak-fin", "can-i", "list", "/", *world.who("frank"), "--explain")
    assert r.exit_code == 0 and "above the storage root" in r.stdout
    r = world.run("ak-fin", "can-i", "list", "/", *world.who("frank"),
                  "--no-inherit-above-root")
    assert r.exit_code == 1 and "no permission at or above" in r.stdout
    # and the node disagrees with that choice: --verify says so
    r = world.run("ak-fin", "what-can", *world.who("frank"), "--no-inherit-above-root",
                  "--verify")
    assert r.exit_code == 1
    assert "disagreement at /data/finance/2026 (listing): the node says [plan.csv], the " \
           "model refused" in r.stderr


# -- a node that disagrees is caught ----------------------------------------------------------


def test_verify_catches_a_node_that_matches_folders_as_string_prefixes(world):
    r = world.run("ak-all", "what-can", *world.who("erin"), "--verify")
    assert r.exit_code == 0, r.stderr
    world.storage.prefix_match = True  # /data/fin now also covers /data/finance
    r = world.run("ak-all", "what-can", *world.who("erin"), "--verify")
    assert r.exit_code == 1
    assert "disagreement at /data/finance (visible): the node says visible, the model " \
           "hidden" in r.stderr
    r = world.run("ak-all", "can-i", "read", "/finance/2026", *world.who("erin"), "--verify",
                  "-o", "json")
    body = json.loads(r.stdout)
    assert r.exit_code == 1 and body["answer"] == "no"
    assert body["verify"]["disagreements"] == [
        {"path": "/data/finance/2026", "check": "visible", "node": "visible",
         "model": "hidden"}]
    # the model's own answer does not move: the node is the one that is wrong
    world.storage.prefix_match = False
    r = world.run("ak-all", "can-i", "read", "/finance/2026", *world.who("erin"), "--verify")
    assert r.exit_code == 1 and "the node agrees" in r.stderr


def test_verify_catches_a_node_that_refuses_a_listing_the_model_grants(world):
    # the model believes in no traversal: the node shows the folders on the way
    r = world.run("ak-all", "what-can", *world.who("dave"), "--no-traverse", "--verify")
    assert r.exit_code == 1
    assert "disagreement at /data (visible): the node says visible, the model hidden" \
        in r.stderr


# -- can-i: answers, reasons, exit codes ------------------------------------------------------


@pytest.mark.parametrize(("ak", "level", "path", "user", "answer", "reason"), [
    ("ak-all", "read", "/project/q1", "alice", "yes", "granted"),
    ("ak-all", "list", "/project/q3/deep", "bob", "yes", "granted"),  # inherited
    ("ak-all", "read", "/project", "alice", "no", "level-not-held"),  # parent: list only
    ("ak-all", "list", "/project/q2", "alice", "yes", "granted"),  # held on the parent
    ("ak-all", "read", "/hr", "alice", "no", "no-permission"),
    ("ak-all", "read", "/fin", "carol", "no", "no-permission"),  # /finance is not /fin
    ("ak-all", "read", "/finance", "erin", "no", "no-permission"),  # /fin is not /finance
    ("ak-all", "read", "/fin", "erin", "yes", "granted"),
    ("ak-fin", "read", "/", "carol", "yes", "granted"),  # exactly the storage root
    ("ak-fin", "delete", "/2025/", "carol", "yes", "granted"),  # trailing slash
    ("ak-proj", "list", "/q3//deep/", "bob", "yes", "granted"),
    ("ak-all", "preview", "/hr/reviews/r1.txt", "dave", "yes", "granted"),
    ("ak-all", "write", "/shared/inbox", "erin", "no", "no-permission"),  # no group
    ("ak-all", "write", "/shared/inbox", "bob", "yes", "granted"),  # group staff
])
def test_can_i_answers_with_the_reason(world, ak, level, path, user, answer, reason):
    r = world.run(ak, "can-i", level, path, *world.who(user), "-o", "json")
    body = _json(r)
    assert (body["answer"], body["reason"]) == (answer, reason), body
    assert r.exit_code == (0 if answer == "yes" else 1)
    r = world.run(ak, "can-i", level, path, *world.who(user))
    assert r.stdout.splitlines()[0] == answer


def test_can_i_names_the_permission_that_grants(world):
    body = _json(world.run("ak-all", "can-i", "list", "/project/q2/b.txt",
                           *world.who("alice"), "-o", "json"))
    assert [(p["holder_type"], p["holder_id"], p["set_on"], p["inherited"])
            for p in body["because"]] == [("group", "eng", "/project", True)]
    assert body["held"] == ["list", "read"]


def test_explain_lists_every_rule_in_order(world):
    r = world.run("ak-all", "can-i", "read", "/project/q3/deep/x.txt", *world.who("erin"),
                  "--explain")
    assert r.exit_code == 0
    lines = [x.split(None, 3) for x in r.stdout.splitlines()[2:]]
    assert [(x[1], x[2]) for x in lines[:2]] == [("storage", "pass"), ("scope", "pass")]
    perms = [x[3] for x in lines[2:]]
    # the permissions on the path, most specific first (the grant), then its folders
    assert perms[0].startswith("user erin on /project/q3/deep grants read")
    assert perms[1].startswith("user bob on /project/q3: not user erin")
    assert len(lines) == 2 + 4  # deep, q3, project, /data (frank): the path's only


def test_scope_and_admin_tokens(world):
    r = world.run("ak-all", "can-i", "read", "/hr", "--user-id", "erin", "--scope",
                  "node.ak-fin:user:all", "-o", "json")
    assert r.exit_code == 1 and _json(r)["reason"] == "token-scope"
    r = world.run("ak-all", "can-i", "delete", "/hr", "--user-id", "erin", "--scope-role",
                  "admin", "--verify", "-o", "json")
    body = _json(r)
    assert r.exit_code == 0 and body["reason"] == "bypasses-permissions", r.stderr
    assert body["verify"]["agree"] is True
    r = world.run("ak-all", "can-i", "delete", "/hr", "--user-id", "erin", "--scope-role",
                  "admin", "--no-admin-bypass")
    assert r.exit_code == 1


def test_revocation_is_seen_by_model_and_node(world):
    args = ("can-i", "read", "/project/q3/notes.txt", *world.who("dave"), "--verify")
    r = world.run("ak-all", *args)
    assert r.exit_code == 0 and "the node agrees" in r.stderr, r.stderr
    pid = world.perm_ids[("/data/project/q3/notes.txt", "user", "dave")]
    r = world.invoke("permission", "revoke", pid, "--yes", env=world.env("ak-all"))
    assert r.exit_code == 0, r.stderr
    r = world.run("ak-all", *args)
    assert r.exit_code == 1 and r.stdout.startswith("no\n")
    assert "the node agrees" in r.stderr


def test_outside_paths_and_bad_input(world):
    r = world.run("ak-all", "can-i", "read", "/nope/x", *world.who("alice"))
    assert r.exit_code == 5 and "/nope" in r.stderr
    r = world.run("ak-all", "who-can", "/project/q9/x")
    assert r.exit_code == 5
    assert "error: /project/q9: no such file or folder in access key ak-all's storage " \
           "(/data)" in r.stderr
    for bad in (["can-i", "fly", "/x", "--user-id", "a"], ["can-i", "read", "x", "--user-id", "a"],
                ["can-i", "read", "/a/../b", "--user-id", "a"], ["can-i", "read", "/x"],
                ["what-can"], ["can-i", "read", "/x", "--user-id", "a", "--scope", "s",
                               "--verify"]):
        r = world.run("ak-all", *bad)
        assert r.exit_code == 2, (bad, r)
        assert "Traceback" not in r.stderr


def test_verify_without_a_signing_key_says_how_to_give_one(world, tmp_path):
    from nodecli.config.paths import resolve_paths

    (resolve_paths(None).keys_dir / "ak-all" / "private.pem").unlink()
    r = world.run("ak-all", "what-can", "--user-id", "alice", "--verify")
    assert r.exit_code == 2 and "--key-file-path" in r.stderr


# -- who-can ----------------------------------------------------------------------------------


def test_who_can_lists_holders_direct_and_inherited(world):
    rows = _json(world.run("ak-all", "who-can", "/project/q3/deep", "--level", "read",
                           "-o", "json"))
    got = [(r["holder_type"], r["holder_id"], r["set_on"], r["inherited"]) for r in rows]
    assert got == [("user", "erin", "/project/q3/deep", False),
                   ("user", "bob", "/project/q3", True),
                   ("scope", "node.ak-all:admin:all", "(bypasses permissions)", False),
                   ("access_key", "ak-all", "(bypasses permissions)", False)]
    r = world.run("ak-all", "who-can", "/project/q3/deep", "-o", "csv")
    lines = r.stdout.splitlines()
    assert lines[0] == "holder_type,holder_id,levels,set_on,inherited,permission_id,file_id"
    assert len(lines) == 1 + 6  # erin, bob, eng (list), frank (list on /data), 2 bypass


# -- many nodes -------------------------------------------------------------------------------


def test_who_can_and_what_can_over_node_profiles(world, invoke):
    for name in ("edge-1", "edge-2"):
        r = invoke("node", "add", name, "--url", world.emulator.url, "--access-key", "ak-all",
                   "--password-stdin", "--no-check", input="ak-all-secret\n")
        assert r.exit_code == 0, r.stderr
    rows = _json(invoke("access", "who-can", "/fin", "--nodes", "edge-*", "-o", "json"))
    assert [(r["node"], r["holder_id"]) for r in rows if r["permission_id"]] == [
        ("edge-1", "erin"), ("edge-1", "frank"), ("edge-2", "erin"), ("edge-2", "frank")]
    r = invoke("access", "what-can", "--nodes", "edge-*", "--user-id", "erin", "-o", "csv")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "node,path,type,levels,lists,via"
    assert [x.split(",")[:2] for x in lines[1:]] == [
        ["edge-1", "/"], ["edge-1", "/fin"], ["edge-1", "/project"], ["edge-1", "/project/q3"],
        ["edge-1", "/project/q3/deep"], ["edge-2", "/"], ["edge-2", "/fin"],
        ["edge-2", "/project"], ["edge-2", "/project/q3"], ["edge-2", "/project/q3/deep"]]
    r = invoke("access", "what-can", "--nodes", "edge-*", "--user-id", "erin", "--verify")
    assert r.exit_code == 2 and "one node" in r.stderr


def test_a_storage_deeper_than_256_folders_is_refused_not_walked_forever(world):
    world.storage.ensure("/data/deep/" + "/".join(["d"] * 260), "folder")
    r = world.run("ak-all", "what-can", "--user-id", "erin")
    assert r.exit_code == 6 and "deeper than 256" in r.stderr
    assert "Traceback" not in r.stderr


# -- the exact shapes: json fields, reports, node users ---------------------------------------


def test_can_i_json_names_the_granting_permission_and_the_verify_report(world):
    body = _json(world.run("ak-all", "can-i", "read", "/project/q3/deep", *world.who("erin"),
                           "--verify", "-o", "json"))
    deep = world.storage.by_path["/data/project/q3/deep"]
    assert body["because"] == [{
        "permission_id": world.perm_ids[("/data/project/q3/deep", "user", "erin")],
        "holder_type": "user", "holder_id": "erin", "levels": ["read"], "file_id": deep.id,
        "set_on": "/project/q3/deep", "inherited": False}]
    assert body["verify"] == {"checks": 2, "agree": True, "disagreements": []}
    assert (body["path"], body["node_path"], body["access_key"], body["user_id"]) == (
        "/project/q3/deep", "/data/project/q3/deep", "ak-all", "erin")
    assert (body["level"], body["held"], body["allowed"]) == ("read", ["read"], True)
    assert body["scope"] == "node.ak-all:user:all" and body["group_ids"] == []
    assert [r["rule"] for r in body["rules"]][:2] == ["storage", "scope"]


def test_a_listing_disagreement_names_both_listings(world):
    world.storage.prefix_match = True
    body = _json(world.run("ak-all", "can-i", "list", "/", *world.who("erin"), "--verify",
                           "-o", "json"))
    assert body["verify"]["disagreements"] == [
        {"path": "/data", "check": "listing", "node": "[fin, finance, project]",
         "model": "[fin, project]"}]
    assert body["verify"]["checks"] == 2 and body["verify"]["agree"] is False


def test_who_can_json_rows_and_the_holders_that_bypass_permissions(world):
    rows = _json(world.run("ak-fin", "who-can", "/2025", "--level", "read", "-o", "json"))
    assert rows[-2:] == [
        {"permission_id": "", "holder_type": "scope", "holder_id": "node.ak-fin:admin:all",
         "levels": ["all"], "file_id": "", "set_on": "(bypasses permissions)",
         "inherited": False},
        {"permission_id": "", "holder_type": "access_key", "holder_id": "ak-fin",
         "levels": ["all"], "file_id": "", "set_on": "(bypasses permissions)",
         "inherited": False}]
    assert [(r["holder_id"], r["set_on"]) for r in rows[:-2]] == [("auditors", "/2025"),
                                                                  ("finance", "/")]
    rows = _json(world.run("ak-fin", "who-can", "/2025", "--no-admin-bypass", "-o", "json"))
    assert [r["holder_type"] for r in rows][-1:] == ["access_key"]
    assert "scope" not in [r["holder_type"] for r in rows]
    assert ("frank", "(above the storage root, file " + world.storage.by_path["/data"].id
            + ")") in [(r["holder_id"], r["set_on"]) for r in rows]


def test_can_i_for_a_local_node_user(world, invoke):
    r = invoke("xuser", "add", "narrow", "-r", "file:////data/*", "-r", "!file:////data/fin/*")
    assert r.exit_code == 0, r.stderr
    assert invoke("xuser", "add", "rooted", "--docroot", "/srv/in").exit_code == 0
    for user, xuser in (("nina", "narrow"), ("rob", "rooted")):
        r = invoke("user", "add", user, "--xuser", xuser, "--password-stdin", input="pw\n")
        assert r.exit_code == 0, r.stderr
    r = invoke("access", "can-i", "write", "/data/finance/x", "--node-user", "nina",
               "--explain")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == [
        "yes", "why  restriction file:////data/* accepts file:////data/finance/x",
        "    1. restriction applies file:////data/* accepts file:////data/finance/x",
        "    2. restriction skip    !file:////data/fin/* does not match "
        "file:////data/finance/x"]
    body = _json(invoke("access", "can-i", "read", "/data/fin/x", "--node-user", "nina",
                        "-o", "json"))
    assert (body["answer"], body["reason"], body["level"], body["node_path"]) == (
        "no", "outside-storage", "read", "/data/fin/x")
    assert body["summary"] == "restriction !file:////data/fin/* rejects file:////data/fin/x"
    assert [(s["rule"], s["verdict"]) for s in body["rules"]] == [
        ("restriction", "applies"), ("restriction", "deny")]
    body = _json(invoke("access", "can-i", "read", "/srv/in/a", "--node-user", "rob",
                        "-o", "json"))
    assert body["allowed"] and body["held"] == ["list", "read", "write", "delete", "mkdir",
                                                "rename", "preview"]
    assert body["rules"] == [{"rule": "docroot", "verdict": "allow",
                              "detail": "/srv/in/a is inside the docroot /srv/in"}]
    r = invoke("access", "can-i", "read", "/srv/inx", "--node-user", "rob")
    assert r.exit_code == 1 and "outside the docroot /srv/in" in r.stdout
    assert invoke("access", "can-i", "read", "/x", "--node-user", "ghost").exit_code == 5
    r = invoke("access", "can-i", "read", "/x", "--node-user", "nina", "--user-id", "u")
    assert r.exit_code == 2
