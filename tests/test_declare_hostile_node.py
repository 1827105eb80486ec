"""What ``export`` and ``apply`` do with a node that answers oddly, and with the
connections they open: a scripted node over HTTPS (tests/scripted_server.py), since the
emulator never answers so. These are the last survivors of the mutation runs over
nodecli/declare/export.py and execute.py (docs/development.md, "Equivalent survivors:
declare")."""

from __future__ import annotations

import json
from urllib.parse import unquote

import pytest

from nodecli.declare import document, execute, export, plan
from nodecli.declare.plan import Change
from nodecli.errors import NotFoundError

HANGUP_WAIT = 10.0  # seconds a closed connection may take to reach the node (bounded)


def answer(body: object, status: int = 200) -> bytes:
    from tests.scripted_server import reply

    # keep-alive: a connection ends only when the client closes it (a hangup)
    return reply(status, json.dumps(body).encode(), [("Content-Type", "application/json")],
                 close=False)


def node_script(routes: dict[tuple[str, str], object]):
    """Answers ``routes[(method, path)]`` (a function: of the request; of the pages of
    ``/access_keys``, the first), else 404."""

    def script(seen):
        path, _, query = unquote(seen.target).partition("?")
        if (seen.method, path) == ("GET", "/access_keys") and "page=1&" not in query:
            yield answer([])
        elif (seen.method, path) in routes:
            found = routes[(seen.method, path)]
            yield answer(found(seen) if callable(found) else found)
        else:
            yield answer({"error": "no"}, 404)

    return script


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from tests.scripted_server import certificates

    return certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def node(certs, tmp_path):
    """start(routes) -> (server, the node user's client, the keys' secrets)."""
    from nodecli.config.paths import resolve_paths
    from nodecli.http.client import Auth, Endpoint, open_client
    from tests.scripted_server import ScriptedServer

    servers, clients = [], []

    def start(routes):
        server = ScriptedServer(node_script(routes), tls=certs[1:])
        servers.append(server)
        ep = Endpoint(server.url(), Auth("basic", "admin", "admin-pass"), cacert=certs[0],
                      deadline=5.0, read_timeout=5, max_attempts=1)
        client = open_client(ep)
        clients.append(client)
        secrets = plan.KeySecrets(resolve_paths(tmp_path / "home"), "emu",
                                  {"S1": "secret-of-ak1", "S2": "secret-of-ak2"},
                                  str(tmp_path), input)
        return server, client, secrets

    try:
        yield start
    finally:
        for client in clients:
            client.close()
        for server in servers:
            server.close()


def basic(user_password: str) -> str:
    import base64

    return "Basic " + base64.b64encode(user_password.encode()).decode()


def doc_of(text: str) -> document.Document:
    return document.parse(("version: 1\n" + text).encode(), "d.yaml")


KEYS_DOC = ("access_keys:\n  ak1: {storage: {path: /data}, secret: env:S1}\n"
            "  ak2: {storage: {path: /data}, secret: env:S2}\n")


# -- export: a key whose storage is not a mapping --------------------------------------------


def test_export_of_keys_whose_storage_is_not_a_mapping_says_local_at_the_root(node):
    from nodecli.http.client import open_client

    keys = [{"id": "ak1", "storage": {"type": "s3", "path": "/b"}},
            {"id": "ak2", "storage": "not a mapping"},
            {"id": "ak3", "storage": ["local", "/x"]},
            {"id": "ak4", "storage": None},
            {"id": "ak5"}]
    _server, client, secrets = node({("GET", "/access_keys"): keys})
    warned: list[str] = []
    with client:
        section = export.node_section(client, secrets, open_client, warned.append)
    at_root = {"storage": {"type": "local", "path": "/"}}
    assert section == {"ak1": {"storage": {"type": "s3", "path": "/b"}},
                       "ak2": at_root, "ak3": at_root, "ak4": at_root, "ak5": at_root}
    # no secret known: no permissions read, each key said once
    assert warned == [f"access key {ak}: its permissions are not exported: nodecli does not "
                      "know its secret (apply stores the secrets of the keys it makes)"
                      for ak in ("ak1", "ak2", "ak3", "ak4", "ak5")]


# -- apply: the key clients are closed, the node user's is not --------------------------------


