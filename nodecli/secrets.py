"""Where profile secrets live: never in config.toml.

Backends, in order of preference:

* ``keyring``: the system keyring, when the optional ``keyring`` package is installed
  and a working backend is available (not the null/fail backends);
* ``file``: ``secrets.toml`` next to the config, created 0600, written atomically under
  the config lock.

``NODECLI_SECRETS_BACKEND=file|keyring`` forces a choice. Keys are ``KIND:NAME`` where
KIND is ``node`` (password or access-key secret of a node profile) or ``service``
(OAuth token of a service profile).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from nodecli.config.paths import Paths
from nodecli.errors import ConfigError, UsageError

SERVICE_NAME = "nodecli"
BACKEND_ENV = "NODECLI_SECRETS_BACKEND"


class SecretBackend(Protocol):
    name: str

    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...

    def delete(self, key: str) -> None: ...


class FileBackend:
    name = "file"

    def __init__(self, paths: Paths) -> None:
        self.paths = paths

    @property
    def path(self) -> Path:
        return self.paths.secrets_file

    def _load(self) -> dict[str, str]:
        import tomllib

        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        mode = os.stat(self.path).st_mode & 0o077
        if mode:
            raise ConfigError(
                f"{self.path}: readable by others (mode {oct(os.stat(self.path).st_mode & 0o777)})",
                hint=f"chmod 600 {self.path}",
            )
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{self.path}: invalid secrets file: {exc}") from None
        secrets = data.get("secrets", {})
        if not isinstance(secrets, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in secrets.items()
        ):
            raise ConfigError(f"{self.path}: [secrets] must map names to strings")
        return dict(secrets)

    def _save(self, data: dict[str, str]) -> None:
        import tomli_w

        from nodecli.fsutil import atomic_write, ensure_private_dir

        ensure_private_dir(self.path.parent)
        text = "# nodecli secrets: keep private (0600)\n" + tomli_w.dumps(
            {"secrets": dict(sorted(data.items()))})
        atomic_write(self.path, text.encode())

    def get(self, key: str) -> str | None:
        return self._load().get(key)

    def set(self, key: str, value: str) -> None:
        from nodecli.fsutil import file_lock

        with file_lock(self.paths.lock_file):
            data = self._load()
            data[key] = value
            self._save(data)

    def delete(self, key: str) -> None:
        from nodecli.fsutil import file_lock

        with file_lock(self.paths.lock_file):
            data = self._load()
            if data.pop(key, None) is not None:
                self._save(data)


class KeyringBackend:
    name = "keyring"

    def __init__(self, kr: Any) -> None:  # kr: the keyring module
        self._kr = kr

    def get(self, key: str) -> str | None:
        return self._kr.get_password(SERVICE_NAME, key)

    def set(self, key: str, value: str) -> None:
        self._kr.set_password(SERVICE_NAME, key, value)

    def delete(self, key: str) -> None:
        try:
            self._kr.delete_password(SERVICE_NAME, key)
        except Exception:  # noqa: BLE001, S110 - absent already: nothing to delete
            pass


def _usable_keyring() -> KeyringBackend | None:
    try:
        import keyring
        from keyring.backends import fail, null
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # noqa: BLE001 - misconfigured keyring: fall back to the file
        return None
    if isinstance(backend, (fail.Keyring, null.Keyring)):
        return None
    if getattr(backend, "priority", 1) <= 0:
        return None
    return KeyringBackend(keyring)


def open_secrets(paths: Paths) -> SecretBackend:
    choice = os.environ.get(BACKEND_ENV, "").strip().lower()
    if choice == "file":
        return FileBackend(paths)
    kr = _usable_keyring()
    if choice == "keyring":
        if kr is None:
            raise UsageError(f"{BACKEND_ENV}=keyring but no working keyring backend is available")
        return kr
    if choice and choice not in ("file", "keyring"):
        raise UsageError(f"{BACKEND_ENV} must be 'file' or 'keyring', not {choice!r}")
    return kr or FileBackend(paths)


def secret_key(kind: str, name: str) -> str:
    return f"{kind}:{name}"
