"""Secret store: keyring when a backend works, else a 0600 file; never config.toml."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend as _KRBase
from keyring.errors import KeyringLocked, PasswordDeleteError

from nodecli.config.paths import resolve_paths
from nodecli.config.secrets import (
    FileBackend,
    KeyringBackend,
    delete_secret,
    find_secret,
    keyring_service,
    open_secrets,
    store_secret,
)
from nodecli.errors import ConfigError, UsageError


class MemoryKeyring(_KRBase):
    """A real keyring backend class (keyring's own API), kept in memory."""

    priority = 5  # type: ignore[assignment]

    def __init__(self, broken: bool = False) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}
        self.broken = broken

    def get_password(self, service: str, username: str) -> str | None:
        if self.broken:
            raise KeyringLocked("locked")
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        if self.broken:
            raise KeyringLocked("locked")
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.items:
            raise PasswordDeleteError("absent")
        del self.items[(service, username)]


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    kr = MemoryKeyring()
    keyring.set_keyring(kr)
    yield kr
    keyring.set_keyring(previous)


@pytest.fixture
def paths(home):
    return resolve_paths(home)


def test_file_backend_when_no_keyring_works(paths):
    backend = open_secrets(paths)
    assert isinstance(backend, FileBackend)
    used = store_secret(paths, "node:a", "pw-a")
    assert used.name == "file"
    assert stat.S_IMODE(os.stat(paths.secrets_file).st_mode) == 0o600
    assert find_secret(paths, "node:a")[0] == "pw-a"
    delete_secret(paths, "node:a")
    assert find_secret(paths, "node:a") == (None, None)


def test_file_readable_by_others_is_refused(paths):
    store_secret(paths, "node:a", "pw")
    os.chmod(paths.secrets_file, 0o644)
    with pytest.raises(ConfigError, match="readable by others or its group"):
        find_secret(paths, "node:a")


def test_damaged_file_is_a_config_error(paths):
    Path(paths.config_dir).mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.secrets_file, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"[secrets\n")
    os.close(fd)
    with pytest.raises(ConfigError, match="invalid secrets file"):
        find_secret(paths, "node:a")


def test_keyring_used_when_it_works(paths, memory_keyring):
    backend = open_secrets(paths)
    assert isinstance(backend, KeyringBackend)
    used = store_secret(paths, "node:k", "pw-k")
    assert used.name == "keyring"
    service = keyring_service(paths)
    assert memory_keyring.items == {(service, "node:k"): "pw-k"}
    assert not Path(paths.secrets_file).exists()
    value, where = find_secret(paths, "node:k")
    assert value == "pw-k" and where.name == "keyring"
    delete_secret(paths, "node:k")
    assert memory_keyring.items == {}


def test_keyring_entries_are_scoped_per_home(tmp_path, memory_keyring):
    a, b = resolve_paths(tmp_path / "a"), resolve_paths(tmp_path / "b")
    store_secret(a, "node:prod", "pw-a")
    store_secret(b, "node:prod", "pw-b")
    assert find_secret(a, "node:prod")[0] == "pw-a"
    assert find_secret(b, "node:prod")[0] == "pw-b"
    assert keyring_service(a) != keyring_service(b)


def test_broken_keyring_falls_back_to_file(paths, memory_keyring):
    memory_keyring.broken = True
    used = store_secret(paths, "node:x", "pw-x")
    assert used.name == "file"
    assert find_secret(paths, "node:x")[0] == "pw-x"


def test_forced_keyring_failure_is_explained(paths, memory_keyring, monkeypatch):
    memory_keyring.broken = True
    monkeypatch.setenv("NODECLI_SECRETS_BACKEND", "keyring")
    with pytest.raises(ConfigError, match="keyring could not store") as exc:
        store_secret(paths, "node:x", "pw-x")
    assert "NODECLI_SECRETS_BACKEND=file" in (exc.value.hint or "")


def test_forced_backends(paths, memory_keyring, monkeypatch):
    monkeypatch.setenv("NODECLI_SECRETS_BACKEND", "file")
    assert isinstance(open_secrets(paths), FileBackend)
    monkeypatch.setenv("NODECLI_SECRETS_BACKEND", "vault")
    with pytest.raises(UsageError):
        open_secrets(paths)


def test_forced_keyring_without_backend(paths, monkeypatch):
    monkeypatch.setenv("NODECLI_SECRETS_BACKEND", "keyring")
    with pytest.raises(UsageError, match="no working keyring"):
        open_secrets(paths)


def test_secret_found_in_file_after_keyring_appears(paths, memory_keyring):
    FileBackend(paths).set("node:old", "pw-old")  # stored while no keyring worked
    value, where = find_secret(paths, "node:old")
    assert value == "pw-old" and where.name == "file"
    store_secret(paths, "node:old", "pw-new")  # now moves to the keyring
    assert find_secret(paths, "node:old")[1].name == "keyring"
    assert FileBackend(paths).get("node:old") is None


def test_node_show_reports_keyring_through_cli(invoke, home, memory_keyring):
    r = invoke("node", "add", "--no-check", "k", "--url", "https://node:9092", "--user", "u",
               "--password-stdin", input="kr-secret\n")
    assert r.exit_code == 0, r
    shown = json.loads(invoke("node", "show", "k", "-o", "json").stdout)
    assert shown["secret_stored"] is True
    assert shown["secret_backend"].startswith("keyring")
    assert "kr-secret" not in (home / "config.toml").read_text()
    assert not (home / "secrets.toml").exists()
    assert invoke("node", "remove", "k").exit_code == 0
    assert memory_keyring.items == {}
