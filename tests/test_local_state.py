"""Local state that must not be trusted or trampled (issue 33): a config.toml.bak that is
a symbolic link, a secrets.toml that others may read, and ACL flags given together.
Real files through the real command line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def _users_acls(invoke, name: str) -> list[str]:
    r = invoke("user", "show", name, "-o", "json")
    assert r.exit_code == 0, r
    return json.loads(r.stdout)["acls"]


@pytest.fixture
def two_versions(invoke, home):
    """A config with a .bak beside it (two changes made)."""
    assert invoke("xuser", "add", "x", "-r", "s3://*").exit_code == 0
    assert invoke("user", "add", "u1", "--xuser", "x", "--password-stdin",
                  input="pw\n").exit_code == 0
    assert (home / "config.toml.bak").is_file()
    return home


# -- config.toml.bak as a symbolic link: never written through, never read through ----------


def test_a_change_is_refused_when_the_backup_is_a_link(invoke, two_versions, tmp_path):
    home = two_versions
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"not yours\n")
    bak = home / "config.toml.bak"
    bak.unlink()
    bak.symlink_to(victim)
    config = (home / "config.toml").read_bytes()
    r = invoke("user", "add", "u2", "--xuser", "x", "--password-stdin", input="pw\n")
    assert r.exit_code == 3, r
    assert r.stderr.startswith(f"nodecli: error: {bak}: is a symbolic link")
    assert victim.read_bytes() == b"not yours\n"  # not written through
    assert (home / "config.toml").read_bytes() == config  # nothing changed
    assert bak.is_symlink()


def test_restore_does_not_read_a_backup_that_is_a_link(invoke, two_versions, tmp_path):
    home = two_versions
    planted = tmp_path / "planted.toml"  # a valid config someone else wrote
    planted.write_bytes((home / "config.toml.bak").read_bytes())
    bak = home / "config.toml.bak"
    bak.unlink()
    bak.symlink_to(planted)
    config = (home / "config.toml").read_bytes()
    r = invoke("config", "restore")
    assert r.exit_code == 3, r
    assert r.stderr.startswith(f"nodecli: error: {bak}: is a symbolic link; nodecli does "
                               "not read through links")
    assert (home / "config.toml").read_bytes() == config  # not read through
    assert _users_acls(invoke, "u1") == []


# -- secrets.toml that its group or others may read: refused, with its mode and the fix ----


@pytest.fixture
def stored(invoke, emulator, home):
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r
    secrets = home / "secrets.toml"
    assert secrets.is_file() and (secrets.stat().st_mode & 0o777) == 0o600
    return secrets


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o610, 0o601, 0o644])
def test_a_secrets_file_others_may_open_is_refused(invoke, stored, mode):
    os.chmod(stored, mode)
    before = stored.read_bytes()
    r = invoke("node", "info", "--node", "emu")
    assert r.exit_code == 3, r
    lines = r.stderr.splitlines()
    assert lines[0] == (f"nodecli: error: {stored}: mode {mode:04o}: readable by others or "
                        "its group; secrets must be private, so it is not read")
    assert lines[1] == f"hint: chmod 600 {stored}"
    assert stored.read_bytes() == before and (stored.stat().st_mode & 0o777) == mode


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_private_secrets_file_is_read(invoke, stored, mode):
    os.chmod(stored, mode)
    r = invoke("node", "info", "--node", "emu", "-o", "json")
    assert r.exit_code == 0, r


# -- --acl-add and --acl-del in one command: set, then add, then del (docs/users.md) -------


@pytest.fixture
def bot(invoke, home):
    r = invoke("-au", "bot", "-x", "aspera", "-p", "pw", "--acl-set", "admin,impersonation")
    assert r.exit_code == 0, r
    return "bot"


@pytest.mark.parametrize("argv", [
    ("-mu", "bot", "--acl-add", "internal", "--acl-del", "internal"),
    ("-mu", "bot", "--acl-del", "internal", "--acl-add", "internal"),  # line order: no matter
])
def test_an_acl_added_and_deleted_in_one_command_is_deleted(invoke, bot, argv):
    assert invoke(*argv).exit_code == 0
    assert _users_acls(invoke, "bot") == ["admin", "impersonation"]


def test_acl_set_comes_first_then_add_then_del(invoke, bot):
    r = invoke("-mu", "bot", "--acl-del", "admin", "--acl-add", "internal,admin",
               "--acl-set", "impersonation")
    assert r.exit_code == 0, r
    assert _users_acls(invoke, "bot") == ["impersonation", "internal"]


def test_user_acl_add_and_del_of_the_same_acl(invoke, bot):
    assert invoke("user", "acl", "bot", "--add", "internal", "--del", "internal,admin"
                  ).exit_code == 0
    assert _users_acls(invoke, "bot") == ["impersonation"]


def test_the_order_is_documented():
    text = " ".join((Path(__file__).parent.parent / "docs" / "users.md").read_text().split())
    assert ("`--acl-set` first (it replaces the list), then `--acl-add`, then `--acl-del`"
            in text)
