"""A node and a home seeded with realistic data, and a real pseudo-terminal to run
nodecli in: shared by the convention tests (tables, csv, exit codes) that walk the
command tree.

Realistic means what a production node holds: UUID ids, long host names, byte counts
of 10^12, rates of 10^7 kbps, unicode paths, and free text (error descriptions, event
paths) longer than any terminal line.
"""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import click
import pytest

from nodecli.emulator.transfers import Transfer, book_of
from tests import test_output_conventions

world = test_output_conventions.world  # the fixture, by name

LONG_HOST = "transfer-gateway-eu-west-3.storage.production.example-corporation.com"
UNICODE_DIR = "/data/projets/Études de marché 2026/Ünïcödé — 東京 オフィス"
LONG_ERROR = ("the remote host closed the session while the destination folder was being "
              "created: disk quota exceeded on " + LONG_HOST)
TB = 10**12
RATE = 10**7  # kbps: 10 Gbps

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)?"
                  r"|\x1b[=>()][0-9A-Za-z]?")
ISO_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
TIME_START = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]*\S*")


def leaves() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every visible leaf command of the tree, with its word path (the walk of
    tests/test_cli_tree.py, lazily loaded groups included)."""
    from tests.test_cli_tree import LEAVES

    return LEAVES


def output_choices(cmd: click.Command) -> list[str]:
    for param in cmd.params:
        if "-o" in getattr(param, "opts", []):
            return list(param.type.choices)  # type: ignore[attr-defined]
    return []


def seed(emulator: Any, log: Any, home_env: dict[str, str], invoke: Any) -> dict[str, Any]:
    """Transfers, events, a permission and profiles with realistic values; returns
    what the tests need to name (ids)."""
    book = book_of(emulator.state)
    now = time.time()
    made: dict[str, Any] = {"transfers": []}
    shapes = [  # (direction, host, size, rate, files, started seconds ago, fails)
        ("receive", LONG_HOST, 3 * TB, RATE, 12_345, 30, False),
        ("send", "10.200.17.254", TB, RATE // 10, 7, 5, False),
        ("receive", "fail-" + LONG_HOST, 2 * TB, RATE, 3, 7200, True),
        ("send", "backup.example", 10**6, 800, 1, 3600, False),
    ]
    with emulator.state.lock:
        for direction, host, size, rate, files, ago, fails in shapes:
            spec = {"remote_host": host, "direction": direction, "target_rate_kbps": rate,
                    "paths": [{"source": f"{UNICODE_DIR}/f{n}.mov"} for n in range(files)]
                    if files < 20 else [{"source": UNICODE_DIR}]}
            t = Transfer(str(uuid.uuid4()), "alice", None, spec, direction, host, rate, size,
                         files, fails=fails)
            t.start = t.changed = now - ago
            t.ended_logged = True
            if fails:
                t.extra = {"error_desc": LONG_ERROR}
            book.items.append(t)
            made["transfers"].append(t.id)
    for i in range(4):
        log.append({"user_id": "alice", "types": ["file.created"],
                    "data": {"id": str(100 + i), "type": "file", "size": TB + i,
                             "path": f"{UNICODE_DIR}/rapport trimestriel {i} — version "
                                     "finale relue et approuvée.pdf"}})
    log.generate(3, families=["transfer", "permission"])
    made["event_id"] = "1"
    return made


def run_in_pty(argv: list[str], env: dict[str, str], columns: int, tmp: Any, *,
               color: bool = True, rows: int = 200) -> tuple[int, str, str]:
    """nodecli run with its stdout in a real pseudo-terminal of ``columns`` x ``rows``
    (stderr in a file, so that messages are told from data): its exit status, its
    stdout (escape sequences removed, lines split on CRLF) and its stderr."""
    import shlex

    import pexpect

    from tests.conftest import REPO_ROOT, subprocess_env

    child_env = subprocess_env({**env, "TERM": "xterm-256color"})
    child_env.pop("COLUMNS", None)  # the pty's size, as a user has it
    child_env.pop("LINES", None)
    if color:
        child_env.pop("NO_COLOR", None)
    else:
        child_env["NO_COLOR"] = "1"
    err = tmp / "stderr.txt"
    command = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "nodecli", *argv))
    child = pexpect.spawn("/bin/sh", ["-c", f"exec {command} 2>{shlex.quote(str(err))}"],
                          env=child_env, cwd=str(REPO_ROOT), encoding="utf-8", timeout=60,
                          dimensions=(rows, columns))
    try:
        child.expect(pexpect.EOF)
        text = child.before or ""
    finally:
        child.close(force=True)
    code = child.exitstatus if child.exitstatus is not None else -1
    return code, ANSI.sub("", text).replace("\r\n", "\n"), err.read_text()


class Pty:
    """:func:`run_in_pty`, each command forked from one driver already in a pty
    (tests/pty_runner.py): the same child process, without a Python start-up each."""

    def __init__(self) -> None:
        from tests.conftest import REPO_ROOT, subprocess_env
        from tests.pty_runner import PtyRunner

        self.runner = PtyRunner(str(REPO_ROOT), subprocess_env({"TERM": "xterm-256color"}))

    def run(self, argv: list[str], env: dict[str, str], columns: int, tmp: Any, *,
            color: bool = True, rows: int = 200) -> tuple[int, str, str]:
        from tests.conftest import subprocess_env

        child_env = subprocess_env({**env, "TERM": "xterm-256color"})
        child_env.pop("COLUMNS", None)  # the pty's size, as a user has it
        child_env.pop("LINES", None)
        if color:
            child_env.pop("NO_COLOR", None)
        else:
            child_env["NO_COLOR"] = "1"
        code, text, err = self.runner.run(argv, child_env, columns, str(tmp / "stderr.txt"),
                                          rows=rows)
        return code, ANSI.sub("", text), err


@pytest.fixture(scope="module")
def pty() -> Iterator[Pty]:
    """A :class:`Pty` for the module's tests (its driver reaped after them)."""
    made = Pty()
    try:
        yield made
    finally:
        made.runner.close()


def json_items(doc: Any) -> list[Any]:
    """The items of a command's json form: a list, or the list inside an envelope."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        lists = [v for v in doc.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
    return [doc]


def parse_json(text: str) -> Any:
    return json.loads(text)


@pytest.fixture
def realistic(world, invoke, emulator, log) -> Iterator[dict[str, Any]]:
    """The world of tests/test_output_conventions.py plus realistic data; the
    environment to run against it and the ids to name."""
    from nodecli.emulator.storage import Permission, storage_of

    env = {k: v for k, v in world.items() if not k.startswith("_")}
    invoke("xuser", "add", "archive", "-r", f"file:///{UNICODE_DIR}/*", "-r",
           "file:////data/long/" + "sub-folder/" * 6 + "*")
    invoke("user", "add", "usr-" + "x" * 40, "--xuser", "archive", "--acl", "admin",
           "--password-stdin", input="pw3\n")
    invoke("node", "add", "far-away-production-node", "--url",
           f"https://{LONG_HOST}:9092/api/v1/nodes/production", "--user", "admin",
           "--password-stdin", "--no-check", input="x\n")
    made = seed(emulator, log, env, invoke)
    storage = storage_of(emulator.state)
    folder = storage.ensure(UNICODE_DIR, "folder")
    storage.permissions["41"] = Permission(
        "41", folder.id, "user", "alice@" + LONG_HOST, ["list", "read", "write", "delete"])
    made["permission_id"] = "41"
    made["env"] = env
    yield made
