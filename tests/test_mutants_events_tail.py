"""The one-node tail (nodecli/node/events/tail.py) at the edges the mutation run found
unwatched: a refused token's message and hint, the option and destination checks word
for word, the start points, a stop within a page or at its end and the checkpoint it
leaves, retries under -f (their waits, reasons and the read-ahead's), signals during a
page write, and what run_tail hands on to the tail. In process, over HTTPS to the
emulator (or with its canned pages)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodecli.errors import NodecliError
from nodecli.node.events import tail as tail_mod
from nodecli.node.events.checkpoint import CheckpointFile
from nodecli.node.events.pages import EventFilter

SINCE = datetime(2000, 1, 1, tzinfo=UTC)  # every event of the log
REFUSED = "GET https://n/events?iteration_token=x: HTTP 400: invalid iteration_token"
LOGGING = ("the node's event log is empty: on nodes 3.7.4 and later events are logged only "
           "when the server setting activity_event_logging is true (set it, then restart "
           "the node service)")


@pytest.mark.parametrize("token, shown", [("t" * 60, "t" * 60), ("t" * 61, "t" * 59 + "…")])
@pytest.mark.parametrize("from_checkpoint", [False, True])
def test_a_refused_token_says_where_it_came_from_and_what_to_do(tmp_path, token, shown,
                                                                from_checkpoint):
    path = tmp_path / "c.json"
    err = tail_mod._token_refused(NodecliError(REFUSED), from_checkpoint,
                                  CheckpointFile(path, node="n", flt=EventFilter()), token)
    if from_checkpoint:
        assert err.message == (f"the node refused the position saved in checkpoint {path} "
                               f"(iteration token {shown}): {REFUSED}")
        assert err.hint == ("the node's log may have been reset, or the checkpoint is from "
                            f"another node; nothing was skipped: to start over, delete {path} "
                            "and choose a start with --since or --iteration-token")
    else:
        assert err.message == f"the node refused iteration token {shown}: {REFUSED}"
        assert err.hint == ("take a token from a recent 'nodecli events list' of this node, "
                            "or start with --since")


def test_a_refused_token_not_from_a_checkpoint_with_a_checkpoint_file(tmp_path):
    """(--iteration-token with --checkpoint, before any checkpoint was saved: the token
    the user gave was refused, not a saved position)"""
    err = tail_mod._token_refused(NodecliError(REFUSED), False,
                                  CheckpointFile(tmp_path / "c.json", node="n",
                                                 flt=EventFilter()), "x")
    assert err.message == f"the node refused iteration token x: {REFUSED}"
    assert tail_mod._token_refused(NodecliError(REFUSED), True, None, "x").message == \
        err.message


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
def node(emulator):
    from nodecli.http.client import Auth, Endpoint, open_client

    made: list = []

    def make(label: str | None = "n1"):
        made.append(open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                                         label=label, cacert=emulator.ca_file)))
        return made[-1]

    yield make
    for c in made:
        c.close()


def run(client, opts=None, *, checkpoint=None, info=None, **kw):
    """One tail into a string; (the state, the text written)."""
    import io

    from nodecli.node.events.sinks import StreamSink

    out = io.StringIO()
    st = tail_mod.tail(client, opts or tail_mod.TailOptions(since=SINCE), StreamSink(out),
                       checkpoint=checkpoint, info=info, **kw)
    return st, out.getvalue()


def ids(text: str) -> list[str]:
    import json

    return [json.loads(line)["id"] for line in text.splitlines()]


def test_a_tail_that_reached_the_present_says_so_and_where_it_started(node, log, tmp_path):
    """Pages 1-2, 3, then an empty one: the checkpoint keeps the ids of the last page
    that held any (a node may send them again at the start of the next)."""
    import json

    from nodecli.node.events.checkpoint import node_key

    log.generate(3)
    client = node()
    cp = CheckpointFile(tmp_path / "c.json", node=node_key(client), flt=EventFilter())
    st, text = run(client, tail_mod.TailOptions(since=SINCE, page_size=2), checkpoint=cp)
    assert ids(text) == ["1", "2", "3"]
    assert (st.emitted, st.pages, st.stopped_by) == (3, 3, "caught-up")
    assert st.start == "since 2000-01-01T00:00:00Z"
    saved = json.loads(cp.path.read_text())
    assert (saved["iteration_token"], saved["skip_ids"], saved["last_ids"]) == (st.token, [],
                                                                                ["3"])


def test_a_resume_on_a_node_whose_version_is_unknown_goes_on(node, log, tmp_path):
    """(no /info answer: the marked event is not asked for by id, and the resume goes
    on from the checkpoint)"""
    from nodecli.node.events.checkpoint import node_key

    log.generate(2)
    client = node()
    cp = CheckpointFile(tmp_path / "c.json", node=node_key(client), flt=EventFilter())
    assert ids(run(client, checkpoint=cp)[1]) == ["1", "2"]
    log.generate(1)
    st, text = run(client, checkpoint=cp)
    assert ids(text) == ["3"] and st.start == f"checkpoint {tmp_path / 'c.json'}"


@pytest.mark.parametrize("with_checkpoint", [False, True])
def test_a_token_refused_on_a_later_page_is_named(node, log, tmp_path, with_checkpoint):
    """The first page taken, the node then refuses the token of its Link: the message
    names that token (not a raw HTTP error), and not a checkpoint's saved position even
    when there is a checkpoint (the token came from the page just written)."""
    from nodecli.emulator.server import Reply
    from nodecli.node.events.checkpoint import node_key

    client = node().derive(max_attempts=1)
    cp = CheckpointFile(tmp_path / "c.json", node=node_key(client), flt=EventFilter()) \
        if with_checkpoint else None
    log.push_reply(Reply(200, [{"id": "1"}], {"Link": '</events?iteration_token=77>; '
                                                      'rel="next"'}),
                   Reply(400, {"error": "bad token"}))
    with pytest.raises(NodecliError) as exc:
        run(client, checkpoint=cp)
    assert exc.value.message.startswith("the node refused iteration token 77: ")


def test_an_event_a_node_sends_again_at_the_start_of_the_next_page_is_written_once(node, log):
    from nodecli.emulator.server import Reply

    def link(token: str) -> dict[str, str]:
        return {"Link": f'</events?iteration_token={token}>; rel="next"'}

    log.push_reply(Reply(200, [{"id": "1"}, {"id": "2"}], link("a")),
                   Reply(200, [{"id": "2"}, {"id": "3"}], link("b")),
                   Reply(200, [], link("b")))
    st, text = run(node())
    assert ids(text) == ["1", "2", "3"] and st.emitted == 3


def test_a_page_read_ahead_that_must_wait_says_why_and_is_asked_again(node, log, tmp_path):
    """With -f into a file the next page is read while this one is written; a 429 there
    is a retry with its Retry-After and its reason, as for any page."""
    from nodecli.emulator.server import Reply
    from nodecli.node.events.sinks import FileSink
    from nodecli.node.events.stop import GracefulStop

    log.generate(3)
    log.push_reply(Reply(200, [{"id": "1"}], {"Link": '</events?iteration_token=1>; '
                                                       'rel="next"'}),
                   Reply(429, {"error": "slow down"}, {"Retry-After": "0"}))
    stop, said = GracefulStop(), []

    def status(text: str) -> None:
        said.append(text)
        if text == "resumed":
            stop.requested = True  # (as a signal would: the tail ends before the next page)

    def progress(written: int, when: object) -> None:
        if written > 1:  # (never "resumed": end all the same)
            stop.requested = True

    sink = FileSink(tmp_path / "o.jsonl", "jsonl")
    try:
        with pytest.raises(tail_mod.TailInterrupted) as exc:
            tail_mod.tail(node(), tail_mod.TailOptions(since=SINCE, follow=True), sink,
                          status=status, stop=stop, progress=progress)
    finally:
        sink.close()
    assert said == ["reconnecting (attempt 1, next in 0 s): HTTP 429", "resumed"]
    assert ids((tmp_path / "o.jsonl").read_text()) == ["1"]
    assert exc.value.message == "interrupted after 1 event" and exc.value.state.emitted == 1


def test_run_tail_follow_tells_a_reconnect_and_ends_on_a_signal(node, log, emulator,
                                                                 tmp_path):
    import io
    import os
    import signal

    log.generate(1)
    said: list[str] = []

    def status(text: str) -> None:
        said.append(text)
        if text == "resumed":
            os.kill(os.getpid(), signal.SIGINT)  # run_tail's own handler takes it

    emulator.faults.path_prefix = "/events"
    emulator.faults.push("503")
    try:
        with pytest.raises(tail_mod.TailInterrupted) as exc:
            tail_mod.run_tail(node(), tail_mod.TailOptions(since=SINCE, follow=True,
                                                           retry_base=0.01),
                              state_dir=tmp_path, out=io.StringIO(), status=status,
                              output_file=tmp_path / "o.jsonl",
                              progress=lambda *_: os.kill(os.getpid(), signal.SIGINT))
    finally:
        emulator.faults.clear()
    assert said == ["reconnecting (attempt 1, next in 0 s): HTTP 503", "resumed"]
    assert exc.value.state.emitted == 0
    assert exc.value.message == "interrupted after 0 events"


@pytest.mark.parametrize("kw, error, message", [
    ({"since": SINCE, "token": "5"}, "UsageError", "give --since or --iteration-token, not both"),
    ({"until_type": "A" * 61}, "UsageError", f"--until-type: invalid event type {'A' * 60!r}"),
    ({"until_type": ""}, "UsageError", "--until-type: invalid event type ''"),
    ({"fmt": "csv"}, "UsageError", "unknown format 'csv'"),
    ({"fmt": "plain"}, "ValueError", "TailOptions(fmt='plain') needs a render function"),
    ({"page_size": 0}, "UsageError", "page size must be a whole number from 1 to "
     "9223372036854775807, not 0"),
])
def test_tail_options_refused_word_for_word(kw, error, message):
    with pytest.raises(Exception) as exc:
        tail_mod.TailOptions(**kw)
    assert type(exc.value).__name__ == error
    assert getattr(exc.value, "message", str(exc.value)) == message


@pytest.mark.parametrize("kw", [{}, {"since": SINCE}, {"token": "5"}, {"until_type": "a.b"},
                                {"fmt": "json", "render": str}, {"fmt": "pretty", "render": str},
                                {"page_size": 1}])
def test_tail_options_taken(kw):
    assert tail_mod.TailOptions(**kw).page_size == kw.get("page_size", 1000)


@pytest.mark.parametrize("args, message", [
    (("jsonl", "c.json", "r", None), "give --checkpoint FILE or --resume NAME, not both"),
    (("jsonl", None, "a/b" + "x" * 60, None), "invalid checkpoint name "
     f"{('a/b' + 'x' * 60)[:40]!r}: letters, digits, '.', '_' and '-' (at most 64)"),
    (("json", None, None, "f"), "--to FILE writes jsonl or plain (one event per line, so a "
     "restart can find what is already there)"),
    (("pretty", None, None, "f"), "--to FILE writes jsonl or plain (one event per line, so a "
     "restart can find what is already there)"),
])
def test_destinations_refused_word_for_word(args, message):
    from pathlib import Path

    from nodecli.errors import UsageError

    fmt, cp, name, out = args
    with pytest.raises(UsageError) as exc:
        tail_mod.check_destinations(fmt, cp and Path(cp), name, out and Path(out))
    assert exc.value.message == message


@pytest.mark.parametrize("args", [("jsonl", None, None, "f"), ("plain", None, None, "f"),
                                  ("json", "c.json", None, None), ("pretty", None, "r.1_-", None)])
def test_destinations_taken(args):
    from pathlib import Path

    fmt, cp, name, out = args
    tail_mod.check_destinations(fmt, cp and Path(cp), name, out and Path(out))


def test_where_the_position_lives(node, tmp_path):
    from pathlib import Path

    client, opts = node(), tail_mod.TailOptions()

    def where(**kw):
        kw = {"checkpoint_file": None, "resume_name": None, "output_file": None, **kw}
        return tail_mod.checkpoint_path(client, opts, state_dir=tmp_path, **kw)

    assert where() is None
    assert where(output_file=Path("o.jsonl")) == Path("o.jsonl.checkpoint")
    assert where(checkpoint_file="c.json", output_file=Path("o")) == Path("c.json")
    named = where(resume_name="r", checkpoint_file=None, output_file=Path("o"))
    assert named.parent.is_relative_to(tmp_path) and named.name.startswith("r")


def test_the_pause_between_polls_is_the_interval_give_or_take_a_fifth():
    import random

    random.seed(7)
    pauses = [tail_mod._jitter(10.0) for _ in range(2000)]
    assert 8.0 <= min(pauses) < 8.1 and 11.9 < max(pauses) <= 12.0


def test_a_pages_text_is_one_text_or_one_per_event():
    items = [({"id": "1"}, '{"id":"1"}'), ({"id": "2"}, '{"id":"2"}')]
    opts = tail_mod.TailOptions()
    assert tail_mod._texts(opts, items, per_event=False) == ['{"id":"1"}\n{"id":"2"}\n']
    assert tail_mod._texts(opts, items, per_event=True) == ['{"id":"1"}\n', '{"id":"2"}\n']
    assert tail_mod._texts(opts, [], per_event=True) == []
    shout = tail_mod.TailOptions(fmt="plain", render=lambda its: f"<{len(its)}>")
    assert tail_mod._texts(shout, items, per_event=False) == ["<2>"]


@pytest.mark.parametrize("kw, message", [
    ({"checkpoint_file": "c.json", "resume_name": "r"},
     "give --checkpoint FILE or --resume NAME, not both"),
    ({"output_file": "o.json", "fmt": "json"}, "--to FILE writes jsonl or plain (one event "
     "per line, so a restart can find what is already there)"),
])
def test_run_tail_checks_its_destinations_itself(node, tmp_path, kw, message):
    """(the domain's entry, whatever command calls it)"""
    import io
    from pathlib import Path

    from nodecli.errors import UsageError

    fmt = kw.get("fmt", "jsonl")
    paths = {k: Path(tmp_path / v) if k != "resume_name" else v for k, v in kw.items()
             if k != "fmt"}
    opts = tail_mod.TailOptions(fmt=fmt, render=None if fmt == "jsonl" else str)
    with pytest.raises(UsageError) as exc:
        tail_mod.run_tail(node(), opts, state_dir=tmp_path, out=io.StringIO(), **paths)
    assert exc.value.message == message
    assert list(tmp_path.iterdir()) == []


def test_run_tail_saves_a_checkpoint_that_names_its_node(node, log, tmp_path):
    import io
    import json

    from nodecli.node.events.checkpoint import node_key

    log.generate(2)
    client, out, cp = node(), io.StringIO(), tmp_path / "c.json"
    st = tail_mod.run_tail(client, tail_mod.TailOptions(since=SINCE), state_dir=tmp_path,
                           out=out, checkpoint_file=cp)
    assert st.emitted == 2 and ids(out.getvalue()) == ["1", "2"]
    assert json.loads(cp.read_text())["node"] == node_key(client)


def test_run_tail_passes_on_what_the_tail_says_and_where_progress_goes(node, log, emulator,
                                                                       tmp_path, served):
    """The callbacks run_tail is given reach the tail: a hint on an empty log (notice), a
    foreign Link host (warn), a failed /info (log); progress only for a quiet sink (a
    file); /info asked once, then cached in the state folder."""
    import io

    from nodecli.node.events.pages import foreign_host_notice

    client = node().derive(max_attempts=1)
    said: dict[str, list] = {"notice": [], "warn": [], "log": [], "progress": []}

    def go(**kw):
        return tail_mod.run_tail(client, tail_mod.TailOptions(since=SINCE),
                                 state_dir=tmp_path / "state", out=io.StringIO(),
                                 notice=said["notice"].append, warn=said["warn"].append,
                                 log=said["log"].append,
                                 progress=lambda n, when: said["progress"].append(n), **kw)

    emulator.faults.path_prefix = "/info"
    emulator.faults.push("500")
    try:
        go()  # /info failed: no version known, no hint
    finally:
        emulator.faults.clear()
    assert said["log"] == [said["log"][0]] and said["log"][0].startswith("GET /info failed (")
    assert said["notice"] == []
    go()  # an empty log
    assert said["notice"] == [("the node's event log is empty: on nodes 3.7.4 and later "
                               "events are logged only when the server setting "
                               "activity_event_logging is true (set it, then restart the node "
                               "service)")]
    log.generate(2)
    log.link_host = "inner.example:1"
    try:
        go()  # to a string: not quiet, no progress
        assert said["progress"] == []
        go(output_file=tmp_path / "o.jsonl")
    finally:
        log.link_host = None
    notice = foreign_host_notice("inner.example:1", client.endpoint.base_url)
    assert said["warn"] == [notice, notice] and len(said["notice"]) == 1
    assert said["progress"] == [2]
    assert sum(" /info " in line for line in served) == 2  # the failed one, then cached


@pytest.mark.parametrize("stop, at, partial", [
    ({"max_events": 3}, "3", True), ({"max_events": 4}, "4", False),
    ({"until_type": "x.b"}, "3", True), ({"until_type": "x.c"}, "4", False),
])
def test_a_stop_within_a_page_or_at_its_end_and_where_it_resumes(node, log, tmp_path, stop, at,
                                                                 partial):
    """Pages of two (events 1-2, 3-4): a stop at the 3rd event is within the second page
    (the checkpoint keeps that page's token, the ids written of it, and the first page's
    ids); a stop at the 4th is at its end (the next page's token, nothing to skip)."""
    import json

    from nodecli.node.events.checkpoint import node_key

    for family in ("x.a", "x.a", "x.b", "x.c", "x.a"):
        log.append({"types": [family]})
    client = node()
    cp = CheckpointFile(tmp_path / "c.json", node=node_key(client), flt=EventFilter())
    st, text = run(client, tail_mod.TailOptions(since=SINCE, page_size=2, **stop),
                   checkpoint=cp)
    assert ids(text)[-1] == at and st.emitted == int(at)
    assert st.stopped_by == ("max-events" if "max_events" in stop else "until-type")
    saved = json.loads(cp.path.read_text())
    if partial:
        assert (saved["skip_ids"], saved["last_ids"]) == (["3"], ["1", "2"])
        assert st.token == saved["iteration_token"] and st.token  # the second page's own token
    else:
        assert (saved["skip_ids"], saved["last_ids"]) == ([], ["3", "4"])
        assert st.token == saved["iteration_token"]
    _, text = run(client, checkpoint=cp)
    assert ids(text) == [str(n) for n in range(int(at) + 1, 6)]


def test_with_follow_a_retry_waits_its_retry_after_and_a_bad_page_says_why(node, log,
                                                                           tmp_path):
    """The waits are the tail's ``sleep`` (recorded here, not slept): a 503 with
    Retry-After 7 waits 7 s; a page that is not JSON waits the backoff (attempt 2: at
    most twice the base, at least a fifth of it) and says why, its reason cut at 160
    characters (a long type in the URL)."""
    from nodecli.emulator.server import Reply

    log.push_reply(Reply(503, {"error": "busy"}, {"Retry-After": "7"}), Reply(200, b"[x"),
                   Reply(200, [], {"Link": '</events?iteration_token=0>; rel="next"'}))
    stop, said, naps, status, sleep = _scripted_waits(3)
    flt = EventFilter(type="a" * 100)
    with pytest.raises(tail_mod.TailInterrupted):
        run(node(), tail_mod.TailOptions(flt=flt, since=SINCE, follow=True, retry_base=0.01),
            status=status, stop=stop, sleep=sleep)
    assert said[0] == "reconnecting (attempt 1, next in 7 s): HTTP 503"
    head, reason = said[1].split(": ", 1)
    assert head == "reconnecting (attempt 2, next in 0 s)"
    assert reason.startswith("https://") and "type=aaaa" in reason
    assert len(reason) == 160 and reason.endswith("…")
    assert said[2:] == ["resumed"]
    assert naps[0] == 7.0 and 0.002 <= naps[1] <= 0.02


def _scripted_waits(most: int):
    """(stop, said, naps, status, sleep) for a following tail: ``status`` records what is
    said and asks the tail to stop once it says "resumed"; ``sleep`` records each wait,
    and ends the tail as Ctrl-C would after ``most`` of them."""
    from nodecli.node.events.stop import GracefulStop

    stop, said, naps = GracefulStop(), [], []

    def status(text: str) -> None:
        said.append(text)
        if text == "resumed":
            stop.requested = True

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) > most:  # (never "resumed": end all the same)
            raise KeyboardInterrupt

    return stop, said, naps, status, sleep


