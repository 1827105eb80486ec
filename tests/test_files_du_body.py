"""The ``files du`` command's own lines (mutmut 3 does not mutate a click command's
body), against a scripted node over HTTPS (tests/scripted_server.py): node-user
credentials refused before anything is listed, --dry-run keeps no state, --restart
never discards the place of a scan that is running, and each request (not the whole
scan) within --deadline. Each test was proven against its bug planted by hand
(docs/development.md, "nodecli/cli/files_du.py")."""

from __future__ import annotations

from typing import Any

from nodecli.errors import ExitCode
from tests.conftest import Result
from tests.test_files_hostile import certs
from tests.test_files_walk_hostile import Tree, file, folder, walk

__all__ = ["certs"]

TREE: Tree = {"1": (200, [folder("A", "a"), folder("B", "b"), file("F", "f")]),
              "A": (200, [file("X", "x")]), "B": (200, [file("Y", "y")])}


def test_du_with_node_user_credentials_is_refused_before_any_listing(certs, invoke) -> None:
    r, targets = walk(certs, invoke, TREE, "files", "du", "/",
                      env={"NODECLI_ACCESS_KEY": "", "NODECLI_USER": "admin"})
    assert (r.exit_code, r.stdout) == (ExitCode.USAGE, ""), r
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: files are browsed with an access key or a bearer token: a node "
        "refuses node-user credentials on /files")
    assert targets == []


def test_du_dry_run_keeps_no_place(certs, invoke, home) -> None:
    r, _ = walk(certs, invoke, TREE, "--dry-run", "files", "du", "/", "--resume", "d",
                "-o", "csv")
    assert r.exit_code == 0, r
    assert r.stdout.splitlines() == ["path,size,files,folders,depth", "/,3,3,2,0",
                                     "/a,1,1,0,1", "/b,1,1,0,1"]
    scans = home / "state" / "scans"
    assert not scans.exists() or list(scans.iterdir()) == []


def test_restart_of_a_running_scan_is_refused_and_its_place_kept(certs, invoke, home,
                                                                  pause_point) -> None:
    """A scan held at its second snapshot (scan-save, after 2 folders): a second command
    with --restart is refused as running elsewhere, and the first one's state and
    spool are left as they were."""
    import subprocess

    from tests.conftest import nodecli_cmd, reap, subprocess_env

    pause = pause_point("scan-save")
    scans = home / "state" / "scans"
    seen: dict[str, Any] = {}

    def first_held_then_second(*argv: str, env: dict[str, str] | None = None,
                               **_: Any) -> Result:
        proc = subprocess.Popen(
            nodecli_cmd(*argv, "--resume", "r", "-o", "ncdu"),
            env=subprocess_env({**(env or {}), **pause.env(),
                                "NODECLI_TEST_SCAN_SAVE_EVERY": "1"}),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            first = pause.wait(proc)  # 1 folder listed; its snapshot about to be saved
            assert first is not None
            pause.release(first)
            at = pause.wait(proc)  # 2 listed: the first snapshot is saved, not the second
            assert at is not None
            before = {p.name: p.read_bytes() for p in scans.iterdir()
                      if not p.name.startswith(".")}
            second = invoke(*argv, "--resume", "r", "--restart", "-o", "ncdu", env=env)
            seen["second"] = second
            seen["same"] = before == {p.name: p.read_bytes() for p in scans.iterdir()
                                      if not p.name.startswith(".")}
            seen["before"] = sorted(before)
            proc.kill()
            proc.wait(timeout=60)
            at.close()
        finally:
            reap(proc)
        return seen["second"]

    r, _ = walk(certs, first_held_then_second, TREE, "files", "du", "/")
    assert (r.exit_code, r.stdout) == (ExitCode.ERROR, ""), r
    assert "nodecli: error: scan r is running in another nodecli" in r.stderr, r
    assert seen["before"] == ["r.json", "r.ncdu"] and seen["same"], seen


def test_each_request_of_a_scan_is_within_the_deadline_not_the_whole_scan(certs,
                                                                          invoke) -> None:
    """The root's two pages, each at least 1.05 s late, under --deadline 2s: the scan
    takes over 2 s in all and completes (a scan may take hours; each request is
    bounded, as the deadline's help says of a following command)."""
    tree: Tree = {"1": (200, [file("F", "f")])}
    r, targets = walk(certs, invoke, tree, "--deadline", "2s", "files", "du", "/", "-o", "csv",
                      slow=1.05)
    assert r.exit_code == 0, r
    assert r.stdout.splitlines() == ["path,size,files,folders,depth", "/,1,1,0,0"]
    assert sum("/files/1/files?" in t for t in targets) == 2
