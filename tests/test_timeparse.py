"""Expiry / start-point parsing: accepted forms, refusals, hostile input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecli.timeparse import (
    TimeParseError,
    describe_delta,
    format_utc,
    parse_duration,
    parse_expiry,
    parse_iso8601,
    parse_since,
)

NOW = datetime(2030, 6, 15, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2031-01-01T00:00:00Z", datetime(2031, 1, 1, tzinfo=UTC)),
        ("2031-01-01T00:00:00z", datetime(2031, 1, 1, tzinfo=UTC)),
        ("2031-01-01T00:00:00.999Z", datetime(2031, 1, 1, tzinfo=UTC)),  # truncated
        ("2031-01-01T02:00:00+02:00", datetime(2031, 1, 1, tzinfo=UTC)),
        ("2031-01-01T02:00:00+0200", datetime(2031, 1, 1, tzinfo=UTC)),
        ("2030-12-31T19:00:00-05", datetime(2031, 1, 1, tzinfo=UTC)),
        ("2031-01-01T00:00:00", datetime(2031, 1, 1, tzinfo=UTC)),  # no zone: UTC
        ("2031-01-01 00:00", datetime(2031, 1, 1, tzinfo=UTC)),
        ("2031-01-01", datetime(2031, 1, 1, tzinfo=UTC)),
        ("  2031-01-01T00:00:00Z\n", datetime(2031, 1, 1, tzinfo=UTC)),
        ("+90s", NOW + timedelta(seconds=90)),
        ("+30m", NOW + timedelta(minutes=30)),
        ("+2h", NOW + timedelta(hours=2)),
        ("+7d", NOW + timedelta(days=7)),
        ("+1w", NOW + timedelta(days=7)),
        ("+1h30m", NOW + timedelta(minutes=90)),
        ("+2H", NOW + timedelta(hours=2)),
    ],
)
def test_parse_expiry_accepts(text: str, expected: datetime) -> None:
    got = parse_expiry(text, NOW)
    assert got == expected
    assert got.tzinfo is not None and got.utcoffset() == timedelta(0)


@pytest.mark.parametrize("bare", ["1d", "2h", "90s", "1h30m", "1W"])
def test_parse_expiry_takes_a_bare_duration_like_since(bare: str) -> None:
    # --expires-at 1d means +1d, as --since 1d means 1d ago
    assert parse_expiry(bare, NOW) == parse_expiry("+" + bare, NOW)
    assert parse_expiry(bare, NOW) - NOW == NOW - parse_since(bare, NOW)


@given(st.integers(min_value=1, max_value=10**4), st.sampled_from("smhdw"))
def test_bare_and_plus_expiry_agree(n: int, unit: str) -> None:
    assert parse_expiry(f"{n}{unit}", NOW) == parse_expiry(f"+{n}{unit}", NOW)


@pytest.mark.parametrize(
    "text",
    ["", "  ", "tomorrow", "+", "+2", "+h", "+-2h", "+2x", "2031-13-01T00:00:00Z",
     "2031-02-30", "2031-01-01T25:00:00Z", "2031-01-01T00:00:00+25:00", "20310101T000000Z",
     "2031-W01-1", "2031-01-01T00:00:00ZZ", "2031-01-01Z", "٢٠٣١-01-01",
     "+99999999999d", "+999999999w", "9999-12-31T23:59:59Z", "x" * 10_000],
)
def test_parse_expiry_refuses_malformed(text: str) -> None:
    with pytest.raises(TimeParseError):
        parse_expiry(text, NOW)


def test_parse_expiry_refuses_past_and_present() -> None:
    with pytest.raises(TimeParseError, match="not in the future"):
        parse_expiry("2020-01-01T00:00:00Z", NOW)
    with pytest.raises(TimeParseError, match="not in the future"):
        parse_expiry(format_utc(NOW), NOW)
    with pytest.raises(TimeParseError, match="not in the future"):
        parse_expiry("+0s", NOW)


def test_error_is_a_value_error_with_the_forms() -> None:
    with pytest.raises(ValueError, match=r"\+2h"):
        parse_expiry("soon", NOW)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10m", NOW - timedelta(minutes=10)),
        ("-10m", NOW - timedelta(minutes=10)),
        ("2h", NOW - timedelta(hours=2)),
        ("1d", NOW - timedelta(days=1)),
        ("1h30m", NOW - timedelta(minutes=90)),
        ("0s", NOW),
        ("2030-06-15T11:00:00Z", NOW - timedelta(hours=1)),
        ("2030-06-15T13:00:00+02:00", NOW - timedelta(hours=1)),
        ("2030-06-15T11:00:00.250Z", NOW - timedelta(minutes=59, seconds=59, microseconds=750000)),
    ],
)
def test_parse_since(text: str, expected: datetime) -> None:
    assert parse_since(text, NOW) == expected


@pytest.mark.parametrize("text", ["", "ago", "10", "m", "2031-01-01T00:00:00Z", "+10m", "10 m",
                                  "99999999999999d", "1e3s"])
def test_parse_since_refuses(text: str) -> None:
    with pytest.raises(TimeParseError):
        parse_since(text, NOW)


def test_format_utc() -> None:
    assert format_utc(datetime(2031, 1, 1, 2, 3, 4, 5678, tzinfo=UTC)) == "2031-01-01T02:03:04Z"
    assert format_utc(datetime(2031, 1, 1, 2, 0, 0, tzinfo=timezone(timedelta(hours=2)))) == \
        "2031-01-01T00:00:00Z"
    assert format_utc(datetime(2031, 1, 1)) == "2031-01-01T00:00:00Z"  # naive = UTC


def test_describe_delta() -> None:
    assert describe_delta(45) == "45s"
    assert describe_delta(3600 + 120) == "1h 2m"
    assert describe_delta(-3 * 86400) == "3d"
    assert describe_delta(3540 + 12) == "59m 12s"


def test_parse_duration() -> None:
    assert parse_duration("1w2d3h4m5s") == timedelta(days=9, hours=3, minutes=4, seconds=5)


# -- properties ------------------------------------------------------------------------

aware = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(9000, 1, 1),
                     timezones=st.just(UTC))


@given(aware)
def test_format_then_parse_round_trips(dt: datetime) -> None:
    assert parse_iso8601(format_utc(dt)) == dt.replace(microsecond=0)


@given(st.text(max_size=80))
def test_hostile_text_only_raises_time_parse_error(text: str) -> None:
    for fn in (parse_expiry, parse_since):
        try:
            result = fn(text, NOW)
        except TimeParseError as exc:
            assert str(exc)
            assert "\n" not in str(exc)
        else:
            assert result.tzinfo is not None


@given(st.integers(min_value=1, max_value=10**4), st.sampled_from("smhdw"))
def test_relative_expiry_is_in_the_future(n: int, unit: str) -> None:
    got = parse_expiry(f"+{n}{unit}", NOW)
    assert got > NOW


@given(st.binary(max_size=60))
def test_hostile_bytes_decoded_leniently(raw: bytes) -> None:
    text = raw.decode("utf-8", "surrogateescape")
    with pytest.raises(TimeParseError):
        parse_expiry(text + "\x00", NOW)


@pytest.mark.parametrize(("seconds", "text"), [(3552, "59m 12s left"), (1, "1s left"),
                                               (0, "expired 0s ago"),
                                               (-180, "expired 3m ago")])
def test_describe_left(seconds, text):
    from nodecli.timeparse import describe_left

    assert describe_left(seconds) == text


def test_times_before_year_1000_keep_four_digit_years():
    from datetime import UTC, datetime

    from nodecli.node.events.pages import EventFilter, build_params
    from nodecli.timeparse import format_utc, parse_iso8601

    early = parse_iso8601("0999-03-04T05:06:07Z")
    assert format_utc(early) == "0999-03-04T05:06:07Z"
    assert format_utc(datetime(1, 1, 1, tzinfo=UTC)) == "0001-01-01T00:00:00Z"
    assert ("after_time", "0999-03-04T05:06:07Z") in build_params(EventFilter(), since=early)


def test_naive_and_zoned_times_mean_the_same_instant_in_any_local_zone():
    """The suite runs in a zone that is not UTC (tests/conftest.py): times written
    without a zone are UTC, never local time."""
    import time

    from nodecli.timeparse import format_utc, parse_iso8601

    assert time.strftime("%z") != "+0000"  # (the test zone is in effect)
    assert format_utc(parse_iso8601("2031-01-01T10:00")) == "2031-01-01T10:00:00Z"
    assert format_utc(parse_iso8601("2031-01-01T10:00:00+05:30")) == "2031-01-01T04:30:00Z"
    assert format_utc(parse_iso8601("2031-01-01")) == "2031-01-01T00:00:00Z"
