"""Load and save ``config.toml`` safely.

* Reads never lock: writers replace the file atomically, so a reader always sees a
  complete version.
* Every change goes through :meth:`ConfigStore.edit`, one linear path: take the lock,
  read the *current* file (so concurrent invocations never lose each other's updates),
  parse and validate it, let the caller change the model, validate the result, write it
  with tomli_w to a synced temporary file, keep the previous version as
  ``config.toml.bak``, rename the new file into place and sync the folder.
* A damaged file is never overwritten: every command that needs it fails with
  :class:`~nodecli.errors.ConfigError` (exit 3) naming the file and the problem.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nodecli.config import cache
from nodecli.config.model import Config, ModelError
from nodecli.config.paths import Paths
from nodecli.errors import ConfigError, NotFoundError
from nodecli.fsutil import (
    atomic_write,
    ensure_private_dir,
    file_lock,
    remove_stale_temps,
    replacing,
)

# A config larger than this is certainly not ours.
MAX_CONFIG_BYTES = 64 * 1024 * 1024
HEADER = (
    "# nodecli configuration. Edit with care: 'nodecli config check' validates it.\n"
    "# Passwords are salted scrypt hashes; profile secrets are not stored here.\n"
)
_FIX_HINT = "fix the file by hand, or run 'nodecli config restore' to bring back the backup"


def parse_toml_bytes(raw: bytes, source: str | Path) -> dict[str, Any]:
    """TOML bytes to plain data (no model validation); ConfigError naming file and line."""
    import tomllib

    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{source}: file is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    if text.startswith("\ufeff"):
        raise ConfigError(f"{source}: starts with a byte order mark (U+FEFF), which TOML "
                          "does not allow", hint="save the file as UTF-8 without a BOM")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: invalid TOML: {exc}", hint=_FIX_HINT) from None
    except RecursionError:
        raise ConfigError(f"{source}: invalid TOML: nested too deeply") from None


def validate_config_data(data: dict[str, Any], source: str | Path) -> Config:
    try:
        return Config.from_dict(data)
    except ModelError as exc:
        raise ConfigError(f"{source}: {exc.text}", hint=_FIX_HINT) from None


def parse_config_bytes(raw: bytes, source: str | Path) -> Config:
    """Parse and validate TOML bytes; every failure becomes one ConfigError line."""
    return validate_config_data(parse_toml_bytes(raw, source), source)


def dump_config(cfg: Config) -> bytes:
    """``config.toml`` bytes of ``cfg``."""
    return toml_bytes(cfg.to_dict())


def toml_bytes(data: dict[str, Any]) -> bytes:
    """``config.toml`` bytes of ``data`` (what ``Config.to_dict()`` gives)."""
    import tomli_w

    return (HEADER + tomli_w.dumps(data)).encode("utf-8")


class ConfigStore:
    def __init__(self, paths: Paths) -> None:
        self.paths = paths

    @property
    def path(self) -> Path:
        return self.paths.config_file

    @property
    def cache_path(self) -> Path:
        return self.paths.state_dir / "config.cache"

    def exists(self) -> bool:
        return self.path.exists()

    def _read_bytes(self, path: str | Path) -> bytes | None:
        from nodecli.fsutil import NotRegularFile, read_regular

        try:
            return read_regular(path, MAX_CONFIG_BYTES)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise ConfigError(f"{path}: is a folder, not a file") from None
        except NotRegularFile as exc:
            raise ConfigError(f"{path}: {exc.strerror}",
                              hint="nodecli reads and replaces config.toml as a plain file"
                              ) from None
        except PermissionError:
            raise ConfigError(f"{path}: permission denied") from None

    def _parse(self, raw: bytes | None) -> Config:
        """The configuration ``raw`` holds (None: no file, an empty configuration)."""
        if raw is None:
            return Config()
        cached = cache.load(self.cache_path, raw)
        if cached is not None:
            try:
                return Config.from_dict(cached, validated=True)
            except (ModelError, TypeError, AttributeError, RecursionError):
                pass  # not what a parse gives: parse the file, which is the truth
        data = parse_toml_bytes(raw, self.path)
        cfg = validate_config_data(data, self.path)
        cache.save(self.cache_path, raw, data)  # only what validated is cached
        return cfg

    def load(self) -> Config:
        """The current configuration; an absent file is an empty configuration."""
        return self._parse(self._read_bytes(self.path))

    def default_output(self) -> str | None:
        """``[defaults] output``, without parsing a config that cannot have one (the
        common case: every command with -o asks, and a config may hold 10,000 users)."""
        raw = self._read_bytes(self.path)
        if raw is None or b"output" not in raw:
            return None
        return self._parse(raw).default_output

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        ensure_private_dir(self.paths.config_dir)
        with file_lock(self.paths.lock_file):
            yield

    @contextlib.contextmanager
    def edit(self) -> Iterator[Config]:
        """Read-modify-write under the lock. Nothing is written if the block raises or
        changes nothing."""
        with self.locked():
            raw = self._read_bytes(self.path)
            cfg = self._parse(raw)
            before = cfg.to_dict()
            yield cfg
            after = cfg.to_dict()
            if after != before:
                self._save(after, raw)

    def replace_all(self, cfg: Config) -> None:
        """Overwrite the whole configuration (import), keeping the old one as .bak."""
        with self.locked():
            self._save(cfg.to_dict(), self._read_bytes(self.path))

    def _save(self, data: dict[str, Any], current: bytes | None) -> None:
        """Write ``data`` (``Config.to_dict()``) in place of ``current`` (the file's bytes,
        read under the lock the caller holds), keeping ``current`` as the .bak."""
        validate_config_data(data, self.path)  # never write what could not be read back
        new = toml_bytes(data)
        from nodecli import dryrun

        if dryrun.active():
            raise dryrun.config_change(self.path, current, new)
        self._refuse_links("write")
        remove_stale_temps(self.paths.config_dir, (self.path.name, self.paths.backup_file.name))
        # The new file is written and synced first: if that fails (a full disk), the
        # config and its backup are left as they were. The backup is a copy of its own,
        # so config restore undoes exactly the last change that was made.
        with replacing(self.path, new):
            if current is not None and current != new:
                atomic_write(self.paths.backup_file, current)
        cache.save(self.cache_path, new, data)

    def _refuse_links(self, verb: str) -> None:
        """config.toml and its .bak are plain files: a symbolic link in their place is
        refused before anything is read from or written to either (a link could make a
        write land on another file, or a restore read a config someone else wrote)."""
        for target in (self.path, self.paths.backup_file):
            if target.is_symlink():
                raise ConfigError(f"{target}: is a symbolic link; nodecli does not {verb} "
                                  "through links",
                                  hint=f"replace the link with the file: "
                                  f"cp --remove-destination \"$(readlink -f {target})\" "
                                  f"{target}")

    def restore_backup(self) -> Config:
        """Swap ``config.toml.bak`` back in (the current file becomes the new .bak)."""
        with self.locked():
            self._refuse_links("read")
            raw = self._read_bytes(self.paths.backup_file)
            if raw is None:
                raise NotFoundError(
                    f"no backup to restore: {self.paths.backup_file} does not exist"
                )
            cfg = parse_config_bytes(raw, self.paths.backup_file)
            current = self._read_bytes(self.path)
            from nodecli import dryrun

            if dryrun.active():
                raise dryrun.config_change(self.path, current, raw)
            with replacing(self.path, raw):
                if current is not None:
                    atomic_write(self.paths.backup_file, current)
            return cfg
