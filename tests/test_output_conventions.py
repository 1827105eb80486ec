"""One output convention across commands (README, "Output"), checked on real output.

Every table: a header row of lowercase words, ``-`` for an empty value, yes/no for
booleans, times in ISO 8601 UTC (``2026-11-23T10:00:00Z``), never a Python ``True`` or
``None``. Every list command takes ``-o table|json|jsonl|csv``: jsonl is one JSON object
per line and csv has the json field names as its header.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from nodecli.emulator.operations import add_operation, mint_service_token

TIME_LIKE = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d[^\s,]*")
ISO_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@pytest.fixture
def world(invoke, emulator, node_env, log, home, tmp_path):
    """A home with users, transfer users, node and service profiles, and an emulator
    with events and operations."""
    invoke("xuser", "add", "aspera", "-r", "file:////data/*")
    invoke("xuser", "add", "spare", "--docroot", "/srv")
    invoke("user", "add", "usr1", "--xuser", "aspera", "--acl", "admin",
           "--password-stdin", input="pw1\n")
    invoke("user", "add", "usr2", "--xuser", "aspera", "--password-stdin", input="pw2\n")
    invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
           "--password-stdin", input="admin-pass\n")
    token = mint_service_token(emulator.state, "u1", "user:all")
    invoke("service", "add", "corp", "--url", emulator.url, "--token-stdin", input=token + "\n")
    r = invoke("access-key", "create", "--path", "/", "--id", "AKconv", "--secret-stdin",
               input="ak-secret\n", env=node_env)
    assert r.exit_code == 0, r.stderr
    log.generate(3, families=["file", "transfer"])
    add_operation(emulator.state, parent_id="100", status="stopped")
    add_operation(emulator.state, parent_id="100", status="success")
    return {**node_env, "NODECLI_SERVICE": "corp", "_token": token}


LISTS = [
    ("user", "list"),
    ("xuser", "list"),
    ("node", "list"),
    ("service", "list"),
    ("events", "list"),
    ("operations", "list", "--workspace", "100"),
    ("access-key", "list"),
]
SHOWS = [
    ("user", "show", "usr2"),
    ("xuser", "show", "spare"),
    ("node", "show", "emu"),
    ("service", "show", "corp"),
    ("operations", "show", "1", "--workspace", "100"),
]


def _check_text(text: str) -> None:
    for word in ("True", "False", "None"):
        assert not re.search(rf"\b{word}\b", text), text
    for found in TIME_LIKE.findall(text):
        assert ISO_Z.fullmatch(found), f"time {found!r} is not ISO 8601 UTC: {text}"


@pytest.mark.parametrize("argv", LISTS, ids=" ".join)
def test_tables_share_one_style(world, invoke, argv):
    r = invoke(*argv, env=world)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines, r.stderr
    header = lines[0]
    assert header == header.lower() and "_" not in header, header
    widths = [m.start() for m in re.finditer(r"(?<=  )\S", header)]
    for line in lines[1:]:
        # a value under every heading: empty cells are '-', never blank
        for start in widths:
            if start < len(line):
                assert line[start - 1] == " " and line[start] != " ", (header, line)
    _check_text(r.stdout)


@pytest.mark.parametrize("argv", SHOWS, ids=" ".join)
def test_single_objects_are_aligned_fields(world, invoke, argv):
    r = invoke(*argv, env=world)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    if argv[0] == "operations":  # a one-row table, like its list
        assert lines[0] == lines[0].lower()
    else:
        column = {len(m.group(1)) for line in lines
                  if (m := re.match(r"(\S(?:[^ ]| (?! ))*  +)\S", line))}
        assert len(column) == 1, lines  # every value starts in the same column
        assert all(not line.endswith(" ") for line in lines)
    _check_text(r.stdout)


@pytest.mark.parametrize("argv", LISTS, ids=" ".join)
def test_every_list_has_the_four_formats(world, invoke, argv):
    as_json = invoke(*argv, "-o", "json", env=world)
    assert as_json.exit_code == 0, as_json.stderr
    as_jsonl = invoke(*argv, "-o", "jsonl", env=world)
    assert as_jsonl.exit_code == 0, as_jsonl.stderr
    objects = [json.loads(line) for line in as_jsonl.stdout.splitlines()]
    assert objects and all(isinstance(o, dict) for o in objects)
    doc = json.loads(as_json.stdout)
    items = doc["events"] if argv[0] == "events" else doc
    assert len(items) == len(objects)
    as_csv = invoke(*argv, "-o", "csv", env=world)
    assert as_csv.exit_code == 0, as_csv.stderr
    rows = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert len(rows) == len(objects) + 1
    assert all(h == h.lower() and " " not in h for h in rows[0])  # the json field names


def test_on_a_colour_terminal_tables_keep_values_whole_and_messages_unbroken(
        world, home, tmp_path):
    """A real pty, 80 columns, colour on: the operations table (wider than the terminal)
    keeps every time whole; a success message longer than a line is not cut by newlines."""
    import os
    import sys

    import pexpect

    from .conftest import REPO_ROOT, subprocess_env

    env = subprocess_env({**world, "TERM": "xterm-256color"})
    env.pop("NO_COLOR", None)
    env.pop("COLUMNS", None)

    def run(*argv: str) -> str:
        child = pexpect.spawn(sys.executable, ["-m", "nodecli", *argv], env=env,
                              cwd=str(REPO_ROOT), encoding="utf-8", timeout=30,
                              dimensions=(40, 80))
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, child.before
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before)

    shown = run("operations", "list", "--workspace", "100")
    assert len(ISO_Z.findall(shown)) >= 2, shown  # created and updated, never folded
    long_dir = tmp_path / ("a-rather-long-folder-name-" * 3)
    long_dir.mkdir()
    token = long_dir / "service.token"
    token.write_text(mint_service_token_for(world) + "\n")
    os.chmod(token, 0o600)
    said = run("service", "add", "other", "--url", world["NODECLI_URL"],
               "--token-file", str(token))
    assert str(token) in said.replace("\r\n", "\n"), said


def mint_service_token_for(world: dict[str, str]) -> str:
    return world["_token"]
