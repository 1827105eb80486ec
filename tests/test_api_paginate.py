"""nodecli api: gh's method rule, --paginate to the very last page (also when that page
holds data and names no next one), --dry-run that never sends, secrets masked at any
depth in what --dry-run shows, and -o json that stays strict JSON whatever the node sent.
All over HTTPS against the emulator."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

import pytest

from nodecli.emulator.server import Reply
from tests.test_emulator_cli import _add_admin
from tests.test_emulator_cli import serve as serve  # the fixture


def _strict(text: str):
    def refuse(name: str) -> None:
        raise AssertionError(f"-o json wrote {name}, which is not JSON")

    return json.loads(text, parse_constant=refuse)


# -- --paginate: every page, the last one too ----------------------------------------------


@pytest.mark.parametrize("total", [199, 200, 201, 250])
@pytest.mark.parametrize("link_on_last_page", [True, False])
def test_paginate_keeps_the_last_page(invoke, node_env, log, total, link_on_last_page):
    """Pages of 100: the last page holds 99, 100, 1 or 50 events. A node that ends the
    list there (no Link rel="next") must not lose it; one that ends on an empty page
    neither."""
    log.generate(total)
    log.link_on_last_page = link_on_last_page
    log.queries.clear()
    r = invoke("api", "/events", "-f", "count=100", "-f", "iteration_token=0", "--paginate",
               "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r.stderr
    ids = [json.loads(line)["id"] for line in r.stdout.splitlines()]
    assert ids == [str(i) for i in range(1, total + 1)]
    pages = -(-total // 100)  # the pages that hold events
    asked = [dict(parse_qsl(q)) for q in log.queries]
    # an empty page ends the list only where the node sends a Link on the last one
    assert len(asked) == pages + (1 if link_on_last_page else 0)
    assert [a["iteration_token"] for a in asked[:pages]] == [str(100 * k)
                                                            for k in range(pages)]
    assert all(a["count"] == "100" for a in asked)


def test_paginate_a_single_page_without_link(invoke, node_env, log):
    log.generate(3)
    log.link_on_last_page = False
    r = invoke("api", "/events", "--paginate", "--query", "[].id", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == ["1", "2", "3"]


def test_paginate_last_page_with_data_behind_a_count_cap(invoke, node_env, log):
    log.generate(95)
    log.count_cap = 40  # pages of 40, 40, 15: the last holds data and no Link
    log.link_on_last_page = False
    r = invoke("api", "/events", "-f", "count=1000", "--paginate", "--query", "length(@)",
               env=node_env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == 95


# -- the method: gh's rule, and --paginate is GET -----------------------------------------


def test_fields_make_a_post_unless_get_or_paginate(invoke, node_env, log, served):
    log.generate(7)
    r = invoke("api", "/events", "-f", "count=5", env=node_env)  # POST /events: refused
    assert r.exit_code != 0
    assert any('"POST /events ' in line for line in served)
    served.clear()
    r = invoke("api", "-X", "GET", "/events", "-f", "count=5", "--query", "length(@)",
               env=node_env)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == 5
    assert any('"GET /events?count=5 ' in line for line in served)
    r = invoke("api", "/events", "-f", "count=5", "--paginate", "--query", "length(@)",
               env=node_env)
    assert json.loads(r.stdout) == 7


@pytest.mark.parametrize("argv,says", [
    (("-X", "POST", "/events", "--paginate"), "not with -X POST"),
    (("-X", "delete", "/events", "--paginate"), "not with -X delete"),
    (("/events", "--paginate", "--input", "-"), "not --input"),
])
def test_paginate_is_get_only_and_refused_before_anything(invoke, node_env, served, argv,
                                                          says):
    for dry in ((), ("--dry-run",)):
        r = invoke(*dry, "api", *argv, env=node_env, input="{}")
        assert r.exit_code == 2, r
        assert says in r.stderr and r.stdout == ""
    assert served == []


# -- --dry-run is never ignored ------------------------------------------------------------


def test_dry_run_paginate_prints_what_it_would_send_and_stops(invoke, node_env, log, served,
                                                              emulator):
    """The known failure: `nodecli --dry-run api /events -f count=5 --paginate` printed
    every event of the node."""
    log.generate(300)
    r = invoke("--dry-run", "api", "/events", "-f", "count=5", "--paginate", env=node_env)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"would send: GET {emulator.url}/events?count=5"
    assert lines[1].startswith('then each page its Link rel="next" names')
    assert lines[-1] == "nothing was sent (--dry-run)"
    assert len(lines) == 3
    assert served == [] and list(log.queries) == []
    r = invoke("api", "/info", "--dry-run", env=node_env)
    assert r.stdout == f"would send: GET {emulator.url}/info\nnothing was sent (--dry-run)\n"
    assert served == []


def test_dry_run_api_post_shows_the_body(invoke, node_env, emulator, served):
    r = invoke("--dry-run", "api", "/access_keys", "-F", "id=ak9", "-f",
               'storage={"type":"local","path":"/"}', env=node_env)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"would send: POST {emulator.url}/access_keys\n")
    body = json.loads(r.stdout.split("\n", 1)[1].rsplit("\nnothing was sent", 1)[0])
    assert body == {"id": "ak9", "storage": {"type": "local", "path": "/"}}
    assert served == [] and "ak9" not in emulator.state.access_keys


SECRETS = ("S3-nested-in-object", "S3-in-a-list", "S3-list-under-secret",
           "S3-deep", "S3-query-token", "S3-plain")


def test_dry_run_masks_secrets_nested_in_lists_and_objects(invoke, node_env, tmp_path, served):
    body = {
        "id": "ak9",
        "secret": "S3-plain",
        "storage": {"type": "s3", "s3": {"access_key_id": "AKIA",
                                         "secret_access_key": "S3-nested-in-object"}},
        "users": [{"name": "a", "password": "S3-in-a-list"}, ["x", {"Token": "S3-deep"}]],
        "client_secret": ["S3-list-under-secret", {"k": "v"}],
        "tags": {"note": "kept"},
    }
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    r = invoke("--dry-run", "api", "-X", "POST", "/access_keys", "--input", str(path),
               env=node_env)
    assert r.exit_code == 0, r.stderr
    for secret in SECRETS:
        assert secret not in r.stdout + r.stderr
    shown = json.loads(r.stdout.split("\n", 1)[1].rsplit("\nnothing was sent", 1)[0])
    assert shown == {
        "id": "ak9", "secret": "***",
        "storage": {"type": "s3", "s3": {"access_key_id": "AKIA",
                                         "secret_access_key": "***"}},
        "users": [{"name": "a", "password": "***"}, ["x", {"Token": "***"}]],
        "client_secret": "***", "tags": {"note": "kept"}}
    # in the query of a request too (DELETE and CANCEL carry their fields there)
    r = invoke("--dry-run", "api", "-X", "DELETE", "/access_keys/ak9", "-f",
               "access_token=S3-query-token", "-f", "reason=cleanup", env=node_env)
    assert r.exit_code == 0, r.stderr
    assert "S3-query-token" not in r.stdout
    assert "access_token=***" in r.stdout and "reason=cleanup" in r.stdout
    assert served == []


def test_dry_run_transfer_start_masks_a_spec_s_nested_secrets(
        invoke, tree_world, tmp_path, served):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "direction": "send", "remote_host": "peer", "remote_password": "S3-plain",
        "paths": [{"source": "/a", "destination": "/b"}],
        "tags": {"app": {"token": "S3-nested-in-object"}},
        "multi_session": [{"ssh_private_key": "S3-in-a-list"}]}))
    r = invoke("--dry-run", "transfer", "start", "--spec", str(spec),
               env=tree_world.env("bearer"))
    assert r.exit_code == 0, r
    assert "would send: POST" in r.stdout
    for secret in SECRETS:
        assert secret not in r.stdout + r.stderr
    assert r.stdout.count('"***"') == 3 and '"/b"' in r.stdout
    assert [line for line in served if '"GET' not in line and '"HEAD' not in line] == []


# -- -o json is strict JSON, whatever the node or a query holds ----------------------------


def test_non_finite_numbers_nested_in_data_stay_strict_json(invoke, node_env, log):
    """NaN, Infinity, -Infinity and 1e999 from a node, nested in objects and lists, are
    written as the text the node sent, in a JSON string (docs/reference.md, Output)."""
    page = (b'[{"id":"1","types":["file.created"],"data":{"a":[NaN,{"b":-Infinity}],'
            b'"c":1e999,"d":[[Infinity]]}}]')

    def reply() -> Reply:
        return Reply(200, page, {"Content-Type": "application/json"})

    for argv in (("api", "/events"), ("api", "/events", "-o", "jsonl"),
                 ("events", "list", "-o", "json"), ("events", "list", "-o", "jsonl"),
                 ("events", "get", "1", "-o", "json")):
        log.push_reply(reply())
        if argv[:2] == ("events", "get"):
            continue  # (GET /events/{id} is not a canned page)
        r = invoke(*argv, env=node_env)
        assert r.exit_code == 0, (argv, r)
        docs = [_strict(line) for line in r.stdout.splitlines()] if "jsonl" in argv \
            else [_strict(r.stdout)]
        event = docs[0]["events"][0] if isinstance(docs[0], dict) and "events" in docs[0] \
            else (docs[0][0] if isinstance(docs[0], list) else docs[0])
        assert event["data"] == {"a": ["NaN", {"b": "-Infinity"}], "c": "1e999",
                                 "d": [["Infinity"]]}, argv
    log.replies.clear()
    log.push_reply(reply())
    r = invoke("api", "/events", "--field", "data.a.1.b", "--field", "data.d.0",
               env=node_env)
    assert r.stdout == '-Infinity\t["Infinity"]\n'


def test_a_query_that_computes_nan_or_infinity_stays_strict_json(invoke, home):
    invoke("xuser", "add", "x", "-r", "file:////d/*")
    q = "[].{n: to_number('NaN'), i: [to_number('1e999'), {m: to_number('-1e999')}]}"
    r = invoke("xuser", "list", "--query", q)
    assert r.exit_code == 0, r
    assert _strict(r.stdout) == [{"n": "NaN", "i": ["Infinity", {"m": "-Infinity"}]}]
    r = invoke("xuser", "list", "--query", q, "-o", "yaml")
    assert "NaN" in r.stdout and ".nan" not in r.stdout.lower()
    r = invoke("xuser", "list", "--query", q, "--field", "i")
    assert r.stdout == '["Infinity",{"m":"-Infinity"}]\n'


def test_dry_run_api_to_the_service_sends_nothing(tree_world, invoke, emulator,
                                                  served):
    r = invoke("--dry-run", "api", "/workspaces/100/operations", "--service", "corp",
               "--paginate", "-f", "status=stopped")
    assert r.exit_code == 0, r
    assert r.stdout.splitlines()[0] == (f"would send: GET {emulator.url}"
                                        "/workspaces/100/operations?status=stopped")
    assert tree_world.service_token not in r.stdout + r.stderr
    assert served == []


def test_emulator_serve_no_final_link_plays_that_node(serve, invoke, home):
    """`emulator serve --no-final-link`: the page holding the newest event names no next
    page; a pager keeps it and asks for nothing after it."""
    _add_admin(home)
    _proc, port, _ = serve("--no-tls", "--no-final-link")
    url = f"http://127.0.0.1:{port}"
    admin = {"NODECLI_URL": url, "NODECLI_USER": "admin", "NODECLI_PASSWORD": "admin-pass"}
    r = invoke("api", "/access_keys", "-F", "id=akx", "-F", "secret=akx-secret", "-f",
               'storage={"type":"local","path":"/"}', env=admin)
    assert r.exit_code == 0, r
    key = {"NODECLI_URL": url, "NODECLI_ACCESS_KEY": "akx", "NODECLI_PASSWORD": "akx-secret"}
    root = invoke("api", "/access_keys/akx", "--field", "root_file_id", env=admin).stdout.strip()
    assert root, "the access key names its root folder"
    for who in ("u1", "u2", "u3"):  # three permission.created events
        r = invoke("api", "/permissions", "-F", f"file_id={root}", "-F", "access_type=user",
                   "-F", f"access_id={who}", "-f", 'access_levels=["list"]', env=key)
        assert r.exit_code == 0, r
    r = invoke("-vv", "api", "/events", "-f", "count=2", "--paginate", "-o", "jsonl",
               env=key)
    assert r.exit_code == 0, r
    assert len(r.stdout.splitlines()) == 3
    asked = [line for line in r.stderr.splitlines() if line.startswith("debug: > GET")]
    assert len(asked) == 2  # the second page held the last event and named no next one
