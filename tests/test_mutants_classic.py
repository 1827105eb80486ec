"""The classic root flags (-a/-l/-m/-d, -u/-p/-x, --acl-*, -b, --reload) and the
`user` commands' helpers at the points mutation testing found unchecked: the ACLs an
add records (--acl-set, then --acl-add, less --acl-del, each once), what -m changes
(the password only when asked or when nothing else is), the classic table's columns
widening for long transfer users and ACL lists, --acl-list in each format, each
refusal's exact words, --reload's and -b's outcome; `user show` in each format, cut
to a terminal or whole with -o wide; and a password prompt never shown for a command
that is refused anyway (a real pseudo-terminal)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from nodecli.users.passwords import verify_password
from tests.conftest import REPO_ROOT, pty_to_the_end, subprocess_env

ERR = "nodecli: error: "
HINT = "hint: see 'nodecli --help'\n"
LONG_X = "a_transfer_user_of_25_chr"
UNKNOWN = ("nodecli: warning: transfer user '{0}' was unknown: recorded it, but it has "
           "neither restriction nor docroot yet: set one with 'nodecli xuser set {0} "
           "--restriction R' or '--docroot PATH'\n")


def _user(home: Path, name: str):
    return ConfigStore(resolve_paths(home)).load().users[name]


@pytest.fixture
def one_user(invoke, home: Path) -> Path:
    assert invoke("xuser", "add", "x", "-r", "file:////data/*").exit_code == 0
    assert invoke("-au", "u1", "-x", "x", "-p", "pw").exit_code == 0
    return home


def test_an_add_records_the_acls_set_then_added_less_those_removed_each_once(invoke,
                                                                             one_user) -> None:
    r = invoke("-au", "u2", "-x", "x", "-p", "pw", "--acl-set", "admin,internal",
               "--acl-add", "impersonation,admin", "--acl-del", "internal", "--acl-list")
    assert (r.exit_code, r.stdout) == (0, "u2: [admin,impersonation]\n")
    assert r.stderr == "added node user 'u2' on transfer user 'x'\n"
    assert _user(one_user, "u2").acls == ["admin", "impersonation"]
    r = invoke("-au", "u3", "-x", "x", "-p", "pw", "--acl-add", "internal,internal")
    assert r.exit_code == 0 and _user(one_user, "u3").acls == ["internal"]


def test_the_classic_list_widens_for_long_transfer_users_and_acl_lists(invoke,
                                                                       one_user) -> None:
    r = invoke("-au", "u2", "-x", LONG_X, "-p", "pw", "--acl-set",
               "admin,impersonation,internal")
    assert r.stderr == (UNKNOWN.format(LONG_X)
                        + f"added node user 'u2' on transfer user '{LONG_X}'\n")
    r = invoke("-l")
    assert r.stdout == (
        "List of Node API user(s):\n"
        "user          system/transfer           user acls\n"
        "============= ========================= ==============================\n"
        "u1            x                         []\n"
        f"u2            {LONG_X} [admin,impersonation,internal]\n")


def test_acl_list_of_all_or_one_user_in_each_format(invoke, one_user) -> None:
    invoke("-au", "u2", "-x", "x", "-p", "pw", "--acl-set", "admin,impersonation")
    assert invoke("--acl-list").stdout == "u1: []\nu2: [admin,impersonation]\n"
    assert invoke("--acl-list", "-u", "u2").stdout == "u2: [admin,impersonation]\n"
    assert invoke("--acl-list", "-u", "u2", "-o", "csv").stdout == (
        'name,acls\nu2,"admin,impersonation"\n')
    assert invoke("--acl-list", "-o", "csv").stdout == (
        'name,acls\nu1,\nu2,"admin,impersonation"\n')
    assert json.loads(invoke("--acl-list", "-u", "u1", "-o", "json").stdout) == [
        {"name": "u1", "acls": []}]
    r = invoke("-au", "u3", "-x", "x", "-p", "pw", "--acl-add", "internal", "--acl-list",
               "-o", "json")
    assert json.loads(r.stdout) == [{"name": "u3", "acls": ["internal"]}]


def test_modify_changes_the_password_only_when_asked_or_when_nothing_else(invoke,
                                                                         one_user) -> None:
    r = invoke("-mu", "u1", "-x", "x2")
    assert r.exit_code == 0, r
    assert r.stderr == UNKNOWN.format("x2") + "changed node user 'u1': transfer user 'x2'\n"
    assert verify_password("pw", _user(one_user, "u1").password_hash)
    r = invoke("-mu", "u1", "-x", "x", "-p", "new")
    assert r.stderr == "changed node user 'u1': password, transfer user 'x'\n"
    assert verify_password("new", _user(one_user, "u1").password_hash)
    r = invoke("-mu", "u1", "--acl-add", "admin", "--password-stdin", input="newer\n")
    assert r.exit_code == 0, r
    user = _user(one_user, "u1")
    assert verify_password("newer", user.password_hash) and user.acls == ["admin"]
    r = invoke("-mu", "u1", env={"NODECLI_PASSWORD": "newest"})
    assert r.stderr == "changed node user 'u1': password\n"
    assert verify_password("newest", _user(one_user, "u1").password_hash)


@pytest.mark.parametrize(("flag", "acls"), [("--acl-add", ["admin", "internal"]),
                                            ("--acl-del", [])])
def test_modify_with_one_acl_flag_alone_leaves_the_password(invoke, one_user, flag: str,
                                                            acls: list[str]) -> None:
    """(no terminal and no password given: asking for one would be refused)"""
    assert invoke("-mu", "u1", "--acl-set", "admin").exit_code == 0
    r = invoke("-mu", "u1", flag, "internal" if flag == "--acl-add" else "admin")
    assert r.exit_code == 0, r
    assert r.stderr == f"changed node user 'u1': ACLs [{','.join(acls)}]\n"
    user = _user(one_user, "u1")
    assert user.acls == acls and verify_password("pw", user.password_hash)


@pytest.mark.parametrize(("args", "given", "said"), [
    (("user", "add", "u1", "--xuser", "x", "-p", ""), None, "the password is empty"),
    (("-mu", "ghost", "-p", ""), None, "the password is empty"),
    (("user", "passwd", "ghost", "--password-stdin"), "", "no password on standard input"),
    (("-au", "u1", "-x", "x", "--password-stdin"), "", "no password on standard input"),
])
def test_a_password_given_empty_is_refused_before_the_user_is_looked_at(
        invoke, one_user, args, given, said: str) -> None:
    """-p and --password-stdin are read at once (a usage error, exit 2), before the
    user is found to exist or not; only a prompt waits for the name to be checked."""
    r = invoke(*args, input=given)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"{ERR}{said}\n")


@pytest.mark.parametrize(("args", "said"), [
    (("-au", "u3", "-x", "x", "-p", "pw", "--password-stdin"),
     "give -p or --password-stdin, not both"),
    (("-a", "--acl-list", "-u", "u3", "-x", "x", "-p", "pw", "--access-key", "k"),
     "--access-key does not apply to -a/--acl-list"),
    (("-du", "u1", "-x", "x", "-o", "json"), "-x, -o does not apply to -d"),
    (("-l", "--password-stdin", "--key-file-path", "k"),
     "--password-stdin, --key-file-path does not apply to -l"),
    (("-mu", "u1", "-y", "--token-key-length", "1024"),
     "--token-key-length does not apply to -m"),
    (("-a", "-x", "x", "-p", "pw"), "-a needs -u NAME (the node user)"),
    (("-au", "u3", "-p", "pw"), "-a needs -x XUSER (the transfer user)"),
    (("-m", "-p", "pw"), "-m needs -u NAME (the node user)"),
    (("-d",), "-d needs -u NAME (the node user)"),
])
def test_each_refusal_says_exactly_what_is_wrong(invoke, one_user, args, said: str) -> None:
    before = Path(ConfigStore(resolve_paths(one_user)).path).read_bytes()
    r = invoke(*args)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"{ERR}{said}\n{HINT}"
    assert Path(ConfigStore(resolve_paths(one_user)).path).read_bytes() == before


def test_reload_says_what_it_found_and_backup_takes_a_path_under_home(invoke, one_user,
                                                                      tmp_path: Path) -> None:
    r = invoke("--reload")
    assert (r.exit_code, r.stdout) == (0, "")
    assert r.stderr == (f"reload: {one_user / 'config.toml'}: ok: 1 node user(s), 1 transfer "
                        "user(s), 0 node profile(s), 0 service profile(s)\n")
    r = invoke("-b", "~/users.bak", env={"HOME": str(tmp_path)})
    assert r.exit_code == 0, r
    data = json.loads((tmp_path / "users.bak").read_text())
    assert list(data["users"]) == ["u1"]


# -- `user show` ------------------------------------------------------------------------------

def test_user_show_as_csv_and_as_fields(invoke, one_user) -> None:
    invoke("-mu", "u1", "--acl-set", "admin,impersonation")
    r = invoke("user", "show", "u1", "-o", "csv")
    assert r.stdout == ("name,transfer_user,acls,password_set,restrictions,docroot\n"
                        'u1,x,"admin,impersonation",yes,file:////data/*,\n')
    fields = ("name           u1\ntransfer user  x\nacls           admin,impersonation\n"
              "password set   yes\nrestrictions   file:////data/*\ndocroot        -\n")
    assert invoke("user", "show", "u1").stdout == fields
    assert invoke("user", "show", "u1", "-o", "wide").stdout == fields


def _pty(home: Path, *args: str) -> tuple[int, str]:
    return pty_to_the_end([sys.executable, "-m", "nodecli", *args],
                          subprocess_env({"NODECLI_HOME": str(home), "TERM": "xterm"}),
                          cwd=str(REPO_ROOT))


def test_user_show_is_cut_to_a_terminal_and_whole_with_wide(invoke, one_user) -> None:
    long = "file:////data/" + "d" * 120 + "/*"  # (the terminal: COLUMNS=80)
    assert invoke("xuser", "set", "x", "--restriction", long).exit_code == 0
    code, said = _pty(one_user, "user", "show", "u1")
    assert code == 0, said
    line = next(s for s in said.splitlines() if s.startswith("restrictions"))
    assert len(line) == 80 and line.endswith("…") and long not in said
    code, said = _pty(one_user, "user", "show", "u1", "-o", "wide")
    assert code == 0 and f"restrictions   {long}" in said.splitlines()


@pytest.mark.parametrize("args", [("user", "add", "u1", "--xuser", "x"),
                                  ("user", "passwd", "ghost"),
                                  ("-au", "u1", "-x", "x"),
                                  ("-mu", "ghost")])
def test_no_password_is_asked_for_a_command_refused_anyway(one_user, args) -> None:
    code, said = _pty(one_user, *args)
    assert "Password" not in said
    assert (code, said.splitlines()[0]) in ((1, f"{ERR}node user 'u1' already exists"),
                                            (5, f"{ERR}no node user 'ghost'")), said
