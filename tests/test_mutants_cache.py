"""The parse cache at its edges (issue 33, the mutation run of
``nodecli/config/cache.py``; tests/test_mutants_config.py holds the first ones): how
much of a cache file is read (its bound, one byte either side, and the memory a huge one
costs), the 40 bytes its header line may take, and a save that is best effort: never
an error, never synced, never a write under --dry-run."""

from __future__ import annotations

import datetime
import marshal
import os
import tracemalloc
from binascii import crc32

import pytest

from nodecli import dryrun, fsutil
from nodecli.config import cache

RAW = b'[users.alice]\ntransfer_user = "aspera"\n'


def _blob(data: object, length_field: bytes | None = None) -> bytes:
    payload = marshal.dumps(data)
    n = b"%d" % len(RAW) if length_field is None else length_field
    return cache.MAGIC + n + b" %d\n" % crc32(payload) + RAW + payload


def _blob_of_size(size: int) -> tuple[bytes, dict[str, str]]:
    """A valid cache of ``RAW`` that is exactly ``size`` bytes long."""
    for pad in range(size):
        data = {"pad": "x" * pad}
        blob = _blob(data)
        if len(blob) == size:
            return blob, data
    raise AssertionError(size)


def test_a_cache_is_read_up_to_4_times_the_config_and_1025_bytes(tmp_path):
    path = tmp_path / "config.cache"
    bound = 4 * len(RAW) + 1024 + 1  # read_regular reads its limit and one byte more
    blob, data = _blob_of_size(bound)
    path.write_bytes(blob)
    assert cache.load(path, RAW) == data
    blob, data = _blob_of_size(bound + 1)
    path.write_bytes(blob)
    assert cache.load(path, RAW) is None  # cut at the bound: its checksum fails


def test_a_huge_cache_costs_no_more_memory_than_its_bound(tmp_path):
    path = tmp_path / "config.cache"
    with open(path, "wb") as fh:
        fh.write(_blob({"a": "b"}))
        fh.truncate(32 * 1024 * 1024)  # sparse
    tracemalloc.start()
    try:
        assert cache.load(path, RAW) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


def test_the_header_line_takes_at_most_40_bytes_after_the_magic(tmp_path):
    path = tmp_path / "config.cache"
    data = {"a": "b"}
    crc = b" %d\n" % crc32(marshal.dumps(data))
    for width, read in ((39, True), (40, False), (80, False)):
        field = b"%0*d" % (width - len(crc) + 1, len(RAW))  # zeros: the same number
        blob = _blob(data, field)
        assert blob.index(b"\n", len(cache.MAGIC)) - len(cache.MAGIC) == width
        path.write_bytes(blob)
        assert (cache.load(path, RAW) == data) is read, width


@pytest.mark.parametrize("data", [{"when": datetime.datetime(2026, 1, 1)},
                                  {"x": object()}])
def test_a_table_marshal_cannot_keep_is_not_cached_and_no_error(tmp_path, data):
    path = tmp_path / "state" / "config.cache"
    cache.save(path, RAW, data)
    assert not path.exists()
    cache.save(tmp_path / "a\0b", RAW, {"a": "b"})  # a name the system refuses


def test_a_cache_is_written_without_a_sync(tmp_path, monkeypatch):
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(fsutil.os, "fsync", fsync)
    cache.save(tmp_path / "config.cache", RAW, {"a": "b"})
    assert cache.load(tmp_path / "config.cache", RAW) == {"a": "b"}
    assert synced == []


def test_under_dry_run_a_cache_is_silently_not_written(tmp_path):
    dryrun.activate()
    try:
        cache.save(tmp_path / "config.cache", RAW, {"a": "b"})  # no DryRunStop
    finally:
        dryrun.activate(False)
    assert not (tmp_path / "config.cache").exists()
