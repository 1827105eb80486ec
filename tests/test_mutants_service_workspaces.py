"""What the survivors of mutation testing of nodecli/service/workspaces.py showed untested
(issue 33): a refused workspace name in the user's words and at its bounds, the body
options that exclude each other, and what each answer to the POST gives (a resource, an
operation to follow, a 202 with nowhere to go). Over real sockets: the emulator's
collaboration service (HTTPS), or a scripted service for answers the emulator never gives.
"""

from __future__ import annotations

import json

import pytest

from tests.test_mutants_service_operations import Hostile, op_json
from tests.test_mutants_service_operations import hostile as hostile  # the fixture
from tests.test_operations import service as service  # the fixture


@pytest.mark.parametrize(("name", "message"), [
    ("", "the workspace name is empty"),
    (" \t", "the workspace name is empty"),
    ("w" * 256, "the workspace name is longer than 255 characters"),
    ("a\x1bb", "the workspace name contains control characters"),  # Cc
    ("a\u200bb", "the workspace name contains control characters"),  # Cf
    ("a\u2028b", "the workspace name contains control characters"),  # Zl
    ("a\u2029b", "the workspace name contains control characters"),  # Zp
    ("a\udcffb", "the workspace name contains control characters"),  # Cs: not UTF-8
])
def test_a_refused_workspace_name_is_said_exactly_and_nothing_is_sent(invoke, service, name,
                                                                       message):
    r = invoke("workspaces", "create", "--name", name, env=service.env)
    assert r.exit_code == 2, r
    assert r.stderr.splitlines()[0] == f"nodecli: error: {message}"
    assert service.requests == []


def test_a_name_of_255_characters_is_sent(invoke, service):
    r = invoke("workspaces", "create", "--name", "w" * 255, "-o", "json", env=service.env)
    assert r.exit_code == 0, r.stderr
    assert service.svc.post_bodies == [{"name": "w" * 255}]


@pytest.mark.parametrize(("args", "message"), [
    (["--body", "{}", "--name", "x"],
     "--body gives the whole request body: leave out --name and --field"),
    (["--body", "{}", "--field", "a=1"],
     "--body gives the whole request body: leave out --name and --field"),
    (["--field", "a=1"], "give the workspace's --name (or the whole request with --body)"),
])
def test_body_options_that_exclude_each_other_are_said_exactly(invoke, service, args,
                                                               message):
    r = invoke("workspaces", "create", *args, env=service.env)
    assert r.exit_code == 2, r
    assert r.stderr.splitlines()[0] == f"nodecli: error: {message}"
    assert service.requests == []


def test_a_field_replaces_the_name_it_repeats(invoke, service):
    r = invoke("workspaces", "create", "--name", "A", "--field", "name=B", "--field", "q=1",
               env=service.env)
    assert r.exit_code == 0, r.stderr
    assert service.svc.post_bodies == [{"name": "B", "q": 1}]


