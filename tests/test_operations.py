"""Operations, service profiles and workspaces against the emulator over real sockets."""

from __future__ import annotations

import json
import os
import stat

import pytest

from nodecli.emulator.operations import (
    add_operation,
    fail_next_put,
    mint_service_token,
    service_state,
)


class Service:
    """The emulator's collaboration service, with a valid token for user u1."""

    def __init__(self, emulator) -> None:
        self.emulator = emulator
        self.state = emulator.state
        self.svc = service_state(emulator.state)
        self.token = mint_service_token(emulator.state, "u1", "user:all")
        self.env = {"NODECLI_SERVICE_URL": emulator.url, "NODECLI_TOKEN": self.token}

    @property
    def requests(self):
        return self.svc.requests

    @property
    def puts(self):
        return self.svc.put_bodies

    def op(self, op_id: str):
        return self.svc.operations[op_id]

    def stopped(self, folder: str = "folder", **kw):
        return add_operation(self.state, status="stopped", folder_name=folder, **kw)


@pytest.fixture
def service(emulator) -> Service:
    return Service(emulator)


def _json(result):
    return json.loads(result.stdout)


# -- listing -----------------------------------------------------------------------------------

@pytest.fixture
def seeded(service: Service) -> Service:
    s = service
    add_operation(s.state, "workspace.create", parent_id="100", user_id="u1", status="success")
    add_operation(s.state, "workspace_membership.create", parent_id="wm1", workspace_id="100",
                  user_id="u2", status="stopped", folder_name="100/u2")
    add_operation(s.state, "group_membership.create", parent_id="gm1", group_id="g1",
                  user_id="u3", status="stopped",
                  data={"type": "internal_server_error"})
    add_operation(s.state, "workspace.create", parent_id="200", user_id="u2", status="aborted")
    return s


@pytest.mark.parametrize(("args", "path", "query", "ids"), [
    ((), "/operations", {}, ["1"]),
    (("--workspace", "100"), "/workspaces/100/operations", {}, ["1"]),
    (("--workspace-membership", "wm1"), "/workspace_memberships/wm1/operations", {}, ["2"]),
    (("--group", "g1"), "/operations", {"group_id": ["g1"]}, ["3"]),
    (("--group-membership", "gm1"), "/operations", {"group_membership_id": ["gm1"]}, ["3"]),
    (("--user", "u2"), "/operations", {"user_id": ["u2"]}, ["2", "4"]),
])
def test_list_each_filter_uses_nested_or_top_level(invoke, seeded, args, path, query, ids):
    r = invoke("operations", "list", *args, "-o", "json", env=seeded.env)
    assert r.exit_code == 0, r
    assert [op["id"] for op in _json(r)] == ids
    assert seeded.requests == [("GET", path, query)]


def test_list_table_columns_and_status_filter(invoke, seeded):
    r = invoke("operations", "list", "--user", "u2", "--status", "stopped", env=seeded.env)
    assert r.exit_code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["id", "type", "parent", "status", "conflict", "folder",
                                "user", "created", "updated"]
    assert len(lines) == 2
    # the parent is what show/watch/resolve need: --workspace-membership 100/... here
    assert lines[1].split()[:7] == ["2", "workspace_membership.create", "workspace-membership",
                                    lines[1].split()[3], "stopped", "100/u2", "u2"]


@pytest.mark.parametrize("args", [
    ("--workspace", "1", "--user", "u1"),
    ("--group", "g", "--group-membership", "gm"),
    ("--workspace-membership", "w", "--group", "g"),
])
def test_two_filters_refused_before_any_request(invoke, service, args):
    r = invoke("operations", "list", *args, env=service.env)
    assert r.exit_code == 2
    assert "at most one filter" in r.stderr
    assert service.requests == []


