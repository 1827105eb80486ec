"""The options every collaboration-service command takes (profile, URL, token file, CA,
path overrides) and the session they open: service and token resolved, the token's
pre-flight run, one HTTP client."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.cli.common import (
    InputFile,
    get_secret,
)
from nodecli.cli.lazy import lazy_completer
from nodecli.render import sanitize

complete_services = lazy_completer("complete_services")

F = TypeVar("F", bound=Callable[..., Any])
_SERVICE_OPTIONS = [
    click.option("--service", "service", metavar="NAME", envvar="NODECLI_SERVICE",
                 show_envvar=True, shell_complete=complete_services,
                 help="Saved service profile (default: the one set by 'service default')."),
    click.option("--url", "service_url", metavar="URL", envvar="NODECLI_SERVICE_URL",
                 show_envvar=True, help="Service base URL (overrides the profile)."),
    click.option("--token-file", metavar="PATH", type=InputFile("token file"),
                 help="File holding the OAuth access token (else NODECLI_TOKEN, the "
                      "profile, or a prompt)."),
    click.option("--cacert", "service_cacert", metavar="PEM", type=InputFile("CA file"),
                 envvar="NODECLI_SERVICE_CACERT", show_envvar=True,
                 help="CA certificate(s) to trust for the service's TLS certificate."),
    click.option("--insecure", "service_insecure", is_flag=True,
                 help="Do not verify TLS certificates (test services only; warns every run)."),
    click.option("--operations-path", metavar="PATH",
                 help="Path of the top-level operations list (the service does not "
                      "document it; default /operations)."),
    click.option("--service-path", "service_paths", multiple=True, metavar="NAME=PATH",
                 help="Override a path the service does not document: operations, workspaces, "
                      "workspace-memberships, group-memberships ({id} = the parent's id), "
                      "create-workspace. Repeatable."),
    click.option("--proxy", "service_proxy", metavar="URL",
                 help="HTTP proxy, http://[user@]host:port (else the profile's, else "
                      "HTTPS_PROXY/HTTP_PROXY/ALL_PROXY; NO_PROXY exempts hosts)."),
]
SERVICE_OPTION_NAMES = ("service", "service_url", "token_file", "service_cacert",
                        "service_insecure", "operations_path", "service_paths",
                        "service_proxy")


def service_options(f: F) -> F:
    for option in reversed(_SERVICE_OPTIONS):
        f = option(f)
    return f


def pop_service_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {name: kwargs.pop(name) for name in SERVICE_OPTION_NAMES if name in kwargs}


def path_overrides(operations_path: str | None, items: tuple[str, ...] | None) -> dict[str, str]:
    """--operations-path and --service-path NAME=PATH as one checked dict."""
    from nodecli.config.service_paths import check_path_template, parse_path_overrides

    out = parse_path_overrides(items or ())
    if operations_path is not None:
        out["operations"] = check_path_template("operations", operations_path)
    return out


class ServiceSession:
    """An open client on the service and where its operations live."""

    def __init__(self, client: Any, paths: Any) -> None:
        self.client = client
        self.paths = paths

    def __enter__(self) -> ServiceSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()


def open_service_client(app: App, conn: dict[str, Any], what: str = "this call") -> Any:
    """Resolve service + token (prompting on a terminal), run the pre-flight, open."""
    from nodecli.config.secrets import find_secret, recorded_place
    from nodecli.profiles.service import ServiceFlags, resolve_service
    from nodecli.service.preflight import preflight

    flags = ServiceFlags(service=conn.get("service"), url=conn.get("service_url"),
                         token_file=conn.get("token_file"), cacert=conn.get("service_cacert"),
                         insecure=bool(conn.get("service_insecure")),
                         paths=path_overrides(conn.get("operations_path"),
                                              conn.get("service_paths")),
                         proxy=conn.get("service_proxy"))

    cfg = app.store.load()

    def lookup(key: str) -> str | None:
        return find_secret(app.paths, key, recorded_place(cfg, key))[0]

    target = resolve_service(cfg, flags, os.environ, lookup)
    if target.token is None:
        token = get_secret(app, value=None, env=None, what="service access token",
                           prompt="Access token",
                           flags="--token-file, NODECLI_TOKEN or 'nodecli service add'")
        target = target.with_token(token)
    info = preflight(target.token or "", what=what)
    if info.opaque:
        app.term.debug(f"pre-flight skipped: the token from {target.token_source} is opaque "
                       f"(not the documented envelope: {sanitize(info.why_opaque)}); it is "
                       "sent as it is and the service decides")
    else:
        app.term.debug(f"service {target.endpoint.base_url}: token of user "
                       f"{sanitize(info.user_id)} from {target.token_source}, "
                       f"{info.seconds_left} s left")
    from nodecli.cli.remote import open_endpoint

    return ServiceSession(open_endpoint(app, target.endpoint), target.paths)
