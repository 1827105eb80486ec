"""`access-key create`'s check of the storage against the transfer user's restrictions,
and `access-key list`'s table, at the points mutation testing found unchecked: where
the restrictions come from (the ones given, else the node's /info, else the home's own
node user), which transfer user the refusal names, what is said when none is known or
/info cannot be read, and what the key is then sent with; the list's verification key
and logging columns. Over HTTPS against a scripted node (the answers the emulator never
gives: an /info without restrictions, a failing /info)."""

from __future__ import annotations

import json

import pytest

from tests.scripted_server import RouteNode, certificates

ERR = "nodecli: error: "
WARN = "nodecli: warning: "
ADMIN = {"NODECLI_USER": "admin", "NODECLI_PASSWORD": "pw"}
NOT_KNOWN = (f"{WARN}the transfer user's restrictions are not known here (not in the node's "
             "/info, not in the local config): the storage was not checked; give "
             "--restriction to check it\n")
CREATED = {"id": "k1", "storage": {"type": "local", "path": "/home/a"}}


@pytest.fixture(scope="module")
def key_node(tmp_path_factory):
    node = RouteNode(certificates(tmp_path_factory.mktemp("certs")))
    yield node
    node.close()


@pytest.fixture
def node(key_node):
    key_node.reset()
    key_node.routes[("POST", "/access_keys")] = [(201, CREATED, [])]
    return key_node


def _create(invoke, node, *args: str, env=None):
    return invoke("access-key", "create", *args, "--url", node.server.url(), "--cacert",
                  node.certs[0], env=env or ADMIN)


def _refusal(url: str, holder: str, restrictions: str, fix: str) -> str:
    return (f"{ERR}the storage {url} is outside the restrictions of {holder} "
            f"({restrictions}): the node would accept the key and every transfer with it "
            "would fail\n"
            f"hint: add the restriction {fix} (nodecli xuser set NAME --add-restriction "
            f"'{fix}'), choose a path inside them, or give --no-check if the node's "
            "restrictions are not these\n")


def _local_user(invoke, name: str = "admin", *restrictions: str) -> None:
    """The home's node user NAME on transfer user xl (with these restrictions, else a
    docroot)."""
    args = [a for r in restrictions for a in ("--restriction", r)] or ["--docroot", "/srv"]
    assert invoke("xuser", "add", "xl", *args).exit_code == 0
    r = invoke("user", "add", name, "-x", "xl", "--password-stdin", input="pw-1234567\n")
    assert r.exit_code == 0, r


def test_the_nodes_info_names_its_transfer_user_and_is_asked_once(invoke, node, home) -> None:
    node.routes[("GET", "/info")] = [(200, {"transfer_user": "xn",
                                            "restrictions": ["file:////in/*", 7, ""]}, [])]
    _local_user(invoke, "admin", "file:////home/*")  # the node's own come first
    r = _create(invoke, node, "--path", "/home/a")
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == _refusal("file:////home/a/", "transfer user 'xn' (the node's /info)",
                                "file:////in/*", "file:////home/a/*")
    assert node.asked() == [("GET", "/info")]
    node.reset().routes[("GET", "/info")] = [(200, {"restrictions": ["file:////home/*"]}, [])]
    node.routes[("POST", "/access_keys")] = [(201, CREATED, [])]
    r = _create(invoke, node, "--path", "/home/a")
    assert (r.exit_code, r.stderr) == (0, "created access key 'k1'\n")
    assert node.asked() == [("GET", "/info"), ("POST", "/access_keys")]
    assert node.bodies()[1] == {"storage": {"type": "local", "path": "/home/a"}}


def test_restrictions_given_are_the_only_ones_checked(invoke, node, home) -> None:
    r = _create(invoke, node, "--path", "/home/a", "--restriction", "file:////in/*",
                "--restriction", "file:////out/*")
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == _refusal("file:////home/a/", "--restriction",
                                "file:////in/*, file:////out/*", "file:////home/a/*")
    assert node.asked() == []
    r = _create(invoke, node, "--path", "/out/a", "--restriction", "file:////in/*",
                "--restriction", "file:////out/*")
    assert r.exit_code == 0, r
    assert node.asked() == [("POST", "/access_keys")]


