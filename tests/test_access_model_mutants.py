"""The access model (nodecli.node.access_model) at the boundaries mutation testing found
untested (docs/development.md, "Equivalent survivors: nodecli/node/access_model.py")."""

from __future__ import annotations

from nodecli.node.access_model import Model, Perm


def test_who_can_orders_numeric_ids_of_any_length_before_a_nodes_other_words():
    big = str((1 << 62) + 1)  # past any sentinel a number could be given
    ids = ["x", "²", big, "10", "9"]  # "²" is a digit to isdigit, no number to int
    rows = Model("ak", "/", [Perm(i, "/d", "user", "u", ("read",)) for i in ids]).who_can("/d")
    assert [h.perm.id for h in rows] == ["9", "10", big, "x", "²"]