class Draws:
    """The backoff's random source, owned by the test: records each range asked for and
    answers one end of it (``low`` or the top)."""

    def __init__(self, low: bool) -> None:
        self.low, self.ranges = low, []

    def uniform(self, a: float, b: float) -> float:
        self.ranges.append((a, b))
        return a if self.low else b


@pytest.mark.parametrize("low", [False, True])
def test_with_follow_the_backoff_doubles_up_to_the_tails_cap(node, log, monkeypatch, low):
    """Four bad pages in a row with a base of 1 s and a cap of 2 s: each wait is drawn
    from 0 up to the base doubled each time but never past the tail's cap (1, 2, 2, 2 s,
    not the 4 and 8 s of the client's own cap of 30 s), and is never under a fifth of the
    base (the draw's low end). The random source answers the ends of its range; the
    waits are recorded, not slept."""
    from nodecli.emulator.server import Reply
    from nodecli.http import errors

    draws = Draws(low)
    monkeypatch.setattr(errors, "random", draws)
    log.push_reply(*[Reply(200, b"[x")] * 4,
                   Reply(200, [], {"Link": '</events?iteration_token=0>; rel="next"'}))
    stop, _, naps, status, sleep = _scripted_waits(4)
    with pytest.raises(tail_mod.TailInterrupted):
        run(node(), tail_mod.TailOptions(since=SINCE, follow=True, retry_base=1.0,
                                         retry_cap=2.0), status=status, stop=stop,
            sleep=sleep)
    assert draws.ranges == [(0, 1.0), (0, 2.0), (0, 2.0), (0, 2.0)]
    assert naps == ([0.2] * 4 if low else [1.0, 2.0, 2.0, 2.0])


