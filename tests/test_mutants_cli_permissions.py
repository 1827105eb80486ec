"""nodecli.cli.permissions' helpers at their boundaries (issue 33, item 2): who a
permission is for, and the rows `permission list` shows (the levels joined, what is
inherited). The commands themselves are tested over HTTPS in tests/test_access.py."""

from __future__ import annotations

import pytest

from nodecli.cli.permissions import _rows, _who
from nodecli.errors import UsageError


@pytest.mark.parametrize(("user", "group"), [(None, None), ("u", "g"), ("", "")])
def test_a_permission_is_for_a_user_or_a_group_exactly_one(user, group):
    with pytest.raises(UsageError) as e:
        _who(user, group)
    assert str(e.value) == "give --user ID or --group ID (one of the two)"


@pytest.mark.parametrize(("user", "group", "who"), [
    ("alice", None, ("user", "alice")), (None, "staff", ("group", "staff")),
    ("", None, ("user", "")), (None, "", ("group", ""))])
def test_who_a_permission_is_for(user, group, who):
    assert _who(user, group) == who


def test_the_rows_join_the_levels_and_say_what_is_inherited():
    perms = [
        {"id": "p1", "file_id": "5", "access_levels": ["list", "read"], "tags": {"a": 1}},
        {"id": "p2", "file_id": 5, "access_levels": []},         # an integer id: the file's
        {"id": "p3", "file_id": "1", "access_levels": "odd"},    # a folder above; shown as is
        {"id": "p4", "access_levels": [1, None]},                 # no file id: inherited
    ]
    assert _rows(perms, "5") == [
        {"id": "p1", "file_id": "5", "access_levels": "list,read", "tags": {"a": 1},
         "inherited": "no"},
        {"id": "p2", "file_id": 5, "access_levels": "", "inherited": "no"},
        {"id": "p3", "file_id": "1", "access_levels": "odd", "inherited": "yes"},
        {"id": "p4", "access_levels": "1,None", "inherited": "yes"},
    ]
    assert perms[0]["access_levels"] == ["list", "read"]  # the node's rows are not changed
