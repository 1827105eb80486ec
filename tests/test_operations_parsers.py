"""Hostile-input tests for the operations parsers and validators (no network)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecli.errors import NodecliError, RemoteError, UsageError
from nodecli.service.operations import (
    OpRef,
    check_id,
    check_statuses,
    folder_name_problem,
    parent_ref,
    plan_list,
    stop_reason,
)
from nodecli.service.resolve import Choice


@given(st.text(max_size=300))
def test_folder_name_problem_never_raises_and_accepted_names_are_safe(name):
    problem = folder_name_problem(name)
    if problem is None:
        assert name.strip() == name and name not in ("", ".", "..")
        assert "/" not in name and "\\" not in name
        assert all(ord(c) >= 0x20 and not 0x7F <= ord(c) < 0xA0 for c in name)
        assert len(name.encode("utf-8", "surrogatepass")) <= 255


@pytest.mark.parametrize("bad", ["", " ", "/", "a/b", "..", ".", "a\\b", "x\x00", "x\x1b[1m",
                                 "x\u202ey", " lead", "trail ", "x" * 256])
def test_folder_name_rejects(bad):
    assert folder_name_problem(bad) is not None


@pytest.mark.parametrize("good", ["Projects", "beta 2", "Übersicht", "日本語", "a.b", "x" * 255])
def test_folder_name_accepts(good):
    assert folder_name_problem(good) is None


@given(st.text(max_size=300))
def test_check_id_only_usage_errors_and_safe_ids(value):
    try:
        out = check_id(value)
    except UsageError:
        return
    assert out == value and "/" not in out and out not in (".", "..")


# the endpoints of interface.md, written out here (not read from the module under test)
_NESTED = {"workspace": "workspaces", "workspace_membership": "workspace_memberships"}
_PARAM = {"group": "group_id", "group_membership": "group_membership_id", "user": "user_id"}


def _id_ok(value: str) -> bool:
    try:
        check_id(value)
    except UsageError:
        return False
    return True


@given(st.dictionaries(st.sampled_from(["workspace", "workspace_membership", "group",
                                        "group_membership", "user"]),
                       st.text(min_size=1, max_size=20), max_size=5))
def test_plan_list_one_filter_rule(filters):
    from urllib.parse import quote

    if len(filters) > 1:
        with pytest.raises(UsageError, match="at most one filter") as info:
            plan_list(filters)
        for name in filters:  # the message names the clashing flags
            assert "--" + name.replace("_", "-") in info.value.message
        return
    if not filters:
        plan = plan_list(filters)
        assert (plan.path, plan.params) == ("/operations", {})
        return
    (key, value), = filters.items()
    if not _id_ok(value):
        with pytest.raises(UsageError):
            plan_list(filters)
        return
    plan = plan_list(filters)
    if key in _NESTED:
        assert plan.path == f"/{_NESTED[key]}/{quote(value, safe='')}/operations"
        assert plan.params == {}
    else:
        assert plan.path == "/operations"
        assert plan.params == {_PARAM[key]: value}


def test_plan_list_quotes_ids():
    assert plan_list({"workspace": "a b?c"}).path == "/workspaces/a%20b%3Fc/operations"


@given(st.text(max_size=200))
def test_from_location_never_crashes(location):
    try:
        ref = OpRef.from_location(location)
    except RemoteError:
        return
    assert ref.collection in ("workspaces", "workspace_memberships", "group_memberships")


def test_from_location_shapes():
    ref = OpRef.from_location("/workspaces/7/operations/9")
    assert (ref.collection, ref.parent_id, ref.op_id) == ("workspaces", "7", "9")
    assert ref.path == "/workspaces/7/operations/9"
    # a service under a prefix: later requests go to the URL it gave, origin and prefix
    ref = OpRef.from_location("https://h:8443/api/v1/workspace_memberships/a%2Fb/operations/x")
    assert (ref.collection, ref.parent_id, ref.op_id) == ("workspace_memberships", "a/b", "x")
    assert ref.path == "https://h:8443/api/v1/workspace_memberships/a%2Fb/operations/x"
    ref = OpRef.from_location("https://h/api/workspaces/7/operations/9")
    assert ref.path == "https://h/api/workspaces/7/operations/9"
    with pytest.raises(RemoteError):
        OpRef.from_location("/somewhere/else")


@given(st.dictionaries(st.sampled_from(["id", "type", "workspace_id", "status", "data",
                                        "workspace_membership_id", "group_membership_id"]),
                       st.one_of(st.none(), st.integers(), st.text(max_size=10),
                                 st.sampled_from(["workspace.create",
                                                  "group_membership.create"]),
                                 st.dictionaries(st.text(max_size=5), st.text(max_size=5)))))
def test_op_ref_of_and_stop_reason_on_hostile_objects(op):
    reason = stop_reason(op)
    assert isinstance(reason, str)
    data = op.get("data")
    if op.get("status") != "aborted" and isinstance(data, dict) and data.get("type"):
        assert reason.startswith(str(data["type"]))
    parents = {"workspace.create": "workspace_id",
               "workspace_membership.create": "workspace_membership_id",
               "group_membership.create": "group_membership_id"}
    op_type = op.get("type")
    prop = parents.get(op_type) if isinstance(op_type, str) else None
    good_id = isinstance(op.get("id"), str | int) and not isinstance(op.get("id"), bool)
    parent = op.get(prop) if prop else None
    good_parent = (isinstance(parent, str | int) and not isinstance(parent, bool)
                   and str(parent) != "")
    try:
        ref = OpRef.of(op)
    except NodecliError as exc:
        assert isinstance(exc, RemoteError) and "\n" not in str(exc)
        assert not (prop and good_id and good_parent)
    else:
        assert prop and good_id and good_parent
        assert (ref.parent_id, ref.op_id) == (str(parent), str(op["id"]))


def test_choice_bodies():
    conflict = {"status": "stopped", "data": {"type": "folder_conflict", "folder_name": "x"}}
    error = {"status": "stopped", "data": {"type": "internal_server_error"}}
    # a terminal answer restarts the operation; "use existing" applied to all is the
    # one body interface.md 4.4 documents, byte for byte
    documented = Choice.prompted("use-existing", apply_to_all=True).body(conflict)
    assert json.dumps(documented, separators=(",", ":")) == \
        '{"use_existing":true,"retry":true,"apply_to_all":true}'
    assert Choice.prompted("rename", "y", False).body(conflict) == {
        "folder_name": "y", "retry": True, "apply_to_all": False}
    assert Choice.prompted("retry", apply_to_all=False).body(conflict) == {
        "retry": True, "apply_to_all": False}
    assert Choice.prompted("retry").body(error) == {"retry": True}
    assert Choice.prompted("skip").body(conflict) is None
    # flags: exactly the properties given; apply_to_all left out unless given
    assert Choice.from_flags(use_existing=True).body(conflict) == {"use_existing": True}
    assert Choice.from_flags(use_existing=True, retry=True, apply_to_all=True).body(
        conflict) == {"use_existing": True, "retry": True, "apply_to_all": True}
    assert Choice.from_flags(folder_name="n", retry=True, apply_to_all=False).body(
        conflict) == {"folder_name": "n", "retry": True, "apply_to_all": False}
    assert Choice.from_flags(retry=True).body(error) == {"retry": True}
    assert Choice.from_flags() is None
    assert not Choice.from_flags(use_existing=True).fits(error)
    with pytest.raises(UsageError):
        Choice.from_flags(use_existing=True, folder_name="n")
    with pytest.raises(UsageError):
        Choice.from_flags(folder_name="a/b")
    with pytest.raises(ValueError):
        Choice("use-existing", use_existing=True, folder_name="x")


def test_statuses_and_parent():
    assert check_statuses(["stopped,running", "stopped"]) == ["stopped", "running"]
    with pytest.raises(UsageError):
        check_statuses(["nope"])
    with pytest.raises(UsageError):
        parent_ref("1")
    with pytest.raises(UsageError):
        parent_ref("1", workspace="a", workspace_membership="b")
    assert parent_ref("1", group_membership="g").path == "/group_memberships/g/operations/1"