def test_with_follow_a_tls_failure_is_not_retried(emulator, log):
    from nodecli.errors import RemoteError
    from nodecli.http.client import Auth, Endpoint, open_client

    client = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass")))
    naps: list[float] = []

    def sleep(seconds: float) -> None:  # (a retry would come here: end it)
        naps.append(seconds)
        raise KeyboardInterrupt

    try:
        with pytest.raises(RemoteError) as exc:
            run(client, tail_mod.TailOptions(since=SINCE, follow=True), sleep=sleep)
    finally:
        client.close()
    assert exc.value.message.startswith("TLS") and naps == []


@pytest.mark.parametrize("clock", ["local", "node"])
def test_by_default_a_tail_starts_ten_minutes_ago_on_the_nodes_clock(node, log, clock):
    """Events 11 and 9 minutes old (by the node's clock when /info gave one, else the
    local one): only the second; a node clock an hour behind moves the start with it."""
    from datetime import timedelta

    from nodecli.node.info import NodeInfo
    from nodecli.timeparse import format_utc

    now = datetime.now(UTC)
    for minutes in (11, 9):
        log.append({"types": ["x.a"], "time": format_utc(now - timedelta(minutes=minutes))})
    info = None
    if clock == "node":  # the node an hour behind: both events are in its future
        info = NodeInfo("4.4.5", current_time=format_utc(now - timedelta(hours=1)))
    st, text = run(node(), tail_mod.TailOptions(), info=info)
    assert ids(text) == (["2"] if clock == "local" else ["1", "2"])
    assert st.start == "the last 10 minutes (default)"


