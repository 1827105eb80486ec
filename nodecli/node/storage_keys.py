"""Access keys on object storage: the storage objects, their secrets, sub-keys, the tree.

The storage object of ``POST /access_keys`` per type, as the vendor's node administration
guide (its "access key" storage examples) and the peer client's README (its ``ats
access_key create`` examples) document them:

==================  =====================================================================
``local``           ``path``
``aws_s3``          ``bucket``, ``path``, ``endpoint`` (default ``s3.amazonaws.com``),
                    ``credentials``: ``access_key_id``, ``secret_access_key``
``ibm-s3``          the same, with the COS ``endpoint`` required
``azure``           ``container``, ``path``, ``credentials``: ``account``, ``key``,
                    ``storage_endpoint`` (default ``blob.core.windows.net``)
``azure_sas``       ``path``, ``credentials``: ``shared_access_signature`` (a URL)
``softlayer_swift`` ``container``, ``path``, ``credentials``: ``username``, ``api_key``
==================  =====================================================================

(``swift`` on the command line is ``softlayer_swift`` on the wire: the only Swift type
the documentation shows.) Each type has exactly one secret, which comes from a
reference (``env:NAME``, ``file:PATH``, ``stdin``: the syntax of the desired-state
document), never from the command line.

Before a key is sent, its storage URL is checked against the transfer user's
restrictions (interface.md 5.2) with the one glob matcher of
:mod:`nodecli.users.restrictions`: a node accepts a mismatched key and the transfer
fails later (field notes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nodecli.errors import NodecliError, UsageError

MASK = "********"
SECRET_REF_RE = re.compile(r"^(stdin|env:[A-Za-z_][A-Za-z0-9_]*|file:.+)$", re.DOTALL)
MAX_SECRET_FILE = 64 * 1024
MAX_FIELD = 1024
# what makes a field credential-like, wherever it sits in an access key: a part of its
# name holding one of these, or a whole word of its name among the short ones
CREDENTIAL_PARTS = ("secret", "passw", "passphrase", "token", "credential", "signature",
                    "private", "apikey", "accesskey")
CREDENTIAL_WORDS = ("key", "keys", "sas", "pwd", "pass")
# public keys: named like keys, and safe to show (the key's token verification key)
PUBLIC_KEY_NAMES = ("token_verification_key",)


@dataclass(frozen=True, slots=True)
class StorageType:
    """One storage type: its name here and on the wire, its fields and its one secret."""

    name: str
    wire: str
    scheme: str  # the restriction scheme (interface.md 5.2)
    required: tuple[str, ...]  # top-level fields (besides type and path)
    credentials: tuple[str, ...]  # non-secret credential fields, all required
    secret: str | None  # the credential field that is secret
    defaults: tuple[tuple[str, str], ...] = ()  # (field, value): credentials.* nest

    def url(self, storage: Mapping[str, Any]) -> str:
        """The storage URL a restriction is matched against (a folder: ends with /)."""
        path = _folder(storage.get("path"))
        creds = storage.get("credentials")
        creds = creds if isinstance(creds, Mapping) else {}
        if self.wire == "local":
            return f"file:///{path}"
        if self.scheme == "s3":
            host = storage.get("endpoint") or "s3.amazonaws.com"
            return f"s3://{host}/{storage.get('bucket')}{path}"
        if self.wire == "azure":
            return f"azu://{creds.get('account')}/{storage.get('container')}{path}"
        if self.wire == "azure_sas":
            from urllib.parse import urlsplit

            try:
                host = urlsplit(str(creds.get("shared_access_signature") or "")).hostname
            except ValueError:
                host = None
            return f"azu://{host or '?'}{path}"
        return f"{self.scheme}://{storage.get('container')}{path}"


TYPES: dict[str, StorageType] = {t.name: t for t in (
    StorageType("local", "local", "file", (), (), None),
    StorageType("aws_s3", "aws_s3", "s3", ("bucket",), ("access_key_id",), "secret_access_key",
                (("endpoint", "s3.amazonaws.com"),)),
    StorageType("ibm-s3", "ibm-s3", "s3", ("bucket", "endpoint"), ("access_key_id",),
                "secret_access_key"),
    StorageType("azure", "azure", "azu", ("container",), ("account",), "key",
                (("credentials.storage_endpoint", "blob.core.windows.net"),)),
    StorageType("azure_sas", "azure_sas", "azu", (), (), "shared_access_signature"),
    StorageType("swift", "softlayer_swift", "swift", ("container",), ("username",), "api_key"),
)}
BY_WIRE = {t.wire: t for t in TYPES.values()}
#: the command-line option of each field
OPTION = {"bucket": "--bucket", "endpoint": "--endpoint", "container": "--container",
          "access_key_id": "--access-key-id", "account": "--account",
          "username": "--username"}


def storage_type(name: str) -> StorageType:
    kind = TYPES.get(name) or BY_WIRE.get(name)
    if kind is None:
        raise UsageError(f"unknown storage type {str(name)[:40]!r} "
                         f"(known: {', '.join(TYPES)})")
    return kind


def _folder(path: Any) -> str:
    """``/a/b`` -> ``/a/b/``; root -> ``/``."""
    text = str(path or "/")
    return "/" + "/".join(p for p in text.split("/") if p) + ("/" if text.strip("/") else "")


def check_path(path: str, what: str = "--path") -> str:
    if not isinstance(path, str) or not path.startswith("/"):
        raise UsageError(f"{what} must be absolute (start with /), not {str(path)[:80]!r}")
    if any(part in (".", "..") for part in path.split("/")):
        raise UsageError(f"{what} must not hold . or .. ({path[:80]!r})")
    if len(path) > 4096 or any(ord(c) < 0x20 or c == "\x7f" for c in path):
        raise UsageError(f"{what}: at most 4096 characters, no control characters")
    return path


def build_storage(kind_name: str, path: str | None, fields: Mapping[str, str | None],
                  secret: str | None) -> dict[str, Any]:
    """The storage object of a new key. ``fields``: the typed options given (bucket,
    endpoint, container, access_key_id, account, username); ``secret``: the value of
    the type's one secret, already read from its reference."""
    kind = storage_type(kind_name)
    given = {k: v for k, v in fields.items() if v is not None}
    wanted = set(kind.required) | set(kind.credentials) | {d.split(".")[-1] for d, _ in
                                                           kind.defaults}
    stray = sorted(k for k in given if k not in wanted)
    if stray:
        raise UsageError(f"{', '.join(OPTION.get(k, k) for k in stray)}: not a field of "
                         f"{kind.name} storage")
    for name, value in given.items():
        if not value or len(value) > MAX_FIELD or any(ord(c) < 0x20 for c in value):
            raise UsageError(f"{OPTION.get(name, name)}: give 1 to {MAX_FIELD} characters "
                             "without control characters")
    if path is None and kind.wire == "local":
        raise UsageError("local storage needs --path /FOLDER")
    storage: dict[str, Any] = {"type": kind.wire, "path": check_path(path or "/")}
    missing = [OPTION[k] for k in (*kind.required, *kind.credentials) if k not in given]
    if missing:
        raise UsageError(f"{kind.name} storage needs {', '.join(missing)}")
    if kind.secret is not None and not secret:
        raise UsageError(f"{kind.name} storage needs its {kind.secret} from "
                         "--storage-secret env:NAME, file:PATH or stdin")
    if kind.secret is None and secret:
        raise UsageError(f"{kind.name} storage has no secret: leave --storage-secret out")
    for name in kind.required:
        storage[name] = given[name]
    creds: dict[str, Any] = {}
    for dotted, default in kind.defaults:
        field = dotted.split(".")[-1]
        target = creds if dotted.startswith("credentials.") else storage
        target[field] = given.get(field, default)
    if kind.secret is not None:
        creds.update({"type": "key"} if kind.scheme in ("s3", "azu") and
                     kind.wire != "azure_sas" else {})
        creds.update({name: given[name] for name in kind.credentials})
        creds[kind.secret] = secret
        storage["credentials"] = creds
    return storage


