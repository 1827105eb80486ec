"""Typed model of ``config.toml`` and its validation.

Loading turns the parsed TOML into dataclasses and reports the first problem with
its place, e.g. ``users -> alice -> transfer_user: unknown transfer user 'xfer9'``.
Saving turns them back into plain TOML tables (``to_dict``), so a save/load round
trip is the identity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from nodecli.users.passwords import is_valid_hash

CONFIG_VERSION = 1

#: ACL values a node user can carry (field-notes: admin, impersonation, internal).
KNOWN_ACLS = ("admin", "impersonation", "internal")

# Names of users, transfer users and profiles: printable, no separators that would
# break the classic table, TOML keys or file names; never starting with "-" so a
# name can not be mistaken for a flag. (\Z, not $: $ also matches before a final newline.)
_NAME_BODY = r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}"
_NAME_RE = re.compile(f"^{_NAME_BODY}\\Z")


class ModelError(ValueError):
    """A validation failure at ``where`` (a list of keys leading to the bad value)."""

    def __init__(self, where: list[str], message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(self.text)

    @property
    def text(self) -> str:
        return (" -> ".join(self.where) + ": " if self.where else "") + self.message


def check_name(name: object, kind: str = "name") -> str:
    """Return ``name`` if it is an acceptable user/profile name, else raise ValueError."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind} must be a non-empty string")
    if not _NAME_RE.match(name):
        shown = name.encode("unicode_escape").decode("ascii")[:60]
        raise ValueError(
            f"invalid {kind} {shown!r}: use 1-128 letters, digits and . _ @ + - "
            "(not starting with . + - @)"
        )
    return name


@dataclass(slots=True)
class TransferUser:
    """A system user on the node: EITHER restrictions OR a docroot (or neither yet)."""

    name: str
    restrictions: list[str] = field(default_factory=list)
    docroot: str | None = None

    @property
    def configured(self) -> bool:
        return bool(self.restrictions) or self.docroot is not None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if self.restrictions:
            d["restrictions"] = list(self.restrictions)
        if self.docroot is not None:
            d["docroot"] = self.docroot
        return d


@dataclass(slots=True)
class NodeUser:
    """A Node API user tied to a transfer user; the password is a PHC hash string."""

    name: str
    transfer_user: str
    password_hash: str | None = field(default=None, repr=False)
    acls: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"transfer_user": self.transfer_user}
        if self.password_hash is not None:
            d["password"] = self.password_hash
        if self.acls:
            d["acls"] = list(self.acls)
        return d


#: where a profile's stored secrets are: the secret store's backends, or nowhere
SECRET_PLACES = ("file", "keyring", "none")
MINT_TTL_RANGE = (10, 30 * 86400)  # seconds a minted token may last
#: what [defaults] output may say (applied where a command has that format)
OUTPUT_DEFAULTS = ("table", "wide", "json", "jsonl", "csv", "yaml")


@dataclass(slots=True)
class MintSettings:
    """How a node profile signs its own bearer tokens (``node add --mint-key ...``):
    the private key's path (never copied), the user and groups, role and lifetime."""

    key: str
    user_id: str
    group_ids: list[str] = field(default_factory=list)
    scope_role: str = "user"
    ttl: int = 3600

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"key": self.key, "user_id": self.user_id}
        if self.group_ids:
            d["group_ids"] = list(self.group_ids)
        d["scope_role"], d["ttl"] = self.scope_role, self.ttl
        return d


@dataclass(slots=True)
class NodeProfile:
    """How to reach a node. Secrets are NOT stored here (see nodecli.config.secrets)."""

    name: str
    url: str
    user: str | None = None
    access_key: str | None = None
    bearer_file: str | None = None
    cacert: str | None = None
    insecure: bool = False
    access_key_header: str | None = None
    proxy: str | None = None
    mint: MintSettings | None = None
    # `node health` thresholds of this node, as its --warn/--crit take them
    health_warn: str | None = None
    health_crit: str | None = None
    # where its stored secrets are (SECRET_PLACES); None: not recorded, look everywhere
    secrets: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"url": self.url}
        for key in ("user", "access_key", "bearer_file", "cacert", "access_key_header",
                    "proxy", "health_warn", "health_crit", "secrets"):
            value = getattr(self, key)
            if value is not None:
                d[key] = value
        if self.insecure:
            d["insecure"] = True
        if self.mint is not None:
            d["mint"] = self.mint.to_dict()
        return d


