"""What the survivors of mutation testing of nodecli/cli/operations.py showed untested
(issue 33): the list in each output format, the messages that end a watch word for
word, the command a stopped operation's hint gives for each kind of parent, and a
watch that starts from the operation a create already has. Through the real entry
point against the emulator's collaboration service over HTTPS.
"""

from __future__ import annotations

import csv
import io
import json
import re

from nodecli.emulator.operations import add_operation
from tests.test_operations import service as service  # the fixture

# -- the list in each format ----------------------------------------------------------------------


def _ops(service):
    """Two operations: one stopped on a conflict (with data), one that succeeded."""
    a = service.stopped("Shared", parent_id="100")
    b = add_operation(service.state, parent_id="200", status="success")
    return a, b


def test_jsonl_gives_the_services_objects_one_per_line(invoke, service):
    _ops(service)
    whole = json.loads(invoke("operations", "list", "-o", "json", env=service.env).stdout)
    r = invoke("operations", "list", "-o", "jsonl", env=service.env)
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == whole
    assert "conflict" not in whole[0]  # the service's fields, not the table's columns


def test_csv_gives_the_json_field_names_and_the_services_values(invoke, service):
    _ops(service)
    whole = json.loads(invoke("operations", "list", "-o", "json", env=service.env).stdout)
    r = invoke("operations", "list", "-o", "csv", env=service.env)
    assert r.exit_code == 0, r.stderr
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0] == ["id", "type", "status", "workspace_id", "user_id", "created_at",
                       "updated_at", "data"]
    assert [row[:3] for row in rows[1:]] == [[op["id"], op["type"], op["status"]]
                                             for op in whole]
    assert rows[1][5] == whole[0]["created_at"]  # the service's own time, not ISO text
    assert json.loads(rows[1][7]) == whole[0]["data"]


def test_an_empty_list_says_so_on_stderr(invoke, service):
    r = invoke("operations", "list", env=service.env)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    assert r.stderr.splitlines() == ["no operations"]


# -- the end of a watch, word for word ------------------------------------------------------------


def _watch(invoke, service, op, *extra):
    return invoke("operations", "watch", op.id, "--workspace", op.parent_id, "--interval",
                  "0.01", *extra, env=service.env)


def test_a_watch_to_success_says_which_operation_and_how_long(invoke, service):
    op = add_operation(service.state, parent_id="100", polls=2)
    r = _watch(invoke, service, op)
    assert r.exit_code == 0, r.stderr
    assert re.fullmatch(rf"operation {op.id}: success \(\d+s\)", r.stderr.splitlines()[-1]), \
        r.stderr


def test_a_watch_past_its_timeout_says_which_operation_and_how_long(invoke, service):
    op = add_operation(service.state, parent_id="100", polls=10**6)
    r = _watch(invoke, service, op, "--timeout", "0.05")
    assert r.exit_code == 1
    assert re.fullmatch(rf"nodecli: error: operation {op.id} is still running after \d+s "
                        r"\(--timeout\)", r.stderr.splitlines()[-1]), r.stderr


def test_an_aborted_watch_names_the_operation_and_gives_no_resolve_hint(invoke, service):
    op = add_operation(service.state, parent_id="100", abort=True)
    r = _watch(invoke, service, op)
    assert r.exit_code == 1
    last = r.stderr.splitlines()[-1]
    assert last.startswith(f"nodecli: error: operation {op.id} aborted: "), r.stderr
    assert "hint:" not in r.stderr and "resolve" not in r.stderr


# -- the resolve hint for each kind of parent -----------------------------------------------------


def test_a_stopped_membership_operation_gives_its_own_resolve_command(invoke, service):
    wm = add_operation(service.state, "workspace_membership.create", parent_id="wm1",
                       workspace_id="100", status="stopped", folder_name="100/u2")
    gm = add_operation(service.state, "group_membership.create", parent_id="gm1",
                       group_id="g1", status="stopped", folder_name="g1/u3")
    for op, option in ((wm, "--workspace-membership"), (gm, "--group-membership")):
        r = invoke("operations", "show", op.id, option, op.parent_id, env=service.env)
        assert r.exit_code == 0, r.stderr
        assert r.stderr.splitlines()[-1] == (
            f"resolve it: nodecli operations resolve {op.id} {option} {op.parent_id}")
        r = invoke("operations", "watch", op.id, option, op.parent_id, "--interval", "0.01",
                   env=service.env)
        assert r.exit_code == 1
        assert r.stderr.splitlines()[-1] == (
            f"hint: resolve it: nodecli operations resolve {op.id} {option} {op.parent_id}")


# -- a watch from the operation a create already has ----------------------------------------------


def test_a_create_that_waits_reads_its_operation_again_only_after_one_interval(invoke,
                                                                                service):
    """The create has just read its operation (running): the watch waits an interval
    before it asks again, so the success it then sees comes an interval later (read at
    once, it would be seen at once)."""
    r = invoke("workspaces", "create", "--name", "Projects", "--wait", "--interval", "1.1",
               env=service.env)
    assert r.exit_code == 0, r.stderr
    assert re.search(r": success \([1-9]\d*s\)$", r.stderr.splitlines()[-1]), r.stderr
    gets = [p for m, p, _q in service.requests if m == "GET"]
    assert len(gets) == 2 and gets[0] == gets[1]
