"""The restriction parser: documented forms accepted, anything else a RestrictionError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecli.users.restrictions import (
    LIST_DELIMITERS,
    OBJECT_SCHEMES,
    RestrictionError,
    parse_restriction,
    parse_restrictions,
    split_restriction_list,
    to_list_string,
)

DOCUMENTED = [
    ("file:////folder/*", "local"),
    ("file:////*", "local"),
    ("file:///c%3A/folder/*", "local-windows"),
    ("file:///C%3a/folder/*", "local-windows"),
    ("file:///c*", "local-windows"),
    ("s3://*", "s3"),
    ("azu://*", "azu"),
    ("azure-files://*", "azure-files"),
    ("adl://*", "adl"),
    ("swift://*", "swift"),
    ("oss://*", "oss"),
    ("gs://*", "gs"),
    ("google-gcs://*", "google-gcs"),
    ("hdfs://*", "hdfs"),
    ("*", "stream"),
    ("udp://*", "udp"),
    ("tcp://*", "tcp"),
    ("udp://hostname*", "udp"),
    ("udp://hostname:5000*", "udp"),
    ("file:////data/mnt1/*", "local"),
    ("s3://mys3/bucket/*", "s3"),
    ("file:////data/file?.txt", "local"),
    ("file:////data/a\\*b/*", "local"),
    ("file:////data/with%20space/*", "local"),
]


@pytest.mark.parametrize(("raw", "storage"), DOCUMENTED)
def test_documented_forms_accepted(raw, storage):
    r = parse_restriction(raw)
    assert (r.storage, r.negated, r.accepts) == (storage, False, True)
    neg = parse_restriction("!" + raw)
    assert (neg.storage, neg.negated, neg.accepts, neg.pattern) == (storage, True, False, raw)


@pytest.mark.parametrize(("raw", "why"), [
    ("", "empty"),
    ("!", "nothing follows"),
    ("ftp://*", "unknown storage scheme"),
    ("/data/*", "missing a storage scheme"),
    ("file://data/*", "starts with file:///"),
    ("file:///c:/data/*", "percent-encode"),
    ("file:///data/*", "use file:////path"),
    ("file:////data/%zz", "bad percent-encoding"),
    ("file:////data/\\", "lone escape"),
    ("s3://", "nothing after"),
    ("udp://host:99999*", "outside 1-65535"),
    ("udp://", "udp://host"),
    ("tcp://a b*", "tcp://host"),
    ("file:////da\nta/*", "control characters"),
    ("file:////\x1b[31m*", "control characters"),
    ("x" * 5000, "longer than"),
])
def test_malformed_refused_with_accepted_forms(raw, why):
    with pytest.raises(RestrictionError) as exc:
        parse_restriction(raw)
    message = str(exc.value)
    assert why in message
    if raw:
        assert "accepted forms" in message and "file:///c%3A/folder/*" in message
    assert "\n" not in message and "\x1b" not in message  # one safe line


def test_list_form_split_and_round_trip():
    text = "|file:////data/mnt1/*|s3://mys3/bucket/*"
    items = split_restriction_list(text)
    assert items == ["file:////data/mnt1/*", "s3://mys3/bucket/*"]
    assert to_list_string(items) == text
    assert split_restriction_list(";s3://*;gs://*") == ["s3://*", "gs://*"]
    assert split_restriction_list("s3://*") == ["s3://*"]
    for bad in ("", "|", "||s3://*", "|s3://*|"):
        with pytest.raises(RestrictionError):
            split_restriction_list(bad)


def test_parse_restrictions_dedupes_keeping_order():
    got = parse_restrictions(["s3://*", "|gs://*|s3://*", "!hdfs://*"])
    assert [r.raw for r in got] == ["s3://*", "gs://*", "!hdfs://*"]


@settings(max_examples=400)
@given(st.text(max_size=300))
def test_hostile_text_never_raises_anything_else(text):
    try:
        r = parse_restriction(text)
    except RestrictionError as exc:
        assert "\n" not in str(exc)
    else:
        assert r.raw == text and r.pattern == text.removeprefix("!")
    # the list form agrees with the single form: same refusal, or the same one entry
    single_ok = _accepts(text)
    try:
        listed = parse_restrictions([text])
    except RestrictionError as exc:
        assert "\n" not in str(exc)
        listed = None
    if listed is not None:
        assert [r.raw for r in listed] == [p for p in split_restriction_list(text) if p]
        assert all(_accepts(r.raw) for r in listed)
    elif "|" not in text and text.strip():
        assert not single_ok


def _accepts(text: str) -> bool:
    try:
        parse_restriction(text)
    except RestrictionError:
        return False
    return True


_CONTROL = {*range(0x20), 0x7F, *range(0x80, 0xA0)}


@settings(max_examples=300)
@given(st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_hostile_bytes_as_text(text):
    if any(ord(c) in _CONTROL for c in text):
        # C0, DEL and C1 anywhere: always refused, and the message says why on one line
        with pytest.raises(RestrictionError, match="control characters") as info:
            parse_restriction(text)
        assert "\n" not in str(info.value)
    elif _accepts(text):
        assert parse_restriction(text).raw == text


# -- boundaries pinned: control characters and stream ports ------------------------------


@pytest.mark.parametrize("code", [0x00, 0x01, 0x09, 0x0A, 0x1F, 0x7F, 0x80, 0x85, 0x9B, 0x9F])
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_control_characters_refused(code, where):
    base = "s3://bucket/*"
    c = chr(code)
    text = {"start": c + base, "middle": "s3://buc" + c + "ket/*", "end": base + c}[where]
    with pytest.raises(RestrictionError, match="control characters"):
        parse_restriction(text)


@pytest.mark.parametrize("code", [0x20, 0x7E, 0xA0, 0xA1, 0xFF, 0x100, 0x2028])
def test_characters_next_to_control_ranges_are_not_control(code):
    # just outside C0/DEL/C1: accepted in an object path
    assert parse_restriction(f"s3://bucket{chr(code)}x/*").storage == "s3"


@pytest.mark.parametrize("scheme", ["udp", "tcp"])
@pytest.mark.parametrize(("port", "ok"), [
    ("0", False), ("00", False), ("1", True), ("01", True), ("65535", True),
    ("65536", False), ("99999", False), ("5000", True),
])
def test_stream_port_boundaries(scheme, port, ok):
    text = f"{scheme}://host:{port}*"
    if ok:
        assert parse_restriction(text).storage == scheme
    else:
        with pytest.raises(RestrictionError, match="outside 1-65535"):
            parse_restriction(text)


_segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12)
_path = st.lists(_segment, min_size=0, max_size=4).map("/".join)
_valid = st.one_of(
    _path.map(lambda p: f"file:////{p}/*" if p else "file:////*"),
    st.tuples(st.sampled_from("cdefz"), _path).map(lambda t: f"file:///{t[0]}%3A/{t[1]}*"),
    st.tuples(st.sampled_from(OBJECT_SCHEMES), _path).map(lambda t: f"{t[0]}://{t[1]}*"),
    st.tuples(st.sampled_from(["udp", "tcp"]), _segment,
              st.one_of(st.none(), st.integers(1, 65535))).map(
        lambda t: f"{t[0]}://{t[1]}{'' if t[2] is None else f':{t[2]}'}*"),
    st.just("*"),
)


@given(st.lists(st.tuples(st.booleans(), _valid), min_size=1, max_size=6))
def test_generated_valid_restrictions_parse_and_survive_the_list_form(items):
    raws = [("!" if neg else "") + raw for neg, raw in items]
    for raw in raws:
        assert parse_restriction(raw).raw == raw
    listed = parse_restrictions([to_list_string(raws)])
    assert [r.raw for r in listed] == list(dict.fromkeys(raws))


def test_the_list_form_picks_a_delimiter_no_restriction_contains():
    """A restriction holding '|' (a file name may) must not be read by a node as two."""
    raws = ["file:////data/a|b/*", "s3://bucket/*"]
    text = to_list_string(raws)
    assert text == ",file:////data/a|b/*,s3://bucket/*"
    assert split_restriction_list(text) == raws
    every = "file:////x" + LIST_DELIMITERS.replace(" ", "") + "*"
    assert split_restriction_list(to_list_string([every, "s3://*"])) == [every, "s3://*"]
    with pytest.raises(RestrictionError) as info:
        to_list_string(["file:////x" + LIST_DELIMITERS + "*"])
    assert str(info.value) == ("these restrictions contain every list delimiter "
                               f"({LIST_DELIMITERS!r}): a node could not read them as a list")


def test_xuser_show_gives_a_list_form_a_node_reads_back(invoke, home):
    r = invoke("xuser", "add", "x1", "--restriction", "file:////data/a|b/*",
               "--restriction", "s3://bucket/*")
    assert r.exit_code == 0, r
    shown = json.loads(invoke("xuser", "show", "x1", "-o", "json").stdout)
    assert split_restriction_list(shown["file_restriction"]) == ["file:////data/a|b/*",
                                                                 "s3://bucket/*"]


def test_long_unknown_scheme_is_shown_cut_to_80_characters():
    scheme = "z" * 100
    with pytest.raises(RestrictionError) as info:
        parse_restriction(scheme + "://x")
    assert repr("z" * 77 + "...") in str(info.value)
    with pytest.raises(RestrictionError) as info:
        parse_restriction("z" * 80 + "://x")
    assert repr("z" * 80) in str(info.value)
    with pytest.raises(RestrictionError) as info:
        parse_restriction("\x85bad")
    assert "control characters" in str(info.value)


# -- exact messages and the corners of the glob scanner ------------------------------------


@pytest.mark.parametrize(("raw", "why"), [
    ("", "it is empty"),
    ("!", "nothing follows '!'"),
    ("/data/*", "missing a storage scheme such as file:// or s3://"),
    ("file://data/*", "a local restriction starts with file:/// "),
    ("file:///c:/data/*", "percent-encode the drive colon: file:///c%3A/folder/*"),
    ("file:///C:/data/*", "percent-encode the drive colon: file:///c%3A/folder/*"),
    ("file:///data/*", "use file:////path/* (Unix) or file:///c%3A/path/* (Windows)"),
    ("s3://a\x85b", "contains control characters"),
    ("file:////data/\\", "ends with a lone escape '\\'"),
    ("%zz", "bad percent-encoding at position 1"),
    ("s3://%zz", "bad percent-encoding at position 6"),
    ("s3://a%zz", "bad percent-encoding at position 7"),
    ("s3://a%4", "bad percent-encoding at position 7"),
    # an escape covers exactly one character: the "%" after "\\a" is still checked
    ("file:////x\\a%zz/*", "bad percent-encoding at position 13"),
    ("!s3://ab%g1", "bad percent-encoding at position 8"),
])
def test_refusal_message_is_exact(raw, why):
    with pytest.raises(RestrictionError) as exc:
        parse_restriction(raw)
    assert str(exc.value) == (f"invalid restriction {_shown(raw)!r}: {why}; accepted forms: "
                              "file:////folder/*, file:////*, file:///c%3A/folder/*, file:///c*, "
                              "s3://*, azu://*, azure-files://*, adl://*, swift://*, oss://*, "
                              "gs://*, google-gcs://*, hdfs://*, *, udp://*, tcp://*, udp://host*, "
                              "udp://host:5000*"
                              " (prefix ! to reject; ? * and \\ escapes are glob syntax)")


def _shown(raw: str) -> str:
    return raw.encode("unicode_escape").decode("ascii")


@pytest.mark.parametrize("raw", [
    "file:////data/\\*",          # an escape followed by the last character
    "file:////\\%zz/*",           # an escaped "%" is not percent-encoding
    "s3://bucket/x://y/*",        # the scheme ends at the FIRST "://"
    "s3://" + "a" * (4096 - 5),   # exactly the length limit
])
def test_edge_forms_accepted(raw):
    assert parse_restriction(raw).raw == raw
    assert parse_restriction(raw).storage == ("s3" if raw.startswith("s3") else "local")


def test_length_limit_is_exclusive():
    with pytest.raises(RestrictionError, match="longer than 4096 characters"):
        parse_restriction("s3://" + "a" * (4096 - 4))


def test_scheme_of_81_characters_is_cut():
    with pytest.raises(RestrictionError) as info:
        parse_restriction("z" * 81 + "://x")
    assert f"unknown storage scheme {'z' * 77 + '...'!r}" in str(info.value)


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty restriction list"),
    ("||s3://*", "empty restriction in list '||s3://*' (delimiter '|' doubled or trailing)"),
    (";s3://*;", "empty restriction in list ';s3://*;' (delimiter ';' doubled or trailing)"),
])
def test_list_refusal_message_is_exact(text, message):
    with pytest.raises(RestrictionError) as exc:
        split_restriction_list(text)
    assert str(exc.value) == message


# -- matching: what a transfer user with these restrictions may reach (golden cases) ------

MATCH_GOLDEN = [
    # (restrictions, url, allowed)
    (["file:////data/*"], "file:////data/a.txt", True),
    (["file:////data/*"], "file:////data/sub/deep/a.txt", True),  # * crosses folders
    (["file:////data/*"], "file:////other/a.txt", False),
    (["file:////data/*"], "file:////data", False),  # the folder itself is not data/*
    (["file:////data/?.txt"], "file:////data/a.txt", True),  # ? is one character
    (["file:////data/?.txt"], "file:////data/ab.txt", False),
    (["file:////data/?.txt"], "file:////data/.txt", False),
    # ! rejects what it matches, before or after the rule that accepts it
    (["file:////data/*", "!file:////data/private/*"], "file:////data/private/k", False),
    (["!file:////data/private/*", "file:////data/*"], "file:////data/private/k", False),
    (["file:////data/*", "!file:////data/private/*"], "file:////data/public/k", True),
    (["!file:////data/private/*"], "file:////data/public/k", False),  # nothing accepts
    # \* is a literal star, \? a literal question mark, \\ a backslash
    (["file:////data/\\*"], "file:////data/*", True),
    (["file:////data/\\*"], "file:////data/x", False),
    (["file:////data/a\\?"], "file:////data/a?", True),
    (["file:////data/a\\?"], "file:////data/ab", False),
    (["file:////d\\\\x"], "file:////d\\x", True),
    # a backslash that ends the glob has nothing to escape: it is a backslash
    (["file:////d\\"], "file:////d\\", True),
    (["file:////d\\"], "file:////d", False),
    # * runs over any character, a newline in a file name too
    (["file:////data/*"], "file:////data/a\nb", True),
    (["file:////data/a?b"], "file:////data/a\nb", True),
    # regular-expression characters are plain text
    (["file:////data/a.b"], "file:////data/aXb", False),
    (["file:////data/(x)+"], "file:////data/(x)+", True),
    (["s3://*"], "s3://bucket/key", True),
    (["s3://*"], "file:////data/a", False),
    ([], "file:////data/a", False),
]


@pytest.mark.parametrize(("restrictions", "url", "allowed"), MATCH_GOLDEN)
def test_restriction_matching_golden_cases(restrictions, url, allowed):
    from nodecli.users.restrictions import restriction_matcher

    assert restriction_matcher(restrictions)(url) is allowed


def test_the_emulator_matches_node_users_by_the_same_rules(emulator):
    from nodecli.emulator.storage import node_user_matcher

    emulator.add_node_user("golden", "pw", xuser="gx",
                           restrictions=("file:////data/*", "!file:////data/private/*",
                                         "file:////lit/\\*"))
    allowed = node_user_matcher(emulator.state, "golden")
    assert allowed("/data/a") and allowed("/lit/*")
    assert not allowed("/data/private/a") and not allowed("/lit/x") and not allowed("/x")