def test_a_tail_from_a_token_says_so_and_takes_what_follows(node, log):
    log.generate(3)
    first, _ = run(node(), tail_mod.TailOptions(since=SINCE, page_size=1, max_events=1))
    st, text = run(node(), tail_mod.TailOptions(token=first.token))
    assert ids(text) == ["2", "3"] and st.start == f"iteration token {first.token}"


def test_a_new_checkpoint_records_the_start_before_anything_is_written(node, log, emulator,
                                                                       tmp_path):
    """(a failure, or a crash, before the first page: the next run starts from the same
    point)"""
    import json

    from nodecli.errors import RemoteError
    from nodecli.node.events.checkpoint import node_key

    log.generate(1)
    client = node().derive(max_attempts=1)
    cp = CheckpointFile(tmp_path / "c.json", node=node_key(client), flt=EventFilter())
    emulator.faults.path_prefix = "/events"
    emulator.faults.push("500")
    try:
        with pytest.raises(RemoteError):
            run(client, tail_mod.TailOptions(since=SINCE), checkpoint=cp)
    finally:
        emulator.faults.clear()
    saved = json.loads(cp.path.read_text())
    assert (saved["iteration_token"], saved["after_time"], saved["skip_ids"]) == (
        None, "2000-01-01T00:00:00Z", [])
    st, text = run(client, checkpoint=cp)
    assert ids(text) == ["1"] and st.start == f"checkpoint {cp.path}"


