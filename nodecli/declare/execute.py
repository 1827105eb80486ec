"""Making it so: the steps of ``apply`` in a safe order, and the record of what
nodecli manages on each node.

Order: local adds and changes (transfer users before node users, one config save);
access keys created and changed; permissions added and changed; then the removals,
last: permissions, access keys, node users, transfer users. Every step is idempotent
against a fresh read (a second ``apply`` plans only what is still missing), so a
failure in the middle stops, says what was done and what not, and the next apply
finishes the job.

The record (``STATE/declare/<node>.json``, and ``local.json`` for the local users) lists
the objects nodecli created or adopted (an object of the document that was already
there); ``--prune`` removes nothing else. It is written atomically under a lock held
for the whole apply: before the first step it gains every object of the document (an
object it names that a failure left uncreated is harmless there), after the removals it
loses the removed ones.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from nodecli.declare.document import Document
from nodecli.declare.plan import LOCAL, Change, KeySecrets, key_client, managed_id
from nodecli.errors import NodecliError

RECORD_VERSION = 1
# a record holds one short line per object apply manages
MAX_RECORD_BYTES = 256 * 1024 * 1024


def record_path(state_dir: Any, label: str) -> Any:
    from pathlib import Path

    if label == LOCAL:
        name = "local"
    else:
        readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:40]
        name = f"{readable}-{hashlib.sha256(label.encode()).hexdigest()[:12]}"
    return Path(state_dir) / "declare" / f"{name}.json"


def load_record(state_dir: Any, label: str) -> set[str]:
    """The objects nodecli manages for ``label`` (none when never applied)."""
    from nodecli.errors import ConfigError
    from nodecli.fsutil import read_regular

    path = record_path(state_dir, label)
    try:
        raw = read_regular(path, MAX_RECORD_BYTES)
        if len(raw) > MAX_RECORD_BYTES:
            raise ValueError(f"larger than {MAX_RECORD_BYTES} bytes")
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable record of managed objects: {exc}",
                          hint="remove it: --prune then removes nothing until the next "
                               "apply records what it adopts") from None
    objects = data.get("objects") if isinstance(data, dict) else None
    if not isinstance(objects, list) or not all(isinstance(o, str) for o in objects):
        raise ConfigError(f"{path}: not a record of managed objects")
    return set(objects)


def save_record(state_dir: Any, label: str, objects: set[str]) -> None:
    from nodecli.fsutil import atomic_write, ensure_private_dir

    path = record_path(state_dir, label)
    ensure_private_dir(path.parent)
    data = {"version": RECORD_VERSION, "node": label, "objects": sorted(objects)}
    atomic_write(path, (json.dumps(data, indent=0) + "\n").encode("utf-8"), quiet=True)


@contextlib.contextmanager
def record_lock(state_dir: Any, labels: list[str]) -> Iterator[None]:
    """One apply at a time per node (and for the local users)."""
    from nodecli.fsutil import file_lock

    with contextlib.ExitStack() as stack:
        for label in sorted(labels):
            path = record_path(state_dir, label)
            stack.enter_context(file_lock(path.with_suffix(".lock"), timeout=10.0,
                                          what=f"the record of {label}"))
        yield


def document_objects(doc: Document, scope: str) -> set[str]:
    """Every object the document names in ``scope`` (what apply adopts)."""
    out: set[str] = set()
    if scope == LOCAL:
        out |= {managed_id("transfer_user", n) for n in doc.transfer_users or {}}
        out |= {managed_id("node_user", n) for n in doc.node_users or {}}
        return out
    for ak, spec in (doc.access_keys or {}).items():
        out.add(managed_id("access_key", ak))
        out |= {managed_id("permission", ak, *p.ident) for p in spec.permissions or []}
    return out


def removed_objects(changes: list[Change]) -> set[str]:
    out = set()
    for c in changes:
        if c.action != "remove":
            continue
        if c.kind == "permission":
            out.add(managed_id("permission", c.ak or "", *c.ident))
        else:
            out.add(managed_id(c.kind, c.name))
            if c.kind == "access_key":  # its permissions went with it
                out |= {managed_id("permission", c.name)}
    return out


def forget(objects: set[str], removed: set[str]) -> set[str]:
    keys = {r.split("\0")[1] for r in removed if r.startswith("permission\0")
            and r.count("\0") == 1}
    gone = {o for o in objects if o.startswith("permission\0") and o.split("\0")[1] in keys}
    return objects - removed - gone


# -- ordering, and what each step sends ---------------------------------------------------

ORDER = [("access_key", "add"), ("access_key", "change"), ("permission", "add"),
         ("permission", "change"), ("permission", "remove"), ("access_key", "remove")]


def node_steps(changes: list[Change]) -> list[Change]:
    rank = {k: i for i, k in enumerate(ORDER)}
    acting = [c for c in changes if c.scope != LOCAL and c.acts]
    return sorted(acting, key=lambda c: rank[(c.kind, c.action)])


def requests_of(change: Change) -> tuple[str, str, dict[str, Any] | None]:
    """(method, path, body) a step sends; a file id still to be found is named by its
    path."""
    from urllib.parse import quote

    ak = quote(change.ak or "", safe="")
    if change.kind == "access_key":
        if change.action == "add":
            return "POST", "/access_keys", {"id": change.ak, "secret": "***",
                                            **change.body}
        if change.action == "change":
            return "PUT", f"/access_keys/{ak}", change.body
        return "DELETE", f"/access_keys/{ak}", None
    if change.action == "add":
        path, kind, holder = change.ident
        return "POST", "/permissions", {"file_id": f"<id of {path}>", "access_type": kind,
                                        "access_id": holder,
                                        "access_levels": change.body["levels"], "tags": None}
    pid = quote(change.perm_id or "", safe="")
    if change.action == "change":
        return "PUT", f"/permissions/{pid}", {"access_levels": change.body["levels"]}
    return "DELETE", f"/permissions/{pid}", None


class Stopped(NodecliError):
    """A step failed: what was done and what not are in ``done``/``left``."""


class NodeRunner:
    """Runs the node steps of one node with the node user's client; per-key clients
    (permissions are changed as the key) are opened once each."""

    def __init__(self, client: Any, secrets: KeySecrets, opener: Callable[[Any], Any],
                 announce: Callable[[str, str], None]) -> None:
        self.client, self.secrets, self.opener, self.announce = client, secrets, opener, announce
        self._keys: dict[str, Any] = {}
        self._paths: dict[str, dict[str, str]] = {}

    def close(self) -> None:
        for kc in self._keys.values():
            if kc is not self.client:
                kc.close()
        self._keys.clear()

    def key(self, ak: str, spec: Any) -> Any:
        if ak not in self._keys:
            secret = self.secrets.find(spec, ak)
            if secret is None:
                from nodecli.errors import AuthError

                raise AuthError(f"access key {ak}: nodecli does not know its secret, and "
                                "its permissions are changed as the key",
                                hint=f"give it in the document: access_keys.{ak}.secret")
            self._keys[ak] = key_client(self.client, ak, secret, self.opener)
        return self._keys[ak]

    def file_id(self, ak: str, kc: Any, path: str) -> str:
        from nodecli.errors import NotFoundError
        from nodecli.node.paths import root_file_id
        from nodecli.node.permissions import entries

        cache = self._paths.setdefault(ak, {})
        if path in cache:
            return cache[path]
        if path == "/":
            cache["/"] = root_file_id(kc)
            return cache["/"]
        parent, _, _name = path.rpartition("/")
        parent_id = self.file_id(ak, kc, parent or "/")
        for entry in entries(kc, parent_id):
            if entry.get("id") not in (None, "") and isinstance(entry.get("name"), str):
                cache.setdefault(f"{parent}/{entry['name']}", str(entry["id"]))
        if path not in cache:
            raise NotFoundError(f"access key {ak}: {path}: no such file or folder on the "
                                "node (a permission is set on something that exists)")
        return cache[path]

    def run(self, change: Change, doc: Document) -> None:
        from nodecli.node import access_keys as keys
        from nodecli.node import permissions as perms

        spec = (doc.access_keys or {}).get(change.ak or "")
        ak = change.ak or ""
        if change.kind == "access_key":
            if change.action == "add":
                assert spec is not None
                if spec.secret is not None:
                    secret = self.secrets.referenced(ak, spec.secret)
                else:
                    import secrets as random_secrets

                    secret = random_secrets.token_urlsafe(24)
                    self.secrets.remember(ak, secret)  # stored before the node has it
                    self.announce(ak, secret)
                extra = {k: v for k, v in change.body.items() if k != "storage"}
                keys.create_access_key(self.client, spec.storage["type"],
                                       spec.storage["path"], ak, secret, extra)
            elif change.action == "change":
                keys.update_access_key(self.client, ak, change.body)
            else:
                keys.delete_access_key(self.client, ak)
            return
        kc = self.key(ak, spec)
        if change.action == "add":
            path, kind, holder = change.ident
            perms.grant(kc, self.file_id(ak, kc, path), kind, holder, change.body["levels"])
        elif change.action == "change":
            perms.modify(kc, change.perm_id or "", change.body["levels"])
        else:
            perms.revoke(kc, change.perm_id or "")


def step_name(change: Change) -> str:
    where = "" if change.scope == LOCAL else f" on {change.scope}"
    return f"{change.action} {change.kind.replace('_', ' ')} {change.name}{where}"


def run_steps(steps: list[Callable[[], None]], names: list[str],
              report: Callable[[list[str], list[str]], None]) -> None:
    """Run ``steps`` in order; on a failure, ``report(done, not_done)`` (the failed step
    first among those not done) and re-raise."""
    for i, step in enumerate(steps):
        try:
            step()
        except NodecliError:
            report(names[:i], names[i:])
            raise