@dataclass(slots=True)
class ServiceProfile:
    """How to reach a collaboration service (OAuth bearer token kept as a secret).
    ``paths`` overrides the service paths a node's documentation does not show
    (config.service_paths.ServicePaths names)."""

    name: str
    url: str
    token_file: str | None = None
    cacert: str | None = None
    insecure: bool = False
    paths: dict[str, str] = field(default_factory=dict)
    proxy: str | None = None
    secrets: str | None = None  # as NodeProfile.secrets

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"url": self.url}
        if self.token_file is not None:
            d["token_file"] = self.token_file
        if self.secrets is not None:
            d["secrets"] = self.secrets
        if self.cacert is not None:
            d["cacert"] = self.cacert
        if self.proxy is not None:
            d["proxy"] = self.proxy
        if self.insecure:
            d["insecure"] = True
        if self.paths:
            d["paths"] = dict(sorted(self.paths.items()))
        return d


@dataclass(slots=True)
class Config:
    version: int = CONFIG_VERSION
    transfer_users: dict[str, TransferUser] = field(default_factory=dict)
    users: dict[str, NodeUser] = field(default_factory=dict)
    nodes: dict[str, NodeProfile] = field(default_factory=dict)
    services: dict[str, ServiceProfile] = field(default_factory=dict)
    default_node: str | None = None
    default_service: str | None = None
    default_output: str | None = None  # -o of every command that has it (NODECLI_OUTPUT wins)

    # -- serialisation -------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain tables as in ``config.toml``."""
        d: dict[str, Any] = {"version": self.version}
        defaults = {}
        if self.default_node:
            defaults["node"] = self.default_node
        if self.default_service:
            defaults["service"] = self.default_service
        if self.default_output:
            defaults["output"] = self.default_output
        if defaults:
            d["defaults"] = defaults
        for key in ("transfer_users", "users", "nodes", "services"):
            table = getattr(self, key)
            if table:
                d[key] = {name: table[name].to_dict() for name in sorted(table)}
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, validated: bool = False) -> Config:
        """Validate parsed TOML; raise :class:`ModelError` naming the bad field.

        ``validated``: ``data`` passed this validation before, by this version of nodecli
        (the parse cache holds only such tables, for the exact bytes they came from):
        the format of each password hash, most of the cost of checking tens of
        thousands of node users, and each restriction (its parser is not even loaded)
        are not checked again. Everything else is."""
        v = _Reader(data, [])
        version = v.opt("version", int, CONFIG_VERSION)
        if version > CONFIG_VERSION or version < 1:
            raise ModelError(
                ["version"],
                f"unsupported version {version} (this nodecli reads version {CONFIG_VERSION})",
            )
        v.only({"version", "defaults", "transfer_users", "users", "nodes", "services"})
        cfg = cls(version=version)

        for name, r in v.tables("transfer_users"):
            r.only({"restrictions", "docroot"})
            restrictions = r.opt_str_list("restrictions")
            docroot = r.opt("docroot", str, None)
            if restrictions and docroot is not None:
                raise ModelError(r.where, "has both restrictions and a docroot; keep one")
            for i, item in enumerate([] if validated else restrictions):
                err = _restriction_problem(item)
                if err:
                    raise ModelError([*r.where, "restrictions", str(i)], err)
            cfg.transfer_users[name] = TransferUser(name, restrictions, docroot)

        users = v.sub("users")
        if users is not None:
            for name, data in users.data.items():
                cfg.users[name] = _read_user(name, data, cfg, hash_checked=validated)

        for name, r in v.tables("nodes"):
            r.only({"url", "user", "access_key", "bearer_file", "cacert", "insecure",
                    "access_key_header", "proxy", "mint", "health_warn", "health_crit",
                    "secrets"})
            cfg.nodes[name] = NodeProfile(
                name=name,
                url=_check_url(r, "url"),
                user=r.opt("user", str, None),
                access_key=r.opt("access_key", str, None),
                bearer_file=r.opt("bearer_file", str, None),
                cacert=r.opt("cacert", str, None),
                insecure=r.opt("insecure", bool, False),
                access_key_header=r.opt("access_key_header", str, None),
                proxy=_check_proxy(r),
                mint=_mint(r),
                health_warn=r.opt("health_warn", str, None),
                health_crit=r.opt("health_crit", str, None),
                secrets=_secret_place(r),
            )

        for name, r in v.tables("services"):
            r.only({"url", "token_file", "cacert", "insecure", "paths", "proxy", "secrets"})
            cfg.services[name] = ServiceProfile(
                name=name,
                url=_check_url(r, "url"),
                token_file=r.opt("token_file", str, None),
                cacert=r.opt("cacert", str, None),
                insecure=r.opt("insecure", bool, False),
                paths=_service_paths(r),
                proxy=_check_proxy(r),
                secrets=_secret_place(r),
            )

        defaults = v.sub("defaults")
        if defaults is not None:
            defaults.only({"node", "service", "output"})
            cfg.default_node = defaults.opt("node", str, None)
            cfg.default_output = defaults.opt("output", str, None)
            if cfg.default_output not in (None, *OUTPUT_DEFAULTS):
                raise ModelError(["defaults", "output"],
                                 f"must be one of {', '.join(OUTPUT_DEFAULTS)}")
            cfg.default_service = defaults.opt("service", str, None)
            if cfg.default_node and cfg.default_node not in cfg.nodes:
                raise ModelError(["defaults", "node"], f"unknown node profile {cfg.default_node!r}")
            if cfg.default_service and cfg.default_service not in cfg.services:
                raise ModelError(
                    ["defaults", "service"], f"unknown service profile {cfg.default_service!r}"
                )
        return cfg


