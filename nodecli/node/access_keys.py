"""Access keys on a node: list, show, change, delete (and their logging setting).

Facts from the public documentation of this node family and its open-source client:
``GET /access_keys`` (paged), ``GET|PUT|DELETE /access_keys/{id}`` (PUT is a partial
update), ``GET /access_keys/self``. An access key carries ``id``, ``storage`` (``type``,
``path``), ``root_file_id`` and settings in a ``configuration`` object.

interface.md 6.2 says activity logging can be set per access key from node 3.8.0 but
not WHERE in the key object. nodecli's guess lives in one place, :data:`LOGGING_PATH`
(``configuration.activity_event_logging``); ``access-key set --set KEY=VALUE`` edits
anything else.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from nodecli.errors import NodecliError, NotFoundError, RemoteError, UsageError
from nodecli.fsutil import read_limited
from nodecli.node import listed

if TYPE_CHECKING:
    from nodecli.http.client import Client

#: Where the per-key activity_event_logging setting sits in an access key (a guess:
#: interface.md does not show it).
LOGGING_PATH = ("configuration", "activity_event_logging")
PER_KEY_LOGGING_VERSION = (3, 8, 0)
AK_ID_RE = re.compile(r"^[A-Za-z0-9_.@+-]{1,128}\Z")  # (\Z: $ matches before a final newline)
PAGE_SIZE = 100
MAX_PAGES = 10_000


def check_ak_id(ak: str) -> str:
    if not isinstance(ak, str) or not AK_ID_RE.match(ak):
        raise UsageError(f"invalid access key id {str(ak)[:60]!r}: letters, digits and "
                         ". _ @ + - (at most 128)")
    return ak


def _path(ak: str) -> str:
    return f"/access_keys/{quote(check_ak_id(ak), safe='')}"


def _hint_404(ak: str) -> Any:
    def hint(status: int) -> str | None:
        if status == 404:
            return f"no access key {ak!r} that this login may see: list them with " \
                   "'nodecli access-key list'"
        if status == 403:
            return ("a node user changes the keys it owns; an access key changes itself; a "
                    "bearer token needs scope node.AK:admin:all")
        return None

    return hint


def list_access_keys(client: Client, page_size: int = PAGE_SIZE) -> list[dict[str, Any]]:
    """Every access key this login may see, page after page.

    Follows ``Link: rel="next"`` when the node sends one, else asks for the next
    ``page`` until an EMPTY page (a short page is not the end: a node may cap
    ``per_page``), and stops if a node that ignores paging repeats a page. A Link that
    leads back to any page already read is a loop: exit 6, nothing printed.
    """
    from nodecli.http.links import PageTrail, next_page

    trail = PageTrail()
    keys: list[dict[str, Any]] = []
    seen: set[str] = set()
    target: str = "/access_keys"
    params: list[tuple[str, str]] | None = [("page", "1"), ("per_page", str(page_size))]
    page = 1
    for _ in range(MAX_PAGES):
        resp = client.request("GET", target, params=params)
        trail.add(target if params is None else resp.url)
        data = listed(resp.json() if resp.body else [], "access_keys", "GET /access_keys")
        fresh = [k for k in data if str(k.get("id")) not in seen]
        for k in fresh:
            seen.add(str(k.get("id")))
        keys.extend(fresh)
        try:
            link = next_page(resp.header("link"), resp.url, client.endpoint.base_url,
                             "/access_keys").url
        except ValueError:
            link = None
        if not data or not fresh:
            break
        if link is not None:
            if link in trail:
                raise RemoteError(f'{resp.url}: the node\'s Link rel="next" leads back to a '
                                  f"page already read ({link[:120]}, after {len(trail)} "
                                  "pages); stopping rather than reading it again")
            target, params = link, None
        else:
            page += 1
            target, params = "/access_keys", [("page", str(page)), ("per_page", str(page_size))]
    return keys


def get_access_key(client: Client, ak: str) -> dict[str, Any]:
    data = client.json("GET", _path(ak), hint_for=_hint_404(ak))
    if not isinstance(data, dict):
        raise RemoteError(f"GET /access_keys/{ak} did not answer with an object")
    return data


def self_key(client: Client) -> dict[str, Any]:
    """GET /access_keys/self: the key this request authenticates with."""
    def hint(status: int) -> str | None:
        if status == 401 and client.endpoint.auth.access_key:
            return None  # the login was a key: the 401 hint names it and its secret
        return ("log in with an access key (--access-key AK) or a bearer token "
                "(--bearer-file with --access-key): a node user has no key of its own"
                if status in (400, 401, 403, 404) else None)

    data = client.json("GET", "/access_keys/self", hint_for=hint)
    if not isinstance(data, dict):
        raise RemoteError("GET /access_keys/self did not answer with an object")
    return data


def update_access_key(client: Client, ak: str, body: dict[str, Any]) -> Any:
    """PUT (a partial update) exactly ``body``."""
    if not body:
        raise UsageError("nothing to change: give --path, --secret-stdin, "
                         "--activity-event-logging or --set KEY=VALUE")
    resp = client.request("PUT", _path(ak), json_body=body, expect=(200, 204),
                          hint_for=_hint_404(ak))
    return resp.json() if resp.body else None


def delete_access_key(client: Client, ak: str) -> None:
    client.request("DELETE", _path(ak), expect=(200, 204), hint_for=_hint_404(ak))


def logging_body(value: str) -> dict[str, Any]:
    """``on|off|inherit`` -> the partial body that sets it (inherit removes the key's
    own setting: null)."""
    choice = {"on": True, "off": False, "inherit": None}
    if value not in choice:
        raise UsageError("--activity-event-logging takes on, off or inherit")
    body: dict[str, Any] = {}
    node = body
    for part in LOGGING_PATH[:-1]:
        node = node.setdefault(part, {})
    node[LOGGING_PATH[-1]] = choice[value]
    return body


def key_logging(key: dict[str, Any]) -> bool | None:
    """The key's own activity_event_logging, or None when it has none."""
    node: Any = key
    for part in LOGGING_PATH:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node if isinstance(node, bool) else None


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge two partial bodies (``extra`` wins)."""
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def describe(key: dict[str, Any], node_logging: bool | None,
             version: tuple[int, ...] | None) -> dict[str, Any]:
    """What ``access-key show`` reports: the key, its verification key fingerprint, and
    whether events are logged for it (interface.md 6.2)."""
    pem = key.get("token_verification_key")
    fingerprint = None
    if isinstance(pem, str) and pem.strip():
        try:
            from nodecli.tokens.keys import key_fingerprint, load_public_key_pem

            fingerprint = key_fingerprint(load_public_key_pem(pem, "token_verification_key"))
        except NodecliError:
            fingerprint = "unreadable"
    own = key_logging(key)
    per_key = version is None or version >= PER_KEY_LOGGING_VERSION
    if version is not None and version < (3, 7, 4):
        logged, why = True, "every event is logged before node 3.7.4"
    elif own is not None and per_key:
        logged, why = own, "the key's own setting overrides the node's (3.8.0+)"
    elif node_logging is not None:
        logged, why = node_logging, "the node setting (the key has none of its own)"
    else:
        logged, why = None, "the node setting is not known to this login"
    storage = storage_ if isinstance(storage_ := key.get("storage"), dict) else {}
    return {
        "id": key.get("id"), "storage_type": storage.get("type"),
        "storage_path": storage.get("path"), "root_file_id": key.get("root_file_id"),
        "verification_key": fingerprint is not None, "verification_key_fingerprint": fingerprint,
        "activity_event_logging": {"key": own, "node": node_logging, "events_logged": logged,
                                   "why": why},
    }


def require_per_key_logging(version: tuple[int, ...] | None, version_text: str | None) -> None:
    if version is not None and version < PER_KEY_LOGGING_VERSION:
        raise NodecliError(f"this node runs version {version_text}: activity_event_logging "
                           "per access key exists from node 3.8.0",
                           hint="set the node-wide activity_event_logging instead, or upgrade")


def not_found(ak: str) -> NotFoundError:
    return NotFoundError(f"no access key {ak!r}")


# -- creating keys and registering verification keys --------------------------------------


MAX_PEM_BYTES = 64 * 1024
STORAGE_TYPES = ("local",)


def create_access_key(client: Any, storage_type: str | dict[str, Any], path: str = "/",
                      id: str | None = None, secret: str | None = None,
                      extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """POST /access_keys; return the node's answer (without the secret). ``extra``:
    more properties of the new key (``configuration``, ``token_verification_key``).
    ``storage_type`` is ``local`` (with ``path``) or a whole storage object
    (:mod:`nodecli.node.storage_keys` builds them; ``path`` is then unused).

    409 (the id exists) becomes a ConflictError that says so and how to proceed.
    """
    if isinstance(storage_type, dict):
        storage = storage_type
    elif storage_type not in STORAGE_TYPES:
        raise UsageError(f"storage type {storage_type!r} is not supported "
                         f"(supported: {', '.join(STORAGE_TYPES)})")
    elif not path.startswith("/"):
        raise UsageError(f"--path must be absolute (start with /), not {path!r}")
    else:
        storage = {"type": storage_type, "path": path}
    if id is not None and not AK_ID_RE.match(id):
        raise UsageError(f"invalid access key id {id!r}: use letters, digits and . _ @ + -")
    body: dict[str, Any] = {**(extra or {}), "storage": storage}
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
    from nodecli.fsutil import user_path

    p = user_path(path)
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

    if not AK_ID_RE.match(ak):
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
