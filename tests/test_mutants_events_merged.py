"""A merged tail (nodecli/node/events/merged.py) at the edges the mutation run found
unwatched: what each node's thread tells (a hint, a warning, a reconnect and its
recovery, each led by the node's name), a stop asked for after a node's page, the
progress summed over the nodes, the node's /info (told to the log when it fails, cached
in the state folder), a named checkpoint with stdout as the output, and the lines of
``pretty``. In process, over HTTPS to the emulator."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.node.events import merged
from nodecli.node.events.tail import TailOptions

LOGGING = ("the node's event log is empty: on nodes 3.7.4 and later events are logged only "
           "when the server setting activity_event_logging is true (set it, then restart "
           "the node service)")
SINCE = datetime(2000, 1, 1, tzinfo=UTC)  # every event of the log


@pytest.fixture(autouse=True)
def _no_read_ahead_left():
    """A tail ended while its next page was being read ahead leaves that request in
    flight: let it end before the next test sets up the emulator's faults."""
    import threading

    yield
    for thread in threading.enumerate():
        if thread.name == "nodecli-read-ahead":
            thread.join(60)


@pytest.fixture
def n1(invoke, emulator, home):
    r = invoke("node", "add", "n1", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r.stderr
    return emulator


@pytest.fixture
def clients(emulator):
    made: list[Any] = []

    def make(label: str, log: Any = None) -> Any:
        made.append(open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                                          label=label, cacert=emulator.ca_file), log=log))
        return made[-1]

    yield make
    for c in made:
        c.close()


def warnings(stderr: str) -> list[str]:
    return [line.removeprefix("nodecli: warning: ") for line in stderr.splitlines()
            if line.startswith("nodecli: warning: ")]


def test_an_empty_log_is_a_hint_led_by_the_nodes_name(invoke, n1):
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    assert warnings(r.stderr) == [f"n1: hint: {LOGGING}"]


def test_a_foreign_link_host_is_a_warning_led_by_the_nodes_name(invoke, n1, log):
    from nodecli.node.events.pages import foreign_host_notice

    log.generate(1)
    log.link_host = "inner.example:9092"
    try:
        r = invoke("events", "tail", "--all-nodes", "--since", "1h", "-o", "jsonl")
    finally:
        log.link_host = None
    assert r.exit_code == 0, r.stderr
    base = n1.url.rstrip("/")
    assert warnings(r.stderr) == ["n1: " + foreign_host_notice("inner.example:9092", base)]


def test_pretty_lines_are_led_by_the_nodes_name_and_two_spaces(invoke, n1, log):
    log.generate(2)
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", "-o", "pretty")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("n1  20") for line in lines), lines


