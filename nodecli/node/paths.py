"""A path inside an access key's storage, and the key's root.

A path starts with ``/`` (the storage's root) and holds at most
:data:`MAX_COMPONENTS` components, each a word (:func:`check_id`): no ``..``, no
control characters. :func:`root_file_id` asks the node for the key's
``root_file_id`` (``GET /access_keys/self``), where every path is walked from.
Shared by node/files (browsing) and node/permissions (grants), below both.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from nodecli.errors import RemoteError, UsageError

if TYPE_CHECKING:
    from nodecli.http.client import Client

MAX_COMPONENTS = 256


def check_id(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 256:
        raise UsageError(f"{what} must be a non-empty word of at most 256 characters")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in value):
        raise UsageError(f"invalid {what}: control characters or bytes that are not UTF-8")
    return value


def split_path(path: str) -> list[str]:
    """``/a/b`` -> ["a", "b"]: components of a path inside the key's storage."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise UsageError(f"a path starts with '/' (inside the access key's storage), not "
                         f"{str(path)[:60]!r}")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UsageError("a path must not contain '..'")
    if len(parts) > MAX_COMPONENTS:
        raise UsageError(f"a path has at most {MAX_COMPONENTS} components")
    for p in parts:
        check_id(p, "a path component")
    return parts


def root_file_id(client: Client) -> str:
    from nodecli.node.access_keys import self_key

    key = self_key(client)
    root = key.get("root_file_id")
    if not isinstance(root, str | int) or isinstance(root, bool) or str(root) == "":
        raise RemoteError("the node did not say the access key's root_file_id")
    return str(root)
