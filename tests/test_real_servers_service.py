"""The collaboration service as other conforming servers build it.

interface.md 2.5 calls the access token "opaque to clients"; 4.4 documents exactly one
restarting PUT body; the top-level list path, the membership paths and the workspace
POST body are "not shown". The emulator plays services that differ from nodecli's
guesses (opaque tokens, other paths) and the tests prove the client copes, over real
sockets.
"""

from __future__ import annotations

import json

import pytest

from nodecli.emulator.operations import add_operation, service_state

OPAQUE = "svc-7f3a9c-opaque-token"


class Svc:
    def __init__(self, emulator) -> None:
        self.emulator = emulator
        self.state = emulator.state
        self.svc = service_state(emulator.state)
        self.svc.opaque_tokens[OPAQUE] = "admin"
        self.env = {"NODECLI_SERVICE_URL": emulator.url, "NODECLI_TOKEN": OPAQUE}

    def stopped(self, folder: str = "folder", **kw):
        return add_operation(self.state, status="stopped", folder_name=folder,
                             user_id="admin", **kw)

    def raw_puts(self) -> list[bytes]:
        return [body for _op, body in self.svc.put_raw]


@pytest.fixture
def svc(emulator) -> Svc:
    return Svc(emulator)


# -- 1. an opaque token is sent as it is ------------------------------------------------------


def test_every_command_works_with_an_opaque_token(invoke, svc):
    op = svc.stopped(parent_id="100")
    r = invoke("-v", "operations", "list", "-o", "json", env=svc.env)
    assert r.exit_code == 0, r.stderr
    assert [o["id"] for o in json.loads(r.stdout)] == [op.id]
    assert r.stderr.count("pre-flight skipped") == 1
    assert OPAQUE not in r.stderr  # redacted from the -v log
    r = invoke("operations", "show", op.id, "--workspace", "100", env=svc.env)
    assert r.exit_code == 0, r.stderr
    assert "resolve it: nodecli operations resolve" in r.stderr
    r = invoke("operations", "resolve", op.id, "--workspace", "100", "--use-existing",
               "--retry", "--apply-to-all", "--yes", "--interval", "0.01", env=svc.env)
    assert r.exit_code == 0, r.stderr
    r = invoke("operations", "watch", op.id, "--workspace", "100", "--interval", "0.01",
               env=svc.env)
    assert r.exit_code == 0, r.stderr
    r = invoke("workspaces", "create", "--name", "plain", "--wait", "--interval", "0.01",
               env=svc.env)
    assert r.exit_code == 0, r.stderr
    assert "success" in r.stderr


def test_service_add_and_show_describe_an_opaque_token(invoke, svc, emulator):
    r = invoke("service", "add", "corp", "--url", emulator.url, "--token-stdin",
               input=OPAQUE + "\n")
    assert r.exit_code == 0, r.stderr
    assert "an opaque token, its contents unknown" in r.stderr
    assert "warning" not in r.stderr
    r = invoke("service", "show", "corp")
    assert r.exit_code == 0
    assert "opaque: contents unknown" in r.stdout and OPAQUE not in r.stdout
    r = invoke("service", "show", "corp", "-o", "json")
    assert json.loads(r.stdout)["token_info"] == {"opaque": True, "contents": "unknown"}
    r = invoke("operations", "list", "--service", "corp", "-o", "json")
    assert r.exit_code == 0, r.stderr


@pytest.mark.parametrize(("how", "source"), [
    ("env", "NODECLI_TOKEN"),
    ("file", "--token-file"),
    ("profile", "stored token of profile 'corp'"),
])
def test_a_refused_token_gets_a_hint_naming_its_source(invoke, svc, emulator, tmp_path,
                                                       how, source):
    bad = "svc-unknown-opaque-token"
    env = {"NODECLI_SERVICE_URL": emulator.url}
    args: list[str] = []
    if how == "env":
        env["NODECLI_TOKEN"] = bad
    elif how == "file":
        path = tmp_path / "tok"
        path.write_text(bad + "\n")
        args = ["--token-file", str(path)]
    else:
        assert invoke("service", "add", "corp", "--url", emulator.url, "--token-stdin",
                      input=bad + "\n").exit_code == 0
        env = {}
    r = invoke("operations", "list", *args, env=env)
    assert r.exit_code == 4
    assert source in r.stderr and "replace it" in r.stderr
    assert bad not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 2  # the error and its hint


