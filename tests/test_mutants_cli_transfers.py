"""``nodecli transfer`` (nodecli/cli/transfers.py) at the points mutation testing found
unwatched: ``show`` field by field, ``list`` in every format, ``list --resume`` and
``--checkpoint`` over several pages (what is recorded, with and without ``--active``),
``watch``'s last lines and the words it ends with, its live lines on a terminal, and the
elapsed time of a progress line at the edges of the node's times. Over HTTPS against a
scripted node (the answers the emulator never gives: a transfer with any field, pages
whose tokens the test names)."""

from __future__ import annotations

import json
import re
import time

import pytest

from nodecli.cli.transfers import progress_line
from tests.scripted_server import RouteNode, certificates

ADMIN = {"NODECLI_USER": "admin", "NODECLI_PASSWORD": "pw"}
ERR = "nodecli: error: "

FAILED = {"id": "t1", "status": "failed", "direction": "send", "remote_host": "h",
          "user_id": "u", "bytes_transferred": 1500, "bytes_expected": 3000,
          "current_rate_kbps": 10, "target_rate_kbps": 20, "files_completed": 1,
          "files_expected": 2, "start_time_usec": 1_700_000_000_000_000,
          "end_time_usec": 1_700_000_060_000_000, "error_code": 13, "error_desc": "boom"}


@pytest.fixture(scope="module")
def transfer_node(tmp_path_factory):
    node = RouteNode(certificates(tmp_path_factory.mktemp("certs")))
    yield node
    node.close()


@pytest.fixture
def node(transfer_node):
    return transfer_node.reset()


def _run(invoke, node, *args: str):
    return invoke("transfer", *args, "--url", node.server.url(), "--cacert", node.certs[0],
                  env=ADMIN)


def _answer(node, *transfers: dict) -> None:
    """GET /ops/transfers/ID answers each transfer as given."""
    for t in transfers:
        node.routes[("GET", f"/ops/transfers/{t['id']}")] = [(200, t, [])]


# -- show, list: a transfer field by field, in each format -------------------------------

SHOWN = ("id                 t1\n"
         "status             failed\n"
         "direction          send\n"
         "remote host        h\n"
         "user               u\n"
         "bytes              1.5 kB\n"
         "bytes expected     {expected}\n"
         "rate (now/target)  10 kbps/20 kbps\n"
         "files              {files}\n"
         "started            2023-11-14T22:13:20Z\n"
         "error              {error}\n")


@pytest.mark.parametrize(("change", "expected", "files", "error"), [
    ({}, "3.0 kB", "1/2", "13: boom"),
    # no error (0 in any spelling), an expected total that is no number, files unknown
    ({"error_code": 0, "bytes_expected": True, "files_expected": None}, "-", "1", "-"),
    ({"error_code": "0", "bytes_expected": "3000"}, "-", "1/2", "-"),
    ({"error_code": "", "error_desc": None}, "3.0 kB", "1/2", "-"),
    ({"error_code": 7, "error_desc": None}, "3.0 kB", "1/2", "7:"),
])
def test_show_says_each_field_once_in_its_place(invoke, node, change, expected, files,
                                                error):
    _answer(node, {**FAILED, **change})
    r = _run(invoke, node, "show", "t1")
    assert (r.exit_code, r.stderr) == (0, ""), r
    assert r.stdout == SHOWN.format(expected=expected, files=files, error=error)


def _pages(node, *pages: list[dict], first: str = "/ops/transfers") -> None:
    """The pages of GET /ops/transfers: the first at ``first`` (any query), each linking
    to the next by the token ``tN`` (N: the page after it), the last to an empty page
    that links to a token of its own (``tN`` again: the present)."""
    node.routes[("GET", first)] = [(200, pages[0], node.link("/ops/transfers?iteration_token=t1"))]
    for n, page in enumerate([*pages[1:], []], 1):
        node.routes[("GET", f"/ops/transfers?iteration_token=t{n}")] = [
            (200, page, node.link(f"/ops/transfers?iteration_token=t{n + 1}"))]


HOUR_AGO = int((time.time() - 3600) * 1e6)
SECOND = {**FAILED, "id": "t2", "status": "completed", "error_code": 0,
          "files_expected": None, "end_time_usec": None}


