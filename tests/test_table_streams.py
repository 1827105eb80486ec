"""``Terminal.table`` writes csv and jsonl rows as they come: rows given as an iterator
(a folder of millions of entries, a walk of a whole tree) are never all held, and what
was written before a failure stays written. Table and json need every row first."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from nodecli.cli.app import Terminal
from nodecli.render.table import Column

COLUMNS = [Column("name", "NAME"), Column("size", "SIZE")]


class Broken(Exception):
    pass


def rows(out: io.StringIO, seen: list[str]) -> Iterator[dict[str, Any]]:
    """Two rows; before making the second, note what was written of the first; then
    fail, as a listing cut off by the node."""
    yield {"name": "a", "size": 1}
    seen.append(out.getvalue())
    yield {"name": "b", "size": 2}
    seen.append(out.getvalue())
    raise Broken


@pytest.mark.parametrize(("fmt", "first", "both"), [
    ("csv", "name,size\na,1\n", "name,size\na,1\nb,2\n"),
    ("jsonl", '{"name":"a","size":1}\n', '{"name":"a","size":1}\n{"name":"b","size":2}\n'),
])
def test_csv_and_jsonl_write_each_row_before_the_next_is_made(fmt, first, both):
    out = io.StringIO()
    seen: list[str] = []
    with pytest.raises(Broken):
        Terminal(no_color=True, _stdout=out, _stderr=io.StringIO()).table(
            rows(out, seen), COLUMNS, fmt)
    assert seen == [first, both]
    assert out.getvalue() == both


@pytest.mark.parametrize("fmt", ["table", "wide", "json"])
def test_table_and_json_take_every_row_first(fmt):
    out = io.StringIO()
    seen: list[str] = []
    with pytest.raises(Broken):
        Terminal(no_color=True, _stdout=out, _stderr=io.StringIO()).table(
            rows(out, seen), COLUMNS, fmt)
    assert seen == ["", ""] and out.getvalue() == ""


@pytest.mark.parametrize(("fmt", "shown"), [
    ("csv", "name,size\na,1\n"), ("jsonl", '{"name":"a","size":1}\n'),
    ("json", '[\n  {\n    "name": "a",\n    "size": 1\n  }\n]\n'),
    ("table", "NAME  SIZE\na     1\n"),
])
def test_an_iterator_and_a_list_print_the_same(fmt, shown):
    for given in ([{"name": "a", "size": 1}], iter([{"name": "a", "size": 1}])):
        out = io.StringIO()
        Terminal(no_color=True, _stdout=out, _stderr=io.StringIO()).table(given, COLUMNS, fmt)
        assert out.getvalue() == shown


@pytest.mark.parametrize("fmt", ["table", "wide"])
def test_an_empty_iterator_says_nothing_to_list_on_stderr(fmt):
    out, err = io.StringIO(), io.StringIO()
    Terminal(no_color=True, _stdout=out, _stderr=err).table(iter([]), COLUMNS, fmt,
                                                            empty="empty folder")
    assert out.getvalue() == "" and "empty folder" in err.getvalue()
