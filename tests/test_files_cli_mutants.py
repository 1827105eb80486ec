"""``files ls/find/tree`` (nodecli/cli/files.py) at its boundaries, in-process against a
scripted node over HTTPS (tests/scripted_server.py: every entry exactly as a test needs
it, a file without a size or a time, two folders that cannot be read): each output
format's columns, ``find``'s tests on such entries and on a file given as PATH, ``--name``
at 1024 and 1025 characters, the count of folders not read, ``tree``'s ASCII drawing,
``find --resume``'s outputs, ``-o jsonl`` printed as the entries come. Written for
mutmut's survivors of nodecli/cli/files.py, each proven against its mutant planted by
hand."""

from __future__ import annotations

import csv
import io
import json
import sys
from typing import Any

import pytest

from nodecli.errors import ExitCode
from tests.conftest import Result
from tests.test_files_hostile import certs
from tests.test_files_walk_hostile import Tree, file, folder, walk

__all__ = ["certs"]

T0 = "2025-01-01T00:00:00Z"


def dated(fid: str, name: str, size: int | None, mtime: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": fid, "name": name, "type": "file"}
    if size is not None:
        entry["size"] = size
    if mtime is not None:
        entry["mtime"] = mtime
    return entry


# /: a folder d (holding g), a file s with a size and a time, a file n with neither
TREE: Tree = {"1": (200, [folder("D", "d"), dated("S", "s", 5, T0), dated("N", "n", None, None)]),
              "D": (200, [file("G", "g")])}


def rows_of(r: Result) -> list[list[str]]:
    return list(csv.reader(io.StringIO(r.stdout)))


def test_ls_prints_each_format_with_its_columns(certs, invoke) -> None:
    r, _ = walk(certs, invoke, TREE, "files", "ls", "-o", "csv")
    assert r.exit_code == 0, r
    assert rows_of(r) == [["path", "name", "type", "size", "mtime", "id"],
                          ["/d", "d", "folder", "", "", "D"],
                          ["/s", "s", "file", "5", T0, "S"],
                          ["/n", "n", "file", "", "", "N"]]
    r, _ = walk(certs, invoke, TREE, "files", "ls", "/s", "-o", "csv")
    assert rows_of(r) == [["path", "name", "type", "size", "mtime", "id"],
                          ["/s", "s", "file", "5", T0, "S"]]
    r, _ = walk(certs, invoke, TREE, "files", "ls", "/s", "-o", "jsonl")
    assert [json.loads(line) for line in r.stdout.splitlines()] == [
        {"path": "/s", "name": "s", "type": "file", "size": 5, "mtime": T0, "id": "S"}]
    r, _ = walk(certs, invoke, TREE, "files", "ls", "/d")
    assert r.exit_code == 0, r
    assert r.stdout.split() == ["type", "size", "modified", "name", "id", "file", "1", "-",
                                "g", "G"]


def test_find_prints_each_format_with_its_columns(certs, invoke) -> None:
    r, _ = walk(certs, invoke, TREE, "files", "find", "--type", "f", "-o", "csv")
    assert r.exit_code == 0, r
    assert rows_of(r) == [["path", "name", "type", "size", "mtime", "id"],
                          ["/d/g", "g", "file", "1", "", "G"],
                          ["/s", "s", "file", "5", T0, "S"],
                          ["/n", "n", "file", "", "", "N"]]
    r, _ = walk(certs, invoke, TREE, "files", "find", "/", "--name", "g")
    assert r.exit_code == 0, r
    assert r.stdout.split() == ["type", "size", "modified", "name", "path", "id", "file",
                                "1", "-", "g", "/d/g", "G"]
    r, _ = walk(certs, invoke, TREE, "files", "find", "/", "--name", "nothing")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "nothing found\n")


def names(r: Result) -> list[str]:
    assert r.exit_code == 0, r
    return [x["name"] for x in json.loads(r.stdout)]


