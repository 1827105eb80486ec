"""A YAML document whose aliases stand for more values than its text could hold (the
"billion laughs": ten lines, 9**9 values) is refused at once, with one line, and never
read to the end; a document within the budget is read as before."""

from __future__ import annotations

import pytest

from nodecli.declare import document, yaml_values
from nodecli.errors import UsageError

HEAD = "version: 1\naccess_keys:\n  a:\n    storage: {path: /d}\n    configuration:\n"


def _laughs(levels: int, *, marked: bool = False) -> bytes:
    """``marked``: a key that is a number (``1: x``) sends the reading down the second,
    line-noting path (the quick one leaves it to that one)."""
    rows = ["1: x"] if marked else []
    rows.append("a0: &a0 [x, x, x, x, x, x, x, x, x]")
    for i in range(1, levels):
        rows.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return (HEAD + "".join(f"      {row}\n" for row in rows)).encode()


@pytest.mark.parametrize("marked", [False, True], ids=["quick", "marked"])
def test_a_billion_laughs_is_refused_with_one_line(marked):
    with pytest.raises(UsageError) as info:
        document.parse(_laughs(10, marked=marked), "bomb.yaml")
    message = info.value.message
    assert message.startswith("bomb.yaml: its aliases stand for more than ")
    assert "alias bomb" in message and "\n" not in message


@pytest.mark.parametrize("marked", [False, True], ids=["quick", "marked"])
def test_aliases_within_the_budget_are_read(marked):
    doc = document.parse(_laughs(3, marked=marked), "ok.yaml")  # 9 + 81 + 729 values
    key = (doc.access_keys or {})["a"]
    assert key.configuration is not None
    assert key.configuration["a2"][0][0] == ["x"] * 9


@pytest.mark.parametrize(("spare", "read"), [(0, True), (-1, False)])
def test_the_budget_at_its_edge(monkeypatch, spare, read):
    """``version: 1`` is two values (the mapping and its 1): with a budget of exactly
    two it is read, with one it is refused; both readings (quick and marked) count."""
    raw = b"version: 1\n"
    monkeypatch.setattr(yaml_values, "ALIAS_VALUES", 2 - 2 * len(raw) + spare)
    if read:
        assert document.parse(raw, "d.yaml").to_dict() == {"version": 1}
    else:
        with pytest.raises(UsageError, match="aliases stand for more than 1 values"):
            document.parse(raw, "d.yaml")


def test_a_document_without_aliases_at_two_values_a_byte_is_read(monkeypatch):
    """``{a,b,...}`` holds two values a key byte pair: the densest text there is; with no
    budget for aliases at all, a document of it is still read (and then checked)."""
    monkeypatch.setattr(yaml_values, "ALIAS_VALUES", 0)
    flow = "{" + ",".join(f"k{i}" for i in range(2000)) + "}"
    raw = ("version: 1\naccess_keys:\n  a:\n    storage: {path: /d}\n"
           f"    configuration: {flow}\n").encode()
    key = (document.parse(raw, "dense.yaml").access_keys or {})["a"]
    assert key.configuration is not None and len(key.configuration) == 2000