def test_emulator_refuses_two_filters_itself(service):
    from nodecli.errors import NodecliError
    from nodecli.http.client import Auth, open_client

    with open_client(service.emulator.endpoint(Auth("oauth", token=service.token))) as c:
        with pytest.raises(NodecliError) as info:
            c.json("GET", "/operations", params={"user_id": "u1", "group_id": "g1"})
    assert info.value.status == 400
    assert "at most one" in info.value.message


def test_bad_status_is_usage_error(invoke, service):
    r = invoke("operations", "list", "--status", "done", env=service.env)
    assert r.exit_code == 2 and "unknown status 'done'" in r.stderr
    assert service.requests == []


def test_server_strings_are_sanitized(invoke, service):
    service.stopped("evil\x1b[31mred\x07")
    r = invoke("operations", "list", env=service.env)
    assert r.exit_code == 0
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "evil" in r.stdout


# -- pre-flight --------------------------------------------------------------------------------

@pytest.mark.parametrize(("scopes", "expires_in", "message"), [
    ("user:all", -30, "expired at"),
    ("self", 3600, "needs scope user:all or admin:all and has: self"),
    ("node.ak1:user:all", 3600, "has: node.ak1:user:all"),
])
def test_preflight_refuses_before_any_request(invoke, service, scopes, expires_in, message):
    token = mint_service_token(service.state, "u1", scopes, expires_in)
    r = invoke("operations", "list", env={**service.env, "NODECLI_TOKEN": token})
    assert r.exit_code == 4, r
    assert message in r.stderr and "nothing was sent" in r.stderr
    assert service.requests == []


def test_opaque_token_is_sent_and_a_refusal_names_its_source(invoke, service):
    """interface.md 2.5: tokens are opaque to clients. One that is not the envelope is
    sent as it is; the service's 401 gets a hint naming where it came from."""
    r = invoke("-v", "operations", "list", env={**service.env, "NODECLI_TOKEN": "not-a-token"})
    assert r.exit_code == 4
    assert "pre-flight skipped" in r.stderr and "opaque" in r.stderr
    assert "token from NODECLI_TOKEN" in r.stderr and "replace it" in r.stderr
    assert "not-a-token" not in r.stderr  # the token itself is never shown
    assert [req[:2] for req in service.requests] == [("GET", "/operations")]


def test_admin_token_lists_the_organization(invoke, seeded):
    token = mint_service_token(seeded.state, "boss", "admin:all")
    r = invoke("operations", "list", "-o", "json", env={**seeded.env, "NODECLI_TOKEN": token})
    assert r.exit_code == 0, r
    assert [op["id"] for op in _json(r)] == ["1", "2", "3", "4"]


def test_service_checks_scope_too(service):
    from nodecli.errors import AuthError
    from nodecli.http.client import Auth, open_client

    token = mint_service_token(service.state, "u1", "self")
    with open_client(service.emulator.endpoint(Auth("oauth", token=token))) as c:
        with pytest.raises(AuthError) as info:
            c.json("GET", "/operations")
    assert info.value.status == 403


def test_token_file_flag_and_missing_token(invoke, service, tmp_path):
    path = tmp_path / "tok"
    path.write_text("Bearer " + service.token + "\n")
    r = invoke("operations", "list", "--url", service.emulator.url, "--token-file", str(path))
    assert r.exit_code == 0, r
    r = invoke("operations", "list", "--url", service.emulator.url)
    assert r.exit_code == 2
    assert "--token-file" in r.stderr and "NODECLI_TOKEN" in r.stderr


def test_no_service_given(invoke):
    r = invoke("operations", "list")
    assert r.exit_code == 2
    assert "--service NAME or --url URL" in r.stderr


# -- show / watch ------------------------------------------------------------------------------

def test_show(invoke, service):
    op = service.stopped("Projects", parent_id="100")
    r = invoke("operations", "show", op.id, "--workspace", "100", env=service.env)
    assert r.exit_code == 0, r
    assert "Projects" in r.stdout
    assert "folder_conflict" in r.stderr
    r = invoke("operations", "show", op.id, "--workspace", "999", env=service.env)
    assert r.exit_code == 5


