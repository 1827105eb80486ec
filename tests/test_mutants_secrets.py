"""The secret store at its edges (issue 33, the mutation run of
``nodecli/config/secrets.py``): what a secrets file may hold, what is written and what
is not under --dry-run, which keyring counts as working, the one-line errors word for
word, where a profile's record sends a lookup or a delete."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import keyring
import platformdirs
import pytest

from nodecli import dryrun
from nodecli.config.model import Config, NodeProfile, ServiceProfile
from nodecli.config.paths import Paths, resolve_paths
from nodecli.config.secrets import (
    FileBackend,
    KeyringBackend,
    delete_secret,
    describe_backend,
    find_secret,
    keyring_service,
    open_secrets,
    place_of,
    recorded_place,
)
from nodecli.errors import ConfigError, UsageError
from tests.test_secrets import MemoryKeyring, memory_keyring  # noqa: F401 - the fixture


@pytest.fixture
def paths(home):
    return resolve_paths(home)


def _private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, text.encode())
    os.close(fd)


# -- the file -----------------------------------------------------------------------


def test_the_file_is_a_header_and_one_sorted_table(paths):
    backend = FileBackend(paths)
    backend.set("service:s", "tok")
    backend.set("node:b", "pw-b")
    backend.set("node:a", 'p"w')
    assert paths.secrets_file.read_text() == (
        "# nodecli secrets: keep private (0600)\n"
        "[secrets]\n"
        '"node:a" = "p\\"w"\n'
        '"node:b" = "pw-b"\n'
        '"service:s" = "tok"\n')
    assert stat.S_IMODE(os.stat(paths.secrets_file).st_mode) == 0o600


@pytest.mark.parametrize("text", ["", "# only a comment\n", "[other]\nx = 1\n"])
def test_a_private_file_without_a_secrets_table_holds_none(paths, text):
    _private(paths.secrets_file, text)
    assert FileBackend(paths).get("node:a") is None
    assert find_secret(paths, "node:a", "file") == (None, None)


@pytest.mark.parametrize("text", [
    'secrets = "x"\n',
    "secrets = [1]\n",
    "[secrets]\na = 1\n",
    '[secrets]\na = "ok"\nb = 2\n',
    "[secrets]\na = [\"x\"]\n",
    "[secrets.a]\nb = \"x\"\n",
])
def test_a_secrets_table_that_is_not_names_to_text_is_refused(paths, text):
    _private(paths.secrets_file, text)
    with pytest.raises(ConfigError) as info:
        FileBackend(paths).get("a")
    assert str(info.value) == f"{paths.secrets_file}: [secrets] must map names to strings"


def test_under_dry_run_the_file_is_silently_not_written(paths):
    FileBackend(paths).set("node:a", "before")
    before = paths.secrets_file.read_bytes()
    dryrun.activate()
    try:
        FileBackend(paths).set("node:a", "after")  # no DryRunStop: a quiet file
        FileBackend(paths).set("node:new", "x")
        FileBackend(paths).delete("node:a")
    finally:
        dryrun.activate(False)
    assert paths.secrets_file.read_bytes() == before


# -- the keyring --------------------------------------------------------------------


class ZeroPriority(MemoryKeyring):
    priority = 0  # type: ignore[assignment]


class OnePriority(MemoryKeyring):
    priority = 1  # type: ignore[assignment]


class NoPriority(MemoryKeyring):
    """A backend that has no priority to tell (the attribute is missing): usable."""

    @property  # type: ignore[override]
    def priority(self):  # type: ignore[override]
        raise AttributeError("priority")


@pytest.fixture
def set_keyring():
    previous = keyring.get_keyring()
    yield keyring.set_keyring
    keyring.set_keyring(previous)


@pytest.mark.parametrize(("backend", "usable"), [
    (ZeroPriority, False), (OnePriority, True), (NoPriority, True), (MemoryKeyring, True)])
def test_a_keyring_works_from_priority_1_or_without_one(paths, set_keyring, backend, usable):
    set_keyring(backend())
    chosen = open_secrets(paths)
    assert isinstance(chosen, KeyringBackend if usable else FileBackend)


def test_the_platform_home_files_its_secrets_under_nodecli(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xc"))
    config_dir = Path(platformdirs.user_config_dir("nodecli"))
    assert config_dir == tmp_path / "xc" / "nodecli"
    platform = Paths(config_dir=config_dir, data_dir=tmp_path, state_dir=tmp_path)
    assert keyring_service(platform) == "nodecli"
    other = Paths(config_dir=tmp_path / "xc", data_dir=tmp_path, state_dir=tmp_path)
    assert keyring_service(other) == f"nodecli@{tmp_path / 'xc'}"


def test_a_keyring_describes_its_class_and_service(paths, memory_keyring):  # noqa: F811
    chosen = open_secrets(paths)
    kind = type(memory_keyring)
    expected = (f"keyring ({kind.__module__}.{kind.__name__}, "
                f"service {keyring_service(paths)!r})")
    assert chosen.describe() == expected
    assert describe_backend(chosen) == expected
    assert describe_backend(FileBackend(paths)) == f"file {paths.secrets_file} (0600)"


def test_a_backend_without_a_description_is_named():
    class Bare:
        name = "vault"

    assert describe_backend(Bare()) == "vault"  # type: ignore[arg-type]


def test_a_failing_keyring_is_one_line_naming_the_action_and_the_failure(
        paths, memory_keyring, monkeypatch):  # noqa: F811
    memory_keyring.broken = True
    monkeypatch.setenv("NODECLI_SECRETS_BACKEND", "keyring")
    hint = "unlock the keyring, or set NODECLI_SECRETS_BACKEND=file to use the 0600 secrets file"
    with pytest.raises(ConfigError) as info:
        find_secret(paths, "node:a")
    assert str(info.value) == "the system keyring could not read a secret: KeyringLocked: locked"
    assert info.value.hint == hint
    with pytest.raises(ConfigError) as info:
        open_secrets(paths).set("node:a", "x")
    assert str(info.value) == "the system keyring could not store a secret: KeyringLocked: locked"
    assert info.value.hint == hint


def test_an_unknown_forced_backend_is_named_in_the_refusal(paths, monkeypatch):
    monkeypatch.setenv("NODECLI_SECRETS_BACKEND", " Vault ")
    with pytest.raises(UsageError) as info:
        open_secrets(paths)
    assert str(info.value) == "NODECLI_SECRETS_BACKEND must be 'file' or 'keyring', not 'vault'"


# -- where a profile's record sends a lookup and a delete ----------------------------


def test_a_secret_recorded_in_the_file_is_not_looked_for_in_the_keyring(
        paths, memory_keyring):  # noqa: F811
    memory_keyring.items[(keyring_service(paths), "node:a")] = "in-keyring"
    assert find_secret(paths, "node:a", "file") == (None, None)
    value, backend = find_secret(paths, "node:a", "keyring")
    assert value == "in-keyring" and isinstance(backend, KeyringBackend)


@pytest.mark.parametrize(("where", "kept"), [("file", True), ("none", True),
                                              ("keyring", False), (None, False)])
def test_a_delete_leaves_the_keyring_alone_when_the_record_says_elsewhere(
        paths, memory_keyring, where, kept):  # noqa: F811
    memory_keyring.items[(keyring_service(paths), "node:a")] = "in-keyring"
    FileBackend(paths).set("node:a", "in-file")
    delete_secret(paths, "node:a", where)
    assert FileBackend(paths).get("node:a") is None
    assert bool(memory_keyring.items) is kept


def test_the_profile_a_key_belongs_to_gives_its_record():
    cfg = Config()
    cfg.nodes["n1"] = NodeProfile("n1", "https://n", secrets="keyring")
    cfg.nodes["n2"] = NodeProfile("n2", "https://n")
    cfg.services["n1"] = ServiceProfile("n1", "https://s", secrets="file")
    assert recorded_place(cfg, "node:n1") == "keyring"
    assert recorded_place(cfg, "node:n1:proxy") == "keyring"
    assert recorded_place(cfg, "service:n1") == "file"
    assert recorded_place(cfg, "service:n1:proxy") == "file"
    assert recorded_place(cfg, "node:n2") is None
    assert recorded_place(cfg, "node:gone") is None
    assert recorded_place(cfg, "other:n1") is None
    assert recorded_place(cfg, "n1") is None


def test_secrets_stored_in_two_places_record_none():
    f, k = FileBackend.__new__(FileBackend), KeyringBackend(None)
    assert place_of([f, k]) is None
    assert place_of([f, None, f]) == "file"
    assert place_of([k]) == "keyring"
    assert place_of([None, None]) == "none"
    assert place_of([]) == "none"
