"""--dry-run: every command that changes a node or the local config shows what it
would send or write and changes nothing: the node gets no changing request and no file
of the home changes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from nodecli.emulator.transfers import book_of


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "cache" not in p.name
            and not p.name.startswith(".") and "info-" not in p.name}


def _changing(requests: list[str]) -> list[str]:
    return [r for r in requests if not any(f'"{m} ' in r for m in ("GET", "HEAD"))]


@pytest.fixture
def world(invoke, emulator, node_env, home):
    invoke("xuser", "add", "x", "-r", "file:////data/*")
    invoke("user", "add", "u1", "--xuser", "x", "--password-stdin", input="pw\n")
    r = invoke("access-key", "create", "--path", "/data", "--id", "ak1", "--secret-stdin",
               input="ak-secret\n", env=node_env)
    assert r.exit_code == 0, r.stderr
    book_of(emulator.state).seconds = 3600  # runs through the test on any machine
    return node_env


REMOTE = [
    (("access-key", "create", "--path", "/data", "--id", "ak2", "--secret-stdin"),
     "s3cret-value\n", "would send: POST"),
    (("access-key", "set", "ak1", "--path", "/data/x"), None, "would send: PUT"),
    (("access-key", "delete", "ak1", "--yes"), None, "would send: DELETE"),
    (("api", "-X", "POST", "/access_keys", "-F", "id=ak3", "-F", "secret=s3cret-value"),
     None, "would send: POST"),
    (("transfer", "cancel", "TID", "--yes"), None, "would send: CANCEL"),
    (("transfer", "modify", "TID", "--target-rate", "5m"), None, "would send: PUT"),
]


@pytest.mark.parametrize("argv,stdin,says", REMOTE, ids=lambda v: " ".join(v)
                         if isinstance(v, tuple) else "")
def test_remote_changes_are_shown_not_sent(world, invoke, emulator, home, served, argv, stdin,
                                           says):
    tid = book_of(emulator.state).start("alice", None, {}).id
    argv = tuple(tid if a == "TID" else a for a in argv)
    keys_before = dict(emulator.state.access_keys)
    files_before = _snapshot(home)
    served.clear()
    r = invoke("--dry-run", *argv, env=world, input=stdin)
    assert r.exit_code == 0, r.stderr
    assert says in r.stdout and "nothing was sent (--dry-run)" in r.stdout
    assert "s3cret-value" not in r.stdout + r.stderr  # secrets are shown as ***
    assert _changing(served) == []
    assert emulator.state.access_keys == keys_before
    assert book_of(emulator.state).find(tid).cancelled is None
    assert book_of(emulator.state).find(tid).rate_kbps == 10_000
    assert _snapshot(home) == files_before


LOCAL = [
    (("user", "add", "u2", "--xuser", "x", "--password-stdin"), "pw\n", "+[users.u2]"),
    (("user", "delete", "u1", "--yes"), None, "-[users.u1]"),
    (("user", "passwd", "u1", "--password-stdin"), "new\n", '+password = "*** ('),
    (("xuser", "set", "x", "-r", "s3://bucket/*"), None, "s3://bucket/*"),
    (("node", "add", "n2", "--url", "https://n2:9092", "--user", "a", "--no-secret"), None,
     "+[nodes.n2]"),
    (("-au", "u3", "-x", "x", "-p", "pw3"), None, "+[users.u3]"),
    (("config", "restore"), None, "would change"),
    (("config", "export", "EXPORT"), None, "would write"),
    (("key", "generate", "KEYDIR/", "--bits", "1024"), None, "would write the private key"),
]


@pytest.mark.parametrize("argv,stdin,says", LOCAL, ids=lambda v: " ".join(v)
                         if isinstance(v, tuple) else "")
def test_local_changes_are_shown_as_a_diff_and_not_written(world, invoke, home, tmp_path,
                                                           argv, stdin, says):
    argv = tuple(str(tmp_path / "e.json") if a == "EXPORT" else
                 str(tmp_path / "keys") + "/" if a == "KEYDIR/" else a for a in argv)
    invoke("xuser", "set", "x", "-r", "file:////data/*", "-r", "file:////srv/*")  # a .bak
    before = _snapshot(home)
    outside = sorted(p.name for p in tmp_path.iterdir())
    r = invoke(*argv, "--dry-run", input=stdin) if argv[0] != "-au" else \
        invoke("--dry-run", *argv, input=stdin)
    assert r.exit_code == 0, r.stderr
    assert says in r.stdout and "nothing was written (--dry-run)" in r.stdout
    import re

    assert not re.search(r'password = "(?!\*\*\*)', r.stdout)  # hashes are shown as ***
    assert _snapshot(home) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == outside


def test_a_tail_into_a_file_is_not_started(world, invoke, tmp_path):
    out = tmp_path / "events.jsonl"
    r = invoke("events", "tail", "--to", str(out), "--dry-run", env=world)
    assert r.exit_code == 0 and "would append events to" in r.stdout
    assert not out.exists()


def test_dry_run_reads_still_work_and_change_nothing(world, invoke, home):
    before = _snapshot(home)
    r = invoke("--dry-run", "user", "list", "-o", "json")
    assert json.loads(r.stdout)[0]["name"] == "u1"
    r = invoke("events", "list", "--dry-run", env=world)
    assert r.exit_code == 0, r.stderr
    assert _snapshot(home) == before
