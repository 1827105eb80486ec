"""nodecli.remote_json: any answer is data (huge numbers, NaN, surrogates), never a crash."""

from __future__ import annotations

import json

import pytest

from nodecli.remote_json import TooDeep, compact, loads


def test_values_no_program_prints_back_are_kept_as_the_servers_text():
    body = b' {"big": 1' + b"0" * 5000 + b', "inf": 1e999, "n": NaN, "m": -Infinity, ' \
        b'"ok": [1, 2.5, -3]}\n'
    data = loads(body)
    assert data["big"] == "1" + "0" * 5000
    assert (data["inf"], data["n"], data["m"]) == ("1e999", "NaN", "-Infinity")
    assert data["ok"] == [1, 2.5, -3]
    assert json.loads(compact(data)) == data  # and it writes back as strict JSON


@pytest.mark.parametrize("bad", [b"", b"  ", b"[1] [2]", b"[1,]", b"\xff", b"{'a': 1}"])
def test_what_is_not_json_is_a_value_error(bad):
    with pytest.raises(ValueError):
        loads(bad)


def test_deep_nesting_is_too_deep_not_invalid():
    with pytest.raises(TooDeep):
        loads(b"[" * 100_000 + b"]" * 100_000)
    assert loads(b"[" * 50 + b"]" * 50) is not None


def test_lone_surrogates_are_written_as_escapes():
    text = compact(loads(b'{"s": "a\\ud800b"}'))
    assert text == '{"s":"a\\ud800b"}'
    text.encode("utf-8")
