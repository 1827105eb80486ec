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


# -- tables, csv and strict JSON (render/table.py) ---------------------------------------------

def test_json_is_strict_whatever_the_data_holds():
    from nodecli.render.table import json_text

    nan, inf = float("nan"), float("inf")
    data = {"a": [1.5, nan, {"b": (inf, -inf)}], "é": "\ud800"}
    assert json_text(data) == \
        '{"a":[1.5,"NaN",{"b":["Infinity","-Infinity"]}],"é":"\\ud800"}'
    assert json_text({"a": [nan]}, indent=2) == '{\n  "a": [\n    "NaN"\n  ]\n}'
    assert json_text([0.0, -0.0, 1e308]) == "[0.0,-0.0,1e+308]"


def test_json_nested_too_deeply_is_a_placeholder():
    from nodecli.render.table import json_text

    deep: Any = 1
    for _ in range(500):
        deep = [deep]
    assert json_text(deep) == "[" * 500 + "1" + "]" * 500
    assert json_text(deep, indent=1).count("\n") == 1000
    for _ in range(1500):
        deep = [deep]
    assert json_text(deep) == '"(nested too deeply to write as JSON)"'
    assert json_text(deep, indent=2) == '"(nested too deeply to write as JSON)"'


def test_cells_as_every_table_shows_them():
    from nodecli.render.table import _cell

    assert [_cell(v) for v in ["", [], (), None, True, False, 0, "x", ["a", "b\x1b"]]] == \
        ["-", "-", "-", "-", "yes", "no", "0", "x", "a,b?"]
    assert _cell({"k": [1, "v"]}) == '{"k":[1,"v"]}'
    assert _cell(None, "") == "" and _cell("", "") == ""


@pytest.mark.parametrize("value, cell", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@x", "'@x"), ("\tx", " x"),
    ("\rx", "?x"), ("a=b", "a=b"), (-1, "-1"), (None, '""'), (True, "yes"),
])
def test_csv_cells_a_spreadsheet_would_run_are_quoted(value, cell):
    from nodecli.render.table import Column, render_csv

    out = io.StringIO()
    render_csv([{"k": value}], [Column("k", "K")], out)
    assert out.getvalue().splitlines() == ["k", cell]


def test_csv_without_headers():
    from nodecli.render.table import Column, render_csv

    out = io.StringIO()
    render_csv([{"a": 1, "b": "x,y"}], [Column("a", "A"), Column("b", "B")], out,
               headers=False)
    assert out.getvalue() == '1,"x,y"\n'


def test_plain_tables_align_cut_and_leave_nothing_trailing():
    from nodecli.render.table import Column, render_plain_table

    cols = [Column("n", "N", "right"), Column("t", "TEXT")]
    out = io.StringIO()
    render_plain_table([{"n": 5, "t": "abcdefgh"}, {"n": 100}], cols, out, caps={"t": 5})
    assert out.getvalue() == "  N  TEXT\n  5  abcd…\n100  -\n"
    out = io.StringIO()
    render_plain_table([], cols, out, headers=False)
    assert out.getvalue() == ""
    out = io.StringIO()
    render_plain_table([{"n": 1, "t": "x"}], cols, out, headers=False)
    assert out.getvalue() == "1  x\n"


def test_jsonl_is_one_compact_object_a_line():
    from nodecli.render.table import render_jsonl

    out = io.StringIO()
    render_jsonl([{"a": 1}, [float("nan")]], out)
    assert out.getvalue() == '{"a":1}\n["NaN"]\n'



def _fit(width: int) -> tuple[list[str], dict[str, int]]:
    from nodecli.render.table import Column, fit_columns, natural_width

    cols = [Column("id", "ID", whole=True), Column("name", "NAME"),
            Column("err", "ERROR", free=True), Column("x", "X", drop=1)]
    rows = [{"id": "abc123", "name": "n" * 20, "err": "e" * 40, "x": "x" * 8}]
    assert natural_width(rows, cols) == 6 + 20 + 40 + 8 + 3 * 2
    kept, caps = fit_columns(rows, cols, width)
    return [c.key for c in kept], caps


@pytest.mark.parametrize("width, kept, caps", [
    (80, ["id", "name", "err", "x"], {}),  # exactly the natural width
    (79, ["id", "name", "err", "x"], {"err": 39}),  # free text gives way first
    (56, ["id", "name", "err", "x"], {"err": 16}),  # ... down to 16
    (55, ["id", "name", "err", "x"], {"err": 16, "name": 19}),  # then the widest
    (30, ["id", "name", "err", "x"], {"err": 6, "name": 6, "x": 6}),  # all at floors
    (29, ["id", "name", "err"], {"err": 13, "name": 6}),  # the droppable one goes
    (10, ["id", "name", "err"], {"err": 6, "name": 6}),  # wider than the terminal
])
def test_a_table_fits_its_terminal_at_the_exact_widths(width, kept, caps):
    assert _fit(width) == (kept, caps)


@pytest.mark.parametrize("width, kept", [(22, "abc"), (21, "ac"), (14, "ac"), (13, "c")])
def test_droppable_columns_go_by_rank_while_the_floors_do_not_fit(width, kept):
    from nodecli.render.table import Column, fit_columns

    cols = [Column("a", "A", drop=2), Column("b", "B", drop=1), Column("c", "C")]
    rows = [{"a": "a" * 6, "b": "b" * 6, "c": "c" * 6}]
    got, caps = fit_columns(rows, cols, width)
    assert "".join(c.key for c in got) == kept and caps == {}