def test_find_tests_entries_without_a_size_or_a_time(certs, invoke) -> None:
    def find(*args: str) -> list[str]:
        return names(walk(certs, invoke, TREE, "files", "find", *args, "-o", "json")[0])

    assert find() == ["d", "g", "s", "n"]
    assert find("--min-size", "0") == ["g", "s"]  # not the folder, not n (no size)
    assert find("--min-size", "5") == ["s"]
    assert find("--newer", T0) == ["s"]  # not g nor n (no time)
    assert find("--type", "d") == ["d"]
    assert find("--type", "f", "--name", "[dn]") == ["n"]


def test_find_of_a_file_tests_the_file_itself(certs, invoke) -> None:
    def find(*args: str) -> list[str]:
        return names(walk(certs, invoke, TREE, "files", "find", "/s", *args, "-o", "json")[0])

    assert find() == ["s"]
    assert find("--type", "f", "--name", "s", "--min-size", "5") == ["s"]
    assert find("--type", "d") == []
    assert find("--name", "g") == []
    assert find("--min-size", "6") == []


@pytest.mark.parametrize(("glob", "ok"), [("", False), ("s" + "*" * 1023, True),
                                          ("s" + "*" * 1024, False)])
def test_find_name_takes_1_to_1024_characters(certs, invoke, glob: str, ok: bool) -> None:
    r, targets = walk(certs, invoke, TREE, "files", "find", "--name", glob, "-o", "json")
    if ok:
        assert names(r) == ["s"]
    else:
        assert r.exit_code == ExitCode.USAGE, r
        assert r.stderr.splitlines()[0] == ("nodecli: error: --name takes a glob of 1 to "
                                            "1024 characters")
        assert targets == []


# two folders that cannot be read (404), a file beside them
UNREAD: Tree = {"1": (200, [folder("A", "a"), folder("B", "b"), file("F", "f")])}


@pytest.mark.parametrize("argv", [("find", "-o", "json"), ("tree",), ("tree", "-o", "json"),
                                  ("find", "--resume", "two", "-o", "json")])
def test_two_folders_not_read_are_counted_as_two(certs, invoke, argv) -> None:
    r, _ = walk(certs, invoke, UNREAD, "files", *argv)
    assert r.exit_code == ExitCode.ERROR, r
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("nodecli: ")]
    assert lines[0].startswith("nodecli: warning: /a: not read (")
    assert lines[1].startswith("nodecli: warning: /b: not read (")
    assert lines[-1] == ("nodecli: error: 2 folder(s) could not be read; what they hold is "
                         "not listed above")


def test_tree_prints_each_row_with_its_depth(certs, invoke) -> None:
    r, _ = walk(certs, invoke, TREE, "files", "tree", "-o", "csv")
    assert r.exit_code == 0, r
    assert rows_of(r) == [["path", "name", "type", "size", "mtime", "id", "depth"],
                          ["/d", "d", "folder", "", "", "D", "1"],
                          ["/d/g", "g", "file", "1", "", "G", "2"],
                          ["/s", "s", "file", "5", T0, "S", "1"],
                          ["/n", "n", "file", "", "", "N", "1"]]
    r, _ = walk(certs, invoke, TREE, "files", "tree", "--depth", "1", "-o", "jsonl")
    assert [(x["path"], x["depth"]) for x in map(json.loads, r.stdout.splitlines())] == [
        ("/d", 1), ("/s", 1), ("/n", 1)]
    r, _ = walk(certs, invoke, TREE, "files", "tree", "-o", "json")
    assert [(x["path"], x["depth"]) for x in json.loads(r.stdout)] == [
        ("/d", 1), ("/d/g", 2), ("/s", 1), ("/n", 1)]


def ascii_invoke(*args: str, input: str | None = None,
                 env: dict[str, str] | None = None) -> Result:
    """``invoke`` with an ASCII stdout (as under LANG=C)."""
    from click.testing import CliRunner

    from nodecli.cli.main import run

    runner = CliRunner(charset="ascii")
    with runner.isolation(input=input, env=env) as (out, err, _):
        code = run(list(args))
        sys.stdout.flush()
        sys.stderr.flush()
        return Result(int(code), out.getvalue().decode(), err.getvalue().decode())


