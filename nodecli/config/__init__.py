"""The local TOML store: paths, typed model, atomic locked writes.

Names are imported on first use (PEP 562), so ``import nodecli.config.paths`` (all that
``nodecli --help`` needs) does not load the model, the store and their imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nodecli.config.model import (
        Config,
        NodeProfile,
        NodeUser,
        ServiceProfile,
        TransferUser,
    )
    from nodecli.config.paths import Paths, resolve_paths
    from nodecli.config.store import ConfigStore

_WHERE = {
    "Config": "model",
    "NodeProfile": "model",
    "NodeUser": "model",
    "ServiceProfile": "model",
    "TransferUser": "model",
    "Paths": "paths",
    "resolve_paths": "paths",
    "ConfigStore": "store",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'nodecli.config' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"nodecli.config.{module}"), name)
    globals()[name] = value
    return value