def check_secret_ref(ref: Any, what: str) -> str:
    """Refuse anything but a reference: a secret is never an argument (argv is visible
    to every user of the machine)."""
    if not isinstance(ref, str) or not SECRET_REF_RE.match(ref):
        raise UsageError(f"{what}: give env:NAME, file:PATH or stdin, never the secret "
                         "itself (the command line is visible to every user of the machine)")
    return ref


def read_secret_ref(ref: str, what: str, env: Mapping[str, str],
                    stdin_line: Callable[[str], str]) -> str:
    """The secret a reference names: ``stdin`` (one line), ``env:NAME``, ``file:PATH``
    (its first 64 KiB, stripped). Anything else is refused: a secret is never an
    argument (argv is visible to every user of the machine)."""
    check_secret_ref(ref, what)
    if ref == "stdin":
        value = stdin_line(what)
    elif ref.startswith("env:"):
        value = env.get(ref[4:]) or ""
        if not value:
            raise UsageError(f"{what}: {ref}: the variable is not set or empty")
    else:
        from nodecli.fsutil import read_limited, user_path

        raw = read_limited(user_path(ref[5:]), MAX_SECRET_FILE, f"{what} file")
        value = raw.decode("utf-8", "replace").strip()
        if not value:
            raise UsageError(f"{what}: {ref[:80]}: the file is empty")
    if any(ord(c) < 0x20 for c in value):
        raise UsageError(f"{what}: one line without control characters")
    return value


