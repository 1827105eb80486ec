"""What the survivors of mutation testing of nodecli/service/resolve.py showed untested
(issue 33): the summary of a resolve row by row (the choice as words, the final status,
the detail, the body sent), what each kind of failure leaves in it, and which requests
reach the service. Over real sockets against the emulator's collaboration service
(HTTPS), or a scripted service for answers the emulator never gives.
"""

from __future__ import annotations

import json

import pytest

from nodecli.emulator.operations import add_operation, fail_next_put
from tests.test_mutants_service_operations import OP_PATH, op_json
from tests.test_mutants_service_operations import hostile as hostile  # the fixture
from tests.test_operations import service as service  # the fixture
from tests.test_real_servers_service import MOVED, OPAQUE
from tests.test_real_servers_service import moved_service as moved_service  # the fixture


def _row(op_id: str, choice: str, final: str, detail: str = "", body=None,
         parent: str = "workspaces/100", op_type: str = "workspace.create") -> dict:
    return {"operation": op_id, "type": op_type, "parent": parent, "choice": choice,
            "final_status": final, "detail": detail, "body": body}


def _resolve(invoke, env, *args):
    r = invoke("operations", "resolve", *args, "--yes", "--interval", "0.01", "-o", "json",
               env=env)
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


@pytest.mark.parametrize(("flags", "choice", "body"), [
    (["--use-existing"], "use existing folder", {"use_existing": True}),
    (["--use-existing", "--retry"], "use existing folder",
     {"use_existing": True, "retry": True}),
    (["--folder-name", "New"], "rename to 'New'", {"folder_name": "New"}),
    (["--folder-name", "New", "--retry", "--apply-to-all"], "rename to 'New'",
     {"folder_name": "New", "retry": True, "apply_to_all": True}),
    (["--retry"], "retry", {"retry": True}),
    (["--retry", "--no-apply-to-all"], "retry", {"retry": True, "apply_to_all": False}),
])
def test_each_choice_is_summarised_in_words_with_the_body_sent(invoke, service, flags,
                                                              choice, body):
    op = service.stopped("Old", parent_id="100")
    r, rows = _resolve(invoke, service.env, op.id, "--workspace", "100", *flags)
    assert r.exit_code == 0, r.stderr
    assert rows == [_row(op.id, choice, "success", "", body)]
    assert f"operation {op.id}: {choice} -> running" in r.stderr.splitlines()


def test_what_is_not_resolved_says_why(invoke, service):
    """An internal error given --use-existing is skipped (only retry applies to it); an
    operation already ended is left alone; a conflict that comes back after the resume
    ends the run stopped, with its reason."""
    error = add_operation(service.state, parent_id="100", status="stopped",
                          data={"type": "internal_server_error"})
    done = add_operation(service.state, parent_id="100", status="success")
    again = service.stopped("Again", parent_id="100", conflicts=1)
    r, rows = _resolve(invoke, service.env, error.id, done.id, again.id, "--workspace", "100",
                       "--use-existing")
    assert r.exit_code == 1
    assert rows == [
        _row(error.id, "skip", "stopped", "internal_server_error: only retry or skip apply"),
        _row(done.id, "-", "success", "not stopped: nothing to resolve"),
        _row(again.id, "use existing folder", "stopped",
             "folder_conflict: folder 'Again' already exists", {"use_existing": True}),
    ]
    assert r.stderr.splitlines()[-2:] == [
        "nodecli: error: 2 of 3 operation(s) did not end in success",
        "hint: some stopped again after they resumed: run 'nodecli operations resolve' "
        "again for them"]
    assert [body for _id, body in service.puts] == [{"use_existing": True}]
    # what was sent is reported as it happens; what was not, only in the summary
    assert [line for line in r.stderr.splitlines() if " -> " in line] == [
        f"operation {again.id}: use existing folder -> running"]
    assert f"operation {again.id} (workspace.create): running" in r.stderr.splitlines()


def test_a_failed_put_is_summarised_with_its_status_and_message(invoke, service):
    a = service.stopped("A", parent_id="100")
    b = service.stopped("B", parent_id="100")
    fail_next_put(service.state, a.id, 409, "busy now")
    r, rows = _resolve(invoke, service.env, "--workspace", "100", "--retry")
    assert r.exit_code == 1
    detail = (f"PUT failed (409): PUT {service.emulator.url}/workspaces/100/operations/{a.id}: "
              "HTTP 409: busy now")
    assert rows == [_row(a.id, "retry", "stopped", detail, {"retry": True}),
                    _row(b.id, "retry", "success", "", {"retry": True})]
    assert f"nodecli: warning: operation {a.id}: {detail}" in r.stderr.splitlines()
    assert r.stderr.splitlines()[-1] == "nodecli: error: 1 of 2 operation(s) did not end in success"


def test_named_operations_under_a_parent_are_read_there_one_by_one(invoke, service):
    a = service.stopped("A", parent_id="100")
    b = service.stopped("B", parent_id="100")
    r, rows = _resolve(invoke, service.env, b.id, a.id, "--workspace", "100", "--retry")
    assert r.exit_code == 0, r.stderr
    assert [(row["operation"], row["parent"]) for row in rows] == [(b.id, "workspaces/100"),
                                                                   (a.id, "workspaces/100")]
    assert service.requests[:2] == [("GET", f"/workspaces/100/operations/{b.id}", {}),
                                    ("GET", f"/workspaces/100/operations/{a.id}", {})]


