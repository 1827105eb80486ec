"""``files du -o ncdu`` read by Debian's real ncdu: ``ncdu -f FILE -o OUT`` imports the
export and writes it again (what ncdu understood, entry by entry), and ``ncdu -f FILE``
in a pseudo-terminal shows the totals nodecli counted. Without ncdu these tests are
skipped with the reason; under ``CI=true`` they fail (.ci/run installs it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nodecli.node.files_scan import Scan
from tests.test_files_scan import Tree


def ncdu_binary() -> str:
    found = shutil.which("ncdu")
    if found is None:
        reason = "ncdu is not installed (apt-get install ncdu)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}: CI must have it")
        pytest.skip(reason)
    return found


def reexport(ncdu: str, path: Path, tmp_path: Path) -> Any:
    """What ncdu read from ``path``: its own export of it (ncdu exits 0 even on a file it
    cannot parse, saying so on stderr, so that is checked too, and its export of what it
    read before the error would not be JSON)."""
    out = tmp_path / "again.json"
    proc = subprocess.run([ncdu, "-f", str(path), "-o", str(out)], capture_output=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    # (its progress goes to stderr too: "\r/path ... 31 files")
    assert proc.returncode == 0 and not re.search(rb"Line \d+ byte \d+", proc.stderr), \
        proc.stderr
    return json.loads(out.read_bytes())


def shape(item: Any) -> Any:
    """An ncdu item without what ncdu leaves out when 0 or adds of its own."""
    if isinstance(item, dict):
        return (item["name"], item.get("asize", 0), bool(item.get("read_error")))
    return [shape(item[0]), *sorted((shape(c) for c in item[1:]), key=repr)]


def test_ncdu_reads_the_export_entry_by_entry(tmp_path: Path) -> None:
    ncdu = ncdu_binary()
    names = {"plain": 1, "é ü 漢字": 22, 'quote"back\\slash': 333, "tab\there": 4,
             "new\nline": 5, "bell\x07": 6, "emoji 🎉": 7, "lone \udc80": 8}
    spec = {"a": dict(names), "empty": {}, "deep": {"x": {"y": {"z": 4096}}},
            **{f"f{i}": i for i in range(3)}}
    tree = Tree(spec)
    gone = next(e["id"] for e in tree.folders[tree.root_id] if e["name"] == "deep")
    tree.folders[tree.root_id].append({"id": "nowhere", "name": "vanished",
                                       "type": "folder"})
    result = Scan(tree.list_folder, tree.root(), ncdu=True).run()
    assert result.ncdu is not None
    raw = result.ncdu.read()
    result.ncdu.close()
    export = tmp_path / "node.ncdu"
    export.write_bytes(raw)
    ours = json.loads(raw)
    theirs = reexport(ncdu, export, tmp_path)
    assert theirs[:2] == [1, 2]
    assert shape(theirs[3]) == shape(ours[3])
    found = {c[0]["name"] for c in theirs[3][1:] if isinstance(c, list)}
    assert found == {"a", "empty", "deep", "vanished"} and gone


def test_ncdu_shows_the_totals_nodecli_counted(tmp_path: Path) -> None:
    """In a terminal, ncdu's footer: the apparent size and the items (files and
    folders below the root) it added up from the export."""
    ncdu = ncdu_binary()
    import pexpect

    spec = {"a": {"x": 4096, "y": 2048}, "b": {"c": {"z": 4096}}, "w": 0}
    result = Scan(Tree(spec).list_folder, Tree(spec).root(), ncdu=True).run()
    assert (result.size, result.files, result.folders) == (10240, 4, 3)
    assert result.ncdu is not None
    export = tmp_path / "node.ncdu"
    export.write_bytes(result.ncdu.read())
    result.ncdu.close()
    child = pexpect.spawn(ncdu, ["--color", "off", "-f", str(export)], dimensions=(24, 100),
                          env={"TERM": "xterm", "PATH": os.environ.get("PATH", "")},
                          encoding="utf-8", timeout=60)
    try:
        esc = r"(?:\x1b\[[0-9;]*[a-zA-Z]|\x1b\(B)*"
        child.expect(rf"Apparent size:{esc}\s*{esc}([0-9.]+ \w+){esc}\s*{esc}Items:{esc}\s*"
                     rf"{esc}(\d+)")
        size, items = child.match.group(1), child.match.group(2)
        assert (size, int(items)) == ("10.0 KiB", 7)
        assert re.search(r"/data", child.before)
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.close(force=True)
