"""``files du`` over HTTPS against the emulator's generated tree: totals equal to a walk
of the same tree, both pagings, the boundaries (--depth 0, --top at exactly N, an empty
folder, a file where a folder was expected, equal sizes), the status line only on a
terminal, and --resume through Ctrl-C and SIGKILL (held at the ``scan-save`` point, no
sleeps): the resumed totals equal an uninterrupted run's, and no folder is listed
twice after the last snapshot."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EmulatorHandle, _start_emulator, nodecli_cmd, reap, subprocess_env

AK, SECRET = "ak-du", "ak-du-secret"
TREE = "fanout=3,depth=3,files=4,seed=11"  # 40 folders (with /generated), 160 files
FOLDERS = 1 + 3 + 9 + 27


@pytest.fixture(scope="module")
def du_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorHandle]:
    """One emulator for the module, over HTTPS: the generated tree at /generated, and
    small folders in memory."""
    from nodecli.emulator.generated import TreeSpec
    from nodecli.emulator.storage import storage_of

    handle = _start_emulator(tmp_path_factory, tls=True)
    try:
        handle.add_access_key(AK, SECRET)
        storage_of(handle.state).generate(TreeSpec.parse(TREE))
        yield handle
    finally:
        handle.server.stop()


@pytest.fixture
def node(du_node: EmulatorHandle, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmulatorHandle]:
    from nodecli.emulator.storage import storage_of

    monkeypatch.setenv("NODECLI_CACERT", du_node.ca_file)
    monkeypatch.setenv("NODECLI_URL", du_node.url)
    monkeypatch.setenv("NODECLI_ACCESS_KEY", AK)
    monkeypatch.setenv("NODECLI_PASSWORD", SECRET)
    st = storage_of(du_node.state)
    before = st.paging
    yield du_node
    st.paging = before


@pytest.fixture
def requests(du_node: EmulatorHandle) -> Iterator[list[str]]:
    """The request lines the module's emulator serves during the test."""
    lines: list[str] = []
    before = du_node.server.access_log
    du_node.server.access_log = lines.append
    yield lines
    du_node.server.access_log = before


def paging(handle: EmulatorHandle, text: str) -> None:
    from nodecli.emulator.generated import Paging
    from nodecli.emulator.storage import storage_of

    storage_of(handle.state).paging = Paging.parse(text)


def folder(handle: EmulatorHandle, path: str, sizes: list[int]) -> None:
    """A folder in memory holding files f000, f001... of these sizes."""
    from nodecli.emulator.storage import storage_of

    st = storage_of(handle.state)
    with handle.state.lock:
        st.ensure(path)
        for i, size in enumerate(sizes):
            st.ensure(f"{path}/f{i:03d}", "file", size)


def walked(handle: EmulatorHandle, path: str) -> dict[str, dict[str, int]]:
    """Totals per folder one level below ``path``, and ``path``'s own, from the
    files helper's walk (another code path than the scan's)."""
    from nodecli.http.client import Auth, open_client
    from nodecli.node.files import resolve, walk

    out: dict[str, dict[str, int]] = {}
    with open_client(handle.endpoint(Auth("basic", AK, SECRET, access_key=AK))) as client:
        top = resolve(client, path)
        out[top.path] = {"size": 0, "files": 0, "folders": 0}
        for entry, depth in walk(client, top):
            first = "/".join(entry.path.split("/")[: top.path.count("/") + 2])
            if depth == 1 and entry.is_folder:
                out[first] = {"size": 0, "files": 0, "folders": 0}
            for key in {top.path, first} if depth > 1 or entry.is_folder else {top.path}:
                if key == first and depth == 1:
                    continue
                if entry.is_folder:
                    out[key]["folders"] += 1
                else:
                    out[key]["files"] += 1
                    out[key]["size"] += entry.size or 0
    return out


