"""Classic administration flags on the root command, as documented for the node's tool."""

from __future__ import annotations

import io
import json
import stat
import sys
from pathlib import Path

import pytest

from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from nodecli.users.passwords import verify_password
from tests.conftest import REPO_ROOT, enter_password_twice, subprocess_env


def _store(home) -> ConfigStore:
    return ConfigStore(resolve_paths(home))


def test_documented_invocations(invoke, home):
    r = invoke("-au", "usr1", "-x", "aspera", "--password-stdin", input="pass1\n")
    assert r.exit_code == 0, r
    assert "transfer user 'aspera' was unknown" in r.stderr
    r = invoke("-au", "usr2", "-p", "pass2", "-x", "root")
    assert r.exit_code == 0, r
    r = invoke("-mu", "usr1", "-p", "pass1.1")
    assert r.exit_code == 0, r
    cfg = _store(home).load()
    assert verify_password("pass1.1", cfg.users["usr1"].password_hash)
    assert verify_password("pass2", cfg.users["usr2"].password_hash)
    r = invoke("-l")
    assert r.exit_code == 0
    assert r.stdout == (
        "List of Node API user(s):\n"
        "user          system/transfer       user acls\n"
        "============= ===================== =====================\n"
        "usr1          aspera                []\n"
        "usr2          root                  []\n"
    )
    r = invoke("-du", "usr1")
    assert r.exit_code == 0
    assert set(_store(home).load().users) == {"usr2"}


def test_long_forms_and_acls(invoke, home):
    r = invoke("--add", "--user", "node_ibmuser", "--pwd", "pw", "--xuser", "root",
               "--acl-set", "admin,impersonation")
    assert r.exit_code == 0, r
    r = invoke("-l")
    assert r.stdout.splitlines()[-1] == "node_ibmuser  root                  [admin,impersonation]"
    r = invoke("-m", "-u", "node_ibmuser", "--acl-del", "admin", "--acl-add", "internal",
               "--acl-list")
    assert r.exit_code == 0, r
    assert r.stdout == "node_ibmuser: [impersonation,internal]\n"
    user = _store(home).load().users["node_ibmuser"]
    assert verify_password("pw", user.password_hash)  # ACL change kept the password
    r = invoke("--acl-list", "-o", "json")
    assert json.loads(r.stdout) == [{"name": "node_ibmuser", "acls": ["impersonation",
                                                                       "internal"]}]


def test_list_wide_names_widen_columns_and_machine_formats(invoke):
    name = "a_rather_long_node_user_name"
    invoke("-au", name, "-p", "pw", "-x", "xfer")
    lines = invoke("-l").stdout.splitlines()
    assert lines[2].split(" ")[0] == "=" * len(name)
    assert lines[3].startswith(name + " xfer")
    r = invoke("-l", "-o", "json")
    assert json.loads(r.stdout) == [{"name": name, "transfer_user": "xfer", "acls": []}]
    r = invoke("-l", "-o", "csv")
    assert r.stdout == f"name,transfer_user,acls\n{name},xfer,\n"


def test_list_empty(invoke):
    r = invoke("-l")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0] == "List of Node API user(s):"
    assert len(r.stdout.splitlines()) == 3


def test_password_from_environment(invoke, home):
    r = invoke("-au", "usr1", "-x", "aspera", env={"NODECLI_PASSWORD": "from-env"})
    assert r.exit_code == 0, r
    assert verify_password("from-env", _store(home).load().users["usr1"].password_hash)


