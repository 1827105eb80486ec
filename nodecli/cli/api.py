"""``nodecli api``: any request with the profile's credentials (see nodecli.node.raw_api)."""

from __future__ import annotations

import sys
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import output_option, pass_app
from nodecli.cli.remote import node_options, open_node_client, pop_node_options

CONTEXT = {"help_option_names": ["-h", "--help"]}


@click.command("api", context_settings=CONTEXT)
@click.argument("path", metavar="PATH")
@click.option("-X", "--method", metavar="METHOD",
              help="HTTP method: default GET, or POST when fields or --input are given "
                   "(gh's rule); --paginate is always GET. CANCEL too.")
@click.option("-f", "--raw-field", "typed", multiple=True, metavar="KEY=VALUE",
              help="A typed field: numbers, true/false, null, JSON; @FILE reads a file. "
                   "A JSON body (so POST) unless -X GET/DELETE/HEAD/CANCEL or --paginate "
                   "make it a query parameter.")
@click.option("-F", "--field-string", "strings", multiple=True, metavar="KEY=VALUE",
              help="A field whose value is always a string.")
@click.option("--input", "input_file", metavar="FILE",
              help="The request body as it is, from FILE or '-' (stdin).")
@click.option("-H", "--header", "headers", multiple=True, metavar="'NAME: VALUE'",
              help="An extra request header (credentials are the profile's).")
@click.option("--paginate", is_flag=True,
              help="Follow Link rel=\"next\" and print every page as one JSON array.")
@click.option("--follow-redirects", is_flag=True,
              help="Follow a redirect to another origin (scheme, host, port) too, as "
                   "curl -L does: without credentials and never with a body.")
@click.option("-i", "--include", is_flag=True,
              help="Print the status line and the response headers first (stderr).")
@click.option("--service", "service", metavar="NAME",
              help="Send to this collaboration service profile instead of the node.")
@node_options
@output_option(("json", "jsonl"), default="json")
@pass_app
def api(app: App, path: str, method: str | None, typed: tuple[str, ...],
        strings: tuple[str, ...], input_file: str | None, headers: tuple[str, ...],
        paginate: bool, follow_redirects: bool, include: bool, service: str | None,
        output_format: str, **kwargs: Any) -> None:
    """Send any request to the node (or --service) with the profile's credentials, TLS,
    proxy, retries and redaction, and print the answer. HTTP errors exit with the usual
    codes and the node's message.

    Fields (-f, -F) make a POST with a JSON body, as in gh api; with -X GET (or DELETE,
    HEAD, CANCEL) or --paginate they are query parameters. --dry-run sends nothing and
    prints the request.

    \b
    Examples:
      nodecli api /info
      nodecli api /access_keys --paginate --query '[].id' -o raw
      nodecli api -X GET /events -f count=5       # GET /events?count=5
      nodecli api /events -f count=5 --paginate   # GET, then every next page
      nodecli api /access_keys -F id=ak9 -f 'storage={"path":"/"}'   # POST
      nodecli api -X PUT /ops/transfers/ID -f target_rate_kbps=50000
      nodecli api -X CANCEL /ops/transfers/ID
      nodecli api /operations --service corp
    """
    from nodecli.node import raw_api

    body = None
    if input_file is not None:
        from nodecli.fsutil import read_limited

        body = sys.stdin.buffer.read(64 * 1024 * 1024) if input_file == "-" else \
            read_limited(input_file, 64 * 1024 * 1024, "input file")
    call = raw_api.plan(method, path, typed, strings, body, headers, paginate=paginate)
    conn = pop_node_options(kwargs)
    if service is not None:
        from nodecli.cli.service_session import open_service_client

        session = open_service_client(app, {"service": service}, f"{call.method} {path}")
        client = session.client
    else:
        client = open_node_client(app, conn)
    if follow_redirects:
        client = client.derive(cross_origin_redirects=True)
    with client:
        from nodecli import dryrun

        if dryrun.active():  # the request is the command: never sent, not even a GET
            raise raw_api.dry_run(client, call, paginate)
        if paginate:
            items = raw_api.paginate(client, call)
            app.term.jsonl(items) if output_format == "jsonl" else app.term.json(items)
            return
        resp = raw_api.send(client, call)
    if include:
        app.term.info(f"HTTP {resp.status}")
        for name, value in resp.headers.items():
            app.term.info(f"{name}: {value}")
    if not resp.body:
        return
    from nodecli.errors import RemoteError

    try:
        data = resp.json()
    except RemoteError:  # not JSON: the text as it came (controls shown as '?')
        from nodecli.render import sanitize_lines

        app.term.data(sanitize_lines(resp.body.decode("utf-8", "replace")).rstrip("\n"))
        return
    if output_format == "jsonl" and isinstance(data, list):
        app.term.jsonl(data)
    else:
        app.term.json(data)
