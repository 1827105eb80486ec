"""`nodecli config ...`: path, check, restore, export, import; and the save/load round trip."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.config.model import (
    KNOWN_ACLS,
    Config,
    NodeProfile,
    NodeUser,
    ServiceProfile,
    TransferUser,
)
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore, dump_config, parse_config_bytes
from nodecli.users.user_data import dump_export, parse_export


def _store(home) -> ConfigStore:
    return ConfigStore(resolve_paths(home))


def _populate(invoke):
    assert invoke("xuser", "add", "aspera", "-r", "file:////data/*").exit_code == 0
    assert invoke("xuser", "add", "legacy", "--docroot", "/srv").exit_code == 0
    assert invoke("-au", "usr1", "-x", "aspera", "-p", "pw1", "--acl-set", "admin").exit_code == 0
    assert invoke("-au", "usr2", "-x", "legacy", "-p", "pw2").exit_code == 0


def test_path(invoke, home):
    r = invoke("config", "path", "-o", "json")
    data = json.loads(r.stdout)
    assert data["config"] == str(home / "config.toml")
    assert data["backup"] == str(home / "config.toml.bak")
    assert data["keys"] == str(home / "keys")
    r = invoke("config", "path")
    assert str(home / "config.toml") in r.stdout
    r = invoke("--home", str(home / "other"), "config", "path", "-o", "json")
    assert json.loads(r.stdout)["config"] == str(home / "other" / "config.toml")


def test_path_of_one_location_is_the_bare_path(invoke, home):
    every = json.loads(invoke("config", "path", "-o", "json").stdout)
    for name in ("config", "backup", "secrets", "keys", "state"):
        r = invoke("config", "path", name)
        assert r.exit_code == 0
        assert r.stdout == every[name] + "\n"
    r = invoke("config", "path", "nowhere")
    assert r.exit_code == 2 and r.stdout == ""


def test_check_ok_missing_and_damaged(invoke, home):
    r = invoke("config", "check")
    assert r.exit_code == 0 and "no config yet" in r.stderr
    _populate(invoke)
    r = invoke("config", "check")
    assert r.exit_code == 0 and "ok: 2 node user(s), 2 transfer user(s)" in r.stderr
    path = Path(_store(home).path)
    path.write_text(path.read_text().replace('transfer_user = "legacy"', 'transfer_user = 7'))
    damaged = path.read_bytes()
    r = invoke("config", "check")
    assert r.exit_code == 3
    assert r.stderr.splitlines()[0] == (
        f"nodecli: error: {path}: users -> usr2 -> transfer_user: must be a string")
    path.write_text("version = 1\n[users\n")
    r = invoke("config", "check")
    assert r.exit_code == 3 and "line 2" in r.stderr
    path.write_bytes(damaged)
    assert Path(_store(home).path).read_bytes() == damaged


def test_restore_brings_back_previous_version(invoke, home):
    _populate(invoke)
    invoke("-du", "usr2")
    r = invoke("config", "restore")
    assert r.exit_code == 0, r
    assert set(_store(home).load().users) == {"usr1", "usr2"}
    r = invoke("config", "restore")  # swaps again
    assert set(_store(home).load().users) == {"usr1"}


def test_restore_without_backup(invoke):
    r = invoke("config", "restore")
    assert r.exit_code == 5 and "no backup" in r.stderr


def test_export_import_replace_and_merge(invoke, home, tmp_path):
    _populate(invoke)
    out = tmp_path / "export.json"
    r = invoke("config", "export", str(out))
    assert r.exit_code == 0, r
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    exported = out.read_bytes()
    # refuses to overwrite without --force
    r = invoke("config", "export", str(out))
    assert r.exit_code == 1 and "--force" in r.stderr
    assert invoke("config", "export", str(out), "--force").exit_code == 0
    # stdout
    r = invoke("config", "export", "-")
    assert r.stdout.encode() == exported
    # change things, then import (replace)
    invoke("-du", "usr1")
    invoke("-au", "usr3", "-x", "aspera", "-p", "pw3")
    before = (home / "config.toml").read_bytes()
    r = invoke("config", "import", str(out))  # replacing users asks; no terminal: --yes
    assert r.exit_code == 2 and "--yes (or --merge)" in r.stderr
    r = invoke("config", "import", "-", input=exported.decode())
    assert r.exit_code == 2 and "from stdin needs --yes" in r.stderr
    assert (home / "config.toml").read_bytes() == before
    r = invoke("config", "import", str(out), "--yes")
    assert r.exit_code == 0, r
    assert set(_store(home).load().users) == {"usr1", "usr2"}
    # merge keeps the others
    invoke("-au", "usr4", "-x", "aspera", "-p", "pw4")
    r = invoke("config", "import", "--merge", "-", input=exported.decode())
    assert r.exit_code == 0, r
    assert set(_store(home).load().users) == {"usr1", "usr2", "usr4"}


def test_import_keeps_profiles(invoke, home, tmp_path):
    _populate(invoke)
    out = tmp_path / "e.json"
    invoke("config", "export", str(out))
    with _store(home).edit() as cfg:
        cfg.nodes["prod"] = NodeProfile("prod", "https://node:9092")
    assert invoke("config", "import", str(out), "-y").exit_code == 0
    assert "prod" in _store(home).load().nodes


def test_bad_import_files_exit_3_and_change_nothing(invoke, home, tmp_path):
    _populate(invoke)
    before = Path(_store(home).path).read_bytes()
    cases = {
        "notjson": b"{nope",
        "other": b'{"format": "something", "version": 1}',
        "future": b'{"format": "nodecli-user-data", "version": 2}',
        "clear": json.dumps({"format": "nodecli-user-data", "version": 1,
                             "transfer_users": {"t": {}},
                             "users": {"u": {"transfer_user": "t",
                                             "password": "clear"}}}).encode(),
        "dangling": json.dumps({"format": "nodecli-user-data", "version": 1,
                                "users": {"u": {"transfer_user": "nope"}}}).encode(),
        "hostile": json.dumps({"format": "nodecli-user-data", "version": 1,
                               "transfer_users": {"../x": {}}}).encode(),
        "binary": b"\xff\xfe\x00",
    }
    for name, raw in cases.items():
        f = tmp_path / name
        f.write_bytes(raw)
        r = invoke("config", "import", str(f))
        assert r.exit_code == 3, (name, r)
        assert str(f) in r.stderr
        assert "Traceback" not in r.stderr
    assert invoke("config", "import", str(tmp_path / "missing")).exit_code == 5
    assert Path(_store(home).path).read_bytes() == before


# -- round trips ---------------------------------------------------------------------------

_name = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,20}", fullmatch=True)
_hash = st.just("$scrypt$ln=15,r=8,p=1$5Qvheb8IBxDGm/PNAybueA"
                "$tUU+cdQGfZf/fBrvRGTqNUt9W7OGi0klxagbk/FDZ/c")
_restriction = st.sampled_from(["file:////data/*", "!file:////data/x/*", "s3://*", "*",
                                "udp://host:5000*", "file:///c%3A/d/*"])
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@st.composite
def configs(draw) -> Config:
    cfg = Config()
    for name in draw(st.lists(_name, max_size=5, unique=True)):
        if draw(st.booleans()):
            cfg.transfer_users[name] = TransferUser(
                name, draw(st.lists(_restriction, max_size=3, unique=True)))
        else:
            cfg.transfer_users[name] = TransferUser(name, [], "/" + draw(_text))
    if cfg.transfer_users:
        for name in draw(st.lists(_name, max_size=6, unique=True)):
            cfg.users[name] = NodeUser(
                name, draw(st.sampled_from(sorted(cfg.transfer_users))),
                draw(st.one_of(st.none(), _hash)),
                draw(st.lists(st.sampled_from(KNOWN_ACLS), unique=True)))
    for name in draw(st.lists(_name, max_size=3, unique=True)):
        cfg.nodes[name] = NodeProfile(name, "https://h" + draw(st.from_regex(r"[a-z0-9.]{0,9}",
                                                                             fullmatch=True)),
                                      user=draw(st.one_of(st.none(), _text)),
                                      insecure=draw(st.booleans()))
    for name in draw(st.lists(_name, max_size=2, unique=True)):
        cfg.services[name] = ServiceProfile(name, "https://svc", token_file=draw(
            st.one_of(st.none(), _text)))
    if cfg.nodes and draw(st.booleans()):
        cfg.default_node = draw(st.sampled_from(sorted(cfg.nodes)))
    return cfg


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_config_save_load_round_trip_is_identity(cfg):
    assert parse_config_bytes(dump_config(cfg), "mem") == cfg


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(configs())
def test_export_round_trip_keeps_user_data(cfg):
    back = parse_export(dump_export(cfg), "mem")
    assert back.users == cfg.users and back.transfer_users == cfg.transfer_users
    assert dump_export(back) == dump_export(cfg)  # deterministic


def test_store_round_trip_on_disk(home):
    store = _store(home)
    cfg = Config()
    cfg.transfer_users["t"] = TransferUser("t", ["s3://*"])
    cfg.users["u"] = NodeUser("u", "t", None, ["admin"])
    with store.edit() as live:
        live.transfer_users.update(cfg.transfer_users)
        live.users.update(cfg.users)
    assert store.load() == cfg


def test_parse_cache_never_outranks_the_file(invoke, home):
    _populate(invoke)
    store = _store(home)
    assert invoke("user", "list").exit_code == 0
    assert stat.S_IMODE(Path(store.cache_path).stat().st_mode) == 0o600
    # a hand edit is seen at once (the cache holds the bytes it was made from)
    text = Path(store.path).read_text()
    Path(store.path).write_text(text.replace('acls = [\n    "admin",\n]', 'acls = ["internal"]'))
    assert json.loads(invoke("user", "list", "-o", "json").stdout)[0]["acls"] == ["internal"]
    # a damaged file is reported even though a cache of the good version exists
    Path(store.path).write_text(text + "\n[oops\n")
    assert invoke("user", "list").exit_code == 3
    # a garbage cache is ignored
    Path(store.path).write_text(text)
    for garbage in (b"\x00\xff", b'{"source": 1}', b"[]", b""):
        Path(store.cache_path).write_bytes(garbage)
        r = invoke("user", "list", "-o", "json")
        assert r.exit_code == 0 and json.loads(r.stdout)[0]["acls"] == ["admin"]
    # a forged cache that does not match the file is ignored too
    import marshal
    import zlib

    from nodecli.config.cache import MAGIC

    tail = marshal.dumps({"version": 1})  # (valid for a file holding 'version = 1')
    forged = MAGIC + b"12 %d\nversion = 1\n" % zlib.crc32(tail) + tail
    Path(store.cache_path).write_bytes(forged)
    assert len(json.loads(invoke("user", "list", "-o", "json").stdout)) == 2


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow,
                                                   HealthCheck.function_scoped_fixture])
@given(configs())
def test_store_save_load_identity_with_and_without_parse_cache(home, cfg):
    store = _store(home)
    store.replace_all(cfg)
    assert store.load() == cfg  # through the cache written by save
    Path(store.cache_path).unlink()
    assert store.load() == cfg  # through the TOML parser
    assert store.load() == cfg  # through the cache written by that load
