"""``access`` (nodecli/cli/access.py) at the boundaries mutation testing found untested
(docs/development.md, "Equivalent survivors: nodecli/cli/access.py"), and the what-can
tree naming a permission that grants no level as the json's ``via`` does."""

from __future__ import annotations

import json

import pytest

from nodecli.errors import ExitCode
from tests.test_access_can_i import World


@pytest.fixture
def world(emulator, invoke, home) -> World:
    return World(emulator, invoke, home)


def test_the_tree_names_a_permission_with_no_level_as_the_json_via_does(world):
    empty = world.perm_ids[("/data/empty", "user", "alice")]
    rows = json.loads(world.run("ak-all", "what-can", *world.who("alice"), "-o", "json").stdout)
    via = {r["path"]: r["via"] for r in rows}
    assert via["/empty"] == f"permission {empty}: user alice on /empty"
    r = world.run("ak-all", "what-can", *world.who("alice"))
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines()[:4] == [
        "/  (on the way)", f"  empty  (no level: permission {empty}: user alice on /empty)",
        "  finance  (on the way)", "    2025  (on the way)"]


def test_can_i_for_a_node_user_that_does_not_exist_says_so_and_how_to_list_them(invoke):
    r = invoke("access", "can-i", "read", "/x", "--node-user", "nosuch")
    assert (r.exit_code, r.stdout) == (ExitCode.NOT_FOUND, "")
    assert r.stderr == ("nodecli: error: node user 'nosuch' does not exist in this "
                        "machine's config\nhint: 'nodecli -l' lists the node users\n")


def test_a_tree_line_is_cut_to_the_terminals_width_and_whole_in_a_pipe(monkeypatch):
    """``_line`` on a real pseudo-terminal (os.openpty), in-process: cut with '…' to
    COLUMNS; the same line to a pipe (no width) is whole."""
    import io
    import os
    from types import SimpleNamespace

    from nodecli.cli.access import _line
    from nodecli.cli.app import Terminal

    monkeypatch.setenv("COLUMNS", "12")
    line = "  deep  list,read,write"
    master, slave = os.openpty()
    try:
        with os.fdopen(slave, "w", encoding="utf-8") as tty:
            _line(SimpleNamespace(term=Terminal(_stdout=tty)), line)
            tty.flush()
            shown = os.read(master, 1024).decode()
    finally:
        os.close(master)
    assert shown == "  deep  lis…\r\n"  # the terminal turns \n into \r\n
    pipe = io.StringIO()
    _line(SimpleNamespace(term=Terminal(_stdout=pipe)), line)
    assert pipe.getvalue() == line + "\n"


def test_verify_signs_with_the_default_profiles_mint_key_without_node(world, invoke,
                                                                       tmp_path):
    from nodecli.config.paths import resolve_paths

    managed = resolve_paths(None).keys_dir / "ak-all" / "private.pem"
    pem = tmp_path / "mint.pem"
    pem.write_bytes(managed.read_bytes())
    pem.chmod(0o600)
    managed.unlink()  # only the default profile's key can sign now
    r = invoke("node", "add", "minted", "--url", world.emulator.url, "--access-key", "ak-all",
               "--mint-key", str(pem), "--mint-user-id", "root", "--mint-scope-role", "admin",
               "--no-check")
    assert r.exit_code == 0, r.stderr
    assert invoke("node", "default", "minted").exit_code == 0
    r = invoke("access", "can-i", "read", "/fin", *world.who("erin"), "--verify")
    assert (r.exit_code, r.stdout.splitlines()[0]) == (0, "yes"), r.stderr
    assert r.stderr == "verify: the node agrees with the model (2 checks)\n"
    # --node, then NODECLI_NODE, name the profile whose key signs, before the default
    r = invoke("node", "add", "plain", "--url", world.emulator.url, "--access-key", "ak-all",
               "--no-check")
    assert r.exit_code == 0, r.stderr
    assert invoke("node", "default", "plain").exit_code == 0
    for how, env in ((["--node", "minted"], {}), ([], {"NODECLI_NODE": "minted"})):
        r = invoke("access", "can-i", "read", "/fin", *world.who("erin"), "--verify", *how,
                   env={"NODECLI_PASSWORD": "ak-all-secret", **env})
        assert (r.exit_code, r.stdout.splitlines()[0]) == (0, "yes"), (how, r.stderr)


