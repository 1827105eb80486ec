"""The user data as a whole: the export file format, import, config check and restore.

Export format (``config export``, classic ``-b``): UTF-8 JSON, keys sorted::

    {
      "format": "nodecli-user-data",
      "version": 1,
      "transfer_users": {"aspera": {"restrictions": ["file:////data/*"]}},
      "users": {"usr1": {"transfer_user": "aspera", "password": "$scrypt$...",
                         "acls": ["admin"]}}
    }

``transfer_users`` entries carry ``restrictions`` (list) or ``docroot`` (string) or
neither; ``users`` entries carry ``transfer_user`` and optionally ``password`` (a PHC
hash, never clear text) and ``acls``. Both tables have exactly the shape of the
``config.toml`` sections of the same names, so the same validation applies.

Single node users and transfer users are :mod:`nodecli.users.manage`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nodecli.config.model import Config, ModelError
from nodecli.errors import ConfigError, ConflictError, UsageError
from nodecli.users.manage import Outcome, unconfigured_warning

if TYPE_CHECKING:
    from pathlib import Path

EXPORT_FORMAT = "nodecli-user-data"
EXPORT_VERSION = 1
MAX_IMPORT_BYTES = 64 * 1024 * 1024


def export_dict(cfg: Config) -> dict[str, Any]:
    data = cfg.to_dict()
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "transfer_users": data.get("transfer_users", {}),
        "users": data.get("users", {}),
    }


def dump_export(cfg: Config) -> bytes:
    import json

    return (json.dumps(export_dict(cfg), indent=2, sort_keys=True, ensure_ascii=False)
            + "\n").encode("utf-8")


def parse_export(raw: bytes, source: str) -> Config:
    """Validate an export file into a Config holding only user data (ConfigError if bad)."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise ConfigError(f"{source}: file is larger than {MAX_IMPORT_BYTES} bytes")
    import json

    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                          f"{exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{source}: invalid JSON: nested too deeply") from None
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise ConfigError(f"{source}: not a nodecli user-data export "
                          f"(expected \"format\": \"{EXPORT_FORMAT}\")")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or \
            not 1 <= version <= EXPORT_VERSION:
        raise ConfigError(f"{source}: version: unsupported export version {version!r} "
                          f"(this nodecli reads version {EXPORT_VERSION})")
    unknown = sorted(set(data) - {"format", "version", "transfer_users", "users"})
    if unknown:
        raise ConfigError(f"{source}: {unknown[0]}: unknown key")
    body = {"version": 1}
    for key in ("transfer_users", "users"):
        if key in data:
            body[key] = data[key]
    try:
        return Config.from_dict(body)
    except ModelError as exc:
        raise ConfigError(f"{source}: {exc.text}") from None


def apply_import(cfg: Config, imported: Config, *, merge: bool = False) -> dict[str, int]:
    """Replace (default) or merge the user data of ``cfg`` with ``imported``'s.

    Merging keeps existing entries and lets imported ones of the same name win.
    Profiles (nodes, services) are never touched. Returns counts for the summary.
    """
    if not merge:
        cfg.users.clear()
        cfg.transfer_users.clear()
    cfg.transfer_users.update(imported.transfer_users)
    cfg.users.update(imported.users)
    # Validate the combination exactly as a load would (e.g. merged user whose
    # transfer user changed shape): round trip through the model.
    try:
        Config.from_dict(cfg.to_dict())
    except ModelError as exc:
        raise ConflictError(f"the imported data does not fit the current config: {exc.text}") \
            from None
    return {"users": len(imported.users), "transfer_users": len(imported.transfer_users),
            "total_users": len(cfg.users), "total_transfer_users": len(cfg.transfer_users)}


# -- one function per command, over the store ---------------------------------------------


def export_user_data(store: Any, destination: Path | None, *, overwrite: bool = True) -> Outcome:
    """Write all user data (password hashes included) to ``destination`` (0600, atomic).

    ``destination`` None returns the bytes in ``Outcome.data`` (for stdout).
    """
    from pathlib import Path

    from nodecli.fsutil import atomic_write

    cfg = store.load()
    payload = dump_export(cfg)
    summary = f"{len(cfg.users)} node user(s), {len(cfg.transfer_users)} transfer user(s)"
    if destination is None:
        return Outcome(f"exported {summary}", data=payload)
    destination = Path(destination)
    if destination.is_dir():
        raise UsageError(f"{destination} is a folder: give a file name")
    if not overwrite and (destination.exists() or destination.is_symlink()):
        raise ConflictError(f"{destination} already exists", hint="use --force to replace it")
    atomic_write(destination, payload)
    return Outcome(f"exported {summary} to {destination} (mode 0600: it holds password "
                   "hashes)")


def import_user_data(store: Any, raw: bytes, source: str, *, merge: bool = False) -> Outcome:
    imported = parse_export(raw, source)
    with store.edit() as cfg:
        counts = apply_import(cfg, imported, merge=merge)
    how = "merged" if merge else "imported (replacing all user data)"
    return Outcome(
        f"{how}: {counts['users']} node user(s), {counts['transfer_users']} transfer user(s) "
        f"from {source}; now {counts['total_users']} node user(s), "
        f"{counts['total_transfer_users']} transfer user(s); previous config kept as backup",
        [unconfigured_warning(n) for n in sorted(imported.transfer_users)
         if not imported.transfer_users[n].configured],
        data=counts,
    )


def check_config(store: Any) -> Outcome:
    """Validate the config (ConfigError when damaged) and report what it holds."""
    exists = store.exists()
    cfg = store.load()
    warnings = [unconfigured_warning(n) for n in sorted(cfg.transfer_users)
                if not cfg.transfer_users[n].configured]
    warnings += [f"node user {n!r} has no password" for n in sorted(cfg.users)
                 if cfg.users[n].password_hash is None]
    if not exists:
        return Outcome(f"{store.path}: no config yet (an empty configuration)", warnings)
    return Outcome(
        f"{store.path}: ok: {len(cfg.users)} node user(s), {len(cfg.transfer_users)} "
        f"transfer user(s), {len(cfg.nodes)} node profile(s), {len(cfg.services)} service "
        "profile(s)",
        warnings,
    )


def restore_backup(store: Any) -> Outcome:
    cfg = store.restore_backup()
    return Outcome(f"restored {store.path} from {store.paths.backup_file}: "
                   f"{len(cfg.users)} node user(s), {len(cfg.transfer_users)} transfer "
                   "user(s); the replaced version is now the backup")
