"""``files find --resume NAME`` over HTTPS against the emulator's generated tree: the
scan of files du (one state machinery), SIGKILLed at the ``scan-save`` point (no
sleeps), resumes to exactly the matches of an uninterrupted find, each once; a state of
a du, or of a find with other filters, is refused (exit 2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests import test_files_du as du
from tests.conftest import EmulatorHandle, nodecli_cmd, reap, subprocess_env
from tests.test_files_du import AK, FOLDERS, SECRET, listings, paging

# du's fixtures, used here as they are (one emulator for this module)
du_node, node, requests = du.du_node, du.node, du.requests

FILTERS = ("--name", "*1*")


def child(home: Path, handle: EmulatorHandle, *args: str, extra: dict[str, str]
          ) -> subprocess.Popen[bytes]:
    env = subprocess_env({"NODECLI_HOME": str(home), "NODECLI_URL": handle.url,
                          "NODECLI_ACCESS_KEY": AK, "NODECLI_PASSWORD": SECRET,
                          "NODECLI_CACERT": handle.ca_file, **extra})
    return subprocess.Popen(nodecli_cmd("files", "find", "/generated", *args), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_find_resumed_after_sigkill_prints_each_match_once(node, invoke, home, pause_point,
                                                           requests):
    paging(node, "numbered:3")
    r = invoke("files", "find", "/generated", *FILTERS, "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    whole = jsonl(r.stdout)
    assert 10 < len(whole) < FOLDERS * 5  # some folders and files match, not all
    requests.clear()
    pause = pause_point("scan-save")
    proc = child(home, node, *FILTERS, "--resume", "f", "-o", "jsonl",
                 extra={**pause.env(), "NODECLI_TEST_SCAN_SAVE_EVERY": "5"})
    try:
        first = pause.wait(proc)  # 5 folders listed: the first snapshot is saved
        assert first is not None
        pause.release(first)
        second = pause.wait(proc)  # 10 listed, the second not saved: killed here
        assert second is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        out = proc.stdout.read() if proc.stdout else b""
        second.close()
    finally:
        reap(proc)
    assert out == b""  # nothing printed before the scan is complete
    scans = home / "state" / "scans"
    saved = json.loads((scans / "f.json").read_bytes())
    assert saved["counts"]["listings"] == 5
    assert saved["options"]["find"]["name"] == "*1*"
    for name in ("f.json", "f.found"):
        assert os.stat(scans / name).st_mode & 0o777 == 0o600
    killed_lists = listings(requests)
    requests.clear()
    r = invoke("files", "find", "/generated", *FILTERS, "--resume", "f", "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert f"scan f resumed: {FOLDERS - 5} more folders listed" in r.stderr
    resumed = jsonl(r.stdout)
    key = [e["path"] for e in resumed]
    assert len(key) == len(set(key))  # no match twice
    assert sorted(resumed, key=lambda e: e["path"]) == sorted(whole, key=lambda e: e["path"])
    resumed_lists = listings(requests)
    assert len(killed_lists) == 10 and len(resumed_lists) == FOLDERS - 5
    # a finished scan prints its matches again, the same
    r = invoke("files", "find", "/generated", *FILTERS, "--resume", "f", "-o", "jsonl")
    assert r.exit_code == 0 and jsonl(r.stdout) == resumed
    assert "scan f finished at" in r.stderr


def test_a_find_resumed_with_other_filters_or_from_a_du_is_refused(node, invoke):
    r = invoke("files", "find", "/generated", "--name", "*1*", "--depth", "1",
               "--resume", "k", "-o", "json")
    assert r.exit_code == 0, r.stderr
    first = json.loads(r.stdout)
    assert first and all(e["path"].count("/") == 2 for e in first)  # --depth 1 kept
    r = invoke("files", "find", "/generated", "--name", "*2*", "--depth", "1",
               "--resume", "k")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.splitlines()[0] == ("nodecli: error: scan k is a files find with other "
                                        "filters (name=*1* depth=1)")
    r = invoke("files", "find", "/generated", "--name", "*1*", "--resume", "k")
    assert r.exit_code == 2 and "scan k is a files find with other filters" in r.stderr
    r = invoke("files", "du", "/generated", "--resume", "k")
    assert r.exit_code == 2 and "nodecli: error: scan k is a files find" in r.stderr
    assert invoke("files", "du", "/generated", "--resume", "d", "--depth", "0").exit_code == 0
    r = invoke("files", "find", "/generated", "--resume", "d")
    assert r.exit_code == 2 and "nodecli: error: scan d is a files du" in r.stderr
    r = invoke("files", "find", "/generated", "--restart")
    assert r.exit_code == 2 and "--restart goes with --resume NAME" in r.stderr
    r = invoke("files", "find", "/generated", "--resume", "../x")
    assert r.exit_code == 2 and "invalid scan name" in r.stderr
    r = invoke("files", "find", "/generated", "--name", "*2*", "--depth", "1",
               "--resume", "k", "--restart", "-o", "json")
    assert r.exit_code == 0 and json.loads(r.stdout) != first


@pytest.mark.parametrize(("words", "missed"), [
    ({}, "not scanned"),  # files du
    ({"gives": "matches", "missed": "not read"}, "not read"),  # files find --resume
])
def test_a_scan_end_names_the_kept_skips_and_counts_the_rest(words, missed):
    """du and find --resume say how a scan ended with one function: the folders kept by
    name, then how many more (find's own copy once left that count out)."""
    import io
    from types import SimpleNamespace

    from nodecli.cli.app import Terminal
    from nodecli.cli.files_du import say_scan_end

    err = io.StringIO()
    result = SimpleNamespace(was_finished=False, resumed=False, path="/d", size=0, files=0,
                             folders=3, skipped=[{"path": "/d/a", "reason": "403"}],
                             skipped_count=2)
    say_scan_end(SimpleNamespace(term=Terminal(_stdout=io.StringIO(), _stderr=err)), result,
                 "s", **words)
    lines = err.getvalue().splitlines()
    assert lines == [f"nodecli: warning: /d/a: {missed} (403)",
                     f"nodecli: warning: and 1 more {missed}"]
    result.skipped_count = 1  # all kept: no count line
    err.truncate(0), err.seek(0)
    say_scan_end(SimpleNamespace(term=Terminal(_stdout=io.StringIO(), _stderr=err)), result,
                 "s", **words)
    assert len(err.getvalue().splitlines()) == 1