_USER_KEYS = frozenset({"transfer_user", "password", "acls"})
_KNOWN_ACL_SET = frozenset(KNOWN_ACLS)


def _known_acls(acls: Any) -> bool:
    """Whether ``acls`` is a list of known ACL names (else the reader says what is wrong)."""
    try:
        return acls.__class__ is list and _KNOWN_ACL_SET.issuperset(acls)
    except TypeError:  # an element that cannot be hashed (a table, a list)
        return False


def _read_user(name: Any, data: Any, cfg: Config, *, hash_checked: bool = False) -> NodeUser:
    """One ``[users.NAME]`` table. Written out rather than through :class:`_Reader`: a
    config may hold tens of thousands of users, and every load checks each of them.
    ``hash_checked``: the password's PHC format passed :func:`is_valid_hash` before (a
    malformed one would only ever fail to verify)."""
    where = ["users", str(name)]
    if name.__class__ is not str or _NAME_RE.match(name) is None:
        try:
            check_name(name)
        except ValueError as exc:
            raise ModelError(where, str(exc)) from None
    if data.__class__ is not dict:
        raise ModelError(where, "must be a table")
    if not data.keys() <= _USER_KEYS:
        _Reader(data, where).only(_USER_KEYS)
    xuser = data.get("transfer_user")
    if xuser.__class__ is not str:
        raise ModelError([*where, "transfer_user"],
                         "is required" if xuser is None else "must be a string")
    if xuser not in cfg.transfer_users:
        raise ModelError([*where, "transfer_user"], f"unknown transfer user {xuser!r}")
    password = data.get("password")
    if password is not None and (password.__class__ is not str
                                 or not (hash_checked or is_valid_hash(password))):
        raise ModelError([*where, "password"],
                         "is not a password hash (PHC string starting '$')"
                         if isinstance(password, str) else "must be a string")
    acls = data.get("acls", [])
    if not _known_acls(acls):
        acls = _Reader(data, where).opt_str_list("acls")
        for acl in acls:
            if acl not in KNOWN_ACLS:
                raise ModelError([*where, "acls"],
                                 f"unknown ACL {acl!r} (known: {', '.join(KNOWN_ACLS)})")
    return NodeUser(name, xuser, password, list(acls))


def _check_proxy(r: _Reader) -> str | None:
    value = r.opt("proxy", str, None)
    if value is None:
        return None
    from nodecli.http.proxies import ProxyError, parse_proxy

    try:
        parse_proxy(value)
    except ProxyError as exc:
        raise r._fail("proxy", exc.message) from None
    return str(value)


