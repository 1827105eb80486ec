"""Access keys on object storage and sub-keys, over HTTPS against the emulator.

Each storage type with its required fields missing one at a time; secrets never on
argv, never echoed (show, -v/-vv, --dry-run); the transfer user's restriction at its
edges; sub-key paths exactly the parent's, inside and outside; the tree.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ADMIN_PW = "admin-pass"  # the emulator's test node user
ADMIN = {"NODECLI_USER": "admin", "NODECLI_PASSWORD": ADMIN_PW}
SECRET = "S3cr3t-Value-0123456789abcdef"

# type -> (options, the secret's wire field)
TYPES = {
    "aws_s3": (["--bucket", "b1", "--access-key-id", "AKIA0001"], "secret_access_key"),
    "ibm-s3": (["--bucket", "b1", "--endpoint", "s3.eu.cloud-object-storage.appdomain.cloud",
                "--access-key-id", "HMAC0001"], "secret_access_key"),
    "azure": (["--container", "c1", "--account", "acct1"], "key"),
    "azure_sas": ([], "shared_access_signature"),
    "swift": (["--container", "c1", "--username", "ten:usr"], "api_key"),
}


@pytest.fixture
def node(emulator, monkeypatch):
    """The emulator with node user admin whose transfer user (in the emulator's home)
    is restricted to file:////data/* and every object store."""
    emulator.add_node_user("admin", "admin-pass", xuser="xstore",
                           restrictions=("file:////data/*", "s3://*", "azu://*",
                                         "swift://*"))
    monkeypatch.setenv("NODECLI_URL", emulator.url)
    monkeypatch.setenv("STORE_SECRET", SECRET)
    yield emulator
    emulator.add_node_user("admin", "admin-pass", acls=("admin",))


def _create(invoke, *args, input=None, env=None):
    return invoke("access-key", "create", *args, input=input, env={**ADMIN, **(env or {})})


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_each_type_is_created_and_shown_masked(node, invoke, kind):
    opts, field = TYPES[kind]
    secret_args = ["--storage-secret", "env:STORE_SECRET"]
    r = _create(invoke, "--storage", kind, *opts, "--path", "/in", "--id", f"k-{kind}",
                *secret_args, "-o", "json")
    assert r.exit_code == 0, r
    assert SECRET not in r.stdout + r.stderr
    stored = node.state.access_keys[f"k-{kind}"].storage
    assert stored["credentials"][field] == SECRET
    r = invoke("access-key", "show", f"k-{kind}", "-o", "json", env=ADMIN)
    assert r.exit_code == 0, r
    assert SECRET not in r.stdout + r.stderr
    shown = json.loads(r.stdout)
    assert shown["storage"]["credentials"][field] == "********"
    r = invoke("access-key", "show", f"k-{kind}", env=ADMIN)
    assert r.exit_code == 0 and SECRET not in r.stdout + r.stderr, r


# -- each type's required fields, one missing at a time ----------------------------------

MISSING = [(kind, i) for kind, (opts, _) in sorted(TYPES.items())
           for i in range(len(opts) // 2 + 1)]


@pytest.mark.parametrize(("kind", "drop"), MISSING,
                         ids=[f"{k}-{i}" for k, i in MISSING])
def test_a_missing_field_is_refused_before_anything_is_sent(node, invoke, kind, drop):
    """Each typed option left out in turn (the last index: the secret): exit 2 naming
    the option, no key on the node."""
    opts, _ = TYPES[kind]
    pairs = [opts[i:i + 2] for i in range(0, len(opts), 2)]
    args = ["--storage-secret", "env:STORE_SECRET"]
    if drop < len(pairs):
        missing = pairs.pop(drop)[0]
    else:
        missing, args = "--storage-secret", []
    flat = [x for p in pairs for x in p]
    r = _create(invoke, "--storage", kind, *flat, *args, "--id", "kx")
    assert r.exit_code == 2, r
    assert missing in r.stderr, r.stderr
    assert node.state.access_keys == {}


def test_a_field_of_another_type_is_refused(node, invoke):
    r = _create(invoke, "--storage", "azure", "--container", "c", "--account", "a",
                "--bucket", "b", "--storage-secret", "env:STORE_SECRET")
    assert r.exit_code == 2 and "--bucket: not a field of azure storage" in r.stderr, r
    r = _create(invoke, "--path", "/data", "--storage-secret", "env:STORE_SECRET")
    assert r.exit_code == 2 and "local storage has no secret" in r.stderr, r
    assert node.state.access_keys == {}


def test_storage_type_keeps_working_as_the_old_spelling(node, invoke):
    r = _create(invoke, "--storage-type", "local", "--path", "/data", "--id", "old")
    assert r.exit_code == 0, r
    assert node.state.access_keys["old"].storage == {"type": "local", "path": "/data"}
    r = _create(invoke, "--storage-type", "aws_s3", "--bucket", "b", "--access-key-id", "A",
                "--storage-secret", "env:STORE_SECRET", "--id", "old-s3", "--path", "/")
    assert r.exit_code == 0, r
    assert node.state.access_keys["old-s3"].storage["type"] == "aws_s3"
    assert node.state.access_keys["old-s3"].storage["endpoint"] == "s3.amazonaws.com"


# -- the emulator's checks ---------------------------------------------------------------

GOOD = {
    "local": {"type": "local", "path": "/data"},
    "aws_s3": {"type": "aws_s3", "bucket": "b", "path": "/",
               "credentials": {"access_key_id": "A", "secret_access_key": "S"}},
    "ibm-s3": {"type": "ibm-s3", "bucket": "b", "endpoint": "e", "path": "/",
               "credentials": {"type": "key", "access_key_id": "A", "secret_access_key": "S"}},
    "azure": {"type": "azure", "container": "c", "path": "/",
              "credentials": {"account": "a", "key": "K"}},
    "azure_sas": {"type": "azure_sas", "path": "/",
                  "credentials": {"shared_access_signature": "https://a.blob/c?sig=x"}},
    "softlayer_swift": {"type": "softlayer_swift", "container": "c", "path": "/",
                        "credentials": {"username": "u", "api_key": "K"}},
}
# (type, where): every required field of every type
REQUIRED = [(kind, where) for kind, storage in sorted(GOOD.items())
            for where in [k for k in storage if k not in ("type", "path")] +
            [f"credentials.{c}" for c in storage.get("credentials", {}) if c != "type"]]


def _client(emulator, user="admin", password=ADMIN_PW):
    from nodecli.http.client import Auth, open_client

    return open_client(emulator.endpoint(Auth("basic", user, password)))


def _post(emulator, storage, user="admin", password=ADMIN_PW, **extra):
    """POST /access_keys as it is, over HTTPS: (status, body)."""
    with _client(emulator, user, password) as client:
        resp = client.request("POST", "/access_keys", json_body={"storage": storage, **extra},
                              expect=tuple(range(200, 600)))
        return resp.status, resp.json() if resp.body else None


@pytest.mark.parametrize(("kind", "where"), REQUIRED, ids=[f"{k}-{w}" for k, w in REQUIRED])
def test_the_emulator_refuses_a_storage_without_a_required_field(node, kind, where):
    import copy

    storage = copy.deepcopy(GOOD[kind])
    parent, _, name = where.rpartition(".")
    holder = storage[parent] if parent else storage
    del holder[name]
    status, body = _post(node, storage)
    assert status == 400, body
    assert f"storage.{where} is required" in json.dumps(body)
    holder[name] = 12  # a credential (or field) of the wrong type
    status, body = _post(node, storage)
    assert status == 400 and f"storage.{where} is required" in json.dumps(body)
    assert node.state.access_keys == {}


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_the_emulator_takes_each_type_and_keeps_fields_it_does_not_know(node, kind):
    storage = {**GOOD[kind], "storage_class": "STANDARD", "x_vendor": {"a": 1}}
    status, body = _post(node, storage, id=f"e-{kind}")
    assert status == 201, body
    assert node.state.access_keys[f"e-{kind}"].storage == storage


@pytest.mark.parametrize("storage", [
    {"type": "s3", "path": "/"}, {"type": "", "path": "/"}, {"path": "/"}, [],
    {"type": "aws_s3", "bucket": "b", "path": "/", "credentials": "A:S"},
    {"type": "aws_s3", "bucket": "b", "path": "/",
     "credentials": {"type": "iam-role", "access_key_id": "A", "secret_access_key": "S"}},
    {"type": "local", "path": "relative"},
], ids=["unknown", "empty-type", "no-type", "list", "credentials-text", "iam-role",
        "relative"])
def test_the_emulator_refuses_a_bad_storage_with_a_message(node, storage):
    status, body = _post(node, storage)
    assert status == 400, body
    assert body["error"]["user_message"].startswith("storage")
    assert node.state.access_keys == {}


# -- secrets: never on argv, never echoed ------------------------------------------------


@pytest.mark.parametrize("option", ["--secret-access-key", "--key", "--api-key",
                                    "--shared-access-signature", "--storage-password"])
def test_no_option_takes_a_storage_secret_on_the_command_line(node, invoke, option):
    r = _create(invoke, "--storage", "aws_s3", "--bucket", "b", "--access-key-id", "A",
                option, SECRET)
    assert r.exit_code == 2 and "No such option" in r.stderr, r
    assert SECRET not in r.stdout + r.stderr
    assert node.state.access_keys == {}


@pytest.mark.parametrize("value", [SECRET, "env:", "file:", "STDIN", "env:1BAD", " stdin"])
def test_storage_secret_refuses_anything_but_a_reference(node, invoke, value):
    r = _create(invoke, "--storage", "aws_s3", "--bucket", "b", "--access-key-id", "A",
                "--storage-secret", value)
    assert r.exit_code == 2, r
    assert "never the secret itself" in r.stderr
    assert SECRET not in r.stdout + r.stderr
    assert node.state.access_keys == {}


def test_every_secret_like_option_of_create_is_a_reference_or_a_flag():
    """The whole option list: an option named like a secret either takes a reference
    (--storage-secret) or is a flag (--secret-stdin, --password-stdin)."""
    from nodecli.cli.access_keys import access_key_create

    for param in access_key_create.params:
        names = " ".join(param.opts)
        if any(w in names for w in ("secret", "password", "key", "token", "sas")):
            assert param.is_flag or param.name in ("storage_secret", "access_key_id",
                                                    "access_key", "access_key_header"), names


def test_secret_from_a_file_and_from_stdin(node, invoke, tmp_path):
    f = tmp_path / "s3.secret"
    f.write_text(SECRET + "\n")
    r = _create(invoke, "--storage", "aws_s3", "--bucket", "b", "--access-key-id", "A",
                "--storage-secret", f"file:{f}", "--id", "kf")
    assert r.exit_code == 0, r
    assert node.state.access_keys["kf"].storage["credentials"]["secret_access_key"] == SECRET
    # stdin: after the key's own secret (--secret-stdin)
    r = _create(invoke, "--storage", "swift", "--container", "c", "--username", "u",
                "--storage-secret", "stdin", "--secret-stdin", "--id", "ks",
                input=f"the-key-secret\n{SECRET}\n")
    assert r.exit_code == 0, r
    assert node.state.access_keys["ks"].storage["credentials"]["api_key"] == SECRET
    assert SECRET not in r.stdout + r.stderr
    f.write_text("\n")
    r = _create(invoke, "--storage", "aws_s3", "--bucket", "b", "--access-key-id", "A",
                "--storage-secret", f"file:{f}", "--id", "kempty")
    assert r.exit_code == 2 and "the file is empty" in r.stderr, r
    r = _create(invoke, "--storage", "aws_s3", "--bucket", "b", "--access-key-id", "A",
                "--storage-secret", "env:NOT_SET_ANYWHERE", "--id", "kenv")
    assert r.exit_code == 2 and "not set or empty" in r.stderr, r
    assert "kempty" not in node.state.access_keys and "kenv" not in node.state.access_keys


@pytest.mark.parametrize("verbosity", ["-v", "-vv"])
def test_verbose_logs_never_show_the_storage_secret(node, invoke, verbosity):
    r = invoke(verbosity, "access-key", "create", "--storage", "azure", "--container", "c",
               "--account", "a", "--storage-secret", "env:STORE_SECRET", "--id", "kv",
               env=ADMIN)
    assert r.exit_code == 0, r
    assert "> POST" in r.stderr
    assert SECRET not in r.stdout + r.stderr
    r = invoke(verbosity, "access-key", "show", "kv", env=ADMIN)
    assert r.exit_code == 0 and SECRET not in r.stdout + r.stderr, r
    r = invoke(verbosity, "access-key", "list", "-o", "json", env=ADMIN)
    assert r.exit_code == 0 and SECRET not in r.stdout + r.stderr, r


def test_dry_run_masks_the_storage_secret_in_the_body(node, invoke):
    r = invoke("--dry-run", "access-key", "create", "--storage", "ibm-s3", "--bucket", "b",
               "--endpoint", "e.example", "--access-key-id", "A", "--path", "/",
               "--storage-secret", "env:STORE_SECRET", "--id", "kd", env=ADMIN)
    assert r.exit_code == 0, r
    assert "would send: POST" in r.stdout and '"bucket": "b"' in r.stdout
    assert SECRET not in r.stdout + r.stderr
    assert "***" in r.stdout
    assert node.state.access_keys == {}


def test_show_masks_credential_fields_a_node_adds(node, invoke):
    """Fields nodecli does not know, at any depth: masked by their names."""
    node.add_access_key("kn", "s")
    node.state.access_keys["kn"].storage = {
        "type": "azure", "path": "/", "container": "c",
        "credentials": {"account": "visible-account", "key": "K-" + SECRET,
                        "extra": [{"sas_url": "U-" + SECRET, "client_secret": "C-" + SECRET,
                                   "refreshToken": "R-" + SECRET, "note": "kept"}]},
        "x_password": "P-" + SECRET}
    for fmt in ("table", "json"):
        r = invoke("access-key", "show", "kn", "-o", fmt, env=ADMIN)
        assert r.exit_code == 0, r
        assert SECRET not in r.stdout + r.stderr
        assert "visible-account" in r.stdout and "kept" in r.stdout
    shown = json.loads(invoke("access-key", "show", "kn", "-o", "json", env=ADMIN).stdout)
    extra = shown["storage"]["credentials"]["extra"][0]
    assert extra == {"sas_url": "********", "client_secret": "********",
                     "refreshToken": "********", "note": "kept"}


# -- the transfer user's restrictions ---------------------------------------------------


@pytest.fixture
def data_only(emulator, monkeypatch):
    """admin's transfer user (the emulator's) is restricted to file:////data/* alone."""
    monkeypatch.setenv("NODECLI_URL", emulator.url)
    monkeypatch.setenv("STORE_SECRET", SECRET)
    return emulator


@pytest.mark.parametrize(("path", "ok"), [("/data", True), ("/data/", True),
                                          ("/data/a/b", True), ("/data2", False),
                                          ("/dat", False), ("/", False)])
def test_a_local_path_at_the_edges_of_the_restriction(data_only, invoke, path, ok):
    r = _create(invoke, "--path", path, "--id", "kr")
    if ok:
        assert r.exit_code == 0, r
        assert "kr" in data_only.state.access_keys
        return
    assert r.exit_code == 1, r
    assert "outside the restrictions of transfer user 'xfer' (the node's /info)" in r.stderr
    assert "file:////data/*" in r.stderr
    fix = "file:///" + path.rstrip("/") + "/*"
    assert f"add the restriction {fix}" in r.stderr, r.stderr
    assert data_only.state.access_keys == {}


def test_object_storage_needs_its_scheme_in_the_restrictions(data_only, invoke):
    args = ("--storage", "aws_s3", "--bucket", "b", "--access-key-id", "A",
            "--storage-secret", "env:STORE_SECRET")
    r = _create(invoke, *args, "--id", "k1")
    assert r.exit_code == 1 and "add the restriction s3://*" in r.stderr, r
    r = _create(invoke, *args, "--id", "k1", "--restriction", "azu://*")
    assert r.exit_code == 1 and "(azu://*)" in r.stderr and "s3://*" in r.stderr, r
    r = _create(invoke, *args, "--id", "k1", "--restriction", "!s3://*",
                "--restriction", "s3://*")
    assert r.exit_code == 1, r
    assert data_only.state.access_keys == {}
    r = _create(invoke, *args, "--id", "k1", "--restriction", "s3://*")
    assert r.exit_code == 0, r
    r = _create(invoke, *args, "--id", "k2", "--restriction", "s3://s3.amazonaws.com/b/*")
    assert r.exit_code == 0, r
    r = _create(invoke, *args, "--id", "k3", "--restriction", "s3://s3.amazonaws.com/c/*")
    assert r.exit_code == 1, r
    # the node takes a mismatched key (field notes): --no-check sends it
    r = _create(invoke, *args, "--id", "k4", "--no-check")
    assert r.exit_code == 0, r
    assert sorted(data_only.state.access_keys) == ["k1", "k2", "k4"]


def test_the_nodes_info_comes_before_the_local_config(data_only, invoke):
    """The node's /info speaks for the node that is asked; the home's own config (the
    node-user database when nodecli runs on the node) may be another node's."""
    r = invoke("xuser", "add", "xlocal", "--restriction", "file:////home/*")
    assert r.exit_code == 0, r
    r = invoke("user", "add", "admin", "-x", "xlocal", "--password-stdin", input="pw-1234567\n")
    assert r.exit_code == 0, r
    r = _create(invoke, "--path", "/home/x", "--id", "kl")
    assert r.exit_code == 1, r
    assert "(the node's /info)" in r.stderr and "local config" not in r.stderr
    assert "kl" not in data_only.state.access_keys
    r = _create(invoke, "--path", "/data/x", "--id", "kl")  # inside the node's own
    assert r.exit_code == 0, r


# -- sub-keys and the tree -----------------------------------------------------------------


@pytest.fixture
def parent(node, invoke):
    """ak-p on /data/p (local) and ak-s3 on bucket b /in, both made by admin."""
    r = _create(invoke, "--path", "/data/p", "--id", "ak-p", "--secret-stdin",
                input="p-secret\n")
    assert r.exit_code == 0, r
    r = _create(invoke, "--storage", "aws_s3", "--bucket", "b", "--access-key-id", "A",
                "--path", "/in", "--storage-secret", "env:STORE_SECRET", "--id", "ak-s3",
                "--secret-stdin", input="s3-secret\n")
    assert r.exit_code == 0, r
    return node


def _sub(invoke, parent_id, path, sub_id, secret, *more):
    return invoke("access-key", "create", "--parent", parent_id, "--path", path,
                  "--id", sub_id, *more, env={"NODECLI_PASSWORD": secret})


@pytest.mark.parametrize(("path", "stored"), [("/data/p", "/data/p"),
                                              ("/data/p/t1", "/data/p/t1"),
                                              ("t2", "/data/p/t2"), ("t3/deep", "/data/p/t3/deep")])
def test_a_sub_key_inside_its_parent(parent, invoke, path, stored):
    r = _sub(invoke, "ak-p", path, "sub1", "p-secret")
    assert r.exit_code == 0, r
    sub = parent.state.access_keys["sub1"]
    assert sub.storage == {"type": "local", "path": stored}
    assert sub.parent_id == "ak-p" and sub.owner == "admin"
    assert "parent" in r.stdout and "ak-p" in r.stdout


@pytest.mark.parametrize("path", ["/data/p2", "/data", "/", "/data/pp/x", "../x", "/data/p/../q"])
def test_a_sub_key_outside_its_parent_is_refused(parent, invoke, path):
    r = _sub(invoke, "ak-p", path, "sub1", "p-secret")
    assert r.exit_code == 2, r
    if ".." not in path:
        assert f"--path {path!r} is outside the parent key's path '/data/p'" in r.stderr
        assert "hint: give a path under /data/p (or one relative to it)" in r.stderr
    assert "sub1" not in parent.state.access_keys


@pytest.mark.parametrize(("path", "status"), [("/data/p", 201), ("/data/p/x", 201),
                                              ("/data/p2", 400), ("/data", 400), ("/", 400)])
def test_the_emulator_refuses_a_sub_key_outside_its_parent(parent, path, status):
    code, body = _post(parent, {"type": "local", "path": path}, user="ak-p",
                       password="p-secret", id="raw-sub")
    assert code == status, body
    if status == 400:
        assert "outside the parent key's path '/data/p'" in json.dumps(body)
        assert "raw-sub" not in parent.state.access_keys
    else:
        assert parent.state.access_keys["raw-sub"].parent_id == "ak-p"


def test_an_object_storage_sub_key_keeps_its_parents_bucket_and_credentials(parent, invoke):
    r = _sub(invoke, "ak-s3", "t1", "sub-s3", "s3-secret", "-o", "json")
    assert r.exit_code == 0, r
    assert SECRET not in r.stdout + r.stderr
    storage = parent.state.access_keys["sub-s3"].storage
    assert storage["path"] == "/in/t1" and storage["bucket"] == "b"
    assert storage["credentials"]["secret_access_key"] == SECRET  # the parent's
    # the parent's credentials stay on the node: the body names the place only
    r = invoke("--dry-run", "access-key", "create", "--parent", "ak-s3", "--path", "t2",
               env={"NODECLI_PASSWORD": "s3-secret"})
    assert r.exit_code == 0, r
    assert '"bucket": "b"' in r.stdout and '"path": "/in/t2"' in r.stdout
    assert "credentials" not in r.stdout
    code, body = _post(parent, {"type": "aws_s3", "bucket": "other", "path": "/in/x"},
                       user="ak-s3", password="s3-secret")
    assert code == 400 and "storage.bucket: a sub-key keeps its parent's" in json.dumps(body)
    code, body = _post(parent, {"type": "local", "path": "/in/x"}, user="ak-s3",
                       password="s3-secret")
    assert code == 400 and "storage.type" in json.dumps(body)


def test_a_sub_key_is_made_by_its_parent_and_only_with_a_path(parent, invoke):
    r = invoke("access-key", "create", "--parent", "ak-p", "--access-key", "ak-s3",
               "--path", "x", env={"NODECLI_PASSWORD": "s3-secret"})
    assert r.exit_code == 2 and "log in as ak-p" in r.stderr, r
    r = _sub(invoke, "ak-p", "", "sub1", "p-secret")
    assert r.exit_code == 2 and "--path: give the sub-key's folder" in r.stderr, r
    r = invoke("access-key", "create", "--parent", "ak-p", env={"NODECLI_PASSWORD": "p"})
    assert r.exit_code == 2 and "--parent needs --path" in r.stderr, r
    r = invoke("access-key", "create", "--parent", "ak-p", "--path", "x", "--bucket", "b",
               env={"NODECLI_PASSWORD": "p-secret"})
    assert r.exit_code == 2 and "give only --parent and --path" in r.stderr, r
    r = _sub(invoke, "ak-p", "x", "sub1", "wrong-secret")
    assert r.exit_code == 4, r
    assert "sub1" not in parent.state.access_keys


def test_the_tree_shows_each_key_with_its_sub_keys(parent, invoke):
    for path, sub_id, secret, parent_id in [("a", "p-a", "p-secret", "ak-p"),
                                            ("b", "p-b", "p-secret", "ak-p"),
                                            ("t", "s3-t", "s3-secret", "ak-s3")]:
        r = invoke("access-key", "create", "--parent", parent_id, "--path", path, "--id",
                   sub_id, "--secret-stdin", input=f"{sub_id}-secret\n",
                   env={"NODECLI_PASSWORD": secret})
        assert r.exit_code == 0, r
    r = _sub(invoke, "p-a", "deeper", "p-a-1", "p-a-secret")
    assert r.exit_code == 0, r
    r = invoke("access-key", "tree", "-o", "json", env=ADMIN)
    assert r.exit_code == 0, r
    rows = json.loads(r.stdout)
    assert [(k["id"], k["depth"], k["sub_keys"]) for k in rows] == [
        ("ak-p", 0, ["p-a", "p-b"]), ("p-a", 1, ["p-a-1"]), ("p-a-1", 2, []), ("p-b", 1, []),
        ("ak-s3", 0, ["s3-t"]), ("s3-t", 1, [])]
    assert rows[5]["storage_url"] == "s3://s3.amazonaws.com/b/in/t/"
    assert SECRET not in r.stdout
    assert rows[4]["storage"]["credentials"]["secret_access_key"] == "********"
    r = invoke("access-key", "tree", "-o", "csv", env=ADMIN)
    assert r.exit_code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0] == "id,parent_id,depth,storage_type,storage_url,sub_keys"
    assert lines[1:] == ['ak-p,,0,local,file:////data/p/,"p-a,p-b"',
                         "p-a,ak-p,1,local,file:////data/p/a/,p-a-1",
                         "p-a-1,p-a,2,local,file:////data/p/a/deeper/,",
                         "p-b,ak-p,1,local,file:////data/p/b/,",
                         "ak-s3,,0,aws_s3,s3://s3.amazonaws.com/b/in/,s3-t",
                         "s3-t,ak-s3,1,aws_s3,s3://s3.amazonaws.com/b/in/t/,"]
    r = invoke("access-key", "tree", env=ADMIN)
    assert r.exit_code == 0, r
    assert "\n    p-a-1 " in r.stdout and "\n  p-b " in r.stdout
    assert r.stdout.splitlines()[1].split() == ["ak-p", "local", "file:////data/p/", "2"]
    # an access key sees itself and what is below it
    r = invoke("access-key", "tree", "-o", "csv", env={"NODECLI_ACCESS_KEY": "p-a",
                                                       "NODECLI_PASSWORD": "p-a-secret"})
    assert r.exit_code == 0, r
    assert [line.split(",")[0] for line in r.stdout.splitlines()[1:]] == ["p-a", "p-a-1"]


def test_tree_of_what_a_hostile_node_says():
    from nodecli.node.storage_keys import flatten, tree

    keys = [{"id": "a", "parent_id": "b"}, {"id": "b", "parent_id": "a"},
            {"id": "c", "parent_id": "a"}, {"id": "d", "parent_id": "gone"},
            {"id": "e", "parent_id": "e"}, {"id": "a", "parent_id": None},
            {"id": "f", "parent_id": ["x"], "storage": "not an object"}]
    rows = flatten(tree(keys))
    assert [(r["id"], r["depth"]) for r in rows] == [("a", 0), ("c", 1), ("b", 0), ("d", 0),
                                                      ("e", 0), ("f", 0)]
    assert flatten(tree([])) == []


# -- hostile input ---------------------------------------------------------------------

HOSTILE_TEXT = st.one_of(st.text(max_size=60),
                         st.sampled_from(["", "/", "..", "/../x", "\x00", "\x1b[2J", "a" * 5000,
                                          "/data/\udcff", "*", "s3://*", "env:X"]))
SECRET_NAMES = st.sampled_from(["secret", "secret_access_key", "key", "api_key", "password",
                                "sas", "sas_token", "shared_access_signature", "apiKey",
                                "accessKeyId", "client_secret", "refresh_token", "pwd",
                                "Credentials", "x-auth-token", "passphrase"])
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.one_of(SECRET_NAMES, st.text(max_size=8)), inner,
                                            max_size=4)),
    max_leaves=20)


