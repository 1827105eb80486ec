"""`nodecli user ...`: node users through the subcommand tree."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from nodecli.users.passwords import verify_password
from tests.conftest import REPO_ROOT, enter_password_twice, spawn_stdout_to, subprocess_env


def _store(home) -> ConfigStore:
    return ConfigStore(resolve_paths(home))


@pytest.fixture
def with_users(invoke):
    assert invoke("xuser", "add", "aspera", "--restriction", "file:////data/*").exit_code == 0
    r = invoke("user", "add", "usr1", "--xuser", "aspera", "--acl", "admin",
               "--password-stdin", input="pass1\n")
    assert r.exit_code == 0, r
    r = invoke("user", "add", "usr2", "--xuser", "aspera", env={"NODECLI_PASSWORD": "pass2"})
    assert r.exit_code == 0, r
    return invoke


def test_add_list_show_json(with_users, home):
    invoke = with_users
    r = invoke("user", "list", "-o", "json")
    assert r.exit_code == 0
    rows = json.loads(r.stdout)
    assert rows == [
        {"name": "usr1", "transfer_user": "aspera", "acls": ["admin"]},
        {"name": "usr2", "transfer_user": "aspera", "acls": []},
    ]
    assert "$scrypt$" not in r.stdout
    r = invoke("user", "show", "usr1", "-o", "json")
    assert json.loads(r.stdout) == {
        "name": "usr1", "transfer_user": "aspera", "acls": ["admin"], "password_set": True,
        "restrictions": ["file:////data/*"], "docroot": None,
    }
    cfg = _store(home).load()
    assert verify_password("pass1", cfg.users["usr1"].password_hash)
    assert verify_password("pass2", cfg.users["usr2"].password_hash)
    assert not verify_password("pass2", cfg.users["usr1"].password_hash)


def test_list_table_and_csv(with_users):
    r = with_users("user", "list")
    assert r.stdout.splitlines() == [
        "user  transfer user  acls",
        "usr1  aspera         admin",
        "usr2  aspera         -",
    ]
    r = with_users("user", "list", "-o", "csv")
    assert r.stdout.splitlines() == ["name,transfer_user,acls", "usr1,aspera,admin",
                                     "usr2,aspera,"]


def test_list_empty_config(invoke):
    r = invoke("user", "list", "-o", "json")
    assert (r.exit_code, json.loads(r.stdout)) == (0, [])


def test_add_existing_user_is_a_conflict_and_changes_nothing(with_users, home):
    before = Path(_store(home).path).read_bytes()
    r = with_users("user", "add", "usr1", "--xuser", "aspera", "--password-stdin",
                   input="other\n")
    assert r.exit_code == 1
    assert r.stderr.startswith("nodecli: error: node user 'usr1' already exists")
    assert "Traceback" not in r.stderr
    assert Path(_store(home).path).read_bytes() == before


@pytest.mark.parametrize("args", [
    ("user", "delete", "ghost"),
    ("user", "passwd", "ghost", "--password-stdin"),
    ("user", "show", "ghost"),
    ("user", "acl", "ghost", "--add", "admin"),
])
def test_missing_user_is_not_found(with_users, home, args):
    before = Path(_store(home).path).read_bytes()
    r = with_users(*args, input="pw\n")
    assert r.exit_code == 5, r
    assert r.stderr == "nodecli: error: no node user 'ghost'\n"
    assert Path(_store(home).path).read_bytes() == before


@pytest.mark.parametrize("name", [
    "", "a b", "a/b", "../etc", ".hidden", "+x", "a\x1b[31mred", "tab\there", "x" * 129,
    "ünï", "semi;colon", "quote'd", "new\nline",
])
def test_hostile_names_are_refused_without_change(with_users, home, name):
    before = Path(_store(home).path).read_bytes()
    r = with_users("user", "add", "--xuser", "aspera", "--password-stdin", "--", name,
                   input="pw\n")
    assert r.exit_code == 2, r
    assert len(r.stderr.strip().splitlines()) == 1
    assert "\x1b" not in r.stderr
    r2 = with_users("xuser", "add", "--docroot", "/x", "--", name)
    assert r2.exit_code == 2, r2
    r3 = with_users("user", "add", "ok", "--xuser", name, "--password-stdin", input="pw\n")
    assert r3.exit_code == 2, r3
    assert Path(_store(home).path).read_bytes() == before


def test_name_starting_with_dash_is_refused(with_users):
    r = with_users("user", "add", "--xuser", "aspera", "--password-stdin", "--", "-rf",
                   input="pw\n")
    assert r.exit_code == 2
    assert "invalid node user name" in r.stderr


def test_no_password_source_without_terminal_is_usage_error(invoke, home):
    r = invoke("user", "add", "usr1", "--xuser", "aspera")
    assert r.exit_code == 2
    assert "--password-stdin" in r.stderr and "NODECLI_PASSWORD" in r.stderr
    assert not Path(_store(home).path).exists()


@pytest.mark.parametrize("pw", ["", "bad\x07bell"])
def test_bad_password_refused(invoke, home, pw):
    r = invoke("user", "add", "usr1", "--xuser", "aspera", "-p", pw)
    assert r.exit_code == 2, r
    assert not Path(_store(home).path).exists()


def test_unknown_transfer_user_is_recorded_with_warning(invoke, home):
    r = invoke("user", "add", "usr1", "--xuser", "newx", "--password-stdin", input="pw\n")
    assert r.exit_code == 0
    assert "warning: transfer user 'newx' was unknown" in r.stderr
    assert "neither restriction nor docroot" in r.stderr
    cfg = _store(home).load()
    assert cfg.transfer_users["newx"].restrictions == []
    assert cfg.transfer_users["newx"].docroot is None
    # -q keeps stderr quiet, data is unaffected
    r = invoke("-q", "user", "add", "usr2", "--xuser", "newx", "--password-stdin", input="p\n")
    assert (r.exit_code, r.stderr) == (0, "")


def test_passwd_changes_only_the_hash(with_users, home):
    r = with_users("user", "passwd", "usr1", "--password-stdin", input="new-pass\n")
    assert r.exit_code == 0, r
    user = _store(home).load().users["usr1"]
    assert verify_password("new-pass", user.password_hash)
    assert user.acls == ["admin"]


def test_delete(with_users, home):
    r = with_users("user", "delete", "usr2")  # no terminal to ask on
    assert r.exit_code == 2 and "use --yes" in r.stderr
    assert set(_store(home).load().users) == {"usr1", "usr2"}
    r = with_users("user", "delete", "usr2", "--yes")
    assert r.exit_code == 0
    assert set(_store(home).load().users) == {"usr1"}
    r = with_users("user", "delete", "usr2")  # a missing user: exit 5 before any question
    assert r.exit_code == 5


def test_acl_set_add_del_and_show(with_users, home):
    assert with_users("user", "acl", "usr2", "--set", "admin,internal").exit_code == 0
    assert _store(home).load().users["usr2"].acls == ["admin", "internal"]
    assert with_users("user", "acl", "usr2", "--add", "impersonation",
                      "--del", "admin").exit_code == 0
    assert _store(home).load().users["usr2"].acls == ["internal", "impersonation"]
    r = with_users("user", "acl", "usr2")
    assert r.stdout == "internal,impersonation\n"
    r = with_users("user", "acl", "usr2", "-o", "json")
    assert json.loads(r.stdout) == {"name": "usr2", "acls": ["internal", "impersonation"]}
    assert with_users("user", "acl", "usr2", "--set", "").exit_code == 0
    assert _store(home).load().users["usr2"].acls == []


def test_acl_errors(with_users, home):
    before = Path(_store(home).path).read_bytes()
    r = with_users("user", "acl", "usr2", "--set", "root")
    assert r.exit_code == 2 and "unknown ACL 'root'" in r.stderr
    r = with_users("user", "acl", "usr2", "--set", "admin", "--add", "internal")
    assert r.exit_code == 2
    assert Path(_store(home).path).read_bytes() == before


def test_damaged_config_exit_3_names_file_and_line_and_changes_nothing(with_users, home):
    path = Path(_store(home).path)
    path.write_text(path.read_text().replace("[users.usr2]", "[users.usr2"))
    damaged = path.read_bytes()
    for args in (("user", "list"), ("user", "add", "usr3", "--xuser", "aspera",
                                    "--password-stdin"), ("user", "delete", "usr1")):
        r = with_users(*args, input="pw\n")
        assert r.exit_code == 3, r
        assert str(path) in r.stderr and "line" in r.stderr
        assert "Traceback" not in r.stderr
    assert path.read_bytes() == damaged


def test_files_and_folders_private_whatever_the_umask(run_cli, home):
    old = os.umask(0)
    try:
        r = run_cli("user", "add", "usr1", "--xuser", "aspera", "--password-stdin",
                    input="pw\n")
        assert r.exit_code == 0, r
        r = run_cli("user", "add", "usr2", "--xuser", "aspera", "--password-stdin",
                    input="pw\n")
    finally:
        os.umask(old)
    paths = resolve_paths(home)
    assert stat.S_IMODE(Path(paths.config_file).stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(paths.backup_file).stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(paths.config_dir).stat().st_mode) == 0o700


def test_interactive_prompt_with_confirmation_in_a_pty(home):
    import pexpect
    child = pexpect.spawn(sys.executable, ["-m", "nodecli", "user", "add", "usr1",
                                           "--xuser", "aspera"],
                          env=subprocess_env(), cwd=str(REPO_ROOT), encoding="utf-8",
                          timeout=30)
    seen = io.StringIO()
    child.logfile_read = seen
    try:
        child.expect("Password for usr1: ")
        child.sendline("first-try")
        child.expect("Repeat for confirmation: ")
        child.sendline("different")
        child.expect("Error: The two entered values do not match.")
        code = enter_password_twice(child, "usr1", "s3cret!")  # asked again
    finally:
        child.close(force=True)
    output = seen.getvalue()
    assert code == 0, output
    assert "added node user 'usr1'" in output
    assert "s3cret" not in output and "first-try" not in output  # never echoed
    assert verify_password("s3cret!", _store(home).load().users["usr1"].password_hash)


def test_the_password_prompt_is_on_the_terminal_when_stdout_is_a_file(home, tmp_path):
    """`nodecli user add usr1 -x aspera > added.txt`: the questions still reach the
    person at the terminal (stderr); the file holds only what the command says."""
    out = tmp_path / "added.txt"
    child = spawn_stdout_to(out, ["user", "add", "usr1", "--xuser", "aspera"],
                            subprocess_env())
    assert enter_password_twice(child, "usr1", "s3cret!") == 0
    assert "Password" not in out.read_text() and "s3cret" not in out.read_text()
    assert verify_password("s3cret!", _store(home).load().users["usr1"].password_hash)


@pytest.mark.parametrize("argv", [["user", "list"], ["-l"], ["--help"], ["xuser", "list"],
                                  ["user", "show", "usr1"]])
def test_local_read_commands_do_not_import_heavy_stacks(with_users, argv):
    code = (
        "import sys, io\n"
        "from nodecli.cli.main import run\n"
        "real, sys.stdout = sys.stdout, io.StringIO()\n"
        f"rc = run({argv!r})\n"
        "sys.stdout = real\n"
        "heavy = ('httpx2', 'httpx', 'httpcore', 'cryptography', 'rich', 'filelock',\n"
        "         'platformdirs', 'tomli_w', 'ssl')\n"
        "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    import subprocess

    proc = subprocess.run([sys.executable, "-c", code], env=subprocess_env(),
                          capture_output=True, text=True, timeout=60, cwd=str(REPO_ROOT))
    assert proc.stdout.strip() == "0 []", proc.stdout + proc.stderr


def test_the_unconfigured_transfer_user_warning_comes_once_per_change(invoke):
    """Given when a change leaves a node user on a transfer user with neither
    restriction nor docroot; not repeated by commands that do not touch it."""
    r = invoke("user", "add", "u1", "--xuser", "bare", "--password-stdin", input="pw\n")
    assert r.exit_code == 0 and r.stderr.count("neither restriction nor docroot") == 1
    for argv, stdin in ((("user", "passwd", "u1", "--password-stdin"), "pw2\n"),
                        (("user", "acl", "u1", "--add", "admin"), None),
                        (("user", "list"), None), (("user", "show", "u1"), None),
                        (("xuser", "list"), None), (("-l",), None)):
        r = invoke(*argv, input=stdin)
        assert r.exit_code == 0, (argv, r.stderr)
        assert "neither restriction nor docroot" not in r.stderr, argv
    r = invoke("xuser", "set", "bare", "-r", "file:////data/*")
    assert r.exit_code == 0 and "neither" not in r.stderr