def test_fields_are_cut_to_the_rest_of_the_line_and_never_below_6():
    from nodecli.render.table import render_fields

    out = io.StringIO()
    render_fields([("name", "x" * 30), ("id", 1)], out, width=20)
    assert out.getvalue() == f"name  {'x' * 13}…\nid    1\n"
    out = io.StringIO()
    render_fields([("name", "x" * 30), ("id", 1)], out, width=4)
    assert out.getvalue() == f"name  {'x' * 5}…\nid    1\n"
    out = io.StringIO()
    render_fields([("name", "x" * 14)], out, width=20)  # exactly the room left
    assert out.getvalue() == f"name  {'x' * 14}\n"
    out = io.StringIO()
    render_fields([("name", "x" * 30), ("a\x1b", "")], out)
    assert out.getvalue() == f"name  {'x' * 30}\na?    -\n"
    render_fields([], out)
    assert out.getvalue().count("\n") == 2


def test_a_whole_column_counts_whole_when_columns_are_dropped():
    from nodecli.render.table import Column, fit_columns

    cols = [Column("id", "ID", whole=True), Column("x", "X", drop=1)]
    rows = [{"id": "i" * 10, "x": "x" * 6}]
    assert [c.key for c in fit_columns(rows, cols, 18)[0]] == ["id", "x"]
    assert [c.key for c in fit_columns(rows, cols, 17)[0]] == ["id"]


def test_a_column_at_its_floor_lets_the_others_give_way():
    from nodecli.render.table import Column, fit_columns

    # the widest column is its heading (its floor): the next one is cut instead
    cols = [Column("a", "AAAAAAAAAAA"), Column("b", "B")]
    assert fit_columns([{"a": "x", "b": "b" * 10}], cols, 20)[1] == {"b": 7}


def test_free_text_gives_way_before_wider_columns():
    from nodecli.render.table import Column, fit_columns, natural_width

    cols = [Column("name", "NAME"), Column("err", "ERROR", free=True)]
    rows = [{"name": "n" * 40, "err": "e" * 20}]
    assert natural_width(rows, cols) == 62
    assert fit_columns(rows, cols, 58)[1] == {"err": 16}
    assert fit_columns(rows, cols, 50)[1] == {"err": 16, "name": 32}


def test_the_natural_width_of_one_column_has_no_gap():
    from nodecli.render.table import Column, natural_width

    assert natural_width([{"a": "x" * 9}], [Column("a", "A")]) == 9
    assert natural_width([], []) == 0


def test_a_field_value_ending_in_blanks_leaves_nothing_trailing():
    from nodecli.render.table import render_fields

    out = io.StringIO()
    render_fields([("a", "x  "), ("name", "y")], out)
    assert out.getvalue() == "a     x\nname  y\n"


def test_a_rich_table_has_headers_and_fits_its_console_by_default():
    from rich.console import Console

    from nodecli.render.table import Column, render_rich_table

    console = Console(file=io.StringIO(), width=30, no_color=True, force_terminal=False)
    render_rich_table([{"a": "x" * 50, "b": "y"}], [Column("a", "A"), Column("b", "B")],
                      console, None)
    lines = console.file.getvalue().splitlines()
    assert lines[0].split() == ["A"] and "…" in lines[1]
    assert max(len(line) for line in lines) <= 30


# -- text for a terminal (render/text.py) ------------------------------------------------------

def test_sanitize_removes_escapes_and_shows_controls_as_question_marks():
    from nodecli.render.text import sanitize, sanitize_lines

    assert sanitize("a\tb\x1b[31mc\x1b]0;t\x07d\x1bXe\x7f\x9f\u202e\ud800") == "a bcde????"
    assert sanitize("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\") == "link"
    assert sanitize("plain é 東京") == "plain é 東京" and sanitize(5) == "5"
    assert sanitize_lines("a\x1b[1m\nb\tc\n") == "a\nb c\n"
    assert sanitize_lines(7) == "7"


def test_display_width_counts_wide_as_2_and_combining_as_0():
    from nodecli.render.text import display_width

    assert display_width("e\u0301東") == 3
    assert display_width("\uff21") == 2  # fullwidth A: "F"
    assert display_width("") == 0


@pytest.mark.parametrize("text, width, clipped", [
    ("abcd", 4, "abcd"), ("abcde", 4, "abc…"), ("東京都", 4, "東…"), ("東京都", 5, "東京…"),
    ("東京都", 6, "東京都"), ("ab", 1, "…"),
])
def test_clip_at_the_exact_width(text, width, clipped):
    from nodecli.render.text import clip, display_width

    assert clip(text, width) == clipped
    assert display_width(clipped) <= max(width, 1)


def test_a_status_line_leaves_the_last_column_free_and_has_no_controls():
    from nodecli.render.text import fit_line

    assert fit_line("a\tb\x1bc\u202e" + "x" * 20, 10) == "a b c?xx…"
    assert fit_line("x" * 9, 10) == "x" * 9
    assert fit_line("x" * 10, 10) == "x" * 8 + "…"
    assert fit_line("a\x7f\x9f\xa0b", 80) == "a  \xa0b"
    assert fit_line("abc", 1) == "…" and fit_line("abc", 0) == "…"


def test_terminal_columns_from_columns_then_the_terminal_then_the_default(monkeypatch):
    import fcntl
    import os
    import struct
    import termios

    from nodecli.render.text import terminal_columns

    monkeypatch.setenv("COLUMNS", "120")
    assert terminal_columns(io.StringIO()) == 120
    monkeypatch.setenv("COLUMNS", "1")
    assert terminal_columns(io.StringIO()) == 1
    monkeypatch.delenv("COLUMNS")
    assert terminal_columns(io.StringIO()) == 80
    master, slave = os.openpty()
    try:
        with open(slave, "w", closefd=False) as tty:
            for value in ("0", "x", ""):
                monkeypatch.setenv("COLUMNS", value)
                fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 132, 0, 0))
                assert terminal_columns(tty) == 132
                fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 0, 0, 0))
                assert terminal_columns(tty, default=99) == 99
                assert terminal_columns(io.StringIO()) == 80
    finally:
        os.close(master)
        os.close(slave)