def _secret_place(r: _Reader) -> str | None:
    value = r.opt("secrets", str, None)
    if value is not None and value not in SECRET_PLACES:
        raise r._fail("secrets", f"must be one of {', '.join(SECRET_PLACES)}")
    return value


def _mint(r: _Reader) -> MintSettings | None:
    sub = r.sub("mint")
    if sub is None:
        return None
    sub.only({"key", "user_id", "group_ids", "scope_role", "ttl"})
    key, user_id = sub.req("key", str), sub.req("user_id", str)
    if not key or not user_id:
        raise sub._fail("key" if not key else "user_id", "must not be empty")
    role = sub.opt("scope_role", str, "user")
    if role not in ("user", "admin"):
        raise sub._fail("scope_role", "must be user or admin")
    ttl = sub.opt("ttl", int, 3600)
    if not MINT_TTL_RANGE[0] <= ttl <= MINT_TTL_RANGE[1]:
        raise sub._fail("ttl", f"must be {MINT_TTL_RANGE[0]} to {MINT_TTL_RANGE[1]} seconds")
    return MintSettings(key, user_id, sub.opt_str_list("group_ids"), role, ttl)


def _service_paths(r: _Reader) -> dict[str, str]:
    sub = r.sub("paths")
    if sub is None:
        return {}
    from nodecli.config.service_paths import check_path_template
    from nodecli.errors import UsageError

    out: dict[str, str] = {}
    for key, value in sub.data.items():
        if not isinstance(value, str):
            raise ModelError([*sub.where, str(key)], "must be a string")
        try:
            out[key] = check_path_template(key, value)
        except UsageError as exc:
            raise ModelError([*sub.where, str(key)], exc.message) from None
    return out


def _restriction_problem(item: str) -> str | None:
    """Delegate to the restriction parser; None when ``item`` is acceptable."""
    from nodecli.users.restrictions import RestrictionError, parse_restriction

    try:
        parse_restriction(item)
    except RestrictionError as exc:
        return str(exc)
    return None


def _check_url(r: _Reader, key: str) -> str:
    url = r.req(key, str)
    if not re.match(r"^https?://[^\s/]+", url):
        raise ModelError([*r.where, key], f"not an http(s) URL: {url!r}")
    return url


_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list"}


class _Reader:
    """Small typed accessor over one TOML table that knows where it is."""

    def __init__(self, data: dict[str, Any], where: list[str]) -> None:
        self.data = data
        self.where = where

    def _fail(self, key: str, message: str) -> ModelError:
        return ModelError([*self.where, key], message)

    def only(self, allowed: set[str] | frozenset[str]) -> None:
        if self.data.keys() <= allowed:
            return
        for key in self.data:
            if key not in allowed:
                raise self._fail(key, f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def opt(self, key: str, typ: type, default: Any) -> Any:
        if key not in self.data:
            return default
        value = self.data[key]
        # bool is a subclass of int: keep them apart
        if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
            raise self._fail(key, f"must be {_TYPE_NAMES.get(typ, typ.__name__)}")
        return value

    def req(self, key: str, typ: type) -> Any:
        if key not in self.data:
            raise self._fail(key, "is required")
        return self.opt(key, typ, None)

    def opt_str_list(self, key: str) -> list[str]:
        value = self.opt(key, list, [])
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise ModelError([*self.where, key, str(i)], "must be a string")
        return list(value)

    def sub(self, key: str) -> _Reader | None:
        if key not in self.data:
            return None
        value = self.data[key]
        if not isinstance(value, dict):
            raise self._fail(key, "must be a table")
        return _Reader(value, [*self.where, key])

    def tables(self, key: str) -> list[tuple[str, _Reader]]:
        section = self.sub(key)
        if section is None:
            return []
        out = []
        for name, value in section.data.items():
            try:
                check_name(name)
            except ValueError as exc:
                raise ModelError([*section.where, name], str(exc)) from None
            if not isinstance(value, dict):
                raise ModelError([*section.where, name], "must be a table")
            out.append((name, _Reader(value, [*section.where, name])))
        return out
