"""Shaping output in the tool: --query (JMESPath), --field, -o yaml|raw|columns=,
--no-headers and NODECLI_OUTPUT, on real output of every read command and on hostile
JSON from a node."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.test_output_conventions import LISTS, SHOWS, world  # noqa: F401 - the fixture


@pytest.mark.parametrize("argv", LISTS + SHOWS, ids=" ".join)
def test_every_read_command_takes_query_field_and_yaml(world, invoke, argv):  # noqa: F811
    plain = invoke(*argv, "-o", "json", env=world)
    assert plain.exit_code == 0, plain.stderr
    data = json.loads(plain.stdout)
    items = data["events"] if argv[0] == "events" and argv[1] == "list" else data
    r = invoke(*argv, "-o", "yaml", env=world)
    assert r.exit_code == 0, r.stderr
    assert yaml.safe_load(r.stdout) == data
    r = invoke(*argv, "--query", "@", env=world)
    assert json.loads(r.stdout) == data
    key = "id" if isinstance(items, list) and items and "id" in items[0] else None
    if isinstance(items, list) and key:
        query = "events[].id" if argv[:2] == ("events", "list") else "[].id"
        r = invoke(*argv, "--query", query, "-o", "raw", env=world)
        assert r.stdout.splitlines() == [str(i[key]) for i in items]
        if argv[:2] != ("events", "list"):
            r = invoke(*argv, "--field", key, env=world)
            assert r.stdout.splitlines() == [str(i[key]) for i in items]


def test_fields_columns_and_headers(world, invoke):  # noqa: F811
    r = invoke("user", "list", "--field", "name", "--field", "acls")
    assert r.stdout.splitlines() == ["usr1\t[\"admin\"]", "usr2\t[]"]
    r = invoke("user", "list", "-o", "columns=name,transfer_user", "--no-headers")
    assert [line.split() for line in r.stdout.splitlines()] == [["usr1", "aspera"],
                                                               ["usr2", "aspera"]]
    r = invoke("user", "list", "-o", "columns=name,missing.deep")
    assert r.stdout.splitlines()[0].split() == ["name", "missing.deep"]
    assert r.stdout.splitlines()[1].split() == ["usr1", "-"]
    r = invoke("user", "list", "-o", "csv", "--no-headers")
    assert r.stdout.splitlines() == ["usr1,aspera,admin", "usr2,aspera,"]
    r = invoke("user", "list", "--no-headers")
    assert r.stdout.splitlines()[0].split()[0] == "usr1"
    r = invoke("xuser", "list", "-o", "columns=name", "--no-headers", "--query", "[?false]")
    assert r.exit_code == 0 and r.stdout == ""  # nothing, and no heading: an empty output
    r = invoke("operations", "list", "--workspace", "100", "--field", "data.type",
               "--field", "status", env=world)
    assert r.exit_code == 0, r.stderr
    assert "stopped" in r.stdout


@pytest.mark.parametrize("argv,says", [
    (("--query", "[?"), "--query:"),
    (("-o", "raw"), "give --query"),
    (("--field", ""), "is not a field path"),
    (("--field", "a..b"), "is not a field path"),
    (("-o", "columns="), "is not a field path"),
    (("-o", "yaml", "--field", "name"), "not with -o yaml"),
    (("-o", "xml"), "is not one of"),
])
def test_bad_shaping_is_a_usage_error(invoke, argv, says):
    r = invoke("user", "list", *argv)
    assert r.exit_code == 2 and says in r.stderr and "Traceback" not in r.stderr


def test_nodecli_output_sets_the_default_where_it_fits(world, invoke):  # noqa: F811
    r = invoke("user", "list", env={"NODECLI_OUTPUT": "yaml"})
    assert yaml.safe_load(r.stdout)[0]["name"] == "usr1"
    r = invoke("user", "list", env={"NODECLI_OUTPUT": "jsonl"})
    assert json.loads(r.stdout.splitlines()[0])["name"] == "usr1"
    r = invoke("user", "list", "-o", "table", env={"NODECLI_OUTPUT": "json"})
    assert r.stdout.startswith("user ")  # the flag wins
    r = invoke("user", "list", env={"NODECLI_OUTPUT": "bogus"})  # not a format: ignored
    assert r.exit_code == 0 and r.stdout.startswith("user ")
    r = invoke("token", "inspect", "x", env={"NODECLI_OUTPUT": "csv"})  # not one of its
    assert "csv" not in r.stderr


def test_hostile_json_is_shaped_as_data(tmp_path):
    """Deep nesting, odd keys, unicode and controls from a node, through every shape."""
    import io

    from nodecli.render.shape import Shape

    deep: object = "bottom"
    for _ in range(300):
        deep = {"a": deep}
    data = [{"id": "1", "k.e y": "\x1b[31mred\u202e", "ü": "ünïcödé 東京", "n": 10**40,
             "x": float("nan"), "deep": deep, "list": [None, True, {"z": "\x07"}]}]
    for fmt, query, fields in [("json", "[0].\"k.e y\"", ()), ("yaml", None, ()),
                               ("raw", "[].\"ü\"", ()), ("json", None, ("list.2.z",)),
                               ("columns=id,ü,n,deep.a.a", None, ()),
                               ("json", None, ("id", "ü", "n"))]:
        out = io.StringIO()
        Shape.make(fmt, query, fields).write(data, out)
        text = out.getvalue()
        if fmt != "json" or fields:  # (json writes escapes as escapes)
            assert "\x1b" not in text and "\x07" not in text
    out = io.StringIO()
    Shape.make("raw", "[].\"ü\"", ()).write(data, out)
    assert out.getvalue() == "ünïcödé 東京\n"
    out = io.StringIO()
    Shape.make("yaml", None, ()).write(data, out)
    assert yaml.safe_load(out.getvalue())[0]["n"] == 10**40


def test_the_config_default_output(invoke, home):
    invoke("xuser", "add", "x", "-r", "file:////d/*")
    assert invoke("config", "output").stderr.startswith("no default output format")
    r = invoke("config", "output", "yaml")
    assert r.exit_code == 0, r.stderr
    assert invoke("config", "output").stdout == "yaml\n"
    assert yaml.safe_load(invoke("xuser", "list").stdout)[0]["name"] == "x"
    r = invoke("xuser", "list", env={"NODECLI_OUTPUT": "csv"})  # the variable wins
    assert r.stdout.startswith("name,")
    assert invoke("xuser", "list", "-o", "table").stdout.startswith("transfer user")
    r = invoke("token", "inspect", "x")  # yaml is not one of its formats: its own default
    assert "yaml" not in r.stderr
    assert invoke("config", "output", "--unset").exit_code == 0
    assert invoke("xuser", "list").stdout.startswith("transfer user")
    assert invoke("config", "output", "xml").exit_code == 2
    (home / "config.toml").write_text(
        (home / "config.toml").read_text().replace("[transfer_users.x]",
                                                   '[defaults]\noutput = "xml"\n\n'
                                                   "[transfer_users.x]"))
    r = invoke("xuser", "list")
    assert r.exit_code == 3 and "defaults -> output" in r.stderr
