"""The config store: atomic, locked, validated, never losing what is stored."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.config.model import Config, NodeUser, TransferUser
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from nodecli.errors import ConfigError, NotFoundError


@pytest.fixture
def store(home) -> ConfigStore:
    return ConfigStore(resolve_paths(home))


def _add(store: ConfigStore, name: str) -> None:
    with store.edit() as cfg:
        cfg.transfer_users.setdefault("aspera", TransferUser("aspera", ["file:////data/*"]))
        cfg.users[name] = NodeUser(name, "aspera")


def test_absent_file_is_empty_config(store):
    assert store.load() == Config()
    assert not Path(store.path).exists()


def test_edit_writes_private_files_and_folders_whatever_the_umask(store):
    old = os.umask(0)
    try:
        _add(store, "alice")
    finally:
        os.umask(old)
    assert stat.S_IMODE(Path(store.path).stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(store.paths.config_dir).stat().st_mode) == 0o700
    assert store.load().users["alice"].transfer_user == "aspera"


def test_previous_version_kept_as_bak_and_restorable(store):
    _add(store, "alice")
    _add(store, "bob")
    assert stat.S_IMODE(Path(store.paths.backup_file).stat().st_mode) == 0o600
    assert set(ConfigStore(store.paths).load().users) == {"alice", "bob"}
    restored = store.restore_backup()
    assert set(restored.users) == {"alice"}
    assert set(store.load().users) == {"alice"}


def test_restore_without_backup_is_not_found(store):
    with pytest.raises(NotFoundError):
        store.restore_backup()


def test_failed_edit_writes_nothing(store):
    _add(store, "alice")
    before = Path(store.path).read_bytes()
    with pytest.raises(RuntimeError), store.edit() as cfg:
        cfg.users.clear()
        raise RuntimeError("boom")
    assert Path(store.path).read_bytes() == before


def test_damaged_file_is_reported_with_line_and_never_overwritten(store):
    _add(store, "alice")
    Path(store.path).write_text('version = 1\n[users.alice\ntransfer_user = "x"\n')
    damaged = Path(store.path).read_bytes()
    with pytest.raises(ConfigError) as exc:
        store.load()
    assert "line 2" in str(exc.value) and str(store.path) in str(exc.value)
    with pytest.raises(ConfigError), store.edit():
        pass
    assert Path(store.path).read_bytes() == damaged


@pytest.mark.parametrize(
    ("toml", "where"),
    [
        ('version = 1\n[users.alice]\ntransfer_user = "xfer9"\n',
         "users -> alice -> transfer_user: unknown transfer user 'xfer9'"),
        ('version = 99\n', "version: unsupported version 99"),
        ('version = "1"\n', "version: must be an integer"),
        ('version = 1\n[transfer_users.t]\nrestrictions = ["ftp://*"]\n',
         "transfer_users -> t -> restrictions -> 0: invalid restriction 'ftp://*'"),
        ('version = 1\n[transfer_users.t]\nrestrictions = ["s3://*"]\ndocroot = "/x"\n',
         "transfer_users -> t: has both restrictions and a docroot"),
        ('version = 1\n[users."-rf"]\ntransfer_user = "t"\n', "users -> -rf: invalid name"),
        ('version = 1\n[transfer_users.t]\n[users.a]\ntransfer_user = "t"\npassword = "clear"\n',
         "users -> a -> password: is not a password hash"),
        ('version = 1\nsurprise = 1\n', "surprise: unknown key"),
    ],
)
def test_invalid_content_names_the_field(store, toml, where):
    Path(store.paths.config_dir).mkdir(parents=True)
    Path(store.path).write_text(toml)
    with pytest.raises(ConfigError) as exc:
        store.load()
    assert where in str(exc.value)


def test_writing_through_a_symlink_is_refused(store, tmp_path):
    target = tmp_path / "elsewhere.toml"
    target.write_text("")
    Path(store.paths.config_dir).mkdir(parents=True)
    Path(store.path).symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link"), store.edit() as cfg:
        cfg.transfer_users["t"] = TransferUser("t")
    assert target.read_text() == ""
    assert not Path(store.paths.backup_file).exists()  # refused before anything was written


def test_restore_swaps_current_and_backup(store):
    _add(store, "alice")
    _add(store, "bob")
    before = Path(store.path).read_bytes()
    store.restore_backup()
    # the version that was current is now the backup: a second restore undoes the first
    assert Path(store.paths.backup_file).read_bytes() == before
    assert set(store.restore_backup().users) == {"alice", "bob"}
    assert Path(store.path).read_bytes() == before


def test_config_size_limit_boundary(store):
    from nodecli.config.store import MAX_CONFIG_BYTES, parse_toml_bytes

    padding = b"# " + b"x" * (MAX_CONFIG_BYTES - 3) + b"\n"
    assert len(padding) == MAX_CONFIG_BYTES
    assert parse_toml_bytes(padding, store.path) == {}
    with pytest.raises(ConfigError, match="larger than"):
        parse_toml_bytes(padding + b"\n", store.path)


def test_large_user_table_round_trips_through_the_store(store):
    with store.edit() as cfg:
        cfg.transfer_users["aspera"] = TransferUser("aspera", ["file:////data/*"])
        for i in range(300):
            name = f"user{i:03d}" if i % 3 else f"mail.{i}@example.com"
            cfg.users[name] = NodeUser(name, "aspera", None, ["admin", "internal"] if i % 2 else [])
    loaded = store.load()
    assert sorted(loaded.users) == sorted(cfg.users)
    assert loaded.users["mail.0@example.com"].transfer_user == "aspera"
    assert loaded.users["user001"].acls == ["admin", "internal"]
    assert loaded.users["user002"].acls == []


def test_an_edit_that_breaks_an_unchanged_user_is_refused(store):
    _add(store, "alice")
    with pytest.raises(ConfigError, match="unknown transfer user 'aspera'"), \
            store.edit() as cfg:
        del cfg.transfer_users["aspera"]  # alice (unchanged) still refers to it
    assert "alice" in store.load().users


def test_model_records_compare_and_show_by_their_fields():
    from nodecli.config.model import NodeProfile, ServiceProfile
    from nodecli.users.manage import Outcome

    a = NodeUser("alice", "aspera", None, ["admin"])
    assert a == NodeUser(name="alice", transfer_user="aspera", acls=["admin"])
    assert a != NodeUser("alice", "aspera") and a != "alice"
    # (the hash never shows in a repr, in a log or a traceback)
    assert repr(a) == "NodeUser(name='alice', transfer_user='aspera', acls=['admin'])"
    with pytest.raises(TypeError):
        hash(a)  # mutable records are not hashable (as dataclasses with eq)
    assert TransferUser("x").restrictions == [] and TransferUser("x").restrictions \
        is not TransferUser("y").restrictions  # a fresh list each
    assert Config() == Config() and Config().users is not Config().users
    assert NodeProfile("n", "https://n") == NodeProfile(name="n", url="https://n",
                                                         insecure=False)
    assert ServiceProfile("s", "https://s").paths == {}
    assert Outcome("done") == Outcome("done", [], None) != Outcome("done", ["w"])


# -- exact messages, hints and the files they name --------------------------------------

_HINT = "fix the file by hand, or run 'nodecli config restore' to bring back the backup"


def test_parse_errors_name_the_source_and_hint_at_restore():
    from nodecli.config.store import parse_config_bytes

    with pytest.raises(ConfigError) as exc:
        parse_config_bytes(b"version = \n", "here.toml")
    assert exc.value.message.startswith("here.toml: invalid TOML: ")
    assert exc.value.hint == _HINT
    with pytest.raises(ConfigError) as exc:
        parse_config_bytes(b"version = 99\n", "there.toml")
    assert exc.value.message.startswith("there.toml: version: unsupported version 99")
    assert exc.value.hint == _HINT
    with pytest.raises(ConfigError) as exc:
        parse_config_bytes(b"\xff", "bin.toml")
    assert exc.value.message == "bin.toml: not UTF-8 text (byte 0)"


def test_saving_an_invalid_model_names_the_config_file(store):
    _add(store, "alice")
    with pytest.raises(ConfigError) as exc, store.edit() as cfg:
        cfg.users["bob"] = NodeUser("bob", "no-such-transfer-user")
    assert exc.value.message.startswith(f"{store.path}: users -> bob -> transfer_user: ")


def test_damaged_backup_is_named_when_restoring(store):
    _add(store, "alice")
    Path(store.paths.backup_file).write_text("version = \n")
    with pytest.raises(ConfigError) as exc:
        store.restore_backup()
    assert exc.value.message.startswith(f"{store.paths.backup_file}: invalid TOML")


def test_restore_without_backup_message(store):
    with pytest.raises(NotFoundError) as exc:
        store.restore_backup()
    assert exc.value.message == f"no backup to restore: {store.paths.backup_file} does not exist"


def test_symlink_refusal_message_and_hint(store, tmp_path):
    target = tmp_path / "elsewhere.toml"
    target.write_text("")
    Path(store.paths.config_dir).mkdir(parents=True)
    Path(store.path).symlink_to(target)
    with pytest.raises(ConfigError) as exc, store.edit() as cfg:
        cfg.transfer_users["t"] = TransferUser("t")
    assert exc.value.message == (f"{store.path}: is a symbolic link; nodecli does not write "
                                 "through links")
    assert exc.value.hint == ("replace the link with the file: cp --remove-destination "
                              f"\"$(readlink -f {store.path})\" {store.path}")


def test_written_file_starts_with_the_header(store):
    _add(store, "alice")
    assert Path(store.path).read_text().startswith(
        "# nodecli configuration. Edit with care: 'nodecli config check' validates it.\n"
        "# Passwords are salted scrypt hashes; profile secrets are not stored here.\n")


def test_stale_temps_of_killed_writers_are_removed_on_the_next_write(store):
    _add(store, "alice")
    stale = Path(store.paths.config_dir) / ".config.toml.999.0123abcd.tmp"
    stale.write_bytes(b"half a config")
    os.utime(stale, (0, 0))
    _add(store, "bob")
    assert not stale.exists()


def test_replace_all_writes_the_config_and_keeps_the_old_one(store):
    _add(store, "alice")
    before = Path(store.path).read_bytes()
    cfg = store.load()
    cfg.users.pop("alice")
    store.replace_all(cfg)
    assert set(store.load().users) == set()
    assert Path(store.paths.backup_file).read_bytes() == before


def test_user_add_hashes_and_reports_errors_in_order(store):
    from nodecli.errors import UsageError
    from nodecli.users.manage import add_user, modify_user
    from nodecli.users.passwords import verify_password

    _add(store, "alice")
    add_user(store, "bob", transfer_user="aspera", password="s3cret-pw!")
    modify_user(store, "alice", password="an0ther-pw!")
    users = store.load().users
    assert verify_password("s3cret-pw!", users["bob"].password_hash)
    assert verify_password("an0ther-pw!", users["alice"].password_hash)
    before = Path(store.path).read_bytes()
    Path(store.path).write_bytes(before + b"\n[users.x\n")  # damaged from here on
    with pytest.raises(UsageError, match="empty"):  # the password's problem comes first
        add_user(store, "carol", transfer_user="aspera", password="")
    with pytest.raises(ConfigError, match="invalid TOML"):
        add_user(store, "carol", transfer_user="aspera", password="s3cret-pw!")
    assert Path(store.path).read_bytes() == before + b"\n[users.x\n"


def test_the_backup_is_a_copy_of_its_own(store, tmp_path):
    _add(store, "alice")
    first = Path(store.path).read_bytes()
    other = Path(store.paths.config_dir) / "mine.toml"
    os.link(store.path, other)  # the user's own second name for the file
    _add(store, "bob")
    bak = Path(store.paths.backup_file)
    assert bak.read_bytes() == first == other.read_bytes()
    assert bak.stat().st_ino not in (other.stat().st_ino, Path(store.path).stat().st_ino)
    assert stat.S_IMODE(bak.stat().st_mode) == 0o600
    assert not [p.name for p in Path(store.paths.config_dir).iterdir() if p.name.endswith(".tmp")]


def _temp(path: str) -> str:
    """A temporary name of fsutil.temp_name without its random part: ``.NAME.tmp``."""
    import re

    return re.sub(r"\.(\d+)\.[0-9a-f]{8}\.tmp$", ".tmp", path)


def _fsync_targets(monkeypatch) -> list[tuple[str, str]]:
    """Record, in order, each fsync (with the file or folder it syncs) and each rename."""
    from nodecli import fsutil

    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", _temp(os.readlink(f"/proc/self/fd/{fd}"))))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("rename", f"{_temp(os.fspath(src))} -> {os.fspath(dst)}"))
        return real_replace(src, dst)

    monkeypatch.setattr(fsutil.os, "fsync", fsync)
    monkeypatch.setattr(fsutil.os, "replace", replace)
    return events


def test_a_durable_write_syncs_the_file_then_renames_then_syncs_the_folder(tmp_path,
                                                                           monkeypatch):
    from nodecli.fsutil import atomic_write, temp_name

    target = tmp_path / "f.toml"
    events = _fsync_targets(monkeypatch)
    atomic_write(target, b"data")
    tmp = _temp(temp_name(target))
    assert events == [("fsync", tmp), ("rename", f"{tmp} -> {target}"),
                      ("fsync", str(tmp_path))]
    assert target.read_bytes() == b"data"


def test_a_config_save_is_durable_in_order_with_its_backup_before_the_rename(store,
                                                                          monkeypatch):
    from nodecli.fsutil import temp_name

    _add(store, "alice")
    events = _fsync_targets(monkeypatch)
    _add(store, "bob")
    cfg_tmp, bak_tmp = _temp(temp_name(store.path)), _temp(temp_name(store.paths.backup_file))
    folder = str(store.paths.config_dir)
    durable = [e for e in events if "config.cache" not in e[1]]  # (the cache: no syncs)
    assert durable == [
        ("fsync", cfg_tmp),  # the new config, written and synced first
        ("fsync", bak_tmp), ("rename", f"{bak_tmp} -> {store.paths.backup_file}"),
        ("fsync", folder),  # the backup, in place
        ("rename", f"{cfg_tmp} -> {store.path}"), ("fsync", folder),  # then the config
    ]


@pytest.mark.parametrize("fails", ["config", "backup"])
def test_a_save_that_cannot_write_changes_nothing_and_restore_still_undoes(store, monkeypatch,
                                                                           fails):
    """A full disk while the new config or the backup is written: config.toml, its
    backup and the undo of the last change are as they were."""
    import errno

    from nodecli import fsutil
    from nodecli.fsutil import temp_name

    _add(store, "alice")
    _add(store, "bob")  # the backup holds alice alone
    before = Path(store.path).read_bytes()
    backup = Path(store.paths.backup_file).read_bytes()
    doomed = _temp(temp_name(store.path if fails == "config" else store.paths.backup_file))
    real = fsutil._write_all

    def full_disk(fd, data):
        if _temp(os.readlink(f"/proc/self/fd/{fd}")) == doomed:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(fsutil, "_write_all", full_disk)
    with pytest.raises(OSError, match="No space left") as exc:
        _add(store, "carol")
    assert exc.value.filename in (str(store.path), str(store.paths.backup_file))
    monkeypatch.undo()
    assert Path(store.path).read_bytes() == before
    assert Path(store.paths.backup_file).read_bytes() == backup
    assert [p for p in os.listdir(store.paths.config_dir) if p.endswith(".tmp")] == []
    assert set(store.restore_backup().users) == {"alice"}  # the undo of adding bob


_names = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,12}", fullmatch=True)
_acls = st.lists(st.sampled_from(["admin", "impersonation", "internal"]), unique=True)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(xusers=st.dictionaries(_names, st.one_of(
           st.tuples(st.lists(st.sampled_from(["file:////data/*", "s3://*", "!gs://*"]),
                              min_size=1, max_size=3), st.none()),
           st.tuples(st.just([]), st.sampled_from(["/srv/x", "/d é"])),
           st.tuples(st.just([]), st.none())), min_size=1, max_size=4),
       users=st.dictionaries(_names, st.tuples(
           st.sampled_from([None, "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0"
                                  "$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo"]), _acls), max_size=6))
def test_a_save_then_a_load_gives_back_the_same_configuration(store, xusers, users):
    names = sorted(xusers)
    with store.edit() as cfg:
        cfg.transfer_users.clear()
        cfg.users.clear()
        for name, (restrictions, docroot) in xusers.items():
            cfg.transfer_users[name] = TransferUser(name, restrictions, docroot)
        for i, (name, (phc, acls)) in enumerate(sorted(users.items())):
            cfg.users[name] = NodeUser(name, names[i % len(names)], phc, acls)
        want = Config(**{f: getattr(cfg, f) for f in ("transfer_users", "users")})
    Path(store.cache_path).unlink(missing_ok=True)
    assert store.load() == want  # parsed from the file
    assert store.load() == want  # and from the cache