def _leaks(data):
    """Every non-masked scalar that sits under a credential-like name."""
    from nodecli.node.storage_keys import credential_name

    if isinstance(data, dict):
        for k, v in data.items():
            if isinstance(v, dict | list):
                yield from _leaks(v)
            elif credential_name(k) and v is not None and not isinstance(v, bool) \
                    and v != "********":
                yield k, v
    elif isinstance(data, list):
        for v in data:
            yield from _leaks(v)


@settings(max_examples=60)
@given(JSONISH)
def test_masked_leaves_no_credential_at_any_depth(data):
    from nodecli.node.storage_keys import masked

    assert list(_leaks(masked(data))) == []
    assert masked(masked(data)) == masked(data)


@given(SECRET_NAMES)
def test_every_credential_name_is_one(name):
    from nodecli.node.storage_keys import credential_name

    assert credential_name(name)


@pytest.mark.parametrize("name", ["id", "type", "path", "bucket", "container", "account",
                                  "endpoint", "username", "storage_endpoint", "monkey",
                                  "token_verification_key", "root_file_id", "keyboard"])
def test_names_that_are_no_credential(name):
    from nodecli.node.storage_keys import credential_name

    assert not credential_name(name)


@given(st.sampled_from(["local", "aws_s3", "ibm-s3", "azure", "azure_sas", "swift", "gs"]),
       st.one_of(st.none(), HOSTILE_TEXT),
       st.dictionaries(st.sampled_from(["bucket", "endpoint", "container", "access_key_id",
                                        "account", "username", "region"]), HOSTILE_TEXT),
       st.one_of(st.none(), HOSTILE_TEXT))
