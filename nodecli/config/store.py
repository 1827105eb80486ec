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
from typing import Any

from nodecli.config.columns import (
    CheckedFields,
    UserFields,
    UserTable,
    checked_fields,
    users_of_fields,
    valid_fields,
)
from nodecli.config.model import Config, ModelError
from nodecli.config.paths import Paths
from nodecli.errors import ConfigError, NotFoundError
from nodecli.fsutil import (
    atomic_write,
    ensure_private_dir,
    file_lock,
    remove_stale_temps,
    temp_name,
)

#: From this size on, a save writes the parse cache while the config file is synced.
OVERLAP_BYTES = 256 * 1024
# A config larger than this is certainly not ours (10,000 users take ~1.5 MB).
MAX_CONFIG_BYTES = 64 * 1024 * 1024
#: How ``state/config.cache`` starts: this line ends with the size of the config bytes
#: it was made from and the CRC-32 of what follows them. The config bytes follow
#: verbatim (compared with the file's on every load), then six lines: how those bytes
#: were made (:data:`WRITTEN`: by nodecli's writer, from exactly this content, so an
#: edit of one user may splice its table in place; :data:`PARSED`: read from a file
#: anyone may have written), the parsed config without [users] as one line (a Python
#: literal: ``repr`` writes it and ``ast.literal_eval``, a safe evaluator of literals
#: that the CLI's own imports have loaded already, reads it, where importing json cost
#: ~1 ms per command), and the users' four columns (see nodecli.config.columns; plain
#: text, so that no decoder scans a megabyte of hashes). Another start (an older cache)
#: is ignored and replaced; so is a cache whose tail does not have its CRC (damaged) or
#: does not validate (Config.from_dict checks every type, as for the TOML). The cache is
#: private (0600, in the private state folder): whoever can write it can write
#: config.toml.
CACHE_MAGIC = b"nodecli-config-cache 4 "
WRITTEN = "written"
PARSED = "parsed"


def parse_config_bytes(raw: bytes, source: str) -> Config:
    """Parse and validate TOML bytes; every failure becomes one ConfigError line."""
    return validate_config_data(parse_toml_bytes(raw, source), source)


def parse_toml_bytes(raw: bytes, source: str) -> dict[str, Any]:
    """TOML bytes to plain data (no model validation); ConfigError naming file and line."""
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
    return data


def validate_config_data(data: dict[str, Any], source: str) -> Config:
    try:
        return Config.from_dict(data)
    except ModelError as exc:
        raise ConfigError(
            f"{source}: {exc.text}",
            hint="fix the file by hand, or run 'nodecli config restore' to bring back the backup",
        ) from None


def _lines(blob: bytes, start: int, count: int) -> list[str] | None:
    """``blob[start:]`` as exactly ``count`` UTF-8 lines, each ended by a line break
    (each decoded from the buffer in place); None when it is not that."""
    view = memoryview(blob)
    out = []
    for _ in range(count):
        end = blob.find(b"\n", start)
        if end < 0:
            return None
        out.append(str(view[start:end], "utf-8"))
        start = end + 1
    return out if start == len(blob) else None


class Loaded:
    """A configuration as loaded: ``cfg``; when the parse cache gave them, the users'
    ``columns`` and checked ``fields`` (else None); and whether its bytes are exactly
    what nodecli's writer makes of it (``written``, see :data:`CACHE_MAGIC`)."""

    __slots__ = ("cfg", "columns", "fields", "written")

    def __init__(self, cfg: Config, columns: list[str] | None = None,
                 fields: CheckedFields | None = None, written: bool = False) -> None:
        self.cfg = cfg
        self.columns = columns
        self.fields = fields
        self.written = written


class _Cancelled(Exception):
    """A write given up before the file was replaced (its .bak could not be made)."""


class _Unread:
    """The type of :data:`_UNREAD`: a file's bytes not read yet."""


_UNREAD = _Unread()


class Preloaded:
    """A configuration read and checked before the lock was taken, with the exact bytes
    it came from (see :meth:`ConfigStore.preload`)."""

    __slots__ = ("loaded", "raw", "used")

    def __init__(self, raw: bytes | None, loaded: Loaded) -> None:
        self.raw = raw
        self.loaded = loaded
        self.used = False

    @property
    def cfg(self) -> Config:
        return self.loaded.cfg