def test_list_as_a_table_and_as_the_nodes_objects(invoke, node):
    _pages(node, [FAILED, SECOND])
    r = _run(invoke, node, "list")
    assert (r.exit_code, r.stderr) == (0, ""), r
    assert r.stdout.splitlines() == [
        "id  status     direction  remote host  user   bytes  rate (now/target)  files  "
        "started               error",
        "t1  failed     send       h            u     1.5 kB    10 kbps/20 kbps    1/2  "
        "2023-11-14T22:13:20Z  13: boom",
        "t2  completed  send       h            u     1.5 kB    10 kbps/20 kbps      1  "
        "2023-11-14T22:13:20Z  -"]
    r = _run(invoke, node, "list", "-o", "jsonl")
    assert [json.loads(line) for line in r.stdout.splitlines()] == [FAILED, SECOND]
    r = _run(invoke, node, "list", "-o", "csv")  # the json names, the node's numbers
    assert r.stdout.splitlines() == [
        "id,status,direction,remote_host,user_id,bytes_transferred,bytes_expected,"
        "current_rate_kbps,target_rate_kbps,files_completed,files_expected,"
        "start_time_usec,end_time_usec,error_code,error_desc",
        "t1,failed,send,h,u,1500,3000,10,20,1,2,1700000000000000,1700000060000000,13,boom",
        "t2,completed,send,h,u,1500,3000,10,20,1,,1700000000000000,,0,boom"]
    recent = {"id": "t9", "status": "running", "start_time_usec": HOUR_AGO}
    _pages(node.reset(), [FAILED, recent])
    r = _run(invoke, node, "list", "--since", "2h", "-o", "jsonl")  # a time, not 2 h
    assert [json.loads(line) for line in r.stdout.splitlines()] == [recent]


def test_list_on_a_narrow_terminal_leaves_columns_out_but_wide_and_empty(invoke, node):
    from tests.conftest import nodecli_cmd, pty_to_the_end, subprocess_env

    env = subprocess_env(dict(ADMIN, TERM="xterm", NODECLI_CACERT=node.certs[0]))
    del env["COLUMNS"]
    said = {}
    for fmt in ("table", "wide"):
        _pages(node.reset(), [FAILED])
        status, said[fmt] = pty_to_the_end(nodecli_cmd("transfer", "list", "-o", fmt, "--url",
                                                        node.server.url()), env,
                                           dimensions=(24, 60))
        assert status == 0, said
    assert said["table"].startswith("left out to fit the terminal: "), said
    assert "left out" not in said["wide"] and "2023-11-14T22:13:20Z" in said["wide"], said
    _pages(node.reset(), [])
    r = _run(invoke, node, "list")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "no transfers\n")


# -- list --resume / --checkpoint: what is recorded after the output -------------------------

A, B, C = ({"id": x, "status": "completed"} for x in "abc")


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_resume_records_where_the_last_page_ended(invoke, node, fmt):
    """Three pages, then an empty one that names the present (t4): a second run asks
    from t4 and prints nothing new."""
    _pages(node, [A], [B], [C])
    r = _run(invoke, node, "list", "--resume", "r", "-o", fmt)
    assert (r.exit_code, r.stderr) == (0, ""), r
    if fmt == "json":
        assert json.loads(r.stdout) == [A, B, C]
    else:
        assert [line.split()[:2] for line in r.stdout.splitlines()] == [
            ["id", "status"], ["a", "completed"], ["b", "completed"], ["c", "completed"]]
    node.reset()
    node.routes[("GET", "/ops/transfers")] = [(200, [], [])]
    r = _run(invoke, node, "list", "--resume", "r", "-o", "json")
    assert (r.exit_code, r.stdout) == (0, "[]\n"), r
    assert node.asked() == [("GET", "/ops/transfers?count=100&iteration_token=t4")]


def test_a_checkpoint_file_and_active_keep_positions_of_their_own(invoke, node, tmp_path):
    ck = tmp_path / "ck.json"
    _pages(node, [A], [B])
    r = _run(invoke, node, "list", "--checkpoint", str(ck), "-o", "jsonl")
    assert (r.exit_code, [json.loads(x)["id"] for x in r.stdout.splitlines()]) == (0, ["a", "b"])
    assert ck.is_file()
    node.reset()
    node.routes[("GET", "/ops/transfers")] = [(200, [], [])]
    r = _run(invoke, node, "list", "--checkpoint", str(ck), "-o", "jsonl")
    assert (r.exit_code, r.stdout) == (0, "")
    assert node.asked() == [("GET", "/ops/transfers?count=100&iteration_token=t3")]
    # --resume NAME: the running ones have a position of their own, asked as such
    _pages(node.reset(), [A], [B])
    assert _run(invoke, node, "list", "--resume", "r", "-o", "jsonl").exit_code == 0
    node.reset()
    _pages(node, [C])
    r = _run(invoke, node, "list", "--active", "--resume", "r", "-o", "jsonl")
    assert (r.exit_code, r.stdout) == (0, json.dumps(C, separators=(",", ":")) + "\n"), r
    assert node.asked()[0] == ("GET", "/ops/transfers?count=100&active_only=true")
    node.reset()
    node.routes[("GET", "/ops/transfers")] = [(200, [], [])]
    r = _run(invoke, node, "list", "--active", "--resume", "r", "-o", "jsonl")
    assert node.asked() == [
        ("GET", "/ops/transfers?count=100&active_only=true&iteration_token=t2")]