@pytest.mark.parametrize("label", ["n1", None])
def test_a_tail_on_a_node_before_3_6_names_the_node(node, emulator, label):
    from nodecli.node.info import NodeInfo

    with pytest.raises(NodecliError) as exc:
        run(node(label), info=NodeInfo("3.5.9"))
    name = label or node(None).endpoint.base_url
    assert exc.value.message == (f"node {name} runs version 3.5.9: the events endpoints "
                                 "exist from node 3.6.0")


def test_the_ids_of_the_last_page_that_held_any_outlive_an_empty_page(node, log, tmp_path):
    """An empty page that moves the token (a node skipping what the filter leaves out)
    saves a checkpoint that still holds the ids before it: an event sent again after
    the resume is dropped."""
    from nodecli.emulator.server import Reply
    from nodecli.node.events.checkpoint import node_key

    def page(events: list, token: str) -> Reply:
        return Reply(200, events, {"Link": f'</events?iteration_token={token}>; rel="next"'})

    client = node()
    cp = CheckpointFile(tmp_path / "c.json", node=node_key(client), flt=EventFilter())
    log.push_reply(page([{"id": "1"}, {"id": "2"}], "a"), page([], "b"))  # (empty: caught up)
    assert ids(run(client, checkpoint=cp)[1]) == ["1", "2"]
    log.push_reply(page([{"id": "2"}, {"id": "3"}], "c"), page([], "c"))
    assert ids(run(client, checkpoint=cp)[1]) == ["3"]


@pytest.mark.parametrize("token", [None, "0"])
def test_the_empty_log_hint_is_given_once_and_not_to_a_tail_from_a_token(node, token):
    """(with -f the empty first page comes back at each poll: one hint; a tail started
    from an iteration token was not asked about the log as a whole)"""
    from nodecli.node.info import NodeInfo

    notes, naps = [], []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 3:
            raise KeyboardInterrupt

    opts = tail_mod.TailOptions(follow=True, token=token, since=None if token else SINCE)
    with pytest.raises(tail_mod.TailInterrupted):
        run(node(), opts, info=NodeInfo("4.4.5", logging=False), notice=notes.append,
            sleep=sleep)
    assert len(naps) == 3
    assert notes == ([] if token else [LOGGING])


def test_a_signal_while_run_tail_writes_a_page_lets_the_page_and_its_checkpoint_finish(
        node, log, tmp_path):
    """SIGINT taken inside the sink's write (run_tail's own handler): the page is
    written whole and its checkpoint saved, then the tail stops."""
    import io
    import json
    import os
    import signal

    from nodecli.node.events.sinks import StreamSink

    class Interrupting(StreamSink):
        def write(self, chunk: str) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            super().write(chunk)

    log.generate(5)
    out, cp = io.StringIO(), tmp_path / "c.json"
    with pytest.raises(tail_mod.TailInterrupted) as exc:
        tail_mod.run_tail(node(), tail_mod.TailOptions(since=SINCE, page_size=3),
                          state_dir=tmp_path, out=out, checkpoint_file=cp,
                          sink=Interrupting(out))
    assert ids(out.getvalue()) == ["1", "2", "3"] and exc.value.state.emitted == 3
    saved = json.loads(cp.read_text())
    assert saved["iteration_token"] == exc.value.state.token and saved["skip_ids"] == []
    assert saved["last_ids"] == ["1", "2", "3"]


def test_without_follow_the_clients_own_retries_take_a_passing_failure(node, log, emulator):
    """(only -f takes every failure itself, one attempt at a time)"""
    log.generate(1)
    emulator.faults.path_prefix = "/events"
    emulator.faults.push("503")
    try:
        _, text = run(node())
    finally:
        emulator.faults.clear()
    assert ids(text) == ["1"] and emulator.faults.queue == []


def test_a_resume_that_finds_only_an_empty_page_keeps_the_mark_of_the_last_event(node, log,
                                                                                 tmp_path):
    import json

    from nodecli.emulator.server import Reply
    from nodecli.node.events.checkpoint import node_key

    log.generate(2)
    client = node()
    cp = CheckpointFile(tmp_path / "c.json", node=node_key(client), flt=EventFilter())
    run(client, checkpoint=cp)
    mark = json.loads(cp.path.read_text())["last_event"]
    assert mark["id"] == "2"
    log.push_reply(Reply(200, [], {"Link": '</events?iteration_token=moved>; rel="next"'}))
    _, text = run(client, checkpoint=cp)
    saved = json.loads(cp.path.read_text())
    assert text == "" and saved["iteration_token"] == "moved" and saved["last_event"] == mark


def test_a_crash_before_the_first_checkpoint_of_a_file_leaves_no_repeat(node, log, emulator,
                                                                        tmp_path):
    """The start point saved before the first page holds the file's size: a page that
    reached the file before a crash is not written again."""
    import io
    import json

    from nodecli.errors import RemoteError

    log.generate(2)
    client, out = node().derive(max_attempts=1), tmp_path / "o.jsonl"
    emulator.faults.path_prefix = "/events"
    emulator.faults.push("500")
    try:
        with pytest.raises(RemoteError):  # after the start point was saved
            tail_mod.run_tail(client, tail_mod.TailOptions(since=SINCE), state_dir=tmp_path,
                              out=io.StringIO(), output_file=out)
    finally:
        emulator.faults.clear()
    out.write_text(json.dumps({"id": "1"}) + "\n")  # what a crash left: page 1, unsaved
    tail_mod.run_tail(client, tail_mod.TailOptions(since=SINCE), state_dir=tmp_path,
                      out=io.StringIO(), output_file=out)
    assert ids(out.read_text()) == ["1", "2"]


def test_a_page_whose_link_names_its_own_token_is_the_present(node, log):
    """A page with events whose Link names the very token it was asked for: the tail has
    caught up (it ends; asking that token again would only bring the same page)."""
    from nodecli.emulator.server import Reply

    log.push_reply(Reply(200, [{"id": "1"}, {"id": "2"}],
                         {"Link": '</events?iteration_token=a>; rel="next"'}))
    st, text = run(node(), tail_mod.TailOptions(token="a"))
    assert ids(text) == ["1", "2"] and st.stopped_by == "caught-up"


def test_a_resume_that_finds_only_events_it_wrote_ends_at_the_present(node, log, tmp_path):
    """Every event of the log was written before (the checkpoint's ids): the resume writes
    nothing and ends at the empty page, not asking that page again."""
    from nodecli.emulator.server import Reply
    from nodecli.node.events.checkpoint import node_key

    def page(events: list, token: str) -> Reply:
        return Reply(200, events, {"Link": f'</events?iteration_token={token}>; rel="next"'})

    client = node()
    cp = CheckpointFile(tmp_path / "c.json", node=node_key(client), flt=EventFilter())
    log.push_reply(page([{"id": "1"}, {"id": "2"}, {"id": "3"}], "a"))
    first = run(client, tail_mod.TailOptions(token="s", max_events=2), checkpoint=cp)
    assert ids(first[1]) == ["1", "2"]  # the checkpoint: token s, ids 1 and 2 written
    saved = (tmp_path / "c.json").read_text()
    log.push_reply(page([{"id": "1"}, {"id": "2"}], "c"), page([], "c"))
    st, text = run(client, checkpoint=cp)
    assert text == "" and st.stopped_by == "caught-up"
    # nothing written, nothing saved: the position stays where the written ids began
    assert (tmp_path / "c.json").read_text() == saved


@pytest.mark.parametrize(("events", "nodes", "said"), [
    (0, None, "interrupted after 0 events"), (1, None, "interrupted after 1 event"),
    (2, None, "interrupted after 2 events"), (1, 3, "interrupted after 1 event from 3 node(s)"),
    (0, 1, "interrupted after 0 events from 1 node(s)")])
def test_a_stopped_stream_says_how_many_events_one_in_the_singular(events, nodes, said):
    from nodecli.errors import interrupted_after

    assert interrupted_after(events, nodes) == said


@pytest.mark.parametrize(("n", "word", "plural", "said"), [
    (0, "event", None, "0 events"), (1, "event", None, "1 event"), (2, "event", None, "2 events"),
    (1, "batch", "batches", "1 batch"), (2, "batch", "batches", "2 batches"),
    (1234, "folder", None, "1,234 folders")])
def test_a_count_in_words_is_singular_for_one_only(n, word, plural, said):
    from nodecli.errors import counted

    assert counted(n, word, plural) == said