def du_json(invoke: Any, *args: str) -> list[dict[str, Any]]:
    r = invoke("files", "du", *args, "-o", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


# -- totals ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["numbered:7", "token:5"])
def test_totals_equal_a_walk_of_the_same_tree_whatever_the_paging(node, invoke, mode):
    paging(node, mode)
    rows = du_json(invoke, "/generated")
    expected = walked(node, "/generated")
    assert {r["path"]: {k: r[k] for k in ("size", "files", "folders")} for r in rows} \
        == expected
    assert [r["path"] for r in rows] == ["/generated", "/generated/dir0000",
                                         "/generated/dir0001", "/generated/dir0002"]
    assert rows[0]["files"] == 160 and rows[0]["folders"] == FOLDERS - 1
    assert [r["depth"] for r in rows] == [0, 1, 1, 1]


def test_depth_0_is_one_row_and_depth_3_every_folder(node, invoke):
    rows = du_json(invoke, "/generated", "--depth", "0")
    assert [(r["path"], r["files"], r["folders"]) for r in rows] == [
        ("/generated", 160, FOLDERS - 1)]
    assert len(du_json(invoke, "/generated", "--depth", "3")) == FOLDERS
    assert len(du_json(invoke, "/generated", "--depth", "2")) == 1 + 3 + 9


def test_top_at_exactly_n_files_then_one_more(node, invoke):
    folder(node, "/du-top/a", [50, 40, 30])
    folder(node, "/du-top/b", [20, 10])
    assert du_json(invoke, "/du-top", "--top", "5") == [
        {"path": p, "size": s} for p, s in [("/du-top/a/f000", 50), ("/du-top/a/f001", 40),
                                            ("/du-top/a/f002", 30), ("/du-top/b/f000", 20),
                                            ("/du-top/b/f001", 10)]]
    assert [r["size"] for r in du_json(invoke, "/du-top", "--top", "4")] == [50, 40, 30, 20]
    assert len(du_json(invoke, "/du-top", "--top", "6")) == 5


def test_equal_sizes_are_ranked_by_path(node, invoke):
    folder(node, "/du-eq/z", [7, 7])
    folder(node, "/du-eq/a", [7])
    top = du_json(invoke, "/du-eq", "--top", "2")
    assert top == [{"path": "/du-eq/a/f000", "size": 7}, {"path": "/du-eq/z/f000", "size": 7}]


def test_an_empty_folder(node, invoke):
    folder(node, "/du-empty/inside", [])
    rows = du_json(invoke, "/du-empty")
    assert rows == [{"path": "/du-empty", "size": 0, "files": 0, "folders": 1, "depth": 0},
                    {"path": "/du-empty/inside", "size": 0, "files": 0, "folders": 0,
                     "depth": 1}]
    r = invoke("files", "du", "/du-empty/inside", "--top", "3")
    assert r.exit_code == 0 and r.stdout == "" and "no files" in r.stderr


def test_a_file_where_a_folder_was_expected(node, invoke):
    folder(node, "/du-file", [4096])
    rows = du_json(invoke, "/du-file/f000")
    assert rows == [{"path": "/du-file/f000", "size": 4096, "files": 1, "folders": 0,
                     "depth": 0}]
    r = invoke("files", "du", "/du-file/f000", "-o", "ncdu")
    assert r.exit_code == 2 and r.stdout == ""
    assert "nodecli: error: /du-file/f000 is a file: ncdu's format holds a folder" in r.stderr


def test_table_and_csv(node, invoke):
    folder(node, "/du-t", [1500, 2500])
    r = invoke("files", "du", "/du-t")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines()[0].split() == ["path", "size", "files", "folders"]
    assert r.stdout.splitlines()[1].split() == ["/du-t", "4.0", "kB", "2", "0"]
    r = invoke("files", "du", "/du-t", "-o", "csv")
    assert r.stdout.splitlines() == ["path,size,files,folders,depth", "/du-t,4000,2,0,0"]


def test_a_path_that_does_not_exist_is_exit_5(node, invoke):
    r = invoke("files", "du", "/nowhere")
    assert r.exit_code == 5 and r.stdout == ""
    assert r.stderr.startswith("nodecli: error: /nowhere: no such file or folder")


# -- --resume: Ctrl-C, SIGKILL, a second scan, another path ----------------------------------


def child(home: Path, node: EmulatorHandle, *args: str, extra: dict[str, str] | None = None,
          ) -> subprocess.Popen[bytes]:
    env = subprocess_env({"NODECLI_HOME": str(home), "NODECLI_URL": node.url,
                          "NODECLI_ACCESS_KEY": AK, "NODECLI_PASSWORD": SECRET,
                          "NODECLI_CACERT": node.ca_file, **(extra or {})})
    return subprocess.Popen(nodecli_cmd("files", "du", "/generated", *args), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)


def listings(lines: list[str]) -> list[str]:
    """The generated folders whose listing started (its first page), in order."""
    from urllib.parse import parse_qsl

    out = []
    for line in lines:
        target = line.split('"')[1].split()[1]
        path, _, query = target.partition("?")
        parts = path.split("/")
        if len(parts) == 4 and parts[1] == "files" and parts[3] == "files" \
                and ("page", "1") in parse_qsl(query) and parts[2].startswith("g"):
            out.append(parts[2])
    return out


def test_resume_after_sigkill_equals_an_uninterrupted_run(node, invoke, home, pause_point,
                                                          requests):
    paging(node, "numbered:3")
    whole = du_json(invoke, "/generated", "--depth", "2", "--top", "3")
    whole_lists = listings(requests)
    assert len(whole_lists) == len(set(whole_lists)) == FOLDERS
    requests.clear()
    pause = pause_point("scan-save")
    extra = {**pause.env(), "NODECLI_TEST_SCAN_SAVE_EVERY": "5"}
    proc = child(home, node, "--depth", "2", "--top", "3", "--resume", "big", "-o", "json",
                 extra=extra)
    try:
        first = pause.wait(proc)  # 5 folders listed: the first snapshot is saved
        assert first is not None
        pause.release(first)
        second = pause.wait(proc)  # 10 listed, the second not saved: killed here
        assert second is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        second.close()
    finally:
        reap(proc)
    state = home / "state" / "scans" / "big.json"
    saved = json.loads(state.read_bytes())
    assert saved["counts"]["listings"] == 5 and saved["finished_at"] is None
    killed_lists = listings(requests)
    requests.clear()
    r = invoke("files", "du", "/generated", "--depth", "2", "--top", "3", "--resume", "big",
               "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == whole
    assert f"scan big resumed: {FOLDERS - 5} more folders listed" in r.stderr
    resumed_lists = listings(requests)
    # the 5 folders of the snapshot are not listed again; the 5 listed after it (lost
    # with the kill) are; every other folder once
    assert len(killed_lists) == 10 and len(resumed_lists) == FOLDERS - 5
    assert sorted(killed_lists[:5] + resumed_lists) == sorted(whole_lists)
    assert set(killed_lists[5:]) <= set(resumed_lists)
    r = invoke("files", "du", "/generated", "--depth", "2", "--top", "3", "--resume", "big",
               "-o", "json")
    assert r.exit_code == 0 and json.loads(r.stdout) == whole
    assert "scan big finished at" in r.stderr and "(--restart scans again)" in r.stderr


def test_ctrl_c_saves_the_place_and_exits_130(node, invoke, home, pause_point):
    whole = du_json(invoke, "/generated")
    pause = pause_point("scan-save")
    proc = child(home, node, "--resume", "cc", "-o", "json",
                 extra={**pause.env(), "NODECLI_TEST_SCAN_SAVE_EVERY": "4"})
    try:
        at = pause.wait(proc)
        assert at is not None
        proc.send_signal(signal.SIGINT)  # in the save: the way out saves it once more
        again = pause.wait(proc)
        at.close()
        assert again is not None
        pause.release(again)
        out, err = proc.communicate(timeout=60)
    finally:
        reap(proc)
    assert proc.returncode == 130 and out == b""
    text = err.decode()
    assert "nodecli: scan of /generated interrupted after 4 folders" in text
    assert "hint: the same command goes on where it stopped (--resume cc)" in text
    saved = json.loads((home / "state" / "scans" / "cc.json").read_bytes())
    assert saved["counts"]["listings"] == 4
    assert os.stat(home / "state" / "scans" / "cc.json").st_mode & 0o777 == 0o600
    r = invoke("files", "du", "/generated", "--resume", "cc", "-o", "json")
    assert r.exit_code == 0 and json.loads(r.stdout) == whole
    assert f"scan cc resumed: {FOLDERS - 4} more folders listed" in r.stderr


def test_a_second_scan_of_one_name_is_refused_while_the_first_runs(node, invoke, home,
                                                                   pause_point):
    pause = pause_point("scan-save")
    proc = child(home, node, "--resume", "one", extra={
        **pause.env(), "NODECLI_TEST_SCAN_SAVE_EVERY": "2"})
    try:
        at = pause.wait(proc)
        assert at is not None
        r = invoke("files", "du", "/generated", "--resume", "one")
        assert r.exit_code == 1 and r.stdout == ""
        assert "nodecli: error: scan one is running in another nodecli" in r.stderr
        other = invoke("files", "du", "/generated", "--resume", "two", "--depth", "0")
        assert other.exit_code == 0, other.stderr
        proc.kill()
        proc.wait(timeout=60)
        at.close()
    finally:
        reap(proc)


def test_a_scan_of_another_path_or_options_is_refused(node, invoke):
    assert invoke("files", "du", "/generated", "--resume", "p", "--depth", "0").exit_code == 0
    r = invoke("files", "du", "/generated/dir0000", "--resume", "p", "--depth", "0")
    assert r.exit_code == 2 and r.stdout == ""
    assert f"nodecli: error: scan p is of /generated on {AK}@{node.url}, not " \
        f"/generated/dir0000 on {AK}@{node.url}" in r.stderr
    assert "--restart" in r.stderr
    r = invoke("files", "du", "/generated", "--resume", "p", "--depth", "1")
    assert r.exit_code == 2 and "scan p was started with --depth 0 --top 0" in r.stderr
    r = invoke("files", "du", "/generated/dir0000", "--resume", "p", "--restart",
               "--depth", "0", "-o", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["path"] == "/generated/dir0000"
    r = invoke("files", "du", "/generated", "--restart")
    assert r.exit_code == 2 and "--restart goes with --resume NAME" in r.stderr


# -- the status line ---------------------------------------------------------------------------


def test_the_status_line_is_on_a_terminal(node, home, tmp_path):
    """In a terminal, stderr shows the scan's counts as it goes (stdout, a file, only
    the result)."""
    import pexpect

    env = subprocess_env({"NODECLI_HOME": str(home), "NODECLI_URL": node.url,
                          "NODECLI_ACCESS_KEY": AK, "NODECLI_PASSWORD": SECRET,
                          "NODECLI_CACERT": node.ca_file, "TERM": "xterm"})
    out = tmp_path / "out.json"
    cmd = nodecli_cmd("files", "du", "/generated", "-o", "json")
    term = pexpect.spawn("/bin/sh", ["-c", " ".join(cmd) + f" > {out}"], env=env,
                         dimensions=(24, 120), timeout=60)
    try:
        term.expect(rb"scanning /generated: \d+ folders, \d+ files, [0-9.]+ \w+ .* entries/s")
        term.expect(pexpect.EOF)
    finally:
        reap(term)
    assert json.loads(out.read_text())[0]["files"] == 160


def test_no_status_line_in_a_pipe(node, invoke):
    r = invoke("files", "du", "/generated", "-o", "json")
    assert r.exit_code == 0 and r.stderr == ""
    assert json.loads(r.stdout)[0]["files"] == 160


def test_a_folder_the_token_may_not_list_is_named_and_exit_1(node, invoke, monkeypatch):
    """The token's user holds list on dir0001 but only read on dir0002: du counts the
    rest, names that folder, exits 1 (as files find and tree do)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.emulator.storage import Permission, storage_of
    from nodecli.tokens.wire import create_token

    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505 - a test key, fast
    ak = node.state.access_keys[AK]
    ak.token_verification_key = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    st = storage_of(node.state)
    st.permissions["p-l"] = Permission("p-l", "g.1", "user", "u-du", ["list", "read"])
    st.permissions["p-r"] = Permission("p-r", "g.2", "user", "u-du", ["read"])
    try:
        monkeypatch.delenv("NODECLI_PASSWORD")
        monkeypatch.setenv("NODECLI_BEARER", create_token(key, AK, "u-du", role="user"))
        r = invoke("files", "du", "/generated", "-o", "json")
        assert r.exit_code == 1, r
        rows = {x["path"]: (x["files"], x["folders"]) for x in json.loads(r.stdout)}
        # dir0002 is a folder of /generated; no row: nothing of it was read
        assert rows == {"/generated": (4 + 12 + 36, 2 + 3 + 9),
                        "/generated/dir0001": (4 + 12 + 36, 3 + 9)}
        warning, error = r.stderr.splitlines()
        assert warning.startswith("nodecli: warning: /generated/dir0002: not scanned "
                                  "(not listed: GET ")
        assert "HTTP 403" in warning
        assert error == ("nodecli: error: 1 folder(s) could not be scanned; what they hold "
                         "is not counted above")
    finally:
        del st.permissions["p-l"], st.permissions["p-r"]
        ak.token_verification_key = None


def test_ncdu_reads_what_files_du_writes_from_the_node(node, invoke, tmp_path):
    """-o ncdu over HTTPS, read by Debian's real ncdu: every folder and file of the
    tree, the sizes nodecli counted."""
    from tests.test_files_du_ncdu import ncdu_binary, reexport

    ncdu = ncdu_binary()
    paging(node, "token:5")
    r = invoke("files", "du", "/generated", "-o", "ncdu")
    assert r.exit_code == 0 and r.stderr == ""
    export = tmp_path / "node.ncdu"
    export.write_bytes(r.stdout.encode())
    theirs = reexport(ncdu, export, tmp_path)

    def count(item: Any) -> tuple[int, int, int]:
        if isinstance(item, dict):
            return 1, 0, item.get("asize", 0)
        files = folders = size = 0
        for child in item[1:]:
            f, d, s = count(child)
            files, folders, size = files + f, folders + d + isinstance(child, list), size + s
        return files, folders, size

    rows = du_json(invoke, "/generated", "--depth", "0")
    assert theirs[3][0]["name"] == "/generated"
    assert count(theirs[3]) == (rows[0]["files"], rows[0]["folders"], rows[0]["size"])
    assert [c[0]["name"] for c in theirs[3][1:] if isinstance(c, list)] == [
        "dir0000", "dir0001", "dir0002"]