def test_build_storage_refuses_with_a_usage_error_or_builds_a_checked_object(kind, path,
                                                                             fields, secret):
    from nodecli.errors import UsageError
    from nodecli.node.storage_keys import build_storage, storage_url

    try:
        storage = build_storage(kind, path, fields, secret)
    except UsageError as exc:
        assert "\n" not in exc.message.split(":")[0]
        return
    assert storage["path"].startswith("/") and ".." not in storage["path"].split("/")
    assert storage_url(storage).endswith("/")


@given(HOSTILE_TEXT, HOSTILE_TEXT)
def test_a_sub_storage_never_leaves_its_parent(base, sub):
    from nodecli.errors import NodecliError
    from nodecli.node.storage_keys import sub_storage, within

    parent = {"id": "p", "storage": {"type": "local", "path": base or "/"}}
    try:
        storage = sub_storage(parent, sub)
    except NodecliError:
        return
    assert within(storage["path"], base or "/")
    assert ".." not in storage["path"].split("/")


@settings(max_examples=60)
@given(st.lists(st.fixed_dictionaries({"id": st.one_of(st.text(max_size=3), st.integers(0, 5)),
                                       "parent_id": st.one_of(st.none(), st.text(max_size=3),
                                                              st.integers(0, 5), st.lists(
                                                                  st.integers(), max_size=2)),
                                       "storage": st.one_of(st.none(), st.text(max_size=3),
                                                            st.just(GOOD["aws_s3"]))}),
                max_size=12))
