"""One world every command of the tree can run in, and how to run each one in it.

The convention tests walk the click tree (:data:`LEAVES`) and run each command as
:data:`RUNS` says, so that a command added tomorrow without an entry here fails
``test_every_command_has_a_run`` until someone says how to run it: it is then covered by
every convention at once.

An argument may hold ``{n}`` (a number new at each invocation, for commands that create
something with a name of their own), ``{tmp}`` (the test's temporary folder), ``{tid}``
(a running transfer), ``{done}`` (an ended transfer), ``{perm}`` (a permission),
``{token}`` (a bearer token for access key ``ak1``), ``{pem}`` (its public key) or
``{stopped}`` (an operation of workspace 100 stopped on a conflict, new each time).
"""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pytest

from tests.conftest import cli_context


def leaves() -> list[tuple[tuple[str, ...], click.Command]]:
    from nodecli.cli.root import cli

    found: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(cmd: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        ctx = cli_context(cmd, path[-1] if path else "nodecli", parent)
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, (*path, name), ctx)
        else:
            found.append((path, cmd))

    walk(cli, (), None)
    return found


LEAVES = leaves()


def options_of(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params for o in getattr(p, "opts", [])}


def formats_of(cmd: click.Command) -> tuple[str, ...]:
    for p in cmd.params:
        if "-o" in getattr(p, "opts", []) and hasattr(p.type, "choices"):
            return tuple(p.type.choices)
    return ()


@dataclass(frozen=True)
class Run:
    """How one command runs in the world: its arguments, who it runs as (``node``:
    the node's admin over Basic, ``ak``: access key ak1, ``bearer``: an admin token of
    ak1, ``service``: the service profile, ``local``: no node), and stdin."""

    args: tuple[str, ...]
    who: str = "local"
    stdin: str | None = None
    # what the command changes when it runs for real (``node``, ``config``, ``files``,
    # ``server``: it starts one, ``nothing``): dry-run must then show and not do it
    changes: str = "nothing"
    notes: dict[str, Any] = field(default_factory=dict)