def test_show_needs_at_most_one_parent(invoke, service):
    r = invoke("operations", "show", "1", "--workspace", "1", "--group-membership", "2",
               env=service.env)
    assert r.exit_code == 2 and "exactly one of" in r.stderr
    r = invoke("operations", "show", "../x", "--workspace", "1", env=service.env)
    assert r.exit_code == 2
    r = invoke("operations", "show", "../x", env=service.env)
    assert r.exit_code == 2
    assert service.requests == []


def test_show_and_watch_find_the_parent_themselves(invoke, service):
    op = service.stopped("Projects", parent_id="100")
    r = invoke("operations", "show", op.id, env=service.env)
    assert r.exit_code == 0, r.stderr
    lines = dict(line.split(None, 1) for line in r.stdout.splitlines()
                 if len(line.split(None, 1)) == 2)
    assert lines["id"] == op.id and lines["status"] == "stopped"
    assert lines["parent"] == "workspace 100"
    assert f"nodecli operations resolve {op.id} --workspace 100" in r.stderr
    r = invoke("operations", "watch", op.id, "--timeout", "1", "--interval", "0.1",
               env=service.env)
    assert r.exit_code == 1 and "folder_conflict" in r.stderr
    r = invoke("operations", "show", "424242", env=service.env)
    assert r.exit_code == 2
    assert "not among your operations" in r.stderr and "--workspace ID" in r.stderr


def test_watch_to_success(invoke, service):
    op = add_operation(service.state, parent_id="100", polls=3)
    r = invoke("operations", "watch", op.id, "--workspace", "100", "--interval", "0.01",
               "-o", "json", env=service.env)
    assert r.exit_code == 0, r
    assert _json(r)["status"] == "success"
    assert "running" in r.stderr and "success" in r.stderr
    # three reads see it running, the fourth sees it finished; nothing else is sent
    assert service.requests == [("GET", "/workspaces/100/operations/1", {})] * 4


def test_watch_to_stopped_then_second_conflict(invoke, service):
    from nodecli.http.client import Auth, open_client

    op = add_operation(service.state, parent_id="100", folder_name="Shared", conflicts=2)
    args = ("operations", "watch", op.id, "--workspace", "100", "--interval", "0.01")
    r = invoke(*args, env=service.env)
    assert r.exit_code == 1, r
    assert "stopped: folder_conflict: folder 'Shared' already exists" in r.stderr
    assert "operations resolve 1 --workspace 100" in r.stderr
    with open_client(service.emulator.endpoint(Auth("oauth", token=service.token))) as c:
        answer = c.json("PUT", "/workspaces/100/operations/1",
                        json_body={"folder_name": "Shared-2", "apply_to_all": False})
    assert answer["status"] == "running" and "data" not in answer
    r = invoke(*args, env=service.env)
    assert r.exit_code == 1
    assert "folder 'Shared-2' already exists" in r.stderr


def test_watch_aborted_and_timeout(invoke, service):
    op = add_operation(service.state, parent_id="100", abort=True)
    r = invoke("operations", "watch", op.id, "--workspace", "100", "--interval", "0.01",
               env=service.env)
    assert r.exit_code == 1 and "aborted" in r.stderr
    op = add_operation(service.state, parent_id="101", polls=10**6)
    r = invoke("operations", "watch", op.id, "--workspace", "101", "--interval", "0.01",
               "--timeout", "0.05", env=service.env)
    assert r.exit_code == 1 and "still running" in r.stderr


# -- resolve without a terminal ----------------------------------------------------------------

def test_resolve_without_terminal_names_missing_flags(invoke, service):
    service.stopped()
    r = invoke("operations", "resolve", env=service.env)
    assert r.exit_code == 2
    assert "--use-existing, --folder-name NAME and/or --retry" in r.stderr
    assert "--yes" in r.stderr and "--apply-to-all" not in r.stderr
    r = invoke("operations", "resolve", "--retry", env=service.env)
    assert r.exit_code == 2 and "--yes" in r.stderr and "--retry" not in r.stderr
    assert service.requests == []


