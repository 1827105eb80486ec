"""The parse cache (state/config.cache): the exact bytes of config.toml, then the parsed
table (marshal). Used only while its bytes match the file and its content validates;
anything else (older format, damage, forgery, another file type) is ignored silently and
the file is parsed: the result is always what the file says."""

from __future__ import annotations

import marshal
import os
import stat
import tomllib
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.config.cache import MAGIC
from nodecli.config.model import KNOWN_ACLS, Config, NodeUser, TransferUser
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore, dump_config, parse_config_bytes
from nodecli.errors import ConfigError

HASH = ("$scrypt$ln=15,r=8,p=1$5Qvheb8IBxDGm/PNAybueA"
        "$tUU+cdQGfZf/fBrvRGTqNUt9W7OGi0klxagbk/FDZ/c")


@pytest.fixture
def store(home) -> ConfigStore:
    return ConfigStore(resolve_paths(home))


def _fill(store: ConfigStore, n: int = 3) -> Config:
    with store.edit() as cfg:
        cfg.transfer_users["aspera"] = TransferUser("aspera", ["file:////data/*"])
        cfg.transfer_users["web"] = TransferUser("web", [], "/srv/www")
        for i in range(n):
            cfg.users[f"u{i}"] = NodeUser(f"u{i}", "aspera" if i % 2 else "web",
                                          None if i % 3 == 0 else HASH,
                                          [KNOWN_ACLS[j] for j in range(i % 4)])
    return store.load()


def _split(blob: bytes) -> tuple[bytes, object]:
    """(the source bytes, the cached table)."""
    assert blob.startswith(MAGIC)
    head, _, rest = blob[len(MAGIC):].partition(b"\n")
    size, crc = map(int, head.split())
    assert zlib.crc32(rest[size:]) == crc
    return rest[:size], marshal.loads(rest[size:])  # noqa: S302 - our own test file


def _cache(source: bytes, data: object) -> bytes:
    """A well-formed cache (its CRC right) for ``source`` holding ``data``."""
    payload = marshal.dumps(data)
    return MAGIC + b"%d %d\n" % (len(source), zlib.crc32(payload)) + source + payload


def test_cache_holds_the_exact_bytes_and_the_parsed_table(store):
    cfg = _fill(store)
    raw = Path(store.path).read_bytes()
    source, data = _split(Path(store.cache_path).read_bytes())
    assert source == raw
    assert data == tomllib.loads(raw.decode())
    assert stat.S_IMODE(Path(store.cache_path).stat().st_mode) == 0o600
    Path(store.cache_path).unlink()
    assert store.load() == cfg  # parsed from the file, and the cache written again
    assert _split(Path(store.cache_path).read_bytes()) == (source, data)


def test_cache_is_used_only_while_its_bytes_match_the_file(store):
    _fill(store, 1)
    raw = Path(store.path).read_bytes()
    source, data = _split(Path(store.cache_path).read_bytes())
    # the cache is what a load reads when its bytes are the file's (still validated)
    data["users"]["carol"] = {"transfer_user": "web"}
    Path(store.cache_path).write_bytes(_cache(source, data))
    assert set(store.load().users) == {"u0", "carol"}
    # the same content beside other bytes is ignored: the file is the truth
    for other in (raw + b"\n", raw[:-1], b"", raw.replace(b"u0", b"u9")):
        Path(store.cache_path).write_bytes(_cache(other, data))
        assert set(store.load().users) == {"u0"}
    good = _cache(source, data)
    # a size that does not match the bytes that follow
    Path(store.cache_path).write_bytes(good.replace(b"%d " % len(source), b"5 ", 1))
    assert set(store.load().users) == {"u0"}
    # a tail that is not the one its CRC was made from (damage)
    Path(store.cache_path).write_bytes(good.replace(b"carol", b"carl"))
    assert set(store.load().users) == {"u0"}


def test_an_older_cache_is_ignored_and_replaced(store):
    cfg = _fill(store)
    raw = Path(store.path).read_bytes()
    Path(store.cache_path).write_bytes(b"nodecli-config-cache 4 12 34\n" + raw + b"written\n")
    assert store.load() == cfg
    assert _split(Path(store.cache_path).read_bytes())[0] == raw


