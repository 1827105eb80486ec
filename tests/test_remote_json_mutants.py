"""nodecli.remote_json at its boundaries (issue 33, item 2: the survivors of mutation
testing): the constants a decoder keeps as words and reports, text and bytes alike, the
message for too deep a nesting, and compact JSON that keeps non-ASCII text as it is."""

from __future__ import annotations

import pytest

from nodecli.remote_json import TooDeep, compact, decoder, loads


def test_non_json_constants_are_kept_as_words_and_reported():
    seen: list[str] = []
    assert decoder(seen).decode("[NaN, Infinity, -Infinity, 1]") == \
        ["NaN", "Infinity", "-Infinity", 1]
    assert seen == ["NaN", "Infinity", "-Infinity"]
    assert decoder().decode("NaN") == "NaN"          # no list: kept, not reported
    assert loads("[NaN]") == ["NaN"]
    assert loads(b"-Infinity") == "-Infinity"


def test_loads_takes_text_and_bytes():
    assert loads('{"a": "\u00e9"}') == {"a": "\u00e9"}
    assert loads('{"a": "\u00e9"}'.encode()) == {"a": "\u00e9"}


def test_too_deep_says_so():
    with pytest.raises(TooDeep) as exc:
        loads("[" * 100_000 + "]" * 100_000)
    assert str(exc.value) == "the JSON nests deeper than nodecli reads"
    assert exc.value.__suppress_context__


def test_compact_keeps_text_as_it_is():
    assert compact({"\u00e9": ["\u00fc", 1, None]}) == '{"\u00e9":["\u00fc",1,null]}'


def test_a_new_decoder_keeps_what_no_number_holds():
    # (decoder() itself: loads() uses the one built at import)
    digits = "9" * 5000
    assert decoder().decode(f"[{digits}, 1e999, 1.5, 7]") == [digits, "1e999", 1.5, 7]
