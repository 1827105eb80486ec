"""A YAML document is read without noting lines, and again with them only when it is wrong:
the second reading must name the same line the marked reading always named, deep in a
long document, and a right document must read the same either way."""

from __future__ import annotations

import pytest

from nodecli.declare import document
from nodecli.errors import UsageError

USERS = 400  # 3 lines each after the 3 lines of the header


def long_document(bad_user: int, bad_line: str) -> tuple[str, int]:
    """A document of USERS node users, user ``bad_user`` holding ``bad_line``; and the
    line number of ``bad_line``."""
    lines = ["version: 1", "transfer_users:", "  x: {}", "node_users:"]
    at = 0
    for i in range(USERS):
        lines.append(f"  u{i:04d}:")
        lines.append("    transfer_user: x")
        if i == bad_user:
            lines.append(bad_line)
            at = len(lines)
        else:
            lines.append("    acls: [admin]")
    return "\n".join(lines) + "\n", at


def refused(text: str) -> str:
    with pytest.raises(UsageError) as info:
        document.parse(text.encode(), "d.yaml")
    return info.value.message


@pytest.mark.parametrize("bad_user", [0, 1, USERS - 1])
@pytest.mark.parametrize("bad_line,place,why", [
    ("    acls: admin", "acls", "must be a list of words"),  # found by the schema check
    ("    transfer_user: y", "transfer_user", "given twice"),  # found while reading
    ("    acls: [admin, !!binary 'a']", "acls[1]", "unreadable value: failed to decode "
     "base64 data"),
    ("    ? 2026-02-30\n    : b", "?", "unreadable value: day is out of range for month"),
])
def test_an_error_deep_in_a_long_document_names_its_line(bad_user, bad_line, place, why):
    text, line = long_document(bad_user, bad_line)
    message = refused(text)
    assert message.startswith(f"d.yaml:{line}: node_users.u{bad_user:04d}.{place}: {why}"), \
        message


def test_a_key_that_is_not_a_word_deep_in_a_long_document_names_its_line():
    text, line = long_document(USERS - 1, "    ? [a]\n    : b")
    assert refused(text).startswith(f"d.yaml:{line}: node_users.u{USERS - 1:04d}.?: "
                                    "a key must be a word")


def test_a_right_document_reads_the_same_as_its_json_and_keys_that_are_not_text_too():
    text, _ = long_document(USERS - 1, "    acls: [admin]")
    doc = document.parse(text.encode(), "d.yaml")
    assert len(doc.node_users) == USERS
    assert doc.node_users[f"u{USERS - 1:04d}"] == {"transfer_user": "x", "acls": ["admin"]}
    as_json = document.dump(doc.to_dict(), "json").encode()
    assert document.parse(as_json, "d.json").to_dict() == doc.to_dict()
    # a key written as a number is a name all the same (the marked reading's rule)
    doc = document.parse(b"version: 1\nnode_users:\n  1234: {transfer_user: x}\n", "d.yaml")
    assert doc.node_users == {"1234": {"transfer_user": "x"}}


@pytest.mark.parametrize("value", ["2026-02-30", "2026-13-01", "!!timestamp 2026-02-30",
                                   "!!int 0x", "!!float nan-ish"])
def test_a_value_yaml_cannot_build_is_one_line_not_a_traceback(value):
    """A date that does not exist, or a tagged value that is not one, is refused as an
    unreadable value (PyYAML raises ValueError for a date, not a YAMLError), at its line."""
    text, line = long_document(3, f"    acls: [admin, {value}]")
    assert refused(text).startswith(f"d.yaml:{line}: node_users.u0003.acls[1]: unreadable "
                                    "value: ")


@pytest.mark.parametrize("value,why", [
    ("2026-02-30", "day is out of range for month"),
    ("!!int 0x", "invalid literal for int() with base 16: ''"),
    ("!!float nan-ish", "could not convert string to float: 'nan-ish'"),
])
def test_an_unreadable_value_says_what_yaml_found_wrong_each_time(value, why):
    """What PyYAML said is the message, for the first such document and the ones after
    it (a failed construction once left the shared constructor saying "recursive node"
    for the rest of the process)."""
    text, line = long_document(1, f"    acls: [{value}]")
    for _ in range(3):
        assert refused(text) == f"d.yaml:{line}: node_users.u0001.acls[0]: unreadable value: {why}"