def test_is_tty_on_what_is_not_a_terminal(monkeypatch):
    import os

    from nodecli.render.text import is_tty

    assert is_tty(io.StringIO()) is False and is_tty(object()) is False  # type: ignore[arg-type]
    closed = io.StringIO()
    closed.close()
    assert is_tty(closed) is False
    master, slave = os.openpty()
    try:
        with open(slave, "w", closefd=False) as tty:
            assert is_tty(tty) is True
            # None (sys.stdin when descriptor 0 was closed at start) is no terminal, even
            # with stdout on one (it once took stdout's answer)
            monkeypatch.setattr("sys.stdout", tty)
            assert is_tty(None) is False
    finally:
        os.close(master)
        os.close(slave)


def test_times_are_iso_utc_to_the_second_and_odd_values_shown_as_they_are():
    from nodecli.render.text import iso_time

    assert iso_time("2026-11-23T11:00:00.9+01:00") == "2026-11-23T10:00:00Z"
    assert iso_time("nope\x1b") == "nope?" and iso_time(None) == "" and iso_time(5) == "5"


# -- events as text (render/events.py) ---------------------------------------------------------

def test_event_families_and_the_most_specific_type():
    from nodecli.render.events import family_of, main_type

    assert [family_of(t) for t in (["x", "file.a", "transfer.b"], ["file.a", "file.filelock.b"],
                                   ["permission.x", "file.y"], ["download.x"], ["upload.x"],
                                   ["other"], [])] == \
        ["transfer", "lock", "permission", "transfer", "transfer", "other", "other"]
    assert main_type(["transfer.a", "transfer.b"]) == "transfer.a"
    assert main_type(["transfer.a", "upload.b"]) == "upload.b" and main_type([]) == "?"


def test_transfer_summaries_running_ended_and_odd():
    from nodecli.render.events import summary

    running = {"types": ["upload.started", "transfer.started"], "data": {
        "direction": "receive", "status": "running", "end_time_usec": 5,
        "bytes_transferred": 2_500_000, "current_rate_kbps": 800, "target_rate_kbps": 1000,
        "remote_host": "h", "files_completed": 0}}
    assert summary(running) == "receive [RUNNING] h 2.5 MB now 800 kbps target 1.0 Mbps"
    ended = {"types": ["transfer.ended"], "data": {
        "direction": "send", "status": "failed", "start_time_usec": 1_000_000,
        "end_time_usec": 1_000_000, "bytes_transferred": 10, "avg_rate_kbps": 5,
        "files_completed": 3, "error_code": 19, "error_desc": "x" * 300}}
    assert summary(ended) == \
        f"send failed ? 10 B avg 5 kbps in 0.0 s target ? 3 files error 19: {'x' * 199}…"
    assert summary(ended, whole=True).endswith(f"error 19: {'x' * 300}")
    assert summary({"types": ["transfer.ended"], "data": {
        "start_time_usec": 5, "end_time_usec": 4}}) == "? ? ? ? avg ? target ?"
    assert summary({"types": ["transfer.ended"], "data": {
        "start_time_usec": 0, "end_time_usec": 10**301}}) == "? ? ? ? avg ? in ? s target ?"
    assert summary({"types": ["transfer.ended"], "data": {
        "start_time_usec": 0, "end_time_usec": 1_500_000, "status": "s" * 30,
        "remote_host": "r" * 90, "direction": "d"}}) == \
        f"d {'s' * 19}… {'r' * 79}… ? avg ? in 1.5 s target ?"


def test_lock_permission_and_file_summaries():
    from nodecli.render.events import summary

    assert summary({"types": ["file.filelock.deleted"],
                    "data": {"file_id": "f1", "user_id": "bob"}}) == "lock deleted on f1 by bob"
    assert summary({"types": ["file.filelock.created"],
                    "data": {"id": "i1", "locked_by": "al", "user_id": "bob"}}) == \
        "lock created on i1 by al"
    assert summary({"types": ["file.filelock.created"], "data": {"path": "/x"}}) == \
        "lock created on /x"
    assert summary({"types": ["permission.deleted"], "data": {}}) == "?: ? on file ?"
    assert summary({"types": ["permission.deleted"], "data": {"access_levels": []}}) == \
        "?: (none) on file ?"
    assert summary({"types": ["permission.created"], "data": {
        "access_type": "t" * 30, "access_id": "i", "access_levels": ["l" * 30],
        "file_id": "f"}}) == f"{'t' * 19}… i: {'l' * 19}… on file f"
    assert summary({"types": ["file.deleted"], "data": {"path": "p", "size": True}}) == \
        "p (?)"
    # a field left out is "?", never an empty word (a line starting with a space)
    assert summary({"types": ["file.created"], "data": "no object"}) == "? (?)"
    assert summary({"types": ["file.created"], "data": {"path": "", "size": 3}}) == "? (3 B)"
    assert summary({"types": ["file.filelock.created"], "data": {}}) == "lock created on ?"


EVENT = {"time": "2026-11-23T10:00:00Z", "id": "7", "types": ["file.created"],
         "user_id": "alice", "data": {"path": "/p" * 20, "size": 1}}


