"""The transfer displays of issue 35: one rate style, the expected total in ``transfer
show``, the ETA kept on an 80-column watch line, the last state after Ctrl-C, and
``transfer top``'s totals kept by its failed-only filter."""

from __future__ import annotations

import json
import re
import sys
import time

from nodecli.cli.transfers import progress_line, row
from nodecli.render import fit_line
from nodecli.render.top import top_lines
from tests import conventions_world

realistic = conventions_world.realistic  # the fixtures, by name
world = conventions_world.world

RUNNING = {
    "id": "3f2c8a4e-0b1d-4c57-9e2a-7d8f6b5c4a31", "status": "running",
    "direction": "receive", "remote_host": conventions_world.LONG_HOST,
    "bytes_transferred": 38_000_000_000, "bytes_expected": 3 * 10**12,
    "current_rate_kbps": 10**7, "target_rate_kbps": 10**7,
    "files_completed": 155, "files_expected": 12_345,
}


def test_one_rate_style_in_tables_lines_and_top():
    assert row(RUNNING)["rate"] == "10.0 Gbps/10.0 Gbps"
    assert row({**RUNNING, "current_rate_kbps": 0, "target_rate_kbps": 800})["rate"] == \
        "0 kbps/800 kbps"
    assert row({**RUNNING, "current_rate_kbps": 9999})["rate"].startswith("10.0 Mbps/")
    line = progress_line(RUNNING, 12)
    assert "10.0 Gbps/10.0 Gbps" in line
    screen = "\n".join(top_lines([RUNNING], width=120, height=20, now=time.time()))
    assert "10.0 Gbps/10.0 Gbps" in screen and "10.0 Gbps ·" in screen
    for text in (line, screen):
        assert not re.search(r"\d[kMG]\b|\dk/|Mbps?/\d|\dM/", text), text


def test_the_eta_stays_on_an_80_column_watch_line():
    line = fit_line(progress_line(RUNNING, 12), 80 - 2)  # as the live status draws it
    assert "ETA " in line, line
    assert RUNNING["id"] in line and "38.0 GB of 3.0 TB" in line


def test_top_failed_only_keeps_the_nodes_totals():
    now = time.time()
    ended = [{"id": f"e{i}", "status": "completed" if i < 3 else "failed",
              "end_time_usec": int((now - 60) * 1e6), "error_code": 0 if i < 3 else 13}
             for i in range(5)]
    transfers = [RUNNING, *ended]
    both = [top_lines(transfers, width=120, height=30, now=now, failed_only=flag)[0]
            for flag in (False, True)]
    assert both[0] == both[1]
    assert "1 active" in both[0] and "3 ended, 2 failed" in both[0]


def test_transfer_show_says_the_bytes_expected(realistic, invoke):
    tid = realistic["transfers"][0]
    r = invoke("transfer", "show", tid, env=realistic["env"])
    assert r.exit_code == 0, r
    fields = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in r.stdout.splitlines())
    assert fields["bytes expected"] == "3.0 TB"
    assert fields["rate (now/target)"] == "10.0 Gbps/10.0 Gbps"


def test_ctrl_c_on_watch_prints_the_last_state(realistic, invoke):
    """In a real pty at 80 columns: the watch draws its live lines; Ctrl-C leaves the
    last state on the screen, ETA included, then the message, exit 130."""
    import pexpect

    from tests.conftest import REPO_ROOT, subprocess_env

    tid = realistic["transfers"][0]
    env = subprocess_env({**realistic["env"], "TERM": "xterm"})
    env.pop("COLUMNS", None)
    child = pexpect.spawn(sys.executable, ["-m", "nodecli", "transfer", "watch", tid,
                                           "--interval", "0.2"],
                          env=env, cwd=str(REPO_ROOT), encoding="utf-8", timeout=30,
                          dimensions=(24, 80))
    try:
        child.expect("watching 1 transfer")  # drawn: the program has a state to show
        child.sendintr()
        child.expect(pexpect.EOF)
        tail = child.before
    finally:
        child.close(force=True)
    assert child.exitstatus == 130
    clean = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", tail).replace("\r\n", "\n")
    # the terminal's own echo of the interrupt ("^C") lands wherever the live display
    # was when it came, on a busy machine in the middle of a line: what the program
    # printed after it is the last state, then the message
    said = clean.rfind("stopped watching")
    after = clean.rfind("^C", 0, said) + 1  # 0 when the terminal echoes nothing
    state = clean.find(tid, after, said)
    assert said > 0 and state >= 0, clean
    assert clean[said:].startswith("stopped watching; the transfers go on on the node\n"), clean
    assert "ETA " in clean[state:said].split("\n")[0], clean


def test_transfer_list_json_keeps_the_nodes_numbers(realistic, invoke):
    r = invoke("transfer", "list", "-o", "json", env=realistic["env"])
    sizes = sorted(t["bytes_expected"] for t in json.loads(r.stdout))
    assert sizes == [10**6, 10**12, 2 * 10**12, 3 * 10**12]