def test_tree_draws_in_ascii_on_a_stdout_that_is_not_utf8(certs) -> None:
    tree: Tree = {"1": (200, [folder("A", "a"), file("B", "b"), folder("C", "c")]),
                  "A": (200, [file("X", "x"), folder("Y", "y")]),
                  "Y": (200, [file("E", "deep")]), "C": (200, [file("Z", "z")])}
    r, _ = walk(certs, ascii_invoke, tree, "files", "tree")
    assert r.exit_code == 0, r
    assert r.stdout.splitlines() == ["/", "|-- a/", "|   |-- x", "|   `-- y/",
                                     "|       `-- deep", "|-- b", "`-- c/", "    `-- z"]


def test_find_resume_prints_each_format_once_complete(certs, invoke, home) -> None:
    r, _ = walk(certs, invoke, TREE, "files", "find", "--type", "f", "--resume", "c",
                "-o", "csv")
    assert r.exit_code == 0, r
    # a folder's files as it is listed, its subfolders after it
    assert rows_of(r) == [["path", "name", "type", "size", "mtime", "id"],
                          ["/s", "s", "file", "5", T0, "S"],
                          ["/n", "n", "file", "", "", "N"],
                          ["/d/g", "g", "file", "1", "", "G"]]

    def twice(*argv: str, **kwargs: Any) -> Result:  # (one node: the scan is of it)
        invoke(*argv, **kwargs)
        return invoke(*argv, **kwargs)

    r, _ = walk(certs, twice, TREE, "files", "find", "--type", "f", "--resume", "c2",
                "-o", "csv")
    assert rows_of(r)[1:] == [["/s", "s", "file", "5", T0, "S"],
                              ["/n", "n", "file", "", "", "N"],
                              ["/d/g", "g", "file", "1", "", "G"]]
    line, = r.stderr.splitlines()
    assert line.startswith("scan c2 finished at "), r
    assert line.endswith(": its matches (--restart scans again)"), r
    r, _ = walk(certs, invoke, TREE, "files", "find", "--name", "g", "--resume", "t")
    assert r.exit_code == 0, r
    assert r.stdout.split() == ["type", "size", "modified", "name", "path", "id", "file",
                                "1", "-", "g", "/d/g", "G"]
    r, _ = walk(certs, invoke, TREE, "files", "find", "--name", "nothing", "--resume", "e")
    assert (r.exit_code, r.stdout) == (0, ""), r
    assert r.stderr.splitlines()[-1] == "nothing found"
    r, _ = walk(certs, invoke, TREE, "files", "find", "--name", "[gs]", "--resume", "j",
                "-o", "jsonl")
    assert [json.loads(line)["path"] for line in r.stdout.splitlines()] == ["/s", "/d/g"]
    r, _ = walk(certs, invoke, TREE, "files", "find", "--name", "[gs]", "--resume", "k",
                "-o", "jsonl", "--field", "path")
    assert r.exit_code == 0, r
    assert r.stdout.splitlines() == ["/s", "/d/g"]


def test_find_resume_of_a_file_is_refused(certs, invoke, home) -> None:
    r, _ = walk(certs, invoke, TREE, "files", "find", "/s", "--resume", "f")
    assert r.exit_code == ExitCode.USAGE, r
    assert r.stderr.splitlines()[0] == "nodecli: error: /s is a file: --resume scans a folder"


@pytest.mark.parametrize(("argv", "printed"), [
    (("ls", "/a"), ["/a/x"]), (("find", "/"), ["/a", "/a/x", "/b"])])
def test_jsonl_prints_each_entry_as_it_comes(certs, invoke, argv, printed) -> None:
    """A listing that breaks (a's second page, b's listing): -o jsonl has printed what
    came before by then; json waits for the whole list, so prints none."""
    tree: Tree = {"1": (200, [folder("A", "a"), folder("B", "b")]),
                  "A@1": (200, [file("X", "x")], [("Link", '</files/A/files?page=2>; '
                                                  'rel="next"')]),
                  "A@2": (200, []), "B": (200, "not a list")}
    if argv[0] == "ls":
        tree["A@2"] = (200, "not a list")
    r, _ = walk(certs, invoke, tree, "files", *argv, "-o", "jsonl")
    assert r.exit_code == ExitCode.REMOTE, r
    assert [json.loads(line)["path"] for line in r.stdout.splitlines()] == printed
    r, _ = walk(certs, invoke, tree, "files", *argv, "-o", "json")
    assert (r.exit_code, r.stdout) == (ExitCode.REMOTE, ""), r