RUNS: dict[str, Run] = {
    "access-key create": Run(("--path", "/data", "--id", "AK{n}", "--secret-stdin"), "node",
                             "s3cret-value\n", "node"),
    "access-key delete": Run(("ak1", "--yes"), "node", changes="node"),
    "access-key list": Run((), "node"),
    "access-key set": Run(("ak1", "--path", "/data/x"), "node", changes="node"),
    "access-key set-verification-key": Run(("ak1", "--public-key", "{pem}"), "node",
                                           changes="node"),
    "access-key show": Run(("ak1",), "node"),
    "access-key tree": Run((), "node"),
    "access can-i": Run(("list", "/projects", "--user-id", "bob"), "ak"),
    "access what-can": Run(("--user-id", "bob"), "ak"),
    "access who-can": Run(("/projects",), "ak"),
    "api": Run(("/info",), "node"),
    "apply": Run(("-f", "{tmp}/declare.yaml", "--yes"), "node", changes="node"),
    "diff": Run(("-f", "{tmp}/declare-same.yaml"), "node"),
    "export": Run((), "node"),
    "completion": Run(("bash",)),
    "config check": Run(()),
    "config export": Run(("{tmp}/export-{n}.json",), changes="files"),
    "config import": Run(("{tmp}/import.json", "--yes"), changes="config"),
    "config output": Run(("yaml",), changes="config"),
    "config path": Run(()),
    "config restore": Run((), changes="config"),
    "emulator serve": Run(("--port", "0"), changes="server"),
    "emulator collector": Run(("--port", "0"), changes="server"),
    "events get": Run(("1",), "node"),
    "events list": Run((), "node"),
    "events ship": Run(("--since", "1h", "--to", "file:{tmp}/ship-{n}.jsonl"), "node",
                       changes="files"),
    "events stats": Run((), "node"),
    "events tail": Run(("--since", "1h", "--to", "{tmp}/tail-{n}.jsonl"), "node",
                       changes="files"),
    "exporter": Run(("--listen", "127.0.0.1:0"), changes="server"),
    "help": Run(("user", "list")),
    "key fingerprint": Run(("{tmp}/keys/kp/public.pem",)),
    "key generate": Run(("{tmp}/keys/new{n}/", "--bits", "1024"), changes="files"),
    "key public": Run(("{tmp}/keys/kp/private.pem",)),
    "node add": Run(("n{n}", "--url", "https://n2.example:9092", "--user", "a",
                     "--no-secret"), changes="config"),
    "node default": Run(("spare-node",), changes="config"),
    "node health": Run((), "node"),
    "node info": Run((), "node"),
    "node list": Run(()),
    "node remove": Run(("emu",), changes="config"),
    "node set": Run(("spare-node", "--access-key-header", "X-Node-Key"), changes="config"),
    "node show": Run(("emu",)),
    "node thresholds": Run(("emu",)),
    "files du": Run(("/projects",), "ak"),
    "files find": Run(("/projects", "--name", "*.txt"), "ak"),
    "files ls": Run(("/projects",), "ak"),
    "files tree": Run(("/projects",), "ak"),
    "operations list": Run(("--workspace", "100"), "service"),
    "operations resolve": Run(("1", "--workspace", "100", "--retry", "--yes", "--interval",
                               "0.05"), "service",
                              changes="node"),
    "operations show": Run(("2", "--workspace", "100"), "service"),
    "operations update": Run(("{stopped}", "--workspace", "100", "--set", "retry=true"),
                             "service",
                             changes="node"),
    "operations watch": Run(("2", "--workspace", "100"), "service"),
    "permission grant": Run(("/projects", "--user", "alice", "--levels", "list,read"),
                            "bearer", changes="node"),
    "permission list": Run(("/projects",), "ak"),
    "permission modify": Run(("/projects", "--user", "bob", "--levels", "list,read"), "ak",
                             changes="node"),
    "permission revoke": Run(("{perm}", "--yes"), "ak", changes="node"),
    "permission show": Run(("{perm}",), "ak"),
    "service add": Run(("s{n}", "--url", "https://svc.example", "--token-stdin"),
                       stdin="tok-secret-value\n", changes="config"),
    "service default": Run(("spare-service",), changes="config"),
    "service list": Run(()),
    "service remove": Run(("corp", "--yes"), changes="config"),
    "service show": Run(("corp",)),
    "token create": Run(("-u", "usr1", "--access-key", "ak1", "--user-id", "u42",
                         "--key-file-path", "{tmp}/keys/kp/private.pem",
                         "--password-stdin"), stdin="pw1\n"),
    "token inspect": Run(("{token}",)),
    "token verify": Run(("{token}", "--public-key", "{pem}")),
    "transfer cancel": Run(("{tid}", "--yes"), "node", changes="node"),
    "transfer list": Run((), "node"),
    "transfer modify": Run(("{tid}", "--target-rate", "5m"), "node", changes="node"),
    "transfer show": Run(("{tid}",), "node"),
    "transfer start": Run(("--spec", "{tmp}/spec.json"), "bearer", changes="node"),
    "transfer top": Run(("--once",), "node"),
    "transfer watch": Run(("{done}",), "node"),
    "user acl": Run(("usr1",)),
    "user add": Run(("u{n}", "--xuser", "aspera", "--password-stdin"), stdin="pw\n",
                    changes="config"),
    "user delete": Run(("usr2", "--yes"), changes="config"),
    "user list": Run(()),
    "user passwd": Run(("usr1", "--password-stdin"), stdin="new-pw\n", changes="config"),
    "user show": Run(("usr2",)),
    "workspaces create": Run(("--name", "ws{n}"), "service", changes="node"),
    "xuser add": Run(("x{n}", "-r", "file:////data/*"), changes="config"),
    "xuser delete": Run(("spare", "--yes"), changes="config"),
    "xuser list": Run(()),
    "xuser set": Run(("aspera", "-r", "s3://bucket/*"), changes="config"),
    "xuser show": Run(("spare",)),
}