def credential_name(name: Any) -> bool:
    """Whether a field holds a credential, by its name: ``secret``, ``passw``,
    ``token``, ``credential``, ``signature``... anywhere in it, or a word ``key``,
    ``sas``, ``pwd`` (``secret_access_key``, ``api_key``, ``accessKeyId``, ``sas_url``,
    ``shared_access_signature``), public keys excepted."""
    if not isinstance(name, str) or name in PUBLIC_KEY_NAMES:
        return False
    lower = name.lower()
    if any(part in lower for part in CREDENTIAL_PARTS):
        return True
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower())
    return any(w in CREDENTIAL_WORDS for w in words)


def masked(data: Any) -> Any:
    """``data`` with every credential-like field's value as ``********``, at any depth
    (objects inside credential fields are walked, so ``credentials.account`` still
    shows); nothing else changes."""
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            if credential_name(k) and not isinstance(v, dict | list | bool) and v is not None:
                out[k] = MASK
            else:
                out[k] = masked(v)
        return out
    if isinstance(data, list):
        return [masked(v) for v in data]
    return data


def storage_url(storage: Any) -> str | None:
    """The URL of a storage object, or None for a type nodecli does not know."""
    if not isinstance(storage, Mapping):
        return None
    kind = BY_WIRE.get(str(storage.get("type"))) or TYPES.get(str(storage.get("type")))
    return kind.url(storage) if kind else None


def summary(storage: Any) -> str:
    """One line: ``TYPE URL`` (``TYPE PATH`` for a type nodecli does not know)."""
    if not isinstance(storage, Mapping):
        return "?"
    url = storage_url(storage)
    return f"{storage.get('type') or '?'} {url or storage.get('path') or '?'}"


# -- the transfer user's restrictions -------------------------------------------------


def fix_for(storage: Mapping[str, Any]) -> str:
    """The restriction that would allow this storage (to add to the transfer user)."""
    url = storage_url(storage) or ""
    if url.startswith("file:///"):
        return f"{url}*"
    # the type by its wire name or ours, as storage_url finds it (``swift`` is
    # ``softlayer_swift``): not ``*``, which would allow every storage
    kind = BY_WIRE.get(str(storage.get("type"))) or TYPES.get(str(storage.get("type")))
    return f"{kind.scheme}://*" if kind else "*"


def check_restrictions(storage: Mapping[str, Any], restrictions: list[str],
                       holder: str) -> None:
    """Refuse (exit 1) a storage that the transfer user's restrictions do not allow.

    ``holder`` names the transfer user in the message. A storage type nodecli does not
    know is let through (the node decides)."""
    from nodecli.users.restrictions import restriction_matcher

    url = storage_url(storage)
    if url is None or restriction_matcher(restrictions)(url):
        return
    fix = fix_for(storage)
    raise NodecliError(
        f"the storage {url} is outside the restrictions of {holder} "
        f"({', '.join(restrictions) or 'none'}): the node would accept the key and every "
        "transfer with it would fail",
        hint=f"add the restriction {fix} (nodecli xuser set NAME --add-restriction '{fix}'), "
             "choose a path inside them, or give --no-check if the node's restrictions "
             "are not these")


