"""``files find`` when a folder below PATH cannot be listed (HTTP 403: the token's user
holds read but not list on it): with or without ``--resume`` the same matches, the same
folder named, exit 1; a resumed find, SIGKILLed before and after the refused listing was
saved, neither names it twice nor loses the folders listed after it."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import test_files_du as du
from tests.conftest import EmulatorHandle, nodecli_cmd, reap, subprocess_env
from tests.test_files_du import AK, listings, paging

# du's fixtures, used here as they are (one emulator for this module)
du_node, node, requests = du.du_node, du.node, du.requests

FILTERS = ("--name", "*1*")
# dir0000 and dir0002 (13 folders each) may be listed, dir0001 only read: in the order
# a scan goes, 1 + 13 listings, the refusal, then 13 more
REFUSED = "/generated/dir0001"
LISTED = 1 + 13 + 13


@pytest.fixture
def bearer(node: EmulatorHandle, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A bearer token whose user holds list on dir0000 and dir0002, read on dir0001."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.emulator.storage import Permission, storage_of
    from nodecli.tokens.wire import create_token

    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)  # noqa: S505 - a test key, fast
    ak = node.state.access_keys[AK]
    ak.token_verification_key = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    st = storage_of(node.state)
    held = {"p-0": ("g.0", ["list", "read"]), "p-1": ("g.1", ["read"]),
            "p-2": ("g.2", ["list", "read"])}
    for pid, (fid, levels) in held.items():
        st.permissions[pid] = Permission(pid, fid, "user", "u-find", levels)
    token = create_token(key, AK, "u-find", role="user")
    monkeypatch.delenv("NODECLI_PASSWORD")
    monkeypatch.setenv("NODECLI_BEARER", token)
    try:
        yield token
    finally:
        for pid in held:
            del st.permissions[pid]
        ak.token_verification_key = None


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def by_path(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda e: e["path"])


def killed_after(saves: int, home: Path, pause_point: Any) -> dict[str, Any]:
    """``files find --resume r`` in a child saving every 5 folders, SIGKILLed as it is
    about to save the snapshot after ``saves`` of them: the state it left."""
    pause = pause_point("scan-save")
    env = subprocess_env({"NODECLI_HOME": str(home), "NODECLI_TEST_SCAN_SAVE_EVERY": "5",
                          **pause.env()})
    proc = subprocess.Popen(nodecli_cmd("files", "find", "/generated", *FILTERS, "--resume",
                                        "r", "-o", "jsonl"),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        for _ in range(saves):
            at = pause.wait(proc)
            assert at is not None, proc.communicate()
            pause.release(at)
        at = pause.wait(proc)
        assert at is not None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        out = proc.stdout.read() if proc.stdout else b""
        at.close()
    finally:
        reap(proc)
    assert out == b""
    return json.loads((home / "state" / "scans" / "r.json").read_bytes())


def test_a_refused_folder_is_the_same_with_and_without_resume_and_across_kills(
        node, invoke, home, pause_point, requests, bearer):
    paging(node, "numbered:3")
    plain = invoke("files", "find", "/generated", *FILTERS, "-o", "jsonl")
    assert plain.exit_code == 1, plain
    matches = by_path(jsonl(plain.stdout))
    assert REFUSED in [m["path"] for m in matches]  # named in its parent's listing
    assert any(m["path"].startswith("/generated/dir0002/") for m in matches)
    warning, error = plain.stderr.splitlines()
    assert warning.startswith(f"nodecli: warning: {REFUSED}: not read (")
    assert warning.endswith("HTTP 403: listing folder g.1 needs the list level)")
    assert error == ("nodecli: error: 1 folder(s) could not be read; what they hold is "
                     "not listed above")
    assert listings(requests).count("g.1") == 1 and len(listings(requests)) == LISTED + 1

    # the same with --resume, in one run
    resumed = invoke("files", "find", "/generated", *FILTERS, "--resume", "once", "-o",
                     "jsonl")
    assert resumed.exit_code == 1, resumed
    assert by_path(jsonl(resumed.stdout)) == matches
    assert resumed.stderr.splitlines() == [warning, error]

    # killed as the refusal (the 15th folder) is about to be saved (saved at 5 and 10),
    # then after it was (resumed from 10: saved at 15 with the refusal, killed at 20)
    requests.clear()
    saved = killed_after(2, home, pause_point)
    assert (saved["counts"]["listings"], saved["counts"]["skipped"]) == (10, 0)
    saved = killed_after(1, home, pause_point)
    assert (saved["counts"]["listings"], saved["counts"]["skipped"]) == (14, 1)
    assert saved["skipped"] == [{"path": REFUSED, "reason": saved["skipped"][0]["reason"]}]
    # the first child's refusal was lost with it: asked again by the second
    assert listings(requests).count("g.1") == 2
    requests.clear()
    last = invoke("files", "find", "/generated", *FILTERS, "--resume", "r", "-o", "jsonl")
    assert last.exit_code == 1, last
    assert f"scan r resumed: {LISTED - 14} more folders listed" in last.stderr
    assert last.stderr.splitlines()[1:] == [warning, error]
    rows = jsonl(last.stdout)
    assert len({m["path"] for m in rows}) == len(rows)  # none twice
    assert by_path(rows) == matches  # nothing after the refused folder lost
    lists = listings(requests)
    assert "g.1" not in lists and len(lists) == LISTED - 14 and lists[-1].startswith("g.2")
