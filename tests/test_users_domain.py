"""The users domain directly: hostile input only ever raises our documented errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecli.config.model import Config, TransferUser
from nodecli.errors import ConflictError, NodecliError, NotFoundError, UsageError
from nodecli.users import manage as users
from nodecli.users import user_data


def _cfg() -> Config:
    cfg = Config()
    cfg.transfer_users["aspera"] = TransferUser("aspera", ["s3://*"])
    users.apply_add_user(cfg, "usr1", transfer_user="aspera", password_hash=None)
    return cfg


@settings(max_examples=300)
@given(st.text(max_size=150), st.text(max_size=40))
def test_hostile_names_and_acls_raise_only_usage_errors(name, acls):
    cfg = _cfg()
    before = cfg.to_dict()
    try:
        users.apply_add_user(cfg, name, transfer_user="aspera", password_hash=None,
                             acls=users.parse_acls(acls))
    except (UsageError, ConflictError):
        assert cfg.to_dict() == before  # nothing half-done
    else:
        assert name in cfg.users
        Config.from_dict(cfg.to_dict())  # what was accepted can be stored and read back


@settings(max_examples=200)
@given(st.text(max_size=200))
def test_hostile_docroots_and_restrictions(text):
    cfg = _cfg()
    for kwargs in ({"docroot": text}, {"restrictions": [text]}):
        try:
            users.apply_add_transfer_user(cfg, "new", **kwargs)
        except UsageError as exc:
            assert "\n" not in str(exc)
        else:
            Config.from_dict(cfg.to_dict())
            del cfg.transfer_users["new"]


@settings(max_examples=200)
@given(st.binary(max_size=300))
def test_hostile_import_files_raise_config_error(raw):
    try:
        user_data.parse_export(raw, "f.json")
    except NodecliError as exc:
        assert exc.exit_code == 3


def test_modify_delete_missing():
    cfg = _cfg()
    with pytest.raises(NotFoundError):
        users.apply_modify_user(cfg, "ghost", acl_add=["admin"])
    with pytest.raises(NotFoundError):
        users.apply_delete_user(cfg, "ghost")
    with pytest.raises(NotFoundError):
        users.apply_delete_transfer_user(cfg, "ghost")


def test_acl_parsing():
    assert users.parse_acls("admin, internal,admin,,") == ["admin", "internal"]
    assert users.parse_acls(["admin", "impersonation"]) == ["admin", "impersonation"]
    assert users.parse_acls("") == []
    with pytest.raises(UsageError):
        users.parse_acls("admin,root")


@pytest.mark.parametrize("docroot", ["/srv", "C:/data", "c:\\data", "file:////data",
                                     "s3://bucket/x"])
def test_docroot_forms_accepted(docroot):
    assert users.validate_docroot(docroot) == docroot


def test_authenticate():
    from nodecli.errors import AuthError
    from nodecli.users.passwords import hash_password

    cfg = _cfg()
    cfg.users["usr1"].password_hash = hash_password("right", log_n=4)
    assert users.authenticate(cfg, "usr1", "right").name == "usr1"
    messages = set()
    for name, pw in (("usr1", "wrong"), ("ghost", "right"), ("usr1", "")):
        with pytest.raises(AuthError) as exc:
            users.authenticate(cfg, name, pw)
        messages.add(str(exc.value).replace("ghost", "usr1"))
    assert len(messages) == 1  # no hint whether the user exists