@pytest.mark.parametrize(("status", "body", "shown"), [
    (201, {"id": "w9", "name": "W"}, {"id": "w9", "name": "W"}),
    (200, {"id": "w8"}, {"id": "w8"}),
])
def test_a_service_that_creates_at_once_shows_the_workspace(invoke, hostile: Hostile, status,
                                                            body, shown):
    hostile.on("POST", "/workspaces", body, status)
    r = invoke("workspaces", "create", "--name", "W", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == shown
    assert "workspace 'W' created" in r.stderr
    assert hostile.requests == [("POST", "/workspaces")]


def test_a_creation_with_no_body_says_so_and_prints_nothing(invoke, hostile: Hostile):
    from tests.scripted_server import reply

    hostile.server.script = lambda seen: [reply(201)]
    r = invoke("workspaces", "create", "--name", "W", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    assert "workspace 'W' created" in r.stderr


def test_a_202_without_location_is_refused(invoke, hostile: Hostile):
    hostile.on("POST", "/workspaces", {"id": "1"}, 202)
    r = invoke("workspaces", "create", "--name", "W", env=hostile.env)
    assert r.exit_code == 6, r
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: the service answered 202 Accepted without a Location header")
    assert hostile.requests == [("POST", "/workspaces")]


def test_a_202_is_followed_to_its_operation_and_it_is_shown(invoke, hostile: Hostile):
    hostile.on("POST", "/workspaces", {}, 202,
               [("Location", "/workspaces/5/operations/1")])
    hostile.on("GET", "/workspaces/5/operations/1", op_json())
    r = invoke("workspaces", "create", "--name", "W", "-o", "json", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == op_json()
    assert r.stderr.splitlines()[-1] == "follow it: nodecli operations watch 1 --workspace 5"
    assert hostile.requests == [("POST", "/workspaces"),
                                ("GET", "/workspaces/5/operations/1")]


def test_a_relative_location_is_read_against_the_post_url(invoke, hostile: Hostile):
    hostile.on("POST", "/workspaces", {}, 202, [("Location", "workspaces/5/operations/1")])
    hostile.on("GET", "/workspaces/5/operations/1", op_json())
    r = invoke("workspaces", "create", "--name", "W", "-o", "json", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["id"] == "1"
    assert hostile.requests[-1] == ("GET", "/workspaces/5/operations/1")


def test_a_202_whose_operation_is_not_one_is_refused_naming_the_location(invoke,
                                                                        hostile: Hostile):
    hostile.on("POST", "/workspaces", {}, 202, [("Location", "/workspaces/5/operations/1")])
    hostile.on("GET", "/workspaces/5/operations/1", {"id": "1"})
    r = invoke("workspaces", "create", "--name", "W", env=hostile.env)
    assert r.exit_code == 6, r
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: /workspaces/5/operations/1: the service did not return an operation")


def test_a_relative_location_under_a_moved_create_path_is_read_there(invoke,
                                                                     hostile: Hostile):
    hostile.on("POST", "/v2/workspaces", {}, 202, [("Location", "workspaces/5/operations/1")])
    hostile.on("GET", "/v2/workspaces/5/operations/1", op_json())
    r = invoke("workspaces", "create", "--name", "W", "-o", "json", "--service-path",
               "create-workspace=/v2/workspaces", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    assert hostile.requests == [("POST", "/v2/workspaces"),
                                ("GET", "/v2/workspaces/5/operations/1")]


# Where `--wait` polls: the operation's own URL, the Location resolved once against the
# POST's URL. A relative Location, a service under a path prefix and a Location on another
# origin each once sent the polls elsewhere (or to the prefix twice).

def _waited(invoke, hostile: Hostile, op_path: str, *extra: str,
            env: dict | None = None):
    hostile.then("GET", op_path, op_json(), op_json("success", "t1"))
    return invoke("workspaces", "create", "--name", "W", "--wait", "--interval", "0.01",
                  "-o", "json", *extra, env=env or hostile.env)


def test_wait_polls_a_relative_location_under_a_moved_create_path(invoke, hostile: Hostile):
    hostile.on("POST", "/v2/workspaces", {}, 202, [("Location", "workspaces/5/operations/1")])
    r = _waited(invoke, hostile, "/v2/workspaces/5/operations/1",
                "--service-path", "create-workspace=/v2/workspaces")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "success"
    assert hostile.requests[0] == ("POST", "/v2/workspaces")
    assert set(hostile.requests[1:]) == {("GET", "/v2/workspaces/5/operations/1")}
    assert len(hostile.requests) >= 3  # the first GET and at least one poll


@pytest.mark.parametrize("location", ["/api/workspaces/5/operations/1",
                                      "workspaces/5/operations/1"])
def test_wait_under_a_service_path_prefix_never_doubles_it(invoke, hostile: Hostile,
                                                           location):
    env = {**hostile.env, "NODECLI_SERVICE_URL": hostile.env["NODECLI_SERVICE_URL"] + "/api"}
    hostile.on("POST", "/api/workspaces", {}, 202, [("Location", location)])
    r = _waited(invoke, hostile, "/api/workspaces/5/operations/1", env=env)
    assert r.exit_code == 0, r.stderr
    assert set(hostile.requests[1:]) == {("GET", "/api/workspaces/5/operations/1")}
    assert len(hostile.requests) >= 3


def test_wait_follows_a_location_on_another_origin_without_the_token(invoke,
                                                                      hostile: Hostile):
    elsewhere = Hostile()
    try:
        target = elsewhere.server.url("127.0.0.1") + "/workspaces/5/operations/1"
        hostile.on("POST", "/workspaces", {}, 202, [("Location", target)])
        elsewhere.then("GET", "/workspaces/5/operations/1", op_json(),
                       op_json("success", "t1"))
        r = invoke("workspaces", "create", "--name", "W", "--wait", "--interval", "0.01",
                   "-o", "json", env=hostile.env)
        assert r.exit_code == 0, r.stderr
        assert hostile.requests == [("POST", "/workspaces")]
        assert len(elsewhere.requests) >= 2
        assert set(elsewhere.requests) == {("GET", "/workspaces/5/operations/1")}
        assert all("authorization" not in s.headers
                   and "hostile-opaque-token" not in repr(s.headers)
                   for s in elsewhere.server.seen)
    finally:
        elsewhere.server.close()


def test_the_follow_hint_names_the_parent_the_location_gave_and_quotes_ids(invoke,
                                                                          hostile: Hostile):
    path = "/workspace_memberships/m5/operations/x%20y"
    hostile.on("POST", "/workspaces", {}, 202, [("Location", path)])
    hostile.on("GET", path, op_json())
    r = invoke("workspaces", "create", "--name", "W", "-o", "json", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[-1] == (
        "follow it: nodecli operations watch 'x y' --workspace-membership m5")


def test_a_location_under_an_overridden_operations_path_is_read_by_its_template(
        invoke, hostile: Hostile):
    """Operations kept at /v2/ws/{id}/ops (no 'operations' segment): only the template
    given with --service-path reads the parent and the operation out of the Location."""
    hostile.on("POST", "/workspaces", {}, 202, [("Location", "/v2/ws/w%205/ops/1")])
    hostile.then("GET", "/v2/ws/w%205/ops/1", op_json(), op_json("success", "t1"))
    r = invoke("workspaces", "create", "--name", "W", "--wait", "--interval", "0.01",
               "-o", "json", "--service-path", "workspaces=/v2/ws/{id}/ops", env=hostile.env)
    assert r.exit_code == 0, r.stderr
    assert "workspace 'W' accepted: operation 1 under /workspaces/w 5" in r.stderr
    assert set(hostile.requests[1:]) == {("GET", "/v2/ws/w%205/ops/1")}
