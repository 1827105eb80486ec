"""One output convention across commands (docs/reference.md, "Output"), checked on real output.

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
    r = invoke("access-key", "create", "--path", "/", "--no-check", "--id", "AKconv",
               "--secret-stdin",
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


EMPTY_LISTS = [
    (("user", "list"), "no node users: add one with 'nodecli user add NAME --xuser XUSER'"),
    (("xuser", "list"), "no transfer users"),
    (("node", "list"), "no node profiles: add one with 'nodecli node add NAME --url URL'"),
    (("service", "list"), "no service profiles"),
    (("events", "list"), "no events"),
    (("access-key", "list"), "no access keys"),
]


@pytest.mark.parametrize("argv,says", EMPTY_LISTS, ids=[" ".join(a) for a, _ in EMPTY_LISTS])
def test_empty_lists_say_so_the_same_way(invoke, node_env, argv, says):
    env = node_env if argv[0] in ("events", "access-key") else None
    r = invoke(*argv, env=env)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "" and says in r.stderr
    assert invoke(*argv, "-q", env=env).stderr == ""
    assert json.loads(invoke(*argv, "-o", "json", env=env).stdout) in ([], {
        "events": [], "next_iteration_token": None, "next_url": None}) or argv[0] == "events"
    assert invoke(*argv, "-o", "jsonl", env=env).stdout == ""
    header = invoke(*argv, "-o", "csv", env=env).stdout.splitlines()
    assert len(header) == 1 and "," in header[0]


def _depth(text: str) -> int:
    deepest = level = 0
    for ch in text:
        level += (ch == "(") - (ch == ")")
        deepest = max(deepest, level)
    return deepest


def test_messages_do_not_nest_parentheses(invoke, tmp_path, node_env):
    """'token of opaque: contents unknown (stored (file))' read badly."""
    r = invoke("service", "add", "s1", "--url", "https://svc.example", "--token-stdin",
               input="not-the-envelope\n")
    assert r.exit_code == 0, r.stderr
    assert "an opaque token, its contents unknown, kept in the secrets file" in r.stderr
    tok = tmp_path / "tok"
    tok.write_text("still-opaque\n")
    tok.chmod(0o600)
    r = invoke("service", "add", "s2", "--url", "https://svc.example", "--token-file", str(tok))
    assert f"read from {tok} at each run" in r.stderr
    env = dict(node_env, NODECLI_PASSWORD="wrong")
    r = invoke("node", "info", env=env)
    assert r.exit_code == 4
    for text in (r.stderr, *invoke("service", "list").stderr.splitlines()):
        assert _depth(text) <= 1, text
