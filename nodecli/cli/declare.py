"""``nodecli export``, ``diff`` and ``apply``: one document for the desired state (thin).

The document, its checks and every request are in :mod:`nodecli.declare`; this module
opens the node, asks, and renders.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from nodecli.cli.app import App
from nodecli.cli.common import (
    CONTEXT,
    InputFile,
    UserPath,
    confirm,
    fleet_names,
    fleet_options,
    output_option,
    pass_app,
)
from nodecli.cli.remote import node_options, pop_node_options
from nodecli.errors import Aborted, ExitCode, NodecliError, UsageError
from nodecli.render import Column

DIFF_COLUMNS = [Column("node", "node", whole=True), Column("kind", "kind", whole=True),
                Column("name", "name"), Column("action", "action", whole=True),
                Column("changes", "fields (before -> after)", free=True)]


class DiffError(NodecliError):
    """An error of ``diff`` (exit 2 and above: 1 means "something would change")."""

    exit_code = ExitCode.USAGE


def _node_wanted(conn: dict[str, Any]) -> bool:
    # (the --node and --url options read NODECLI_NODE and NODECLI_URL themselves)
    return bool(conn.get("node") or conn.get("url"))


def _opener(app: App) -> Any:
    from nodecli.cli.remote import open_endpoint

    return lambda endpoint: open_endpoint(app, endpoint)


def _stdin_line(what: str) -> str:
    from nodecli.cli.common import read_secret_stdin

    return read_secret_stdin(what)


def _label(client: Any) -> str:
    return str(client.endpoint.label or client.endpoint.base_url)


def _secrets(app: App, client: Any, base_dir: str) -> Any:
    from nodecli.declare.plan import KeySecrets

    return KeySecrets(app.paths, _label(client), os.environ, base_dir, _stdin_line,
                      client.endpoint.base_url)


def _read_document(app: App, path: str) -> Any:
    from nodecli.declare.cached import parse_cached
    from nodecli.declare.document import MAX_DOCUMENT_BYTES
    from nodecli.fsutil import read_limited

    if path == "-":
        raw, source, base = sys.stdin.buffer.read(MAX_DOCUMENT_BYTES + 1), "<stdin>", "."
    else:
        raw = read_limited(path, MAX_DOCUMENT_BYTES, "document")
        source, base = path, os.path.dirname(os.path.abspath(path))
    return parse_cached(raw, source, base, app.paths.state_dir / "declare")


# -- export --------------------------------------------------------------------------------


@click.command("export", context_settings=CONTEXT)
@click.option("--local", "local", is_flag=True,
              help="The local node users and transfer users (the default without "
                   "--node/--url).")
@click.option("--from-csv", "from_csv", metavar="FILE", type=InputFile("csv file"),
              help="Turn a csv of node users (columns name, transfer_user, "
                   "password_hash, acls) into a document instead.")
@node_options
@click.option("-o", "--output", "output_format", type=click.Choice(["yaml", "json"]),
              default="yaml",
              help="Output format: yaml, json [default: yaml; NODECLI_OUTPUT does not "
                   "apply: a document is always one of these].")
@pass_app
def export_cmd(app: App, local: bool, from_csv: str | None, output_format: str,
               **kwargs: Any) -> None:
    """Write the document of what is: a backup, or the start of a desired state.

    With --node (or --url) the node's access keys, their settings, verification keys
    and permissions (by path); with --local (the default) the local users, passwords as
    hashes only. Secrets are never written. See docs/declare.md.

    \b
      nodecli export --local > users.yaml
      nodecli export --node prod --local -o json > prod.json
      nodecli export --from-csv users.csv > users.yaml
    """
    from nodecli.declare import document as doc_mod
    from nodecli.declare import export as ex

    conn = pop_node_options(kwargs)
    if from_csv is not None:
        if local or _node_wanted(conn):
            raise UsageError("--from-csv makes a document from the csv alone: not with "
                             "--local or a node")
        from nodecli.fsutil import read_limited

        data = doc_mod.from_csv(read_limited(from_csv, doc_mod.MAX_DOCUMENT_BYTES,
                                             "csv file"), from_csv)
        app.term.data(doc_mod.dump(data, output_format), end="")
        return
    with_node = _node_wanted(conn)
    local_part = ex.local_sections(app.store.load()) if local or not with_node else None
    keys = None
    if with_node:
        from nodecli.cli.remote import open_node_client

        with open_node_client(app, conn) as client:
            secrets = _secrets(app, client, ".")
            keys = ex.node_section(client, secrets, _opener(app), app.term.warn)
    app.term.data(doc_mod.dump(ex.document(local_part, keys), output_format), end="")


# -- diff ----------------------------------------------------------------------------------


def _changes_text(fields: dict[str, tuple[Any, Any]]) -> str:
    import json

    def shown(v: Any) -> str:
        return "-" if v is None else json.dumps(v, ensure_ascii=False, separators=(",", ":"))

    return "; ".join(f"{k}: {shown(b)} -> {shown(a)}" for k, (b, a) in fields.items())


def _plan_for(app: App, doc: Any, conn: dict[str, Any] | None, prune: bool,
              client: Any = None, digest: bool = False) -> tuple[list[Any], str, Any]:
    """(changes, digest, node label) of the document against the local users and the
    node ``client`` logs in to (None: local only); the digest ("" unless ``digest``:
    only a saved plan needs it, and it serialises the whole document)."""
    from nodecli.declare import plan
    from nodecli.declare.execute import load_record

    cfg = app.store.load()
    changes = plan.local_changes(doc, cfg, load_record(app.paths.state_dir, plan.LOCAL),
                                 prune)
    state = None
    label = None
    if client is not None:
        label = _label(client)
        secrets = _secrets(app, client, doc.base_dir)
        state = plan.read_node(client, doc, secrets, _opener(app))
        # the record of a node is filed by its URL, as its keys' secrets are
        changes += plan.node_changes(doc, state, load_record(app.paths.state_dir,
                                                             client.endpoint.base_url),
                                     prune)
    if not digest:
        return changes, "", label
    return changes, plan.digest(doc, plan.local_digest_data(doc, cfg), state, prune), label


def _render(app: App, changes: list[Any], output_format: str, empty: str) -> None:
    rows = [c.row() for c in changes]
    if output_format != "json":
        rows = [{**r, "changes": _changes_text(c.fields)} for r, c in zip(rows, changes,
                                                                         strict=True)]
    app.term.table(rows, DIFF_COLUMNS, output_format, empty=empty)


@click.command("diff", context_settings=CONTEXT)
@click.option("-f", "--file", "file", required=True, metavar="FILE",
              type=InputFile("document", allow_dash=True), help="The document ('-': stdin).")
@click.option("--prune", is_flag=True,
              help="Also show what apply --prune would remove (objects nodecli created or "
                   "adopted, no longer in the document) and what is there unmanaged.")
@fleet_options
@node_options
@output_option(("table", "json"), shaping=False)
@pass_app
def diff_cmd(app: App, file: str, prune: bool, output_format: str, **kwargs: Any) -> None:
    """What apply would change, object by object. Exit 0: nothing; 1: something would
    change; 2 and above: an error (as kubectl diff; other commands exit 1 on an error).

    Over many nodes (--nodes GLOB, --all-nodes) it is drift detection: one row per node
    and object, the exit status the worst.

    \b
      nodecli diff -f prod.yaml --node prod
      nodecli diff -f prod.yaml --nodes 'edge-*' -o json
    """
    from nodecli.cli.remote import open_node_client

    conn = pop_node_options(kwargs)
    try:
        doc = _read_document(app, file)
        names = fleet_names(app, conn, kwargs)
        changes: list[Any] = []
        status = 0
        if names is None:
            if doc.access_keys is not None or _node_wanted(conn):
                with open_node_client(app, conn) as client:
                    changes = _plan_for(app, doc, conn, prune, client)[0]
            else:
                changes = _plan_for(app, doc, None, prune)[0]
        else:
            from nodecli.declare.plan import LOCAL

            changes = _plan_for(app, doc, None, prune)[0]
            for name in names:
                try:
                    with open_node_client(app, dict(conn, node=name)) as client:
                        found = _plan_for(app, doc, conn, prune, client)[0]
                    changes += [c for c in found if c.scope != LOCAL]
                except NodecliError as exc:
                    app.term.error(f"{name}: {exc.message}", exc.hint)
                    status = max(status, max(int(exc.exit_code), 2))
    except NodecliError as exc:
        if int(exc.exit_code) < 2:
            raise DiffError(exc.message, hint=exc.hint) from None
        raise
    _render(app, changes, output_format, empty="no changes")
    if status or changes:
        raise click.exceptions.Exit(status or 1)


# -- apply ---------------------------------------------------------------------------------


PLAN_FORMAT = "nodecli-plan"
# a saved plan holds its whole document (at most 64 MiB) and every change
MAX_PLAN_BYTES = 256 * 1024 * 1024


def _load_plan(path: str) -> dict[str, Any]:
    import json

    from nodecli.errors import ConfigError
    from nodecli.fsutil import read_limited

    try:
        data = json.loads(read_limited(path, MAX_PLAN_BYTES, "plan"))
    except ValueError as exc:
        raise ConfigError(f"{path}: not a plan: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != PLAN_FORMAT or \
            data.get("version") != 1 or not isinstance(data.get("document"), dict):
        raise ConfigError(f"{path}: not a nodecli plan (format {PLAN_FORMAT}, version 1)")
    return data


@click.command("apply", context_settings=CONTEXT)
@click.option("-f", "--file", "file", metavar="FILE", type=InputFile("document"),
              help="The document.")
@click.option("--prune", is_flag=True,
              help="Remove what nodecli created or adopted and the document no longer "
                   "holds (never anything else).")
@click.option("-y", "--yes", is_flag=True, help="Do not ask before removing.")
@click.option("--save-plan", "save_plan", metavar="PLAN", type=UserPath(dir_okay=False),
              help="Write the plan (with a digest of what was read) and change nothing.")
@click.option("--plan", "plan_file", metavar="PLAN", type=InputFile("plan"),
              help="Carry out a saved plan; refused when what it read has changed since.")
@node_options
@pass_app
def apply_cmd(app: App, file: str | None, prune: bool, yes: bool, save_plan: str | None,
              plan_file: str | None, **kwargs: Any) -> None:
    """Make the local users and the node hold what the document says.

    In a safe order (transfer users before node users, keys before their permissions,
    removals last), asking before removing anything on a terminal. A failure stops,
    says what was done and what not; run it again to finish (every step is
    idempotent). --dry-run prints the requests and the config diff.

    \b
      nodecli apply -f prod.yaml --node prod
      nodecli apply -f prod.yaml --node prod --prune --yes
      nodecli apply -f prod.yaml --node prod --save-plan prod.plan
      nodecli apply --plan prod.plan --node prod
    """
    from nodecli.cli.remote import open_node_client
    from nodecli.declare import execute
    from nodecli.declare.document import from_data

    conn = pop_node_options(kwargs)
    saved = None
    if (file is None) == (plan_file is None):
        raise UsageError("give -f FILE or --plan PLAN (one of the two)")
    if plan_file is not None:
        if save_plan is not None:
            raise UsageError("--plan carries out a saved plan: not with --save-plan")
        saved = _load_plan(plan_file)
        doc = from_data(saved["document"], plan_file)
        doc.base_dir = str(saved.get("base_dir") or ".")
        prune = bool(saved.get("prune"))
        if saved.get("node") and not _node_wanted(conn):
            conn = dict(conn, node=saved["node"])
    else:
        doc = _read_document(app, file or "")
    client = None
    if doc.access_keys is not None or _node_wanted(conn):
        client = open_node_client(app, conn)
    try:
        changes, digest, label = _plan_for(app, doc, conn, prune, client,
                                           digest=saved is not None or save_plan is not None)
        if saved is not None and (saved.get("digest") != digest or
                                  (saved.get("node") or None) != label):
            from nodecli.errors import ConflictError

            raise ConflictError(f"{plan_file}: the plan is stale: what it was made from "
                                "has changed since (the document's objects on "
                                f"{label or 'this machine'})",
                                hint="make a new plan: nodecli apply -f FILE --save-plan PLAN")
        acting = [c for c in changes if c.acts]
        if save_plan is not None:
            _write_plan(app, save_plan, doc, prune, digest, label, changes)
            return
        from nodecli import dryrun

        if dryrun.active():
            _dry_run(app, doc, changes)
        if not acting:
            if changes:  # (rows that change nothing: shown, without a second line below)
                _render(app, changes, "table", empty="nothing to change")
            app.term.success("nothing to change")
            return
        removals = [c for c in acting if c.action == "remove"]
        if removals and not confirm(
                app, f"Remove {len(removals)} object(s): "
                     f"{', '.join(execute.step_name(c) for c in removals[:5])}"
                     f"{' ...' if len(removals) > 5 else ''}?", yes=yes):
            raise Aborted("aborted: nothing changed")
        _carry_out(app, doc, changes, client, label)
    finally:
        if client is not None:
            client.close()


def _write_plan(app: App, path: str, doc: Any, prune: bool, digest: str,
                label: str | None, changes: list[Any]) -> None:
    import json

    from nodecli.fsutil import atomic_write

    data = {"format": PLAN_FORMAT, "version": 1, "node": label, "prune": prune,
            "digest": digest, "base_dir": doc.base_dir, "document": doc.to_dict(),
            "changes": [c.row() for c in changes]}
    atomic_write(path, (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode())
    _render(app, changes, "table", empty="nothing to change")
    app.term.success(f"plan saved to {path} ({sum(c.acts for c in changes)} change(s)); "
                     f"carry it out with: nodecli apply --plan {path}")


def _dry_run(app: App, doc: Any, changes: list[Any]) -> None:
    import json

    from nodecli import dryrun
    from nodecli.declare import execute, plan

    lines = []
    for c in execute.node_steps(changes):
        method, path, body = execute.requests_of(c)
        lines.append(f"would send: {method} {path}")
        if body is not None:
            lines.append(json.dumps(dryrun.redacted(body), indent=2, ensure_ascii=False))
    local = [c for c in changes if c.scope == plan.LOCAL and c.acts]
    if local:
        from nodecli.config.store import toml_bytes

        cfg = app.store.load()
        before = toml_bytes(cfg.to_dict()) if app.store.exists() else None
        plan.apply_local(doc, cfg, changes, removals=False)
        plan.apply_local(doc, cfg, changes, removals=True)
        lines.append(dryrun.config_change(app.store.path, before,
                                          toml_bytes(cfg.to_dict())).message)
    if not lines:
        lines.append("nothing to change")
    lines.append("nothing was sent or written (--dry-run)")
    raise dryrun.DryRunStop("\n".join(lines))


def _local_steps_name(changes: list[Any]) -> str:
    """The name of one step that makes several local changes (one edit of the config):
    the first three, and how many more."""
    from nodecli.declare import execute

    more = f" (and {len(changes) - 3} more local)" if len(changes) > 3 else ""
    return ", ".join(execute.step_name(c) for c in changes[:3]) + more


def _carry_out(app: App, doc: Any, changes: list[Any], client: Any,
               label: str | None) -> None:
    from nodecli.declare import execute, plan

    state_dir = app.paths.state_dir
    # (the scope of its changes, where its record is filed)
    labels = [(plan.LOCAL, plan.LOCAL)] + ([(label, client.endpoint.base_url)]
                                           if label else [])
    steps: list[Any] = []
    names: list[str] = []
    local = [c for c in changes if c.scope == plan.LOCAL and c.acts]
    adds = [c for c in local if c.action != "remove"]
    local_removals = [c for c in local if c.action == "remove"]

    def edit(removals: bool) -> Any:
        def step() -> None:
            with app.store.edit() as cfg:
                plan.apply_local(doc, cfg, changes, removals=removals)
        return step

    if adds:
        steps.append(edit(False))
        names.append(_local_steps_name(adds))
    runner = None
    node_steps = execute.node_steps(changes)
    if node_steps:
        runner = execute.NodeRunner(client, _secrets(app, client, doc.base_dir),
                                    _opener(app), lambda ak, secret: app.term.data(
                                        f"access key {ak}: new secret {secret} (stored; "
                                        "shown this once)"))
        for c in node_steps:
            steps.append(lambda c=c: runner.run(c, doc))
            names.append(execute.step_name(c))
    if local_removals:
        steps.append(edit(True))
        names.append(_local_steps_name(local_removals))

    def report(done: list[str], left: list[str]) -> None:
        app.term.error(f"apply stopped: {len(done)} step(s) done, {len(left)} not done "
                       "(the first of them failed); run it again to finish")
        for n in done:
            app.term.info(f"  done: {n}")
        for n in left:
            app.term.info(f"  not done: {n}")

    with execute.record_lock(state_dir, [where for _, where in labels]):
        records = {where: execute.load_record(state_dir, where) for _, where in labels}
        for scope, where in labels:
            records[where] |= execute.document_objects(doc, scope)
            execute.save_record(state_dir, where, records[where])
        try:
            execute.run_steps(steps, names, report)
        finally:
            if runner is not None:
                runner.close()
        for scope, where in labels:
            removed = execute.removed_objects([c for c in changes if c.scope == scope])
            if removed:
                execute.save_record(state_dir, where, execute.forget(records[where],
                                                                     removed))
    _render(app, [c for c in changes if c.acts], "table", empty="nothing to change")
    app.term.success(f"applied {sum(c.acts for c in changes)} change(s)")
