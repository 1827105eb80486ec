"""Where profile secrets live: never in config.toml.

Backends, in order of preference:

* ``keyring``: the system keyring, when the optional ``keyring`` package is installed
  and a working backend is available (not the null/fail backends);
* ``file``: ``secrets.toml`` next to the config, created 0600, written atomically under
  the config lock.

``NODECLI_SECRETS_BACKEND=file|keyring`` forces a choice. Keys are ``KIND:NAME`` where
KIND is ``node`` (password or access-key secret of a node profile) or ``service``
(OAuth token of a service profile).

Keyring entries are filed under the service name ``nodecli`` for the platform's
default folders, and ``nodecli@<config folder>`` when ``NODECLI_HOME``/``--home``
chooses another home, so two homes never share (or overwrite) each other's secrets.

Callers normally use the helpers :func:`store_secret`, :func:`find_secret` and
:func:`delete_secret`: they fall back to the file when the keyring fails at run time
(locked, no D-Bus session...) and look in both places, so a secret stored while the
keyring was unavailable is still found later.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from nodecli.config.paths import Paths, absolute
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

        from nodecli.fsutil import NotRegularFile, read_regular

        try:
            raw = read_regular(self.path)
        except FileNotFoundError:
            return {}
        except NotRegularFile as exc:
            raise ConfigError(f"{self.path}: {exc.strerror}") from None
        mode = os.stat(self.path).st_mode & 0o777
        if mode & 0o077:  # as OpenSSH refuses a private key its group or others may open
            raise ConfigError(
                f"{self.path}: mode {mode:04o}: readable by others or its group; "
                "secrets must be private, so it is not read",
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
        atomic_write(self.path, text.encode(), quiet=True)

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

    def __init__(self, kr: Any, service: str = SERVICE_NAME) -> None:  # kr: keyring module
        self._kr = kr
        self.service = service

    def describe(self) -> str:
        try:
            backend = type(self._kr.get_keyring())
            return f"keyring ({backend.__module__}.{backend.__name__}, service {self.service!r})"
        except Exception:  # noqa: BLE001 - only a description
            return f"keyring (service {self.service!r})"

    def _fail(self, action: str, exc: Exception) -> ConfigError:
        return ConfigError(
            f"the system keyring could not {action}: {type(exc).__name__}: {exc}",
            hint=f"unlock the keyring, or set {BACKEND_ENV}=file to use the 0600 secrets file",
        )

    def get(self, key: str) -> str | None:
        try:
            return self._kr.get_password(self.service, key)
        except Exception as exc:  # noqa: BLE001 - any keyring failure is one clear line
            raise self._fail("read a secret", exc) from None

    def set(self, key: str, value: str) -> None:
        from nodecli import dryrun

        if dryrun.active():  # (--dry-run: the keyring is not touched)
            return
        try:
            self._kr.set_password(self.service, key, value)
        except Exception as exc:  # noqa: BLE001
            raise self._fail("store a secret", exc) from None

    def delete(self, key: str) -> None:
        from nodecli import dryrun

        if dryrun.active():
            return
        try:
            self._kr.delete_password(self.service, key)
        except Exception:  # noqa: BLE001, S110 - absent already: nothing to delete
            pass


def keyring_service(paths: Paths) -> str:
    """``nodecli`` for the platform folders; ``nodecli@<config dir>`` for other homes."""
    try:
        import platformdirs

        default = absolute(platformdirs.user_config_dir("nodecli"))
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        default = None
    here = absolute(str(paths.config_dir))
    if default is not None and here == default:
        return SERVICE_NAME
    return f"{SERVICE_NAME}@{here}"


def _usable_keyring(paths: Paths | None = None) -> KeyringBackend | None:
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
    try:
        if getattr(backend, "priority", 1) <= 0:
            return None
    except Exception:  # noqa: BLE001 - a backend whose priority raises is not usable
        return None
    return KeyringBackend(keyring, keyring_service(paths) if paths else SERVICE_NAME)


def open_secrets(paths: Paths) -> SecretBackend:
    """The preferred backend: forced by ``NODECLI_SECRETS_BACKEND``, else keyring or file."""
    choice = os.environ.get(BACKEND_ENV, "").strip().lower()
    if choice == "file":
        return FileBackend(paths)
    kr = _usable_keyring(paths)
    if choice == "keyring":
        if kr is None:
            raise UsageError(f"{BACKEND_ENV}=keyring but no working keyring backend is available")
        return kr
    if choice and choice not in ("file", "keyring"):
        raise UsageError(f"{BACKEND_ENV} must be 'file' or 'keyring', not {choice!r}")
    return kr or FileBackend(paths)


def secret_key(kind: str, name: str) -> str:
    """Where the secret of a ``node`` or ``service`` profile is filed: ``kind:name``."""
    return f"{kind}:{name}"


def describe_backend(backend: SecretBackend) -> str:
    """A one-line description: ``keyring (...)`` or ``file /path/secrets.toml (0600)``."""
    if isinstance(backend, FileBackend):
        return f"file {backend.path} (0600)"
    describe = getattr(backend, "describe", None)
    return describe() if callable(describe) else backend.name


def _forced() -> bool:
    return bool(os.environ.get(BACKEND_ENV, "").strip())


def store_secret(paths: Paths, key: str, value: str) -> SecretBackend:
    """Store ``value`` under ``key``; return the backend that holds it.

    A keyring that fails at run time falls back to the 0600 file, unless the keyring
    was forced with ``NODECLI_SECRETS_BACKEND=keyring``. The other backend's copy (if
    any) is removed so that exactly one place holds the secret.
    """
    backend = open_secrets(paths)
    try:
        backend.set(key, value)
    except ConfigError:
        if not isinstance(backend, KeyringBackend) or _forced():
            raise
        backend = FileBackend(paths)
        backend.set(key, value)
        return backend
    if isinstance(backend, KeyringBackend):
        FileBackend(paths).delete(key)
    return backend


def find_secret(paths: Paths, key: str,
                where: str | None = None) -> tuple[str | None, SecretBackend | None]:
    """The secret for ``key`` and the backend holding it.

    ``where`` is where the profile recorded its secrets (``model.SECRET_PLACES``):
    ``none`` opens nothing; ``file`` reads only the 0600 file, so the keyring package
    (slow to import) stays unloaded; ``keyring`` asks the keyring, then the file. Not
    recorded (profiles saved by earlier versions): the file, then the keyring. A store
    keeps a secret in one place, and a copy in the file is the newer one (the keyring
    failed when it was stored). ``NODECLI_SECRETS_BACKEND`` wins over the record.
    """
    if _forced():
        return _find_in_preferred(paths, key)
    if where == "none":
        return None, None
    file_backend = FileBackend(paths)
    if where != "keyring":
        value = file_backend.get(key)
        if value is not None:
            return value, file_backend
        if where == "file":
            return None, None
    kr = _usable_keyring(paths)
    if kr is not None:
        try:
            value = kr.get(key)
        except ConfigError:
            value = None  # a keyring that fails now: the file may still hold it
        if value is not None:
            return value, kr
    if where == "keyring":
        value = file_backend.get(key)
        if value is not None:
            return value, file_backend
    return None, None


def _find_in_preferred(paths: Paths, key: str) -> tuple[str | None, SecretBackend | None]:
    """With a forced backend: that one, then the file."""
    backend = open_secrets(paths)
    value = backend.get(key)
    if value is not None:
        return value, backend
    if not isinstance(backend, FileBackend):
        file_backend = FileBackend(paths)
        value = file_backend.get(key)
        if value is not None:
            return value, file_backend
    return None, None


def recorded_place(cfg: Any, key: str) -> str | None:
    """Where the profile that ``key`` belongs to (``node:NAME``, ``service:NAME``, with
    ``:proxy`` for its proxy password) recorded its secrets; None when not recorded."""
    kind, _, rest = key.partition(":")
    table = {"node": cfg.nodes, "service": cfg.services}.get(kind, {})
    profile = table.get(rest.split(":", 1)[0])
    return profile.secrets if profile is not None else None


def place_of(backends: list[SecretBackend | None]) -> str | None:
    """What a profile records (``model.SECRET_PLACES``) after storing its secrets in
    ``backends`` (None: that secret was not stored): the one place they all went, or
    None when they went to different places (then every place is searched)."""
    names = {b.name for b in backends if b is not None}
    if not names:
        return "none"
    return names.pop() if len(names) == 1 else None


def delete_secret(paths: Paths, key: str, where: str | None = None) -> None:
    """Forget ``key`` everywhere it may be: the file, and the keyring unless the profile
    recorded that its secrets are elsewhere (``where``: see :func:`find_secret`)."""
    if where not in ("file", "none") or _forced():
        kr = _usable_keyring(paths)
        if kr is not None:
            kr.delete(key)
    FileBackend(paths).delete(key)