# -- watch: the last lines, the words it ends with ---------------------------------------------

def test_watch_prints_each_last_state_and_how_it_ended(invoke, node):
    done = {"id": "t3", "status": "completed", "files_completed": 4, "files_expected": 4,
            "bytes_transferred": 2000, "bytes_expected": 2000,
            "start_time_usec": 1_700_000_000_000_000, "end_time_usec": 1_700_000_060_000_000}
    _answer(node, done, {"id": "t2", "status": "cancelled"},
            {"id": "t4", "status": "failed", "error_code": 5},
            {"id": "t5", "status": "failed", "error_code": 9, "error_desc": "disk full"})
    r = _run(invoke, node, "watch", "t3")
    assert (r.exit_code, r.stdout) == (0, ""), r
    assert r.stderr == ("t3 completed 2.0 kB of 2.0 kB, -/-, 4/4 files, 1m\n"
                        "1 transfer(s) completed\n")
    r = _run(invoke, node, "watch", "t3", "-o", "json")  # one: the object
    assert (r.exit_code, json.loads(r.stdout)) == (0, done), r
    r = _run(invoke, node, "watch", "t3", "t3", "-o", "json")  # more: a list
    assert (json.loads(r.stdout), r.stderr) == ([done, done], "2 transfer(s) completed\n")
    r = _run(invoke, node, "watch", "t3", "t2")
    assert (r.exit_code, r.stderr.splitlines()[-1]) == (7, f"{ERR}transfer t2 was cancelled")
    r = _run(invoke, node, "watch", "t2", "t4", "t5")  # a failure wins, the first one
    assert (r.exit_code, r.stderr.splitlines()[-1]) == (
        1, f"{ERR}transfer t4 failed: error 5: no description")
    r = _run(invoke, node, "watch", "t5")
    assert (r.exit_code, r.stderr.splitlines()[-1]) == (
        1, f"{ERR}transfer t5 failed: error 9: disk full")


def test_watch_on_a_terminal_draws_a_line_per_transfer_and_a_count(node):
    """Each state as it comes, on a real terminal: a line per transfer above
    ``watching N transfer(s), K running``."""
    from tests.conftest import nodecli_cmd, pty_to_the_end, subprocess_env

    node.routes[("GET", "/ops/transfers/a")] = [
        (200, {"id": "a", "status": "running", "files_completed": 1}, []),
        (200, {"id": "a", "status": "completed", "files_completed": 2}, [])]
    _answer(node, {"id": "b", "status": "completed", "files_completed": 3})
    env = subprocess_env(dict(ADMIN, TERM="xterm", NODECLI_CACERT=node.certs[0]))
    status, said = pty_to_the_end(nodecli_cmd("transfer", "watch", "a", "b", "--url",
                                              node.server.url(), "--interval", "0.05"), env)
    assert status == 0, said
    clean = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", said).replace("\r", "")
    first = re.search(r"a running 0 B, -/-, 1 files, \d+s\nb completed 0 B, -/-, 3 files, "
                      r"\d+s\n\S+ watching 2 transfer\(s\), 1 running · ", clean)
    assert first, clean
    assert re.search(r"a completed 0 B, -/-, 2 files, \d+s\nb completed 0 B, -/-, 3 files, "
                     r"\d+s\n\S+ watching 2 transfer\(s\), 0 running · ", clean), clean
    assert clean.endswith("a completed 0 B, -/-, 2 files, 0s\nb completed 0 B, -/-, 3 files, "
                          "0s\n2 transfer(s) completed\n"), clean


# -- a progress line's elapsed time: the node's own times, within bounds --------------------


