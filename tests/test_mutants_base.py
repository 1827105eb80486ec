"""Behaviour the mutation runs of issue 33 found unguarded in the base modules
(timeparse, values, errors, dryrun, remote_json): each test here kills one or more
surviving mutants, at the boundary where a slip would show (the 40th vs 41st character,
year 9998 vs 9999, a message word for word)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nodecli import timeparse
from nodecli.errors import NodecliError, UsageError, shorten
from nodecli.timeparse import (
    EXPIRY_FORMS,
    SINCE_FORMS,
    TimeParseError,
    describe_delta,
    parse_duration,
    parse_expiry,
    parse_iso8601,
    parse_since,
)
from nodecli.values import (
    MAX_RAW,
    build_object,
    has_surrogates,
    parse_assignment,
    parse_body,
    typed_value,
)

NOW = datetime(2030, 6, 15, 12, 0, 0, tzinfo=UTC)


def _message(call, *args, **kwargs) -> str:
    with pytest.raises(TimeParseError) as info:
        call(*args, **kwargs)
    return str(info.value)


# -- timeparse ------------------------------------------------------------------------


def test_a_quoted_time_keeps_40_characters_and_marks_a_41st():
    forty = "x" * 40
    assert _message(parse_expiry, forty, now=NOW) == (
        f"invalid expiry '{forty}': use {EXPIRY_FORMS}")
    assert _message(parse_expiry, forty + "y", now=NOW) == (
        f"invalid expiry '{forty}...': use {EXPIRY_FORMS}")
    assert _message(parse_expiry, "x", now=NOW) == f"invalid expiry 'x': use {EXPIRY_FORMS}"


def test_an_iso_time_of_64_characters_is_read_and_one_of_65_refused():
    # white space before the zone is allowed, so a valid time can be made that long
    text64 = "2031-01-01T00:00:00" + " " * 44 + "Z"
    assert len(text64) == 64
    assert parse_iso8601(text64) == datetime(2031, 1, 1, tzinfo=UTC)
    text65 = "2031-01-01T00:00:00" + " " * 45 + "Z"
    assert _message(parse_iso8601, text65) == (
        f"time '{text65[:40]}...' is too long")


def test_iso_refusals_word_for_word():
    assert _message(parse_iso8601, "tomorrow") == (
        "invalid time 'tomorrow': expected ISO 8601 such as 2031-01-01T00:00:00Z")
    assert _message(parse_iso8601, 42) == "a time must be text"


@pytest.mark.parametrize("zone", ["+24:00", "-24", "+23:60", "+0060"])
def test_a_zone_offset_past_23_59_is_refused_in_words(zone):
    text = f"2031-01-01T00:00:00{zone}"
    assert _message(parse_iso8601, text) == f"invalid time '{text}': zone offset out of range"


def test_a_zone_offset_of_23_59_is_the_last_one_taken():
    assert parse_iso8601("2031-01-02T00:00:00+23:59") == datetime(2031, 1, 1, 0, 1, tzinfo=UTC)
    assert parse_iso8601("2031-01-01T00:00:00-2359") == datetime(2031, 1, 1, 23, 59, tzinfo=UTC)


def test_a_leap_second_is_the_last_instant_of_its_minute_and_61_is_refused():
    assert parse_iso8601("2031-06-30T23:59:60Z") == datetime(
        2031, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)
    assert _message(parse_iso8601, "2031-06-30T23:59:61Z") == (
        "invalid time '2031-06-30T23:59:61Z': second must be in 0..59")


def test_an_impossible_date_names_what_is_wrong():
    assert _message(parse_iso8601, "2031-13-01") == (
        "invalid time '2031-13-01': month must be in 1..12")


def test_a_naive_now_is_taken_as_utc():
    naive = datetime(2030, 6, 15, 12, 0, 0)
    assert parse_expiry("+1h", now=naive) == datetime(2030, 6, 15, 13, 0, 0, tzinfo=UTC)
    assert parse_since("1h", now=naive) == datetime(2030, 6, 15, 11, 0, 0, tzinfo=UTC)


def test_a_duration_of_64_characters_is_read_and_one_of_65_refused():
    assert parse_duration("1s" * 32).total_seconds() == 32
    text65 = "1s" * 31 + "11s"
    assert _message(parse_duration, text65) == (
        f"invalid duration '{text65[:40]}...': use a number and a unit s, m, h, d or w, "
        "e.g. 90s, 30m, 2h, 7d, 1h30m")


def test_duration_refusals_word_for_word():
    assert _message(parse_duration, "10x") == (
        "invalid duration '10x': use a number and a unit s, m, h, d or w, "
        "e.g. 90s, 30m, 2h, 7d, 1h30m")
    assert _message(parse_duration, "999999999w") == "duration '999999999w' is too long"


@pytest.mark.parametrize("empty", ["", "   ", None, 7])
def test_an_empty_or_non_text_expiry_or_start_is_refused_in_words(empty):
    assert _message(parse_expiry, empty, now=NOW) == f"empty expiry: use {EXPIRY_FORMS}"
    assert _message(parse_since, empty, now=NOW) == f"empty start time: use {SINCE_FORMS}"


def test_expiry_refusals_word_for_word():
    assert _message(parse_expiry, "+10x", now=NOW) == (
        f"invalid expiry '+10x': use {EXPIRY_FORMS}")
    # a delay that leaves what a datetime holds names the text the user typed
    assert _message(parse_expiry, "+999999999d", now=NOW) == (
        "time '+999999999d' is out of range")


def test_an_expiry_in_year_9998_is_taken_and_one_in_9999_refused():
    assert parse_expiry("9998-12-31T23:59:59Z", now=NOW) == datetime(
        9998, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert _message(parse_expiry, "9999-01-01", now=NOW) == (
        "expiry '9999-01-01' is too far in the future")


def test_start_refusals_word_for_word():
    assert _message(parse_since, "yesterday", now=NOW) == (
        f"invalid start time 'yesterday': use {SINCE_FORMS}")
    assert _message(parse_since, "-999999999d", now=NOW) == (
        "time '-999999999d' is out of range")
    assert _message(parse_since, "2030-06-15T12:00:01Z", now=NOW) == (
        "start time 2030-06-15T12:00:01Z is in the future (now is 2030-06-15T12:00:00Z)")
    assert parse_since("2030-06-15T12:00:00Z", now=NOW) == NOW


@pytest.mark.parametrize(("seconds", "text"), [
    (90.5, "1m 30s"), (7200, "2h"), (7260, "2h 1m"), (3 * 86400 + 4 * 3600, "3d 4h"),
    (3 * 86400 + 59, "3d"), (float("nan"), "?"), (float("inf"), "?"), (None, "?"),
    ("90", "?"),
])
def test_describe_delta_of_every_kind(seconds, text):
    assert describe_delta(seconds) == text


def test_the_clock_hook_is_where_now_comes_from(monkeypatch):
    monkeypatch.setattr(timeparse, "clock", lambda: NOW)
    assert parse_expiry("+1h") == datetime(2030, 6, 15, 13, 0, 0, tzinfo=UTC)


# -- values (--set KEY=VALUE, --body JSON) --------------------------------------------

def _usage(call, *args) -> str:
    with pytest.raises(UsageError) as info:
        call(*args)
    return str(info.value)


@pytest.mark.parametrize(("text", "expected"), [
    ("\ud800", True), ("\udfff", True), ("a\udc80b", True),
    ("\ud7ff", False), ("\ue000", False), ("plain", False), (None, False), (b"\xff", False),
])
def test_lone_surrogates_are_exactly_d800_to_dfff(text, expected):
    assert has_surrogates(text) is expected


def test_json_values_refuse_repeated_keys_nan_and_infinite_numbers():
    assert _usage(typed_value, '{"a": 1, "a": 2}', "--set x") == (
        "--set x is not valid JSON: duplicate key 'a'")
    assert _usage(typed_value, "[NaN]", "--set x") == "--set x is not valid JSON: NaN is not JSON"
    assert _usage(typed_value, "[1e999]", "--set x") == (
        "--set x is not valid JSON: the number 1e999 is too large to send as JSON")
    assert typed_value('{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}


def test_an_infinite_number_in_json_is_quoted_to_40_characters():
    literal = "1" + "0" * 400 + ".5"
    assert _usage(typed_value, f"[{literal}]", "--set x") == (
        f"--set x is not valid JSON: the number {literal[:40]} is too large to send as JSON")


def test_the_json_error_is_cut_at_120_characters():
    key = "k" * 200
    message = _usage(typed_value, f'{{"{key}": 1, "{key}": 2}}', "--set x")
    assert message == "--set x is not valid JSON: " + f"duplicate key '{key}'"[:120]


def test_a_body_of_exactly_one_mebibyte_is_read_and_one_byte_more_refused():
    body = '{"a":"' + "x" * (MAX_RAW - 8) + '"}'
    assert len(body) == MAX_RAW
    assert parse_body(body) == {"a": "x" * (MAX_RAW - 8)}
    assert _usage(parse_body, body[:-2] + 'x"}') == f"--body is larger than {MAX_RAW} bytes"


@pytest.mark.parametrize(("text", "value"), [
    ("true", True), ("false", False), ("null", None), ("42", 42), ("-1.5", -1.5),
    ("1E5", 100000.0), ("1e2", 100.0), ("2.0", 2.0), ('"42"', "42"), ("0x10", "0x10"),
    ("True", "True"), ("a=b", "a=b"), ("é\x80", "é\x80"),
])
def test_typed_values_of_every_kind(text, value):
    result = typed_value(text)
    assert result == value and type(result) is type(value)


def test_typed_value_refusals_name_what_was_given():
    assert _usage(typed_value, "1e999") == (
        "value: the number 1e999 is too large to send as JSON")
    assert _usage(typed_value, "{bad") == (
        "value is not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)")
    for text in ("a\x01b", "a\x7f", "\x1f", "a\udc80b"):
        assert _usage(typed_value, text, "--set k") == (
            "--set k contains control characters or bytes that are not UTF-8")


def test_an_assignment_splits_at_its_first_equals_sign():
    assert parse_assignment("a.b=c=d") == (["a", "b"], "c=d")
    assert parse_assignment("k==") == (["k"], "=")
    assert _usage(parse_assignment, "k={bad") == (
        "--set k is not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)")


def test_assignment_refusals_quote_60_characters():
    text = "x" * 61
    assert _usage(parse_assignment, text) == f"--set takes KEY=VALUE, not {text[:60]!r}"
    key = "x" * 60 + "!"
    assert _usage(parse_assignment, key + "=1") == (
        f"--set: invalid key {key[:60]!r}: letters, digits, '_' and '-', "
        "dots for nested objects")
    assert _usage(parse_assignment, "=1").startswith("--set: invalid key ''")
    assert _usage(parse_assignment, "a..b=1").startswith("--set: invalid key 'a..b'")


def test_build_object_nests_by_dots_and_later_assignments_win():
    assert build_object(["a.b=1", "a.c=x", "d=true", "a.b=2"]) == {
        "a": {"b": 2, "c": "x"}, "d": True}
    # a value replaced by an object when a later key goes below it
    assert build_object(["a=1", "a.b.c=null"]) == {"a": {"b": {"c": None}}}
    assert build_object([]) == {}


@pytest.mark.parametrize(("text", "kind"), [
    ("[1]", "an array"), ('"s"', "a string"), ("true", "a boolean"), ("null", "null"),
    ("1.5", "a number"), ("7", "a number"),
])
def test_a_body_that_is_no_object_names_what_it_is(text, kind):
    assert _usage(parse_body, text, "--body") == f"--body must be a JSON object, not {kind}"
    assert _usage(parse_body, text, "the file") == f"the file must be a JSON object, not {kind}"


def test_a_body_refused_as_json_names_the_option():
    assert _usage(parse_body, "{") == (
        "--body is not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)")
    assert parse_body('{"a": {"b": []}}') == {"a": {"b": []}}


# -- errors ---------------------------------------------------------------------------


def test_an_error_keeps_its_message_and_hint():
    exc = NodecliError("it broke", hint="try again")
    assert (str(exc), exc.message, exc.hint, exc.args) == (
        "it broke", "it broke", "try again", ("it broke",))
    assert NodecliError("m").hint is None


@pytest.mark.parametrize(("value", "text"), [
    ("a\nb", "a?b"), ("a\rb", "a?b"), ("a\r\nb", "a??b"), ("plain", "plain"),
    (None, ""), (12345, "12345"), ("x" * 200, "x" * 200), ("x" * 201, "x" * 199 + "\u2026"),
])
def test_shorten_keeps_200_characters_on_one_line(value, text):
    assert shorten(value) == text


def test_shorten_to_a_given_limit():
    assert shorten("abcdef", 6) == "abcdef"
    assert shorten("abcdefg", 6) == "abcde\u2026"
