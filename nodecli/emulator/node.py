"""Node endpoints: GET /info, POST /access_keys, PUT /access_keys/{id} (transfers are in
nodecli.emulator.transfers)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from nodecli.emulator.server import HttpError, Principal, Reply, Request, Router
from nodecli.emulator.state import NodeState


def make_bearer_verifier(state: NodeState) -> Any:
    """Verify a node bearer token as a node would (field-notes: bearer-token wire format).

    The access key named by the access-key header (``state.access_key_header``) must
    exist and have a registered ``token_verification_key``; the token's signature must
    verify with it, it must not be expired, and its scope must grant the key
    (``node.<AK>:user:all``, ``node.<AK>:admin:all`` or ``admin:all``). Bad or expired
    tokens get 401; a valid token whose scope does not cover the key gets 403.
    """
    from nodecli.tokens import wire as tokens
    from nodecli.tokens.inspection import has_scope

    keys: dict[str, Any] = {}  # PEM -> loaded public key (verification is per request)

    def verify_bearer(req: Request, token: str) -> Principal:
        header = state.access_key_header
        ak_id = (req.headers.get(header) or "").strip()
        if not ak_id:
            raise HttpError(401, f"a bearer token needs the {header} header naming the "
                                 "access key it was made for")
        with state.lock:
            ak = state.access_keys.get(ak_id)
            pem = ak.token_verification_key if ak else None
        if ak is None:
            raise HttpError(401, f"unknown access key {ak_id!r} in {header}")
        if not pem:
            raise HttpError(401, f"access key {ak_id!r} has no token_verification_key: "
                                 "register the public key first (PUT /access_keys/{id})")
        try:
            key = keys.get(pem)
            if key is None:
                from nodecli.tokens.keys import load_public_key_pem

                key = keys[pem] = load_public_key_pem(pem)
            claims = tokens.verify(token, key, leeway=0,
                                   now=dt.datetime.fromtimestamp(state.now(), dt.UTC))
        except tokens.TokenError as exc:
            raise HttpError(401, exc.message) from None
        except Exception as exc:  # noqa: BLE001 - a stored key that cannot be loaded
            raise HttpError(500, f"the verification key of {ak_id!r} is unusable: {exc}"
                            ) from None
        scope = scope_ if isinstance(scope_ := claims.get("scope"), str) else ""
        if not (has_scope(claims, f"node.{ak_id}:user:all")
                or "admin:all" in scope.split()):
            raise HttpError(403, f"token scope {scope[:200]!r} does not grant access key "
                                 f"{ak_id!r} (needs node.{ak_id}:user:all or admin:all)")
        return Principal("bearer", str(claims.get("user_id")), access_key=ak_id, claims=claims)

    return verify_bearer


# What a node of a given version can do (interface.md 9), as GET /info reports it and as
# the routes enforce it: the emulator plays older nodes with --node-version.
CAPABILITY_VERSIONS = (
    ("events", (3, 6, 0)),                  # GET /events
    ("events_by_id", (3, 7, 3)),            # GET /events/{id}
    ("filelock_events", (3, 7, 4)),         # file.filelock.* types; logging needs enabling
    ("activity_event_logging_per_access_key", (3, 8, 0)),
    ("bearer_token", (3, 8, 0)),            # token creation by the administration tool
)


def capabilities(version: str) -> list[dict[str, object]]:
    from nodecli.node.info import version_tuple

    have = version_tuple(version)
    return [{"name": name, "value": have >= since} for name, since in CAPABILITY_VERSIONS]


def _logging_setting(state: NodeState) -> bool:
    from nodecli.emulator.events import log_for

    return bool(log_for(state).logging_enabled)


def register(router: Router, state: NodeState) -> None:
    state.extensions["bearer_verifier"] = make_bearer_verifier(state)

    def info(req: Request) -> Reply:
        principal = req.principal
        assert principal is not None
        xuser = state.transfer_user_of(principal.name) if principal.kind == "node_user" else None
        acls: list[str] = []
        if principal.kind == "node_user":
            acls = list(state.config().users[principal.name].acls)
        body = {
            "application": "node",
            "version": state.version,
            "current_time": dt.datetime.fromtimestamp(state.now(), dt.UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"),
            "node_id": state.node_id,
            "transfer_user": xuser.name if xuser else None,
            "docroot": xuser.docroot if xuser else None,
            "restrictions": list(xuser.restrictions) if xuser else [],
            "acls": acls,
            "capabilities": capabilities(state.version),
            "settings": [
                {"name": "activity_event_logging", "value": _logging_setting(state)},
            ],
        }
        return Reply(200, body)

    def create_access_key(req: Request) -> Reply:
        principal = req.principal
        assert principal is not None
        body = req.json()
        if not isinstance(body, dict):
            raise HttpError(400, "the body must be a JSON object")
        from nodecli.emulator.storage_types import check_storage, sub_key_storage

        parent = None
        if principal.kind == "access_key":  # a sub-key (interface.md 5.1.4)
            with state.lock:
                parent = state.access_keys.get(principal.access_key or "")
            if parent is None:
                raise HttpError(401, "invalid credentials")
            body = {**body, "storage": sub_key_storage(parent.storage, body.get("storage"))}
        else:
            check_storage(body.get("storage"))
        for key in ("id", "secret"):
            if key in body and not (isinstance(body[key], str) and body[key]):
                raise HttpError(400, f"{key} must be a non-empty string")
        if not isinstance(body.get("configuration", {}), dict):
            raise HttpError(400, "configuration must be an object")
        pem = body.get("token_verification_key")
        if pem is not None and not (isinstance(pem, str) and "BEGIN PUBLIC KEY" in pem):
            raise HttpError(400, "token_verification_key must be a PEM public key")
        xuser = state.transfer_user_of(parent.owner if parent else principal.name)
        if xuser is None or not xuser.restrictions:
            raise HttpError(
                403,
                f"transfer user of {principal.name!r} has no restriction; access keys need one",
            )
        generated = None
        if not body.get("secret"):
            import secrets

            generated = secrets.token_urlsafe(24)
            body = {**body, "secret": generated}
        ak = state.create_access_key(parent.owner if parent else principal.name, body,
                                     parent_id=parent.id if parent else None)
        hook = state.extensions.get("on_access_key")
        if hook:
            hook(ak)
        reply = ak.public()
        if generated:
            reply["secret"] = generated  # shown once, as a node does for a secret it made
        return Reply(201, reply)

    router.add("GET", r"/info", info, auth="basic")
    # a node user creates keys; an access key creates sub-keys (interface.md 5.1.4)
    router.add("POST", r"/access_keys", create_access_key, auth="basic")
