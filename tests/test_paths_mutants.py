"""nodecli.config.paths at its boundaries (issue 33, item 2: the survivors of mutation
testing): the name of every file nodecli keeps, which home wins, and the platform's
folders when none is set. In process: pure functions over the environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodecli.config.paths import HOME_ENV, Paths, absolute, resolve_paths


def test_every_file_has_its_name(tmp_path):
    paths = Paths(tmp_path / "c", tmp_path / "d", tmp_path / "s")
    assert paths.config_file == tmp_path / "c" / "config.toml"
    assert paths.backup_file == tmp_path / "c" / "config.toml.bak"
    assert paths.lock_file == tmp_path / "c" / ".config.lock"
    assert paths.secrets_file == tmp_path / "c" / "secrets.toml"
    assert paths.keys_dir == tmp_path / "d" / "keys"
    assert paths.as_dict() == {
        "config": str(tmp_path / "c" / "config.toml"),
        "backup": str(tmp_path / "c" / "config.toml.bak"),
        "secrets": str(tmp_path / "c" / "secrets.toml"),
        "keys": str(tmp_path / "d" / "keys"),
        "state": str(tmp_path / "s"),
    }
    assert not hasattr(paths, "__dict__")


@pytest.fixture
def platform_dirs(tmp_path, monkeypatch):
    monkeypatch.delenv(HOME_ENV, raising=False)
    for var, sub in (("XDG_CONFIG_HOME", "xc"), ("XDG_DATA_HOME", "xd"),
                     ("XDG_STATE_HOME", "xs")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    return tmp_path


def test_no_home_uses_the_platform_folders(platform_dirs):
    expected = Paths(platform_dirs / "xc" / "nodecli", platform_dirs / "xd" / "nodecli",
                     platform_dirs / "xs" / "nodecli")
    assert resolve_paths() == expected
    assert resolve_paths("") == expected          # an empty --home is no home
    assert HOME_ENV == "NODECLI_HOME"


def test_the_environment_home_when_no_option(platform_dirs, monkeypatch):
    monkeypatch.setenv("NODECLI_HOME", str(platform_dirs / "env"))
    root = platform_dirs / "env"
    assert resolve_paths() == Paths(root, root, root / "state")
    assert resolve_paths(None) == Paths(root, root, root / "state")


def test_the_option_beats_the_environment(platform_dirs, monkeypatch):
    monkeypatch.setenv("NODECLI_HOME", str(platform_dirs / "env"))
    root = platform_dirs / "opt"
    assert resolve_paths(root) == Paths(root, root, root / "state")
    assert resolve_paths(str(root)) == Paths(root, root, root / "state")


def test_a_relative_home_is_made_absolute(platform_dirs, monkeypatch):
    monkeypatch.chdir(platform_dirs)
    monkeypatch.setenv("NODECLI_HOME", "rel/./h//")
    root = platform_dirs / "rel" / "h"
    assert resolve_paths() == Paths(root, root, root / "state")
    assert resolve_paths("~") == Paths(Path(os.path.expanduser("~")),
                                       Path(os.path.expanduser("~")),
                                       Path(os.path.expanduser("~")) / "state")


@pytest.mark.parametrize(("home", "expected"), [
    ("/", "/"), ("//", "//"), ("///", "/"), ("////x", "/x"), ("//x//y/", "//x/y"),
    ("/a/./b/.", "/a/b"), ("/./", "/"),
])
def test_absolute_roots(home, expected):
    assert absolute(home) == expected
