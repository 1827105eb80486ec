"""Node connection profiles and the node's own endpoints (no click, no rich).

Profiles live in ``config.toml`` under ``[nodes.NAME]``; their secrets (node-user
password or access-key secret) live in the secret store (:mod:`nodecli.secrets`:
keyring, else a 0600 file), never in ``config.toml``.

Remote functions take a :class:`nodecli.http.Client` from the one factory and return
plain dicts that the CLI renders.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from nodecli.config.model import Config, NodeProfile, check_name
from nodecli.config.paths import Paths
from nodecli.errors import ConflictError, NotFoundError, UsageError
from nodecli.fsutil import read_limited

MAX_SPEC_BYTES = 1024 * 1024
MAX_PEM_BYTES = 64 * 1024
STORAGE_TYPES = ("local",)

_HEADER_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_AK_ID_RE = re.compile(r"^[A-Za-z0-9_.@+-]{1,128}$")


# -- profiles ----------------------------------------------------------------------------


#: What ``node add`` was given: the model's own type, not yet validated or normalised.
ProfileSpec = NodeProfile


def validate_profile(spec: NodeProfile) -> NodeProfile:
    """Check a profile's fields and return it normalised; UsageError names the bad one."""
    try:
        check_name(spec.name, "profile name")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    url = spec.url.strip()
    if not re.match(r"^https?://[^\s/?#]+", url) or any(c.isspace() for c in url):
        raise UsageError(f"--url must be an http(s) URL such as https://node:9092, not {url!r}")
    if "@" in url.split("/")[2]:
        raise UsageError("--url must not carry credentials (user:password@); "
                         "use --user / --access-key and the secret store")
    if spec.user and spec.access_key:
        raise UsageError("give --user or --access-key, not both")
    if spec.access_key and not _AK_ID_RE.match(spec.access_key):
        raise UsageError(f"invalid access key id {spec.access_key!r}")
    if spec.access_key_header is not None and not _HEADER_RE.match(spec.access_key_header):
        raise UsageError(f"--access-key-header must be an HTTP header name, "
                         f"not {spec.access_key_header!r}")
    if spec.bearer_file and not spec.access_key:
        raise UsageError("--bearer-file needs the access key the token was made for: "
                         "--access-key AK")
    if spec.insecure and spec.cacert:
        raise UsageError("give --cacert or --insecure, not both")
    if spec.insecure and url.startswith("http://"):
        raise UsageError("--insecure only makes sense with an https:// URL")

    def absolute(path: str | None) -> str | None:
        return str(Path(path).expanduser().absolute()) if path else None

    return NodeProfile(
        name=spec.name, url=url.rstrip("/"), user=spec.user or None,
        access_key=spec.access_key or None, bearer_file=absolute(spec.bearer_file),
        cacert=absolute(spec.cacert), insecure=spec.insecure,
        access_key_header=spec.access_key_header or None,
    )


def secret_key_for(name: str) -> str:
    return f"node:{name}"


def add_profile(store: Any, paths: Paths, spec: ProfileSpec, secret: str | None = None, *,
                replace: bool = False, make_default: bool = False) -> dict[str, Any]:
    """Save a node profile (and its secret in the secret store); return its summary.

    The first profile saved becomes the default. ``replace`` overwrites an existing
    profile of the same name (its stored secret is replaced or removed).
    """
    from nodecli.secrets import delete_secret, store_secret

    profile = validate_profile(spec)
    if secret is not None and not (profile.user or profile.access_key):
        raise UsageError("a secret needs --user or --access-key to go with it")
    with store.edit() as cfg:
        if profile.name in cfg.nodes and not replace:
            raise ConflictError(f"node profile {profile.name!r} already exists",
                                hint="use --force to replace it, or 'nodecli node remove'")
        cfg.nodes[profile.name] = profile
        if make_default or not cfg.default_node:
            cfg.default_node = profile.name
    # outside the config lock: the file backend takes the same lock
    key = secret_key_for(profile.name)
    if secret:
        store_secret(paths, key, secret)
    elif replace:
        delete_secret(paths, key)
    return show_profile(store.load(), paths, profile.name)


