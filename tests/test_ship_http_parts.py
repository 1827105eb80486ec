"""node/events/sink_http.py in process against the emulator's HTTPS collector: which
credentials go as what, the statuses that are delivery, a retryable failure or a
refusal (at their boundaries), an empty batch, and a refused batch set aside with no one
to tell."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from nodecli.errors import UsageError
from nodecli.node.events.batch import Shipped, SinkContext, SinkError
from nodecli.node.events.sink_http import HttpSink
from tests import test_events_ship as shipping

# the collector fixtures of tests/test_events_ship.py (module-scoped server, fresh state)
_collector_server = shipping._collector_server
collector = shipping.collector


def batch(*ids: int) -> list[Shipped]:
    return [Shipped("n1", str(i), ("a.b",), json.dumps({"id": str(i)}).encode())
            for i in ids]


@pytest.fixture
def sink_of(collector, emulator):
    made: list[HttpSink] = []

    def make(**ctx: Any) -> HttpSink:
        sink = HttpSink(collector.url, SinkContext(cacert=Path(emulator.ca_file), **ctx))
        made.append(sink)
        return sink

    yield make
    for sink in made:
        sink.close()


@pytest.mark.parametrize("ctx", [{"token": "t", "user": "u"}, {"token": "t", "password": "p"},
                                 {"token": "t", "user": "u", "password": "p"}])
def test_a_token_and_a_user_or_password_are_refused_together(ctx):
    with pytest.raises(UsageError) as err:
        HttpSink("https://h/in", SinkContext(**ctx))
    assert err.value.message == "the HTTP sink takes a token or a user and password, not both"


@pytest.mark.parametrize(("ctx", "sent"), [
    ({"token": "tok"}, "Bearer tok"),
    ({"user": "u", "password": "pw"}, "Basic " + base64.b64encode(b"u:pw").decode()),
    ({"user": "u"}, "Basic " + base64.b64encode(b"u:").decode()),
    ({"password": "pw"}, "Basic " + base64.b64encode(b":pw").decode()),
    ({}, None),
])
def test_the_credentials_sent(sink_of, collector, ctx, sent):
    sink = sink_of(**ctx)
    sink.deliver(batch(1, 2))
    assert collector.state.headers[-1].get("Authorization") == sent
    assert collector.state.batches == 1
    for secret in (ctx.get("token"), ctx.get("password")):
        if secret:  # never in what the sink's client says
            assert sink.client.redact(f"a {secret} b") == "a *** b"


def test_an_empty_batch_is_not_posted(sink_of, collector):
    sink_of().deliver([])
    assert collector.state.posts == 0


@pytest.mark.parametrize(("status", "outcome"), [
    (299, "delivered"), (300, "refused"), (400, "refused"), (428, "refused"),
    (430, "refused"), (499, "refused"), (500, "retryable"), (501, "retryable"),
])
def test_which_answers_are_delivery_a_failure_or_a_refusal(sink_of, collector, status,
                                                           outcome):
    """2xx is delivery; 5xx (and 429, tested with the attempts) may pass with time;
    anything else refuses the batch. (429, 502, 503 and 504 are retried by the client
    first: tests/test_ship_http_bounds.py.)"""
    collector.state.fail_first, collector.state.fail_status = 1, status
    sink = sink_of()
    if outcome == "delivered":
        sink.deliver(batch(1))
        assert collector.state.posts == 1
        return
    with pytest.raises(SinkError) as err:
        sink.deliver(batch(1))
    assert err.value.retryable is (outcome == "retryable")
    if outcome == "retryable":
        assert err.value.message.startswith("the collector did not take batch n1:1:1: ")
    else:
        assert err.value.message.startswith("the collector refused batch n1:1:1 (1 event): ")
        assert err.value.hint is not None and "--dead-letter FILE" in err.value.hint
    assert collector.state.posts == 1


def test_a_batch_set_aside_with_no_one_to_tell(sink_of, collector, tmp_path):
    dead = tmp_path / "dead.jsonl"
    collector.state.refuse = {1, 3}
    sink = sink_of(dead_letter=dead)
    sink.deliver(batch(1, 2))
    sink.deliver(batch(3))
    sink.deliver(batch(4))
    assert [json.loads(x)["id"] for x in dead.read_text().splitlines()] == ["1", "2", "4"]
    assert sink.set_aside == 2 and collector.state.batches == 1


def test_a_batch_set_aside_is_told_in_one_line(sink_of, collector, tmp_path):
    dead = tmp_path / "dead.jsonl"
    told: list[str] = []
    collector.state.refuse = {1}
    sink_of(dead_letter=dead, notice=told.append).deliver(batch(1, 2))
    assert len(told) == 1 and told[0].startswith("the collector refused batch n1:1:2 "
                                                 "(2 events): ")
    assert told[0].endswith(f"HTTP 400: batch 1 refused; set aside in {dead}")


def test_a_blank_line_in_a_file_is_skipped_not_the_end(tmp_path):
    from nodecli.node.events.stats import Stats, file_events

    path = tmp_path / "ev.jsonl"
    path.write_bytes(b'{"id": "1"}\n\n  \n{"id": "2"}\nnot json\n')
    stats = Stats()
    assert [e["id"] for e in file_events(path, stats)] == ["1", "2"]
    assert stats.unreadable == 1