@pytest.mark.parametrize(("args", "code", "text"), [
    (("-a", "-x", "aspera", "-p", "pw"), 2, "-a needs -u NAME"),
    (("-au", "usr9", "-p", "pw"), 2, "-a needs -x XUSER"),
    (("-m", "-p", "pw"), 2, "-m needs -u NAME"),
    (("-d",), 2, "-d needs -u NAME"),
    (("-au", "usr1", "-x", "aspera", "-p", "pw"), 1, "already exists"),
    (("-du", "ghost"), 5, "no node user 'ghost'"),
    (("-mu", "ghost", "-p", "pw"), 5, "no node user 'ghost'"),
    (("-du", "usr1", "-p", "pw"), 2, "-p does not apply to -d"),
    (("-l", "-u", "usr1"), 2, "-u does not apply to -l"),
    (("-l", "--access-key", "ak"), 2, "--access-key does not apply"),
    (("-au", "bad name", "-x", "aspera", "-p", "pw"), 2, "invalid node user name"),
    (("-au", "usr3", "-x", "aspera", "-p", "pw", "--acl-set", "root"), 2, "unknown ACL"),
    (("-au", "usr3", "-x", "aspera"), 2, "stdin is not a terminal"),
    (("-a", "-d", "-u", "usr1"), 2, "choose one action"),
])
def test_errors_one_line_right_code_nothing_changed(invoke, home, args, code, text):
    assert invoke("-au", "usr1", "-x", "aspera", "-p", "pw").exit_code == 0
    before = Path(_store(home).path).read_bytes()
    r = invoke(*args)
    assert r.exit_code == code, r
    assert text in r.stderr
    assert "Traceback" not in r.stderr
    assert Path(_store(home).path).read_bytes() == before


def test_backup_is_private_and_importable(invoke, home, tmp_path):
    invoke("xuser", "add", "aspera", "-r", "file:////data/*")
    invoke("-au", "usr1", "-x", "aspera", "-p", "pw", "--acl-set", "admin")
    backup = tmp_path / "users.bak"
    r = invoke("-b", str(backup))
    assert r.exit_code == 0, r
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    data = json.loads(backup.read_text())
    assert data["format"] == "nodecli-user-data" and data["version"] == 1
    assert data["users"]["usr1"]["acls"] == ["admin"]
    invoke("-du", "usr1")
    r = invoke("config", "import", str(backup), "--yes")
    assert r.exit_code == 0, r
    assert verify_password("pw", _store(home).load().users["usr1"].password_hash)


def test_reload_validates(invoke, home):
    invoke("-au", "usr1", "-x", "aspera", "-p", "pw")
    r = invoke("--reload")
    assert r.exit_code == 0
    assert "reload:" in r.stderr and "1 node user(s)" in r.stderr
    assert "neither restriction nor docroot" in r.stderr
    path = Path(_store(home).path)
    path.write_text(path.read_text() + "\n[oops\n")
    r = invoke("--reload")
    assert r.exit_code == 3 and str(path) in r.stderr


def test_no_flags_prints_help(invoke):
    r = invoke()
    assert r.exit_code == 0 and "Classic flags" in r.stdout


def test_classic_add_prompts_twice_in_a_pty(home):
    import pexpect
    child = pexpect.spawn(sys.executable, ["-m", "nodecli", "-au", "usr1", "-x", "aspera"],
                          env=subprocess_env(), cwd=str(REPO_ROOT), encoding="utf-8",
                          timeout=30)
    seen = io.StringIO()
    child.logfile_read = seen
    assert enter_password_twice(child, "usr1", "pass1") == 0, seen.getvalue()
    assert "pass1" not in seen.getvalue()
    assert verify_password("pass1", _store(home).load().users["usr1"].password_hash)


def test_classic_modify_prompts_when_p_omitted_in_a_pty(home, invoke):
    import pexpect
    invoke("-au", "usr1", "-x", "aspera", "-p", "old")
    child = pexpect.spawn(sys.executable, ["-m", "nodecli", "-mu", "usr1"],
                          env=subprocess_env(), cwd=str(REPO_ROOT), encoding="utf-8",
                          timeout=30)
    assert enter_password_twice(child, "usr1", "new") == 0
    assert verify_password("new", _store(home).load().users["usr1"].password_hash)
