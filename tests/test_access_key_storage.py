"""Access keys on object storage and sub-keys, over HTTPS against the emulator.

Each storage type with its required fields missing one at a time; secrets never on
argv, never echoed (show, -v/-vv, --dry-run); the transfer user's restriction at its
edges; sub-key paths exactly the parent's, inside and outside; the tree.
"""

from __future__ import annotations

import json

import pytest

ADMIN = {"NODECLI_USER": "admin", "NODECLI_PASSWORD": "admin-pass"}
SECRET = "S3cr3t-Value-0123456789abcdef"

# type -> (options, the secret's wire field)
TYPES = {
    "aws_s3": (["--bucket", "b1", "--access-key-id", "AKIA0001"], "secret_access_key"),
    "ibm-s3": (["--bucket", "b1", "--endpoint", "s3.eu.cloud-object-storage.appdomain.cloud",
                "--access-key-id", "HMAC0001"], "secret_access_key"),
    "azure": (["--container", "c1", "--account", "acct1"], "key"),
    "azure_sas": ([], "shared_access_signature"),
    "swift": (["--container", "c1", "--username", "ten:usr"], "api_key"),
}


@pytest.fixture
def node(emulator, monkeypatch):
    """The emulator with node user admin whose transfer user (in the emulator's home)
    is restricted to file:////data/* and every object store."""
    emulator.add_node_user("admin", "admin-pass", xuser="xstore",
                           restrictions=("file:////data/*", "s3://*", "azu://*",
                                         "swift://*"))
    monkeypatch.setenv("NODECLI_URL", emulator.url)
    monkeypatch.setenv("STORE_SECRET", SECRET)
    yield emulator
    emulator.add_node_user("admin", "admin-pass", acls=("admin",))


def _create(invoke, *args, input=None, env=None):
    return invoke("access-key", "create", *args, input=input, env={**ADMIN, **(env or {})})


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_each_type_is_created_and_shown_masked(node, invoke, kind):
    opts, field = TYPES[kind]
    secret_args = ["--storage-secret", "env:STORE_SECRET"]
    r = _create(invoke, "--storage", kind, *opts, "--path", "/in", "--id", f"k-{kind}",
                *secret_args, "-o", "json")
    assert r.exit_code == 0, r
    assert SECRET not in r.stdout + r.stderr
    stored = node.state.access_keys[f"k-{kind}"].storage
    assert stored["credentials"][field] == SECRET
    r = invoke("access-key", "show", f"k-{kind}", "-o", "json", env=ADMIN)
    assert r.exit_code == 0, r
    assert SECRET not in r.stdout + r.stderr
    shown = json.loads(r.stdout)
    assert shown["storage"]["credentials"][field] == "********"
    r = invoke("access-key", "show", f"k-{kind}", env=ADMIN)
    assert r.exit_code == 0 and SECRET not in r.stdout + r.stderr, r
