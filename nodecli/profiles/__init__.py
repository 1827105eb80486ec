"""Connection profiles, node and service: one shape, one resolution rule.

A profile is a named, saved set of connection settings under ``[nodes.NAME]`` or
``[services.NAME]`` in ``config.toml``; its secret (password, access-key secret, access
token) lives in the secret store (:mod:`nodecli.config.secrets`), never in ``config.toml``.

Every setting is resolved the same way for both kinds: command-line flag > environment
variable > saved profile (the one named, else the default unless a URL was given) >
built-in default. :func:`pick_profile` is that rule; :mod:`.node` and :mod:`.service`
apply it to their settings and keep their profiles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from nodecli.errors import NotFoundError

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
            raise unknown_profile(kind, name, profiles)
        return profile
    if not url_given and default:
        return profiles.get(default)
    return None


def unknown_profile(kind: str, name: str, profiles: Mapping[str, Any]) -> NotFoundError:
    """The one error for a profile name that is not saved (exit 5), naming the saved ones."""
    known = ", ".join(sorted(profiles)) or "none saved"
    return NotFoundError(f"no {kind} profile {name!r} (profiles: {known})",
                         hint=f"add one with: nodecli {kind} add NAME --url URL ...")


#: where each kind of profile and its default live in the config
_TABLES = {"node": ("nodes", "default_node"), "service": ("services", "default_service")}


def set_default(store: Any, kind: str, name: str | None) -> None:
    """Make ``name`` the default ``kind`` profile (``node`` or ``service``); None: none."""
    table, default = _TABLES[kind]
    with store.edit() as cfg:
        profiles = getattr(cfg, table)
        if name is not None and name not in profiles:
            raise unknown_profile(kind, name, profiles)
        setattr(cfg, default, name)


def resolve_proxy(url: str, explicit: str | None, profile: Any, kind: str,
                  env: Mapping[str, str],
                  secret_lookup: Callable[[str], str | None] | None) -> Any:
    """The proxy for ``url`` (see nodecli.http.proxies), its password filled in when
    NODECLI_PROXY_PASSWORD or the profile's secret store has it (else the caller asks)."""
    from nodecli.http.proxies import PASSWORD_ENV, proxy_for

    if explicit:
        proxy = proxy_for(url, env, explicit, "--proxy")
    elif profile is not None and profile.proxy:
        proxy = proxy_for(url, env, profile.proxy, f"profile {profile.name!r}")
    else:
        proxy = proxy_for(url, env)
    if proxy is None or not proxy.needs_password:
        return proxy
    password = env.get(PASSWORD_ENV)
    if not password and profile is not None and secret_lookup is not None:
        password = secret_lookup(proxy_secret_key(kind, profile.name))
    return proxy.with_password(password) if password else proxy


def proxy_secret_key(kind: str, name: str) -> str:
    """Where a profile's proxy password is filed in the secret store."""
    from nodecli.config.secrets import secret_key

    return secret_key(kind, name) + ":proxy"


def keep_secrets(store: Any, paths: Any, kind: str, name: str, secret: str | None,
                 proxy_password: str | None) -> list[Any]:
    """Store the secret and proxy password of the saved profile ``kind:name``, forget
    those it does not have, and record in the profile where they went: later reads open
    only that place (the keyring package is slow to import). Called after the profile
    was saved, outside the config lock (the file backend takes the same lock). Returns
    the backend that holds each (None: not stored)."""
    from nodecli.config.secrets import delete_secret, place_of, secret_key, store_secret

    stored: list[Any] = []
    for key, value in ((secret_key(kind, name), secret),
                       (proxy_secret_key(kind, name), proxy_password)):
        if value:
            stored.append(store_secret(paths, key, value))
        else:
            delete_secret(paths, key)
            stored.append(None)
    place = place_of(stored)
    with store.edit() as cfg:
        profile = (cfg.nodes if kind == "node" else cfg.services).get(name)
        if profile is not None:
            profile.secrets = place
    return stored


def record_stored(store: Any, kind: str, name: str, backend: Any) -> None:
    """After one more secret of the saved profile ``kind:name`` went to ``backend``: the
    profile's record of where its secrets are (another place: not known, every place is
    searched)."""
    with store.edit() as cfg:
        profile = (cfg.nodes if kind == "node" else cfg.services).get(name)
        if profile is not None and profile.secrets != backend.name:
            profile.secrets = backend.name if profile.secrets == "none" else None


def forget_secrets(paths: Any, kind: str, name: str, where: str | None) -> None:
    """Delete the stored secrets of a removed profile (``where``: its record)."""
    from nodecli.config.secrets import delete_secret, secret_key

    delete_secret(paths, secret_key(kind, name), where)
    delete_secret(paths, proxy_secret_key(kind, name), where)
