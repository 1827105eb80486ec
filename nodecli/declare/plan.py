"""What differs between a document and what is: the local users and one node.

A :class:`Change` is one object and what would happen to it: ``add``, ``change`` (with
each field before and after), ``remove`` (``--prune``: an object nodecli created or
adopted, no longer in the document) or ``unmanaged`` (``--prune``: on the node, not in
the document, and not nodecli's: left alone, reported). Reading a node is a handful of
GETs: the access keys (every page), then for each key whose permissions the document
lists, ``GET /permissions`` (all of the key's, logged in as the key) and one
``GET /files/{id}`` per distinct file, to address each permission by its path below the
key's storage, never by the node's numeric id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from nodecli.declare.document import Document, KeySpec, canonical_levels
from nodecli.errors import AuthError, NodecliError, RemoteError, UsageError

LOCAL = "(local)"


@dataclass(slots=True)
class Change:
    scope: str  # LOCAL or the node's name
    kind: str  # transfer_user, node_user, access_key, permission
    name: str
    action: str  # add, change, remove, unmanaged
    fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    ak: str | None = None
    perm_id: str | None = None
    ident: tuple[str, ...] = ()
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def acts(self) -> bool:
        return self.action != "unmanaged"

    def row(self) -> dict[str, Any]:
        return {"node": self.scope, "kind": self.kind, "name": self.name,
                "action": self.action,
                "fields": {k: {"before": b, "after": a} for k, (b, a) in self.fields.items()}}


def managed_id(kind: str, *parts: str) -> str:
    """How the record of managed objects names one: ``access_key\\0ak1``."""
    return "\0".join((kind, *parts))


# -- local users -------------------------------------------------------------------------


def _hidden_password(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    return "hash " + hashlib.sha256(value.encode()).hexdigest()[:8]


def local_changes(doc: Document, cfg: Any, managed: set[str], prune: bool) -> list[Change]:
    out: list[Change] = []
    if doc.transfer_users is not None:
        for name, want in doc.transfer_users.items():
            have = cfg.transfer_users.get(name)
            if have is None:
                out.append(Change(LOCAL, "transfer_user", name, "add",
                                  {k: (None, v) for k, v in want.items()}))
                continue
            now = have.to_dict()
            diff = {k: (now.get(k), want.get(k)) for k in ("restrictions", "docroot")
                    if now.get(k) != want.get(k)}
            if diff:
                out.append(Change(LOCAL, "transfer_user", name, "change", diff))
        if prune:
            out += _extras(LOCAL, "transfer_user", set(cfg.transfer_users) -
                           set(doc.transfer_users), managed)
    if doc.node_users is not None:
        for name, want in doc.node_users.items():
            user = cfg.users.get(name)
            if user is None:
                fields = {k: (None, _hidden_password(v) if k == "password" else v)
                          for k, v in want.items()}
                out.append(Change(LOCAL, "node_user", name, "add", fields))
                continue
            now = {"transfer_user": user.transfer_user, "acls": list(user.acls),
                   "password": user.password_hash}
            delta: dict[str, tuple[Any, Any]] = {}
            for k, v in want.items():
                if now.get(k) != v:
                    delta[k] = ((_hidden_password(now[k]), _hidden_password(v))
                               if k == "password" else (now.get(k), v))
            if delta:
                out.append(Change(LOCAL, "node_user", name, "change", delta))
        if prune:
            out += _extras(LOCAL, "node_user", set(cfg.users) - set(doc.node_users), managed)
    return out


def _extras(scope: str, kind: str, names: set[str], managed: set[str]) -> list[Change]:
    return [Change(scope, kind, n, "remove" if managed_id(kind, n) in managed
                   else "unmanaged") for n in sorted(names)]


def apply_local(doc: Document, cfg: Any, changes: list[Change], removals: bool) -> None:
    """Make ``cfg`` hold what the local changes say: adds and changes (transfer users
    first), or (``removals``) the removals (node users first)."""
    from nodecli.config.model import NodeUser, TransferUser

    local = [c for c in changes if c.scope == LOCAL and c.acts]
    if removals:
        for c in local:
            if c.action == "remove" and c.kind == "node_user":
                cfg.users.pop(c.name, None)
        for c in local:
            if c.action == "remove" and c.kind == "transfer_user":
                cfg.transfer_users.pop(c.name, None)
        return
    for c in local:
        if c.kind == "transfer_user" and c.action in ("add", "change"):
            want = (doc.transfer_users or {})[c.name]
            cfg.transfer_users[c.name] = TransferUser(c.name, list(want.get("restrictions", [])),
                                                      want.get("docroot"))
    for c in local:
        if c.kind == "node_user" and c.action in ("add", "change"):
            want = (doc.node_users or {})[c.name]
            old = cfg.users.get(c.name)
            cfg.users[c.name] = NodeUser(
                c.name, want["transfer_user"],
                want.get("password", old.password_hash if old else None),
                list(want.get("acls", old.acls if old else [])))


# -- secrets of access keys ---------------------------------------------------------------


class KeySecrets:
    """Where each access key's secret comes from: the document's reference
    (``env:NAME``, ``file:PATH``, ``stdin``: one line per key, in the document's order),
    else the secret store (``access_key:NODE_URL/AK``, where apply files the ones it
    makes)."""

    def __init__(self, paths: Any, label: str, env: Any, base_dir: str,
                 stdin_line: Callable[[str], str], node_url: str | None = None) -> None:
        self.paths, self.label, self.env, self.base_dir = paths, label, env, base_dir
        self.stdin_line = stdin_line
        # filed by the node's URL: two profiles of one node share its keys' secrets
        self.node_url = node_url or label
        self._cache: dict[str, str | None] = {}

    def store_key(self, ak: str) -> str:
        from nodecli.config.secrets import secret_key

        return secret_key("access_key", f"{self.node_url}/{ak}")

    def referenced(self, ak: str, ref: str) -> str:
        if self._cache.get(ak):
            return str(self._cache[ak])
        if ref == "stdin":
            value = self.stdin_line(f"secret of access key {ak!r}")
        elif ref.startswith("env:"):
            value = self.env.get(ref[4:]) or ""
            if not value:
                raise UsageError(f"access key {ak}: secret {ref}: the variable is not set "
                                 "or empty")
        else:
            from pathlib import Path

            from nodecli.fsutil import read_limited, user_path

            path = user_path(ref[5:])
            if not path.is_absolute():
                path = Path(self.base_dir) / path
            raw = read_limited(path, 64 * 1024, f"secret file of access key {ak}")
            value = raw.decode("utf-8", "replace").strip()
            if not value:
                raise UsageError(f"access key {ak}: secret {ref}: the file is empty")
        self._cache[ak] = value
        return value

    def find(self, spec: KeySpec | None, ak: str) -> str | None:
        if spec is not None and spec.secret is not None:
            return self.referenced(ak, spec.secret)
        if ak not in self._cache:
            from nodecli.config.secrets import find_secret

            self._cache[ak] = find_secret(self.paths, self.store_key(ak))[0]
        return self._cache[ak]

    def remember(self, ak: str, value: str) -> None:
        from nodecli.config.secrets import store_secret

        store_secret(self.paths, self.store_key(ak), value)
        self._cache[ak] = value


# -- one node ----------------------------------------------------------------------------


@dataclass(slots=True)
class NodeState:
    """What a node holds, as the document sees it."""

    label: str
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    # ak -> (path, type, id) -> {"levels": (...), "id": perm id}; absent: not read
    perms: dict[str, dict[tuple[str, str, str], dict[str, Any]]] = field(default_factory=dict)

    def digest_data(self) -> dict[str, Any]:
        return {"keys": self.keys,
                "perms": {ak: sorted([list(i), list(v["levels"])] for i, v in p.items())
                          for ak, p in sorted(self.perms.items())}}


def fingerprint_of_pem(pem: Any) -> str | None:
    if not isinstance(pem, str) or not pem.strip():
        return None
    from nodecli.tokens.keys import key_fingerprint, load_public_key_pem

    try:
        return key_fingerprint(load_public_key_pem(pem, "token_verification_key"))
    except NodecliError:
        return "unreadable"


def key_client(node_client: Any, ak: str, secret: str, opener: Callable[[Any], Any]) -> Any:
    """A client for the same node, logged in as access key ``ak``."""
    from nodecli.http.client import Auth

    auth = node_client.endpoint.auth
    endpoint = node_client.endpoint.with_auth(Auth(
        "basic", ak, secret, access_key=ak, access_key_header=auth.access_key_header,
        note=f"access key {ak} of the document; secret from its reference or the store"))
    client = opener(endpoint)
    client.add_secret(secret)
    return client


def read_node(client: Any, doc: Document, secrets: KeySecrets,
              opener: Callable[[Any], Any]) -> NodeState:
    """The node's access keys, and the permissions of those the document lists with
    ``permissions`` (a key it does not know the secret of: exit 4, saying how)."""
    from nodecli.node.access_keys import list_access_keys

    state = NodeState(secrets.label)
    wanted = doc.access_keys or {}
    for key in list_access_keys(client):
        ak = str(key.get("id"))
        storage = key["storage"] if isinstance(key.get("storage"), dict) else {}
        conf = key["configuration"] if isinstance(key.get("configuration"), dict) else {}
        state.keys[ak] = {"storage": {"type": storage.get("type"), "path": storage.get("path")},
                          "configuration": conf, "root_file_id": key.get("root_file_id"),
                          "verification_key": fingerprint_of_pem(
                              key.get("token_verification_key"))}
    for ak, spec in wanted.items():
        if ak not in state.keys or spec.permissions is None:
            continue
        secret = secrets.find(spec, ak)
        if secret is None:
            raise AuthError(f"access key {ak} on {secrets.label}: its permissions are read "
                            "as the key, and nodecli does not know its secret",
                            hint=f"give it in the document (access_keys.{ak}.secret: "
                                 "env:NAME, file:PATH or stdin)")
        with key_client(client, ak, secret, opener) as kc:
            state.perms[ak] = read_permissions(kc, state.keys[ak].get("root_file_id"))
    return state


def read_permissions(client: Any, root_id: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Every permission of the key ``client`` logs in as, by (path, type, holder)."""
    from nodecli.node import listed

    if root_id in (None, ""):
        from nodecli.node.access_keys import self_key

        root_id = self_key(client).get("root_file_id")
    root_path = _file_path(client, str(root_id)) if root_id not in (None, "") else "/"
    perms = listed(client.json("GET", "/permissions"), "permissions", "GET /permissions")
    paths: dict[str, str] = {}
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for p in perms:
        fid = str(p.get("file_id"))
        if fid not in paths:
            paths[fid] = _relative(_file_path(client, fid), root_path)
        ident = (paths[fid], str(p.get("access_type")), str(p.get("access_id")))
        out.setdefault(ident, {"levels": canonical_levels(p.get("access_levels")),
                               "id": str(p.get("id"))})
    return out


def _file_path(client: Any, file_id: str) -> str:
    data = client.json("GET", f"/files/{quote(file_id, safe='')}")
    path = data.get("path") if isinstance(data, dict) else None
    if not isinstance(path, str) or not path.startswith("/"):
        raise RemoteError(f"GET /files/{file_id} did not say the file's path")
    return path


def _relative(path: str, root: str) -> str:
    """A file's path below the key's root (a node may say either)."""
    root = root.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    return "/" + "/".join(p for p in path.split("/") if p)


def wanted_fingerprint(spec: KeySpec, base_dir: str) -> tuple[str | None, str | None]:
    """(fingerprint, PEM to send) of the document's verification key."""
    if spec.verification_key is None:
        return None, None
    kind, value = spec.verification_key
    if kind == "fingerprint":
        return value, None
    if kind == "file":
        from pathlib import Path

        from nodecli.node.access_keys import read_public_key_pem

        path = Path(value).expanduser()
        if not path.is_absolute():
            path = Path(base_dir) / path
        pem, _ = read_public_key_pem(str(path))
    else:
        pem = value
    return fingerprint_of_pem(pem), pem


def node_changes(doc: Document, state: NodeState, managed: set[str],
                 prune: bool) -> list[Change]:
    out: list[Change] = []
    if doc.access_keys is None:
        return out
    label = state.label
    for ak, spec in doc.access_keys.items():
        fp, pem = wanted_fingerprint(spec, doc.base_dir)
        have = state.keys.get(ak)
        if have is None:
            fields: dict[str, tuple[Any, Any]] = {"storage": (None, spec.storage)}
            if spec.configuration:
                fields["configuration"] = (None, spec.configuration)
            if fp:
                fields["verification_key"] = (None, fp)
            fields["secret"] = (None, spec.secret or "new (stored, printed once)")
            body: dict[str, Any] = {"storage": spec.storage}
            if spec.configuration:
                body["configuration"] = {k: v for k, v in spec.configuration.items()
                                         if v is not None}
            if fp:
                if pem is None:
                    raise UsageError(f"access key {ak}: a new key needs its verification "
                                     "key as a file or pem, not only its fingerprint")
                body["token_verification_key"] = pem
            out.append(Change(label, "access_key", ak, "add", fields, ak=ak, body=body))
            for p in spec.permissions or []:
                out.append(Change(label, "permission", f"{ak} {p.name()}", "add",
                                  {"levels": (None, list(p.levels))}, ak=ak, ident=p.ident,
                                  body={"levels": list(p.levels)}))
            continue
        fields, body = {}, {}
        if have["storage"] != spec.storage:
            fields["storage"] = (have["storage"], spec.storage)
            body["storage"] = spec.storage
        for k, v in (spec.configuration or {}).items():
            if have["configuration"].get(k) != v:
                fields[f"configuration.{k}"] = (have["configuration"].get(k), v)
                body.setdefault("configuration", {})[k] = v
        if fp and have["verification_key"] != fp:
            fields["verification_key"] = (have["verification_key"], fp)
            if pem is None:
                raise UsageError(f"access key {ak}: its verification key on {label} is "
                                 f"{have['verification_key'] or 'none'}, not {fp}; give the "
                                 "key as a file or pem to change it")
            body["token_verification_key"] = pem
        if fields:
            out.append(Change(label, "access_key", ak, "change", fields, ak=ak, body=body))
        if spec.permissions is not None:
            out += _permission_changes(label, ak, spec, state.perms.get(ak, {}), managed,
                                       prune)
    if prune:
        for c in _extras(label, "access_key", set(state.keys) - set(doc.access_keys),
                         managed):
            c.ak = c.name
            out.append(c)
    return out


def _permission_changes(label: str, ak: str, spec: KeySpec,
                        have: dict[tuple[str, str, str], dict[str, Any]],
                        managed: set[str], prune: bool) -> list[Change]:
    out: list[Change] = []
    wanted = {p.ident: p for p in spec.permissions or []}
    for ident, p in wanted.items():
        now = have.get(ident)
        if now is None:
            out.append(Change(label, "permission", f"{ak} {p.name()}", "add",
                              {"levels": (None, list(p.levels))}, ak=ak, ident=ident,
                              body={"levels": list(p.levels)}))
        elif tuple(now["levels"]) != p.levels:
            out.append(Change(label, "permission", f"{ak} {p.name()}", "change",
                              {"levels": (list(now["levels"]), list(p.levels))}, ak=ak,
                              ident=ident, perm_id=now["id"], body={"levels": list(p.levels)}))
    if prune:
        for ident in sorted(set(have) - set(wanted)):
            mid = managed_id("permission", ak, *ident)
            out.append(Change(label, "permission", f"{ak} {' '.join(ident)}",
                              "remove" if mid in managed else "unmanaged", ak=ak,
                              ident=ident, perm_id=have[ident]["id"]))
    return out


def digest(doc: Document, local: Any, state: NodeState | None, prune: bool) -> str:
    """What a plan was made from: the document, the local users it covers and the
    node's state (a saved plan whose digest no longer matches is refused)."""
    data = {"doc": doc.to_dict(), "prune": prune, "local": local,
            "node": state.digest_data() if state is not None else None,
            "label": state.label if state is not None else None}
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def local_digest_data(doc: Document, cfg: Any) -> dict[str, Any]:
    """The part of the local config the document covers (all of it under --prune)."""
    return {"transfer_users": {k: v.to_dict() for k, v in sorted(cfg.transfer_users.items())}
            if doc.transfer_users is not None else None,
            "node_users": {k: v.to_dict() for k, v in sorted(cfg.users.items())}
            if doc.node_users is not None else None}
