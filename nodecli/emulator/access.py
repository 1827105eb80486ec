"""Access to node storage, the routes: access keys, files and permissions.

Routes (facts from the public documentation of this node family; interface.md shows
only POST /access_keys and says permissions endpoints exist):

* ``GET /access_keys`` (paged: ``page``, ``per_page``, ``Link: rel="next"``),
  ``GET|PUT|DELETE /access_keys/{id}``, ``GET /access_keys/self``;
* ``GET /files/{id}``, ``GET /files/{id}/files``;
* ``POST|GET /permissions`` (``?file_id=ID[&inherited=false]``; without ``file_id``,
  every permission the caller's access key set, inside its storage),
  ``GET|PUT|DELETE /permissions/{id}``.

Who may see what is :mod:`nodecli.emulator.storage`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from nodecli.emulator.server import HttpError, Principal, Reply, Request, Router
from nodecli.emulator.state import AccessKey, NodeState
from nodecli.emulator.storage import (
    ACCESS_LEVELS,
    LOGGING_KEY,
    PER_KEY_LOGGING,
    FileNode,
    Permission,
    event_filter,
    file_visible,
    key_logging,
    key_path,
    listing_refused,
    normalize,
    root_of,
    storage_of,
    within,
)

MAX_PER_PAGE = 1000


def _principal(req: Request) -> Principal:
    assert req.principal is not None
    return req.principal


def _visible_keys(state: NodeState, principal: Principal) -> list[AccessKey]:
    keys = sorted(state.access_keys.values(), key=lambda k: k.created_at)
    if principal.kind == "node_user":
        return [k for k in keys if k.owner == principal.name]
    return [k for k in keys if k.id == principal.access_key]


def _key_for(state: NodeState, req: Request, ak_id: str) -> AccessKey:
    ak = state.access_keys.get(ak_id)
    if ak is None or ak not in _visible_keys(state, _principal(req)):
        raise HttpError(404, f"no access key {ak_id!r}")
    return ak


def _may_change(principal: Principal, ak: AccessKey) -> None:
    from nodecli.emulator.storage import bearer_is_admin

    if principal.kind == "node_user" and principal.name == ak.owner:
        return
    if principal.kind == "access_key" and principal.name == ak.id:
        return
    if principal.kind == "bearer" and bearer_is_admin(principal, ak.id):
        return
    raise HttpError(403, f"changing access key {ak.id!r} needs its owner, the key itself, "
                         f"or a token with scope node.{ak.id}:admin:all")


def _log(state: NodeState, principal: Principal, types: list[str], data: dict[str, Any],
         path: str | None = None) -> None:
    from nodecli.emulator.events import log_for

    log_for(state).append({"user_id": principal.name, "types": types, "data": data},
                          access_key=principal.access_key, path=path)


def register(router: Router, state: NodeState) -> None:
    st = storage_of(state)
    state.reset_hooks.append(st.reset)
    state.extensions["event_filter"] = lambda principal: event_filter(state, principal)
    state.extensions["key_logging"] = lambda ak_id: key_logging(state, ak_id)
    state.extensions["storage"] = st
    state.extensions["on_access_key"] = lambda ak: root_of(state, ak)

    def view(ak: AccessKey) -> dict[str, Any]:
        root_of(state, ak)
        return ak.public()

    def list_keys(req: Request) -> Reply:
        try:
            page = int(req.arg("page") or 1)
            per_page = min(int(req.arg("per_page") or 100), MAX_PER_PAGE)
        except ValueError:
            raise HttpError(400, "page and per_page are whole numbers") from None
        if page < 1 or per_page < 1:
            raise HttpError(400, "page and per_page start at 1")
        with state.lock:
            keys = _visible_keys(state, _principal(req))
            chunk = [view(k) for k in keys[(page - 1) * per_page: page * per_page]]
        headers = {}
        if page * per_page < len(keys):
            query = urlencode({"page": page + 1, "per_page": per_page})
            headers["Link"] = f'<{req.base_url}/access_keys?{query}>; rel="next"'
        return Reply(200, chunk, headers)

    def get_self(req: Request) -> Reply:
        principal = _principal(req)
        with state.lock:
            ak = state.access_keys.get(principal.access_key or "")
            if ak is None:
                raise HttpError(400, "GET /access_keys/self needs an access key or a bearer "
                                     "token; a node user has no key of its own")
            return Reply(200, view(ak))

    def get_key(req: Request) -> Reply:
        assert req.match is not None
        with state.lock:
            return Reply(200, view(_key_for(state, req, req.match.group("id"))))

    def update_key(req: Request) -> Reply:
        assert req.match is not None
        ak_id = req.match.group("id")
        body = req.json()
        if not isinstance(body, dict):
            raise HttpError(400, "the body must be a JSON object")
        from nodecli.node.info import version_tuple

        with state.lock:
            ak = _key_for(state, req, ak_id)
            _may_change(_principal(req), ak)
            allowed = {"secret", "storage", "configuration", "token_verification_key",
                       "name", "description"}
            unknown = sorted(set(body) - allowed)
            if unknown:
                raise HttpError(400, f"unknown access key properties: {', '.join(unknown)}")
            if "token_verification_key" in body:
                _check_pem(body["token_verification_key"])
            conf = body.get("configuration", {})
            if not isinstance(conf, dict):
                raise HttpError(400, "configuration must be an object")
            if LOGGING_KEY in conf:
                if version_tuple(state.version) < PER_KEY_LOGGING:
                    raise HttpError(400, f"{LOGGING_KEY} per access key needs node 3.8.0 or "
                                         f"later (this node: {state.version})")
                if conf[LOGGING_KEY] is not None and not isinstance(conf[LOGGING_KEY], bool):
                    raise HttpError(400, f"{LOGGING_KEY} must be true, false or null")
            storage = body.get("storage")
            if storage is not None:
                if not isinstance(storage, dict) or not isinstance(storage.get("path", ""), str):
                    raise HttpError(400, "storage must be an object with a path")
                if storage.get("path") is not None:
                    normalize(storage["path"])
            secret = body.get("secret")
            if secret is not None and not (isinstance(secret, str) and secret):
                raise HttpError(400, "secret must be a non-empty string")
            # all checked: apply
            from nodecli.emulator.server import secret_digest

            if secret is not None:
                ak.secret_digest = secret_digest(secret)
            if storage is not None:
                ak.storage = {**ak.storage, **storage}
                ak.root_file_id = None
            for key, value in conf.items():
                if value is None:
                    ak.configuration.pop(key, None)
                else:
                    ak.configuration[key] = value
            for key in ("name", "description"):
                if key in body:
                    ak.configuration[key] = body[key]
            if "token_verification_key" in body:
                ak.token_verification_key = body["token_verification_key"]
            state.save_access_keys()
        return Reply(204)

    def delete_key(req: Request) -> Reply:
        assert req.match is not None
        with state.lock:
            ak = _key_for(state, req, req.match.group("id"))
            principal = _principal(req)
            if not (principal.kind == "node_user" and principal.name == ak.owner):
                raise HttpError(403, "only the node user that owns an access key may delete it")
            del state.access_keys[ak.id]
            state.save_access_keys()
        return Reply(204)

    # -- files ------------------------------------------------------------------------

    def _file(req: Request) -> FileNode:
        assert req.match is not None
        principal = _principal(req)
        if principal.kind == "node_user":
            raise HttpError(403, "files are browsed with an access key or a bearer token")
        with state.lock:
            ak = state.access_keys.get(principal.access_key or "")
            if ak is not None:
                root_of(state, ak)
            node = st.get(req.match.group("id"))
            if node is None or not file_visible(state, principal, node):
                raise HttpError(404, f"no file {req.match.group('id')!r}")
            return node

    def get_file(req: Request) -> Reply:
        return Reply(200, _file(req).public())

    def list_folder(req: Request) -> Reply:
        node = _file(req)
        if node.type != "folder":
            raise HttpError(400, f"file {node.id} is not a folder")
        principal = _principal(req)
        with state.lock:
            if listing_refused(state, principal, node):
                raise HttpError(403, f"listing folder {node.id} needs the list level")
            return page_of(req, state, principal, node)

    # -- permissions -------------------------------------------------------------------

    def _writer(req: Request) -> Principal:
        principal = _principal(req)
        if principal.kind == "node_user":
            raise HttpError(403, "permissions are set with an access key or a bearer token")
        if principal.kind == "bearer":
            from nodecli.emulator.storage import bearer_is_admin

            if not bearer_is_admin(principal, principal.access_key or ""):
                raise HttpError(403, "changing permissions needs a token with scope "
                                     f"node.{principal.access_key}:admin:all")
        return principal

    def _perm_body(body: Any, partial: bool = False) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise HttpError(400, "the body must be a JSON object")
        allowed = {"file_id", "access_type", "access_id", "access_levels", "tags"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise HttpError(400, f"unknown permission properties: {', '.join(unknown)}")
        need = () if partial else ("file_id", "access_type", "access_id", "access_levels")
        for key in need:
            if key not in body:
                raise HttpError(400, f"{key} is required")
        if "access_type" in body and body["access_type"] not in ("user", "group"):
            raise HttpError(400, "access_type is user or group")
        for key in ("file_id", "access_id"):
            if key in body and not (isinstance(body[key], str) and body[key]):
                raise HttpError(400, f"{key} must be a non-empty string")
        levels = body.get("access_levels", [])
        if not isinstance(levels, list) or not all(x in ACCESS_LEVELS for x in levels):
            raise HttpError(400, f"access_levels: a list of {', '.join(ACCESS_LEVELS)}")
        return body

    def _check_file(req: Request, principal: Principal, file_id: str) -> FileNode:
        node = st.get(file_id)
        root = key_path(state, principal)
        if node is None or root is None or not within(node.path, root):
            raise HttpError(404, f"no file {file_id!r}")
        return node

    def create_permission(req: Request) -> Reply:
        principal = _writer(req)
        body = _perm_body(req.json())
        with state.lock:
            node = _check_file(req, principal, body["file_id"])
            perm = Permission(str(next(st.perm_ids)), node.id, body["access_type"],
                              body["access_id"], list(body["access_levels"]), body.get("tags"),
                              principal.access_key)
            st.permissions[perm.id] = perm
        _log(state, principal, ["permission.created"], perm.public(), node.path)
        return Reply(201, perm.public())

    def list_permissions(req: Request) -> Reply:
        principal = _principal(req)
        file_id = req.arg("file_id")
        inherited = (req.arg("inherited") or "true").lower() != "false"
        with state.lock:
            if principal.kind == "node_user":
                raise HttpError(403, "permissions are read with an access key or a bearer token")
            if not file_id:  # every permission the key set, in its storage
                root = key_path(state, principal)
                perms = [p.public() for p in st.permissions.values()
                         if root is not None and (node := st.get(p.file_id)) is not None
                         and p.access_key in (None, principal.access_key)
                         and within(node.path, root)]
                return Reply(200, sorted(perms, key=lambda p: int(p["id"])))
            node = _check_file(req, principal, file_id)
            ids = set(st.lineage(node.id)) if inherited else {node.id}
            perms = [p.public() for p in st.permissions.values() if p.file_id in ids]
        return Reply(200, sorted(perms, key=lambda p: int(p["id"])))

    def _perm(req: Request, principal: Principal) -> Permission:
        assert req.match is not None
        perm = st.permissions.get(req.match.group("id"))
        if perm is None:
            raise HttpError(404, f"no permission {req.match.group('id')!r}")
        _check_file(req, principal, perm.file_id)
        return perm

    def get_permission(req: Request) -> Reply:
        principal = _principal(req)
        if principal.kind == "node_user":
            raise HttpError(403, "permissions are read with an access key or a bearer token")
        with state.lock:
            return Reply(200, _perm(req, principal).public())

    def update_permission(req: Request) -> Reply:
        principal = _writer(req)
        body = _perm_body(req.json(), partial=True)
        with state.lock:
            perm = _perm(req, principal)
            if "file_id" in body:
                _check_file(req, principal, body["file_id"])
                perm.file_id = body["file_id"]
            for key in ("access_type", "access_id", "tags"):
                if key in body:
                    setattr(perm, key, body[key])
            if "access_levels" in body:
                perm.access_levels = list(body["access_levels"])
            node = st.get(perm.file_id)
        _log(state, principal, ["permission.modified"], perm.public(),
             node.path if node else None)
        return Reply(200, perm.public())

    def delete_permission(req: Request) -> Reply:
        principal = _writer(req)
        with state.lock:
            perm = _perm(req, principal)
            del st.permissions[perm.id]
            node = st.get(perm.file_id)
        _log(state, principal, ["permission.deleted"], perm.public(),
             node.path if node else None)
        return Reply(204)

    seg = r"(?P<id>[^/]+)"
    router.add("GET", r"/access_keys", list_keys, auth="any")
    router.add("GET", r"/access_keys/self", get_self, auth="any")
    router.add("GET", rf"/access_keys/{seg}", get_key, auth="any")
    router.add("PUT", rf"/access_keys/{seg}", update_key, auth="any")
    router.add("DELETE", rf"/access_keys/{seg}", delete_key, auth="basic")
    router.add("GET", rf"/files/{seg}", get_file, auth="any")
    router.add("GET", rf"/files/{seg}/files", list_folder, auth="any")
    router.add("POST", r"/permissions", create_permission, auth="any")
    router.add("GET", r"/permissions", list_permissions, auth="any")
    router.add("GET", rf"/permissions/{seg}", get_permission, auth="any")
    router.add("PUT", rf"/permissions/{seg}", update_permission, auth="any")
    router.add("DELETE", rf"/permissions/{seg}", delete_permission, auth="any")


def page_of(req: Request, state: NodeState, principal: Principal, node: FileNode) -> Reply:
    """One page of a folder's entries, paged as ``storage.paging`` says (see
    :mod:`nodecli.emulator.generated`)."""
    from nodecli.emulator.generated import (
        DEFAULT_MAX_PER_PAGE,
        DEFAULT_PER_PAGE,
        DEFAULT_TOKEN_PAGE,
        Paging,
        decode_token,
        encode_token,
    )
    from nodecli.emulator.storage import bearer_is_admin

    st = storage_of(state)
    paging = st.paging or Paging()
    if paging.mode == "token":
        token = req.arg("iteration_token")
        start = 0
        if token is not None:
            decoded = decode_token(token)
            if decoded is None or decoded[0] != node.id:
                raise HttpError(400, "invalid iteration_token")
            start = decoded[1]
        size = paging.size or DEFAULT_TOKEN_PAGE
    else:
        try:
            page = int(req.arg("page") or 1)
            size = int(req.arg("per_page") or DEFAULT_PER_PAGE)
        except ValueError:
            raise HttpError(400, "page and per_page are whole numbers") from None
        if page < 1 or size < 1:
            raise HttpError(400, "page and per_page start at 1")
        size = min(size, paging.size or DEFAULT_MAX_PER_PAGE)
        start = (page - 1) * size
    everything = principal.kind == "access_key" or bearer_is_admin(
        principal, principal.access_key or "")
    if st.generated is not None and node.id.startswith("g") and everything:
        # the folder is visible, so all below it is: slice without listing the folder
        total = st.generated.count(node.id)
        chunk = [c.public() for c in st.generated.children(node, start, start + size)]
    else:
        visible = [c for c in st.children(node) if file_visible(state, principal, c)]
        total = len(visible)
        chunk = [c.public() for c in visible[start:start + size]]
    headers: dict[str, str] = {}
    more = start + size < total
    where = f"{req.base_url}/files/{quote(node.id, safe='')}/files"
    if paging.mode == "token":
        if more:
            headers["Link"] = f'<{where}?iteration_token={encode_token(node.id, start + size)}>; ' \
                              'rel="next"'
    elif paging.mode == "numbered":
        headers["X-Total-Count"] = str(total)
        if more:
            query = urlencode({"page": start // size + 2, "per_page": size})
            headers["Link"] = f'<{where}?{query}>; rel="next"'
    return Reply(200, chunk, headers)


def _check_pem(pem: Any) -> None:
    if not isinstance(pem, str) or "BEGIN PUBLIC KEY" not in pem:
        raise HttpError(400, "token_verification_key must be a PEM public key")
    from nodecli.errors import NodecliError
    from nodecli.tokens.keys import load_public_key_pem

    try:
        load_public_key_pem(pem, "token_verification_key")
    except NodecliError as exc:
        raise HttpError(400, exc.message) from None