def _answer(r) -> tuple[int, str, str]:
    body = json.loads(r.stdout)
    return r.exit_code, body["reason"], body["scope"]


def test_can_i_takes_each_rule_flag_and_the_scope_as_given(world):
    erin = ("--user-id", "erin", "-o", "json")
    assert _answer(world.run("ak-all", "can-i", "write", "/fin", *erin, "--scope-role",
                             "admin")) == (0, "bypasses-permissions", "node.ak-all:admin:all")
    assert _answer(world.run("ak-all", "can-i", "write", "/fin", *erin, "--scope-role",
                             "admin", "--no-admin-bypass")) == (
        1, "level-not-held", "node.ak-all:admin:all")
    frank = ("--user-id", "frank", "-o", "json")  # his list is on /data, above ak-fin's root
    assert _answer(world.run("ak-fin", "can-i", "list", "/2025", *frank))[:2] == (0, "granted")
    assert _answer(world.run("ak-fin", "can-i", "list", "/2025", *frank,
                             "--no-inherit-above-root"))[:2] == (1, "no-permission")
    assert _answer(world.run("ak-all", "can-i", "read", "/fin", *erin, "--scope", "")) == (
        1, "token-scope", "")
    assert _answer(world.run("ak-all", "can-i", "write", "/fin", *erin, "--scope",
                             "openid node.ak-all:admin:all")) == (
        0, "bypasses-permissions", "openid node.ak-all:admin:all")


def test_can_i_and_what_can_refuse_what_they_cannot_do_in_one_line(world, invoke):
    r = world.run("ak-all", "can-i", "read", "/fin")
    assert (r.exit_code, r.stderr) == (
        ExitCode.USAGE, "nodecli: error: --user-id UID is needed (the token's user)\n")
    r = world.run("ak-all", "can-i", "read", "/fin", "--user-id", "erin", "--verify",
                  "--scope", "x")
    assert (r.exit_code, r.stderr) == (ExitCode.USAGE, "nodecli: error: --verify mints "
                                       "node.AK:ROLE:all tokens: use --scope-role, not --scope\n")
    r = invoke("node", "add", "one", "--url", world.emulator.url, "--access-key", "ak-all",
               "--no-check")
    assert r.exit_code == 0, r.stderr
    r = invoke("access", "what-can", "--user-id", "erin", "--verify", "--nodes", "*",
               env={"NODECLI_ACCESS_KEY": "ak-all", "NODECLI_PASSWORD": "ak-all-secret"})
    assert (r.exit_code, r.stderr) == (ExitCode.USAGE, "nodecli: error: --verify asks one "
                                       "node: give --node, not --nodes/--all-nodes\n")
    r = world.run("ak-all", "what-can", "--user-id", "erin", "--scope", "x", "--verify")
    assert r.exit_code == ExitCode.USAGE and "use --scope-role, not --scope" in r.stderr


def test_verify_without_a_key_to_sign_with_says_which_and_how(world):
    from nodecli.config.paths import resolve_paths

    managed = resolve_paths(None).keys_dir / "ak-all" / "private.pem"
    managed.unlink()
    r = world.run("ak-all", "can-i", "read", "/fin", "--user-id", "erin", "--verify")
    assert (r.exit_code, r.stdout) == (ExitCode.USAGE, "")
    assert r.stderr == (
        f"nodecli: error: --verify signs a token for access key ak-all: no key to sign with "
        f"({managed} does not exist)\nhint: give --key-file-path PEM (the private key whose "
        "public key is registered with the access key), or a profile with --mint-key\n")