@pytest.mark.parametrize(("start", "end", "elapsed"), [
    (1_000, 60_001_000, "1m"),  # the node's start and end
    (1, 60_000_001, "1m"),  # the smallest start there is
    (0, 60_000_000, "30s"),  # no start: the watch's own time
    (2**62, 2**62 + 60_000_000, "30s"),  # past any real time: the watch's
    (2**62 - 1, None, "0s"),  # the last start there is; no end: now, before it
    ("hour ago", None, "1h"),  # running: until now
    ("hour ago", "hour ago", "1h"),  # an end that is not after the start: now
    ("hour ago", True, "1h"),
    (1_000_000, 2**62, r"2\d{4}d( \d+h)?"),  # an end past any real time: now (not ages)
])
def test_the_elapsed_time_is_the_nodes_when_it_can_be(start, end, elapsed):
    hour_ago = int((time.time() - 3600) * 1e6)
    start, end = (hour_ago if x == "hour ago" else x for x in (start, end))
    line = progress_line({"id": "x", "status": "completed", "start_time_usec": start,
                          "end_time_usec": end}, 30)
    assert re.fullmatch(elapsed, line.rsplit(", ", 1)[1]), line


def test_watch_waits_the_interval_given_between_polls(invoke, node, monkeypatch):
    from nodecli import interrupt

    waited: list[float] = []
    monkeypatch.setattr(interrupt, "wait", lambda seconds=None: waited.append(seconds))
    node.routes[("GET", "/ops/transfers/a")] = [(200, {"id": "a", "status": "running"}, []),
                                               (200, {"id": "a", "status": "completed"}, [])]
    r = _run(invoke, node, "watch", "a", "--interval", "0.3")
    assert (r.exit_code, waited) == (0, [0.3]), r


@pytest.mark.parametrize(("change", "shown"), [
    ({}, "1.0 kB of 2.0 kB, ETA 1s, 8 kbps/-"),  # 1000 bytes left at 1000 bytes a second
    ({"bytes_transferred": 2000, "current_rate_kbps": 0.001}, "2.0 kB of 2.0 kB, ETA 0s, "
                                                              "0.001 kbps/-"),
    ({"status": "completed"}, "1.0 kB of 2.0 kB, 8 kbps/-"),  # no ETA once ended
    ({"bytes_transferred": None}, "0 B, 8 kbps/-"),  # no total without what is done
    ({"bytes_expected": 0, "bytes_transferred": 0}, "0 B, 8 kbps/-"),
    ({"bytes_expected": 1, "bytes_transferred": 0}, "0 B of 1 B, ETA 0s, 8 kbps/-"),
])
def test_a_progress_line_says_the_total_and_an_eta_while_running(change, shown):
    t = {"id": "x", "status": "running", "bytes_expected": 2000, "bytes_transferred": 1000,
         "current_rate_kbps": 8, **change}
    assert progress_line(t, 0) == f"x {t['status']} {shown}, ? files, 0s"


@pytest.mark.parametrize(("counts", "shown"), [
    ({}, "? files"), ({"files_completed": 0}, "0 files"),
    ({"files_expected": 4}, "?/4 files"), ({"files_completed": 3, "files_expected": 4},
                                          "3/4 files"),
])
def test_a_file_count_the_node_left_out_is_a_question_mark(counts, shown):
    t = {"id": "x", "status": "running", **counts}
    assert progress_line(t, 0) == f"x running 0 B, -/-, {shown}, 0s"


def test_a_watch_past_its_timeout_names_what_still_runs(invoke, node, monkeypatch):
    """The watch's clock jumps 100 s at each look (its first round of answers is in
    before the --timeout of 60 s passes, on any machine)."""
    import itertools

    from nodecli.node import transfers

    real, ticks = transfers.watch_transfers, itertools.count(0, 100)
    monkeypatch.setattr(transfers, "watch_transfers", lambda *a, **kw: real(
        *a, **kw, clock=lambda: float(next(ticks))))
    _answer(node, {"id": "a", "status": "running"}, {"id": "b", "status": "completed"},
            {"id": "c", "status": "running"})
    r = _run(invoke, node, "watch", "a", "b", "c", "--timeout", "60s")
    assert (r.exit_code, r.stderr.splitlines()[-1]) == (
        8, f"{ERR}still running after --timeout: a, c"), r


@pytest.mark.parametrize(("args", "said"), [
    (["list", "--since", "nonsense"],
     "--since: invalid start time 'nonsense': use a duration ago such as 10m, 2h, 1d, or an "
     "ISO 8601 time such as 2031-01-01T00:00:00Z"),
    (["watch", "x", "--timeout", "nonsense"],
     "--timeout: invalid duration 'nonsense': use a number and a unit s, m, h, d or w, "
     "e.g. 90s, 30m, 2h, 7d, 1h30m"),
])
def test_a_duration_that_is_none_is_refused_naming_its_flag(invoke, args, said):
    r = invoke("transfer", *args)
    assert (r.exit_code, r.stderr) == (2, f"nodecli: error: {said}\n"), r
