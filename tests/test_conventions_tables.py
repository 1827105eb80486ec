"""Convention: tables fit the terminal. Every list and show command of the tree (each
command with a ``table`` output), run in a real pseudo-terminal at 60, 80 and 120
columns against the emulator over HTTPS seeded with realistic data:

- no line is longer than the terminal;
- one line per row (a table: its header and one line per item of the json form; a
  field list: one line per field, no continuation lines);
- ids, statuses and times are whole (a time is never cut: every time shown is ISO 8601
  UTC to the second);
- long free text is cut with ``…``, never wrapped;
- ``-o wide`` shows every column with every cell whole, one line per row (lines may
  then be longer than the terminal, as ``kubectl -o wide``).

And every help page at those widths: no line longer than the terminal, no word broken
(every word of a narrow page is a word of the wide page), no sentinel bound such as
``9223372036854775807``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from nodecli.render import display_width
from tests import conventions_world
from tests.conventions_world import (
    ISO_Z,
    LONG_ERROR,
    LONG_HOST,
    TIME_START,
    UNICODE_DIR,
    json_items,
    leaves,
    output_choices,
)

# the fixtures, by name
realistic = conventions_world.realistic
world = conventions_world.world
pty = conventions_world.pty

WIDTHS = (60, 80, 120)

# The arguments each read command is run with ({transfer}, {event} ... are ids of the
# seeded world). A new list or show command fails test_every_table_command_is_checked
# until it is named here (or in WRITES with the reason).
READS: dict[str, list[list[str]]] = {
    "access-key list": [[]],
    "access-key show": [["AKconv"]],
    "access-key tree": [[]],
    "access can-i": [["read", "{dir}", "--user-id", "alice@" + LONG_HOST]],
    "access what-can": [["--user-id", "alice@" + LONG_HOST]],
    "access who-can": [["{dir}"]],
    "config path": [[]],
    "events tail": [["--since", "1d"]],
    "events get": [["{event}"]],
    "events list": [[]],
    "events stats": [[], ["--since", "1d", "--by", "type"]],
    "files du": [["/"], ["{dir}", "--depth", "3"]],
    "files find": [["/", "--depth", "1"], ["/data", "--type", "d", "--depth", "1"]],
    "files ls": [["/"]],
    "files tree": [["/"]],
    "node health": [[]],
    "node info": [[]],
    "node list": [[]],
    "node show": [["far-away-production-node"]],
    "node thresholds": [["emu"]],
    "operations list": [["--workspace", "100"]],
    "operations show": [["1", "--workspace", "100"]],
    "permission list": [["{dir}"]],
    "permission show": [["41"]],
    "service list": [[]],
    "service show": [["corp"]],
    "transfer list": [[], ["--active"], ["--status", "failed,completed"]],
    "transfer show": [["{transfer}"], ["{failed}"]],
    "transfer top": [["--once"]],
    "user acl": [["usr1"]],
    "user list": [[]],
    "user show": [["usr-" + "x" * 40]],
    "xuser list": [[]],
    "xuser show": [["archive"]],
}
# Commands with a table output that change something: their output is a field list of
# what they did, the same renderer as the show commands checked above.
WRITES = {
    "access-key create", "operations resolve", "operations update", "operations watch",
    "permission grant", "permission modify", "transfer modify", "transfer start", "transfer watch",
    "workspaces create",
}

# exit 1 whenever they list something (kubectl diff's convention): their table's fit
# is checked in tests/test_declare.py
EXIT_ONE_WITH_ROWS = {"diff"}

# listed by an access key (the node user may not see permissions)
AS_KEY = {"permission list", "permission show", "access can-i", "access what-can",
          "access who-can", "files ls", "files find", "files tree", "files du"}
# lines without a header (a stream of event lines)
HEADLESS = {"events tail", "access what-can"}  # (what-can: a tree)
# lists whose json form is an object holding the list
ENVELOPES = {"events list"}
# a field list followed by a block of indented lines (the event's data as JSON)
BLOCKS = {"events get"}

TABLE_COMMANDS = [" ".join(p) for p, cmd in leaves()
                  if {"table", "pretty"} & set(output_choices(cmd))]


def test_every_table_command_is_checked():
    unnamed = set(TABLE_COMMANDS) - set(READS) - WRITES - EXIT_ONE_WITH_ROWS
    assert not unnamed, f"list/show commands with no arguments in READS: {sorted(unnamed)}"
    assert set(READS) <= set(TABLE_COMMANDS)  # none named that left the tree
    assert len(READS) >= 24


def _argv(path: str, args: list[str], made: dict[str, Any]) -> list[str]:
    ids = {"{transfer}": made["transfers"][0], "{failed}": made["transfers"][2],
           "{event}": made["event_id"], "{dir}": UNICODE_DIR}
    return [*path.split(), *(ids.get(a, a) for a in args)]


# long server text the world holds: shown whole or cut with '…', never wrapped
FREE_TEXTS = (LONG_ERROR, LONG_HOST, UNICODE_DIR)
SENTINELS = ("9223372036854775807", "18446744073709551615", "2147483647", "4294967295")


def _check_free_text(line: str) -> None:
    """A line that shows the start of a long text shows all of it, or a '…' after it."""
    for text in FREE_TEXTS:
        at = line.find(text[:14])
        if at >= 0 and text not in line:
            assert "…" in line[at:], f"cut without '…': {line!r}"


WHOLE_TIME = re.compile(ISO_Z.pattern[:-1] + r"(\.\d+)?Z")


def _check_whole(text: str, items: list[Any]) -> None:
    for item in items:
        if not isinstance(item, dict):
            continue
        for key in ("id", "status", "state", "name"):
            value = item.get(key)
            if isinstance(value, str) and 8 <= len(value) <= 40 and value[:8] in text:
                assert value in text, f"{key} {value!r} not whole in:\n{text}"
    for found in TIME_START.findall(text):
        # (a time inside a node's JSON, as events get shows it, may carry fractions and
        # stand in quotes: whole all the same)
        assert WHOLE_TIME.fullmatch(found.rstrip(',;)"')), f"time {found!r} cut or not UTC"


def _env(path: str, made: dict[str, Any]) -> dict[str, str]:
    env = made["env"]
    if path in AS_KEY:
        return {**env, "NODECLI_USER": "", "NODECLI_ACCESS_KEY": "AKconv",
                "NODECLI_PASSWORD": "ak-secret"}
    return env


def _json(invoke, argv: list[str], env: dict[str, str]) -> Any:
    r = invoke(*argv, "-o", "json", env=env)
    assert r.exit_code == 0, r
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:  # a stream (events tail): its jsonl form
        r = invoke(*argv, "-o", "jsonl", env=env)
        return [json.loads(line) for line in r.stdout.splitlines()]


@pytest.mark.parametrize("path", sorted(READS), ids=str)
def test_list_and_show_fit_the_terminal(realistic, invoke, pty, path, tmp_path):
    for args in READS[path]:
        argv = _argv(path, args, realistic)
        env = _env(path, realistic)
        doc = _json(invoke, argv, env)
        is_table = isinstance(doc, list) or path in ENVELOPES
        items = json_items(doc) if is_table else [doc]
        for columns, color in [(60, True), (80, True), (80, False), (120, True)]:
            code, text, err = pty.run(argv, env, columns, tmp_path, color=color)
            where = f"{' '.join(argv)} at {columns} columns{'' if color else ' NO_COLOR'}"
            assert code == 0, (where, text, err)
            lines = text.rstrip("\n").split("\n") if text.strip() else []
            assert "Traceback" not in err, err
            for line in lines:
                assert display_width(line) <= columns, f"{where}: too long: {line!r}"
                _check_free_text(line)
            if is_table and items:
                header = 0 if path in HEADLESS else 1
                assert len(lines) == len(items) + header, \
                    f"{where}: not one line per row:\n{text}"
            elif not is_table and path not in BLOCKS:
                assert not any(line.startswith(" ") for line in lines), \
                    f"{where}: a field on two lines:\n{text}"
            _check_whole(text, items)


WIDE = [p for p in sorted(READS) if p in TABLE_COMMANDS and "wide" in output_choices(
    dict((" ".join(q), c) for q, c in leaves())[p])]


@pytest.mark.parametrize("path", WIDE, ids=str)
def test_wide_keeps_every_cell_whole_on_one_line_per_row(realistic, invoke, pty, path,
                                                         tmp_path):
    argv = _argv(path, READS[path][0], realistic)
    env = _env(path, realistic)
    doc = _json(invoke, argv, env)
    items = json_items(doc) if isinstance(doc, list) or path in ENVELOPES else []
    for color in (True, False):
        code, text, err = pty.run([*argv, "-o", "wide"], env, 80, tmp_path, color=color)
        assert code == 0, (text, err)
        lines = text.rstrip("\n").split("\n") if text.strip() else []
        assert "…" not in text, text
        if items and all(isinstance(i, dict) for i in items):
            assert len(lines) == len(items) + 1, text
        for item in items:
            for value in item.values() if isinstance(item, dict) else ():
                if isinstance(value, str) and "://" in value:
                    assert value in text, (value, text)


# -- help pages ---------------------------------------------------------------------------

def _help_paths() -> list[tuple[str, ...]]:
    from tests.test_cli_tree import GROUPS

    return [(), *GROUPS, *(p for p, _ in leaves())]


HELP_PATHS = _help_paths()


def test_every_help_page_is_checked():
    assert len(HELP_PATHS) >= 80


@pytest.mark.parametrize("path", HELP_PATHS, ids=lambda p: " ".join(p) or "nodecli")
def test_help_pages_fit_the_terminal_and_break_no_word(pty, path, tmp_path):
    pages = {}
    for columns in WIDTHS:
        code, text, err = pty.run([*path, "--help"], {}, columns, tmp_path)
        where = f"nodecli {' '.join(path)} --help at {columns} columns"
        assert code == 0 and err == "", (where, err)
        for line in text.splitlines():
            assert display_width(line) <= columns, f"{where}: too long: {line!r}"
        for bound in SENTINELS:
            assert bound not in text, f"{where} shows the bound {bound}"
        pages[columns] = text
    words = set(pages[120].split())
    for columns in WIDTHS[:-1]:
        broken = {w for w in pages[columns].split() if w not in words
                  and not w.endswith(("...", "…")) and w != "\\"}
        assert not broken, f"{' '.join(path)} at {columns}: words broken: {sorted(broken)}"
