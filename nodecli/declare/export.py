"""``export``: the document of what is (a backup), from the local users and a node."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nodecli.declare.document import VERSION
from nodecli.declare.plan import KeySecrets, key_client, read_permissions


def local_sections(cfg: Any) -> dict[str, Any]:
    data = cfg.to_dict()
    users = data.get("users", {})
    return {"transfer_users": data.get("transfer_users", {}), "node_users": users}


def node_section(client: Any, secrets: KeySecrets, opener: Callable[[Any], Any],
                 warn: Callable[[str], None]) -> dict[str, Any]:
    """The node's access keys with their settings, verification keys (PEM: public)
    and, for each key whose secret nodecli knows, its permissions by path."""
    from nodecli.node.access_keys import list_access_keys

    out: dict[str, Any] = {}
    for key in sorted(list_access_keys(client), key=lambda k: str(k.get("id"))):
        ak = str(key.get("id"))
        storage = key["storage"] if isinstance(key.get("storage"), dict) else {}
        entry: dict[str, Any] = {"storage": {"type": storage.get("type") or "local",
                                             "path": storage.get("path") or "/"}}
        conf = key.get("configuration")
        if isinstance(conf, dict) and conf:
            entry["configuration"] = conf
        pem = key.get("token_verification_key")
        if isinstance(pem, str) and pem.strip():
            entry["verification_key"] = {"pem": pem}
        secret = secrets.find(None, ak) if ak != client.endpoint.auth.access_key else \
            client.endpoint.auth.password
        if secret is None:
            warn(f"access key {ak}: its permissions are not exported: nodecli does not know "
                 "its secret (apply stores the secrets of the keys it makes)")
        else:
            with key_client(client, ak, secret, opener) as kc:
                perms = read_permissions(kc, key.get("root_file_id"))
            entry["permissions"] = [
                {"path": path, kind: holder, "levels": list(value["levels"])}
                for (path, kind, holder), value in sorted(perms.items())]
        out[ak] = entry
    return out


def document(local: dict[str, Any] | None, keys: dict[str, Any] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"version": VERSION}
    if local is not None:
        doc.update(local)
    if keys is not None:
        doc["access_keys"] = keys
    return doc