@pytest.mark.parametrize(("flags", "body"), [
    (("--use-existing",), {"use_existing": True, "apply_to_all": True}),
    (("--retry",), {"retry": True, "apply_to_all": True}),
    (("--folder-name", "Other"), {"folder_name": "Other", "apply_to_all": True}),
])
def test_resolve_flags_send_exact_body(invoke, service, flags, body):
    op = service.stopped(parent_id="100", conflicts=1)
    r = invoke("operations", "resolve", op.id, "--workspace", "100", *flags, "--apply-to-all",
               "--yes", "--interval", "0.01", "-o", "json", env=service.env)
    assert r.exit_code == 0, r
    assert service.puts == [(op.id, body)]
    rows = _json(r)
    assert rows[0]["operation"] == op.id and rows[0]["final_status"] == "success"
    # apply_to_all: the scripted second conflict was resolved by the service itself
    assert service.op(op.id).status == "success"


def test_resolve_scope_finds_stopped_ones_only(invoke, service):
    a = service.stopped("a", parent_id="100")
    add_operation(service.state, parent_id="100", status="success")
    b = service.stopped("b", parent_id="100")
    service.stopped("elsewhere", parent_id="200")
    r = invoke("operations", "resolve", "--workspace", "100", "--use-existing", "--apply-to-all",
               "--yes", "--interval", "0.01", env=service.env)
    assert r.exit_code == 0, r
    assert [op_id for op_id, _ in service.puts] == [a.id, b.id]
    assert r.stdout.splitlines()[0].split() == ["operation", "choice", "final", "status",
                                                "detail"]


def test_resolve_folder_name_refused_for_several(invoke, service):
    service.stopped("a", parent_id="100")
    service.stopped("b", parent_id="100")
    r = invoke("operations", "resolve", "--workspace", "100", "--folder-name", "x",
               "--apply-to-all", "--yes", env=service.env)
    assert r.exit_code == 2 and "name one OP" in r.stderr
    assert service.puts == []


@pytest.mark.parametrize("bad", ["", "a/b", "..", "x\x01y"])
def test_resolve_folder_name_validated(invoke, service, bad):
    service.stopped(parent_id="100")
    r = invoke("operations", "resolve", "--workspace", "100", "--folder-name", bad,
               "--apply-to-all", "--yes", env=service.env)
    assert r.exit_code == 2
    assert service.requests == []


def test_put_errors_reported_per_operation(invoke, service):
    ops = [service.stopped(f"f{i}", parent_id="100") for i in range(4)]
    fail_next_put(service.state, ops[0].id, 400, "bad resolution")
    fail_next_put(service.state, ops[1].id, 404, "gone")
    fail_next_put(service.state, ops[2].id, 409, "busy")
    r = invoke("operations", "resolve", "--workspace", "100", "--use-existing", "--apply-to-all",
               "--yes", "--interval", "0.01", "-o", "json", env=service.env)
    assert r.exit_code == 1, r
    assert "3 of 4 operation(s) did not end in success" in r.stderr
    rows = {row["operation"]: row for row in _json(r)}
    for op, code, text in zip(ops, (400, 404, 409), ("bad resolution", "gone", "busy"),
                              strict=False):
        assert rows[op.id]["final_status"] == "stopped"
        assert f"PUT failed ({code})" in rows[op.id]["detail"]
        assert text in rows[op.id]["detail"]
    assert rows[ops[3].id]["final_status"] == "success"
    assert len(service.puts) == 4  # one attempt each: 4xx are not retried


