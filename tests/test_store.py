"""The config store: atomic, locked, validated, never losing what is stored."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.config import Config, ConfigStore, NodeUser, TransferUser, resolve_paths
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


def test_backup_is_the_previous_file_under_a_second_name(store):
    _add(store, "alice")
    first = Path(store.path).read_bytes()
    first_inode = Path(store.path).stat().st_ino
    _add(store, "bob")
    bak = Path(store.paths.backup_file)
    assert bak.read_bytes() == first
    assert bak.stat().st_ino == first_inode != Path(store.path).stat().st_ino
    assert stat.S_IMODE(bak.stat().st_mode) == 0o600
    assert not [p.name for p in Path(store.paths.config_dir).iterdir() if p.name.endswith(".tmp")]


def test_backup_is_a_copy_when_the_config_has_other_names(store, tmp_path):
    _add(store, "alice")
    other = Path(store.paths.config_dir) / "mine.toml"
    os.link(store.path, other)  # the user's own second name for the file
    _add(store, "bob")
    bak = Path(store.paths.backup_file)
    assert bak.read_bytes() == other.read_bytes()
    assert bak.stat().st_ino != other.stat().st_ino  # editing mine.toml leaves .bak alone
    assert other.stat().st_nlink == 1


_acl_or_junk = st.one_of(st.sampled_from(["admin", "internal", "impersonation", "root", ""]),
                         st.integers(), st.none(), st.lists(st.text(max_size=2), max_size=1))
_user_entry = st.one_of(
    st.fixed_dictionaries(
        {"transfer_user": st.sampled_from(["aspera", "nobody"])},
        optional={"password": st.sampled_from([
            "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
            "$scrypt$ln=21,r=8,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo",
            "plain", 7]),
            "acls": st.one_of(st.lists(_acl_or_junk, max_size=3), st.text(max_size=3)),
            "extra": st.just(1)}),
    st.integers(), st.text(max_size=3))


@settings(max_examples=400, deadline=None)
@given(users=st.dictionaries(st.one_of(st.sampled_from(["alice", "bob", "c.d@e", "-x", "a b"]),
                                       st.text(max_size=4)), _user_entry, max_size=5))
def test_user_tables_load_as_the_general_reader_loads_them(users):
    """The inline [users] checks accept and refuse exactly what the general reader does,
    with the same message (the reader is run entry by entry as the reference)."""
    from nodecli.config.model import ModelError, _read_user, _Reader

    data = {"version": 1, "transfer_users": {"aspera": {"restrictions": ["file:////*"]}},
            "users": users}
    try:
        got: object = Config.from_dict(data).users
    except ModelError as exc:
        got = exc.text
    cfg = Config(transfer_users={"aspera": TransferUser("aspera", ["file:////*"])})
    try:
        want: object = {name: _read_user(r, name, cfg)
                        for name, r in _Reader(data, []).tables("users")}
    except ModelError as exc:
        want = exc.text
    assert got == want


@settings(max_examples=500, deadline=None)
@given(ln=st.integers(0, 99), r=st.integers(0, 99), p=st.integers(0, 99),
       width=st.sampled_from(["{:d}", "{:02d}", "{:03d}"]),
       salt=st.text("A+/z9", max_size=90), digest=st.text("A+/z9=", max_size=90),
       tail=st.sampled_from(["", "\n", " "]))
def test_password_hash_shape_check_has_one_answer(ln, r, p, width, salt, digest, tail):
    import re

    from nodecli.passwords import _PHC, is_valid_hash

    phc = (f"$scrypt$ln={width.format(ln)},r={width.format(r)},p={width.format(p)}"
           f"${salt}${digest}{tail}")
    m = re.match(_PHC, phc)
    # the bounds verify_password computes within (ln <= 20, r <= 32, p <= 16)
    general = (bool(m) and 1 <= int(m["ln"]) <= 20 and 1 <= int(m["r"]) <= 32
               and 1 <= int(m["p"]) <= 16)
    assert is_valid_hash(phc) == general


_xuser_names = st.sampled_from(["aspera", "xfer", "gone"])
_HASH = ("$scrypt$ln=15,r=8,p=1$5Qvheb8IBxDGm/PNAybueA"
         "$tUU+cdQGfZf/fBrvRGTqNUt9W7OGi0klxagbk/FDZ/c")
_user_dicts = st.fixed_dictionaries(
    {"transfer_user": _xuser_names},
    optional={"acls": st.lists(st.sampled_from(["admin", "internal", "root"]), max_size=2),
              "password": st.sampled_from(["$bad", "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0$"
                                                   "aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo"])})


_any_name = st.sampled_from(["u1", "u2", "a.b", "x@y.org", "p+q", "-x", "a b", "é", "",
                             "n\n", "a" * 129, "Z_9"])


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(users=st.dictionaries(_any_name, st.tuples(
           _xuser_names, st.sampled_from([None, "$bad", "-", _HASH, _HASH + " ", ""]),
           st.lists(st.sampled_from(["admin", "internal", "root", "", "a,b", "admin "]),
                    max_size=2)), max_size=4),
       xusers=st.sets(_xuser_names, min_size=1),
       both=st.booleans(), node_url=st.sampled_from([None, "https://h", "ftp://h"]))
def test_a_save_refuses_and_writes_exactly_what_the_general_path_does(
        store, users, xusers, both, node_url):
    """The column-wise check and template writer of a save against the general ones:
    the same refusal and message, or the same bytes."""
    from nodecli.config.model import NodeProfile
    from nodecli.config.store import validate_config_data
    from nodecli.config.writer import _dump_plain

    cfg = Config(transfer_users={x: TransferUser(x, ["file:////*"], "/d" if both else None)
                                 for x in sorted(xusers)},
                 users={n: NodeUser(n, x, p, list(a)) for n, (x, p, a) in users.items()})
    if node_url:
        cfg.nodes["n"] = NodeProfile("n", node_url)
    plain = cfg.to_dict()
    try:
        validate_config_data(plain, store.path)
    except ConfigError as exc:
        with pytest.raises(ConfigError) as got:
            store._checked_bytes(cfg)
        assert (got.value.message, got.value.hint) == (exc.message, exc.hint)
        return
    import tomli_w

    from nodecli.config.writer import _HEADER

    written = store._checked_bytes(cfg)[0]
    assert written == _dump_plain(plain) == (_HEADER + tomli_w.dumps(plain)).encode()


def test_an_edit_that_breaks_an_unchanged_user_is_refused(store):
    _add(store, "alice")
    with pytest.raises(ConfigError, match="unknown transfer user 'aspera'"), \
            store.edit() as cfg:
        del cfg.transfer_users["aspera"]  # alice (unchanged) still refers to it
    assert "alice" in store.load().users


def test_model_records_compare_and_show_by_their_fields():
    from nodecli.config.model import NodeProfile, ServiceProfile
    from nodecli.users import Outcome

    a = NodeUser("alice", "aspera", None, ["admin"])
    assert a == NodeUser(name="alice", transfer_user="aspera", acls=["admin"])
    assert a != NodeUser("alice", "aspera") and a != "alice"
    assert repr(a) == "NodeUser(name='alice', transfer_user='aspera', password_hash=None, " \
                      "acls=['admin'])"
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


def test_backup_link_temp_name_is_one_the_stale_cleanup_knows(store, monkeypatch):
    from nodecli.fsutil import remove_stale_temps

    _add(store, "alice")
    real_link = os.link
    names: list[str] = []

    def spy(src, dst, **kw):
        names.append(os.path.basename(dst))
        return real_link(src, dst, **kw)

    monkeypatch.setattr(os, "link", spy)
    _add(store, "bob")
    monkeypatch.undo()
    assert len(names) == 1
    left = Path(store.paths.config_dir) / names[0]
    left.write_bytes(b"")  # as a writer killed between link and rename would leave it
    os.utime(left, (0, 0))
    names = [Path(store.path).name, Path(store.paths.backup_file).name]
    assert remove_stale_temps(store.paths.config_dir, names) == [str(left)]


@pytest.mark.parametrize("shape", ["all with passwords", "some without", "quoted names"])
def test_the_users_template_writes_what_tomli_w_writes(store, shape):
    import tomli_w

    from nodecli.config.writer import _HEADER

    acls = [[], ["admin"], ["admin", "internal"], ["impersonation", "internal", "admin"]]
    cfg = Config(transfer_users={"aspera": TransferUser("aspera", ["file:////*"]),
                                 "web": TransferUser("web", [], "/srv")})
    for i in range(60):
        name = f"u{i:03d}" if shape != "quoted names" or i % 7 else f"mail.{i}@x.org"
        password = None if shape == "some without" and i % 5 == 0 else _HASH
        cfg.users[name] = NodeUser(name, "web" if i % 3 else "aspera", password, acls[i % 4])
    with store.locked():
        store.save_unlocked(cfg)
    assert Path(store.path).read_bytes() == (_HEADER + tomli_w.dumps(cfg.to_dict())).encode()
    assert store.load() == cfg


# -- preloading (a password hash runs while the config is read) and large saves ----------


def test_a_preload_is_used_only_while_the_file_is_unchanged_and_only_once(store):
    _add(store, "alice")
    first = store.preload()
    assert first is not None and set(first.cfg.users) == {"alice"}
    with store.edit(first) as cfg:  # the file is as it was read: that Config is edited
        assert cfg is first.cfg
        cfg.users["bob"] = NodeUser("bob", "aspera")
    with store.edit(first) as cfg:  # used once: a fresh read, with bob
        assert cfg is not first.cfg and set(cfg.users) == {"alice", "bob"}
    stale = store.preload()
    _add(store, "carol")  # another writer in between
    with store.edit(stale) as cfg:  # the bytes differ: read again, carol is not lost
        cfg.users["dave"] = NodeUser("dave", "aspera")
    assert set(store.load().users) == {"alice", "bob", "carol", "dave"}


def test_a_preload_of_a_damaged_config_is_none_and_the_edit_reports_it(store):
    _add(store, "alice")
    Path(store.path).write_text("version = 1\n[users.x\n")
    assert store.preload() is None
    with pytest.raises(ConfigError, match="invalid TOML"), store.edit():
        pytest.fail("the block ran on a damaged config")


def test_user_add_hashes_while_reading_and_reports_errors_in_the_same_order(store):
    from nodecli.errors import UsageError
    from nodecli.passwords import verify_password
    from nodecli.users import add_user, modify_user

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


def _many_users(store: ConfigStore, count: int) -> None:
    with store.edit() as cfg:
        cfg.transfer_users["aspera"] = TransferUser("aspera", ["file:////data/*"])
        for i in range(count):
            cfg.users[f"u{i:05d}"] = NodeUser(f"u{i:05d}", "aspera", None, ["admin"])


def test_a_large_save_writes_the_config_and_its_cache(store):
    from nodecli.config.store import OVERLAP_BYTES

    _many_users(store, 5000)
    raw = Path(store.path).read_bytes()
    assert len(raw) >= OVERLAP_BYTES  # the save that wrote it overlapped the two writes
    assert store._cached_parts(raw) is not None  # the cache is for exactly these bytes
    _add(store, "zed")
    raw = Path(store.path).read_bytes()
    assert b"[users.zed]" in raw and store._cached_parts(raw) is not None
    assert len(store.load().users) == 5001


def test_a_large_save_that_cannot_write_raises_and_changes_nothing(store, monkeypatch):
    import errno

    from nodecli.config import store as store_module

    _many_users(store, 5000)
    before = Path(store.path).read_bytes()
    real = store_module.atomic_write

    def full_disk(path, data, *args, **kwargs):
        if path == store.path:
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real(path, data, *args, **kwargs)

    monkeypatch.setattr(store_module, "atomic_write", full_disk)
    with pytest.raises(OSError, match="No space left"):
        _add(store, "zed")
    monkeypatch.undo()
    assert Path(store.path).read_bytes() == before
    assert "zed" not in store.load().users  # (the cache written meanwhile is not used)


def test_a_large_save_whose_backup_fails_raises_and_changes_nothing(store, monkeypatch):
    """The large file is written beside the .bak being made; it takes the config's name
    only once the .bak is in place, so a .bak that cannot be made cancels the write."""
    import errno

    _many_users(store, 5000)
    _add(store, "yan")  # (so that there is a .bak: the next one replaces it)
    before = Path(store.path).read_bytes()
    backup = Path(store.paths.backup_file).read_bytes()
    cache = Path(store.cache_path).read_bytes()

    def broken_disk(self, old):
        assert Path(store.path).read_bytes() == before  # (not replaced before the .bak)
        raise OSError(errno.EIO, "Input/output error", store.paths.backup_file)

    monkeypatch.setattr(ConfigStore, "_keep_as_backup", broken_disk)
    with pytest.raises(OSError, match="Input/output error"):
        _add(store, "zed")
    monkeypatch.undo()
    assert Path(store.path).read_bytes() == before
    assert Path(store.paths.backup_file).read_bytes() == backup
    assert Path(store.cache_path).read_bytes() == cache
    assert [p for p in os.listdir(store.paths.config_dir) if p.endswith(".tmp")] == []
    _add(store, "zed")  # and the next write works
    assert "zed" in store.load().users
    assert Path(store.paths.backup_file).read_bytes() == before
