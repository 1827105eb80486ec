"""The one-node tail (nodecli/node/events/tail.py) at the edges the mutation run found
unwatched: a refused iteration token's message and hint (from a checkpoint or given),
word for word and cut at 60 characters, ... In process."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodecli.errors import NodecliError
from nodecli.node.events import tail as tail_mod
from nodecli.node.events.checkpoint import CheckpointFile
from nodecli.node.events.pages import EventFilter

SINCE = datetime(2000, 1, 1, tzinfo=UTC)  # every event of the log
REFUSED = "GET https://n/events?iteration_token=x: HTTP 400: invalid iteration_token"


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


def test_a_tail_that_reached_the_present_says_so_and_where_it_started(node, log):
    log.generate(3)
    st, text = run(node(), tail_mod.TailOptions(since=SINCE, page_size=2))
    assert ids(text) == ["1", "2", "3"]
    assert (st.emitted, st.pages, st.stopped_by) == (3, 3, "caught-up")
    assert st.start == "since 2000-01-01T00:00:00Z"


def test_a_resume_on_a_node_whose_version_is_unknown_asks_for_the_marked_event(node, log,
                                                                               tmp_path):
    """(no /info answer: GET /events/{id} is tried all the same)"""
    from nodecli.node.events.checkpoint import node_key

    log.generate(2)
    client = node()
    cp = CheckpointFile(tmp_path / "c.json", node=node_key(client), flt=EventFilter())
    assert ids(run(client, checkpoint=cp)[1]) == ["1", "2"]
    log.generate(1)
    st, text = run(client, checkpoint=cp)
    assert ids(text) == ["3"] and st.start == f"checkpoint {tmp_path / 'c.json'}"


def test_a_token_refused_on_a_later_page_is_named(node, log):
    """The first page taken, the node then refuses the token of its Link: the message
    names that token (not a raw HTTP error)."""
    from nodecli.emulator.server import Reply

    log.push_reply(Reply(200, [{"id": "1"}], {"Link": '</events?iteration_token=77>; '
                                                      'rel="next"'}),
                   Reply(400, {"error": "bad token"}))
    with pytest.raises(NodecliError) as exc:
        run(node().derive(max_attempts=1))
    assert exc.value.message.startswith("the node refused iteration token 77: ")