def test_the_tree_of_any_list_holds_each_id_once(keys):
    from nodecli.node.storage_keys import flatten, tree

    rows = flatten(tree(keys))
    assert sorted(r["id"] for r in rows) == sorted({str(k["id"]) for k in keys})


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["--path", "--bucket", "--container", "--storage-secret", "--parent",
                        "--restriction"]), HOSTILE_TEXT)
def test_hostile_values_end_with_a_documented_exit_and_one_line(node, invoke, option, value):
    args = ["--storage", "aws_s3", "--bucket", "b", "--access-key-id", "A",
            "--storage-secret", "env:STORE_SECRET", "--path", "/", "--id", "kh"]
    if option in args:
        i = args.index(option)
        args[i + 1] = value
    else:
        args += [option, value]
    if option == "--parent":
        args = ["--parent", value, "--path", "x"]
    r = _create(invoke, *args)
    assert r.exit_code in (0, 1, 2, 4, 5), r
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    node.state.access_keys.pop("kh", None)


def test_a_node_that_echoes_the_secret_in_its_error_never_gets_it_shown(invoke, tmp_path,
                                                                        monkeypatch):
    """A hostile node answers the POST with the body it got: the message is shown with
    the storage secret as *** (the client redacts what it sent)."""
    from tests.scripted_server import ScriptedServer, certificates, reply

    ca, cert, key = certificates(tmp_path)

    def script(seen):
        if seen.method == "GET":
            yield reply(200, b'{"restrictions": ["s3://*"]}',
                        [("Content-Type", "application/json")])
            return
        echoed = json.dumps({"error": {"code": 400, "user_message": seen.body.decode()}})
        yield reply(400, echoed.encode(), [("Content-Type", "application/json")])

    monkeypatch.setenv("STORE_SECRET", SECRET)
    server = ScriptedServer(script, tls=(cert, key))
    try:
        for verbosity in ([], ["-vv"]):
            r = invoke(*verbosity, "access-key", "create", "--storage", "aws_s3", "--bucket",
                       "b", "--access-key-id", "A", "--storage-secret", "env:STORE_SECRET",
                       "--url", server.url(), "--cacert", ca, env=ADMIN)
            assert r.exit_code == 1, r
            assert "HTTP 400" in r.stderr and '"bucket"' in r.stderr
            assert SECRET not in r.stdout + r.stderr
    finally:
        server.close()