class ConfigStore:
    def __init__(self, paths: Paths) -> None:
        self.paths = paths

    @property
    def path(self) -> str:
        return self.paths.config_file

    def _read_bytes(self, path: str) -> bytes | None:
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

    @property
    def cache_path(self) -> str:
        return os.path.join(self.paths.state_dir, "config.cache")

    def load(self) -> Config:
        """The current configuration; an absent file is an empty configuration.

        The parsed form is cached (``state/config.cache``, 0600; see :data:`CACHE_MAGIC`)
        together with the exact bytes it came from: a cache whose bytes differ from the
        file is ignored, so the file is always the truth. The cache spares the
        pure-Python TOML parser, which dominates start-up and costs ~0.7 s on a
        10,000-user config. The model is validated on every load either way, and a cache
        that does not validate is ignored too: the file is then parsed, so a damaged
        config is reported exactly as without a cache.
        """
        return self._load_bytes(self._read_bytes(self.path)).cfg

    def _load_bytes(self, raw: bytes | None) -> Loaded:
        """:meth:`load` of ``raw``, the current file's bytes (None: there is none), with
        what the cache tells of it."""
        if raw is None:
            return Loaded(Config())
        cached = self._cached_parts(raw)
        if cached is not None:
            cfg, columns, fields, written = cached
            cfg.users = users_of_fields(fields)
            return Loaded(cfg, columns, fields, written)
        data = parse_toml_bytes(raw, self.path)
        cfg = validate_config_data(data, self.path)
        self._write_cache(raw, {k: v for k, v in data.items() if k != "users"},
                          UserFields(cfg.users).columns, PARSED)
        return Loaded(cfg)

    def load_user_table(self) -> tuple[Config, UserTable]:
        """For listings: the configuration without its node users (``users`` is left
        empty) and every node user as a :class:`UserTable`, sorted by name. Checked
        exactly as :meth:`load` checks (errors included); only the user objects are not
        built when the cache holds the users column-wise."""
        raw = self._read_bytes(self.path)
        if raw is not None:
            cached = self._cached_parts(raw, with_hashes=False)
            if cached is not None:
                cfg, _columns, fields, written = cached
                names, xusers, _hashes, acls, _lists = fields
                # (the writer's users are in name order: no sort to check it)
                return cfg, UserTable(names, xusers, acls, ordered=written)
        cfg = self.load()
        table = UserTable.of(cfg.users)
        cfg.users = {}
        return cfg, table

    def _cached_parts(self, raw: bytes, *, with_hashes: bool = True
                      ) -> tuple[Config, list[str], CheckedFields, bool] | None:
        """What the cache holds for exactly ``raw``, validated: the configuration without
        its users, the users' columns, their checked fields and whether ``raw`` is what
        nodecli's writer makes of them; None when the cache is absent, for other bytes,
        damaged or not valid (never an error)."""
        from ast import literal_eval

        from nodecli.fsutil import read_regular

        try:
            blob = read_regular(self.cache_path, 2 * MAX_CONFIG_BYTES + 1024)
            if not blob.startswith(CACHE_MAGIC):
                return None
            end = blob.find(b"\n", len(CACHE_MAGIC), len(CACHE_MAGIC) + 40)
            size, _, crc = blob[len(CACHE_MAGIC):end].partition(b" ")
            if end < 0 or not (size.isdigit() and crc.isdigit()) or int(size) != len(raw):
                return None
            start = end + 1
            if not blob.startswith(raw, start):  # (compared in place: no copies)
                return None
            from binascii import crc32  # (the CRC-32 of zlib, in a lighter module)

            if crc32(memoryview(blob)[start + len(raw):]) != int(crc):
                return None  # damaged (torn, flipped, truncated)
            parts = _lines(blob, start + len(raw), 6)
            if parts is None or parts[0] not in (WRITTEN, PARSED):
                return None
            data = literal_eval(parts[1])
            if data.__class__ is not dict or "users" in data:
                return None
            cfg = Config.from_dict(data)
            columns = parts[2:6]
            fields = checked_fields(columns, cfg.transfer_users, with_hashes=with_hashes)
        except (OSError, ValueError, SyntaxError, KeyError, TypeError, AttributeError,
                RecursionError, MemoryError):
            return None  # (ModelError is a ValueError)
        if fields is None:
            return None
        return cfg, columns, fields, parts[0] == WRITTEN

    def _write_cache(self, raw: bytes, rest: dict[str, Any], columns: list[str] | None,
                     form: str) -> None:
        """Cache the configuration ``raw`` holds: ``rest``, its data without the users,
        and ``columns``, the users column-wise (UserFields.columns; None: not cached);
        ``form``: how ``raw`` was made (WRITTEN or PARSED). Best effort and not fsynced:
        a torn or stale cache is simply not used."""
        from binascii import crc32

        if columns is None:
            return  # (nothing a valid configuration holds)
        try:
            tail = [form.encode(), repr(rest).encode("utf-8")]  # (see CACHE_MAGIC)
            tail += [column.encode("utf-8") for column in columns]
            tail = [part for field in tail for part in (field, b"\n")]
            crc = 0
            for part in tail:
                crc = crc32(part, crc)
            head = CACHE_MAGIC + b"%d %d\n" % (len(raw), crc)
            ensure_private_dir(self.paths.state_dir)
            atomic_write(self.cache_path, (head, raw, *tail), durable=False, unlink_first=True)
        except (OSError, ValueError, TypeError):
            pass  # no cache this time: the next load parses the TOML again

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def save_unlocked(self, cfg: Config, fields: UserFields | None = None, *,
                      current: bytes | _Unread | None = _UNREAD) -> None:
        """Write ``cfg``; the caller holds the lock. Keeps the previous file as .bak.
        ``fields``: UserFields of ``cfg.users`` sorted by name, when the caller has them;
        ``current``: the file's bytes (None: no file) when the caller read them under
        the lock it holds."""
        # Validate what we are about to write so we never write what we could not read
        # back (see _checked_bytes; re-parsing the TOML cost ~0.7 s per write at 10,000
        # users).
        data, rest, fields, form = self._checked_bytes(cfg, fields)
        self._write(data, rest, fields.columns, form, current)

    def _write(self, data: bytes, rest: dict[str, Any], columns: list[str] | None,
               form: str, current: bytes | _Unread | None) -> None:
        """Replace the file with ``data`` (checked), keeping the previous file as .bak, and
        cache it (see :meth:`_write_cache` for ``rest``, ``columns`` and ``form``)."""
        ensure_private_dir(self.paths.config_dir)
        for target in (self.path, self.paths.backup_file):
            if os.path.islink(target):  # refused before anything is written: nothing changes
                raise ConfigError(f"{target}: is a symbolic link; nodecli does not write "
                                  "through links", hint=f"replace the link with the file: "
                                  f"cp --remove-destination \"$(readlink -f {target})\" "
                                  f"{target}")
        remove_stale_temps(self.paths.config_dir, (os.path.basename(self.path),
                                                   os.path.basename(self.paths.backup_file)))
        old = self._read_bytes(self.path) if current is _UNREAD else current
        keep = old if old is not None and old != data else None  # (then it becomes .bak)
        if len(data) < OVERLAP_BYTES:
            if keep is not None:
                self._keep_as_backup(keep)
            atomic_write(self.path, data)
            self._write_cache(data, rest, columns, form)
            return
        # A large file's write and fsync are a wait on the disk, during which the
        # interpreter lock is free: meanwhile this thread makes the .bak and writes the
        # cache. The new file takes the config's name only once the .bak is in place
        # (and not if that failed). Config and cache may land in either order after a
        # crash: a cache is used only for the exact bytes of the file.
        import threading

        failed: list[BaseException] = []  # what the .bak, then the write, raised
        kept = threading.Event()

        def after_backup() -> None:
            kept.wait()
            if failed:
                raise _Cancelled

        def write() -> None:
            try:
                atomic_write(self.path, data, before_replace=after_backup)
            except _Cancelled:
                pass
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                failed.append(exc)

        writer = threading.Thread(target=write, name="config-write")
        writer.start()
        try:
            if keep is not None:
                self._keep_as_backup(keep)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            failed.append(exc)
        finally:
            kept.set()
        if not failed:
            self._write_cache(data, rest, columns, form)
        writer.join()
        if failed:
            raise failed[0]

    def _checked_bytes(self, cfg: Config, fields: UserFields | None = None
                       ) -> tuple[bytes, dict[str, Any], UserFields, str]:
        """``config.toml`` bytes of ``cfg`` once it validates (else the ConfigError a load
        of them would give), the plain tables without ``[users]``, the users field by
        field in the order written (sorted by name), and WRITTEN when the users were
        written from the template (else PARSED: the file is not cached as spliceable).

        The users are checked column-wise and written from a template, as the parse
        cache reads them; on any doubt the general check and writer decide (the same
        verdict, message and bytes: tests hold the two paths together)."""
        from nodecli.config.writer import _dump_plain, _dump_with_users, _users_toml

        users = cfg.users
        if fields is None:
            fields = UserFields(users, sort=True)
        rest = cfg.to_dict(users=False)
        try:
            Config.from_dict(rest)
        except ModelError:
            fields.columns = None  # the general check names the first problem
        if not valid_fields(fields, cfg.transfer_users):
            plain = cfg.to_dict()
            validate_config_data(plain, self.path)  # raises (or was only in doubt)
            return _dump_plain(plain), rest, fields, PARSED
        users_text = _users_toml(fields) if users else None
        if users_text is None:
            return _dump_plain(cfg.to_dict()), rest, fields, PARSED
        return _dump_with_users(rest, users_text), rest, fields, WRITTEN

    def _keep_as_backup(self, old: bytes) -> None:
        """Make the current file (``old`` is its content) the backup.

        The current file was written durably, so the backup is a second name for it
        (a hard link, renamed into place atomically) rather than a copy written and
        synced again; the new config then replaces the first name with a new file.
        Where links are not possible the content is written as before."""
        backup = self.paths.backup_file
        tmp = temp_name(backup)
        try:
            if os.lstat(self.path).st_nlink != 1:
                raise OSError("the config file has other names: copy it")
            os.link(self.path, tmp, follow_symlinks=False)
            os.replace(tmp, backup)  # made durable by the directory sync of the config write
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            atomic_write(backup, old)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        ensure_private_dir(self.paths.config_dir)
        with file_lock(self.paths.lock_file):
            yield

    def preload(self) -> Preloaded | None:
        """The current configuration, read and checked without the lock, for
        :meth:`edit` to use if the file is still the same when it holds the lock (so the
        check can run while something slow happens first, such as a password hash).
        None when it cannot be read or is not valid: :meth:`edit` then reads it again
        and reports the problem as always."""
        from nodecli.errors import NodecliError

        try:
            raw = self._read_bytes(self.path)
            return Preloaded(raw, self._load_bytes(raw))
        except NodecliError:
            return None

    @contextlib.contextmanager
    def edit(self, preloaded: Preloaded | None = None, *,
             user: str | None = None) -> Iterator[Config]:
        """Read-modify-write under the lock. Nothing is written if the block raises.

        ``preloaded`` (from :meth:`preload`) is used only if the file, read again under
        the lock, still has exactly the bytes it was made from. ``user``: the block
        changes no node user but this one (it may add, change or delete it, and change
        the other tables), so when the file is as nodecli wrote it, only that user's
        table is written into the file's bytes (see :func:`splice_user`): the same
        bytes as writing everything, for a fraction of the time at 10,000 users."""
        from nodecli.config.writer import UNCHANGED, splice_user

        with self.locked():
            raw = self._read_bytes(self.path)
            if preloaded is not None and not preloaded.used and preloaded.raw == raw:
                loaded = preloaded.loaded
                preloaded.used = True  # once only: the block changes that Config
            else:
                loaded = self._load_bytes(raw)
            cfg, columns = loaded.cfg, loaded.columns
            names = list(cfg.users)
            if columns is None or names != sorted(names):
                columns = UserFields(cfg.users, sort=True).columns  # (not written by nodecli)
            before = (cfg.to_dict(users=False), columns)
            fallback = cfg.to_dict() if columns is None else None
            yield cfg
            if user is not None and loaded.written and loaded.fields is not None and \
                    columns is not None and raw is not None and \
                    cfg.to_dict(users=False) == before[0]:
                spliced = splice_user(raw, columns, loaded.fields, cfg, user)
                if spliced is UNCHANGED:
                    return
                if spliced is not None:
                    data, new_columns = spliced
                    self._write(data, before[0], new_columns, WRITTEN, raw)
                    return
            fields = UserFields(cfg.users, sort=True)
            if fields.columns is None or columns is None:
                changed = cfg.to_dict() != fallback
            else:
                changed = (cfg.to_dict(users=False), fields.columns) != before
            if changed:
                self.save_unlocked(cfg, fields, current=raw)

    def restore_backup(self) -> Config:
        """Swap ``config.toml.bak`` back in (the current file becomes the new .bak)."""
        with self.locked():
            raw = self._read_bytes(self.paths.backup_file)
            if raw is None:
                raise NotFoundError(
                    f"no backup to restore: {self.paths.backup_file} does not exist"
                )
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
