"""``nodecli service``: collaboration service profiles (URL and OAuth access token)."""

from __future__ import annotations

import click

from nodecli.cli.app import App
from nodecli.cli.common import (
    InputFile,
    confirm,
    default_profile,
    get_secret,
    output_option,
    pass_app,
    profile_proxy_options,
    proxy_password_for,
    read_secret_stdin,
)
from nodecli.cli.lazy import HelpGroup, lazy_completer
from nodecli.cli.service_session import path_overrides
from nodecli.errors import Aborted, UsageError
from nodecli.render import Column, sanitize

complete_services = lazy_completer("complete_services")


@click.group(cls=HelpGroup,
             help="""Collaboration service profiles: URL and OAuth access token.

\b
  nodecli service add corp --url https://collab.example.com --token-file ~/.corp-token
  nodecli service add corp --url https://collab.example.com --token-stdin < token.txt
  nodecli service default corp
  nodecli service show corp
""")
def service() -> None:
    pass


@service.command("add")
@click.argument("name")
@click.option("--url", required=True, metavar="URL", help="Base URL of the service.")
@click.option("--token-file", metavar="PATH", type=InputFile("token file"),
              help="Read the token from this file at every call (kept up to date elsewhere).")
@click.option("--token-stdin", is_flag=True, help="Read the token from stdin and store it.")
@click.option("--cacert", metavar="PEM", type=InputFile("CA file"),
              help="CA certificate(s) to trust for the service.")
@click.option("--insecure", is_flag=True, help="Do not verify TLS (test services only).")
@click.option("--default", "make_default", is_flag=True, help="Also make it the default.")
@click.option("--force", is_flag=True, help="Replace an existing profile of that name.")
@click.option("--operations-path", metavar="PATH",
              help="Save the path of the top-level operations list (default /operations).")
@click.option("--service-path", "service_paths", multiple=True, metavar="NAME=PATH",
              help="Save a path override (see 'operations list --help'). Repeatable.")
@profile_proxy_options("service")
@pass_app
def service_add(app: App, name: str, url: str, token_file: str | None, token_stdin: bool,
                cacert: str | None, insecure: bool, make_default: bool, force: bool,
                operations_path: str | None, service_paths: tuple[str, ...],
                proxy: str | None, proxy_password_stdin: bool) -> None:
    """Save a service profile. The token comes from --token-file (the path is saved and
    the file read at every call), --token-stdin, NODECLI_TOKEN or a hidden prompt (those
    are stored in the keyring or the 0600 secrets file, never in config.toml). A token
    that is not the documented envelope is kept as it is ("opaque: contents unknown").

    \b
      nodecli service add corp --url https://collab.example.com --token-file ~/.corp-token
      nodecli service add corp --url https://collab.example.com --token-stdin < token.txt
      nodecli service add v2 --url https://collab.example.com --token-file t \\
          --operations-path /api/v2/operations
    """
    from nodecli.profiles.service import add_profile, check_new_profile, check_url

    check_new_profile(app.store.load(), name, force)
    check_url(url)
    paths = path_overrides(operations_path, service_paths)
    if token_file and token_stdin:
        raise UsageError("give the token with --token-file or --token-stdin, not both")
    proxy_password = proxy_password_for(proxy, proxy_password_stdin,
                                        stdin_taken="--token-stdin" if token_stdin else None)
    token = None
    if token_stdin:
        token = read_secret_stdin("access token")
    elif not token_file:
        token = get_secret(app, value=None, env="NODECLI_TOKEN", what="service access token",
                           prompt="Access token", flags="--token-file, --token-stdin")
    saved = add_profile(app.store, app.paths, name, url, token=token, token_file=token_file,
                        cacert=cacert, insecure=insecure, make_default=make_default,
                        force=force, paths=paths, proxy=proxy, proxy_password=proxy_password)
    for warning in saved.warnings:
        app.term.warn(sanitize(warning))
    where = (("kept in the keyring" if saved.backend == "keyring" else "kept in the secrets file")
             if saved.stored else f"read from {saved.profile.token_file} at each run")
    whose = ("an opaque token, its contents unknown" if saved.token_info.opaque
             else f"a token of {saved.token_info.who()}")
    app.term.success(f"saved service profile {name!r}: {url}; {whose}, {where}")


@service.command("list")
@output_option()
@pass_app
def service_list(app: App, output_format: str) -> None:
    """List saved service profiles.

    \b
    Examples:
      nodecli service list -o json
    """
    from nodecli.profiles.service import list_profiles

    rows = list_profiles(app.store.load(), app.paths)
    app.term.table(rows, [Column("name", "name", whole=True), Column("url", "url"),
                          Column("token", "token", drop=1), Column("default", "default")],
                   output_format,
                   empty="no service profiles: add one with 'nodecli service add NAME "
                         "--url URL'")


@service.command("show")
@click.argument("name", required=False, shell_complete=complete_services)
@output_option(("table", "json"))
@pass_app
def service_show(app: App, name: str | None, output_format: str) -> None:
    """Show a profile (the default one without NAME) and what its token says.

    \b
    Examples:
      nodecli service show prod
    """
    from nodecli.profiles.service import show_profile

    data = show_profile(app.store.load(), app.paths, name)
    if output_format == "json":
        app.term.json(data)
        return
    from nodecli.service.preflight import OPAQUE
    from nodecli.timeparse import describe_left

    info = dict(data.pop("token_info", None) or {})
    if info.get("opaque"):
        info = {"contents": OPAQUE}
    left = info.pop("seconds_left", None)
    if isinstance(left, (int, float)) and info.get("expires_at"):
        info["expires_at"] = f"{info['expires_at']} ({describe_left(left)})"
    paths = data.pop("paths", None) or {}
    if paths:
        data["paths"] = [f"{k}={v}" for k, v in sorted(paths.items())]
    app.term.fields([*((k.replace("_", " "), v) for k, v in data.items()),
                     *((f"token {k.replace('_', ' ')}", v) for k, v in info.items())])


@service.command("remove")
@click.argument("name", shell_complete=complete_services)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_app
def service_remove(app: App, name: str, yes: bool) -> None:
    """Remove a profile and its stored token.

    \b
    Examples:
      nodecli service remove staging --yes
    """
    from nodecli.profiles import unknown_profile
    from nodecli.profiles.service import remove_profile

    services = app.store.load().services
    if name not in services:  # before the question (remove_profile checks again, locked)
        raise unknown_profile("service", name, services)
    if not confirm(app, f"Remove service profile {name!r} and its stored token?", yes=yes):
        raise Aborted("aborted: nothing removed")
    remove_profile(app.store, app.paths, name)
    app.term.success(f"removed service profile {name!r}")


@service.command("default")
@click.argument("name", required=False, shell_complete=complete_services)
@click.option("--unset", "--clear", "unset", is_flag=True, help="Have no default profile.")
@pass_app
def service_default(app: App, name: str | None, unset: bool) -> None:
    """Show or set the profile used when no --service / --url is given.

    \b
    Examples:
      nodecli service default prod
      nodecli service default          # print it
      nodecli service default --unset
    """
    default_profile(app, "service", name, unset)
