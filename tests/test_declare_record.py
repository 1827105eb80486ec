"""The record of the objects ``apply`` manages on a node (nodecli/declare/execute.py's
``load_record``): what it refuses to read, each with one line that names the file, and
what it reads. ``--prune`` trusts it, so a record that is not one is never taken as
"nothing managed"."""

from __future__ import annotations

import pytest

from nodecli.declare import execute
from nodecli.declare.plan import LOCAL
from nodecli.errors import ConfigError, ExitCode

LABEL = "https://n:9092"
HINT = ("remove it: --prune then removes nothing until the next apply records what it "
        "adopts")


def written(tmp_path, raw: bytes, label: str = LABEL):
    path = execute.record_path(tmp_path, label)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    return path


@pytest.mark.parametrize("raw", [
    b'{"objects": ["a", "b"]}', b'{"version": 1, "objects": ["b", "a", "a"], "x": 2}\n'])
def test_a_record_is_its_objects(tmp_path, raw):
    written(tmp_path, raw)
    assert execute.load_record(tmp_path, LABEL) == {"a", "b"}
    assert execute.load_record(tmp_path, LOCAL) == set()  # another record, never written
    written(tmp_path, b'{"objects": []}', LOCAL)
    assert execute.load_record(tmp_path, LOCAL) == set()


@pytest.mark.parametrize("raw", [
    b"[]", b'"objects"', b"null", b"{}", b'{"objects": null}', b'{"objects": "a"}',
    b'{"objects": {"a": 1}}', b'{"objects": ["a", 1]}', b'{"objects": [null]}',
    b'{"Objects": ["a"]}'])
def test_a_record_that_is_not_one_is_refused_naming_its_file(tmp_path, raw):
    path = written(tmp_path, raw)
    with pytest.raises(ConfigError) as info:
        execute.load_record(tmp_path, LABEL)
    assert info.value.message == f"{path}: not a record of managed objects"
    assert info.value.exit_code == ExitCode.CONFIG


@pytest.mark.parametrize("raw,why", [
    (b"{not json", "Expecting property name enclosed in double quotes: line 1 column 2 "
                   "(char 1)"),
    (b'{"objects": ["\xe9"]}', "'utf-8' codec can't decode byte 0xe9 in position 14: "
                              "invalid continuation byte"),
    (b"", "Expecting value: line 1 column 1 (char 0)")])
def test_an_unreadable_record_says_why_and_how_to_go_on(tmp_path, raw, why):
    path = written(tmp_path, raw)
    with pytest.raises(ConfigError) as info:
        execute.load_record(tmp_path, LABEL)
    assert info.value.message == f"{path}: unreadable record of managed objects: {why}"
    assert info.value.hint == HINT


def test_a_record_that_is_a_folder_is_refused_not_taken_as_none(tmp_path):
    path = execute.record_path(tmp_path, LABEL)
    path.mkdir(parents=True)
    with pytest.raises(ConfigError) as info:
        execute.load_record(tmp_path, LABEL)
    assert info.value.message == (f"{path}: unreadable record of managed objects: [Errno 22] "
                                  f"is a folder, not a regular file: '{path}'")
    assert info.value.hint == HINT


def test_a_record_is_read_up_to_its_size_bound_and_refused_past_it(tmp_path, monkeypatch):
    raw = b'{"objects": ["a", "b"]}'
    path = written(tmp_path, raw)
    monkeypatch.setattr(execute, "MAX_RECORD_BYTES", len(raw))
    assert execute.load_record(tmp_path, LABEL) == {"a", "b"}  # exactly the bound
    monkeypatch.setattr(execute, "MAX_RECORD_BYTES", len(raw) - 1)
    with pytest.raises(ConfigError) as info:
        execute.load_record(tmp_path, LABEL)
    assert info.value.message == (f"{path}: unreadable record of managed objects: larger "
                                  f"than {len(raw) - 1} bytes")
    assert info.value.hint == HINT