@pytest.mark.parametrize("width, line", [
    (None, f"2026-11-23T10:00:00Z  file.created{' ' * 14}alice{' ' * 7}{'/p' * 20} (1 B)"),
    (76, f"2026-11-23T10:00:00Z  file.created{' ' * 14}alice{' ' * 7}{'/p' * 7}/…"),
    (75, f"2026-11-23T10:00:00Z  file.created  alice  {'/p' * 15}/…"),
    (44, "2026-11-23T10:00:00Z  file.created  alice  …"),
    (43, "2026-11-23T10:00:00Z  file.creat…  alice  …"),
    (30, "2026-11-23T10:00:00Z  f…  a…  …"),
    (1, "2026-11-23T10:00:00Z  …  …  …"),
])
def test_a_pretty_line_fits_its_terminal_at_the_exact_widths(width, line):
    from nodecli.render.events import pretty_line

    assert pretty_line(EVENT, width) == line


def test_pages_of_events_in_each_format():
    from nodecli.render.events import plain_line, render_chunk

    assert plain_line(EVENT) == f"2026-11-23T10:00:00Z\t7\tfile.created\talice\t{'/p' * 20} (1 B)"
    assert render_chunk([(EVENT, "RAW1"), ({"a": 1}, "RAW2")], "jsonl") == "RAW1\nRAW2\n"
    assert render_chunk([({"a": [1]}, "R")], "json") == '{\n  "a": [\n    1\n  ]\n}\n'
    assert render_chunk([({"id": "1"}, "R")], "plain") == "\t1\t\t\t\n"
    assert render_chunk([({"id": "1"}, "R")], "pretty", 30) == " " * 22 + "?    \n"
    assert render_chunk([], "jsonl") == "" and render_chunk([], "pretty") == ""


def test_server_text_is_cut_at_200_unless_whole():
    from nodecli.render.events import MAX_FIELD, clean, cutter

    assert MAX_FIELD == 200
    assert clean("y" * 200) == "y" * 200 and clean("y" * 201) == "y" * 199 + "…"
    assert clean("y" * 300, None) == "y" * 300 and clean(None) == "" and clean(3) == "3"
    assert cutter(False)() == 200 and cutter(False)(20) == 20 and cutter(True)(20) is None


def _cut(ch: str, n: int) -> str:
    """What a server string of 300 ``ch`` shows as, cut to ``n`` columns."""
    return ch * (n - 1) + "…"


LONG_EVENT = {"time": "1" * 300, "id": "i" * 300, "types": ["file." + "t" * 295, "x" * 200],
              "user_id": "u" * 300, "data": {"path": "p" * 300, "size": "12"}}


def test_every_server_string_of_an_event_line_is_cut_to_its_own_length():
    from nodecli.render.events import plain_line, pretty_parts

    assert plain_line(LONG_EVENT).split("\t") == [
        _cut("1", 40), _cut("i", 80), _cut("file." + "t" * 115, 120)[:119] + "…",
        _cut("u", 80), f"{_cut('p', 200)} (?)"]
    t, typ, user, text, family = pretty_parts(LONG_EVENT)
    assert (t, typ, user, family) == (_cut("1", 40), "file." + _cut("t", 35), _cut("u", 40),
                                      "file")
    assert text == f"{_cut('p', 200)} (?)"


def test_every_server_string_of_a_summary_is_cut_to_its_own_length():
    from nodecli.render.events import summary

    assert summary({"types": ["permission.x"], "data": {
        "access_type": "user", "access_id": "a" * 300, "access_levels": ["r", "w"],
        "file_id": "f" * 300}}) == f"user {_cut('a', 60)}: r,w on file {_cut('f', 60)}"
    # the verb is the last part of the most specific type, whatever it is
    assert summary({"types": ["x", "file.filelock.created"], "data": {
        "path": "p" * 300, "locked_by": "b" * 300}}) == \
        f"lock x on {_cut('p', 200)} by {_cut('b', 60)}"
    assert summary({"types": ["file.filelock." + "v" * 30], "data": {"id": "i"}}) == \
        f"lock {_cut('v', 20)} on i"
    assert summary({"types": ["transfer.ended"], "data": {
        "direction": "d" * 30, "bytes_transferred": "12"}}) == \
        f"{_cut('d', 20)} [RUNNING] ? ? now ? target ?"


@pytest.mark.parametrize("start, end, shown", [
    (0, 999_999_000_000, "in 999999.0 s"),
    (0, 10**300 - 1, f"in {(10**300 - 1) / 1e6:.1f} s"),
    (0, 10**300, "in ? s"),
    (10**300, 10**300 + 1_000_000, "in 1.0 s"),
])
def test_a_transfers_duration_and_the_end_of_what_a_float_shows(start, end, shown):
    from nodecli.render.events import summary

    s = summary({"types": ["transfer.ended"], "data": {"start_time_usec": start,
                                                       "end_time_usec": end}})
    assert s == f"? ? ? ? avg ? {shown} target ?"


@pytest.mark.parametrize("width, line", [
    (63, "2026-11-23T10:00:00Z  file.ttttttttttttttttttttttttt  alice  /…"),
    (62, "2026-11-23T10:00:00Z  file.ttttttttttttttttttttttttt  alice  …"),  # 1 column left
    (61, "2026-11-23T10:00:00Z  file.ttttttttttttttttt…  alice  /p (1 …"),  # none: cut
])
def test_the_type_and_user_are_cut_only_when_no_column_is_left(width, line):
    from nodecli.render.events import pretty_line

    event = {**EVENT, "types": ["file." + "t" * 25], "data": {"path": "/p", "size": 1}}
    assert pretty_line(event, width) == line


