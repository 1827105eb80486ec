"""config.toml's store at its edges (issue 33, the mutation run of
``nodecli/config/store.py``): a byte order mark named as such, ``[defaults] output``
read without a full parse, and a configuration read back from the parse cache without
checking its restrictions again (their parser is not even imported)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nodecli.config.model import TransferUser
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore, parse_toml_bytes
from nodecli.errors import ConfigError


@pytest.fixture
def store(home) -> ConfigStore:
    return ConfigStore(resolve_paths(home))


def test_a_byte_order_mark_is_named_with_its_fix():
    with pytest.raises(ConfigError) as info:
        parse_toml_bytes("\ufeffversion = 1\n".encode(), "c.toml")
    assert info.value.message == ("c.toml: starts with a byte order mark (U+FEFF), which "
                                  "TOML does not allow")
    assert info.value.hint == "save the file as UTF-8 without a BOM"
    assert parse_toml_bytes("x = \"\ufeff\"\n".encode(), "c.toml") == {"x": "\ufeff"}


def test_the_default_output_is_read_from_the_file(store):
    assert store.default_output() is None  # no file
    with store.edit() as cfg:
        cfg.transfer_users["t"] = TransferUser("t")
    assert store.default_output() is None  # a file without [defaults]
    with store.edit() as cfg:
        cfg.default_output = "json"
    assert store.default_output() == "json"
    assert ConfigStore(store.paths).default_output() == "json"


def test_a_config_read_from_its_cache_does_not_check_its_restrictions_again(store):
    with store.edit() as cfg:
        cfg.transfer_users["t"] = TransferUser("t", ["file:////data/*", "s3://b/*"])
    assert Path(store.cache_path).is_file()
    name = "nodecli.users.restrictions"
    saved = sys.modules.pop(name)
    try:
        loaded = store.load()
        assert name not in sys.modules  # the cache was trusted: no parser was needed
    finally:
        sys.modules[name] = saved
    assert loaded.transfer_users["t"].restrictions == ["file:////data/*", "s3://b/*"]
    Path(store.cache_path).unlink()
    sys.modules.pop(name)
    try:
        assert store.load() == loaded  # from the file: each restriction is checked
        assert name in sys.modules
    finally:
        sys.modules[name] = saved


def test_a_huge_config_is_refused_after_reading_no_more_than_the_limit(store):
    import os
    import tracemalloc

    from nodecli.config.store import MAX_CONFIG_BYTES

    Path(store.paths.config_dir).mkdir(parents=True)
    with open(store.path, "wb") as fh:  # sparse: costs no disk
        fh.truncate(MAX_CONFIG_BYTES + 32 * 1024 * 1024)
    os.chmod(store.path, 0o600)
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError) as info:
            store.load()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.message == f"{store.path}: file is larger than {MAX_CONFIG_BYTES} bytes"
    assert peak < MAX_CONFIG_BYTES + 16 * 1024 * 1024  # (the whole file is 32 MiB more)
