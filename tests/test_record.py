"""nodecli.record: the value classes that replaced @dataclass (start-up time)."""

from __future__ import annotations

import pytest

from nodecli.http import Auth, Endpoint, Response
from nodecli.node.events.pages import EventFilter
from nodecli.profiles.node import NodeFlags
from nodecli.render.table import Column


def test_secrets_never_appear_in_a_repr():
    auth = Auth("basic", "admin", "s3cret-pw", token="tok-XYZ", note="password from env")
    flags = NodeFlags(url="https://x", user="admin", password="s3cret-pw")
    text = repr(Endpoint("https://x", auth)) + repr(flags)
    assert "s3cret-pw" not in text and "tok-XYZ" not in text
    assert "username='admin'" in text and "note='password from env'" in text


def test_frozen_records_refuse_changes_and_hash_by_value():
    col = Column("id", "id", whole=True)
    with pytest.raises(AttributeError):
        col.key = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del col.key
    assert {col, Column("id", "id", whole=True)} == {col}
    assert col != Column("id", "id")
    assert (col == ("id", "id", "left", True)) is False  # only records of its own class


def test_replace_copies_with_changes_and_refuses_unknown_fields():
    ep = Endpoint("https://x", Auth(), read_timeout=5.0, label="prod")
    other = ep.replace(read_timeout=1.0)
    assert (other.read_timeout, other.label, other.base_url) == (1.0, "prod", "https://x")
    assert ep.read_timeout == 5.0  # the original is unchanged
    assert ep.with_auth(Auth("oauth", token="t")).auth.kind == "oauth"
    with pytest.raises(TypeError):
        ep.replace(no_such_field=1)


def test_mutable_records_compare_by_value_and_are_unhashable():
    a = Response(200, {"a": "1"}, b"x", "http://h/", 0.1)
    assert a == Response(200, {"a": "1"}, b"x", "http://h/", 0.1)
    with pytest.raises(TypeError):
        hash(a)


def test_event_filter_still_checks_its_fields():
    from nodecli.errors import UsageError

    assert EventFilter(type_glob="file.*").key() == "glob-file.ANY"
    with pytest.raises(UsageError):
        EventFilter("a.b", "c.*")