def test_pages_of_two_events_in_each_format():
    from nodecli.render.events import render_chunk

    two = [({"id": "1"}, "R1"), ({"id": "2"}, "R2")]
    assert render_chunk(two, "json") == '{\n  "id": "1"\n}\n{\n  "id": "2"\n}\n'
    assert render_chunk(two, "plain") == "\t1\t\t\t\n\t2\t\t\t\n"
    assert render_chunk(two, "pretty") == (" " * 22 + "?" + " " * 23 + "  " + " " * 12 + "\n") * 2


def test_whole_summaries_and_counts_that_are_not_integers():
    from nodecli.render.events import plain_line, summary

    assert summary({"types": ["file.created"], "data": {"path": "p" * 300}}, whole=True) == \
        f"{'p' * 300} (?)"
    assert summary({"types": ["file.filelock.created"], "data": {"path": "p" * 300}},
                   whole=True) == f"lock created on {'p' * 300}"
    odd = {"types": ["transfer.ended"], "data": {"end_time_usec": 1, "files_completed": True,
                                                  "error_code": "19", "error_desc": "e"}}
    assert summary(odd) == "? ? ? ? avg ? target ?"
    assert summary({"types": ["transfer.ended"], "data": {
        "end_time_usec": 1, "files_completed": 2, "error_code": 7}}) == \
        "? ? ? ? avg ? target ? 2 files error 7: "
    assert plain_line({"types": ["a", "b"]}) == "\t\ta,b\t\t"



# -- transfer top (render/top.py) ---------------------------------------------------------------
# Seven transfers: three running (a rate, a progress, an ETA of exactly an hour, none), one
# ended exactly 10 minutes ago (shown) and one 10 min 1 s ago (not), two failures.
TOP_NOW = 1_800_000_000.0
_U = 1_000_000


def _t(id, status, **kw):
    return {"id": id, "status": status, **kw}


TOP_TRANSFERS = [
    _t("a1234567890", "running", direction="send", remote_host="h-a", user_id="alice",
       bytes_transferred=500, bytes_expected=1000, current_rate_kbps=8, target_rate_kbps=100,
       start_time_usec=int((TOP_NOW - 50) * _U)),
    _t("b2", "running", direction="receive", remote_host="h-b", user_id="bob",
       bytes_transferred=3_000_000, bytes_expected=3_000_000 + 450_000_000,
       current_rate_kbps=1000,
       target_rate_kbps=2000, start_time_usec=int((TOP_NOW - 10) * _U)),
    _t("c3", "running", remote_host="a-c", bytes_transferred=10, current_rate_kbps=0),
    _t("d4", "completed", remote_host="h-d", bytes_transferred=7,
       end_time_usec=int((TOP_NOW - 600) * _U)),
    _t("e5", "failed", remote_host="h-e", error_code=19, error_desc="disk full",
       end_time_usec=int((TOP_NOW - 5) * _U)),
    _t("f6", "cancelled", end_time_usec=int((TOP_NOW - 601) * _U)),
    _t("g7", "error", error_code="0", end_time_usec=int((TOP_NOW - 30) * _U)),
]

TOP_SCREENS = {
    (88, 20, 'rate', False): [
        '08:00:00Z 3 active, 1.0 Mbps · last 10 min: 1 ended, 2 failed',
        'sort rate · q quit  s sort  f failed only · n1',
        '',
        'ID       DIR  HOST             USER         BYTES          NOW/TARGET DONE    ETA',
        'b2       recv h-b              bob         3.0 MB   1.0 Mbps/2.0 Mbps   0%  1h00m',
        'a1234567 send h-a              alice        500 B     8 kbps/100 kbps  50%  0m00s',
        'c3       recv a-c                            10 B            0 kbps/?    -      -',
        'ID       STATUS     HOST                 BYTES ENDED     ERROR',
        'e5       failed     h-e                    0 B 07:59:55  19: disk full',
        'g7       error                             0 B 07:59:30',
        'd4       completed  h-d                    7 B 07:50:00',
    ],
    (88, 20, 'host', True): [
        '08:00:00Z 3 active, 1.0 Mbps · last 10 min: 1 ended, 2 failed',
        'sort host · failed only · q quit  s sort  f failed only · n1',
        '',
        'ID       STATUS     HOST                 BYTES ENDED     ERROR',
        'e5       failed     h-e                    0 B 07:59:55  19: disk full',
        'g7       error                             0 B 07:59:30',
    ],
    (80, 20, 'progress', False): [
        '08:00:00Z 3 active, 1.0 Mbps · last 10 min: 1 ended, 2 failed',
        'sort progress · q quit  s sort  f failed only · n1',
        '',
        'ID       DIR  HOST            USER         BYTES          NOW/TARGET DONE    E…',
        'a1234567 send h-a             alice        500 B     8 kbps/100 kbps  50%  0m0…',
        'b2       recv h-b             bob         3.0 MB   1.0 Mbps/2.0 Mbps   0%  1h0…',
        'c3       recv a-c                           10 B            0 kbps/?    -     …',
        'ID       STATUS     HOST                BYTES ENDED     ERROR',
        'e5       failed     h-e                   0 B 07:59:55  19: disk full',
        'g7       error                            0 B 07:59:30',
        'd4       completed  h-d                   7 B 07:50:00',
    ],
    (80, 9, 'bytes', False): [
        '08:00:00Z 3 active, 1.0 Mbps · last 10 min: 1 ended, 2 failed',
        'sort bytes · q quit  s sort  f failed only · n1',
        '',
        'ID       DIR  HOST            USER         BYTES          NOW/TARGET DONE    E…',
        '... and 3 more active',
        'ID       STATUS     HOST                BYTES ENDED     ERROR',
        'e5       failed     h-e                   0 B 07:59:55  19: disk full',
        'g7       error                            0 B 07:59:30',
        'd4       completed  h-d                   7 B 07:50:00',
    ],
    (80, 20, 'started', False): [
        '08:00:00Z 3 active, 1.0 Mbps · last 10 min: 1 ended, 2 failed',
        'sort started · q quit  s sort  f failed only · n1',
        '',
        'ID       DIR  HOST            USER         BYTES          NOW/TARGET DONE    E…',
        'b2       recv h-b             bob         3.0 MB   1.0 Mbps/2.0 Mbps   0%  1h0…',
        'a1234567 send h-a             alice        500 B     8 kbps/100 kbps  50%  0m0…',
        'c3       recv a-c                           10 B            0 kbps/?    -     …',
        'ID       STATUS     HOST                BYTES ENDED     ERROR',
        'e5       failed     h-e                   0 B 07:59:55  19: disk full',
        'g7       error                            0 B 07:59:30',
        'd4       completed  h-d                   7 B 07:50:00',
    ],
    (60, 8, 'rate', False): [
        '08:00:00Z 3 active, 1.0 Mbps · last 10 min: 1 ended, 2 fai…',
        'sort rate · q quit  s sort  f failed only · n1',
        '',
        'ID       DIR  HOST            USER         BYTES          …',
        '... and 3 more active',
        'ID       STATUS     HOST                BYTES ENDED     ER…',
        'e5       failed     h-e                   0 B 07:59:55  19…',
        'g7       error                            0 B 07:59:30',
    ],
}


