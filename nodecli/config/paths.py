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
from pathlib import Path

APP_NAME = "nodecli"
HOME_ENV = "NODECLI_HOME"


@dataclass(frozen=True, slots=True)
class Paths:
    """The three folders, absolute, and the files nodecli keeps in them."""

    config_dir: Path
    data_dir: Path
    state_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def backup_file(self) -> Path:
        return self.config_dir / "config.toml.bak"

    @property
    def lock_file(self) -> Path:
        return self.config_dir / ".config.lock"

    @property
    def secrets_file(self) -> Path:
        return self.config_dir / "secrets.toml"

    @property
    def keys_dir(self) -> Path:
        return self.data_dir / "keys"

    def as_dict(self) -> dict[str, str]:
        return {
            "config": str(self.config_file),
            "backup": str(self.backup_file),
            "secrets": str(self.secrets_file),
            "keys": str(self.keys_dir),
            "state": str(self.state_dir),
        }


def absolute(path: str) -> str:
    """``str(Path(path).expanduser().absolute())`` as a shell user means it: ``~``
    expanded (``./~`` is a folder named ``~``, and ``~nobody-here`` stays as typed, where
    pathlib would expand or raise), relative to the working folder, repeated ``/`` and
    ``.`` parts dropped and ``..`` kept (dropping it with the part before would be wrong
    where that part is a symbolic link)."""
    p = os.path.expanduser(path)
    if os.name != "posix":
        return str(Path(p).absolute())
    if not p.startswith("/"):
        p = os.path.join(os.getcwd(), p)
    root = "//" if p.startswith("//") and not p.startswith("///") else "/"
    return root + "/".join(part for part in p.split("/") if part not in ("", "."))


def resolve_paths(home: str | os.PathLike[str] | None = None) -> Paths:
    """``home`` (from ``--home``) beats ``$NODECLI_HOME`` beats the platform folders."""
    chosen = os.fspath(home) if home else os.environ.get(HOME_ENV)
    if chosen:
        root = Path(absolute(chosen))
        return Paths(config_dir=root, data_dir=root, state_dir=root / "state")
    import platformdirs  # only when no home is set

    return Paths(
        config_dir=Path(platformdirs.user_config_dir(APP_NAME)),
        data_dir=Path(platformdirs.user_data_dir(APP_NAME)),
        state_dir=Path(platformdirs.user_state_dir(APP_NAME)),
    )
