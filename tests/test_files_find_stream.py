"""``files find --resume NAME``'s matches printed from its spool one at a time (memory
stays flat however many matched; a damaged line is exit 3, not a traceback), and a
Ctrl-C on a terminal that names the scan stopped. A scripted node over HTTPS
(tests/scripted_server.py); the Ctrl-C child is held at the ``scan-save`` point
(NODECLI_TEST_PAUSE), no sleeps."""

from __future__ import annotations

import json
import re
from typing import Any

from nodecli.errors import ExitCode
from tests.conftest import Result
from tests.test_files_hostile import certs
from tests.test_files_walk_hostile import Tree, file, folder, walk

__all__ = ["certs"]

def test_find_resume_prints_its_kept_matches_one_at_a_time(certs, invoke, home) -> None:
    """The matches of a finished scan are read from its spool one at a time (memory
    stays flat whatever matched): a damaged line there stops -o jsonl and csv after the
    lines before it, printed; -o json, which needs them all, prints none. Either way the state
    is named damaged (exit 3), never a traceback, and nothing is changed."""
    tree: Tree = {"1": (200, [file("A", "a"), file("B", "b"), file("C", "c")])}
    scans = home / "state" / "scans"
    runs: dict[str, Result] = {}

    def scan_then_damage_its_spool(*argv: str, **kwargs: Any) -> Result:
        # one node for all (a scan is of its node)
        first = invoke(*argv, "-o", "jsonl", **kwargs)
        assert first.exit_code == 0 and len(first.stdout.splitlines()) == 3, first
        kept = (scans / "d.found").read_bytes()
        a, b, c = kept.splitlines(keepends=True)
        damaged = a + b"{" * (len(b) - 1) + b"\n" + c  # as long: the state still counts it
        (scans / "d.found").write_bytes(damaged)
        for fmt in ("jsonl", "csv", "json"):
            runs[fmt] = invoke(*argv, "-o", fmt, **kwargs)
        assert (scans / "d.found").read_bytes() == damaged
        runs["a"] = Result(0, a.decode(), "")
        return first

    walk(certs, scan_then_damage_its_spool, tree, "files", "find", "--resume", "d")
    state = scans / "d.json"
    said = [f"nodecli: error: scan state {state} is damaged (line 2 of its matches "
            f"{scans / 'd.found'} is not JSON)",
            "hint: nothing was changed; --restart starts the scan over"]
    r = runs["jsonl"]
    assert (r.exit_code, r.stdout) == (ExitCode.CONFIG, runs["a"].stdout), r
    assert r.stderr.splitlines()[-2:] == said, r
    r = runs["csv"]  # a stream too: its header and the line before the damaged one
    assert (r.exit_code, r.stdout.splitlines()[1:]) == (ExitCode.CONFIG, [
        "/a,a,file,1,,A"]), r
    assert r.stdout.splitlines()[0] == "path,name,type,size,mtime,id", r
    assert r.stderr.splitlines()[-2:] == said, r
    r = runs["json"]
    assert (r.exit_code, r.stdout) == (ExitCode.CONFIG, ""), r
    assert r.stderr.splitlines()[-2:] == said, r


def test_ctrl_c_on_a_terminal_names_the_find_it_stopped(certs, home, pause_point) -> None:
    """Ctrl-C in a terminal while find --resume saves its place (held at scan-save
    after 2 folders): exit 130, the scan's path and its count said, and the hint to go
    on; nothing printed on stdout."""
    import pexpect

    from tests.conftest import nodecli_cmd, reap, subprocess_env

    tree: Tree = {"1": (200, [folder("A", "a"), folder("B", "b"), folder("C", "c")]),
                  "A": (200, [file("X", "x")]), "B": (200, [file("Y", "y")]),
                  "C": (200, [file("Z", "z")])}
    pause = pause_point("scan-save")
    seen: dict[str, Any] = {}

    def in_a_terminal(*argv: str, env: dict[str, str] | None = None, **_: Any) -> Result:
        cmd = nodecli_cmd(*argv)
        term = pexpect.spawn(cmd[0], cmd[1:], dimensions=(24, 200), timeout=60,
                             env=subprocess_env({**(env or {}), **pause.env(),
                                                 "NODECLI_TEST_SCAN_SAVE_EVERY": "2",
                                                 "TERM": "xterm"}))
        try:
            at = pause.wait(term)
            assert at is not None
            term.sendintr()  # the terminal's Ctrl-C: SIGINT to the child
            again = pause.wait(term)  # the way out saves the place once more
            at.close()
            assert again is not None
            pause.release(again)
            term.expect(pexpect.EOF)
            seen["text"] = term.before.decode(errors="replace")
        finally:
            reap(term)
        term.close()
        return Result(term.exitstatus, "", "")

    r, _ = walk(certs, in_a_terminal, tree, "files", "find", "/", "--resume", "cc",
                "-o", "jsonl")
    assert r.exit_code == ExitCode.INTERRUPTED, (r, seen)
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", seen["text"])  # the status line's clears
    lines = [line.strip() for line in text.replace("\r", "\n").split("\n")]
    assert "nodecli: scan of / interrupted after 2 folders" in lines, seen
    assert "hint: the same command goes on where it stopped (--resume cc)" in lines, seen
    assert '"path"' not in seen["text"]
    saved = json.loads((home / "state" / "scans" / "cc.json").read_bytes())
    assert saved["counts"]["listings"] == 2 and saved["finished_at"] is None


def test_a_kept_match_nested_too_deeply_is_a_damaged_state(tmp_path) -> None:
    """A line JSON's decoder gives up on (RecursionError) is damage too, not a crash."""
    import io

    import pytest

    from nodecli.errors import ConfigError
    from nodecli.node.files_scan_state import ScanState

    state = ScanState.named(tmp_path, "deep")
    spool = io.BytesIO(b'{"path":"/a"}\n' + b"[" * 100_000 + b"\n")
    rows = state.matches(spool)
    assert next(rows) == {"path": "/a"}
    with pytest.raises(ConfigError) as info:
        next(rows)
    assert info.value.message == (f"scan state {state.path} is damaged (line 2 of its "
                                  f"matches {state.found_path} is not JSON)")