@pytest.mark.parametrize("width, height, sort, failed_only", list(TOP_SCREENS))
def test_the_top_screen_line_by_line(width, height, sort, failed_only):
    from nodecli.render.top import top_lines

    assert top_lines(TOP_TRANSFERS, width=width, height=height, sort=sort,
                     failed_only=failed_only, node="n1", now=TOP_NOW) == \
        TOP_SCREENS[(width, height, sort, failed_only)]


# More running transfers: an ETA of 61 s and of an hour and a minute, one just under a
# century and one of exactly a century (no estimate), done past the expected bytes, no id,
# no host; ended ones with an error code and no text, and with an empty one.
NOW2 = 1_800_000_000.0


def _r(id, **kw):
    return {"id": id, "status": "running", **kw}


TOP_MORE = [
    _r(None, remote_host="zeta", bytes_transferred=100, bytes_expected=100, current_rate_kbps=5,
       start_time_usec=1),
    _r("r2", bytes_transferred=900, bytes_expected=1, current_rate_kbps=50, start_time_usec=9),
    _r("r3", remote_host="m", bytes_transferred=500, bytes_expected=1001, current_rate_kbps=1,
       start_time_usec=5),
    _r("r4", remote_host="b", bytes_transferred=0, bytes_expected=61_000, current_rate_kbps=8,
       start_time_usec=3),
    _r("r5", remote_host="c", bytes_transferred=1, bytes_expected=3_660_001, current_rate_kbps=8,
       start_time_usec=4),
    _r("r6", remote_host="d", bytes_transferred=2, bytes_expected=3_153_600_000_002,
       current_rate_kbps=8, start_time_usec=2),
    _r("r7", remote_host="e", bytes_transferred=3, bytes_expected=3_153_599_999_002,
       current_rate_kbps=8, start_time_usec=6),
    {"id": None, "status": "cancelled", "error_code": 1,
     "end_time_usec": int((NOW2 - 1) * 1_000_000)},
    {"id": "x2", "status": "completed", "error_code": "",
     "end_time_usec": int((NOW2 - 2) * 1_000_000)},
]

