"""What the survivors of mutation testing of nodecli/service/operations.py showed untested
(issue 33): the words of a refused folder name, parent options checked before the
token, operations found under each kind of parent and on a service whose paths moved,
listings, stop reasons and watching as a user sees them. Over real sockets against the
emulator's collaboration service (HTTPS), or a scripted service for hostile answers.
"""

from __future__ import annotations

import json

import pytest

from nodecli.emulator.operations import add_operation, mint_service_token, service_state
from tests.scripted_server import ScriptedServer, Seen, reply
from tests.test_operations import service as service  # the fixture
from tests.test_real_servers_service import MOVED, OPAQUE
from tests.test_real_servers_service import moved_service as moved_service  # the fixture

# -- a folder name refused, in the user's words --------------------------------------------------


@pytest.mark.parametrize(("name", "message"), [
    ("", "the folder name is empty"),
    ("   ", "the folder name is empty"),
    (" lead", "the folder name starts or ends with spaces"),
    ("a/b", "the folder name must not contain '/' or '\\'"),
    ("a\\b", "the folder name must not contain '/' or '\\'"),
    ("a\u2028b", "the folder name contains control characters"),  # line separator, Zl
    ("a\u2029b", "the folder name contains control characters"),  # paragraph separator, Zp
    ("a\udcffb", "the folder name contains control characters"),  # a byte not UTF-8, Cs
    ("a\x00b", "the folder name contains control characters"),
])
def test_a_refused_folder_name_is_said_exactly_and_nothing_is_sent(invoke, service, name,
                                                                    message):
    op = service.stopped(parent_id="100")
    r = invoke("operations", "resolve", op.id, "--workspace", "100", "--folder-name", name,
               "--yes", env=service.env)
    assert r.exit_code == 2, r
    assert r.stderr.splitlines()[0] == f"nodecli: error: {message}"
    assert service.requests == []


# -- the parent options ---------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--workspace", "--workspace-membership",
                                    "--group-membership"])
@pytest.mark.parametrize("command", ["show", "watch", "update"])
def test_a_bad_parent_id_is_refused_before_the_token_is_looked_at(invoke, service, option,
                                                                   command):
    """Exit 2 for the id, not exit 4 for the expired token the run would use."""
    expired = mint_service_token(service.state, "u1", "user:all", -30)
    extra = ["--set", "retry=true"] if command == "update" else []
    r = invoke("operations", command, "1", option, "../x", *extra,
               env={**service.env, "NODECLI_TOKEN": expired})
    assert r.exit_code == 2, r
    assert r.stderr.splitlines()[0] == (  # named by the option the user gave
        f"nodecli: error: invalid {option} id '../x': no '/', '\\', '.' or '..'")
    assert service.requests == []


@pytest.mark.parametrize("command", ["show", "watch", "update"])
def test_a_bad_operation_id_or_two_parents_are_said_exactly(invoke, service, command):
    """Before the (expired) token is looked at."""
    expired = mint_service_token(service.state, "u1", "user:all", -30)
    env = {**service.env, "NODECLI_TOKEN": expired}
    extra = ["--set", "retry=true"] if command == "update" else []
    for parent in (["--workspace", "1"], []):
        r = invoke("operations", command, "../x", *parent, *extra, env=env)
        assert r.exit_code == 2, r
        assert r.stderr.splitlines()[0] == (
            "nodecli: error: invalid operation id '../x': no '/', '\\', '.' or '..'")
    r = invoke("operations", command, "1", "--workspace", "1", "--workspace-membership", "2",
               *extra, env=env)
    assert r.exit_code == 2, r
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: name the operation's parent with exactly one of --workspace ID, "
        "--workspace-membership ID, --group-membership ID")
    assert service.requests == []