def test_a_cache_that_does_not_validate_is_ignored_and_errors_come_from_the_file(store):
    cfg = _fill(store)
    source, data = _split(Path(store.cache_path).read_bytes())
    for bad in ({**data, "version": 9}, {**data, "nodes": {"n": {"url": "ftp://x"}}},
                {**data, "users": {"u0": {"transfer_user": "gone"}}}, [], "x", None,
                {**data, "users": {"u0": {"transfer_user": b"web"}}}, {1: 2}):
        Path(store.cache_path).write_bytes(_cache(source, bad))
        assert store.load() == cfg, bad
    # an invalid file is reported exactly as without a cache
    Path(store.path).write_text('version = 1\n[users.alice]\ntransfer_user = "xfer9"\n')
    with pytest.raises(ConfigError) as plain:
        store.load()
    assert plain.value.message.startswith(f"{store.path}: users -> alice -> transfer_user: ")
    assert plain.value.hint
    bad_cache = _cache(Path(store.path).read_bytes(),
                       {"version": 1, "users": {"alice": {"transfer_user": "other"}}})
    Path(store.cache_path).write_bytes(bad_cache)
    with pytest.raises(ConfigError) as cached:
        store.load()
    assert (cached.value.message, cached.value.hint) == (plain.value.message, plain.value.hint)


def test_a_cache_that_is_not_a_plain_file_is_not_read(store):
    cfg = _fill(store)
    Path(store.cache_path).unlink()
    os.mkfifo(store.cache_path)  # a reader would block forever
    assert store.load() == cfg
    Path(store.cache_path).unlink()
    Path(store.cache_path).mkdir()
    assert store.load() == cfg


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_damaged_or_forged_cache_never_breaks_a_load(store, data):
    """Damage (truncation, any byte changed, junk) is ignored: the load is the file's.
    A forged cache with a right CRC and the file's bytes is only ever used when it
    validates: the load never fails and gives a valid configuration."""
    if not Path(store.path).exists():
        _fill(store, 5)
    Path(store.cache_path).unlink(missing_ok=True)
    cfg = store.load()
    good = Path(store.cache_path).read_bytes()
    source, _table = _split(good)
    how = data.draw(st.sampled_from(["truncate", "flip", "bytes", "forged"]))
    if how == "truncate":
        blob = good[:data.draw(st.integers(0, len(good) - 1))]
    elif how == "flip":
        at = data.draw(st.integers(0, len(good) - 1))
        blob = good[:at] + bytes([good[at] ^ data.draw(st.integers(1, 255))]) + good[at + 1:]
    elif how == "bytes":
        blob = MAGIC + data.draw(st.binary(max_size=200))
    else:
        value = data.draw(st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20)
            | st.floats(allow_nan=True) | st.binary(max_size=5),
            lambda inner: st.lists(inner, max_size=4)
            | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12))
        blob = _cache(source, value)
    Path(store.cache_path).write_bytes(blob)
    got = store.load()
    if how in ("truncate", "flip", "bytes"):
        assert got == cfg
    else:
        assert parse_config_bytes(dump_config(got), "mem") == got


def test_an_edit_updates_the_cache_to_the_new_bytes(store):
    _fill(store, 2)
    with store.edit() as cfg:
        cfg.users["zed"] = NodeUser("zed", "web")
    source, data = _split(Path(store.cache_path).read_bytes())
    assert source == Path(store.path).read_bytes()
    assert "zed" in data["users"]


def test_a_cache_written_by_another_version_of_nodecli_is_ignored(store):
    """The cache skips the hash-format checks this version made when it wrote it: a
    table cached by another version (whose checks may differ) is never used."""
    _fill(store, 1)
    source, data = _split(Path(store.cache_path).read_bytes())
    data["users"]["carol"] = {"transfer_user": "web"}
    mine = _cache(source, data)
    Path(store.cache_path).write_bytes(mine)
    assert set(store.load().users) == {"u0", "carol"}
    from nodecli import __version__

    other = mine.replace(MAGIC, MAGIC.replace(__version__.encode(), b"0.0.0.dev9"), 1)
    Path(store.cache_path).write_bytes(other)
    assert set(store.load().users) == {"u0"}
