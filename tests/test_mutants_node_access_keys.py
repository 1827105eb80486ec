"""nodecli.node.access_keys at its boundaries (issue 33, item 2: the survivors of its
mutation run): an id of 1 and 128 characters, the logging setting's body and where it is
read, a deep merge, what `access-key show` says of logging at node 3.7.4 and 3.8.0
exactly, and what create refuses before asking. Pure functions in process."""

from __future__ import annotations

import pytest

from nodecli.errors import NodecliError, NotFoundError, UsageError
from nodecli.node.access_keys import (
    check_ak_id,
    describe,
    key_logging,
    logging_body,
    merge,
    not_found,
    require_per_key_logging,
)


@pytest.mark.parametrize("ak", ["a", "A" * 128, "ak_1.x@y+z-w", "0"])
def test_an_id_of_one_to_128_allowed_characters_passes(ak):
    assert check_ak_id(ak) == ak


@pytest.mark.parametrize("ak", ["", "A" * 129, "a b", "a/b", "a\n", "é", "a:b", None])
def test_any_other_id_is_refused_and_shown(ak):
    with pytest.raises(UsageError) as e:
        check_ak_id(ak)
    assert str(e.value) == (f"invalid access key id {str(ak)[:60]!r}: letters, digits and "
                            ". _ @ + - (at most 128)")


def test_a_refused_id_is_shown_in_60_characters():
    with pytest.raises(UsageError) as e:
        check_ak_id("/" * 99)
    assert f"{'/' * 60!r}:" in str(e.value)


@pytest.mark.parametrize(("value", "setting"), [("on", True), ("off", False),
                                                ("inherit", None)])
def test_the_logging_body(value, setting):
    assert logging_body(value) == {"configuration": {"activity_event_logging": setting}}


@pytest.mark.parametrize("value", ["ON", "true", "", "yes"])
def test_a_logging_value_is_on_off_or_inherit(value):
    with pytest.raises(UsageError) as e:
        logging_body(value)
    assert str(e.value) == "--activity-event-logging takes on, off or inherit"


@pytest.mark.parametrize(("key", "own"), [
    ({"configuration": {"activity_event_logging": True}}, True),
    ({"configuration": {"activity_event_logging": False}}, False),
    ({"configuration": {"activity_event_logging": None}}, None),
    ({"configuration": {"activity_event_logging": 1}}, None),
    ({"configuration": {"activity_event_logging": "true"}}, None),
    ({"configuration": {}}, None), ({"configuration": [True]}, None), ({}, None),
    ({"activity_event_logging": True}, None)])
def test_the_keys_own_logging(key, own):
    assert key_logging(key) is own


def test_a_deep_merge_where_the_second_wins():
    base = {"a": 1, "c": {"x": 1, "y": {"p": 1}}, "d": {"k": 1}}
    got = merge(base, {"b": 2, "c": {"y": {"q": 2}, "z": 3}, "d": 5, "a": {"n": 1}})
    assert got == {"a": {"n": 1}, "b": 2, "c": {"x": 1, "y": {"p": 1, "q": 2}, "z": 3},
                   "d": 5}
    assert base == {"a": 1, "c": {"x": 1, "y": {"p": 1}}, "d": {"k": 1}}  # not changed


KEY = {"id": "ak1", "storage": {"type": "local", "path": "/data"}, "root_file_id": "7",
       "configuration": {"activity_event_logging": False}}


def _logging(key, node, version):
    return describe(key, node, version)["activity_event_logging"]


def test_describe_says_the_key():
    got = describe(KEY, True, (4, 0, 0))
    assert {k: v for k, v in got.items() if k != "activity_event_logging"} == {
        "id": "ak1", "storage_type": "local", "storage_path": "/data", "root_file_id": "7",
        "verification_key": False, "verification_key_fingerprint": None}
    bare = describe({"storage": "x"}, None, None)
    assert (bare["id"], bare["storage_type"], bare["storage_path"]) == (None, None, None)


@pytest.mark.parametrize(("version", "logged", "why"), [
    ((3, 7, 3), True, "every event is logged before node 3.7.4"),
    ((3, 7, 4), True, "the node setting (the key has none of its own)"),
    ((3, 7, 9), True, "the node setting (the key has none of its own)"),
    ((3, 8, 0), False, "the key's own setting overrides the node's (3.8.0+)"),
    (None, False, "the key's own setting overrides the node's (3.8.0+)")])
def test_logging_follows_the_version_at_each_boundary(version, logged, why):
    assert _logging(KEY, True, version) == {"key": False, "node": True,
                                             "events_logged": logged, "why": why}


def test_logging_without_a_setting_of_its_own_or_the_nodes():
    bare = {"id": "ak1"}
    assert _logging(bare, False, (3, 8, 0))["events_logged"] is False
    assert _logging(bare, None, (3, 8, 0)) == {
        "key": None, "node": None, "events_logged": None,
        "why": "the node setting is not known to this login"}
    assert _logging(bare, None, (3, 7, 3))["events_logged"] is True


def test_describe_fingerprints_a_registered_key(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.tokens.keys import key_fingerprint

    pub = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    pem = pub.public_bytes(serialization.Encoding.PEM,
                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    got = describe({"token_verification_key": pem}, None, None)
    assert (got["verification_key"], got["verification_key_fingerprint"]) == (
        True, key_fingerprint(pub))
    bad = describe({"token_verification_key": "-----BEGIN PUBLIC KEY-----\nx"}, None, None)
    assert (bad["verification_key"], bad["verification_key_fingerprint"]) == (
        True, "unreadable")
    for none in (" \n", "", 5):
        got = describe({"token_verification_key": none}, None, None)
        assert (got["verification_key"], got["verification_key_fingerprint"]) == (False, None)


def test_per_key_logging_needs_node_3_8_0_exactly():
    require_per_key_logging((3, 8, 0), "3.8.0")
    require_per_key_logging(None, None)
    with pytest.raises(NodecliError) as e:
        require_per_key_logging((3, 7, 9), "3.7.9b")
    assert e.value.message == ("this node runs version 3.7.9b: activity_event_logging per "
                               "access key exists from node 3.8.0")
    assert e.value.hint == "set the node-wide activity_event_logging instead, or upgrade"


def test_not_found_names_the_key():
    err = not_found("ak'1")
    assert isinstance(err, NotFoundError) and err.message == "no access key \"ak'1\""