@pytest.mark.parametrize(("op_type", "option"), [
    ("workspace_membership.create", "--workspace-membership"),
    ("group_membership.create", "--group-membership"),
])
def test_an_operation_of_another_user_is_found_under_the_parent_given(invoke, service,
                                                                      op_type, option):
    """u2's operation is not in u1's own list: only the parent named finds it, and the
    one request goes straight to it."""
    op = add_operation(service.state, op_type, parent_id="p7", user_id="u2",
                       status="stopped", folder_name="Theirs")
    r = invoke("operations", "show", op.id, option, "p7", "-o", "json", env=service.env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["id"] == op.id
    collection = op_type.split(".")[0] + "s"
    assert service.requests == [("GET", f"/{collection}/p7/operations/{op.id}", {})]
    r = invoke("operations", "show", op.id, env=service.env)
    assert r.exit_code == 2 and "not among your operations" in r.stderr


_MOVED_FLAGS = ["--operations-path", MOVED["operations"],
                "--service-path", f"workspaces={MOVED['workspaces']}",
                "--service-path", f"group-memberships={MOVED['group_memberships']}"]


def test_show_on_a_service_whose_paths_moved_finds_the_operation_there(invoke,
                                                                       moved_service):
    svc = service_state(moved_service.state)
    svc.reset()
    svc.opaque_tokens[OPAQUE] = "admin"
    op = add_operation(moved_service.state, parent_id="100", user_id="admin",
                       status="stopped", folder_name="Moved")
    env = {"NODECLI_SERVICE_URL": moved_service.url, "NODECLI_TOKEN": OPAQUE}
    r = invoke("operations", "show", op.id, "-o", "json", *_MOVED_FLAGS, env=env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["id"] == op.id
    r = invoke("operations", "show", op.id, "--workspace", "100", "-o", "json",
               *_MOVED_FLAGS, env=env)
    assert r.exit_code == 0, r.stderr
    assert [(m, p) for m, p, _q in svc.requests] == [
        ("GET", "/v2/operations"), ("GET", f"/v2/ws/100/ops/{op.id}"),
        ("GET", f"/v2/ws/100/ops/{op.id}")]



# -- a hostile service: objects the emulator never makes --------------------------------------


class Hostile:
    """A plain-HTTP service on this machine answering each path with the JSON given;
    an opaque token, so no pre-flight."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], tuple[int, object, list[tuple[str, str]]]] = {}
        self.queues: dict[tuple[str, str], list[object]] = {}
        self.server = ScriptedServer(self._script)
        self.env = {"NODECLI_SERVICE_URL": self.server.url("127.0.0.1"),
                    "NODECLI_TOKEN": "hostile-opaque-token"}

    def on(self, method: str, path: str, body: object, status: int = 200,
           headers: list[tuple[str, str]] | None = None) -> None:
        self.answers[(method, path)] = (status, body, headers or [])

    def then(self, method: str, path: str, *bodies: object) -> None:
        """Answer 200 with each body in turn (the last one from then on)."""
        self.queues[(method, path)] = list(bodies)

    def _script(self, seen: Seen):
        key = (seen.method, seen.target.split("?")[0])
        queue = self.queues.get(key)
        if queue:
            self.answers[key] = (200, queue.pop(0) if len(queue) > 1 else queue[0], [])
        status, body, headers = self.answers.get(key, (404, {"error": "no"}, []))
        data = json.dumps(body).encode()
        yield reply(status, data, [("Content-Type", "application/json"), *headers])

    @property
    def requests(self) -> list[tuple[str, str]]:
        return [(s.method, s.target) for s in self.server.seen]


@pytest.fixture
def hostile():
    h = Hostile()
    try:
        yield h
    finally:
        h.server.close()


def _rows(stdout: str) -> list[list[str]]:
    """The table's cells (split on runs of two or more spaces), heading first."""
    import re

    return [re.split(r"\s{2,}", line.strip()) for line in stdout.splitlines()]


def test_the_parent_column_of_objects_the_service_should_not_send(invoke, hostile):
    hostile.on("GET", "/operations", [
        {"id": "1", "type": ["workspace.create"], "status": "running"},  # type not a string
        {"id": "2", "type": "other.create", "status": "running", "workspace_id": "9"},
        {"id": "3", "type": "workspace.create", "status": "running", "workspace_id": ""},
        {"id": "4", "type": "workspace.create", "status": "running"},
        {"id": "5", "type": "group_membership.create", "status": "running",
         "group_membership_id": 0},
    ])
    r = invoke("operations", "list", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    rows = _rows(r.stdout)
    assert rows[0][:3] == ["id", "type", "parent"]
    assert [row[2] for row in rows[1:]] == ["-", "-", "-", "-", "group-membership 0"]


def test_a_conflict_that_names_no_folder_shows_none(invoke, service):
    op = add_operation(service.state, parent_id="100", status="stopped",
                       data={"type": "folder_conflict"})
    r = invoke("operations", "show", op.id, "--workspace", "100", env=service.env)
    assert r.exit_code == 0, r.stderr
    assert "conflict folder  -" in r.stdout.splitlines()
    assert "reason: folder_conflict" in r.stderr.splitlines()


def test_show_and_list_give_the_times_the_service_said(invoke, service):
    from datetime import UTC, datetime

    op = service.stopped("Dated", parent_id="100")
    op.created_at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    op.updated_at = datetime(2030, 1, 2, 3, 4, 6, tzinfo=UTC)
    r = invoke("operations", "show", op.id, "--workspace", "100", env=service.env)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "created          2030-01-02T03:04:05Z" in lines
    assert "updated          2030-01-02T03:04:06Z" in lines
    r = invoke("operations", "list", env=service.env)
    assert _rows(r.stdout)[1][-2:] == ["2030-01-02T03:04:05Z", "2030-01-02T03:04:06Z"]


@pytest.mark.parametrize(("status", "data", "reason"), [
    ("aborted", None, "aborted"),
    ("aborted", {"type": "quota_exceeded"}, "aborted (quota_exceeded)"),
    ("aborted", {"folder_name": "x"}, "aborted"),
    ("stopped", None, "stopped"),
    ("stopped", {}, "unknown error"),
    ("stopped", {"type": "folder_conflict", "folder_name": "F"},
     "folder_conflict: folder 'F' already exists"),
    ("stopped", {"type": "folder_conflict"}, "folder_conflict"),
])
def test_show_gives_the_reason_an_operation_stopped(invoke, service, status, data, reason):
    op = add_operation(service.state, parent_id="100", status=status,
                       data=data if data is not None else {"type": "replaced"})
    op.data = data
    r = invoke("operations", "show", op.id, "--workspace", "100", env=service.env)
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[0] == f"reason: {reason}"


# -- the Location of a 202: shapes that are not the default nesting -------------------------------


def _running(op_id: str, status: str = "running", **extra) -> dict:
    return {"id": op_id, "type": "group_membership.create", "status": status, **extra}


def test_a_location_of_four_segments_names_its_collection_parent_and_operation(invoke,
                                                                               hostile):
    """Not the workspaces template, but {collection}/{parent}/operations/{op}: the
    operation is followed there, under the parent the Location names."""
    hostile.on("POST", "/workspaces", {}, 202,
               [("Location", "/group_memberships/g7/operations/9")])
    hostile.on("GET", "/group_memberships/g7/operations/9", _running("9"))
    r = invoke("workspaces", "create", "--name", "W", "-o", "json", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["id"] == "9"
    assert "workspace 'W' accepted: operation 9 under /group_memberships/g7" in \
        r.stderr.splitlines()
    assert hostile.requests == [("POST", "/workspaces"),
                                ("GET", "/group_memberships/g7/operations/9")]


def test_a_location_under_a_prefix_keeps_the_parent_and_the_path(invoke, hostile):
    """A trailing slash and an operation id of X: later polls go to the operation's path
    without the slash."""
    hostile.on("POST", "/workspaces", {}, 202,
               [("Location", "/api/workspace_memberships/m5/operations/X/")])
    hostile.on("GET", "/api/workspace_memberships/m5/operations/X/", _running("X"))
    hostile.on("GET", "/api/workspace_memberships/m5/operations/X",
               _running("X", "success"))
    r = invoke("workspaces", "create", "--name", "W", "--wait", "--interval", "0.01",
               "-o", "json", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "success"
    assert "workspace 'W' accepted: operation X under /workspace_memberships/m5" in \
        r.stderr.splitlines()
    assert hostile.requests[-1] == ("GET", "/api/workspace_memberships/m5/operations/X")


@pytest.mark.parametrize("location", [
    "/workspaces/7/jobs/9",  # not under operations
    "/operations/9",  # too short
    "/teams/7/operations/9",  # not a parent collection
    "/x/" + "y" * 197 + "Z" * 100,  # cut at 200 characters: no Z is shown
])
def test_a_location_that_names_no_operation_is_refused_in_words(invoke, hostile, location):
    hostile.on("POST", "/workspaces", {}, 202, [("Location", location)])
    r = invoke("workspaces", "create", "--name", "W", env=hostile.env)
    assert r.exit_code == 6, r
    line = r.stderr.splitlines()[0]
    assert line.startswith("nodecli: error: the service answered 202 with an unexpected "
                           f"Location {location[:20]!r}"[:-1])
    assert line.endswith(f"{location[:200][-20:]}'") and "Z" not in line
    assert hostile.requests == [("POST", "/workspaces")]


@pytest.mark.parametrize(("op", "message"), [
    ({"id": "1", "type": "t" * 59 + "XY", "status": "stopped"},
     "the service returned an operation of unknown type " + repr("t" * 59 + "X")),
    ({"id": "1", "type": None, "status": "stopped"},
     "the service returned an operation of unknown type 'None'"),
    ({"id": "1", "type": "workspace.create", "status": "stopped", "workspace_id": ""},
     "operation '1': the service did not say its workspace_id"),
    ({"id": "i" * 59 + "XY", "type": "group_membership.create", "status": "stopped",
      "group_membership_id": True},
     f"operation {'i' * 59 + 'X'!r}: the service did not say its group_membership_id"),
    ({"id": 7, "type": "workspace_membership.create", "status": "stopped",
      "workspace_membership_id": None},
     "operation '7': the service did not say its workspace_membership_id"),
])
def test_resolve_refuses_an_operation_whose_place_the_service_did_not_say(invoke, hostile,
                                                                          op, message):
    hostile.on("GET", "/operations", [op])
    r = invoke("operations", "resolve", "--retry", "--yes", env=hostile.env)
    assert r.exit_code == 6, r
    assert r.stderr.splitlines()[0] == f"nodecli: error: {message}"
    assert hostile.requests == [("GET", "/operations")]


@pytest.mark.parametrize("listed", [
    [],  # not in the user's own list
    [{"id": "1", "type": "folder.move", "status": "stopped"}],  # listed, parent unknowable
    [{"id": "1", "type": "workspace.create", "status": "stopped"}],  # listed, no parent id
])
def test_show_without_a_parent_it_cannot_find_names_the_fix(invoke, hostile, listed):
    """An operation `show` cannot place from the top-level list is refused with the
    flags that name its parent, whether it is missing there or listed without a place."""
    hostile.on("GET", "/operations", listed)
    r = invoke("operations", "show", "1", env=hostile.env)
    assert r.exit_code == 2, r
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: operation 1 is not among your operations, so its parent is not "
        "known: name it with --workspace ID, --workspace-membership ID or "
        "--group-membership ID")
    assert hostile.requests == [("GET", "/operations")]


# -- watching: the polling schedule, on a clock the test holds ---------------------------------


class Clock:
    """A clock that moves only when the watch sleeps; the sleeps are recorded."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        assert len(self.sleeps) < 100, "the watch never ends"


def _client(hostile: Hostile):
    from nodecli.http.client import Auth, Endpoint, open_client

    return open_client(Endpoint(hostile.server.url("127.0.0.1"),
                                Auth("oauth", token="hostile-opaque-token")))


OP_PATH = "/workspaces/5/operations/1"


def op_json(status: str = "running", updated: str = "t0", **extra) -> dict:
    return {"id": "1", "type": "workspace.create", "workspace_id": "5", "status": status,
            "updated_at": updated, **extra}


def _watch(hostile: Hostile, clock: Clock, **kw):
    from nodecli.service.operations import OpRef, watch_operation

    seen: list[tuple[str, float]] = []
    with _client(hostile) as client:
        result = watch_operation(client, OpRef("workspaces", "5", "1"), sleep=clock.sleep,
                                 clock=clock, on_update=lambda op, t: seen.append(
                                     (op.get("status"), t)), **kw)
    return result, seen


def test_a_watch_slows_down_while_nothing_changes_up_to_four_intervals(hostile):
    hostile.then("GET", OP_PATH, *([op_json()] * 7), op_json("success", "t1"))
    clock = Clock()
    result, seen = _watch(hostile, clock, interval=1.0)
    assert clock.sleeps == [1.0, 1.5, 2.25, 3.375, 4.0, 4.0, 4.0]
    assert result.operation["status"] == "success" and not result.timed_out and result.ok
    assert result.elapsed == sum(clock.sleeps)
    assert seen[0] == ("running", 0.0) and seen[-1] == ("success", result.elapsed)
    assert len(hostile.requests) == 8


def test_a_watch_polls_at_the_interval_again_after_any_change(hostile):
    """A new status or a new updated_at is a change; the same pair is not."""
    hostile.then("GET", OP_PATH, op_json(), op_json(), op_json(updated="t1"), op_json(updated="t1"),
                 op_json("stopped", "t1"))
    clock = Clock()
    result, _seen = _watch(hostile, clock, interval=2.0)
    assert clock.sleeps == [2.0, 3.0, 2.0, 3.0]
    assert result.operation["status"] == "stopped" and not result.ok


def test_a_watch_from_an_operation_in_hand_asks_only_after_the_first_wait(hostile):
    hostile.then("GET", OP_PATH, op_json("success", "t1"))
    clock = Clock()
    result, seen = _watch(hostile, clock, interval=1.0, first=op_json())
    assert seen == [("running", 0.0), ("success", 1.0)]
    assert clock.sleeps == [1.0] and len(hostile.requests) == 1
    clock = Clock()
    result, seen = _watch(hostile, clock, interval=1.0, first=op_json("aborted"))
    assert seen == [("aborted", 0.0)] and result.operation["status"] == "aborted"
    assert clock.sleeps == [] and len(hostile.requests) == 1


def test_a_watch_never_sleeps_past_its_timeout_and_says_it_timed_out(hostile):
    hostile.then("GET", OP_PATH, op_json())
    clock = Clock()
    result, seen = _watch(hostile, clock, interval=2.0, timeout=5.0)
    # 2, then 3, then what is left of the 5 s; at exactly 5 s it ends
    assert clock.sleeps == [2.0, 3.0]
    assert result.timed_out and not result.ok and result.elapsed == 5.0
    assert seen[-1] == ("running", 5.0)
    clock = Clock()
    result, _ = _watch(hostile, clock, interval=2.0, timeout=4.5)
    assert clock.sleeps == [2.0, 2.5] and result.timed_out and result.elapsed == 4.5
    clock = Clock()
    result, _ = _watch(hostile, clock, interval=2.0, timeout=2.25)
    assert clock.sleeps == [2.0, 0.25] and result.timed_out and result.elapsed == 2.25


@pytest.mark.parametrize(("kw", "message"), [
    ({"interval": 0.0}, "--interval must be more than 0 seconds"),
    ({"interval": -1.0}, "--interval must be more than 0 seconds"),
    ({"timeout": 0.0}, "--timeout must be more than 0 seconds"),
])
def test_a_watch_refuses_no_interval_or_no_timeout_before_asking(hostile, kw, message):
    from nodecli.errors import UsageError

    with pytest.raises(UsageError) as info:
        _watch(hostile, Clock(), **kw)
    assert info.value.message == message
    assert hostile.requests == []


@pytest.mark.parametrize(("status", "shown"), [("done", "done"), ("x" * 39 + "YZ", "x" * 39 + "Y")])
def test_a_watch_refuses_a_status_it_does_not_know(hostile, status, shown):
    from nodecli.errors import RemoteError

    hostile.then("GET", OP_PATH, op_json(status))
    with pytest.raises(RemoteError) as info:
        _watch(hostile, Clock(), interval=1.0)
    assert info.value.message == f"operation 1: unknown status {shown!r}"
    with pytest.raises(RemoteError) as info:  # an operation in hand without a status
        _watch(hostile, Clock(), interval=1.0, first={"id": "1"})
    assert info.value.message == "operation 1: unknown status 'None'"


# -- listing: refusals and hints in the user's words, answers that are not operations ----------


def test_a_bad_status_is_named_with_the_statuses_there_are(invoke, service):
    r = invoke("operations", "list", "--status", "running,done", env=service.env)
    assert r.exit_code == 2
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: unknown status 'done' (use aborted, running, stopped, success)")


def test_two_filters_are_named_with_the_hint_of_the_five(invoke, service):
    r = invoke("operations", "list", "--user", "u1", "--workspace", "1", env=service.env)
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "nodecli: error: the operations list takes at most one filter, not --workspace and "
        "--user",
        "hint: the service filters by one of: --workspace, --workspace-membership, --group, "
        "--group-membership, --user"]
    assert service.requests == []


@pytest.mark.parametrize("flag", ["--workspace", "--group", "--user"])
def test_a_bad_filter_id_is_named_by_its_flag(invoke, service, flag):
    r = invoke("operations", "list", flag, "../x", env=service.env)
    assert r.exit_code == 2
    assert r.stderr.splitlines()[0] == (
        f"nodecli: error: invalid {flag} id '../x': no '/', '\\', '.' or '..'")
    assert service.requests == []


@pytest.mark.parametrize("body", [[{"id": "1"}, 2], {"id": "1"}, "ops"])
def test_a_list_that_is_not_of_operations_is_refused(invoke, hostile, body):
    hostile.on("GET", "/operations", body)
    r = invoke("operations", "list", env=hostile.env)
    assert r.exit_code == 6, r
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: /operations: the service did not return a list of operations")


@pytest.mark.parametrize("body", [{"id": "1"}, {"id": "1", "status": 3}, ["running"]])
def test_an_operation_that_is_not_one_is_refused(invoke, hostile, body):
    hostile.on("GET", OP_PATH, body)
    r = invoke("operations", "show", "1", "--workspace", "5", env=hostile.env)
    assert r.exit_code == 6, r
    assert r.stderr.splitlines()[0] == (
        f"nodecli: error: {OP_PATH}: the service did not return an operation")
