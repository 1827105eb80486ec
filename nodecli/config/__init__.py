"""The local TOML store: paths, typed model, atomic locked writes."""

from nodecli.config.model import (
    Config,
    NodeProfile,
    NodeUser,
    ServiceProfile,
    TransferUser,
)
from nodecli.config.paths import Paths, resolve_paths
from nodecli.config.store import ConfigStore

__all__ = [
    "Config",
    "ConfigStore",
    "NodeProfile",
    "NodeUser",
    "Paths",
    "ServiceProfile",
    "TransferUser",
    "resolve_paths",
]
