"""Load and save ``config.toml`` safely.

* Reads never lock: writers replace the file atomically, so a reader always sees a
  complete version.
* Every change goes through :meth:`ConfigStore.edit`, which takes the lock, reads the
  *current* file (so concurrent invocations never lose each other's updates), lets
  the caller change the model, validates it, keeps the previous version as
  ``config.toml.bak`` and atomically replaces the file.
* A damaged file is never overwritten: every command that needs it fails with
  :class:`~nodecli.errors.ConfigError` (exit 3) naming the file and the problem.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from nodecli.config.model import Config, ModelError
from nodecli.config.paths import Paths
from nodecli.errors import ConfigError, NotFoundError
from nodecli.fsutil import atomic_write, ensure_private_dir, file_lock

# A config larger than this is certainly not ours (10,000 users take ~1.5 MB).
MAX_CONFIG_BYTES = 64 * 1024 * 1024


def parse_config_bytes(raw: bytes, source: Path | str) -> Config:
    """Parse and validate TOML bytes; every failure becomes one ConfigError line."""
    import tomllib

    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{source}: file is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{source}: invalid TOML: {exc}",
            hint="fix the file by hand, or run 'nodecli config restore' to bring back the backup",
        ) from None
    except RecursionError:
        raise ConfigError(f"{source}: invalid TOML: nested too deeply") from None
    try:
        return Config.from_dict(data)
    except ModelError as exc:
        raise ConfigError(
            f"{source}: {exc.text}",
            hint="fix the file by hand, or run 'nodecli config restore' to bring back the backup",
        ) from None


def dump_config(cfg: Config) -> bytes:
    import tomli_w

    header = (
        "# nodecli configuration. Edit with care: 'nodecli config check' validates it.\n"
        "# Passwords are salted scrypt hashes; profile secrets are not stored here.\n"
    )
    return (header + tomli_w.dumps(cfg.to_dict())).encode("utf-8")


class ConfigStore:
    def __init__(self, paths: Paths) -> None:
        self.paths = paths

    @property
    def path(self) -> Path:
        return self.paths.config_file

    def _read_bytes(self, path: Path) -> bytes | None:
        try:
            with open(path, "rb") as fh:
                return fh.read(MAX_CONFIG_BYTES + 1)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise ConfigError(f"{path}: is a folder, not a file") from None
        except PermissionError:
            raise ConfigError(f"{path}: permission denied") from None

    def load(self) -> Config:
        """The current configuration; an absent file is an empty configuration."""
        raw = self._read_bytes(self.path)
        if raw is None:
            return Config()
        return parse_config_bytes(raw, self.path)

    def exists(self) -> bool:
        return self.path.exists()

    def save_unlocked(self, cfg: Config) -> None:
        """Write ``cfg``; the caller holds the lock. Keeps the previous file as .bak."""
        # Round-trip through validation so we never write what we could not read back.
        data = dump_config(cfg)
        parse_config_bytes(data, self.path)
        ensure_private_dir(self.paths.config_dir)
        old = self._read_bytes(self.path)
        if old is not None and old != data:
            atomic_write(self.paths.backup_file, old)
        atomic_write(self.path, data)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        ensure_private_dir(self.paths.config_dir)
        with file_lock(self.paths.lock_file):
            yield

    @contextlib.contextmanager
    def edit(self) -> Iterator[Config]:
        """Read-modify-write under the lock. Nothing is written if the block raises."""
        with self.locked():
            cfg = self.load()
            before = cfg.to_dict()
            yield cfg
            if cfg.to_dict() != before:
                self.save_unlocked(cfg)

    def restore_backup(self) -> Config:
        """Swap ``config.toml.bak`` back in (the current file becomes the new .bak)."""
        with self.locked():
            raw = self._read_bytes(self.paths.backup_file)
            if raw is None:
                raise NotFoundError(
                    f"no backup to restore: {self.paths.backup_file} does not exist")
            cfg = parse_config_bytes(raw, self.paths.backup_file)
            current = self._read_bytes(self.path)
            atomic_write(self.path, raw)
            if current is not None:
                atomic_write(self.paths.backup_file, current)
            return cfg

    def replace_all(self, cfg: Config) -> None:
        """Overwrite the whole configuration (import), keeping the old one as .bak."""
        with self.locked():
            self.save_unlocked(cfg)


def file_mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777
