"""An edit of one node user (``ConfigStore.edit(user=NAME)``) writes that user's table
into the file's bytes instead of writing every user again. It must be invisible: the
same config bytes, the same cache and backup, and the same errors as the edit that
writes everything, whatever the configuration and whatever the edit (twin stores,
one edited each way, compared after every step)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.config import Config, ConfigStore, NodeUser, TransferUser, resolve_paths
from nodecli.config import writer as writer_module
from nodecli.config.model import KNOWN_ACLS
from nodecli.config.writer import dump_config
from nodecli.errors import NodecliError
from nodecli.users import apply_add_user, apply_delete_user, apply_modify_user
from tests.test_config_cmd import _hash, _name, configs

OTHER_HASH = ("$scrypt$ln=14,r=8,p=2$AAAAAAAAAAAAAAAAAAAAAA"
              "$BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB")
# mostly valid values; now and then one a load would refuse
_hashes = st.one_of(st.none(), _hash, st.just(OTHER_HASH), st.none(), _hash,
                    st.sampled_from(["-", "plain", "$scrypt$ln=99,r=8,p=1$x$y"]))
_acls = st.lists(st.sampled_from([*KNOWN_ACLS, *KNOWN_ACLS, "bogus"]), max_size=3)


@st.composite
def edits(draw, cfg: Config) -> tuple:
    """One edit of one node user: its kind, the user's name and its arguments."""
    names = sorted(cfg.users)
    name = draw(st.sampled_from(names) | st.sampled_from(names) | _name if names else _name)
    xusers = sorted(cfg.transfer_users)
    xuser = draw(st.sampled_from(xusers) | st.sampled_from(xusers) | _name
                 if xusers else _name)
    kind = draw(st.sampled_from(["add", "modify", "delete"]))
    if kind == "add":
        return kind, name, {"transfer_user": xuser, "password_hash": draw(_hashes),
                            "acls": draw(_acls)}
    if kind == "modify":
        return kind, name, {
            "password_hash": draw(st.one_of(st.none(), _hashes)),
            "transfer_user": draw(st.one_of(st.none(), st.just(xuser))),
            "acl_set": draw(st.one_of(st.none(), _acls)),
            "acl_add": draw(_acls), "acl_del": draw(_acls)}
    return kind, name, {}


def _apply(store: ConfigStore, edit: tuple, one_user: bool) -> str | None:
    """Run ``edit``; the error it ends with as text (None: it succeeded)."""
    kind, name, args = edit
    apply = {"add": apply_add_user, "modify": apply_modify_user,
             "delete": apply_delete_user}[kind]
    try:
        with store.edit(user=name if one_user else None) as cfg:
            apply(cfg, name, **args)
    except NodecliError as exc:
        return f"{type(exc).__name__}: {exc}".replace(store.paths.config_dir, "HOME")
    return None


def _files(store: ConfigStore) -> list[bytes | None]:
    def read(path: str) -> bytes | None:
        return Path(path).read_bytes() if Path(path).exists() else None

    return [read(store.path), read(store.paths.backup_file), read(store.cache_path)]


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_an_edit_of_one_user_writes_what_writing_everything_writes(data):
    cfg = data.draw(configs())
    if cfg.transfer_users:  # more users than configs() makes: more neighbours
        xusers = st.sampled_from(sorted(cfg.transfer_users))
        for name in data.draw(st.lists(_name, max_size=8, unique=True)):
            cfg.users.setdefault(name, NodeUser(
                name, data.draw(xusers), data.draw(st.none() | _hash),
                data.draw(st.lists(st.sampled_from(KNOWN_ACLS), unique=True))))
    hand_written = data.draw(st.booleans())  # not the writer's bytes: nothing is spliced
    with tempfile.TemporaryDirectory() as tmp:
        spliced = ConfigStore(resolve_paths(Path(tmp) / "spliced"))
        whole = ConfigStore(resolve_paths(Path(tmp) / "whole"))
        with spliced.locked():
            spliced.save_unlocked(cfg)
        if hand_written:
            Path(spliced.path).write_bytes(dump_config(cfg) + b"# by hand\n")
            spliced.load()  # (caches it as read)
        shutil.copytree(spliced.paths.config_dir, whole.paths.config_dir,
                        dirs_exist_ok=True)
        for _ in range(data.draw(st.integers(1, 4))):
            edit = data.draw(edits(spliced.load()))
            assert _apply(spliced, edit, True) == _apply(whole, edit, False), edit
            assert _files(spliced) == _files(whole), edit
        assert spliced.load() == whole.load()


def _big(store: ConfigStore, n: int = 40) -> None:
    with store.edit() as cfg:
        cfg.transfer_users["aspera"] = TransferUser("aspera", ["file:////data/*"])
        for i in range(0, 2 * n, 2):
            cfg.users[f"u{i:03d}"] = NodeUser(f"u{i:03d}", "aspera", None, ["admin"])


@pytest.fixture
def store(home) -> ConfigStore:
    return ConfigStore(resolve_paths(home))


def _spy(monkeypatch) -> list[object]:
    """What each splice answered (its data replaced by "data")."""
    answers: list[object] = []
    real = writer_module.splice_user

    def spy(*args, **kwargs):
        answer = real(*args, **kwargs)
        answers.append("data" if isinstance(answer, tuple) else answer)
        return answer

    monkeypatch.setattr(writer_module, "splice_user", spy)
    return answers


def test_the_writers_bytes_are_spliced_and_anything_else_is_written_whole(store, monkeypatch):
    _big(store)
    answers = _spy(monkeypatch)
    for name in ("u001", "u999", "a", "u041"):  # between, after the last, first, middle
        with store.edit(user=name) as cfg:
            apply_add_user(cfg, name, transfer_user="aspera", password_hash=None)
    with store.edit(user="u002") as cfg:
        apply_modify_user(cfg, "u002", acl_add=["impersonation"])
    with store.edit(user="u002") as cfg:
        apply_modify_user(cfg, "u002", acl_add=["impersonation"])  # no change
    for name in ("u000", "u999", "u041"):
        with store.edit(user=name) as cfg:
            apply_delete_user(cfg, name)
    assert answers == ["data"] * 5 + [writer_module.UNCHANGED] + ["data"] * 3
    # a file edited by hand is read and written whole, once
    Path(store.path).write_bytes(Path(store.path).read_bytes() + b"# by hand\n")
    answers.clear()
    for name in ("b", "c"):
        with store.edit(user=name) as cfg:
            apply_add_user(cfg, name, transfer_user="aspera", password_hash=None)
    assert answers == ["data"]
    # another table changed (a transfer user recorded by the add): written whole
    with store.edit(user="d") as cfg:
        apply_add_user(cfg, "d", transfer_user="newx", password_hash=None)
    assert answers == ["data"] and "newx" in store.load().transfer_users
    # another user changed too, which the caller said it would not do: written whole
    with store.edit(user="e") as cfg:
        apply_add_user(cfg, "e", transfer_user="aspera", password_hash=None)
        del cfg.users["b"]
    assert answers == ["data", None]
    assert "b" not in store.load().users and "e" in store.load().users