def test_resolve_internal_error_only_retry(invoke, service):
    op = service.stopped(parent_id="100", data={"type": "internal_server_error"})
    r = invoke("operations", "resolve", "--workspace", "100", "--use-existing", "--apply-to-all",
               "--yes", "-o", "json", env=service.env)
    assert r.exit_code == 1
    assert service.puts == []
    assert "only retry or skip" in _json(r)[0]["detail"]
    r = invoke("operations", "resolve", op.id, "--workspace", "100", "--retry", "--apply-to-all",
               "--yes", "--interval", "0.01", env=service.env)
    assert r.exit_code == 0, r
    # exactly the properties given (use_existing/folder_name never go with a server error)
    assert service.puts == [(op.id, {"retry": True, "apply_to_all": True})]


def test_resolve_nothing_stopped(invoke, service):
    add_operation(service.state, parent_id="100", status="success")
    r = invoke("operations", "resolve", "--workspace", "100", "--retry", "--apply-to-all",
               "--yes", env=service.env)
    assert r.exit_code == 0 and "no stopped operations" in r.stderr


def test_resolve_named_op_from_own_list(invoke, service):
    op = service.stopped(parent_id="100")
    r = invoke("operations", "resolve", op.id, "--retry", "--apply-to-all", "--yes",
               "--interval", "0.01", env=service.env)
    assert r.exit_code == 0, r
    r = invoke("operations", "resolve", "77", "--retry", "--apply-to-all", "--yes",
               env=service.env)
    assert r.exit_code == 5


# -- workspaces --------------------------------------------------------------------------------

def test_workspace_create_follows_location(invoke, service):
    r = invoke("workspaces", "create", "--name", "Projects", "-o", "json", env=service.env)
    assert r.exit_code == 0, r
    op = _json(r)
    assert op["type"] == "workspace.create" and op["status"] == "running"
    ws = op["workspace_id"]
    assert [(m, p) for m, p, _ in service.requests] == [
        ("POST", "/workspaces"), ("GET", f"/workspaces/{ws}/operations/{op['id']}")]


def test_workspace_create_wait(invoke, service):
    r = invoke("workspaces", "create", "--name", "Projects", "--wait", "--interval", "0.01",
               env=service.env)
    assert r.exit_code == 0, r
    assert "success" in r.stdout
    r = invoke("workspaces", "create", "--name", "conflict-x", "--wait", "--interval", "0.01",
               env=service.env)
    assert r.exit_code == 1
    assert "folder 'conflict-x' already exists" in r.stderr
    assert "nodecli operations resolve" in r.stderr
    r = invoke("workspaces", "create", "--name", "Projects", env=service.env)
    assert r.exit_code == 1 and "already exists" in r.stderr
    r = invoke("workspaces", "create", "--name", "   ", env=service.env)
    assert r.exit_code == 2


# -- service profiles --------------------------------------------------------------------------

def test_service_profile_lifecycle(invoke, service, home):
    url = service.emulator.url
    env = {"NODECLI_SECRETS_BACKEND": "file"}
    r = invoke("service", "add", "emu", "--url", url, "--token-stdin",
               input=service.token + "\n", env=env)
    assert r.exit_code == 0, r
    assert service.token not in r.stdout + r.stderr
    config = (home / "config.toml").read_text()
    assert service.token not in config
    secrets = next(home.rglob("secrets.toml"))
    assert stat.S_IMODE(os.stat(secrets).st_mode) == 0o600
    assert service.token in secrets.read_text()

    r = invoke("service", "list", "-o", "json", env=env)
    assert _json(r) == [{"name": "emu", "url": url, "token": "stored", "default": True,
                         "cacert": None, "insecure": False}]
    r = invoke("service", "show", "emu", "-o", "json", env=env)
    info = _json(r)["token_info"]
    assert info["user_id"] == "u1" and info["scopes"] == ["user:all"]

    # the default profile and its stored token are used
    add_operation(service.state, status="success")
    r = invoke("operations", "list", "-o", "json", env=env)
    assert r.exit_code == 0, r
    assert len(_json(r)) == 1

    r = invoke("service", "add", "emu", "--url", url, "--token-stdin", input="x\n", env=env)
    assert r.exit_code == 1 and "already exists" in r.stderr
    r = invoke("service", "remove", "emu", env=env)
    assert r.exit_code == 2 and "--yes" in r.stderr
    r = invoke("service", "remove", "emu", "--yes", env=env)
    assert r.exit_code == 0
    assert service.token not in secrets.read_text()
    r = invoke("service", "remove", "emu", env=env)  # no question for a name not saved
    assert r.exit_code == 5
    assert "no service profile 'emu' (profiles: none saved)" in r.stderr
    assert "nodecli service add NAME" in r.stderr
    r = invoke("operations", "list", env=env)
    assert r.exit_code == 2