def remove_profile(store: Any, paths: Paths, name: str) -> bool:
    """Delete a profile and its stored secret; return True if it was the default."""
    from nodecli.secrets import delete_secret

    was_default = False
    with store.edit() as cfg:
        if name not in cfg.nodes:
            raise _unknown(cfg, name)
        del cfg.nodes[name]
        if cfg.default_node == name:
            cfg.default_node = None
            was_default = True
    delete_secret(paths, secret_key_for(name))
    return was_default


def set_default(store: Any, name: str | None) -> None:
    """Make ``name`` the default profile (None: no default)."""
    with store.edit() as cfg:
        if name is not None and name not in cfg.nodes:
            raise _unknown(cfg, name)
        cfg.default_node = name


def _unknown(cfg: Config, name: str) -> NotFoundError:
    known = ", ".join(sorted(cfg.nodes)) or "none saved"
    return NotFoundError(f"no node profile {name!r} (profiles: {known})")


def _auth_summary(p: NodeProfile) -> str:
    if p.bearer_file:
        return f"bearer ({p.access_key})"
    if p.access_key:
        return f"access key {p.access_key}"
    if p.user:
        return f"node user {p.user}"
    return "none"


def list_profiles(cfg: Config) -> list[dict[str, Any]]:
    """One row per profile (no secrets, no secret-store access: stays fast)."""
    return [
        {"name": p.name, "default": p.name == cfg.default_node, "url": p.url,
         "auth": _auth_summary(p), "user": p.user, "access_key": p.access_key,
         "bearer_file": p.bearer_file, "cacert": p.cacert, "insecure": p.insecure,
         "access_key_header": p.access_key_header}
        for p in (cfg.nodes[n] for n in sorted(cfg.nodes))
    ]


def show_profile(cfg: Config, paths: Paths, name: str | None) -> dict[str, Any]:
    """A profile with where its secret is kept (never the secret itself)."""
    from nodecli.http import DEFAULT_ACCESS_KEY_HEADER
    from nodecli.secrets import describe_backend, find_secret, open_secrets

    if name is None:
        name = cfg.default_node
        if name is None:
            raise UsageError("no profile named and no default profile: "
                             "give NAME or set one with 'nodecli node default NAME'")
    p = cfg.nodes.get(name)
    if p is None:
        raise _unknown(cfg, name)
    value, backend = find_secret(paths, secret_key_for(name))
    preferred = open_secrets(paths)
    return {
        "name": p.name, "default": p.name == cfg.default_node, "url": p.url,
        "auth": _auth_summary(p), "user": p.user, "access_key": p.access_key,
        "bearer_file": p.bearer_file, "cacert": p.cacert, "insecure": p.insecure,
        "access_key_header": p.access_key_header or DEFAULT_ACCESS_KEY_HEADER,
        "secret_stored": value is not None,
        "secret_backend": describe_backend(backend) if backend else None,
        "secret_store": describe_backend(preferred),
    }


# -- the node's endpoints ----------------------------------------------------------------


def _capabilities(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, dict):
        return [{"name": str(k), "value": v} for k, v in raw.items()]
    out = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and "name" in item:
                out.append({"name": str(item["name"]), "value": item.get("value")})
            elif isinstance(item, str):
                out.append({"name": item, "value": True})
    return out


def node_info(client: Any) -> dict[str, Any]:
    """GET /info, as the node sent it (a JSON object), with capabilities normalised.

    Unknown fields are kept; ``capabilities`` and ``settings`` become lists of
    ``{name, value}`` whatever shape the node used.
    """
    from nodecli.errors import RemoteError

    info = client.json("GET", "/info")
    if not isinstance(info, dict):
        raise RemoteError(f"{client.endpoint.base_url}/info did not answer with a JSON object")
    info = dict(info)
    info["capabilities"] = _capabilities(info.get("capabilities"))
    if "settings" in info:
        info["settings"] = _capabilities(info.get("settings"))
    return info


