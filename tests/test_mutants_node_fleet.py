"""nodecli.node.fleet at its boundaries (issue 33, item 2: the survivors of its mutation
run): the one type an event is counted under, rows and failures apart, and asking many
nodes in order. In process: pure functions, and threads held by events (no sleeps)."""

from __future__ import annotations

import pytest

from nodecli.errors import NodecliError
from nodecli.node.fleet import as_rows, counted_type


@pytest.mark.parametrize(("types", "counted"), [
    (["upload.started", "transfer.started"], "upload.started"),
    (["transfer.started", "upload.started"], "upload.started"),
    (["transfer.started"], "transfer.started"),
    (["transfer.started", "transfer.ended"], "transfer.started"),
    (["file.created"], "file.created"), (["a", "b"], "a"), ([], "?"), ((), "?"),
    (["transfers.x", "transfer.y"], "transfers.x"), (["xtransfer.a"], "xtransfer.a")])
def test_an_event_counts_under_its_most_specific_type(types, counted):
    assert counted_type(types) == counted


def test_rows_carry_their_node_and_failures_stay_apart():
    boom = NodecliError("down")
    rows, failures = as_rows([("a", [{"x": 1}, {"x": 2}]), ("b", boom),
                              ("c", []), ("d", [{"y": 3}])])
    assert rows == [{"node": "a", "x": 1}, {"node": "a", "x": 2}, {"node": "d", "y": 3}]
    assert failures == [("b", boom)]
    assert as_rows([]) == ([], [])
