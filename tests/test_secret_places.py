"""A profile records where its secrets went (``secrets = "file" | "keyring" | "none"`` in
config.toml): later reads open only that place, so the keyring package (slow to import)
is loaded only for a profile whose secret is kept there. NODECLI_SECRETS_BACKEND still
wins, and a profile saved before the record existed is searched everywhere (the file
first: a copy there is the newer one)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from nodecli.config.model import NodeProfile
from nodecli.config.paths import resolve_paths
from nodecli.config.secrets import FileBackend, find_secret, keyring_service
from nodecli.config.store import ConfigStore
from tests.conftest import REPO_ROOT, subprocess_env
from tests.test_secrets import memory_keyring  # noqa: F401 - the fixture

PW = "admin-pass\n"


def _recorded(home, kind: str, name: str) -> str | None:
    return tomllib.loads((home / "config.toml").read_text())[kind][name].get("secrets")


def test_each_profile_records_the_place_of_its_secrets(invoke, home, memory_keyring,  # noqa: F811
                                                       monkeypatch, tmp_path):
    assert invoke("node", "add", "kr", "--url", "https://n:9092", "--user", "u",
                  "--password-stdin", "--no-check", input="pw-kr\n").exit_code == 0
    assert _recorded(home, "nodes", "kr") == "keyring"
    token = tmp_path / "tok"
    token.write_text("bearer\n")
    assert invoke("node", "add", "bearer", "--url", "https://n:9092", "--access-key", "ak",
                  "--bearer-file", str(token), "--no-check").exit_code == 0
    assert _recorded(home, "nodes", "bearer") == "none"
    monkeypatch.setenv("NODECLI_SECRETS_BACKEND", "file")
    assert invoke("node", "add", "f", "--url", "https://n:9092", "--user", "u",
                  "--password-stdin", "--no-check", input="pw-f\n").exit_code == 0
    assert _recorded(home, "nodes", "f") == "file"
    assert invoke("service", "add", "s", "--url", "https://svc.example",
                  "--token-stdin", input="opaque-token\n").exit_code == 0
    assert _recorded(home, "services", "s") == "file"
    monkeypatch.delenv("NODECLI_SECRETS_BACKEND")
    shown = json.loads(invoke("service", "show", "s", "-o", "json").stdout)
    assert shown["token"] == "stored"
    # a removed profile's secret is gone from where it was
    assert invoke("node", "remove", "kr").exit_code == 0
    assert memory_keyring.items == {}


def test_the_record_decides_where_a_secret_is_looked_for(home, memory_keyring):  # noqa: F811
    paths = resolve_paths(home)
    FileBackend(paths).set("node:a", "in-file")
    memory_keyring.items[(keyring_service(paths), "node:a")] = "in-keyring"
    assert find_secret(paths, "node:a", "file")[0] == "in-file"
    assert find_secret(paths, "node:a", "keyring")[0] == "in-keyring"
    assert find_secret(paths, "node:a", "none") == (None, None)
    # not recorded (an older profile): the file first, whose copy is the newer one (it is
    # written there only when the keyring failed)
    value, backend = find_secret(paths, "node:a", None)
    assert (value, backend.name if backend else None) == ("in-file", "file")
    FileBackend(paths).delete("node:a")
    assert find_secret(paths, "node:a", None)[0] == "in-keyring"
    # recorded in the keyring, but the keyring fails now: the file may still hold it
    memory_keyring.broken = True
    FileBackend(paths).set("node:a", "fallback")
    assert find_secret(paths, "node:a", "keyring")[0] == "fallback"


def test_the_environment_wins_over_the_record(home, memory_keyring, monkeypatch):  # noqa: F811
    paths = resolve_paths(home)
    memory_keyring.items[(keyring_service(paths), "node:a")] = "in-keyring"
    monkeypatch.setenv("NODECLI_SECRETS_BACKEND", "keyring")
    assert find_secret(paths, "node:a", "file")[0] == "in-keyring"
    assert find_secret(paths, "node:a", "none")[0] == "in-keyring"


@pytest.mark.parametrize("place", ["file", None])
def test_a_remote_command_with_a_file_secret_never_imports_keyring(emulator, home, place):
    """`node info` with the password in the 0600 file (recorded, or an older profile
    with no record): the keyring package is not even imported."""
    paths = resolve_paths(home)
    with ConfigStore(paths).edit() as cfg:
        cfg.nodes["emu"] = NodeProfile("emu", emulator.url, user="admin", secrets=place)
        cfg.default_node = "emu"
    FileBackend(paths).set("node:emu", "admin-pass")
    code = (
        "import sys, io\n"
        "from nodecli.cli.main import run\n"
        "real, sys.stdout = sys.stdout, io.StringIO()\n"
        "rc = run(['node', 'info', '-o', 'json'])\n"
        "out, sys.stdout = sys.stdout.getvalue(), real\n"
        "print(rc, 'keyring' in sys.modules)\n"
        "print(out)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=subprocess_env(),
                          capture_output=True, text=True, timeout=120, cwd=str(REPO_ROOT))
    first, _, rest = proc.stdout.partition("\n")
    assert first == "0 False", proc.stdout + proc.stderr
    assert json.loads(rest)["application"]


def test_node_set_records_where_a_new_secret_went(invoke, home):
    assert invoke("node", "add", "p", "--url", "https://n:9092", "--user", "u").exit_code == 0
    assert _recorded(home, "nodes", "p") == "none"
    r = invoke("node", "set", "p", "--password-stdin", "--no-check", input="pw\n")
    assert r.exit_code == 0, r.stderr
    assert _recorded(home, "nodes", "p") == "file"
    assert invoke("node", "set", "p", "--cacert", "", "--no-check").exit_code == 0
    assert _recorded(home, "nodes", "p") == "file"  # other fields keep the record
    assert find_secret(resolve_paths(home), "node:p", "file")[0] == "pw"
