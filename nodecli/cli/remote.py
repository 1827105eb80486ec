"""Options shared by every command that talks to a node, and the client they open."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from nodecli.cli.app import App
from nodecli.cli.common import InputFile, get_secret, read_secret_stdin
from nodecli.cli.lazy import lazy_completer

complete_access_keys = lazy_completer("complete_access_keys")
complete_nodes = lazy_completer("complete_nodes")
complete_users = lazy_completer("complete_users")

F = TypeVar("F", bound=Callable[..., Any])

complete_node_profiles = complete_nodes  # the name the node commands import


_NODE_OPTIONS = [
    click.option("--node", "node", metavar="NAME", envvar="NODECLI_NODE", show_envvar=True,
                 shell_complete=complete_node_profiles,
                 help="Saved node profile (default: the one set by 'node default')."),
    click.option("--url", metavar="URL", envvar="NODECLI_URL", show_envvar=True,
                 help="Node base URL, e.g. https://node:9092 (overrides the profile)."),
    click.option("--user", "node_user", metavar="NAME", envvar="NODECLI_USER",
                 show_envvar=True, shell_complete=complete_users, help="Node user for HTTP Basic."),
    click.option("--access-key", metavar="AK", envvar="NODECLI_ACCESS_KEY", show_envvar=True,
                 shell_complete=complete_access_keys,
                 help="Access key id (Basic with its secret, or with --bearer-file)."),
    click.option("--bearer-file", metavar="PATH", type=InputFile("token file"),
                 help="File holding a bearer token (or NODECLI_BEARER with the token)."),
    click.option("--cacert", metavar="PEM", type=InputFile("CA file"),
                 envvar="NODECLI_CACERT", show_envvar=True,
                 help="CA certificate(s) to trust for the node's TLS certificate."),
    click.option("--insecure", is_flag=True,
                 help="Do not verify TLS certificates (test nodes only; warns every run)."),
    click.option("--access-key-header", metavar="NAME",
                 help="Header naming the access key with bearer tokens "
                      "(default X-Vendor-AccessKey)."),
    click.option("--password-stdin", "node_password_stdin", is_flag=True,
                 help="Read the password / access-key secret from stdin "
                      "(else NODECLI_PASSWORD, the profile, or a prompt)."),
    click.option("--proxy", "node_proxy", metavar="URL",
                 help="HTTP proxy, http://[user@]host:port (else the profile's, else "
                      "HTTPS_PROXY/HTTP_PROXY/ALL_PROXY; NO_PROXY exempts hosts)."),
]


def node_options(f: F) -> F:
    """Add the connection options (flag > env > profile > default) to a command."""
    for option in reversed(_NODE_OPTIONS):
        f = option(f)
    return f


def access_options(f: F) -> F:
    """The connection options without --user: for commands whose own --user names a
    user id (permissions), where the login is an access key or a bearer token."""
    for option in reversed([o for i, o in enumerate(_NODE_OPTIONS) if i != 2]):
        f = option(f)
    return f


NODE_OPTION_NAMES = ("node", "url", "node_user", "access_key", "bearer_file", "cacert",
                     "insecure", "access_key_header", "node_password_stdin", "node_proxy")


def pop_node_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Remove the connection options from a command's kwargs and return them."""
    return {name: kwargs.pop(name) for name in NODE_OPTION_NAMES if name in kwargs}


def open_node_client(app: App, conn: dict[str, Any], *, need: str | None = None) -> Any:
    """Resolve the node from options/env/profile, get the secret, open the client.

    ``need="bearer"`` refuses (exit 2) before any prompt when the resolved
    credentials are not a bearer token.
    """
    from nodecli.config.secrets import find_secret, recorded_place
    from nodecli.profiles.node import NodeFlags, resolve_node

    # Values click took from NODECLI_* variables are left to resolve_node, which reads
    # the same variables: the result is the same and 401 hints name the right source.
    conn = dict(conn)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        from click.core import ParameterSource

        for name in ("node", "url", "node_user", "access_key", "cacert"):
            if ctx.get_parameter_source(name) == ParameterSource.ENVIRONMENT:
                conn[name] = None
    flags = NodeFlags(
        node=conn.get("node"), url=conn.get("url"), user=conn.get("node_user"),
        access_key=conn.get("access_key"), bearer_file=conn.get("bearer_file"),
        cacert=conn.get("cacert"), insecure=bool(conn.get("insecure")),
        access_key_header=conn.get("access_key_header"),
        password=read_secret_stdin("password") if conn.get("node_password_stdin") else None,
        user_login="node_user" in conn,  # access_options commands have no login --user
        proxy=conn.get("node_proxy"),
    )
    cfg = app.store.load()

    def lookup(key: str) -> str | None:
        return find_secret(app.paths, key, recorded_place(cfg, key))[0]

    target = resolve_node(cfg, flags, os.environ, lookup)
    endpoint = target.endpoint
    if need == "bearer" and endpoint.auth.kind != "bearer":
        from nodecli.errors import UsageError

        raise UsageError("this command needs a bearer token: --bearer-file PATH (or "
                         "NODECLI_BEARER) with --access-key AK, or a profile that has them")
    if target.secret_needed:
        secret = get_secret(app, value=None, env=None, what=target.secret_needed,
                            prompt=target.secret_needed.capitalize(),
                            flags="--password-stdin or NODECLI_PASSWORD")
        endpoint = target.with_secret(secret)
    return open_endpoint(app, endpoint)


def open_endpoint(app: App, endpoint: Any) -> Any:
    """The client for a resolved node or service endpoint, with the warnings a person
    should see first (TLS off, credentials in clear), -v's log and the retry status;
    a proxy password still missing is asked for here."""
    from nodecli.http.checks import in_clear
    from nodecli.http.client import open_client

    if endpoint.budget is None:
        endpoint = endpoint.replace(budget=app.budget)
    proxy = endpoint.proxy
    if proxy is not None and proxy.needs_password:
        from nodecli.http.proxies import PASSWORD_ENV

        password = get_secret(app, value=None, env=None, what="proxy password",
                              prompt=f"Password for proxy {proxy.shown()}",
                              flags=PASSWORD_ENV)
        endpoint = endpoint.replace(proxy=proxy.with_password(password))

    if endpoint.insecure:
        app.term.warn(f"TLS verification is OFF for {endpoint.base_url} (--insecure)")
    if in_clear(endpoint):
        via = f" through proxy {endpoint.proxy.shown()}" if endpoint.proxy is not None else ""
        app.term.warn(f"credentials go to {endpoint.base_url}{via} over plain http://, "
                      "unencrypted: use https:// (nodes serve it on port 9092)")
    log = app.term.debug if app.verbosity >= 1 else None

    def status(text: str | None) -> None:
        if text is None:
            app.term.status.clear()
        else:  # live line on a terminal only; -v logs each retry everywhere
            app.term.status.show(text)

    def skew(offset: float) -> None:
        where = "ahead of" if offset > 0 else "behind"
        effect = "expire that much sooner" if offset > 0 else "last that much longer"
        app.term.warn(f"the clock of {endpoint.label or endpoint.base_url} is "
                      f"{abs(offset):.0f} s {where} this machine's (its Date header): bearer "
                      f"tokens signed here {effect} there; fix the clocks (NTP), or sign "
                      "with 'nodecli token create --clock-from-node NODE'")

    return open_client(endpoint, log=log, status=status, skew=skew)
