"""Boundaries of the output shapes (``--field``, ``--query``, ``-o yaml|raw|columns=``,
``-o json``) found by mutation testing: the exact limits of a field path and of the
message naming a field that matches nothing, and YAML as the documented writer gives it.
In-process, on the shapes themselves: no node is needed to shape a JSON form."""

from __future__ import annotations

import io
from typing import Any

import pytest

from nodecli.errors import UsageError
from nodecli.render.shape import MAX_PATH_PARTS, Shape, path, yaml_text


def _fields(data: Any, *fields: str, items: str | None = None) -> str:
    out = io.StringIO()
    Shape.make("json", None, fields).write(data, out, items=items)
    return out.getvalue()


def _field_error(data: Any, field: str) -> str:
    with pytest.raises(UsageError) as info:
        _fields(data, field)
    return str(info.value)


def test_a_field_path_has_at_most_32_parts():
    assert MAX_PATH_PARTS == 32
    assert len(path(".".join(["a"] * 32))) == 32
    with pytest.raises(UsageError, match="is not a field path"):
        path(".".join(["a"] * 33))


def test_a_bad_field_path_is_named_by_its_first_60_characters():
    text = "x" * 59 + "yz.."
    with pytest.raises(UsageError) as info:
        path(text)
    assert str(info.value).startswith(repr("x" * 59 + "y") + " is not a field path")


def test_fields_on_a_list_when_the_form_may_hold_its_list_under_a_key():
    # ``items`` names where an object form holds its list; a plain list is its own rows
    assert _fields([{"a": 1}, {"a": 2}], "a", items="events") == "1\n2\n"
    # an object whose ``items`` is no list (a hostile node) is one row, not its letters
    assert _fields({"events": "abc", "a": 1}, "a", items="events") == "1\n"
    with pytest.raises(UsageError, match=r"\(its fields: a, events\)"):
        _fields({"events": "abc", "a": 1}, "b", items="events")


def test_a_field_matching_nothing_names_the_fields_of_the_first_50_items():
    rows: list[dict[str, Any]] = [{"id": i} for i in range(49)]
    assert "(its fields: id, in50)" in _field_error([*rows, {"in50": 1}], "nope")
    assert "(its fields: id)" in _field_error([*rows, {"id": 49}, {"in51": 1}], "nope")


def test_a_field_matching_nothing_lists_12_fields_then_an_ellipsis():
    twelve = {f"k{i:02}": i for i in range(12)}
    names = ", ".join(twelve)
    assert _field_error(twelve, "nope") == \
        f"--field 'nope' matches nothing in the result (its fields: {names})"
    thirteen = {**twelve, "k12": 12}
    assert _field_error(thirteen, "nope") == \
        f"--field 'nope' matches nothing in the result (its fields: {names}, ...)"


def test_a_field_matching_nothing_in_no_object_says_no_fields():
    assert _field_error([1, 2], "nope") == "--field 'nope' matches nothing in the result"


def test_the_message_cuts_long_field_names_at_40_and_the_path_at_80():
    long_key = "k" * 39 + "LM"
    message = _field_error({long_key: 1}, "nope")
    assert message.endswith(f"(its fields: {'k' * 39}L)")
    long_path = "p" * 79 + "QR"
    message = _field_error({"a": 1}, long_path)
    assert message.startswith(f"--field {'p' * 79 + 'Q'!r} matches nothing")


def test_yaml_keeps_key_order_unicode_block_style_and_long_lines():
    data = {"b": 1, "a": {"ü": "東京", "list": [1, 2]}, "long": "x" * 900 + " y"}
    assert yaml_text(data) == (
        "b: 1\n"
        "a:\n"
        "  ü: 東京\n"
        "  list:\n"
        "  - 1\n"
        "  - 2\n"
        f"long: {'x' * 900} y\n")


def _shaped(fmt: str, query: str | None, fields: tuple[str, ...], data: Any,
            items: str | None = None) -> str:
    out = io.StringIO()
    Shape.make(fmt, query, fields).write(data, out, items=items)
    return out.getvalue()


EVENTS_FORM = {"events": [{"n": 1}, {"n": 2}], "next": "t"}


def test_fields_and_columns_take_the_items_of_an_object_form_unless_a_query_reshaped_it():
    assert _shaped("json", None, ("n",), EVENTS_FORM, items="events") == "1\n2\n"
    assert _shaped("columns=n", None, (), EVENTS_FORM, items="events") == "n\n1\n2\n"
    # after --query the result is what the query made: `@` is the object itself
    with pytest.raises(UsageError, match="matches nothing"):
        _shaped("json", "@", ("n",), EVENTS_FORM, items="events")
    assert _shaped("columns=next", "@", (), EVENTS_FORM, items="events") == "next\nt\n"
    assert _shaped("columns=n", "@", (), EVENTS_FORM, items="events") == "n\n-\n"
    assert _shaped("json", "events", ("n",), EVENTS_FORM, items="events") == "1\n2\n"


def test_yaml_and_raw_through_the_shape():
    assert _shaped("yaml", None, (), {"b": 1, "a": [1]}) == "b: 1\na:\n- 1\n"
    # raw: one line per item of a list, one line for anything else
    assert _shaped("raw", None, (), {"b": 1, "a": "x"}) == '{"b":1,"a":"x"}\n'
    assert _shaped("raw", None, (), ["x", 2, None, {"k": [1]}]) == 'x\n2\n\n{"k":[1]}\n'
    assert _shaped("raw", None, (), "text") == "text\n"


def test_a_bad_query_is_one_line_the_first_of_the_parsers_message():
    with pytest.raises(UsageError) as info:
        Shape.make("json", "a.", ())
    assert str(info.value) == (
        "--query: Expecting: ['quoted_identifier', 'unquoted_identifier', 'lbracket', "
        "'lbrace'], got: eof: Parse error at column 2, token \"\" (EOF), for expression:")


def test_a_query_result_is_json_indented_by_two():
    assert _shaped("json", "@", (), {"a": [1]}) == '{\n  "a": [\n    1\n  ]\n}\n'
