"""Behaviour the mutation runs of issue 33 found unguarded in config/paths.py,
config/cache.py and config/service_paths.py: each test kills surviving mutants at the
boundary where a slip would show (512 vs 513 characters, ``//`` vs ``///``, a cache one
byte off)."""

from __future__ import annotations

import marshal
import os
from binascii import crc32

import pytest

from nodecli.config import cache
from nodecli.config.paths import Paths, absolute, resolve_paths
from nodecli.config.service_paths import (
    DEFAULT_PATHS,
    check_path_template,
    parse_path_overrides,
)
from nodecli.errors import UsageError

# -- paths --------------------------------------------------------------------------


def test_the_files_of_a_home_and_their_names(tmp_path):
    p = resolve_paths(tmp_path)
    assert p == Paths(config_dir=tmp_path, data_dir=tmp_path, state_dir=tmp_path / "state")
    assert p.as_dict() == {
        "config": str(tmp_path / "config.toml"),
        "backup": str(tmp_path / "config.toml.bak"),
        "secrets": str(tmp_path / "secrets.toml"),
        "keys": str(tmp_path / "keys"),
        "state": str(tmp_path / "state"),
    }
    assert p.lock_file == tmp_path / ".config.lock"


def test_home_beats_the_variable_which_beats_the_platform(tmp_path, monkeypatch):
    monkeypatch.setenv("NODECLI_HOME", str(tmp_path / "env"))
    assert resolve_paths(tmp_path / "flag").config_dir == tmp_path / "flag"
    assert resolve_paths().config_dir == tmp_path / "env"
    assert resolve_paths("").config_dir == tmp_path / "env"
    monkeypatch.delenv("NODECLI_HOME")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xc"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xd"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xs"))
    assert resolve_paths() == Paths(config_dir=tmp_path / "xc" / "nodecli",
                                    data_dir=tmp_path / "xd" / "nodecli",
                                    state_dir=tmp_path / "xs" / "nodecli")


def test_absolute_reads_a_path_as_a_shell_user_means_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", "/home/me")
    assert absolute("~/a") == "/home/me/a"
    assert absolute("~") == "/home/me"
    assert absolute("./~") == f"{tmp_path}/~"
    assert absolute("~nobody-here-at-all/x") == f"{tmp_path}/~nobody-here-at-all/x"
    assert absolute("a/./b//c/") == f"{tmp_path}/a/b/c"
    assert absolute("a/../b") == f"{tmp_path}/a/../b"
    assert absolute("/") == "/"
    assert absolute("//srv/x") == "//srv/x"  # POSIX leaves the meaning of // open
    assert absolute("///srv/x") == "/srv/x"
    assert absolute("////srv") == "/srv"


# -- cache --------------------------------------------------------------------------

RAW = b'[users.alice]\ntransfer_user = "aspera"\n'
DATA = {"users": {"alice": {"transfer_user": "aspera"}}}


def _blob(raw: bytes = RAW, data: object = DATA, *, length: int | None = None,
          crc: int | None = None, magic: bytes = cache.MAGIC, sep: bytes = b" ") -> bytes:
    payload = marshal.dumps(data)
    n = len(raw) if length is None else length
    c = crc32(payload) if crc is None else crc
    return magic + b"%d" % n + sep + b"%d\n" % c + raw + payload


def test_a_saved_cache_gives_its_table_back_for_exactly_its_bytes(tmp_path):
    path = tmp_path / "private" / "config.cache"
    cache.save(path, RAW, DATA)
    assert cache.load(path, RAW) == DATA
    assert path.read_bytes() == _blob()
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(path.parent).st_mode & 0o777 == 0o700
    assert cache.load(path, RAW[:-1] + b"X") is None  # same length, other bytes
    assert cache.load(path, RAW + b"\n") is None