def test_service_add_token_file_and_default(invoke, service, tmp_path):
    path = tmp_path / "token"
    path.write_text(service.token)
    url = service.emulator.url
    path.chmod(0o644)
    r = invoke("service", "add", "a", "--url", url, "--token-file", str(path))
    assert r.exit_code == 0 and f"chmod 600 {path}" in r.stderr
    path.chmod(0o600)
    r = invoke("service", "add", "a", "--url", url, "--token-file", str(path), "--force")
    assert r.exit_code == 0 and "warning" not in r.stderr
    expired = mint_service_token(service.state, "u1", "user:all", -10)
    r = invoke("service", "add", "b", "--url", url, "--token-stdin", input=expired + "\n")
    assert r.exit_code == 0 and "already expired" in r.stderr
    r = invoke("service", "default")
    assert r.stdout.strip() == "a"
    assert invoke("service", "default", "b").exit_code == 0
    r = invoke("operations", "list")
    assert r.exit_code == 4 and "expired" in r.stderr
    r = invoke("operations", "list", "--service", "a")
    assert r.exit_code == 0, r
    assert invoke("service", "default", "zzz").exit_code == 5
    r = invoke("service", "add", "c", "--url", url)
    assert r.exit_code == 2 and "--token-stdin" in r.stderr
    r = invoke("service", "add", "bad name", "--url", url, "--token-stdin", input="x\n")
    assert r.exit_code == 2
    r = invoke("service", "add", "d", "--url", "ftp://x", "--token-stdin", input="x\n")
    assert r.exit_code == 2


def test_https_service_with_cacert(invoke, tls_emulator):
    s = Service(tls_emulator)
    add_operation(s.state, status="success")
    r = invoke("operations", "list", "-o", "json", env=s.env)
    assert r.exit_code == 6 and "not trusted" in r.stderr
    r = invoke("operations", "list", "-o", "json", "--cacert", tls_emulator.ca_file, env=s.env)
    assert r.exit_code == 0, r
    assert len(_json(r)) == 1
    r = invoke("operations", "list", "--insecure", env=s.env)
    assert r.exit_code == 0 and "TLS verification is OFF" in r.stderr


def test_verbose_log_never_shows_the_token(invoke, service):
    r = invoke("-vv", "operations", "list", env=service.env)
    assert r.exit_code == 0, r
    assert "GET" in r.stderr
    assert service.token not in r.stderr + r.stdout


@pytest.mark.parametrize("url", ["https://bob:s3cret-pw@svc.example",
                                 "https://bob@svc.example:8443/api"])
def test_service_add_refuses_credentials_in_the_url_and_never_shows_them(invoke, home, url):
    r = invoke("service", "add", "s1", "--url", url, "--token-stdin", input="tok\n")
    assert r.exit_code == 2, r
    assert "must not carry credentials" in r.stderr
    assert "s3cret" not in r.stderr and "bob" not in r.stderr
    assert not (home / "config.toml").exists() or "svc.example" not in \
        (home / "config.toml").read_text()
    r = invoke("operations", "list", "--url", url, env={"NODECLI_TOKEN": "tok"})
    assert r.exit_code == 2 and "s3cret" not in r.stderr + r.stdout