@pytest.mark.parametrize(("storage", "sub", "want"), [
    ({"type": "local"}, "t", "/t"), ({"type": "local", "path": None}, "/t/u", "/t/u"),
    ({"type": "local", "path": "/"}, "/", "/"), ({"type": "local", "path": "/a/"}, "b/", "/a/b"),
    ({"type": "local", "path": "/boX"}, "t", "/boX/t"),
    (None, "t", None), ("text", "t", None), ({"path": "/a"}, "t", None),
    ({"type": 7, "path": "/a"}, "t", None)])
def test_a_sub_storage_from_what_the_node_showed_of_its_parent(storage, sub, want):
    from nodecli.errors import NodecliError
    from nodecli.node.storage_keys import sub_storage

    parent = {"id": "p", "storage": storage}
    if want is None:
        with pytest.raises(NodecliError, match="the node did not show its storage"):
            sub_storage(parent, sub)
        return
    assert sub_storage(parent, sub) == {"type": "local", "path": want}


@pytest.mark.parametrize(("path", "root", "inside"), [
    ("/a", "/a", True), ("/a/", "/a", True), ("/a/b", "/a", True), ("/ab", "/a", False),
    ("/", "/a", False), ("/x", "/", True), ("/", "/", True), ("/a/b", "/a/b/", True)])