def test_the_runner_closes_each_key_client_it_opened_and_not_the_callers(node):
    from nodecli.http.client import open_client

    server, client, secrets = node({
        ("PUT", "/access_keys/ak1"): {},
        ("PUT", "/permissions/p1"): {"id": "p1", "access_levels": ["list"]},
        ("PUT", "/permissions/p2"): {"id": "p2", "access_levels": ["list"]},
        ("PUT", "/permissions/p3"): {"id": "p3", "access_levels": ["list"]}})
    doc = doc_of(KEYS_DOC)
    runner = execute.NodeRunner(client, secrets, open_client, lambda ak, secret: None)
    try:
        runner.run(Change("emu", "access_key", "ak1", "change", ak="ak1",
                          body={"configuration": {"a": 2}}), doc)
        for ak, pid in (("ak1", "p1"), ("ak2", "p2"), ("ak1", "p3")):
            runner.run(Change("emu", "permission", f"{ak} /a user u", "change", ak=ak,
                              perm_id=pid, ident=("/a", "user", "u"),
                              body={"levels": ["list"]}), doc)
    finally:
        runner.close()
    admin, ak1, ak2 = basic("admin:admin-pass"), basic("ak1:secret-of-ak1"), \
        basic("ak2:secret-of-ak2")
    assert [(s.method, s.target, s.headers["authorization"]) for s in server.seen] == [
        ("PUT", "/access_keys/ak1", admin), ("PUT", "/permissions/p1", ak1),
        ("PUT", "/permissions/p2", ak2), ("PUT", "/permissions/p3", ak1)]
    # the two key clients' connections end with the runner...
    assert server.hangups.acquire(timeout=HANGUP_WAIT)
    assert server.hangups.acquire(timeout=HANGUP_WAIT)
    # ...the node user's is the caller's, still open and in use
    assert not server.hangups.acquire(blocking=False)
    runner.run(Change("emu", "access_key", "ak1", "change", ak="ak1",
                      body={"configuration": {"a": 3}}), doc)
    client.close()
    assert server.hangups.acquire(timeout=HANGUP_WAIT)


# -- apply: a folder listing holding entries without an id or a name -------------------------


def test_a_permissions_file_is_found_by_name_skipping_entries_without_id_or_name(node):
    from nodecli.http.client import open_client

    server, client, secrets = node({
        ("GET", "/access_keys/self"): {"id": "ak1", "root_file_id": "r1"},
        ("GET", "/files/r1/files"): [
            {"id": "", "name": "a"}, {"id": None, "name": "a"}, {"name": "a"},
            {"id": "n1", "name": None}, {"id": "n2", "name": 5}, {"id": "n3"},
            {"id": 8, "name": "a"}, {"id": "9", "name": "a"}],
        ("GET", "/files/8/files"): [{"id": "", "name": "b"}, {"id": "b1", "name": "b"}],
        ("POST", "/permissions"): {"id": "new"}})
    doc = doc_of(KEYS_DOC)

    def add(path: str) -> Change:
        return Change("emu", "permission", f"ak1 {path} user u", "add", ak="ak1",
                      ident=(path, "user", "u"), body={"levels": ["read"]})

    runner = execute.NodeRunner(client, secrets, open_client, lambda ak, secret: None)
    try:
        runner.run(add("/a/b"), doc)
        runner.run(add("/a"), doc)  # its folder was listed once, the first entry holds
        for missing in ("/None", "/5", "/a/c"):
            with pytest.raises(NotFoundError) as info:
                runner.run(add(missing), doc)
            assert info.value.message == (
                f"access key ak1: {missing}: no such file or folder on the node (a "
                "permission is set on something that exists)")
    finally:
        runner.close()
    # a listing is read by page number (this node ignores it: page 2 repeats page 1, the
    # end): two requests a listing, and each folder listed once per key
    listing = [("GET", f"/files/{{}}/files?page={n}&per_page=1000") for n in (1, 2)]

    def listed(fid: str) -> list[tuple[str, str]]:
        return [(m, t.format(fid)) for m, t in listing]

    assert [(s.method, s.target) for s in server.seen] == [
        ("GET", "/access_keys/self"), *listed("r1"), *listed("8"),
        ("POST", "/permissions"), ("POST", "/permissions"), *listed("r1"),
        *listed("r1"), *listed("8")]
    assert [json.loads(s.body)["file_id"] for s in server.seen if s.method == "POST"] == \
        ["b1", "8"]


def test_each_key_finds_its_files_from_its_own_root(node):
    """Two keys, two roots: the same path is another file for each."""
    from nodecli.http.client import open_client

    def own_key(seen):
        ak = "ak1" if seen.headers["authorization"] == basic("ak1:secret-of-ak1") else "ak2"
        return {"id": ak, "root_file_id": f"root-{ak}"}

    server, client, secrets = node({
        ("GET", "/access_keys/self"): own_key,
        ("GET", "/files/root-ak1/files"): [{"id": "a-of-ak1", "name": "a"}],
        ("GET", "/files/root-ak2/files"): [{"id": "a-of-ak2", "name": "a"}],
        ("POST", "/permissions"): {"id": "new"}})
    doc = doc_of(KEYS_DOC)
    runner = execute.NodeRunner(client, secrets, open_client, lambda ak, secret: None)
    try:
        for ak in ("ak1", "ak2"):
            runner.run(Change("emu", "permission", f"{ak} /a user u", "add", ak=ak,
                              ident=("/a", "user", "u"), body={"levels": ["read"]}), doc)
    finally:
        runner.close()
    assert [json.loads(s.body)["file_id"] for s in server.seen if s.method == "POST"] == \
        ["a-of-ak1", "a-of-ak2"]