def test_a_named_operation_not_in_the_list_is_named_with_the_fix(invoke, service):
    op = service.stopped("A", parent_id="100")
    r, _rows = _resolve(invoke, service.env, op.id, "77", "--retry")
    assert r.exit_code == 5
    assert r.stderr.splitlines() == [
        "nodecli: error: operation 77 is not in your operations list",
        "hint: name its parent: --workspace ID, --workspace-membership ID or "
        "--group-membership ID"]
    assert service.puts == []


def test_an_operation_still_running_at_the_timeout_says_so(invoke, service):
    from nodecli.emulator.operations import service_state

    op = service.stopped("A", parent_id="100")
    service_state(service.state).run_polls = 10**6
    r, rows = _resolve(invoke, service.env, op.id, "--workspace", "100", "--retry",
                       "--timeout", "0.05")
    assert r.exit_code == 1
    assert rows == [_row(op.id, "retry", "running", "still running after 0 s",
                         {"retry": True})]


_PUT_CASES = [
    # the service's answer to the PUT -> (final status, detail)
    (op_json("success"), "success", ""),
    (op_json("stopped", data={"type": "internal_server_error"}), "stopped",
     "internal_server_error"),
    (op_json("aborted"), "aborted", "aborted"),
    ({"id": "1"}, "stopped",
     f"PUT failed: {OP_PATH}: the service did not return an operation"),
]


@pytest.mark.parametrize(("answer", "final", "detail"), _PUT_CASES)
def test_what_the_put_answered_is_the_outcome_when_nothing_resumed(invoke, hostile, answer,
                                                                   final, detail):
    hostile.on("GET", "/operations", [op_json("stopped", data={"type": "folder_conflict"})])
    hostile.on("PUT", OP_PATH, answer)
    r, rows = _resolve(invoke, hostile.env, "--use-existing")
    assert r.exit_code == (0 if final == "success" else 1), r.stderr
    assert rows == [_row("1", "use existing folder", final, detail, {"use_existing": True},
                         parent="workspaces/5")]
    assert hostile.requests == [("GET", "/operations"), ("PUT", OP_PATH)]


def test_a_watch_that_fails_after_the_put_leaves_the_outcome_unknown(invoke, hostile):
    hostile.on("GET", "/operations", [op_json("stopped", data={"type": "folder_conflict"})])
    hostile.on("PUT", OP_PATH, op_json())
    hostile.on("GET", OP_PATH, {"error": "gone"}, 404)
    r, rows = _resolve(invoke, hostile.env, "--use-existing")
    assert r.exit_code == 1
    (row,) = rows
    assert (row["choice"], row["final_status"]) == ("use existing folder", "unknown")
    assert row["detail"].startswith("watch failed: ") and "404" in row["detail"]


# -- the domain's loop: who is asked what, in which round ----------------------------------------


def _client(service):
    from nodecli.http.client import Auth, open_client

    return open_client(service.emulator.endpoint(Auth("oauth", token=service.token)))


class Calls:
    """decide / on_sent / on_update / sleep as the resolve loop calls them."""

    def __init__(self) -> None:
        from tests.test_mutants_service_operations import Clock

        self.decided: list[tuple[str, str, int, int]] = []
        self.sent: list[tuple[str, str]] = []
        self.updated: list[str] = []
        self.clock = Clock()

    def decide(self, op, index, total):
        from nodecli.service.resolve import Choice

        self.decided.append((op["id"], op["status"], index, total))
        if op.get("data", {}).get("type") == "internal_server_error":
            return Choice.prompted("skip")
        return Choice.prompted("use-existing", apply_to_all=False)

    def kwargs(self) -> dict:
        return {"on_sent": lambda out: self.sent.append((out.ref.op_id, out.final_status)),
                "on_update": lambda out, t: self.updated.append(out.ref.op_id),
                "sleep": self.clock.sleep, "clock": self.clock, "interval": 1.0}


@pytest.mark.parametrize("rounds", [3, 2, 1, 0])
def test_operations_that_stop_again_are_asked_again_up_to_the_rounds(service, rounds):
    from nodecli.service.resolve import find_stopped, resolve_operations

    a = service.stopped("A", parent_id="100", conflicts=2)  # stops twice more
    b = service.stopped("B", parent_id="100")
    c = add_operation(service.state, parent_id="100", status="stopped",
                      data={"type": "internal_server_error"})
    calls = Calls()
    with _client(service) as client:
        ops = find_stopped(client, workspace="100")
        outcomes = resolve_operations(client, ops, calls.decide, rounds=rounds,
                                      **calls.kwargs())
    asked = max(1, rounds)
    assert calls.decided == [(a.id, "stopped", 1, 3), (b.id, "stopped", 2, 3),
                             (c.id, "stopped", 3, 3)] + [(a.id, "stopped", 1, 1)] * (asked - 1)
    assert calls.sent == [(a.id, "running"), (b.id, "running")] + \
        [(a.id, "running")] * (asked - 1)
    assert set(calls.updated) == {a.id, b.id} and calls.clock.sleeps
    by_id = {o.ref.op_id: o for o in outcomes}
    assert by_id[a.id].choice == ", then ".join(["use existing folder"] * asked)
    assert by_id[a.id].final_status == ("success" if asked == 3 else "stopped")
    assert by_id[b.id].final_status == "success" and by_id[c.id].choice == "skip"
    assert len(service.puts) == asked + 1