def info_restrictions(info: Any) -> list[str]:
    """The restrictions a node's ``GET /info`` reports for the login's transfer user
    (the emulator does; a node that does not gives none: the check is then skipped)."""
    found = info.get("restrictions") if isinstance(info, dict) else None
    if not isinstance(found, list):
        return []
    return [r for r in found if isinstance(r, str) and r][:1000]


# -- sub-keys --------------------------------------------------------------------------


def within(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it (component by component: /a/b is not in /a/bc)."""
    return _folder(path).startswith(_folder(root))


def sub_storage(parent: Mapping[str, Any], sub: str) -> dict[str, Any]:
    """A sub-key's storage: the parent's (without its credentials, which the node keeps)
    with ``sub``. An absolute ``sub`` must lie inside the parent's path; a relative one
    is joined under it."""
    storage = parent.get("storage")
    if not isinstance(storage, Mapping) or not isinstance(storage.get("type"), str):
        raise NodecliError(f"access key {parent.get('id')!r}: the node did not show its "
                           "storage, so a sub-key cannot be placed under it")
    base = str(storage.get("path") or "/")
    if not sub:
        raise UsageError("--path: give the sub-key's folder")
    path = sub if sub.startswith("/") else base.rstrip("/") + "/" + sub
    check_path(path)
    if not within(path, base):
        raise UsageError(f"--path {sub!r} is outside the parent key's path {base!r}: a "
                         "sub-key holds a part of its parent's storage",
                         hint=f"give a path under {base} (or one relative to it)")
    out = {k: v for k, v in storage.items() if not credential_name(k)}
    out["path"] = "/" + "/".join(p for p in path.split("/") if p)
    return out


def tree(keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The keys as a forest: each ``{"id", "storage" (masked), "sub_keys": [...]}``.

    A key's parent is its ``parent_id`` (what the emulator reports; a node that reports
    none shows every key as a root). A parent this login cannot see makes its sub-keys
    roots; a cycle from a hostile node is cut where it closes."""
    by_id: dict[str, dict[str, Any]] = {}
    for key in keys:
        kid = str(key.get("id"))
        if kid not in by_id:
            by_id[kid] = {"id": kid, "parent_id": _parent(key),
                          "storage": masked(key.get("storage")),
                          "storage_url": storage_url(key.get("storage")), "sub_keys": []}
    roots = []
    for node in by_id.values():
        if node["parent_id"] in by_id and not _in_cycle(node, by_id):
            by_id[node["parent_id"]]["sub_keys"].append(node)
        else:
            roots.append(node)
    return roots


def _in_cycle(node: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> bool:
    seen, parent = {node["id"]}, node["parent_id"]
    while parent in by_id and parent not in seen:
        seen.add(parent)
        parent = by_id[parent]["parent_id"]
    return bool(parent == node["id"])


def _parent(key: Mapping[str, Any]) -> str | None:
    value = key.get("parent_id")
    return str(value) if isinstance(value, str | int) and str(value) else None


def flatten(forest: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Depth-first rows (a key, then its sub-keys): ``id``, ``parent_id``, ``depth``,
    ``storage_type``, ``storage_url``, ``sub_keys`` (the ids of its direct sub-keys),
    ``storage`` (masked)."""
    rows: list[dict[str, Any]] = []
    stack = [(node, 0) for node in reversed(forest)]
    while stack:
        node, depth = stack.pop()
        storage = node["storage"] if isinstance(node["storage"], Mapping) else {}
        rows.append({"id": node["id"], "parent_id": node["parent_id"], "depth": depth,
                     "storage_type": storage.get("type"),
                     "storage_url": node["storage_url"] or storage.get("path"),
                     "sub_keys": [child["id"] for child in node["sub_keys"]],
                     "storage": node["storage"]})
        stack.extend((child, depth + 1) for child in reversed(node["sub_keys"]))
    return rows