@pytest.mark.parametrize("blob", [
    _blob(length=len(RAW) + 1),
    _blob(crc=1),
    _blob(magic=cache.MAGIC.replace(b" 6 ", b" 5 ")),
    _blob(sep=b"  "),
    _blob(sep=b"x"),
    _blob(sep=b" %d " % crc32(marshal.dumps(DATA)), crc=7),  # a third field
    _blob(data=["a", "list"]),
    _blob()[:-1],
    _blob()[: len(cache.MAGIC) + 5],
    b"",
])
def test_any_other_cache_is_ignored(tmp_path, blob):
    path = tmp_path / "config.cache"
    path.write_bytes(blob)
    assert cache.load(path, RAW) is None


def test_a_missing_or_unwritable_cache_is_no_error(tmp_path):
    assert cache.load(tmp_path / "none", RAW) is None
    (tmp_path / "file").write_text("x")
    cache.save(tmp_path / "file" / "config.cache", RAW, DATA)  # parent is a file
    assert not (tmp_path / "file" / "config.cache").exists()


# -- service paths -------------------------------------------------------------------


def _refusal(call, *args) -> str:
    with pytest.raises(UsageError) as info:
        call(*args)
    return str(info.value)


NAMES = "operations, workspaces, workspace-memberships, group-memberships, create-workspace"


def test_an_unknown_service_path_names_the_known_ones():
    assert _refusal(check_path_template, "jobs", "/jobs") == (
        f"unknown service path 'jobs' (one of {NAMES})")


@pytest.mark.parametrize(("name", "template"), [
    ("operations", "/ops"), ("create-workspace", "/w"), ("create_workspace", "/w"),
    ("workspaces", "/w/{id}/ops"), ("group-memberships", "/g/{id}"),
    ("operations", "/" + "a" * 511), ("operations", "/X/Ops"),
])
def test_a_good_template_is_returned_as_given(name, template):
    assert check_path_template(name, template) == template


@pytest.mark.parametrize(("name", "template"), [
    ("operations", "/" + "a" * 512), ("operations", "ops"), ("operations", "/o ps"),
    ("operations", "/o\tps"), ("operations", "/o?x"), ("operations", "/o#x"),
    ("operations", "/o\x01"), ("operations", "/o\x00"), ("operations", "/o\x7fp"),
    ("operations", "/{id}"),
    ("operations", "/o{x}"), ("operations", "/o{"), ("operations", "/o}"),
    ("workspaces", "/w/ops"), ("workspaces", "/w/{id}/{id}"), ("workspaces", "/w/{id}/{"),
    ("workspaces", "/w/{id}/}"), ("workspaces", "/w/{ id}"),
])
def test_a_bad_template_is_refused_saying_what_it_needs(name, template):
    if template == "/o\x7fp":  # DEL is no control character below 32, nor a space
        assert check_path_template(name, template) == template
        return
    need = "without {id}" if name == "operations" else "with {id} once where the parent id goes"
    assert _refusal(check_path_template, name, template) == (
        f"service path {name}: {template[:80]!r} is not an absolute path {need}")


def test_a_refused_template_is_quoted_to_80_characters():
    template = "/" + "b" * 100 + " "
    assert _refusal(check_path_template, "operations", template) == (
        f"service path operations: {template[:80]!r} is not an absolute path without {{id}}")


def test_overrides_split_at_the_first_equals_and_are_stripped():
    assert parse_path_overrides([" workspace-memberships = /m/{id}=x ", "operations=/o"]) == {
        "workspace_memberships": "/m/{id}=x", "operations": "/o"}
    assert parse_path_overrides([]) == {}
    item = "o" * 61
    assert _refusal(parse_path_overrides, [item]) == (
        f"--service-path takes NAME=PATH, not {item[:60]!r}")
    assert _refusal(parse_path_overrides, ["operations=/a b"]).startswith(
        "service path operations: '/a b'")


def test_nested_paths_quote_the_parent_id_whole():
    assert DEFAULT_PATHS.nested("workspaces", "a/b c?") == "/workspaces/a%2Fb%20c%3F/operations"
    moved = DEFAULT_PATHS.with_overrides({"workspaces": "/x/{id}/y"})
    assert moved.nested("workspaces", "7") == "/x/7/y"
    assert moved.operations == "/operations"
    with pytest.raises(UsageError):
        DEFAULT_PATHS.with_overrides({"workspaces": "/x"})
