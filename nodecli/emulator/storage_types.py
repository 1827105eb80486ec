"""The storage object of an access key, as the emulated node checks it, and sub-keys.

The types and their fields follow the vendor's node administration guide and the peer
client's README (see :mod:`nodecli.node.storage_keys`); this table is the emulator's
own, written apart from the client's so that a mistake in one is caught by the other.
Fields the emulator does not know (``storage_class``, ``server_side_encryption``, ``api``
...) are kept as they came, as a node keeps them.

A sub-key (interface.md 5.1.4: an access key creates it) holds a part of its parent's
storage: the same type and the same bucket or container, a path inside the parent's;
what the body leaves out (the credentials) is the parent's.
"""

from __future__ import annotations

from typing import Any

from nodecli.emulator.server import HttpError

# type -> (required top-level fields, required credential fields)
REQUIRED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "local": ((), ()),
    "aws_s3": (("bucket",), ("access_key_id", "secret_access_key")),
    "ibm-s3": (("bucket", "endpoint"), ("access_key_id", "secret_access_key")),
    "azure": (("container",), ("account", "key")),
    "azure_sas": ((), ("shared_access_signature",)),
    "softlayer_swift": (("container",), ("username", "api_key")),
}
# the fields that place a sub-key's storage: they must be the parent's
PLACE = ("type", "bucket", "endpoint", "container")


def check_storage(storage: Any) -> dict[str, Any]:
    """Refuse (400) a storage object a node would refuse; return it."""
    if not isinstance(storage, dict):
        raise HttpError(400, "storage (an object with a type) is required")
    kind = storage.get("type")
    if not isinstance(kind, str) or kind not in REQUIRED:
        raise HttpError(400, f"storage.type: unknown storage type {str(kind)[:40]!r} "
                             f"(this node knows {', '.join(REQUIRED)})")
    path = storage.get("path", "/")
    if not isinstance(path, str) or not path.startswith("/"):
        raise HttpError(400, "storage.path must be an absolute path")
    fields, creds_needed = REQUIRED[kind]
    for name in fields:
        if not _text(storage.get(name)):
            raise HttpError(400, f"storage.{name} is required for {kind} storage "
                                 "(a non-empty string)")
    creds = storage.get("credentials")
    if creds_needed:
        if not isinstance(creds, dict):
            raise HttpError(400, f"storage.credentials is required for {kind} storage "
                                 "(an object)")
        for name in creds_needed:
            if not _text(creds.get(name)):
                raise HttpError(400, f"storage.credentials.{name} is required for {kind} "
                                     "storage (a non-empty string)")
        ctype = creds.get("type", "key")
        if kind != "azure_sas" and kind != "softlayer_swift" and ctype != "key":
            raise HttpError(400, f"storage.credentials.type {str(ctype)[:20]!r}: this node "
                                 "takes key credentials only")
    elif creds is not None and not isinstance(creds, dict):
        raise HttpError(400, "storage.credentials must be an object")
    return storage


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def sub_key_storage(parent: dict[str, Any], body: Any) -> dict[str, Any]:
    """The storage of a sub-key: the body's, completed with the parent's; refused (400)
    when it leaves the parent's type, bucket, container or path."""
    from nodecli.emulator.storage import normalize, within

    if not isinstance(body, dict):
        raise HttpError(400, "storage (an object with a path) is required")
    for name in PLACE:
        if name in body and body[name] != parent.get(name):
            raise HttpError(400, f"storage.{name}: a sub-key keeps its parent's "
                                 f"({parent.get(name)!r})")
    path = body.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise HttpError(400, "storage.path must be an absolute path")
    root = normalize(str(parent.get("path") or "/"))
    if not within(normalize(path), root):
        raise HttpError(400, f"storage.path {path[:200]!r} is outside the parent key's "
                             f"path {root!r}")
    merged = {**parent, **body}
    if isinstance(parent.get("credentials"), dict) and isinstance(body.get("credentials"),
                                                                  dict):
        merged["credentials"] = {**parent["credentials"], **body["credentials"]}
    return check_storage(merged)