def test_the_timeout_reaches_each_watch(service):
    from nodecli.emulator.operations import service_state
    from nodecli.service.resolve import find_stopped, resolve_operations

    service.stopped("A", parent_id="100")
    service_state(service.state).run_polls = 10**6
    calls = Calls()
    with _client(service) as client:
        outcomes = resolve_operations(client, find_stopped(client, workspace="100"),
                                      calls.decide, timeout=5.0, **calls.kwargs())
    assert [(o.final_status, o.detail) for o in outcomes] == [
        ("running", "still running after 5 s")]
    assert sum(calls.clock.sleeps) == 5.0


def _resolve_the_one_stopped(hostile, decide, **kwargs):
    """A service listing one stopped operation (a folder conflict) that succeeds once
    the PUT resumes it: resolve it with ``decide`` and ``kwargs``; its one outcome."""
    from nodecli.http.client import Auth, Endpoint, open_client
    from nodecli.service.resolve import find_stopped, resolve_operations

    hostile.on("GET", "/operations", [op_json("stopped", data={"type": "folder_conflict"})])
    hostile.on("PUT", OP_PATH, op_json())
    hostile.on("GET", OP_PATH, op_json("success", "t1"))
    endpoint = Endpoint(hostile.server.url("127.0.0.1"), Auth("oauth", token="t"))
    with open_client(endpoint) as client:
        (out,) = resolve_operations(client, find_stopped(client), decide, **kwargs)
    return out


def test_a_resumed_operation_is_watched_from_the_put_answer(hostile):
    """The operation the PUT answered is the first one watched: one wait, then one
    read, each reported; the test's sleep and clock are the ones used."""
    calls = Calls()
    out = _resolve_the_one_stopped(hostile, calls.decide, **calls.kwargs())
    assert (out.final_status, out.detail) == ("success", "")
    assert calls.updated == ["1", "1"] and calls.clock.sleeps == [1.0]
    assert hostile.requests == [("GET", "/operations"), ("PUT", OP_PATH), ("GET", OP_PATH)]


@pytest.mark.parametrize(("kw", "message"), [
    ({"workspace": "1", "group_membership": "2"},
     "give at most one of --workspace, --workspace-membership and --group-membership"),
    ({"op_ids": ["7", "../x"]}, "invalid operation id '../x': no '/', '\\', '.' or '..'"),
])
def test_find_stopped_refuses_before_asking(service, kw, message):
    from nodecli.errors import UsageError
    from nodecli.service.resolve import find_stopped

    with _client(service) as client, pytest.raises(UsageError) as info:
        find_stopped(client, **kw)
    assert info.value.message == message
    assert service.requests == []


def test_use_existing_with_a_folder_name_is_refused_in_words(invoke, service):
    r = invoke("operations", "resolve", "1", "--workspace", "100", "--use-existing",
               "--folder-name", "x", "--yes", env=service.env)
    assert r.exit_code == 2
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: --use-existing and --folder-name exclude each other (keep the "
        "existing folder, or create one under a new name)")
    assert service.requests == []


def test_resolve_on_a_service_whose_paths_moved(invoke, moved_service):
    """Named under their parent, or found in the list: both where the service keeps them."""
    from nodecli.emulator.operations import service_state

    svc = service_state(moved_service.state)
    svc.reset()
    svc.opaque_tokens[OPAQUE] = "admin"
    a = add_operation(moved_service.state, parent_id="100", user_id="admin",
                      status="stopped", folder_name="A")
    b = add_operation(moved_service.state, parent_id="100", user_id="admin",
                      status="stopped", folder_name="B")
    env = {"NODECLI_SERVICE_URL": moved_service.url, "NODECLI_TOKEN": OPAQUE}
    flags = ["--operations-path", MOVED["operations"],
             "--service-path", f"workspaces={MOVED['workspaces']}"]
    r, rows = _resolve(invoke, env, a.id, "--workspace", "100", "--retry", *flags)
    assert r.exit_code == 0, r.stderr
    r, rows = _resolve(invoke, env, "--retry", *flags)
    assert r.exit_code == 0, r.stderr
    assert [row["operation"] for row in rows] == [b.id]
    assert {p for _m, p, _q in svc.requests} == {
        "/v2/operations", f"/v2/ws/100/ops/{a.id}", f"/v2/ws/100/ops/{b.id}"}


def test_resolve_needs_no_callbacks_but_decide(hostile):
    out = _resolve_the_one_stopped(hostile, Calls().decide, interval=0.01)
    assert (out.final_status, out.choice) == ("success", "use existing folder")
