"""A command imports what it uses: each command family runs in a fresh interpreter and
the modules it must not load are not in ``sys.modules`` afterwards (docs/development.md,
"Benchmarks": the start-up diet). The command must also succeed, so a family that
stopped early cannot pass by importing nothing.

* the fleet code (``cli.fleet``, ``node.fleet``) only with ``--nodes``/``--all-nodes``
  (``node health`` excepted for ``node.fleet``: its ``--node-timeout`` is
  ``ask_each``'s, one node or many);
* difflib only for a "did you mean" suggestion. click's own parser imports it for every
  SHORT option (it tries ``-u`` as a long option first and builds a NoSuchOption with
  suggestions), so the commands here are written with long options;
* rich only for a colour terminal; the keyring only where the profile's secret is kept;
* local commands: no HTTP stack (httpx2, ssl), no cryptography but for signing.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from nodecli.config.model import NodeProfile, NodeUser, TransferUser
from nodecli.config.paths import resolve_paths
from nodecli.config.secrets import FileBackend
from nodecli.config.store import ConfigStore
from tests.conftest import REPO_ROOT, subprocess_env

PASSWORD = "pw-0123456789"

# Runs one command in this fresh interpreter, then prints its exit status and every
# module it loaded (the command's output is kept out of the way).
PROBE = (
    "import io, json, sys\n"
    "from nodecli.cli.main import run\n"
    "real, sys.stdout = sys.stdout, io.StringIO()\n"
    "rc = run(sys.argv[1:])\n"
    "sys.stdout = real\n"
    "print(json.dumps([rc, sorted(sys.modules)]))\n"
)

EVERYWHERE = ("rich", "keyring", "difflib", "nodecli.emulator")
LOCAL = (*EVERYWHERE, "httpx2", "httpcore2", "ssl", "nodecli.http", "nodecli.cli.fleet",
         "nodecli.node.fleet")
NO_CRYPTO = (*LOCAL, "cryptography")
ONE_NODE = (*EVERYWHERE, "nodecli.cli.fleet", "nodecli.node.fleet")

FAMILIES = {
    "user list": (["user", "list"], None, NO_CRYPTO),
    "user add": (["user", "add", "newuser", "--xuser", "xfer", "--password-stdin"],
                 PASSWORD + "\n", NO_CRYPTO),
    "config": (["config", "check"], None, NO_CRYPTO),
    "token create": (["token", "create", "--user", "alice", "--access-key", "AK1",
                      "--user-id", "bob", "--key-file-path", "{key}"], None, LOCAL),
    "token inspect": (["token", "inspect", "{token}"], None, NO_CRYPTO),
    "completion": (["completion", "bash"], None, NO_CRYPTO),
    "node info": (["node", "info", "--output", "json"], None, ONE_NODE),
    "node health": (["node", "health", "--node", "emu", "--output", "json"], None,
                    (*EVERYWHERE, "nodecli.cli.fleet")),
    "events list": (["events", "list", "--count", "10", "--output", "json"], None, ONE_NODE),
    "transfer list": (["transfer", "list", "--output", "json"], None, ONE_NODE),
    "access-key list": (["access-key", "list", "--output", "json"], None, ONE_NODE),
    "events stats": (["events", "stats", "--output", "json"], None, ONE_NODE),
}


def _modules(argv: list[str], stdin: str | None, env: dict[str, str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], input=stdin, env=env,
                          capture_output=True, text=True, timeout=120, cwd=str(REPO_ROOT))
    assert proc.returncode == 0, proc.stderr
    rc, modules = json.loads(proc.stdout.splitlines()[-1])
    # node health: exit 1 is a health state (not OK), not a failure
    assert rc == 0 or (rc == 1 and argv[:2] == ["node", "health"]), proc.stderr
    return modules


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_command_loads_only_what_it_uses(family, emulator, home, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.tokens.wire import encode_token
    from nodecli.users.passwords import hash_password

    argv, stdin, forbidden = FAMILIES[family]
    paths = resolve_paths(home)
    with ConfigStore(paths).edit() as cfg:
        cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
        cfg.users["alice"] = NodeUser("alice", "xfer", hash_password(PASSWORD, log_n=4),
                                      ["admin"])
        # the secret in the 0600 file, as the profile records
        cfg.nodes["emu"] = NodeProfile("emu", emulator.url, user="admin", secrets="file")
        cfg.default_node = "emu"
    FileBackend(paths).set("node:emu", "admin-pass")
    key = tmp_path / "private.pem"
    if "{key}" in argv:
        pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption())
        key.write_bytes(pem)
        key.chmod(0o600)
    token = encode_token(b'{"user_id":"bob","scope":"node.AK1:admin:all"}', b"s" * 256)
    env = subprocess_env({"NODECLI_PASSWORD": PASSWORD} if family == "token create" else {})
    argv = [a.replace("{key}", str(key)).replace("{token}", token) for a in argv]
    loaded = set(_modules(argv, stdin, env))
    assert "nodecli.cli.root" in loaded  # the probe ran the command tree
    unwanted = sorted(m for m in loaded if m.split(".")[0] in forbidden or any(
        m == f or m.startswith(f + ".") for f in forbidden))
    assert unwanted == [], f"{family} loaded {unwanted}"


def test_a_cached_config_is_not_parsed_again_for_its_restrictions(home):
    """The parse cache holds only what validated: a command reading it does not load the
    restriction parser (as it does not check each password hash again)."""
    from nodecli.users.passwords import hash_password

    with ConfigStore(resolve_paths(home)).edit() as cfg:
        cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
        cfg.users["alice"] = NodeUser("alice", "xfer", hash_password(PASSWORD, log_n=4), [])
    (home / "state" / "config.cache").unlink()  # (the save cached what it wrote)
    env = subprocess_env()
    first = _modules(["user", "list"], None, env)  # parses config.toml, fills the cache
    assert "nodecli.users.restrictions" in first
    assert "nodecli.users.restrictions" not in _modules(["user", "list"], None, env)
