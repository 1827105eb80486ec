"""Convention: every command's exit codes are in the documented table
(docs/reference.md, "Exit codes"). Over every leaf of the click tree:

- every exit code its help names (``exit 7``, ``Exit 0 ...; 1 ...``) is in the table
  (``node health -o nagios`` names the monitoring-plugins codes, documented beside it);
- an unknown flag exits 2 with one line on stderr, no traceback;
- run bare (no arguments, no node, stdin not a terminal) it exits with a code of the
  table, and an error is one ``nodecli: error:`` line (a hint may follow), never a
  traceback or an internal error;
- a command that talks to a node, given a wrong password against the emulator over
  HTTPS, exits 4 (authentication refused).
"""

from __future__ import annotations

import re

import click
import pytest

from tests import conventions_world
from tests.conftest import REPO_ROOT
from tests.conventions_world import leaves
from tests.test_conventions_tables import READS, _argv

realistic = conventions_world.realistic  # the fixtures, by name
world = conventions_world.world

LEAVES = leaves()
PATHS = [" ".join(p) for p, _ in LEAVES]
# serve until stopped: run bare they would not end (their flags are still checked)
SERVERS = {"emulator serve", "emulator collector", "exporter"}
# exit codes a command names on purpose outside the table, and where they are documented
OWN_CODES = {"node health": {3}}  # -o nagios: UNKNOWN (the monitoring-plugins codes)
# reports failed checks (a refused login among them) as its output, exit 1 (its help)
CHECKS = {"node health"}


def documented_codes() -> set[int]:
    text = (REPO_ROOT / "docs" / "reference.md").read_text()
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(m) for m in re.findall(r"^\| (\d+) \|", section, re.M)}


DOCUMENTED = documented_codes()


def test_the_table_is_read_and_the_walk_finds_every_leaf():
    assert DOCUMENTED == {0, 1, 2, 3, 4, 5, 6, 7, 8, 130, 141}
    assert len(LEAVES) >= 60


def _help_codes(cmd: click.Command) -> set[int]:
    """The exit codes a command's help names."""
    text = " ".join((cmd.help or "").split())
    for param in cmd.params:
        text += " " + " ".join((getattr(param, "help", None) or "").split())
    found: set[int] = set()
    for m in re.finditer(r"\b[Ee]xit(?:s|ing)?:?((?:[\s,;/]*(?:\d+|or|and)\b)+)", text):
        found |= {int(n) for n in re.findall(r"\d+", m.group(1))}
    for m in re.finditer(r"\b[Ee]xit (\d+)[^.]*?;((?:\s*\d+ [^;.]*;?)+)", text):
        found |= {int(m.group(1)),
                  *(int(n) for n in re.findall(r"(?:^|;)\s*(\d+) ", m.group(2)))}
    return found


@pytest.mark.parametrize("path, cmd", LEAVES, ids=PATHS)
def test_the_codes_a_help_names_are_documented(path, cmd):
    named = _help_codes(cmd) - OWN_CODES.get(" ".join(path), set())
    assert named <= DOCUMENTED, f"{' '.join(path)} --help names {sorted(named - DOCUMENTED)}"


def test_the_help_codes_are_read():
    """The reader of the help finds what transfer watch says (0, 1, 7, 8, 130)."""
    cmd = dict(zip(PATHS, (c for _, c in LEAVES), strict=True))["transfer watch"]
    assert {0, 1, 7, 8, 130} <= _help_codes(cmd)


def _one_error(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("nodecli: error:", "Error:"))]
    assert len(errors) == 1, stderr


@pytest.mark.parametrize("path", PATHS, ids=str)
def test_an_unknown_flag_exits_2_in_one_line(invoke, path):
    r = invoke(*path.split(), "--no-such-flag-anywhere")
    assert r.exit_code == 2, r
    assert r.stdout == ""
    _one_error(r.stderr)


@pytest.mark.parametrize("path", [p for p in PATHS if p not in SERVERS], ids=str)
def test_run_bare_it_exits_with_a_documented_code(invoke, path):
    r = invoke(*path.split(), input="")
    assert r.exit_code in DOCUMENTED, r
    if r.exit_code != 0 and path not in CHECKS:
        _one_error(r.stderr)


def _talks_to_a_node(cmd: click.Command) -> bool:
    return any("--node" in getattr(p, "opts", []) for p in cmd.params)


REMOTE = [p for p, c in zip(PATHS, (c for _, c in LEAVES), strict=True)
          if _talks_to_a_node(c) and p in READS and p not in CHECKS]


def test_the_remote_reads_are_many():
    assert len(REMOTE) >= 11


@pytest.mark.parametrize("path", REMOTE, ids=str)
def test_a_wrong_password_exits_4(realistic, invoke, path):
    argv = _argv(path, READS[path][0], realistic)
    env = {**realistic["env"], "NODECLI_PASSWORD": "wrong-password"}
    if path in ("permission list", "permission show") or path.startswith("files "):
        env.update(NODECLI_USER="", NODECLI_ACCESS_KEY="AKconv")
    r = invoke(*argv, env=env)
    assert r.exit_code == 4, r
    _one_error(r.stderr)
