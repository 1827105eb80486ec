"""Where nodecli keeps its files.

``NODECLI_HOME`` (or ``--home``) puts everything in one folder::

    $NODECLI_HOME/config.toml     users, transfer users, profiles (no secrets in clear)
    $NODECLI_HOME/config.toml.bak the previous version, for ``nodecli config restore``
    $NODECLI_HOME/.config.lock    write lock
    $NODECLI_HOME/secrets.toml    profile secrets when no keyring backend works (0600)
    $NODECLI_HOME/keys/           RSA key pairs for bearer tokens
    $NODECLI_HOME/state/          checkpoints, caches, emulator data

Without it the platform's folders are used (platformdirs): user config folder for
config and secrets, user data folder for keys, user state folder for state.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

APP_NAME = "nodecli"
HOME_ENV = "NODECLI_HOME"


@dataclass(frozen=True, slots=True)
class Paths:
    """The three folders, as absolute path strings, and the files nodecli keeps in them."""

    config_dir: str
    data_dir: str
    state_dir: str

    @property
    def config_file(self) -> str:
        return os.path.join(self.config_dir, "config.toml")

    @property
    def backup_file(self) -> str:
        return os.path.join(self.config_dir, "config.toml.bak")

    @property
    def lock_file(self) -> str:
        return os.path.join(self.config_dir, ".config.lock")

    @property
    def secrets_file(self) -> str:
        return os.path.join(self.config_dir, "secrets.toml")

    @property
    def keys_dir(self) -> str:
        return os.path.join(self.data_dir, "keys")

    def as_dict(self) -> dict[str, str]:
        return {
            "config": self.config_file,
            "backup": self.backup_file,
            "secrets": self.secrets_file,
            "keys": self.keys_dir,
            "state": self.state_dir,
        }


def absolute(path: str) -> str:
    """``str(Path(path).expanduser().absolute())`` without importing pathlib: ``~``
    expanded, relative to the working folder, repeated ``/`` and ``.`` parts dropped and
    ``..`` kept (dropping it with the part before would be wrong where that part is a
    symbolic link)."""
    p = os.path.expanduser(path)
    if os.name != "posix":
        from pathlib import Path

        return str(Path(p).absolute())
    if not p.startswith("/"):
        p = os.path.join(os.getcwd(), p)
    root = "//" if p.startswith("//") and not p.startswith("///") else "/"
    return root + "/".join(part for part in p.split("/") if part not in ("", "."))


def resolve_paths(home: str | os.PathLike[str] | None = None) -> Paths:
    """``home`` (from ``--home``) beats ``$NODECLI_HOME`` beats the platform folders."""
    chosen = os.fspath(home) if home else os.environ.get(HOME_ENV)
    if chosen:
        root = absolute(chosen)
        return Paths(config_dir=root, data_dir=root, state_dir=os.path.join(root, "state"))
    import platformdirs  # only when no home is set

    return Paths(
        config_dir=platformdirs.user_config_dir(APP_NAME),
        data_dir=platformdirs.user_data_dir(APP_NAME),
        state_dir=platformdirs.user_state_dir(APP_NAME),
    )
