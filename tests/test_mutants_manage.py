"""Node users and transfer users at the points mutation testing found unchecked: what
each command says it did (the line the CLI prints), that `-m --xuser` really moves a
user, which name a refusal says is bad, the docroot's bounds (4096 characters, C1
controls, `C:/`), the list of users that keep a transfer user (ten named, then a count),
and the machine shape of `xuser show`. In-process, over a store in the test's own home;
one password is hashed, at the cheapest cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodecli.config.model import Config, TransferUser
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from nodecli.errors import ConflictError, NotFoundError, UsageError
from nodecli.users import manage


@pytest.fixture
def store(home: Path) -> ConfigStore:
    s = ConfigStore(resolve_paths(home))
    with s.edit() as cfg:
        cfg.transfer_users["x1"] = TransferUser("x1", ["file:////data/*"])
        cfg.transfer_users["x2"] = TransferUser("x2", [], "/srv")
    return s


def _error(kind, call, *args, **kwargs) -> tuple[str, str | None]:
    with pytest.raises(kind) as exc:
        call(*args, **kwargs)
    return exc.value.message, exc.value.hint


def test_what_each_user_command_says_it_did(store: ConfigStore, monkeypatch) -> None:
    out = manage.add_user(store, "u1", transfer_user="x1", password=None)
    assert (out.message, out.warnings) == ("added node user 'u1' on transfer user 'x1'", [])
    out = manage.modify_user(store, "u1", transfer_user="x2", acl_set=["admin"])
    assert out.message == "changed node user 'u1': transfer user 'x2', ACLs [admin]"
    assert out.data == ["admin"] and out.warnings == []
    assert store.load().users["u1"].transfer_user == "x2"  # really moved
    out = manage.modify_user(store, "u1", transfer_user="new")
    assert out.message == "changed node user 'u1': transfer user 'new'"
    assert out.warnings == [manage.unconfigured_warning("new", recorded=True)]
    out = manage.modify_user(store, "u1", acl_add=["internal"], acl_del=["admin"])
    assert out.message == "changed node user 'u1': ACLs [internal]"
    out = manage.modify_user(store, "u1", acl_add=["admin"])
    assert out.message == "changed node user 'u1': ACLs [internal,admin]"
    assert manage.modify_user(store, "u1").message == "changed node user 'u1': nothing"
    monkeypatch.setattr("nodecli.users.passwords.DEFAULT_LOG_N", 4)
    asked: list[str] = []

    def prompt() -> str:
        asked.append("pw")
        return "pw-1234567"

    out = manage.modify_user(store, "u1", password=prompt)
    assert out.message == "changed node user 'u1': password" and asked == ["pw"]
    assert store.load().users["u1"].password_hash is not None
    assert manage.delete_user(store, "u1").message == "deleted node user 'u1'"


def test_a_prompt_is_never_shown_for_a_doomed_command(store: ConfigStore) -> None:
    def prompt() -> str:
        raise AssertionError("asked for a password")

    manage.add_user(store, "u1", transfer_user="x1", password=None)
    _error(ConflictError, manage.add_user, store, "u1", transfer_user="x1", password=prompt)
    _error(NotFoundError, manage.modify_user, store, "ghost", password=prompt)


def test_a_refusal_names_the_kind_of_name_that_is_bad(store: ConfigStore) -> None:
    for call, args, kwargs, kind in (
        (manage.add_user, (store, "bad name"), {"transfer_user": "x1", "password": None},
         "node user name"),
        (manage.add_user, (store, "u"), {"transfer_user": "bad name", "password": None},
         "transfer user name"),
        (manage.modify_user, (store, "bad name"), {}, "node user name"),
        (manage.delete_user, (store, "bad name"), {}, "node user name"),
        (manage.add_transfer_user, (store, "bad name"), {"docroot": "/x"},
         "transfer user name"),
        (manage.set_transfer_user, (store, "bad name"), {"docroot": "/x"},
         "transfer user name"),
        (manage.delete_transfer_user, (store, "bad name"), {}, "transfer user name"),
        (manage.check_can_add_user, (Config(), "bad name", "x1"), {}, "node user name"),
        (manage.check_can_add_user, (Config(), "u", "bad name"), {}, "transfer user name"),
    ):
        message, _ = _error(UsageError, call, *args, **kwargs)
        assert message.startswith(f"invalid {kind} 'bad name': "), (call, message)
    assert _error(UsageError, manage.validate_name, "bad name")[0].startswith(
        "invalid node user name 'bad name': ")


def test_what_each_transfer_user_command_says_it_did(store: ConfigStore) -> None:
    assert manage.add_transfer_user(store, "x3", docroot="/d").message == (
        "added transfer user 'x3' with docroot '/d'")
    assert manage.add_transfer_user(store, "x4", restrictions=["file:////a/*",
                                                               "file:////b/*"]).message == (
        "added transfer user 'x4' with 2 restriction(s)")
    assert store.load().transfer_users["x4"].name == "x4"
    assert manage.apply_add_transfer_user(Config(), "x5", docroot="/d").name == "x5"
    out = manage.set_transfer_user(store, "x3", restrictions=["file:////c/*"])
    assert out.message == "changed transfer user 'x3'"
    assert out.warnings == ["removed docroot '/d': a transfer user has restrictions OR a "
                            "docroot"]
    out = manage.delete_transfer_user(store, "x4")
    assert (out.message, out.data) == ("deleted transfer user 'x4'", [])
    for n in ("b", "a"):
        manage.add_user(store, n, transfer_user="x3", password=None)
    out = manage.delete_transfer_user(store, "x3", force=True)
    assert out.message == "deleted transfer user 'x3' and its 2 node user(s): a, b"
    assert out.data == ["a", "b"]


def test_a_transfer_user_in_use_is_kept_and_its_users_named(store: ConfigStore) -> None:
    for i in range(11):
        manage.add_user(store, f"u{i:02d}", transfer_user="x1", password=None)
    assert _error(ConflictError, manage.delete_transfer_user, store, "x1") == (
        "transfer user 'x1' is used by 11 node user(s): u00, u01, u02, u03, u04, u05, u06, "
        "u07, u08, u09 and 1 more",
        "move them with 'nodecli user ... ' or delete them too with --force")
    manage.delete_user(store, "u10")
    assert _error(ConflictError, manage.delete_transfer_user, store, "x1")[0] == (
        "transfer user 'x1' is used by 10 node user(s): u00, u01, u02, u03, u04, u05, u06, "
        "u07, u08, u09")
    assert "x1" in store.load().transfer_users


def test_exists_refusals_and_their_hints(store: ConfigStore) -> None:
    manage.add_user(store, "u1", transfer_user="x1", password=None)
    assert _error(ConflictError, manage.add_user, store, "u1", transfer_user="x1",
                  password=None) == (
        "node user 'u1' already exists",
        "change it with 'nodecli -mu u1' or 'nodecli user passwd u1'")
    assert _error(ConflictError, manage.add_transfer_user, store, "x1", docroot="/d") == (
        "transfer user 'x1' already exists", "change it with 'nodecli xuser set x1 ...'")
    assert _error(UsageError, manage.add_transfer_user, store, "x9", docroot="/d",
                  restrictions=["file:////a/*"])[0] == (
        "a transfer user has restrictions OR a docroot, not both")
    assert _error(UsageError, manage.add_transfer_user, store, "x9")[0] == (
        "give --restriction R (one or more) or --docroot PATH")
    assert _error(UsageError, manage.set_transfer_user, store, "x1")[0] == (
        "nothing to change: give --restriction, --add-restriction, --remove-restriction or "
        "--docroot")
    assert _error(ConflictError, manage.set_transfer_user, store, "x2",
                  add_restrictions=["file:////a/*"]) == (
        "transfer user 'x2' has a docroot",
        "replace it with --restriction R (drops the docroot)")
    assert _error(NotFoundError, manage.set_transfer_user, store, "x1",
                  remove_restrictions=["file:////zz/*"])[0] == (
        "transfer user 'x1' has no restriction 'file:////zz/*'")
    assert _error(NotFoundError, manage.show_transfer_user, store, "nope\n")[0] == (
        "no transfer user 'nope\\\\n'")


@pytest.mark.parametrize("change", [
    {"docroot": "/d", "restrictions": ["file:////a/*"]},
    {"docroot": "/d", "add_restrictions": ["file:////a/*"]},
    {"docroot": "/d", "remove_restrictions": ["file:////data/*"]},
])
def test_a_docroot_with_any_restriction_change_is_refused(store: ConfigStore, change) -> None:
    assert _error(UsageError, manage.set_transfer_user, store, "x1", **change)[0] == (
        "a transfer user has restrictions OR a docroot, not both")


def test_a_docroot_switch_empties_the_restrictions(store: ConfigStore) -> None:
    cfg = store.load()
    assert manage.apply_set_transfer_user(cfg, "x1", docroot="/d") == [
        "removed 1 restriction(s): a transfer user has restrictions OR a docroot"]
    assert cfg.transfer_users["x1"].restrictions == []
    manage.set_transfer_user(store, "x1", docroot="/d")
    assert manage.show_transfer_user(store, "x1") == {
        "name": "x1", "restrictions": [], "docroot": "/d", "node_users": [],
        "file_restriction": None}


def test_the_shape_of_users_and_transfer_users(store: ConfigStore) -> None:
    manage.add_user(store, "u1", transfer_user="x2", password=None)
    assert manage.show_transfer_user(store, "x1") == {
        "name": "x1", "restrictions": ["file:////data/*"], "docroot": None, "node_users": [],
        "file_restriction": "|file:////data/*"}
    assert manage.show_transfer_user(store, "x2")["node_users"] == ["u1"]
    assert manage.show_user(store, "u1") == {
        "name": "u1", "transfer_user": "x2", "acls": [], "password_set": False,
        "restrictions": [], "docroot": "/srv"}
    cfg = store.load()
    del cfg.transfer_users["x2"]  # a user whose transfer user is gone (never saved so)
    record = manage.user_record(cfg, "u1")
    assert record["restrictions"] == [] and record["docroot"] is None


def test_the_docroot_bounds() -> None:
    assert manage.validate_docroot("/" + "a" * 4095) == "/" + "a" * 4095
    assert _error(UsageError, manage.validate_docroot, "/" + "a" * 4096)[0] == (
        "the docroot is longer than 4096 characters")
    assert _error(UsageError, manage.validate_docroot, "")[0] == "the docroot is empty"
    for ok in ("/a b", "/a\xa0b", "/a~b", "C:/", "c:\\", "S3://bucket", "z9+.-://x"):
        assert manage.validate_docroot(ok) == ok
    for control in ("\x1f", "\x7f", "\x80", "\x9f"):
        assert _error(UsageError, manage.validate_docroot, f"/a{control}")[0] == (
            "the docroot contains control characters")
    for relative in ("C:", "C:x", "C:XX", "1:/", "data"):
        assert "is not absolute" in _error(UsageError, manage.validate_docroot, relative)[0]
    long = "d" * 70
    assert _error(UsageError, manage.validate_docroot, long)[0] == (
        f"docroot {long[:60]!r} is not absolute: use /path, C:/path or a storage URL such as "
        "file:////data")


def test_unknown_acls_and_blanks_in_a_list() -> None:
    assert manage.parse_acls(["admin,,internal", " ,impersonation"]) == [
        "admin", "internal", "impersonation"]
    bad = "x" * 50
    assert _error(UsageError, manage.parse_acls, f"admin,{bad}")[0] == (
        f"unknown ACL {bad[:40]!r}: use a comma-separated list of admin, impersonation, "
        "internal")


def test_names_shown_in_refusals_are_escaped_and_cut() -> None:
    cfg = Config()
    name = "é" * 100
    shown = "\\xe9" * 20  # escaped, then cut to 80 characters
    assert _error(NotFoundError, manage.get_transfer_user, cfg, name)[0] == (
        f"no transfer user {shown!r}")
    assert _error(NotFoundError, manage.get_user, cfg, 12345)[0] == "no node user '12345'"
    from nodecli.errors import AuthError

    assert _error(AuthError, manage.authenticate, cfg, "ghost", "pw")[0] == (
        "node user 'ghost': wrong user name or password")


def test_a_bad_password_is_refused_with_its_reason(store: ConfigStore) -> None:
    message, _ = _error(UsageError, manage.add_user, store, "u1", transfer_user="x1",
                        password="")
    assert message and message != "None"
    assert "u1" not in store.load().users


def test_the_unconfigured_warning_by_default_is_not_the_recorded_one() -> None:
    assert manage.unconfigured_warning("t") == (
        "transfer user 't' has neither restriction nor docroot yet: set one with "
        "'nodecli xuser set t --restriction R' or '--docroot PATH'")
    cfg = Config()
    manage.apply_add_user(cfg, "u", transfer_user="t", password_hash=None)
    assert cfg.transfer_users["t"] == TransferUser("t")