def test_without_them_in_info_the_home_s_node_user_speaks(invoke, node, home) -> None:
    """An /info without restrictions: those of the transfer user of the node user who
    logged in, in the home's config (right when nodecli runs on the node)."""
    node.routes[("GET", "/info")] = [(200, {"transfer_user": "xn", "restrictions": "x"}, [])]
    _local_user(invoke, "admin", "file:////home/*", "file:////srv/*")
    r = _create(invoke, node, "--path", "/data")
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == _refusal(
        "file:////data/", "transfer user 'xl' of node user 'admin' (local config)",
        "file:////home/*, file:////srv/*", "file:////data/*")
    assert node.asked() == [("GET", "/info")]
    r = _create(invoke, node, "--path", "/srv/a", "-o", "json")
    assert (r.exit_code, json.loads(r.stdout), r.stderr) == (0, CREATED, "")
    assert node.asked()[1:] == [("GET", "/info"), ("POST", "/access_keys")]


@pytest.mark.parametrize("login", ["access key", "another node user", "no restrictions"])
def test_when_no_restriction_is_known_the_key_is_sent_unchecked(invoke, node, home,
                                                                 login: str) -> None:
    """An access key's login is no node user of the home (even of the same name); a
    node user the home does not hold, or whose transfer user has no restriction, gives
    none: said, and the key sent."""
    node.routes[("GET", "/info")] = [(200, {"transfer_user": "xn"}, [])]
    env = dict(ADMIN)
    if login == "no restrictions":
        _local_user(invoke, "admin")
    else:
        _local_user(invoke, "admin", "file:////home/*")
    if login == "access key":
        env = {"NODECLI_ACCESS_KEY": "admin", "NODECLI_PASSWORD": "pw"}
    elif login == "another node user":
        env["NODECLI_USER"] = "bob"
    r = _create(invoke, node, "--path", "/data", env=env)
    assert (r.exit_code, r.stderr) == (0, f"{NOT_KNOWN}created access key 'k1'\n"), r
    assert node.asked() == [("GET", "/info"), ("POST", "/access_keys")]


def test_an_info_that_fails_is_said_and_the_key_is_sent(invoke, node, home) -> None:
    node.routes[("GET", "/info")] = [(500, node.NO, [])]
    r = _create(invoke, node, "--path", "/data")
    assert (r.exit_code, r.stdout) == (0, "id       k1\nstorage  local file:////home/a/\n")
    assert r.stderr == (f"{WARN}could not read the node's /info (GET {node.server.url()}"
                        f"/info: HTTP 500: no)\n{NOT_KNOWN}created access key 'k1'\n")
    assert node.asked() == [("GET", "/info"), ("POST", "/access_keys")]


def test_the_list_says_each_keys_verification_key_and_logging(invoke, node, home) -> None:
    keys = [{"id": "a", "storage": {"type": "local", "path": "/d"}, "root_file_id": "7",
             "token_verification_key": "PEM",
             "configuration": {"activity_event_logging": True}},
            {"id": "b", "storage": {"type": "aws_s3", "bucket": "bk", "path": "/in"},
             "configuration": {"activity_event_logging": False}},
            {"id": "c", "token_verification_key": ""}]
    node.routes[("GET", "/access_keys")] = [(200, keys, [])]
    r = invoke("access-key", "list", "--url", node.server.url(), "--cacert", node.certs[0],
               env=ADMIN)
    assert (r.exit_code, r.stderr) == (0, "")
    assert r.stdout == (
        "id  storage                              root file id  verification key  "
        "activity logging\n"
        "a   local file:////d/                    7             yes               on\n"
        "b   aws_s3 s3://s3.amazonaws.com/bk/in/  -             no                off\n"
        "c   ?                                    -             no                inherit\n")
