"""Which collaboration service to call, with which OAuth access token,

Precedence for every setting: command-line flag > environment variable > saved
service profile > default profile (``nodecli service default NAME``):

=========  ====================  ==========================  ==========================
setting    flag                  environment                 profile
=========  ====================  ==========================  ==========================
profile    ``--service NAME``    ``NODECLI_SERVICE``         ``defaults.service``
URL        ``--url URL``         ``NODECLI_SERVICE_URL``     ``url``
token      ``--token-file F``    ``NODECLI_TOKEN``           ``token_file``, then the
                                                             stored secret
                                                             ``service:NAME``
CA file    ``--cacert PEM``      ``NODECLI_SERVICE_CACERT``  ``cacert``
=========  ====================  ==========================  ==========================

When no source gives a token, the CLI prompts for one on a terminal (hidden) and
otherwise fails with exit 2 naming the flags.

The token's pre-flight check is :mod:`nodecli.service.preflight`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nodecli.config.model import Config, ServiceProfile
from nodecli.config.secrets import secret_key
from nodecli.errors import UsageError
from nodecli.http.client import Auth, Endpoint
from nodecli.profiles import pick_profile, resolve_proxy, unknown_profile
from nodecli.service.preflight import OPERATIONS_SCOPES, TokenInfo, describe_token
from nodecli.tokens.source import read_token_file

ENV = {
    "service": "NODECLI_SERVICE",
    "url": "NODECLI_SERVICE_URL",
    "token": "NODECLI_TOKEN",
    "cacert": "NODECLI_SERVICE_CACERT",
}


@dataclass(slots=True)
class ServiceFlags:
    """What the command line said (None = not given)."""

    service: str | None = None
    url: str | None = None
    token_file: str | None = None
    cacert: str | None = None
    insecure: bool = False
    token: str | None = None  # from --token-stdin (never from argv)
    paths: dict[str, str] | None = None  # --operations-path / --service-path overrides
    proxy: str | None = None


@dataclass(slots=True)
class ServiceTarget:
    """A resolved service; ``token`` is None when it must still be asked for."""

    endpoint: Endpoint
    profile: ServiceProfile | None
    token: str | None
    token_source: str  # "--token-file", "NODECLI_TOKEN", "profile token file", ...
    paths: Any = None  # config.service_paths.ServicePaths

    def with_token(self, token: str, source: str = "prompt") -> ServiceTarget:
        token = clean_token(token)
        return ServiceTarget(self.endpoint.with_auth(Auth("oauth", token=token,
                                                          note=f"token from {source}")),
                             self.profile, token, source, self.paths)


def clean_token(token: str) -> str:
    token = token.strip()
    if token[:7].lower() == "bearer ":
        token = token[7:].strip()
    if not token:
        raise UsageError("the access token is empty")
    return token


def check_url(url: str) -> str:
    from urllib.parse import urlsplit

    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise UsageError(f"service URL must start with https:// (or http://): {url!r}")
    if "@" in url.split("/")[2]:  # (the URL is not shown: it may hold a password)
        raise UsageError("the service URL must not carry credentials (user:password@); "
                         "the access token goes in --token-file, --token-stdin or "
                         "NODECLI_TOKEN")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise UsageError(f"invalid service URL {url!r}: {exc}") from None
    if not parts.hostname or any(c.isspace() for c in url):
        raise UsageError(f"invalid service URL {url!r}")
    return url


def resolve_service(
    cfg: Config,
    flags: ServiceFlags,
    env: Mapping[str, str],
    secret_lookup: Callable[[str], str | None] | None = None,
) -> ServiceTarget:
    """Combine flags, environment and profile into an endpoint (see module doc)."""
    profile = pick_profile(cfg.services, flags.service or env.get(ENV["service"]),
                           url_given=bool(flags.url or env.get(ENV["url"])),
                           default=cfg.default_service, kind="service")

    url = flags.url or env.get(ENV["url"]) or (profile.url if profile else None)
    if not url:
        raise UsageError(
            "no collaboration service given: use --service NAME or --url URL "
            f"({ENV['service']} / {ENV['url']}), or set a default with "
            "'nodecli service default NAME'")
    check_url(url)
    cacert = flags.cacert or env.get(ENV["cacert"]) or (profile.cacert if profile else None)
    insecure = flags.insecure or bool(profile and profile.insecure)
    label = profile.name if profile else url
    base = Endpoint(url, Auth("oauth"), cacert=cacert, insecure=insecure, label=label,
                    peer="service", cacert_env=ENV["cacert"],
                    proxy=resolve_proxy(url, flags.proxy, profile, "service", env,
                                        secret_lookup))
    from nodecli.config.service_paths import DEFAULT_PATHS

    paths = DEFAULT_PATHS.with_overrides({**(profile.paths if profile else {}),
                                          **(flags.paths or {})})

    token: str | None = None
    source = ""
    if flags.token is not None:
        token, source = flags.token, "--token-stdin"
    elif flags.token_file:
        token, source = read_token_file(flags.token_file), f"--token-file {flags.token_file}"
    elif env.get(ENV["token"]):
        token, source = env[ENV["token"]], ENV["token"]
    elif profile and profile.token_file:
        token = read_token_file(profile.token_file)
        source = f"token file {profile.token_file} of profile {profile.name!r}"
    elif profile and secret_lookup:
        token = secret_lookup(secret_key("service", profile.name))
        source = f"stored token of profile {profile.name!r}"
    target = ServiceTarget(base, profile, None, "", paths)
    return target.with_token(token, source) if token else target


@dataclass(slots=True)
class SavedProfile:
    """What :func:`add_profile` did: the profile, what its token says, warnings."""

    profile: ServiceProfile
    token_info: TokenInfo
    stored: bool  # token kept in the secret store (else read from token_file)
    warnings: list[str]
    backend: str | None = None  # the secret store's backend that keeps the token


def check_new_profile(cfg: Config, name: str, force: bool = False) -> str:
    """A valid profile name that is free (or ``force``); checked before asking for a token."""
    from nodecli.config.model import check_name
    from nodecli.errors import ConflictError

    try:
        check_name(name, "service profile name")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not force and name in cfg.services:
        raise ConflictError(f"service profile {name!r} already exists",
                            hint="use --force to replace it")
    return name


def add_profile(store: Any, secret_paths: Any, name: str, url: str, *,
                token: str | None = None, token_file: str | None = None,
                cacert: str | None = None, insecure: bool = False,
                make_default: bool = False, force: bool = False,
                paths: dict[str, str] | None = None, proxy: str | None = None,
                proxy_password: str | None = None) -> SavedProfile:
    """Save a service profile (locked config edit) and its token.

    Exactly one of ``token`` (kept in the secret store of ``secret_paths`` under
    ``service:NAME``) or
    ``token_file`` (its absolute path is saved; the file is read at every call). The
    token may be opaque (not the documented envelope); an envelope token that expired or
    lacks the needed scope is saved with a warning. The first profile becomes the
    default. ``paths`` overrides where operations live (``config.service_paths.ServicePaths``).
    """
    import os
    import stat
    from pathlib import Path

    from nodecli.errors import ConflictError

    check_new_profile(store.load(), name, force)
    check_url(url)
    if (token is None) == (token_file is None):
        raise UsageError("give the token with --token-file or --token-stdin (not both)")
    warnings: list[str] = []
    path: str | None = None
    if token_file is not None:
        path = str(Path(token_file).expanduser().resolve())
        token = read_token_file(path)
        try:
            if os.stat(path).st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                warnings.append(f"{path} is readable by other users: chmod 600 {path}")
        except OSError:
            pass
    else:
        token = clean_token(token or "")
    info = describe_token(token)
    if info.seconds_left is not None and info.seconds_left <= 0:
        warnings.append("the token has already expired: calls will be refused until it is "
                        "replaced")
    if not info.opaque and not set(info.scopes) & set(OPERATIONS_SCOPES):
        warnings.append("the token has neither user:all nor admin:all: operations calls "
                        "will be refused")
    if paths:
        from nodecli.config.service_paths import DEFAULT_PATHS

        DEFAULT_PATHS.with_overrides(paths)  # checks every template
    if cacert is not None:
        cacert = str(Path(cacert).expanduser().resolve())
    if proxy:
        from nodecli.http.proxies import parse_proxy

        parse_proxy(proxy, "--proxy")
    profile = ServiceProfile(name, url, token_file=path, cacert=cacert, insecure=insecure,
                             paths=dict(paths or {}), proxy=proxy or None)
    with store.edit() as cfg:
        if name in cfg.services and not force:
            raise ConflictError(f"service profile {name!r} already exists",
                                hint="use --force to replace it")
        cfg.services[name] = profile
        if make_default or not cfg.default_service:
            cfg.default_service = name
    from nodecli.profiles import keep_secrets

    # (a token stored by an earlier 'add' is forgotten when the token is now a file)
    held = keep_secrets(store, secret_paths, "service", name, token if path is None else None,
                        proxy_password)
    return SavedProfile(profile, info, path is None, warnings,
                        held[0].name if held[0] is not None else None)


def remove_profile(store: Any, secret_paths: Any, name: str) -> None:
    """Delete a profile, its stored token, and the default if it was the default."""
    from nodecli.profiles import forget_secrets

    with store.edit() as cfg:
        if name not in cfg.services:
            raise unknown_profile("service", name, cfg.services)
        where = cfg.services.pop(name).secrets
        if cfg.default_service == name:
            cfg.default_service = None
    forget_secrets(secret_paths, "service", name, where)


def profile_token(profile: ServiceProfile, secret_paths: Any) -> tuple[str, str | None]:
    """(where the token comes from, the token or None) for a saved profile; the secret
    store is opened only where the profile recorded its token."""
    if profile.token_file:
        try:
            return f"file {profile.token_file}", read_token_file(profile.token_file)
        except UsageError as exc:
            return f"file {profile.token_file} ({exc.message})", None
    from nodecli.config.secrets import find_secret

    token = find_secret(secret_paths, secret_key("service", profile.name), profile.secrets)[0]
    return ("stored" if token else "none"), token


def list_profiles(cfg: Config, secret_paths: Any) -> list[dict[str, Any]]:
    """Rows for ``service list`` (stable json fields)."""
    rows = []
    for name in sorted(cfg.services):
        prof = cfg.services[name]
        source, _ = profile_token(prof, secret_paths)
        rows.append({"name": name, "url": prof.url, "token": source,
                     "default": name == cfg.default_service, "cacert": prof.cacert,
                     "insecure": prof.insecure})
    return rows


def show_profile(cfg: Config, secret_paths: Any, name: str | None) -> dict[str, Any]:
    """A profile (the default without ``name``) and what its token says."""
    from nodecli.errors import NodecliError

    name = name or cfg.default_service
    if not name:
        raise UsageError("no NAME given and no default service profile")
    prof = cfg.services.get(name)
    if prof is None:
        raise unknown_profile("service", name, cfg.services)
    source, token = profile_token(prof, secret_paths)
    data: dict[str, Any] = {"name": name, **prof.to_dict(),
                            "default": name == cfg.default_service, "token": source}
    if token:
        try:
            data["token_info"] = describe_token(token).as_dict()
        except NodecliError as exc:
            data["token_problem"] = exc.message
    return data
