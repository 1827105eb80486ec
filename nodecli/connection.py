"""Resolve which node to talk to and with which credentials.

Precedence for every setting: command-line flag > environment variable > saved
profile > default. The identity (bearer token, access key or node user) is taken
from the highest-precedence source that names one, so ``--user bob`` overrides a
profile's access key. The secret (password or access-key secret) is resolved by the
caller: flag-free on purpose (``--password-stdin``, ``NODECLI_PASSWORD``, the
profile's stored secret, then a prompt).

One combination is special: ``--access-key AK`` on the command line with a token in
``NODECLI_BEARER`` (and no ``--password-stdin``) means the bearer token made for AK.
Every resolved :class:`~nodecli.http.Auth` carries a note saying where its identity
and secret came from, which the 401 hint shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from nodecli.config.model import Config, NodeProfile
from nodecli.errors import NotFoundError, UsageError
from nodecli.http import DEFAULT_ACCESS_KEY_HEADER, Auth, Endpoint

ENV = {
    "node": "NODECLI_NODE",
    "url": "NODECLI_URL",
    "user": "NODECLI_USER",
    "password": "NODECLI_PASSWORD",
    "access_key": "NODECLI_ACCESS_KEY",
    "bearer": "NODECLI_BEARER",
    "cacert": "NODECLI_CACERT",
}

MAX_TOKEN_FILE = 1024 * 1024


@dataclass
class NodeFlags:
    """What the command line said (None = not given)."""

    node: str | None = None
    url: str | None = None
    user: str | None = None
    access_key: str | None = None
    bearer_file: str | None = None
    cacert: str | None = None
    insecure: bool = False
    access_key_header: str | None = None
    password: str | None = None  # from --password-stdin (never from argv)
    # False for commands whose own --user names a grantee (permissions): hints then
    # offer only the access-key login, not a --user the command gives another meaning
    user_login: bool = True


@dataclass
class NodeTarget:
    """A resolved node, still missing its secret when ``secret_needed`` is set."""

    endpoint: Endpoint
    profile: NodeProfile | None
    secret_needed: str | None  # "password for node user 'x'" / "secret of access key 'k'"

    def with_secret(self, secret: str, source: str = "typed at the prompt") -> Endpoint:
        auth = self.endpoint.auth
        kind = auth.note.split(";")[0] if auth.note else ""
        note = f"{kind}; secret {source}" if kind else f"secret {source}"
        return self.endpoint.with_auth(
            Auth("basic", auth.username, secret,
                 access_key_header=auth.access_key_header, note=note)
        )


P = TypeVar("P")


def pick_profile(profiles: Mapping[str, P], name: str | None, *, url_given: bool,
                 default: str | None, kind: str) -> P | None:
    """The saved profile to use: the one named, else the default unless a URL was given.

    ``kind`` is ``node`` or ``service`` (for messages). A name that is not saved is
    NotFoundError (exit 5) listing the saved ones.
    """
    if name:
        profile = profiles.get(name)
        if profile is None:
            known = ", ".join(sorted(profiles)) or "none saved"
            raise NotFoundError(f"no {kind} profile {name!r} (profiles: {known})",
                                hint=f"add one with: nodecli {kind} add NAME --url URL ...")
        return profile
    if not url_given and default:
        return profiles.get(default)
    return None


def read_token_file(path: str) -> str:
    from nodecli.fsutil import read_limited

    p = Path(path).expanduser()
    raw = read_limited(p, MAX_TOKEN_FILE, "token file")
    token = raw.decode("utf-8", "replace").strip()
    if token.startswith("Bearer "):
        token = token[7:].strip()
    if not token:
        raise UsageError(f"token file {p} is empty")
    return token


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
    base = Endpoint(url, Auth(), cacert=cacert, insecure=insecure, label=label)
    if bearer_file or bearer:
        token = read_token_file(bearer_file) if bearer_file else (bearer or "").strip()
        if token.startswith("Bearer "):
            token = token[7:].strip()
        if not access_key:
            raise UsageError("a bearer token needs the access key it was made for: "
                             "--access-key AK (or NODECLI_ACCESS_KEY)")
        src = f"token file {bearer_file}" if bearer_file else "token from NODECLI_BEARER"
        auth = Auth("bearer", token=token, access_key=access_key, access_key_header=header,
                    note=f"{src}, from the {origin}")
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
        secret = secret_lookup(f"node:{profile.name}")
        source = f"stored with profile {profile.name!r}"
    note = f"{kind} from the {origin}; secret {source}" if secret else f"{kind} from the {origin}"
    auth = Auth("basic", login, secret or None, access_key=access_key or None,
                access_key_header=header, note=note)
    return NodeTarget(base.with_auth(auth), profile, None if secret else what)