TOP_MORE_SCREENS = {
    ('92', '30', '-'): [
        '08:00:00Z 7 active, 88 kbps · last 10 min: 2 ended, 0 failed',
        'sort rate · q quit  s sort  f failed only ·',
        '',
        'ID       DIR  HOST                 USER         BYTES          NOW/TARGET DONE    ETA',
        'r2       recv                                   900 B           50 kbps/? 100%  0m00s',
        'r4       recv b                                   0 B            8 kbps/?   0%  1m01s',
        'r5       recv c                                   1 B            8 kbps/?   0%  1h01m',
        'r6       recv d                                   2 B            8 kbps/?   0%      -',
        'r7       recv e                                   3 B            8 kbps/?   0% 87599…',
        '         recv zeta                              100 B            5 kbps/? 100%  0m00s',
        'r3       recv m                                 500 B            1 kbps/?  49%  0m04s',
        'ID       STATUS     HOST                     BYTES ENDED     ERROR',
        '         cancelled                             0 B 07:59:59  1:',
        'x2       completed                             0 B 07:59:58',
    ],
    ('92', '12', 'bytes'): [
        '08:00:00Z 7 active, 88 kbps · last 10 min: 2 ended, 0 failed',
        'sort bytes · q quit  s sort  f failed only ·',
        '',
        'ID       DIR  HOST                 USER         BYTES          NOW/TARGET DONE    ETA',
        'r2       recv                                   900 B           50 kbps/? 100%  0m00s',
        'r3       recv m                                 500 B            1 kbps/?  49%  0m04s',
        '         recv zeta                              100 B            5 kbps/? 100%  0m00s',
        '... and 4 more active',
        'ID       STATUS     HOST                     BYTES ENDED     ERROR',
        '         cancelled                             0 B 07:59:59  1:',
        'x2       completed                             0 B 07:59:58',
    ],
    ('92', '30', 'started'): [
        '08:00:00Z 7 active, 88 kbps · last 10 min: 2 ended, 0 failed',
        'sort started · q quit  s sort  f failed only ·',
        '',
        'ID       DIR  HOST                 USER         BYTES          NOW/TARGET DONE    ETA',
        'r2       recv                                   900 B           50 kbps/? 100%  0m00s',
        'r7       recv e                                   3 B            8 kbps/?   0% 87599…',
        'r3       recv m                                 500 B            1 kbps/?  49%  0m04s',
        'r5       recv c                                   1 B            8 kbps/?   0%  1h01m',
        'r4       recv b                                   0 B            8 kbps/?   0%  1m01s',
        'r6       recv d                                   2 B            8 kbps/?   0%      -',
        '         recv zeta                              100 B            5 kbps/? 100%  0m00s',
        'ID       STATUS     HOST                     BYTES ENDED     ERROR',
        '         cancelled                             0 B 07:59:59  1:',
        'x2       completed                             0 B 07:59:58',
    ],
    ('92', '30', 'host'): [
        '08:00:00Z 7 active, 88 kbps · last 10 min: 2 ended, 0 failed',
        'sort host · q quit  s sort  f failed only ·',
        '',
        'ID       DIR  HOST                 USER         BYTES          NOW/TARGET DONE    ETA',
        'r2       recv                                   900 B           50 kbps/? 100%  0m00s',
        'r4       recv b                                   0 B            8 kbps/?   0%  1m01s',
        'r5       recv c                                   1 B            8 kbps/?   0%  1h01m',
        'r6       recv d                                   2 B            8 kbps/?   0%      -',
        'r7       recv e                                   3 B            8 kbps/?   0% 87599…',
        'r3       recv m                                 500 B            1 kbps/?  49%  0m04s',
        '         recv zeta                              100 B            5 kbps/? 100%  0m00s',
        'ID       STATUS     HOST                     BYTES ENDED     ERROR',
        '         cancelled                             0 B 07:59:59  1:',
        'x2       completed                             0 B 07:59:58',
    ],
    ('92', '30', 'progress', 'x'): [
        '08:00:00Z 7 active, 88 kbps · last 10 min: 2 ended, 0 failed · !! node down?',
        'sort progress · q quit  s sort  f failed only ·',
        '',
        'ID       DIR  HOST                 USER         BYTES          NOW/TARGET DONE    ETA',
        '         recv zeta                              100 B            5 kbps/? 100%  0m00s',
        'r2       recv                                   900 B           50 kbps/? 100%  0m00s',
        'r3       recv m                                 500 B            1 kbps/?  49%  0m04s',
        'r5       recv c                                   1 B            8 kbps/?   0%  1h01m',
        'r7       recv e                                   3 B            8 kbps/?   0% 87599…',
        'r6       recv d                                   2 B            8 kbps/?   0%      -',
        'r4       recv b                                   0 B            8 kbps/?   0%  1m01s',
        'ID       STATUS     HOST                     BYTES ENDED     ERROR',
        '         cancelled                             0 B 07:59:59  1:',
        'x2       completed                             0 B 07:59:58',
    ],
    ('92', '10', 'none'): [
        '08:00:00Z 0 active, 0 kbps · last 10 min: 0 ended, 0 failed',
        'sort rate · q quit  s sort  f failed only ·',
        '',
        'no active transfers',
        'nothing ended in the last 10 minutes',
    ],
}


@pytest.mark.parametrize("case", list(TOP_MORE_SCREENS))
def test_more_top_screens_line_by_line(case):
    """Each case: width, height, the sort ("-": the default; "none": no transfers at all)
    and a problem to show when a 4th part is there."""
    from nodecli.render.top import top_lines

    width, height, sort, *problem = case
    kw: dict[str, Any] = {"width": int(width), "height": int(height), "now": NOW2}
    if sort not in ("-", "none"):
        kw["sort"] = sort
    if problem:
        kw["problem"] = "node down\x1b"
    assert top_lines(TOP_MORE if sort != "none" else [], **kw) == TOP_MORE_SCREENS[case]


def test_top_rows_at_their_edges():
    from nodecli.render.top import top_lines

    now = 1_800_000_000.0
    transfers = [
        # running, no expected size, a rate: no ETA; and one that says it ended just now
        {"id": "n1", "status": "running", "current_rate_kbps": 8,
         "end_time_usec": int(now * 1_000_000)},
        {"id": "n2", "status": "running", "bytes_expected": 180_000, "current_rate_kbps": 8},
        {"id": "long-ended-id", "status": "completed", "end_time_usec": int(now * 1_000_000)},
    ]
    lines = top_lines(transfers, width=92, height=30, now=now)
    rows = {line.split()[0]: line.split() for line in lines if line[:2] in ("n1", "n2", "lo")}
    assert rows["n1"][-2:] == ["-", "-"]  # no progress, no ETA
    assert rows["n2"][-1] == "3m00s"
    assert rows["long-end"][1] == "completed"  # the id cut to 8, no ellipsis
    assert "1 ended" in lines[0] and sum(1 for line in lines if line.startswith("n1")) == 1
    assert len(top_lines(transfers, width=92, height=30)) == len(lines)  # now: the clock's


def _running(n: int) -> list[dict[str, Any]]:
    return [{"id": f"act{i}", "status": "running", "current_rate_kbps": 100 - i}
            for i in range(n)]


def _ended(n: int, now: float) -> list[dict[str, Any]]:
    return [{"id": f"end{i}", "status": "completed",
             "end_time_usec": int((now - 1 - i) * 1_000_000)} for i in range(n)]