def test_within_is_component_by_component(path, root, inside):
    from nodecli.node.storage_keys import within

    assert within(path, root) is inside


@pytest.mark.parametrize(("storage", "fix"), [
    ({"type": "local", "path": "/d"}, "file:////d/*"), ({"type": "local"}, "file:////*"),
    (GOOD["azure"], "azu://*"), (GOOD["softlayer_swift"], "swift://*"),
    ({"type": "gs", "path": "/"}, "*"), ({}, "*")])
def test_the_restriction_that_would_allow_a_storage(storage, fix):
    from nodecli.node.storage_keys import fix_for

    assert fix_for(storage) == fix


def test_the_tree_of_keys_nodecli_half_knows():
    """A storage type nodecli does not know shows its path; an empty parent id is none."""
    from nodecli.node.storage_keys import flatten, tree

    rows = flatten(tree([{"id": "g", "parent_id": "", "storage": {"type": "gs", "path": "/b"}},
                         {"id": 5, "parent_id": 0, "storage": None}]))
    assert [(r["id"], r["parent_id"], r["storage_type"], r["storage_url"]) for r in rows] == [
        ("g", None, "gs", "/b"), ("5", "0", None, None)]


def test_read_secret_ref_itself_refuses_a_literal():
    from nodecli.errors import UsageError
    from nodecli.node.storage_keys import read_secret_ref

    with pytest.raises(UsageError, match=r"^--storage-secret: give env:NAME, file:PATH or stdin"):
        read_secret_ref(SECRET, "--storage-secret", {}, lambda what: SECRET)
    assert read_secret_ref("stdin", "x", {}, lambda what: f"line for {what}") == "line for x"
    assert read_secret_ref("env:V", "x", {"V": "v1"}, lambda what: "") == "v1"
