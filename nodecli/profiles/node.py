"""Node profiles, and which node a command talks to with which credentials.

Profiles live in ``config.toml`` under ``[nodes.NAME]``; their secrets (node-user
password or access-key secret) live in the secret store (:mod:`nodecli.config.secrets`:
keyring, else a 0600 file), never in ``config.toml``.

Precedence for every setting: command-line flag > environment variable > saved
profile > default. The identity (bearer token, access key or node user) is taken
from the highest-precedence source that names one, so ``--user bob`` overrides a
profile's access key. The secret (password or access-key secret) is resolved by the
caller: flag-free on purpose (``--password-stdin``, ``NODECLI_PASSWORD``, the
profile's stored secret, then a prompt).

One combination is special: ``--access-key AK`` on the command line with a token in
``NODECLI_BEARER`` (and no ``--password-stdin``) means the bearer token made for AK.
Every resolved :class:`~nodecli.http.client.Auth` carries a note saying where its identity
and secret came from, which the 401 hint shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodecli.config.model import Config, MintSettings, NodeProfile, check_name
from nodecli.config.paths import Paths, absolute
from nodecli.config.secrets import secret_key
from nodecli.errors import ConflictError, UsageError
from nodecli.http.client import DEFAULT_ACCESS_KEY_HEADER, Auth, Endpoint
from nodecli.node.access_keys import AK_ID_RE
from nodecli.profiles import pick_profile, resolve_proxy, unknown_profile

ENV = {
    "node": "NODECLI_NODE",
    "url": "NODECLI_URL",
    "user": "NODECLI_USER",
    "password": "NODECLI_PASSWORD",
    "access_key": "NODECLI_ACCESS_KEY",
    "bearer": "NODECLI_BEARER",
    "cacert": "NODECLI_CACERT",
}


@dataclass(slots=True)
class NodeFlags:
    """What the command line said (None = not given). ``password`` comes from
    --password-stdin (never from argv). ``user_login`` is False for commands whose own
    --user names a grantee (permissions): hints then offer only the access-key login,
    not a --user the command gives another meaning."""

    node: str | None = None
    url: str | None = None
    user: str | None = None
    access_key: str | None = None
    bearer_file: str | None = None
    cacert: str | None = None
    insecure: bool = False
    access_key_header: str | None = None
    password: str | None = field(default=None, repr=False)
    user_login: bool = True
    proxy: str | None = None


@dataclass(slots=True)
class NodeTarget:
    """A resolved node, still missing its secret when ``secret_needed`` is set
    ("password for node user 'x'" / "secret of access key 'k'")."""

    endpoint: Endpoint
    profile: NodeProfile | None
    secret_needed: str | None

    def with_secret(self, secret: str, source: str = "typed at the prompt") -> Endpoint:
        auth = self.endpoint.auth
        kind = auth.note.split(";")[0] if auth.note else ""
        note = f"{kind}; secret {source}" if kind else f"secret {source}"
        return self.endpoint.with_auth(
            Auth("basic", auth.username, secret, access_key=auth.access_key,
                 access_key_header=auth.access_key_header, note=note)
        )


def resolve_node(
    cfg: Config,
    flags: NodeFlags,
    env: Mapping[str, str],
    secret_lookup: Callable[[str], str | None] | None = None,
) -> NodeTarget:
    """Combine flags, environment and profile into an endpoint (see module doc)."""
    profile = pick_profile(cfg.nodes, flags.node or env.get(ENV["node"]),
                           url_given=bool(flags.url or env.get(ENV["url"])),
                           default=cfg.default_node, kind="node")

    url = flags.url or env.get(ENV["url"]) or (profile.url if profile else None)
    if not url:
        raise UsageError(
            "no node given: use --node NAME, --url URL (or NODECLI_NODE / NODECLI_URL), "
            "or set a default with 'nodecli node default NAME'"
        )
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"node URL must start with https:// (or http://): {url!r}")

    cacert = flags.cacert or env.get(ENV["cacert"]) or (profile.cacert if profile else None)
    insecure = flags.insecure or bool(profile and profile.insecure)
    header = (flags.access_key_header or (profile.access_key_header if profile else None)
              or DEFAULT_ACCESS_KEY_HEADER)

    # identity: the first source (flags, env, profile) that names one wins
    sources = [
        (flags.bearer_file, None, flags.access_key, flags.user),
        (None, env.get(ENV["bearer"]), env.get(ENV["access_key"]), env.get(ENV["user"])),
    ]
    if profile:
        sources.append((profile.bearer_file, None, profile.access_key, profile.user))
    origins = ["flag", "environment", f"profile {profile.name!r}" if profile else ""]
    bearer_file = bearer = access_key = user = None
    origin = ""
    for (bf, tok, ak, us), where in zip(sources, origins, strict=False):
        if bf or tok or ak or us:
            bearer_file, bearer, access_key, user = bf, tok, ak, us
            origin = where
            break
    if (origin == "flag" and access_key and not user and not bearer_file
            and not flags.password and env.get(ENV["bearer"])):
        # --access-key AK with NODECLI_BEARER: the token made for that key
        bearer = env.get(ENV["bearer"])
    if (bearer_file or bearer) and not access_key:
        access_key = flags.access_key or env.get(ENV["access_key"]) or (
            profile.access_key if profile else None)

    label = profile.name if profile else url
    base = Endpoint(url, Auth(), cacert=cacert, insecure=insecure, label=label,
                    proxy=resolve_proxy(url, flags.proxy, profile, "node", env,
                                        secret_lookup))
    minting = profile is not None and profile.mint is not None and \
        origin == f"profile {profile.name!r}" and not bearer_file
    if bearer_file or bearer or minting:
        if not access_key:
            raise UsageError("a bearer token needs the access key it was made for: "
                             "--access-key AK (or NODECLI_ACCESS_KEY)")
        from nodecli.tokens.source import FileToken, MintedToken

        source: Any = None
        if minting:
            assert profile is not None and profile.mint is not None
            m = profile.mint
            source = MintedToken(m.key, access_key, m.user_id, m.group_ids, m.scope_role,
                                 float(m.ttl))
            token, src = None, source.label
        elif bearer_file:
            source = FileToken(bearer_file)
            token, src = source.current(), f"token file {bearer_file}"  # (read now: errors early)
        else:
            token = (bearer or "").strip()
            token = token[7:].strip() if token.startswith("Bearer ") else token
            src = "token from NODECLI_BEARER"
        auth = Auth("bearer", token=token if source is None else None, access_key=access_key,
                    access_key_header=header, note=f"{src}, from the {origin}",
                    source=source)
        return NodeTarget(base.with_auth(auth), profile, None)

    login = access_key or user
    if not login:
        if not flags.user_login:
            raise UsageError("no credentials: give --access-key AK (or NODECLI_ACCESS_KEY) "
                             "with its secret or with --bearer-file PATH, or a profile that "
                             "has one")
        raise UsageError("no credentials: give --user NAME or --access-key AK "
                         "(or NODECLI_USER / NODECLI_ACCESS_KEY, or a profile that has them)")
    what = (f"secret of access key {login!r}" if access_key
            else f"password of node user {login!r}")
    kind = "access key" if access_key else "node user"
    secret, source = flags.password, "from --password-stdin"
    if not secret:
        secret, source = env.get(ENV["password"]), f"from {ENV['password']}"
    if not secret and profile and secret_lookup and login == (profile.access_key or profile.user):
        secret = secret_lookup(secret_key("node", profile.name))
        source = f"stored with profile {profile.name!r}"
    note = f"{kind} from the {origin}; secret {source}" if secret else f"{kind} from the {origin}"
    auth = Auth("basic", login, secret or None, access_key=access_key or None,
                access_key_header=header, note=note)
    return NodeTarget(base.with_auth(auth), profile, None if secret else what)


HEADER_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}\Z")  # (\Z: not $, see AK_ID_RE)
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
    if spec.access_key and not AK_ID_RE.match(spec.access_key):
        raise UsageError(f"invalid access key id {spec.access_key!r}")
    if spec.access_key_header is not None and not HEADER_RE.match(spec.access_key_header):
        raise UsageError(f"--access-key-header must be an HTTP header name, "
                         f"not {spec.access_key_header!r}")
    if spec.bearer_file and not spec.access_key:
        raise UsageError("--bearer-file needs the access key the token was made for: "
                         "--access-key AK")
    if spec.insecure and spec.cacert:
        raise UsageError("give --cacert or --insecure, not both")
    if spec.insecure and url.startswith("http://"):
        raise UsageError("--insecure only makes sense with an https:// URL")
    if spec.proxy:
        from nodecli.http.proxies import parse_proxy

        parse_proxy(spec.proxy, "--proxy")
    mint = spec.mint
    if mint is not None:
        mint = _check_mint(spec, mint)

    def full(path: str | None) -> str | None:
        return absolute(path) if path else None

    return NodeProfile(
        name=spec.name, url=url.rstrip("/"), user=spec.user or None,
        access_key=spec.access_key or None, bearer_file=full(spec.bearer_file),
        cacert=full(spec.cacert), insecure=spec.insecure,
        access_key_header=spec.access_key_header or None,
        proxy=spec.proxy or None, mint=mint,
    )


def _check_mint(spec: NodeProfile, mint: MintSettings) -> MintSettings:
    """A profile that signs its own tokens: an access key to sign for, a private key
    that loads (checked now, kept where it is: only its path is saved)."""
    from nodecli.config.model import MINT_TTL_RANGE

    if not spec.access_key or spec.user or spec.bearer_file:
        raise UsageError("--mint-key signs bearer tokens for an access key: give "
                         "--access-key AK (and no --user or --bearer-file)")
    if not mint.user_id:
        raise UsageError("--mint-key needs --mint-user-id UID (the user the tokens are for)")
    if mint.scope_role not in ("user", "admin"):
        raise UsageError("--mint-scope-role is user or admin")
    if not MINT_TTL_RANGE[0] <= mint.ttl <= MINT_TTL_RANGE[1]:
        raise UsageError(f"--mint-ttl must be from {MINT_TTL_RANGE[0]} s to "
                         f"{MINT_TTL_RANGE[1] // 86400} days")
    from nodecli.tokens.keys import load_private_key

    key_path = absolute(mint.key)
    load_private_key(key_path)  # missing, unreadable by us, readable by others: refused now
    from nodecli.tokens.wire import parse_group_ids

    groups = (parse_group_ids(list(mint.group_ids)) or []) if mint.group_ids else []
    return MintSettings(key_path, mint.user_id, groups, mint.scope_role, mint.ttl)


def add_profile(store: Any, paths: Paths, spec: ProfileSpec, secret: str | None = None, *,
                replace: bool = False, make_default: bool = False,
                proxy_password: str | None = None) -> dict[str, Any]:
    """Save a node profile (and its secret in the secret store); return its summary.

    The first profile saved becomes the default. ``replace`` overwrites an existing
    profile of the same name (its stored secret is replaced or removed).
    """
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
    from nodecli.profiles import keep_secrets

    keep_secrets(store, paths, "node", profile.name, secret, proxy_password)
    return show_profile(store.load(), paths, profile.name)


def remove_profile(store: Any, paths: Paths, name: str) -> bool:
    """Delete a profile and its stored secret; return True if it was the default."""
    from nodecli.profiles import forget_secrets

    was_default = False
    with store.edit() as cfg:
        if name not in cfg.nodes:
            raise unknown_profile("node", name, cfg.nodes)
        where = cfg.nodes.pop(name).secrets
        if cfg.default_node == name:
            cfg.default_node = None
            was_default = True
    forget_secrets(paths, "node", name, where)
    return was_default


def set_health_thresholds(store: Any, name: str, warn: str | None, crit: str | None,
                          *, reset: bool = False) -> NodeProfile:
    """Save a profile's `node health` thresholds (checked by ``check``, which raises
    a UsageError for a bad one; nothing is saved then)."""
    with store.edit() as cfg:
        profile = cfg.nodes.get(name)
        if profile is None:
            raise unknown_profile("node", name, cfg.nodes)
        if reset:
            profile.health_warn = profile.health_crit = None
        if warn is not None:
            profile.health_warn = warn or None
        if crit is not None:
            profile.health_crit = crit or None
        return profile


def _auth_summary(p: NodeProfile) -> str:
    if p.mint is not None:
        return f"bearer minted ({p.access_key})"
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
    from nodecli.config.secrets import describe_backend, find_secret, open_secrets
    from nodecli.http.client import DEFAULT_ACCESS_KEY_HEADER

    if name is None:
        name = cfg.default_node
        if name is None:
            raise UsageError("no profile named and no default profile: "
                             "give NAME or set one with 'nodecli node default NAME'")
    p = cfg.nodes.get(name)
    if p is None:
        raise unknown_profile("node", name, cfg.nodes)
    value, backend = find_secret(paths, secret_key("node", name), p.secrets)
    preferred = open_secrets(paths)
    return {
        "name": p.name, "default": p.name == cfg.default_node, "url": p.url,
        "auth": _auth_summary(p), "user": p.user, "access_key": p.access_key,
        "bearer_file": p.bearer_file, "cacert": p.cacert, "insecure": p.insecure,
        "access_key_header": p.access_key_header or DEFAULT_ACCESS_KEY_HEADER,
        "secret_stored": value is not None,
        "secret_backend": describe_backend(backend) if backend else None,
        "secret_store": describe_backend(preferred),
        "proxy": p.proxy,
        "mint": p.mint.to_dict() if p.mint is not None else None,
        "health_warn": p.health_warn, "health_crit": p.health_crit,
    }


def clock_endpoint(cfg: Config, where: str, env: Mapping[str, str]) -> Endpoint:
    """A credential-free endpoint of node ``where`` (a profile name or a URL), for
    reading its clock: its TLS settings and proxy, none of its secrets."""
    from nodecli.profiles import resolve_proxy

    profile = cfg.nodes.get(where)
    if profile is not None:
        url, cacert, insecure, label = profile.url, profile.cacert, profile.insecure, where
    elif where.startswith(("https://", "http://")):
        url, cacert, insecure, label = where, env.get(ENV["cacert"]), False, where
    else:
        raise unknown_profile("node", where, cfg.nodes)
    return Endpoint(url, Auth(), cacert=cacert, insecure=insecure, label=label,
                    max_attempts=2, deadline=30.0,
                    proxy=resolve_proxy(url, None, profile, "node", env, None))


def node_clock(cfg: Config, where: str, env: Mapping[str, str]) -> tuple[str, float]:
    """(label, the node's clock minus ours) for ``token create --clock-from-node``."""
    from nodecli.http.client import open_client
    from nodecli.node.info import node_clock_offset

    endpoint = clock_endpoint(cfg, where, env)
    with open_client(endpoint) as client:
        return endpoint.label, node_clock_offset(client)


# what a login check may not take from the environment: the profile's own identity and
# URL are what is checked (TLS, proxy and NODECLI_PASSWORD for a --no-secret profile stay)
_NOT_FOR_CHECK = (ENV["node"], ENV["url"], ENV["user"], ENV["access_key"], ENV["bearer"])


def login_target(profile: NodeProfile, secret: str | None, proxy_password: str | None,
                 env: Mapping[str, str], *, stored: str | None = None) -> NodeTarget:
    """The endpoint a profile not saved yet would use, for ``check_login``: with the
    ``secret`` just given (from stdin or the prompt), else the one ``stored`` with it.
    ``secret_needed`` is set when no secret is known."""
    from nodecli.profiles import proxy_secret_key

    known = {secret_key("node", profile.name): stored,
             proxy_secret_key("node", profile.name): proxy_password}
    cfg = Config(nodes={profile.name: profile}, default_node=profile.name)
    clean = {k: v for k, v in env.items() if k not in _NOT_FOR_CHECK}
    return resolve_node(cfg, NodeFlags(node=profile.name, password=secret), clean,
                        known.get)


def check_login(client: Any) -> str:
    """Ask the node once with the client's login and return what was asked; a refusal
    raises the request's own error (401: AuthError, exit 4; unreachable: exit 6...).
    A node user or access key with its secret reads GET /info; a bearer token, which
    /info does not take, reads one event (GET /events?count=1)."""
    if client.endpoint.auth.kind == "bearer":
        from nodecli.node.events.pages import fetch_page

        fetch_page(client, "/events", [("count", "1")])
        return "GET /events?count=1"
    from nodecli.node.info import info_document

    info_document(client)
    return "GET /info"


#: ``node set`` options that name a profile field, and the field (a value of "" unsets
#: an optional one)
SETTABLE = ("url", "user", "access_key", "bearer_file", "cacert", "access_key_header", "proxy")


def changed_mint(current: MintSettings | None, *, mint_key: str | None = None,
                 mint_user_id: str | None = None, mint_group_ids: str | None = None,
                 mint_scope_role: str | None = None,
                 mint_ttl: str | None = None) -> MintSettings:
    """A profile's token signing with the given settings changed (``node set``); a
    profile that does not sign yet needs ``mint_key`` to start. Checked in full by
    ``changed_profile`` (through ``validate_profile``)."""
    if current is None and not mint_key:
        raise UsageError("this profile does not sign its own tokens: give --mint-key PATH "
                         "(with --mint-user-id UID) to make it, or leave out --mint-*")
    ttl = current.ttl if current is not None else 3600
    if mint_ttl is not None:
        from nodecli.timeparse import TimeParseError, parse_duration

        try:
            ttl = int(parse_duration(mint_ttl).total_seconds())
        except TimeParseError as exc:
            raise UsageError(f"--mint-ttl: {exc}") from None
    groups = list(current.group_ids) if current is not None else []
    if mint_group_ids is not None:
        groups = [g for g in mint_group_ids.split(",") if g.strip()]
    return MintSettings(
        mint_key or (current.key if current is not None else ""),
        mint_user_id if mint_user_id is not None else (current.user_id if current else ""),
        groups,
        mint_scope_role or (current.scope_role if current is not None else "user"),
        ttl)


def changed_profile(current: NodeProfile, changes: Mapping[str, Any],
                    insecure: bool | None, mint: MintSettings | None = None) -> NodeProfile:
    """``current`` with ``changes`` applied (``node set``), validated as ``node add``
    validates; the fields not named keep their values. Naming one login (``user`` or
    ``access_key``) drops the other; a CA file turns ``insecure`` off and ``insecure``
    drops the CA file, since each replaces the other."""
    from dataclasses import replace

    fields: dict[str, Any] = {}
    for key, value in changes.items():
        if key not in SETTABLE:
            raise UsageError(f"not a profile field: {key}")
        if value is None:
            continue
        if key == "url" and not value:
            raise UsageError("--url cannot be empty: a profile needs its node's URL")
        fields[key] = value or None
    if fields.get("user"):
        fields.update(access_key=None, bearer_file=None, mint=None)
    if fields.get("access_key") and current.user and "user" not in fields:
        fields["user"] = None
    if fields.get("cacert"):
        fields["insecure"] = False
    if insecure is not None:
        fields["insecure"] = insecure
        if insecure:
            fields["cacert"] = None
    if mint is not None:
        fields["mint"] = mint
    if not fields:
        raise UsageError("nothing to change: give at least one field (--url, --user, "
                         "--access-key, --bearer-file, --cacert, --insecure/--verify, "
                         "--access-key-header, --proxy)")
    checked = validate_profile(replace(current, **fields))
    return replace(checked, health_warn=current.health_warn, health_crit=current.health_crit,
                   secrets=current.secrets)


def set_profile(store: Any, profile: NodeProfile) -> None:
    """Save a changed profile in place (its stored secrets are left as they are)."""
    with store.edit() as cfg:
        if profile.name not in cfg.nodes:
            raise unknown_profile("node", profile.name, cfg.nodes)
        cfg.nodes[profile.name] = profile