@functools.cache
@functools.cache
def _rsa_key() -> Any:
    """ak1's signing key: one for the session (a world is built for every test, and a
    2048-bit key costs more than the rest of it; no test depends on its value)."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class World:
    """The emulator with users, profiles, access keys, events, transfers, operations
    and a permission; a home with users, transfer users, node and service profiles and
    a key pair. :meth:`argv` and :meth:`env` make a command of :data:`RUNS` runnable."""

    def __init__(self, invoke: Any, emulator: Any, home: Path, tmp: Path) -> None:
        from cryptography.hazmat.primitives import serialization

        from nodecli.emulator.events import log_for
        from nodecli.emulator.operations import add_operation, mint_service_token
        from nodecli.emulator.storage import storage_of
        from nodecli.emulator.transfers import book_of
        from nodecli.tokens.wire import create_token

        self.invoke, self.emulator, self.home, self.tmp = invoke, emulator, home, tmp
        self._n = itertools.count(1)
        ok = self._ok
        ok("xuser", "add", "aspera", "-r", "file:////data/*")
        ok("xuser", "add", "spare", "--docroot", "/srv")
        # node users with cheap hashes (the default cost, per test, adds up over the tree)
        from nodecli.config.model import NodeUser
        from nodecli.config.paths import resolve_paths
        from nodecli.config.store import ConfigStore
        from nodecli.users.passwords import hash_password

        with ConfigStore(resolve_paths(home)).edit() as cfg:
            cfg.users["usr1"] = NodeUser("usr1", "aspera", hash_password("pw1", log_n=4),
                                         ["admin"])
            cfg.users["usr2"] = NodeUser("usr2", "aspera", hash_password("pw2", log_n=4), [])
        ok("node", "add", "emu", "--url", emulator.url, "--user", "admin",
           "--password-stdin", input="admin-pass\n")
        self.service_token = mint_service_token(emulator.state, "u1", "user:all")
        ok("service", "add", "corp", "--url", emulator.url, "--token-stdin",
           input=self.service_token + "\n")
        # profiles that are not the default (the first added is)
        ok("node", "add", "spare-node", "--url", "https://spare.example:9092", "--user",
           "a", "--no-secret")
        ok("service", "add", "spare-service", "--url", "https://spare.example",
           "--token-stdin", input="spare-token\n")
        ok("key", "generate", f"{tmp}/keys/kp/", "--bits", "1024")
        key = _rsa_key()
        self.pem = tmp / "ak1-public.pem"
        self.pem.write_bytes(key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        emulator.add_access_key("ak1", "ak1-secret")
        emulator.state.access_keys["ak1"].token_verification_key = self.pem.read_text()
        emulator.state.access_keys["ak1"].storage = {"type": "local", "path": "/data"}
        self.token = create_token(key, "ak1", "ops", None, role="admin")
        log_for(emulator.state).generate(3, families=["file", "transfer"])
        add_operation(emulator.state, parent_id="100", status="stopped")
        add_operation(emulator.state, parent_id="100", status="success")
        storage = storage_of(emulator.state)
        storage.ensure("/data/projects/alpha/a.txt", "file")
        book = book_of(emulator.state)
        book.seconds = 3600
        self.tid = book.start("ops", "ak1", {}).id
        ended = book.start("ops", "ak1", {"remote_host": "archive"})
        ended.start = ended.changed = ended.start - 10 * book.seconds  # long over
        ended.ended_logged = True
        self.done = ended.id
        (tmp / "spec.json").write_text(json.dumps({
            "direction": "receive", "remote_host": "demo",
            "paths": [{"source": "/data/a.txt"}]}))
        r = ok("permission", "grant", "/projects", "--user", "bob", "--levels", "list",
               "-o", "json", env=self.env("bearer"))
        self.perm = json.loads(r.stdout)["id"]
        ok("config", "export", str(tmp / "import.json"))
        # documents of export/diff/apply: one that changes the world, one it matches
        (tmp / "ak1.secret").write_text("ak1-secret\n")
        (tmp / "declare.yaml").write_text(
            "version: 1\ntransfer_users:\n  declared: {docroot: /srv/declared}\n"
            "access_keys:\n  ak1:\n    storage: {type: local, path: /data}\n"
            "    secret: file:ak1.secret\n    permissions:\n"
            "      - {path: /projects, user: bob, levels: [list, read]}\n"
            "  AKdeclared:\n    storage: {type: local, path: /data/projects}\n")
        (tmp / "declare-same.yaml").write_text(
            "version: 1\ntransfer_users:\n  aspera: {restrictions: ['file:////data/*']}\n")
        # a .bak for config restore
        ok("xuser", "set", "spare", "--docroot", "/srv2")

    def _ok(self, *argv: str, input: str | None = None, env: Any = None) -> Any:
        r = self.invoke(*argv, input=input, env=env)
        assert r.exit_code == 0, (argv, r)
        return r

    def env(self, who: str) -> dict[str, str]:
        url = self.emulator.url
        return {
            "node": {"NODECLI_URL": url, "NODECLI_USER": "admin",
                     "NODECLI_PASSWORD": "admin-pass"},
            "ak": {"NODECLI_URL": url, "NODECLI_ACCESS_KEY": "ak1",
                   "NODECLI_PASSWORD": "ak1-secret"},
            "bearer": {"NODECLI_URL": url, "NODECLI_ACCESS_KEY": "ak1",
                       "NODECLI_BEARER": self.token},
            "service": {"NODECLI_SERVICE": "corp"},
            "local": {},
        }[who]

    def argv(self, name: str) -> list[str]:
        run = RUNS[name]
        n = str(next(self._n))
        fill = {"{n}": n, "{tmp}": str(self.tmp), "{tid}": self.tid, "{done}": self.done,
                "{perm}": self.perm, "{token}": self.token, "{pem}": str(self.pem)}
        if "{stopped}" in run.args:
            from nodecli.emulator.operations import add_operation

            fill["{stopped}"] = str(add_operation(self.emulator.state, parent_id="100",
                                                  status="stopped").id)
        out = []
        for arg in run.args:
            for key, value in fill.items():
                arg = arg.replace(key, value)
            out.append(arg)
        return [*name.split(), *out]

    def run(self, name: str, *extra: str, before: tuple[str, ...] = ()) -> Any:
        run = RUNS[name]
        return self.invoke(*before, *self.argv(name), *extra, input=run.stdin,
                           env=self.env(run.who))


@pytest.fixture
def tree_world(invoke, emulator, home, tmp_path) -> World:
    return World(invoke, emulator, home, tmp_path)
