"""The user data as a whole at its edges (issue 33, the mutation run of
``nodecli/users/user_data.py``): the export file byte for byte, each refusal of an
import file word for word (its size one byte either side), replace against merge and
the counts they report, and the summaries of export, import, check and restore."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from nodecli.config.model import Config, NodeProfile, NodeUser, TransferUser
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from nodecli.errors import ConfigError, ConflictError, UsageError
from nodecli.users.manage import unconfigured_warning
from nodecli.users.user_data import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    MAX_IMPORT_BYTES,
    apply_import,
    check_config,
    dump_export,
    export_dict,
    export_user_data,
    import_user_data,
    parse_export,
    restore_backup,
)

PHC = "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo"


@pytest.fixture
def store(home) -> ConfigStore:
    return ConfigStore(resolve_paths(home))


def _cfg() -> Config:
    cfg = Config()
    cfg.transfer_users["x"] = TransferUser("x", ["file:////data/*"])
    cfg.transfer_users["d"] = TransferUser("d", [], "/srv/é")
    cfg.transfer_users["n"] = TransferUser("n")
    cfg.users["u1"] = NodeUser("u1", "x", PHC, ["admin"])
    cfg.users["u2"] = NodeUser("u2", "d")
    cfg.nodes["prod"] = NodeProfile("prod", "https://n:9092")
    return cfg


def _doc(**body: object) -> bytes:
    return json.dumps({"format": EXPORT_FORMAT, "version": 1, **body}).encode()


# -- the file ------------------------------------------------------------------------


def test_the_export_is_sorted_indented_utf8_json_ending_with_a_newline():
    assert (EXPORT_FORMAT, EXPORT_VERSION) == ("nodecli-user-data", 1)
    assert dump_export(_cfg()) == (
        '{\n'
        '  "format": "nodecli-user-data",\n'
        '  "transfer_users": {\n'
        '    "d": {\n'
        '      "docroot": "/srv/é"\n'
        '    },\n'
        '    "n": {},\n'
        '    "x": {\n'
        '      "restrictions": [\n'
        '        "file:////data/*"\n'
        '      ]\n'
        '    }\n'
        '  },\n'
        '  "users": {\n'
        '    "u1": {\n'
        '      "acls": [\n'
        '        "admin"\n'
        '      ],\n'
        f'      "password": "{PHC}",\n'
        '      "transfer_user": "x"\n'
        '    },\n'
        '    "u2": {\n'
        '      "transfer_user": "d"\n'
        '    }\n'
        '  },\n'
        '  "version": 1\n'
        '}\n').encode()


def test_an_empty_config_exports_empty_tables_and_no_profiles():
    assert export_dict(Config()) == {"format": "nodecli-user-data", "version": 1,
                                     "transfer_users": {}, "users": {}}
    assert "nodes" not in export_dict(_cfg())


def test_an_export_reads_back_as_the_user_data_alone():
    back = parse_export(dump_export(_cfg()), "e.json")
    want = _cfg()
    want.nodes.clear()
    assert back == want
    assert parse_export(_doc(), "e.json") == Config()
    assert parse_export(_doc(users={}), "e.json") == Config()


def test_an_import_file_of_the_limit_is_read_and_one_byte_more_is_refused():
    assert MAX_IMPORT_BYTES == 64 * 1024 * 1024
    doc = _doc()
    raw = doc + b" " * (MAX_IMPORT_BYTES - len(doc))
    assert parse_export(raw, "big.json") == Config()
    with pytest.raises(ConfigError) as info:
        parse_export(raw + b" ", "big.json")
    assert info.value.message == "big.json: file is larger than 67108864 bytes"


@pytest.mark.parametrize(("raw", "text"), [
    (b'{"a": "\xff"}', "f.json: not UTF-8 text (byte 7)"),
    (b'{\n  "format": x}', "f.json: invalid JSON at line 2 column 13: Expecting value"),
    (b"[" * 100_000 + b"]" * 100_000, "f.json: invalid JSON: nested too deeply"),
    (b"[]", 'f.json: not a nodecli user-data export (expected "format": "nodecli-user-data")'),
    (b'{"version": 1}',
     'f.json: not a nodecli user-data export (expected "format": "nodecli-user-data")'),
    (b'{"format": "nodecli-user-datax", "version": 1}',
     'f.json: not a nodecli user-data export (expected "format": "nodecli-user-data")'),
    (_doc(version=2), "f.json: version: unsupported export version 2 (this nodecli reads "
                      "version 1)"),
    (_doc(version=0), "f.json: version: unsupported export version 0 (this nodecli reads "
                      "version 1)"),
    (_doc(version=True), "f.json: version: unsupported export version True (this nodecli "
                         "reads version 1)"),
    (_doc(version="1"), "f.json: version: unsupported export version '1' (this nodecli "
                        "reads version 1)"),
    (_doc(version=1.0), "f.json: version: unsupported export version 1.0 (this nodecli "
                        "reads version 1)"),
    (json.dumps({"format": EXPORT_FORMAT}).encode(),
     "f.json: version: unsupported export version None (this nodecli reads version 1)"),
    (_doc(zeta=1, nodes={}), "f.json: nodes: unknown key"),
    (_doc(users={"u": {"transfer_user": "t"}}),
     "f.json: users -> u -> transfer_user: unknown transfer user 't'"),
    (_doc(transfer_users=[]), "f.json: transfer_users: must be a table"),
])
def test_a_bad_import_file_is_one_line_naming_the_file(raw, text):
    with pytest.raises(ConfigError) as info:
        parse_export(raw, "f.json")
    assert info.value.message == text


# -- replace and merge ---------------------------------------------------------------


def _imported() -> Config:
    cfg = Config()
    cfg.transfer_users["x"] = TransferUser("x", [], "/new")
    cfg.transfer_users["y"] = TransferUser("y")
    cfg.users["u1"] = NodeUser("u1", "y")
    return cfg


def test_an_import_replaces_the_user_data_and_keeps_the_profiles():
    cfg = _cfg()
    counts = apply_import(cfg, _imported())
    assert counts == {"users": 1, "transfer_users": 2, "total_users": 1,
                      "total_transfer_users": 2}
    assert cfg.users == {"u1": NodeUser("u1", "y")}
    assert cfg.transfer_users == {"x": TransferUser("x", [], "/new"), "y": TransferUser("y")}
    assert list(cfg.nodes) == ["prod"]


def test_a_merge_keeps_the_others_and_the_imported_ones_win():
    cfg = _cfg()
    counts = apply_import(cfg, _imported(), merge=True)
    assert counts == {"users": 1, "transfer_users": 2, "total_users": 2,
                      "total_transfer_users": 4}
    assert cfg.users == {"u1": NodeUser("u1", "y"), "u2": NodeUser("u2", "d")}
    assert cfg.transfer_users["x"] == TransferUser("x", [], "/new")
    assert sorted(cfg.transfer_users) == ["d", "n", "x", "y"]


def test_a_merge_that_leaves_a_user_without_its_transfer_user_is_refused():
    cfg = _cfg()
    imported = Config()
    imported.users["u9"] = NodeUser("u9", "zz")  # (built, not parsed: no check yet)
    with pytest.raises(ConflictError) as info:
        apply_import(cfg, imported, merge=True)
    assert info.value.message == ("the imported data does not fit the current config: "
                                  "users -> u9 -> transfer_user: unknown transfer user 'zz'")


# -- the commands' summaries ---------------------------------------------------------


def _save(store: ConfigStore, cfg: Config) -> None:
    store.replace_all(cfg)


def test_an_export_to_stdout_gives_the_bytes_and_a_summary(store):
    _save(store, _cfg())
    out = export_user_data(store, None)
    assert out.message == "exported 2 node user(s), 3 transfer user(s)"
    assert out.data == dump_export(_cfg()) and out.warnings == []


def test_an_export_to_a_file_is_private_and_says_so(store, tmp_path):
    _save(store, _cfg())
    dest = tmp_path / "e.json"
    out = export_user_data(store, dest)
    assert out.message == (f"exported 2 node user(s), 3 transfer user(s) to {dest} (mode 0600: "
                           "it holds password hashes)")
    assert out.data is None
    assert dest.read_bytes() == dump_export(_cfg())
    assert stat.S_IMODE(os.stat(dest).st_mode) == 0o600
    dest.write_text("old")
    export_user_data(store, str(dest))  # overwrite is the default
    assert dest.read_bytes() == dump_export(_cfg())


def test_an_export_never_replaces_what_exists_unless_told(store, tmp_path):
    _save(store, _cfg())
    dest = tmp_path / "e.json"
    dest.write_text("mine")
    with pytest.raises(ConflictError) as info:
        export_user_data(store, dest, overwrite=False)
    assert (info.value.message, info.value.hint) == (f"{dest} already exists",
                                                     "use --force to replace it")
    assert dest.read_text() == "mine"
    link = tmp_path / "dangling.json"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConflictError):
        export_user_data(store, link, overwrite=False)
    assert not (tmp_path / "nowhere").exists()
    with pytest.raises(UsageError) as info:
        export_user_data(store, tmp_path)
    assert info.value.message == f"{tmp_path} is a folder: give a file name"
    fresh = tmp_path / "new.json"
    export_user_data(store, fresh, overwrite=False)
    assert fresh.read_bytes() == dump_export(_cfg())


def test_an_import_says_what_it_did_and_warns_of_unconfigured_transfer_users(store):
    _save(store, _cfg())
    imported = _imported()
    imported.transfer_users["w"] = TransferUser("w")
    raw = dump_export(imported)
    out = import_user_data(store, raw, "e.json")
    assert out.message == ("imported (replacing all user data): 1 node user(s), 3 transfer "
                           "user(s) from e.json; now 1 node user(s), 3 transfer user(s); "
                           "previous config kept as backup")
    assert out.warnings == [unconfigured_warning("w"), unconfigured_warning("y")]
    assert out.data == {"users": 1, "transfer_users": 3, "total_users": 1,
                        "total_transfer_users": 3}
    assert set(store.load().users) == {"u1"}
    _save(store, _cfg())
    out = import_user_data(store, raw, "-", merge=True)
    assert out.message.startswith("merged: 1 node user(s), 3 transfer user(s) from -; now "
                                  "2 node user(s), 5 transfer user(s);")
    assert set(store.load().users) == {"u1", "u2"}


def test_a_check_counts_everything_and_warns_in_order(store):
    out = check_config(store)
    assert out.message == f"{store.path}: no config yet (an empty configuration)"
    assert out.warnings == []
    cfg = _cfg()
    cfg.transfer_users["m"] = TransferUser("m")
    cfg.users["u0"] = NodeUser("u0", "x")
    _save(store, cfg)
    out = check_config(store)
    assert out.message == (f"{store.path}: ok: 3 node user(s), 4 transfer user(s), 1 node "
                           "profile(s), 0 service profile(s)")
    assert out.warnings == [unconfigured_warning("m"), unconfigured_warning("n"),
                            "node user 'u0' has no password", "node user 'u2' has no password"]


def test_a_restore_names_both_files_and_counts(store):
    _save(store, _cfg())
    _save(store, Config())
    out = restore_backup(store)
    assert out.message == (f"restored {store.path} from {store.paths.backup_file}: 2 node "
                           "user(s), 3 transfer user(s); the replaced version is now the backup")
    assert Path(store.path).exists()


def test_a_bad_import_names_its_source_and_changes_nothing(store):
    _save(store, _cfg())
    before = Path(store.path).read_bytes()
    with pytest.raises(ConfigError) as info:
        import_user_data(store, b"[]", "<stdin>")
    assert info.value.message == ('<stdin>: not a nodecli user-data export (expected '
                                  '"format": "nodecli-user-data")')
    assert Path(store.path).read_bytes() == before
