"""nodecli api over HTTPS against the emulator: any method with the profile's
credentials, fields, input, headers, pagination across a count cap, a foreign Link
host, errors and their exit codes."""

from __future__ import annotations

import json

import pytest

from nodecli.emulator.transfers import book_of


def test_get_info_with_the_profile_login(invoke, node_env):
    r = invoke("api", "/info", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["application"] == "node"
    r = invoke("api", "/info", "--field", "version", env=node_env)
    assert r.stdout.strip() == "4.4.5"


def test_post_put_delete_and_cancel(invoke, node_env, emulator, tmp_path):
    r = invoke("api", "-X", "POST", "/access_keys", "-F", "id=akapi", "-f",
               'storage={"type":"local","path":"/data"}', "-F", "secret=s3cret", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert "akapi" in emulator.state.access_keys
    body = tmp_path / "b.json"
    body.write_text('{"configuration": {"activity_event_logging": false}}')
    r = invoke("api", "-X", "PUT", "/access_keys/akapi", "--input", str(body), env=node_env)
    assert r.exit_code == 0, r.stderr
    r = invoke("api", "-X", "DELETE", "/access_keys/akapi", "-i", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert "akapi" not in emulator.state.access_keys and "HTTP 20" in r.stderr
    book = book_of(emulator.state)
    book.seconds = 3600  # runs through the test on any machine
    t = book.start("alice", None, {})
    r = invoke("api", "-X", "CANCEL", f"/ops/transfers/{t.id}", "--query", "status", "-o",
               "raw", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.strip() == "cancelled" and t.cancelled is not None


def test_paginate_across_a_count_cap_and_a_foreign_link_host(invoke, node_env, log):
    log.generate(250)
    log.count_cap = 40  # the node sends at most 40 whatever count asks
    log.link_host = "internal.example:9092"
    try:
        r = invoke("api", "/events", "-f", "count=1000", "-f", "iteration_token=0",
                   "--paginate", "--query", "length(@)", env=node_env)
        assert r.exit_code == 0, r.stderr
        assert json.loads(r.stdout) == 250
        r = invoke("api", "/events", "-f", "count=100", "-f", "iteration_token=0",
                   "--paginate", "-o", "jsonl", env=node_env)
        ids = [json.loads(line)["id"] for line in r.stdout.splitlines()]
        assert ids == [str(i) for i in range(1, 251)]
    finally:
        log.count_cap = log.link_host = None


@pytest.mark.parametrize("argv,code,says", [
    (("/no/such/thing",), 5, "HTTP 404"),
    (("-X", "PUT", "/info", "-f", "a=1"), 1, "HTTP 405"),
    (("info",), 2, "starts with '/'"),
    (("-X", "GE T", "/info"), 2, "is not an HTTP method"),
    (("/info", "-H", "Bad Header"), 2, "'Name: value'"),
    (("/info", "-f", "novalue"), 2, "KEY=VALUE"),
    (("/info", "-f", "a=1", "--input", "-"), 2, "not both"),
])
def test_errors_map_to_the_documented_codes(invoke, node_env, argv, code, says):
    r = invoke("api", *argv, env=node_env, input="")
    assert r.exit_code == code, r.stderr
    assert says in r.stderr


def test_a_wrong_password_is_exit_4_and_the_password_never_shows(invoke, node_env):
    r = invoke("-v", "api", "/info", env=dict(node_env, NODECLI_PASSWORD="wr0ng-pw"))
    assert r.exit_code == 4
    assert "wr0ng-pw" not in r.stderr + r.stdout