def test_find_resume_prints_its_kept_lines_as_they_were_kept(certs, invoke, home) -> None:
    """-o jsonl from the spool: compact lines, a name not ASCII kept as it is, a lone
    surrogate (a JSON escape) replaced."""
    tree: Tree = {"1": (200, [file("E", "été"), dated("S", "s", 5, T0),
                              file("U", "u\udc80")])}
    r, _ = walk(certs, invoke, tree, "files", "find", "--resume", "u", "-o", "jsonl")
    assert r.exit_code == 0, r
    assert r.stdout == (
        '{"path":"/été","name":"été","type":"file","size":1,"mtime":null,"id":"E"}\n'
        f'{{"path":"/s","name":"s","type":"file","size":5,"mtime":"{T0}","id":"S"}}\n'
        '{"path":"/u?","name":"u?","type":"file","size":1,"mtime":null,"id":"U"}\n')


def test_find_resume_walks_a_directory_and_counts_its_bytes(certs, invoke, home) -> None:
    """A node that types its folders "directory": walked below all the same; the scan's
    totals (-vv) count each file's size."""
    tree: Tree = {"1": (200, [{"id": "D", "name": "d", "type": "directory"},
                              dated("S", "s", 5, T0)]),
                  "D": (200, [dated("G", "g", 1024, None)])}
    r, _ = walk(certs, invoke, tree, "-vv", "files", "find", "--resume", "v", "-o", "json")
    assert r.exit_code == 0, r
    assert [x["path"] for x in json.loads(r.stdout)] == ["/d", "/s", "/d/g"]
    assert "debug: /: 1.0 kB in 2 files, 1 folders" in r.stderr.splitlines(), r


def test_find_resume_of_a_scan_of_another_node_is_refused(certs, invoke, home) -> None:
    r, _ = walk(certs, invoke, TREE, "files", "find", "--resume", "n", "-o", "json")
    assert r.exit_code == 0, r
    r, _ = walk(certs, invoke, TREE, "files", "find", "--resume", "n", "-o", "json")
    assert (r.exit_code, r.stdout) == (ExitCode.USAGE, ""), r
    first = r.stderr.splitlines()[0]
    assert first.startswith("nodecli: error: scan n is of / on ak@https://"), r


def test_find_resume_shows_its_status_line_on_a_terminal(certs, home, tmp_path) -> None:
    """On a terminal, stderr shows the scan's counts from its first listing (a child in
    a pseudo-terminal: stdout to a file)."""
    import pexpect

    from tests.conftest import nodecli_cmd, reap, subprocess_env

    out = tmp_path / "out.json"

    def in_a_terminal(*argv: str, env: dict[str, str] | None = None, **_: Any) -> Result:
        cmd = " ".join(nodecli_cmd(*argv)) + f" > {out}"
        term = pexpect.spawn("/bin/sh", ["-c", cmd], dimensions=(24, 120), timeout=60,
                             env=subprocess_env({**(env or {}), "TERM": "xterm"}))
        try:
            term.expect(rb"scanning /: 1 folders, 2 files, 5 B .* entries/s")
            term.expect(pexpect.EOF)
        finally:
            reap(term)
        term.close()
        return Result(term.exitstatus, out.read_text(), "")

    r, _ = walk(certs, in_a_terminal, TREE, "files", "find", "--type", "f", "--resume",
                "tty", "-o", "json")
    assert r.exit_code == 0, r
    assert [x["path"] for x in json.loads(r.stdout)] == ["/s", "/n", "/d/g"]


def test_find_resume_broken_by_the_node_says_how_to_go_on(certs, invoke, home) -> None:
    tree: Tree = {"1": (200, [folder("A", "a"), folder("B", "b")]), "A": (200, []),
                  "B": (200, "not a list")}
    r, _ = walk(certs, invoke, tree, "files", "find", "--resume", "h", "-o", "json")
    assert (r.exit_code, r.stdout) == (ExitCode.REMOTE, ""), r
    assert r.stderr.splitlines()[-1].endswith(
        "the scan's place is saved: the same command goes on (--resume h)"), r