def create_access_key(client: Any, storage_type: str, path: str, id: str | None = None,
                      secret: str | None = None) -> dict[str, Any]:
    """POST /access_keys; return the node's answer (without the secret).

    409 (the id exists) becomes a ConflictError that says so and how to proceed.
    """
    if storage_type not in STORAGE_TYPES:
        raise UsageError(f"storage type {storage_type!r} is not supported "
                         f"(supported: {', '.join(STORAGE_TYPES)})")
    if not path.startswith("/"):
        raise UsageError(f"--path must be absolute (start with /), not {path!r}")
    if id is not None and not _AK_ID_RE.match(id):
        raise UsageError(f"invalid access key id {id!r}: use letters, digits and . _ @ + -")
    body: dict[str, Any] = {"storage": {"type": storage_type, "path": path}}
    if id:
        body["id"] = id
    if secret:
        body["secret"] = secret
        client.add_secret(secret)

    def hint(status: int) -> str | None:
        if status == 409:
            return ("access key ids are unique on a node: choose another --id, or leave "
                    "--id out and the node makes one")
        if status == 403:
            return ("only a node user may create access keys, and its transfer user needs "
                    "a restriction (nodecli xuser ... --restriction)")
        return None

    resp = client.request("POST", "/access_keys", json_body=body, expect=(200, 201),
                          hint_for=hint)
    try:
        data = resp.json() if resp.body else {}
    except Exception:  # noqa: BLE001 - the key exists; the body is only informative
        data = {}
    if not isinstance(data, dict):
        data = {}
    if secret:
        data.pop("secret", None)  # never echo a secret the user chose
    data.setdefault("id", id)
    data.setdefault("storage", body["storage"])
    return data


def read_public_key_pem(path: str) -> tuple[str, bool]:
    """The PEM public key to register, from a public key file or a private key file.

    Returns ``(pem, derived)``; ``derived`` is True when the public key was computed
    from a private key (which is never sent anywhere).
    """
    p = Path(path).expanduser()
    raw = read_limited(p, MAX_PEM_BYTES, "PEM key file")
    from cryptography.hazmat.primitives import serialization

    if b"PRIVATE KEY-----" in raw:
        try:
            key = serialization.load_pem_private_key(raw, password=None)
        except (ValueError, TypeError) as exc:
            raise UsageError(f"{p}: not a usable (unencrypted) PEM private key: "
                             f"{str(exc).splitlines()[0] if str(exc) else exc}") from None
        pub = key.public_key()
        derived = True
    else:
        try:
            pub = serialization.load_pem_public_key(raw)
        except (ValueError, TypeError):
            raise UsageError(f"{p}: not a PEM public key "
                             "(expected -----BEGIN PUBLIC KEY-----)") from None
        derived = False
    from cryptography.hazmat.primitives.asymmetric import rsa

    if not isinstance(pub, rsa.RSAPublicKey):
        raise UsageError(f"{p}: bearer tokens are verified with RSA keys; this key is not RSA")
    pem = pub.public_bytes(serialization.Encoding.PEM,
                           serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")
    return pem, derived


def set_verification_key(client: Any, ak: str, pem: str) -> None:
    """PUT /access_keys/{ak} with ``{"token_verification_key": PEM}`` (node answers 204)."""
    from urllib.parse import quote

    if not _AK_ID_RE.match(ak):
        raise UsageError(f"invalid access key id {ak!r}")

    def hint(status: int) -> str | None:
        if status == 404:
            return f"no access key {ak!r} on this node: create it with 'nodecli access-key create'"
        if status == 403:
            return "an access key may only change itself; a node user may change any key"
        return None

    client.request("PUT", f"/access_keys/{quote(ak, safe='')}",
                   json_body={"token_verification_key": pem}, expect=(200, 204),
                   hint_for=hint)


def load_transfer_spec(path: str) -> dict[str, Any]:
    """A transfer specification from a JSON file (``-`` is not accepted: give a file)."""
    p = Path(path).expanduser()
    raw = read_limited(p, MAX_SPEC_BYTES, "transfer spec")
    try:
        spec = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"transfer spec {p} is not UTF-8 text") from None
    except ValueError as exc:
        raise UsageError(f"transfer spec {p} is not valid JSON: {exc}") from None
    except RecursionError:
        raise UsageError(f"transfer spec {p} is nested too deeply") from None
    if not isinstance(spec, dict):
        raise UsageError(f"transfer spec {p} must hold a JSON object")
    return spec


def start_transfer(client: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """POST /ops/transfers with a bearer token; return the node's answer."""
    from nodecli.errors import RemoteError

    if client.endpoint.auth.kind != "bearer":
        raise UsageError("starting a transfer needs a bearer token: --bearer-file PATH "
                         "(or NODECLI_BEARER) with --access-key AK")
    data = client.json("POST", "/ops/transfers", json_body=spec, expect=(200, 201, 202))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RemoteError("the node answered the transfer request with something other "
                          "than a JSON object")
    return data
