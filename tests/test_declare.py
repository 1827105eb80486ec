"""export, diff and apply -f against the emulator over HTTPS (docs/declare.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DOC = """\
version: 1
transfer_users:
  aspera: {restrictions: ["file:////data/*"]}
node_users:
  usr1: {transfer_user: aspera, acls: [admin]}
access_keys:
  ak1:
    storage: {type: local, path: /data}
    configuration: {activity_event_logging: true}
    permissions:
      - {path: /projects/alpha, user: alice, levels: [list, read]}
      - {path: /projects, group: eng, levels: [list]}
"""


@pytest.fixture
def node(emulator, invoke):
    """Profile ``emu`` (the default) for the emulator as its admin; folders to grant on."""
    from nodecli.emulator.storage import storage_of

    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r
    st = storage_of(emulator.state)
    st.ensure("/data/projects/alpha/a.txt", "file")
    st.ensure("/data/projects/beta", "folder")
    return emulator


def write(tmp_path: Path, text: str, name: str = "doc.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_apply_then_diff_is_clean(node, invoke, tmp_path):
    f = write(tmp_path, DOC)
    r = invoke("diff", "-f", f, "--node", "emu", "-o", "json")
    assert r.exit_code == 1, r
    rows = json.loads(r.stdout)
    assert [(x["kind"], x["action"]) for x in rows] == [
        ("transfer_user", "add"), ("node_user", "add"), ("access_key", "add"),
        ("permission", "add"), ("permission", "add")]
    r = invoke("apply", "-f", f, "--node", "emu")
    assert r.exit_code == 0, r
    assert "access key ak1: new secret" in r.stdout
    r = invoke("diff", "-f", f, "--node", "emu")
    assert r.exit_code == 0, r