# (height, running, ended) -> active rows shown, and how many the "more" line counts.
# Below the headers (4 lines) the screen keeps a third of the rest, at least 3 rows and
# never more than there are, for ended transfers; the rest, at least 2 lines, is for
# active ones; when they do not all fit, one row gives way to the "... and N more" line.
@pytest.mark.parametrize("height, running, ended, shown, more", [
    (6, 3, 0, 1, 2),     # no room at all: 2 lines still kept for active transfers
    (8, 2, 0, 2, 0),     # exactly as many as fit: all shown, no "more" line
    (8, 3, 0, 1, 2),     # one more than fit
    (15, 6, 4, 6, 0),    # 9 lines: 3 for ended (a third, and the floor of 3), 6 fit
    (16, 7, 4, 7, 0),    # 10 lines: a third is 3 (whole rows), 7 fit exactly
    (18, 9, 5, 7, 2),    # 12 lines: 4 for ended, 8 for active: 7 rows and the more line
    (18, 8, 2, 8, 0),    # only 2 ended: they keep 2, not 4
])
def test_the_top_screen_shares_its_rows_between_active_and_ended(height, running, ended,
                                                                 shown, more):
    from nodecli.render.top import top_lines

    now = 1_800_000_000.0
    lines = top_lines(_running(running) + _ended(ended, now), width=88, height=height,
                      now=now)
    assert len(lines) <= height
    assert sum(1 for line in lines if line.startswith("act")) == shown
    assert [line for line in lines if line.startswith("...")] == \
        ([f"... and {more} more active"] if more else [])


# An ended row: ID 8, STATUS 10, HOST (15, or what is over 72 columns), BYTES 9, ENDED 9,
# one space between, then the error in the rest of the line (at least 10 columns).
@pytest.mark.parametrize("width, host_w, err_w",
                         [(80, 15, 23), (87, 15, 30), (92, 20, 30), (60, 15, 10)])
def test_an_error_exactly_as_wide_as_its_column_is_whole_and_one_more_is_cut(width, host_w,
                                                                             err_w):
    from nodecli.render.text import display_width
    from nodecli.render.top import top_lines

    now = 1_800_000_000.0

    def row(text: str) -> str:
        ended = {"id": "e1", "status": "failed", "error_code": 7, "error_desc": text,
                 "end_time_usec": int((now - 5) * 1_000_000)}
        return next(line for line in top_lines([ended], width=width, height=10, now=now)
                    if line.startswith("e1"))

    fits = "x" * (err_w - 3)  # "7: " and the text
    before = 8 + 10 + host_w + 9 + 9 + 5
    if width - 1 >= before + err_w:  # the column ends inside the line: it alone cuts
        assert row(fits).endswith("7: " + fits)
        assert display_width(row(fits)) == before + err_w
        assert row(fits + "y").endswith("7: " + fits[:-1] + "…")
    else:  # the line is cut first, at width - 1
        assert row(fits) == row(fits + "y")
        assert display_width(row(fits)) == width - 1 and row(fits).endswith("…")


def test_sort_by_host_puts_a_transfer_without_a_host_first():
    from nodecli.render.top import top_lines

    now = 1_800_000_000.0
    transfers = [{"id": "upper", "status": "running", "remote_host": "ALPHA"},
                 {"id": "lower", "status": "running", "remote_host": "beta"},
                 {"id": "nohost", "status": "running"}]
    ids = [line.split()[0] for line in top_lines(transfers, width=88, height=20,
                                                 sort="host", now=now)[4:7]]
    assert ids == ["nohost", "upper", "lower"]


def test_an_end_time_past_year_9999_is_shown_as_no_time():
    from nodecli.render.top import top_lines

    now = 1_800_000_000.0
    odd = {"id": "far", "status": "failed", "end_time_usec": 10**20}
    row = [line for line in top_lines([odd], width=88, height=10, now=now)
           if line.startswith("far")]
    assert [line.split() for line in row] == [["far", "failed", "0", "B", "-"]]


def test_a_finished_running_transfer_at_a_tiny_rate_has_no_time_left():
    from nodecli.render.top import top_lines

    now = 1_800_000_000.0
    done = {"id": "slow", "status": "running", "bytes_transferred": 5,
            "bytes_expected": 5, "current_rate_kbps": 0.001}
    row = [line for line in top_lines([done], width=88, height=10, now=now)
           if line.startswith("slow")]
    assert row[0].split()[-2:] == ["100%", "0m00s"]  # not 8 s for a byte never sent


@pytest.mark.parametrize("op, line", [
    ({"id": "op-1", "type": "copy", "status": "running"}, "operation op-1 (copy): running"),
    ({"id": 7, "type": "move\x1b[31m", "status": None},
     "operation 7 (move): None"),  # (a terminal escape is taken out)
])
def test_an_operations_line_is_its_id_type_and_status_as_text(op, line):
    from nodecli.render.operations import op_line

    assert op_line(op) == line


@pytest.mark.parametrize(("count", "seconds", "last", "said"), [
    (0, 0.0, True, "last refresh: 0 transfers in 0 ms"),
    (1, 0.0004, False, "refresh: 1 transfer in 0 ms"),  # under half a millisecond
    (2, 0.0005, True, "last refresh: 2 transfers in 0 ms"),  # half: to the even
    (2, 0.0015, False, "refresh: 2 transfers in 2 ms"),
    (3, 1.2345, True, "last refresh: 3 transfers in 1234 ms"),
    (1000, 61.0, False, "refresh: 1,000 transfers in 61000 ms")])
def test_a_refresh_is_said_in_transfers_and_whole_milliseconds(count, seconds, last, said):
    from nodecli.render.top import refresh_said

    assert refresh_said(count, seconds, **({"last": True} if last else {})) == said