def test_a_token_of_another_service_like_a_restarted_emulator_gets_the_hint(invoke, svc,
                                                                            emulator):
    """An envelope token the service cannot verify (its key changed on restart)."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    from nodecli.tokens.wire import encode_token, sign_payload

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    payload = b'{"user_id":"admin","scope":"user:all","expires_at":"2099-01-01T00:00:00Z"}'
    token = encode_token(payload, sign_payload(payload, key))
    r = invoke("operations", "list", env={"NODECLI_SERVICE_URL": emulator.url,
                                          "NODECLI_TOKEN": token})
    assert r.exit_code == 4
    assert "restarted emulator" in r.stderr and "NODECLI_TOKEN" in r.stderr


# -- 2. the documented resolution, and exactly the properties given ----------------------------


@pytest.mark.parametrize(("flags", "body"), [
    (["--use-existing", "--retry", "--apply-to-all"],
     b'{"use_existing":true,"retry":true,"apply_to_all":true}'),
    (["--use-existing"], b'{"use_existing":true}'),
    (["--retry", "--no-apply-to-all"], b'{"retry":true,"apply_to_all":false}'),
    (["--folder-name", "Projects 2", "--retry"], b'{"folder_name":"Projects 2","retry":true}'),
    (["--folder-name", "P3", "--apply-to-all"], b'{"folder_name":"P3","apply_to_all":true}'),
])
def test_resolve_flags_send_exactly_the_properties_given(invoke, svc, flags, body):
    op = svc.stopped(parent_id="100")
    r = invoke("operations", "resolve", op.id, "--workspace", "100", *flags, "--yes",
               "--interval", "0.01", env=svc.env)
    assert svc.raw_puts() == [body]
    assert r.exit_code in (0, 1), r.stderr  # a body without retry may leave it stopped


def test_the_documented_body_restarts_the_operation(invoke, svc):
    op = svc.stopped(parent_id="100")
    r = invoke("operations", "resolve", "--workspace", "100", "--use-existing", "--retry",
               "--apply-to-all", "--yes", "--interval", "0.01", "-o", "json", env=svc.env)
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert rows[0]["operation"] == op.id and rows[0]["final_status"] == "success"


def test_use_existing_with_folder_name_is_refused_before_anything(invoke, svc):
    svc.stopped(parent_id="100")
    r = invoke("operations", "resolve", "--workspace", "100", "--use-existing",
               "--folder-name", "x", "--yes", env=svc.env)
    assert r.exit_code == 2
    assert "exclude each other" in r.stderr
    assert svc.svc.requests == []


def test_update_puts_exactly_the_object_given(invoke, svc):
    op = svc.stopped(parent_id="100")
    r = invoke("operations", "update", op.id, "--workspace", "100", "--body",
               '{"use_existing": true, "retry": true, "apply_to_all": true}', "-o", "json",
               env=svc.env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "running"
    assert svc.raw_puts() == [b'{"use_existing":true,"retry":true,"apply_to_all":true}']
    op2 = svc.stopped(parent_id="101")
    r = invoke("operations", "update", op2.id, "--workspace", "101", "--set", "retry=true",
               "--set", "folder_name=New 1", env=svc.env)
    assert r.exit_code == 0, r.stderr
    assert svc.raw_puts()[-1] == b'{"retry":true,"folder_name":"New 1"}'


@pytest.mark.parametrize("args", [
    ["--body", "[1]"], ["--body", "{bad"], ["--set", "noequals"], ["--set", "a..b=1"],
    ["--body", "{}", "--set", "a=1"], [], ["--set", "a=1e999"], ["--body", '{"a": 1e999}'],
])
def test_update_refuses_bad_bodies_and_sends_nothing(invoke, svc, args):
    op = svc.stopped(parent_id="100")
    r = invoke("operations", "update", op.id, "--workspace", "100", *args, env=svc.env)
    assert r.exit_code == 2, r
    assert svc.svc.requests == [] and len(r.stderr.strip().splitlines()) <= 2


def test_group_membership_parent_everywhere(invoke, svc):
    op = svc.stopped("gfolder", op_type="group_membership.create", parent_id="gm9")
    r = invoke("operations", "watch", op.id, "--group-membership", "gm9", env=svc.env)
    assert r.exit_code == 1
    assert f"nodecli operations resolve {op.id} --group-membership gm9" in r.stderr
    r = invoke("operations", "show", op.id, "--group-membership", "gm9", "-o", "json",
               env=svc.env)
    assert r.exit_code == 0 and json.loads(r.stdout)["group_membership_id"] == "gm9"
    r = invoke("operations", "resolve", "--group-membership", "gm9", "--retry", "--yes",
               "--interval", "0.01", env=svc.env)
    assert r.exit_code == 0, r.stderr
    assert (op.id, {"retry": True}) in svc.svc.put_bodies
    puts = [p for m, p, _q in svc.svc.requests if m == "PUT"]
    assert puts == [f"/group_memberships/gm9/operations/{op.id}"]


def test_list_shows_the_parent_that_show_needs(invoke, svc):
    svc.stopped(parent_id="100")
    r = invoke("operations", "list", env=svc.env)
    assert "workspace 100" in r.stdout


# -- 5. what interface.md does not show is configurable ------------------------------------------

MOVED = {"operations": "/v2/operations", "workspaces": "/v2/ws/{id}/ops",
         "group_memberships": "/v2/gm/{id}/ops", "create_workspace": "/v2/workspaces"}


@pytest.fixture(scope="module")
def moved_service(tmp_path_factory):
    """A service that keeps operations where nodecli does not guess."""
    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.app import build_server

    paths = resolve_paths(tmp_path_factory.mktemp("moved"))
    server = build_server(paths, tls=False, service_tokens={OPAQUE: "admin"},
                          service_paths=MOVED).start()
    yield server
    server.stop()


def test_default_guesses_miss_a_moved_service_and_overrides_reach_it(invoke, moved_service):
    env = {"NODECLI_SERVICE_URL": moved_service.url, "NODECLI_TOKEN": OPAQUE}
    service_state(moved_service.state).reset()
    service_state(moved_service.state).opaque_tokens[OPAQUE] = "admin"
    r = invoke("operations", "list", env=env)
    assert r.exit_code == 5  # GET /operations: not there
    r = invoke("workspaces", "create", "--name", "x", env=env)
    assert r.exit_code == 5  # POST /workspaces: not there
    flags = ["--operations-path", "/v2/operations",
             "--service-path", "create-workspace=/v2/workspaces",
             "--service-path", "workspaces=/v2/ws/{id}/ops",
             "--service-path", "group-memberships=/v2/gm/{id}/ops"]
    r = invoke("workspaces", "create", "--name", "conflict-moved", "--wait", "--interval",
               "0.01", *flags, env=env)
    assert r.exit_code == 1 and "--workspace" in r.stderr
    r = invoke("operations", "list", "--status", "stopped", "-o", "json", *flags, env=env)
    assert r.exit_code == 0, r.stderr
    (op,) = json.loads(r.stdout)
    r = invoke("operations", "resolve", op["id"], "--workspace", op["workspace_id"],
               "--use-existing", "--retry", "--yes", "--interval", "0.01", *flags, env=env)
    assert r.exit_code == 0, r.stderr
    paths = [p for _m, p, _q in service_state(moved_service.state).requests]
    assert f"/v2/ws/{op['workspace_id']}/ops/{op['id']}" in paths


def test_profile_keeps_the_path_overrides(invoke, moved_service, tmp_path):
    service_state(moved_service.state).opaque_tokens[OPAQUE] = "admin"
    r = invoke("service", "add", "moved", "--url", moved_service.url, "--token-stdin",
               "--operations-path", "/v2/operations",
               "--service-path", "create-workspace=/v2/workspaces",
               "--service-path", "workspaces=/v2/ws/{id}/ops", input=OPAQUE + "\n")
    assert r.exit_code == 0, r.stderr
    r = invoke("service", "show", "moved", "-o", "json")
    assert json.loads(r.stdout)["paths"] == {"create_workspace": "/v2/workspaces",
                                             "operations": "/v2/operations",
                                             "workspaces": "/v2/ws/{id}/ops"}
    r = invoke("workspaces", "create", "--name", "from-profile", "--wait", "--interval",
               "0.01")
    assert r.exit_code == 0, r.stderr
    r = invoke("operations", "list", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert any(o["status"] == "success" for o in json.loads(r.stdout))


@pytest.mark.parametrize("item", ["nowhere=/x", "workspaces=/v2/ws/ops", "operations=/x/{id}",
                                  "operations=relative", "workspaces=/a/{id}/{id}",
                                  "create-workspace=/a b", "operations"])
def test_bad_path_overrides_are_usage_errors(invoke, svc, item):
    r = invoke("operations", "list", "--service-path", item, env=svc.env)
    assert r.exit_code == 2, r
    assert svc.svc.requests == []


def test_workspace_body_fields_and_whole_body(invoke, svc):
    r = invoke("workspaces", "create", "--name", "W1", "--field", "description=Q3 work",
               "--field", "quota=10", env=svc.env)
    assert r.exit_code == 0, r.stderr
    r = invoke("workspaces", "create", "--body", '{"name": "W2", "owner": {"id": "7"}}',
               env=svc.env)
    assert r.exit_code == 0, r.stderr
    assert svc.svc.post_bodies == [{"name": "W1", "description": "Q3 work", "quota": 10},
                                   {"name": "W2", "owner": {"id": "7"}}]
    r = invoke("workspaces", "create", "--body", "{}", "--name", "x", env=svc.env)
    assert r.exit_code == 2
    r = invoke("workspaces", "create", env=svc.env)
    assert r.exit_code == 2 and "--name" in r.stderr


def test_emulator_serve_accepts_a_configured_opaque_token(tmp_path, invoke):
    import subprocess
    import time

    from tests.conftest import nodecli_cmd, subprocess_env

    port_file = tmp_path / "port"
    proc = subprocess.Popen(
        nodecli_cmd("emulator", "serve", "--no-tls", "--port", "0", "--port-file",
                    str(port_file), "--service-path", "operations=/v2/operations"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=subprocess_env({"NODECLI_EMULATOR_SERVICE_TOKEN": OPAQUE}))
    try:
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().endswith("\n")):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        env = {"NODECLI_SERVICE_URL": url, "NODECLI_TOKEN": OPAQUE}
        r = invoke("operations", "list", "--operations-path", "/v2/operations", env=env)
        assert r.exit_code == 0, r.stderr
        r = invoke("operations", "list", env=env)
        assert r.exit_code == 5
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


# -- TLS: the hint names what service commands read -------------------------------------------


def test_service_tls_hint_names_the_service_variable(invoke, tls_emulator):
    svc = service_state(tls_emulator.state)
    svc.opaque_tokens[OPAQUE] = "admin"
    env = {"NODECLI_SERVICE_URL": tls_emulator.url, "NODECLI_TOKEN": OPAQUE}
    r = invoke("operations", "list", env=env)
    assert r.exit_code == 6, r
    assert "not trusted" in r.stderr and "NODECLI_SERVICE_CACERT" in r.stderr
    assert r.stderr.splitlines()[-1] == (
        "hint: give the service's CA with --cacert PEM (or NODECLI_SERVICE_CACERT; "
        "for a test service only, --insecure)")
    # the variable named in the hint is really read; the node's variable is not
    r = invoke("operations", "list", "-o", "json",
               env={**env, "NODECLI_CACERT": tls_emulator.ca_file})
    assert r.exit_code == 6, r
    r = invoke("operations", "list", "-o", "json",
               env={**env, "NODECLI_SERVICE_CACERT": tls_emulator.ca_file})
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == []
