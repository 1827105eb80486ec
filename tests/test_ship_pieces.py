"""node/events/ship.py in process, beside the window's tests (test_ship_sink_window.py):
the ``--to`` URL checks word for word, ``file:`` paths, the idempotency key, which page
is noted in the checkpoint, how a page a killed run was sending is cut again, and the
retry loop of a batch (the floor and cap of its naps, the sink's ``resume``, the status
lines, the batch before it failing). The batch sinks are plain objects keeping the
protocol; the real sinks are tested against their servers elsewhere."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from nodecli.errors import UsageError
from nodecli.node.events.batch import Shipped, SinkError
from nodecli.node.events.checkpoint import GAP_TYPE, Checkpoint, CheckpointFile
from nodecli.node.events.pages import EventFilter
from nodecli.node.events.ship import ShipSink, batch_key, check_url, file_target, scheme_of
from tests.test_ship_sink_window import Flaky, batch_tried, items, sink_of


@pytest.mark.parametrize(("url", "scheme"), [
    ("HTTPS://h:8443/in", "https"), ("syslog+tls://h:6514", "syslog+tls"),
    ("file:/a:b", "file"), ("no-colon", ""), ("nats://h:4222/a.b", "nats")])
def test_the_scheme_is_before_the_first_colon_in_lower_case(url, scheme):
    assert scheme_of(url) == scheme


@pytest.mark.parametrize(("url", "path"), [
    ("file:/var/log/a:b.jsonl", "/var/log/a:b.jsonl"),  # a colon in the path stays
    ("file:///var/log/x.jsonl", "/var/log/x.jsonl"),  # file://PATH: the two slashes go
    ("file://rel/x.jsonl", "rel/x.jsonl"),
    ("FILE:x.jsonl", "x.jsonl"),
    ("file:/x", "/x"),
])
def test_file_targets(url, path):
    assert file_target(url) == Path(path)


def test_a_file_target_in_the_home_folder_and_the_ones_that_are_none(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert file_target("file:~/ev.jsonl") == tmp_path / "ev.jsonl"
    assert file_target("https://h/file:x") is None
    for url in ("file:", "file://"):
        with pytest.raises(UsageError, match=r"^--to file:PATH needs a path$"):
            file_target(url)
        with pytest.raises(UsageError, match=r"^--to file:PATH needs a path$"):
            check_url(url)


def test_check_url_takes_every_sink_and_refuses_the_rest_in_its_words():
    for url in ("https://h/in", "http://h:8080/in", "nats://h:4222/ev.{node}", "tls://h/s",
                "syslog+tcp://h:514", "SYSLOG+TLS://h:6514", "file:/x"):
        check_url(url)  # nothing said
    with pytest.raises(UsageError) as err:
        check_url("ftp://x/" + "y" * 200)
    said = str(err.value.message)
    assert said.startswith("--to 'ftp://x/yyy") and said.endswith(
        "…': unknown scheme (one of file, http, https, nats, syslog+tcp, syslog+tls, tls)")
    assert len(said) == len("--to '': unknown scheme (one of file, http, https, nats, "
                            "syslog+tcp, syslog+tls, tls)") + 80
    with pytest.raises(UsageError, match=r"^--to: invalid URL: Port out of range 0-65535$"):
        check_url("https://h:70000/in")
    for url in ("https://user@h/in", "http://user@h/in", "nats://u:p@h/s",
                "syslog+tcp://u:@h:514"):
        with pytest.raises(UsageError) as err:
            check_url(url)
        assert err.value.message == (
            "--to: the URL holds credentials; give them in the environment (NODECLI_SINK_"
            "TOKEN, NODECLI_SINK_USER/NODECLI_SINK_PASSWORD) or --sink-creds FILE: argv "
            "is visible to every user"), url
    with pytest.raises(UsageError, match=r"^--to 'syslog\+tcp://:514': no host$"):
        check_url("syslog+tcp://:514")
    with pytest.raises(UsageError) as err:
        check_url("syslog+tcp://:514/" + "z" * 100)
    assert err.value.message == f"--to 'syslog+tcp://:514/{'z' * 61}…': no host"


def test_the_key_quotes_node_and_ids_and_spans_the_batch():
    batch = [Shipped("a:b/c d", "x/1", (), b"{}"), Shipped("a:b/c d", "m", (), b"{}"),
             Shipped("a:b/c d", "y/2:%", (), b"{}")]
    assert batch_key(batch) == "a%3Ab%2Fc%20d:x%2F1:y%2F2%3A%25"
    assert batch_key(batch[1:2]) == "a%3Ab%2Fc%20d:m:m"


def _checkpoint(tmp_path: Path, output: dict[str, Any] | None = None) -> CheckpointFile:
    ck = CheckpointFile(tmp_path / "ck.json", node="n1", flt=EventFilter())
    ck.save(Checkpoint("tok-0", output=output))
    return ck


class Noting(Flaky):
    """Records the checkpoint's ``output`` as each batch is delivered."""

    def __init__(self, ck: CheckpointFile, **kw: Any) -> None:
        super().__init__(**kw)
        self.ck = ck
        self.notes: list[Any] = []

    def deliver(self, batch: list[Shipped]) -> None:
        loaded = self.ck.load()
        self.notes.append(loaded.output if loaded is not None else "no checkpoint")
        super().deliver(batch)


def _gap_first(*ids: int) -> list[tuple[dict[str, Any], str]]:
    page = items(*ids)
    page[0] = ({"id": page[0][0]["id"], "types": [GAP_TYPE]}, page[0][1])
    return page


@pytest.mark.parametrize(("page", "batch_size", "noted"), [
    (items(1, 2, 3), 3, False),  # exactly --batch: read again the same, no note
    (items(1, 2), 3, True),  # shorter: the end of the log, may grow
    (items(1, 2, 3, 4), 3, True),  # (a page is never longer; not one to trust either)
    (items(1, 2, 3), None, True),  # --batch unknown
    (_gap_first(1, 2, 3), 3, True),  # begins with this run's gap event
])
def test_which_pages_are_noted_before_they_go(tmp_path, page, batch_size, noted):
    ck = _checkpoint(tmp_path)
    sink = Noting(ck)
    ship = sink_of(sink, checkpoint=ck, batch_size=batch_size)
    try:
        ship.take(page, [""] * len(page))
    finally:
        ship.close()
    ids = [obj["id"] for obj, _ in page]
    assert sink.held == [ids]
    expected = {"sending": {"node": "n1", "first": ids[0], "lasts": [ids[-1]],
                            "last": ids[-1]}}
    assert sink.notes == [expected if noted else None]


def test_a_page_is_noted_only_where_a_checkpoint_is(tmp_path):
    """No checkpoint file yet (a first run), or none at all: the page is sent, no note."""
    ck = CheckpointFile(tmp_path / "none-yet.json", node="n1", flt=EventFilter())
    sink = Noting(ck)
    for checkpoint in (ck, None):
        ship = sink_of(sink, checkpoint=checkpoint, batch_size=5)
        try:
            ship.take(items(1, 2), ["", ""])
        finally:
            ship.close()
    assert sink.held == [["1", "2"], ["1", "2"]] and not ck.path.exists()
    assert sink.notes == ["no checkpoint"] * 2


def _recovering(tmp_path: Path, sending: Any, **kw: Any) -> tuple[ShipSink, Noting]:
    ck = _checkpoint(tmp_path, {"sending": sending} if sending is not None else None)
    sink = Noting(ck, **kw)
    ship = sink_of(sink, checkpoint=ck, batch_size=10)
    assert ship.recover(ck.load()) == []
    return ship, sink


def test_a_page_a_killed_run_was_sending_is_cut_the_same_then_the_rest(tmp_path):
    sending = {"node": "n1", "first": "1", "lasts": ["3", "5"], "last": "5"}
    ship, sink = _recovering(tmp_path, sending)
    try:
        ship.take(items(1, 2, 3, 4, 5, 6, 7), [""] * 7)
        ship.take(items(8, 9), ["", ""])  # the note is used once
    finally:
        ship.close()
    assert sink.held == [["1", "2", "3"], ["4", "5"], ["6", "7"], ["8", "9"]]
    assert ship.batches == 4
    # each batch noted with the lasts so far: a kill in between cuts the same again
    assert [n["sending"]["lasts"] for n in sink.notes] == [["3"], ["3", "5"], ["3", "5", "7"],
                                                           ["9"]]
    assert [n["sending"]["last"] for n in sink.notes] == ["3", "5", "7", "9"]


@pytest.mark.parametrize(("lasts", "cut"), [
    (["3", "7"], [["1", "2", "3"], ["4", "5", "6", "7"]]),  # ends at the page's end
    (["2", "99", "5"], [["1", "2"], ["3", "4", "5", "6", "7"]]),  # a last no longer there
    (["1"], [["1"], ["2", "3", "4", "5", "6", "7"]]),
    (["4", "2"], [["1", "2", "3", "4"], ["5", "6", "7"]]),  # a last behind: stop there
])
def test_the_cut_follows_the_lasts_while_they_are_in_the_page(tmp_path, lasts, cut):
    ship, sink = _recovering(tmp_path, {"first": "1", "lasts": lasts})
    try:
        ship.take(items(1, 2, 3, 4, 5, 6, 7), [""] * 7)
    finally:
        ship.close()
    assert sink.held == cut and ship.batches == len(cut)


@pytest.mark.parametrize("sending", [
    {"first": "2", "lasts": ["3"]},  # another page: not this one's cut
    {"first": 1, "lasts": ["3"]},  # not a string
    {"lasts": ["3"]},
    {"first": "1", "lasts": "3"},  # not a list
    {"first": "1"},
    {"first": "1", "lasts": ["3", 5]},  # not every last a string
    ["first", "lasts"],
    None,
])
def test_a_note_that_is_not_this_pages_is_not_followed(tmp_path, sending):
    ship, sink = _recovering(tmp_path, sending)
    try:
        ship.take(items(1, 2, 3, 4), [""] * 4)
    finally:
        ship.close()
    assert sink.held == [["1", "2", "3", "4"]] and ship.batches == 1


def test_recover_without_a_checkpoint_cuts_nothing():
    sink = Flaky()
    ship = sink_of(sink, batch_size=10)
    try:
        assert ship.recover(None) == []
        assert ship.recover(Checkpoint("t")) == []
        ship.take(items(1, 2, 3), [""] * 3)
    finally:
        ship.close()
    assert sink.held == [["1", "2", "3"]]


def test_the_nap_is_at_least_a_fifth_of_the_base_and_the_cap_holds():
    """The naps are full-jitter backoff (random under the cap) with a floor of a fifth
    of the base: with a cap of 0 every nap is exactly the floor; with a cap of 0.3 no
    nap is longer, though backoff from a base of 1 s grows past it."""
    naps: list[float] = []
    sink = Flaky({"1": 3})
    ship = sink_of(sink, naps=naps, retry_cap=0.0, batch_size=1)
    try:
        ship.take(items(1), [""])
    finally:
        ship.close()
    assert naps == [0.2, 0.2, 0.2] and sink.held == [["1"]]
    naps.clear()
    sink = Flaky({"1": 30})
    ship = sink_of(sink, naps=naps, retry_cap=0.3, batch_size=1)
    try:
        ship.take(items(1), [""])
    finally:
        ship.close()
    assert len(naps) == 30 and all(0.2 <= n <= 0.3 for n in naps), naps


def test_the_naps_grow_with_the_attempts_and_each_is_said():
    naps: list[float] = []
    said: list[str] = []
    sink = Flaky({"1": 30})
    ship = sink_of(sink, naps=naps, said=said, retry_cap=10.0**12, batch_size=1)
    try:
        ship.take(items(1), [""])
    finally:
        ship.close()
    # attempt k naps up to 2**(k-1) s (the base, 1 s, doubled each time; at least 0.2);
    # the draws are random under that bound, yet some nap is over half of it (each is,
    # with p = 1/2: all 30 under it, p < 1e-9), and from the 6th attempt on, one is
    # over 16 s (p > 1 - 1e-13)
    assert all(0.2 <= n <= 2 ** k for k, n in enumerate(naps)) and len(naps) == 30
    assert any(n > 2 ** (k - 1) for k, n in enumerate(naps)) and max(naps[5:]) > 16
    assert [s.split(",")[0] for s in said[:-1]] == \
        [f"reconnecting (attempt {k}" for k in range(1, 31)]
    assert said[-1] == "resumed"
    assert [f"next in {n:.0f} s)" in s for n, s in zip(naps, said, strict=False)] == [True] * 30


def test_the_reason_said_is_shortened_to_160_characters():
    said: list[str] = []

    class Wordy(Flaky):
        def deliver(self, batch: list[Shipped]) -> None:
            self.fails["1"] = self.fails.get("1", 0) - 1
            if self.fails["1"] >= 0:
                raise SinkError("w" * 161, retryable=True)
            super().deliver(batch)

    ship = sink_of(Wordy({"1": 1}), said=said, batch_size=1)
    try:
        ship.take(items(1), [""])
    finally:
        ship.close()
    assert said[0].endswith("s): " + "w" * 159 + "…") and said[1] == "resumed"


def test_a_sink_that_can_resume_is_told_before_the_batch_is_sent_again():
    class Resuming(Flaky):
        def resume(self) -> None:
            self.tries.append("resume")

    sink = Resuming({"1": 2})
    ship = sink_of(sink, batch_size=1)
    try:
        ship.take(items(1), [""])
    finally:
        ship.close()
    assert sink.tries == ["1", "resume", "1", "resume", "1"] and sink.held == [["1"]]


def test_a_success_at_once_says_nothing_and_needs_no_status():
    said: list[str] = []
    sink = Flaky()
    for told in (said, None):
        ship = sink_of(sink, said=told, batch_size=2)
        try:
            ship.take(items(1, 2), ["", ""])
            ship.submit(items(3, 4), ["", ""], lambda: None).result(30)
        finally:
            ship.close()
    assert said == [] and len(sink.held) == 4


def test_a_retry_without_status_is_silent():
    naps: list[float] = []
    sink = Flaky({"1": 1})
    ship = sink_of(sink, naps=naps, batch_size=1)
    try:
        ship.take(items(1), [""])
    finally:
        ship.close()
    assert sink.held == [["1"]] and len(naps) == 1


def test_an_error_that_waiting_cannot_mend_is_not_retried_even_with_follow():
    naps: list[float] = []

    class Refusing(Flaky):
        def deliver(self, batch: list[Shipped]) -> None:
            self.tries.append(batch[0].event_id)
            raise SinkError("refused for good")

    sink = Refusing()
    ship = sink_of(sink, naps=naps, batch_size=1)
    try:
        with pytest.raises(SinkError, match=r"^refused for good$"):
            ship.take(items(1), [""])
    finally:
        ship.close()
    assert sink.tries == ["1"] and naps == []


def test_a_batch_whose_predecessor_failed_is_not_retried():
    """Page 2 fails (retryably) while page 1 is being sent; page 1 then fails for good:
    page 2 gives up with its own error, unretried, as the checkpoint stops before page
    1 anyway and a retry would send it out of order."""
    release = threading.Event()
    first_in = threading.Event()
    naps: list[float] = []

    class Slow(Flaky):
        def deliver(self, batch: list[Shipped]) -> None:
            if batch[0].event_id == "1":
                first_in.set()
                assert release.wait(30)
                raise SinkError("batch 1 refused")
            super().deliver(batch)

    sink = Slow({"3": 1})
    ship = sink_of(sink, naps=naps, window=2, batch_size=2)
    try:
        one = ship.submit(items(1, 2), ["", ""], lambda: None)
        assert first_in.wait(30)
        two = ship.submit(items(3, 4), ["", ""], lambda: None)
        batch_tried(sink, "3")
        release.set()
        with pytest.raises(SinkError, match=r"^batch 1 refused$"):
            one.result(30)
        with pytest.raises(SinkError, match=r"^batch 3 not now$"):
            two.result(30)
    finally:
        release.set()
        ship.close()
    assert sink.tries.count("3") == 1 and naps == [] and sink.held == []


class _ThisProcess:
    """What PausePoint.wait needs of a child, for the pytest process itself: it has
    "ended" when the batch is delivered (so it passed the point without stopping)."""

    def __init__(self, future: Future[None]) -> None:
        self.pid = os.getpid()
        self.future = future

    def poll(self) -> int | None:
        return 0 if self.future.done() else None


def test_each_batch_of_the_window_stops_at_the_test_hook_naming_its_first_event(
        pause_point, monkeypatch):
    """``batch-sending`` (NODECLI_TEST_PAUSE): a batch of the window stops there on its
    worker thread before the sink has it, and says its first event id."""
    pause = pause_point("batch-sending")
    monkeypatch.setenv(*next(iter(pause.env().items())))
    sink = Flaky()
    ship = sink_of(sink, batch_size=2)
    try:
        for first in (1, 3):
            future = ship.submit(items(first, first + 1), ["", ""], lambda: None)
            conn = pause.wait(_ThisProcess(future), timeout=30)
            assert conn is not None and pause.detail == str(first)
            assert sink.tries == [str(i) for i in range(1, first, 2)]  # not at the sink yet
            pause.release(conn)
            future.result(30)
    finally:
        monkeypatch.delenv("NODECLI_TEST_PAUSE")
        ship.close()
    assert sink.held == [["1", "2"], ["3", "4"]]