def test_verify_records_the_key_it_validated_under_the_home_given(world, invoke, tmp_path):
    from nodecli.config.paths import resolve_paths

    managed = resolve_paths(None).keys_dir / "ak-all" / "private.pem"
    other = resolve_paths(tmp_path / "other")
    (other.keys_dir / "ak-all").mkdir(parents=True)
    (other.keys_dir / "ak-all" / "private.pem").write_bytes(managed.read_bytes())
    (other.keys_dir / "ak-all" / "private.pem").chmod(0o600)
    validated = "validated-keys.json"
    before = (resolve_paths(None).state_dir / validated).exists()
    r = invoke("--home", str(tmp_path / "other"), "access", "can-i", "read", "/fin",
               *world.who("erin"), "--verify", env=world.env("ak-all"))
    assert r.exit_code == 0, r.stderr
    assert (other.state_dir / validated).exists()  # --home's state, not $NODECLI_HOME's
    assert (resolve_paths(None).state_dir / validated).exists() == before


def test_verify_signed_by_a_key_the_node_does_not_know_says_which_token(world, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    stranger = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505 - a test key, fast to make
    pem = tmp_path / "stranger.pem"
    pem.write_bytes(stranger.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    pem.chmod(0o600)
    r = world.run("ak-all", "can-i", "read", "/fin", *world.who("erin"), "--verify",
                  "--key-file-path", str(pem))
    assert (r.exit_code, r.stdout) == (ExitCode.AUTH, ""), r.stderr
    assert r.stderr.splitlines()[1] == (
        "hint: the request used bearer token with access key 'ak-all' in header "
        "X-Vendor-AccessKey (a 300 s token minted for --verify (user erin)); check the "
        "token's expiry and scope, and that its public key is registered with 'nodecli "
        "access-key set-verification-key'")


def test_what_can_tables_join_levels_jsonl_keeps_lists_and_nothing_is_nobody(world):
    r = world.run("ak-all", "what-can", "--user-id", "nobody-here", "-o", "table")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "nobody\n")
    rows = world.run("ak-all", "what-can", "--user-id", "erin", "-o", "jsonl").stdout
    assert json.loads(rows.splitlines()[1])["levels"] == ["list", "read"]
    table = world.run("ak-all", "what-can", "--user-id", "erin", "-o", "table").stdout
    assert table.splitlines()[2].split()[:3] == ["/fin", "folder", "list,read"]
    csv = world.run("ak-all", "what-can", "--user-id", "erin", "-o", "csv").stdout
    assert csv.splitlines()[:2] == ["path,type,levels,lists,via",
                                    "/,folder,,no,on the way to a permitted folder"]


def test_an_empty_user_or_group_id_is_named_in_the_refusal(world):
    for flag, bad in (("--user-id", ["--user-id", " "]),
                      ("--group-id", ["--user-id", "erin", "--group-id", ""])):
        r = world.run("ak-all", "can-i", "read", "/fin", *bad)
        assert (r.exit_code, r.stderr) == (ExitCode.USAGE, f"nodecli: error: {flag} must be a "
                                           "non-empty word of at most 256 characters\n")


def test_verify_mints_on_the_nodes_clock_and_names_the_profiles_access_key_header(
        world, invoke, emulator):
    """A node an hour and more ahead of us (beyond the token's 300 s and a default
    token's 3,600 s) still accepts the --verify token: it expires on the node's clock,
    read from the node's Date while the survey ran. A node that names the access key in
    another header gets it in the header the profile says."""
    r = invoke("node", "add", "ahead", "--url", emulator.url, "--access-key", "ak-all",
               "--access-key-header", "X-Other-AccessKey", "--no-check")
    assert r.exit_code == 0, r.stderr
    state = emulator.state
    header, offset = state.access_key_header, state.clock_offset
    state.access_key_header, state.clock_offset = "X-Other-AccessKey", 3700.0
    try:
        r = invoke("access", "can-i", "read", "/fin", *world.who("erin"), "--verify",
                   "--node", "ahead", env={"NODECLI_PASSWORD": "ak-all-secret"})
    finally:
        state.access_key_header, state.clock_offset = header, offset
    assert (r.exit_code, r.stdout.splitlines()[0]) == (0, "yes"), r.stderr
    assert r.stderr.endswith("verify: the node agrees with the model (2 checks)\n"), r.stderr
