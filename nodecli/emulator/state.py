"""The emulated node's data and its authentication rules (interface.md 5.1)."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from nodecli.config.paths import Paths
from nodecli.emulator.server import HttpError, Principal, Request, parse_basic, secret_digest

DEFAULT_NODE_VERSION = "4.4.5"
T = TypeVar("T")


@dataclass(slots=True)
class AccessKey:
    id: str
    secret_digest: str | None
    storage: dict[str, Any]
    owner: str  # node user who created it
    token_verification_key: str | None = None
    created_at: float = field(default_factory=time.time)
    configuration: dict[str, Any] = field(default_factory=dict)
    root_file_id: str | None = None
    parent_id: str | None = None  # the key that created this sub-key

    def public(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "storage": self.storage}
        if self.parent_id is not None:
            d["parent_id"] = self.parent_id
        if self.root_file_id is not None:
            d["root_file_id"] = self.root_file_id
        d["configuration"] = dict(self.configuration)
        if self.token_verification_key:
            d["token_verification_key"] = self.token_verification_key
        return d


class NodeState:
    """Everything the emulated node knows. Thread-safe through ``lock``.

    Node users and their password hashes come from the home's ``config.toml`` (the
    same file nodecli administers), re-read when it changes. Successful password
    checks are cached per (user, password digest, config mtime) so that a paging
    client does not pay a scrypt per request.
    """

    def __init__(self, paths: Paths, *, version: str = DEFAULT_NODE_VERSION,
                 access_key_header: str = "X-Vendor-AccessKey", persist: bool = True) -> None:
        self.paths = paths
        self.version = version
        self.access_key_header = access_key_header
        self.node_id = str(uuid.uuid4())
        self.lock = threading.RLock()
        self.access_keys: dict[str, AccessKey] = {}
        self.transfers: list[dict[str, Any]] = []
        self.extensions: dict[str, Any] = {}  # feature modules keep their state here
        self.reset_hooks: list[Any] = []  # feature modules' "forget everything" callbacks
        self._config_cache: tuple[float, Any] | None = None
        self._password_ok: set[tuple[str, str, float]] = set()
        # playing other nodes: a clock that is off by this many seconds (its /info
        # current_time and Date headers), and bearer tokens refused once they were
        # first seen this many seconds ago (None: only their own expiry counts)
        self.clock_offset = 0.0
        self.token_max_age: float | None = None
        self._token_first_seen: dict[str, float] = {}
        self.persist = persist
        if persist:
            self.load_access_keys()

    def extension(self, key: str, make: Callable[[], T]) -> T:
        """A feature module's state (its log, transfers, storage...), made on first use;
        under the lock, so two first requests never make two."""
        with self.lock:
            value = self.extensions.get(key)
            if value is None:
                value = self.extensions[key] = make()
            return cast(T, value)

    def reset(self) -> None:
        """Back to a fresh node (tests call this between cases)."""
        with self.lock:
            self.access_keys.clear()
            self.transfers.clear()
            self._password_ok.clear()
            self._token_first_seen.clear()
            self.clock_offset, self.token_max_age = 0.0, None
            for hook in self.reset_hooks:
                hook()
            self.save_access_keys()

    # -- node users (from config.toml) ----------------------------------------------

    def config(self) -> Any:
        from nodecli.config.store import ConfigStore

        path = self.paths.config_file
        try:
            mtime = os.stat(path).st_mtime
        except FileNotFoundError:
            mtime = -1.0
        with self.lock:
            if self._config_cache is None or self._config_cache[0] != mtime:
                self._config_cache = (mtime, ConfigStore(self.paths).load())
                self._password_ok.clear()
            return self._config_cache[1]

    def _config_mtime(self) -> float:
        return self._config_cache[0] if self._config_cache else -1.0

    def check_node_user(self, name: str, password: str) -> bool:
        from nodecli.users.passwords import verify_password

        cfg = self.config()
        user = cfg.users.get(name)
        if user is None:
            return False
        key = (name, secret_digest(password), self._config_mtime())
        if key in self._password_ok:
            return True
        if verify_password(password, user.password_hash):
            with self.lock:
                self._password_ok.add(key)
            return True
        return False

    def transfer_user_of(self, node_user: str) -> Any:
        cfg = self.config()
        user = cfg.users.get(node_user)
        return cfg.transfer_users.get(user.transfer_user) if user else None

    # -- authentication ---------------------------------------------------------------

    def authenticate(self, req: Request, mode: str) -> Principal | None:
        """Check the request's credentials against what the route accepts.

        mode: ``none``; ``node`` (Basic node user only); ``basic`` (node user or access
        key); ``any`` (Basic or bearer); ``bearer`` (bearer only); ``service`` (OAuth).
        """
        if mode == "none":
            return None
        header = req.headers.get("Authorization")
        if mode == "service":
            return self.authenticate_service(req)
        if header and header.startswith("Bearer "):
            if mode in ("node", "basic"):
                raise HttpError(401, "this endpoint needs node credentials (HTTP Basic)")
            return self.authenticate_bearer(req, header[7:].strip())
        creds = parse_basic(header)
        if creds is None:
            raise HttpError(401, "authentication required",
                            {"WWW-Authenticate": 'Basic realm="node"'})
        if mode == "bearer":
            raise HttpError(401, "this endpoint needs a bearer token")
        user, password = creds
        if self.check_node_user(user, password):
            return Principal("node_user", user)
        if mode != "node":
            with self.lock:
                ak = self.access_keys.get(user)
            if ak is not None and ak.secret_digest == secret_digest(password):
                return Principal("access_key", user, access_key=user)
        raise HttpError(401, "invalid credentials", {"WWW-Authenticate": 'Basic realm="node"'})

    def now(self) -> float:
        """The node's clock (``time.time()`` plus the played offset)."""
        return time.time() + self.clock_offset

    def authenticate_bearer(self, req: Request, token: str) -> Principal:
        """Verify a node bearer token as a node would (see nodecli.emulator.node)."""
        verifier = self.extensions.get("bearer_verifier")
        if verifier is None:
            raise HttpError(401, "bearer tokens are not accepted by this emulator")
        principal = verifier(req, token)
        if self.token_max_age is not None:
            self._check_token_age(token)
        return principal

    def _check_token_age(self, token: str) -> None:
        max_age = self.token_max_age or 0.0
        now = time.monotonic()
        key = secret_digest(token)
        with self.lock:
            first = self._token_first_seen.setdefault(key, now)
            if len(self._token_first_seen) > 10_000:  # bounded: forget the long-expired
                self._token_first_seen = {k: t for k, t in self._token_first_seen.items()
                                          if now - t <= max_age}
                self._token_first_seen.setdefault(key, first)
        if now - first > max_age:
            raise HttpError(401, f"bearer token expired (this node accepts a token for "
                                 f"{max_age:g} s after its first use)")

    def authenticate_service(self, req: Request) -> Principal:
        verifier = self.extensions.get("service_verifier")
        if verifier is None:
            raise HttpError(401, "no collaboration service in this emulator")
        return verifier(req)

    # -- access keys ------------------------------------------------------------------

    def create_access_key(self, owner: str, body: dict[str, Any], *,
                          parent_id: str | None = None) -> AccessKey:
        with self.lock:
            ak_id = body.get("id") or uuid.uuid4().hex[:20]
            if ak_id in self.access_keys:
                raise HttpError(409, f"access key {ak_id!r} already exists")
            secret = body.get("secret")
            ak = AccessKey(ak_id, secret_digest(secret) if secret else None,
                           body["storage"], owner,
                           configuration=dict(body.get("configuration") or {}))
            if body.get("token_verification_key"):
                ak.token_verification_key = body["token_verification_key"]
            ak.parent_id = parent_id
            self.access_keys[ak_id] = ak
            self.save_access_keys()
            return ak

    # -- persistence: access keys survive emulator restarts ---------------------------

    def access_keys_file(self) -> Path:
        return self.state_folder() / "access_keys.json"

    def save_access_keys(self) -> None:
        """Write every access key (secret digests only) atomically, 0600."""
        if not self.persist:
            return
        import json

        from nodecli.fsutil import atomic_write, ensure_private_dir

        with self.lock:
            data = {"version": 1, "access_keys": [
                {"id": ak.id, "secret_digest": ak.secret_digest, "storage": ak.storage,
                 "owner": ak.owner, "token_verification_key": ak.token_verification_key,
                 "created_at": ak.created_at, "configuration": ak.configuration,
                 "parent_id": ak.parent_id}
                for ak in self.access_keys.values()]}
            ensure_private_dir(self.state_folder())
            atomic_write(self.access_keys_file(), json.dumps(data, indent=1).encode())

    def load_access_keys(self) -> None:
        """Read the saved access keys; a damaged file stops the emulator with the fix."""
        import json

        from nodecli.errors import ConfigError

        path = self.access_keys_file()
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return
        try:
            data = json.loads(raw)
            keys = {}
            for item in data["access_keys"]:
                ak = AccessKey(str(item["id"]), item.get("secret_digest"),
                               dict(item["storage"]), str(item["owner"]),
                               item.get("token_verification_key"),
                               float(item.get("created_at") or time.time()),
                               dict(item.get("configuration") or {}))
                ak.parent_id = item.get("parent_id")
                keys[ak.id] = ak
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise ConfigError(f"{path}: damaged emulator state ({type(exc).__name__}: {exc})",
                              hint="remove the file to start with no access keys") from None
        with self.lock:
            self.access_keys = keys

    def state_folder(self) -> Path:
        return Path(self.paths.state_dir) / "emulator"