def test_a_named_checkpoint_with_stdout_as_the_output(invoke, n1, log):
    log.generate(2)
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", "--resume", "r", "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["1", "2"]
    log.generate(1)
    r = invoke("events", "tail", "--all-nodes", "--resume", "r", "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["3"]


def test_progress_is_the_total_over_the_nodes_in_the_order_written(clients, log, tmp_path):
    """Two nodes (one log, two clients), pages of one event: each page written adds one
    to the total the progress line shows, whichever node wrote it."""
    log.generate(3)
    seen: list[tuple[int, Any]] = []
    runs = [merged.NodeRun("a", clients("a"), emitted=10), merged.NodeRun("b", clients("b"))]
    merged.merged_tail(runs, TailOptions(since=SINCE, page_size=1), state_dir=tmp_path / "s",
                       out=None, output_file=tmp_path / "out.jsonl",
                       progress=lambda total, when: seen.append((total, when)))
    assert [total for total, _ in seen] == [1, 2, 3, 4, 5, 6]
    assert all(isinstance(when, str) and when.startswith("20") for _, when in seen)
    assert [(r.emitted, r.interrupted, r.error) for r in runs] == [(13, False, None),
                                                                  (3, False, None)]


def test_a_stop_asked_after_a_page_writes_no_other_page(clients, log, tmp_path):
    """The first signal (FleetStop's event) stops a node after the page it wrote: the
    next page is not written, its count added to what its run held."""
    log.generate(3)
    stop = merged.FleetStop()

    def progress(total: int, last_time: Any) -> None:
        if total == 2:
            stop.event.set()

    runs = [merged.NodeRun("a", clients("a"), emitted=10)]
    out = tmp_path / "out.jsonl"
    merged.merged_tail(runs, TailOptions(since=SINCE, page_size=1), state_dir=tmp_path / "s",
                       out=None, output_file=out, progress=progress, stop=stop)
    assert [(r.emitted, r.interrupted, r.error) for r in runs] == [(12, True, None)]
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["1", "2"]


def test_a_reconnect_and_its_recovery_are_told_once_each_by_node(clients, emulator, log,
                                                                  tmp_path):
    log.generate(1)
    stop = merged.FleetStop()
    said: list[str] = []

    def say(text: str) -> None:
        said.append(text)
        if text == "a: resumed":
            stop.event.set()  # (ends the follow after this page)

    emulator.faults.path_prefix = "/events"
    emulator.faults.push("503", "503")
    try:
        runs = [merged.NodeRun("a", clients("a"))]
        opts = TailOptions(follow=True, since=SINCE, retry_base=0.01, interval=0.01)
        merged.merged_tail(runs, opts, state_dir=tmp_path / "state", out=None,
                           output_file=tmp_path / "o.jsonl", say=say, stop=stop,
                           progress=lambda *_: stop.event.set())  # (if never resumed)
    finally:
        emulator.faults.clear()
    assert said == ["a: reconnecting (attempt 1, next in 0 s): HTTP 503", "a: resumed"]
    # (the stop came before the page after the recovery was written)
    assert [(r.emitted, r.interrupted, r.error) for r in runs] == [(0, True, None)]


def test_a_nodes_info_is_cached_in_the_state_folder_and_its_failure_logged(clients, emulator,
                                                                           log, tmp_path,
                                                                           served):
    log.generate(1)
    logged: list[str] = []
    opts = TailOptions(since=SINCE)
    emulator.faults.path_prefix = "/info"
    emulator.faults.push("500")
    try:
        runs = [merged.NodeRun("a", clients("a").derive(max_attempts=1))]
        merged.merged_tail(runs, opts, state_dir=tmp_path / "state", out=None,
                           output_file=tmp_path / "o.jsonl", log=logged.append)
    finally:
        emulator.faults.clear()
    assert [line for line in logged if line.startswith("GET /info failed (")] == logged
    assert len(logged) == 1 and logged[0].endswith("); node version unknown")
    for _ in range(2):
        merged.merged_tail([merged.NodeRun("a", clients("a"))], opts, state_dir=tmp_path / "state",
                           out=None, output_file=tmp_path / "o2.jsonl")
    assert sum(" /info " in line for line in served) == 2  # the failed one, then once


@pytest.mark.parametrize("args, message", [
    (["--max-events", "3"], "--max-events and --until-type count one node's events: not "
     "with --nodes/--all-nodes"),
    (["--until-type", "file.created"], "--max-events and --until-type count one node's "
     "events: not with --nodes/--all-nodes"),
    (["--to", "f.txt", "-o", "plain"], "a merged tail writes jsonl to a file (each line "
     "names its node)"),
])
def test_what_a_merged_tail_refuses_word_for_word(invoke, n1, args, message):
    r = invoke("events", "tail", "--all-nodes", *args)
    assert r.exit_code == 2
    assert r.stderr == f"nodecli: error: {message}\n"


def test_dry_run_reads_to_stdout_and_writes_no_file(invoke, n1, log, tmp_path):
    log.generate(2)
    r = invoke("--dry-run", "events", "tail", "--all-nodes", "--since", "1h", "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["1", "2"]
    out = tmp_path / "f.jsonl"
    r = invoke("--dry-run", "events", "tail", "--all-nodes", "--since", "1h", "--to", str(out))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"would append events to {out}; nothing was written (--dry-run)\n"
    assert not out.exists()


def test_a_restart_skips_the_lines_a_crash_left_after_the_checkpoint(invoke, n1, log,
                                                                     tmp_path, clients):
    """Each node's checkpoint names its node as a one-node tail's does; the lines of a
    node written after it (a crash before the save) are not written again."""
    log.generate(2)
    out = tmp_path / "f.jsonl"
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", "--to", str(out))
    assert r.exit_code == 0, r.stderr
    one = tmp_path / "one.json"
    r = invoke("events", "tail", "--node", "n1", "--since", "1h", "--checkpoint", str(one),
               "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    saved = json.loads((tmp_path / "f.jsonl.checkpoints" / "n1.json").read_text())
    assert saved["node"] == json.loads(one.read_text())["node"] is not None
    for owner in ("n0", "n1"):  # another node's line with the id, then its own
        (eid,) = log.generate(1)
        with out.open("a") as fh:  # what a crash after the write, before the save, leaves
            fh.write(json.dumps({"node": owner, "id": eid}) + "\n")
        r = invoke("events", "tail", "--all-nodes", "--to", str(out))
        assert r.exit_code == 0, r.stderr
    assert [(line["node"], line["id"]) for line in map(json.loads, out.read_text().splitlines())
            ] == [("n1", "1"), ("n1", "2"), ("n0", "3"), ("n1", "3"), ("n1", "4")]


def test_an_events_own_node_field_becomes_event_node_and_text_stays_as_is(invoke, n1, log):
    from nodecli.emulator.server import Reply

    log.push_reply(Reply(200, b'[{"id":"1","node":"x","s":"\\u00e9\xc3\xa9"}]',
                         {"Link": '</events?iteration_token=0>; rel="next"'}))
    r = invoke("events", "tail", "--all-nodes", "--since", "1h", "-o", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == '{"node": "n1", "id": "1", "event_node": "x", "s": "\u00e9\u00e9"}\n'


@pytest.fixture
def collector(_tls_emulator_session, emulator):
    from nodecli.emulator.collector import CollectorState, build_collector

    server = build_collector(_tls_emulator_session.paths, CollectorState()).start()
    yield server
    server.stop()


def test_shipping_every_node_to_a_collector_closes_what_it_opened(invoke, n1, log, collector,
                                                                  monkeypatch, tmp_path):
    """(``events ship --all-nodes`` to a batch sink: the merged tail is given each node's
    sink, and opens no file of its own)"""
    monkeypatch.setenv("NODECLI_SINK_CACERT", n1.ca_file)
    log.generate(3)
    r = invoke("events", "ship", "--all-nodes", "--since", "1h", "--resume", "s",
               "--to", collector.url + "/ingest")
    assert r.exit_code == 0, r.stderr
    got = [json.loads(line)["id"] for _, lines in collector.state.stored for line in lines]
    assert sorted(got) == ["1", "2", "3"]


class _BrokenSink:
    """A sink with a bug: its first page raises what no sink should."""

    per_event = False
    quiet = True

    def take(self, items: Any, texts: Any) -> None:
        raise ValueError("a bug in the sink")

    def position(self) -> None:
        return None

    def recover(self, cp: Any) -> list[str]:
        return []


def test_a_bug_in_one_nodes_thread_is_that_nodes_error_not_a_silent_end(clients, log,
                                                                        tmp_path):
    """An exception no tail expects (a bug) in one node's thread ends that node with an
    error the command reports (exit 1), not a traceback and an exit 0; the other node
    goes on to its end."""
    log.generate(2)
    out = tmp_path / "b.jsonl"
    from nodecli.node.events.sinks import FileSink

    good = FileSink(out, "jsonl")
    runs = [merged.NodeRun("a", clients("a")), merged.NodeRun("b", clients("b"))]
    try:
        merged.merged_tail(runs, TailOptions(since=SINCE), state_dir=tmp_path / "s",
                           out=None, sink_for=lambda name: _BrokenSink() if name == "a"
                           else good)
    finally:
        good.close()
    a, b = runs
    assert a.error is not None and a.emitted == 0
    assert a.error.message == "internal error: ValueError: a bug in the sink"
    assert a.error.exit_code == 1
    assert (b.error, b.emitted) == (None, 2)
    assert len(out.read_text().splitlines()) == 2
