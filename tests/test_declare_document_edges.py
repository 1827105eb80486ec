"""nodecli/declare/document.py at its edges: what mutation testing found no test for
(the size bound at equality, the JSON reader's own cases, where an error's line comes
from, messages word for word, csv rows, and how documents are written)."""

from __future__ import annotations

import pytest

from nodecli.declare import document, yaml_values
from nodecli.errors import UsageError

HASH = "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdA$" + "A" * 43


def refused(raw: bytes | str, source: str = "d.yaml") -> str:
    with pytest.raises(UsageError) as info:
        document.parse(raw.encode() if isinstance(raw, str) else raw, source)
    return info.value.message


# -- reading -------------------------------------------------------------------------------


@pytest.mark.parametrize(("spare", "read"), [(0, True), (-1, False)])
def test_a_document_of_exactly_the_largest_size_is_read(monkeypatch, spare, read):
    raw = b'{"version": 1}' + b" " * 50
    monkeypatch.setattr(document, "MAX_DOCUMENT_BYTES", len(raw) + spare)
    if read:
        assert document.parse(raw, "d.json").to_dict() == {"version": 1}
    else:
        assert refused(raw, "d.json") == f"d.json: larger than {len(raw) - 1} bytes"


EMOJI_JSON = '{"version": 1, "transfer_users": {"bob": {"docroot": "/srv/\\ud83d\\ude00"}}}'


@pytest.mark.parametrize("lead", ["", "\n", "  \n\t"])
def test_a_json_document_is_read_by_the_json_reader_after_any_blank_lead(lead):
    """An emoji escaped as a surrogate pair is JSON the YAML reader refuses: it tells
    which reader read the document."""
    doc = document.parse((lead + EMOJI_JSON).encode(), "d.json")
    assert doc.transfer_users == {"bob": {"docroot": "/srv/\U0001F600"}}


def test_a_json_document_with_a_key_given_twice_is_refused_with_its_line():
    raw = '{"version": 1,\n "node_users": {"u": {"transfer_user": "x"},\n' \
          '                "u": {"transfer_user": "y"}}}'
    assert refused(raw, "d.json") == "d.json:3: node_users.u: given twice"


def test_an_unknown_section_names_itself_and_its_line():
    assert refused("version: 1\nusers: {}\n") == (
        "d.yaml:2: users: unknown field (known: version, transfer_users, node_users, "
        "access_keys)")


def test_a_missing_field_takes_the_line_of_the_nearest_place_given():
    """``path`` is not in the document: the line is that of ``storage``'s fields, the nearest
    place above it that is, not that of the key further up."""
    text = "version: 1\naccess_keys:\n  ak:\n\n\n    storage:\n\n      type: local\n"
    assert refused(text) == ("d.yaml:8: access_keys.ak.storage.path: must be an absolute "
                             "path, not nothing")


def test_an_entry_that_is_no_mapping_names_its_place():
    assert refused("version: 1\nnode_users:\n  alice: 5\n") == (
        "d.yaml:3: node_users.alice: must be a mapping (name: value), not a number")


def test_each_node_user_keeps_its_own_acls():
    doc = document.parse(b"version: 1\nnode_users:\n"
                         b"  a: {transfer_user: x, acls: [admin]}\n"
                         b"  b: {transfer_user: x, acls: [internal]}\n"
                         b"  c: {transfer_user: x, acls: [admin]}\n", "d.yaml")
    assert doc.node_users is not None
    assert [doc.node_users[n]["acls"] for n in "abc"] == [["admin"], ["internal"], ["admin"]]


def test_an_unsupported_storage_type_lists_the_supported_ones():
    from nodecli.node.access_keys import STORAGE_TYPES

    message = refused("version: 1\naccess_keys:\n  ak:\n    storage: {type: tape, path: /d}\n")
    assert message == ("d.yaml:4: access_keys.ak.storage.type: storage type 'tape' is not "
                       f"supported ({', '.join(STORAGE_TYPES)})")


def test_an_alias_bomb_is_refused_in_these_words(monkeypatch):
    raw = b"version: 1\n"
    monkeypatch.setattr(yaml_values, "ALIAS_VALUES", 1 - 2 * len(raw))
    assert refused(raw) == ("d.yaml: its aliases stand for more than 1 values (a YAML alias "
                            "bomb?): write them out")


def test_data_already_read_is_checked_and_named_by_its_source():
    assert document.from_data({"version": 1}, "plan.json").source == "plan.json"
    with pytest.raises(UsageError) as info:
        document.from_data({"version": 2}, "plan.json")
    assert info.value.message == ("plan.json: version: unsupported version 2 (this nodecli "
                                  "reads version 1)")


def test_a_keys_permissions_are_written_back_as_read():
    text = ("version: 1\naccess_keys:\n  ak:\n    storage: {path: /d}\n    permissions:\n"
            "      - {path: /a, user: u1, levels: [read, list]}\n"
            "      - {path: /b, group: 7, levels: [write]}\n")
    data = document.parse(text.encode(), "d.yaml").to_dict()
    assert data["access_keys"]["ak"]["permissions"] == [
        {"path": "/a", "user": "u1", "levels": ["list", "read"]},
        {"path": "/b", "group": "7", "levels": ["write"]}]
    again = document.parse(document.dump(data, "yaml").encode(), "again.yaml")
    assert again.to_dict() == data


# -- csv -----------------------------------------------------------------------------------


def test_a_csv_becomes_a_whole_document():
    raw = b"name,transfer_user,acls\nu1,x,admin;internal\nu2,y,\n"
    assert document.from_csv(raw, "c") == {
        "version": 1,
        "node_users": {"u1": {"transfer_user": "x", "acls": ["admin", "internal"]},
                       "u2": {"transfer_user": "y"}}}


@pytest.mark.parametrize(("row", "message"), [
    (",x", "c:2: name: node user name must be a non-empty string"),
    ("u1,", "c:2: u1.transfer_user: must be text, not empty"),
    ("bad/name,x", "c:2: bad/name: invalid node user name 'bad/name': use 1-128 letters, "
                   "digits and . _ @ + - (not starting with . + - @)"),
    ("u1,x,admin;zz", "c:2: u1.acls: unknown ACL 'zz': use a comma-separated list of admin, "
                      "impersonation, internal"),
])
def test_a_csv_row_is_checked_as_a_node_user(row, message):
    with pytest.raises(UsageError) as info:
        document.from_csv(f"name,transfer_user,acls\n{row}\n".encode(), "c")
    assert info.value.message == message


@pytest.mark.parametrize(("header", "message"), [
    ("name", "c:1: the header has no transfer_user column (columns: name, transfer_user, "
             "password_hash, acls)"),
    ("name,transfer_user,mail", "c:1: unknown column 'mail' (columns: name, transfer_user, "
                                "password_hash, acls)"),
])
def test_a_csv_header_error_lists_the_columns(header, message):
    with pytest.raises(UsageError) as info:
        document.from_csv(f"{header}\n".encode(), "c")
    assert info.value.message == message


# -- writing -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_text_beyond_ascii_is_written_as_itself(fmt):
    out = document.dump({"version": 1, "node_users": {"zoë": {"transfer_user": "øyvind"}}},
                        fmt)
    assert "zoë" in out and "øyvind" in out and "\\" not in out


@pytest.mark.parametrize(("n", "lines"), [(97, 1), (98, 2)])
def test_yaml_lines_fold_past_100_columns(n, lines):
    """``k: `` and n letters: 100 columns stay whole before the space, 101 fold there."""
    out = document.dump({"k": "a" * n + " b"}, "yaml")
    assert len(out.splitlines()) == lines
