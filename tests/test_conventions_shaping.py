"""Shaping is one convention over the whole command tree (docs/reference.md, "Output"):
every command that has ``-o json`` takes ``--query`` and ``--field``, and on real output
against the emulator over HTTPS:

* ``--query @`` is the JSON form itself;
* ``--field PATH`` prints one line per item of a list, whether the JSON form is the list
  or an object holding it (``events list``: ``events``), and one line for one object;
  each line is the raw value (text as it is, numbers and lists as JSON);
* a list index is a number in the path (``acls.0``);
* ``--field`` after ``--query`` takes the query's result;
* a path that matches nothing in any item is exit 2 naming the path, and prints nothing.

The commands come from the click tree (tests/command_world.py): a new command with
``-o json`` is covered the day it is added.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.command_world import LEAVES, RUNS, World, formats_of, options_of

# the commands with -o json that do not shape, and why (anything else must)
NOT_SHAPED = {
    "diff": "exits 1 whenever it lists something (as kubectl diff): its json rows as they "
            "are",
    "export": "its output is the document itself (yaml or json), read back by diff/apply",
    "events tail": "a stream that never ends: -o jsonl lines go to jq as they come",
    "node health": "-o nagios and -o prometheus are its contract; -o json is the checks",
    "workspaces create": "its --field KEY=VALUE is a property of the body it sends",
}
JSON_COMMANDS = sorted(" ".join(p) for p, c in LEAVES if "json" in formats_of(c))
SHAPED = sorted(" ".join(p) for p, c in LEAVES if "--query" in options_of(c))


def test_every_command_with_json_shapes_and_every_command_has_a_run():
    assert len(SHAPED) >= 35
    assert [c for c in JSON_COMMANDS if c not in SHAPED] == sorted(NOT_SHAPED)
    for path, cmd in LEAVES:
        if "--query" in options_of(cmd):
            assert "--field" in options_of(cmd), path
    missing = sorted(" ".join(p) for p, _ in LEAVES if " ".join(p) not in RUNS)
    assert missing == [], "say in tests/command_world.py RUNS how to run these commands"


def _raw(value: Any) -> str:
    """What --field prints for one value: text as it is, anything else as compact JSON,
    controls as '?' (one value stays on one line)."""
    from nodecli.render.text import sanitize

    if value is None:
        return ""
    return sanitize(value if isinstance(value, str) else
                    json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _items(world: World, name: str, data: Any) -> tuple[list[Any], bool]:
    """The items --field prints a line for, and whether the command lists: the JSON
    form when it is a list; the list an object form holds when that list is what
    ``-o jsonl`` prints (``events list``); else the one object."""
    if isinstance(data, list):
        return data, True
    cmd = dict((" ".join(p), c) for p, c in LEAVES)[name]
    if isinstance(data, dict) and "jsonl" in formats_of(cmd):
        r = world.run(name, "-o", "jsonl")
        assert r.exit_code == 0, r
        try:
            lines = [json.loads(line) for line in r.stdout.splitlines()]
        except ValueError:
            lines = []
        if lines and any(v == lines for v in data.values()):
            return lines, True
    return [data], False


def _stable(first: list[Any], second: list[Any]) -> list[str]:
    """Top-level keys whose values two runs agree on, in every item (a command that
    creates something gives it a new id each run)."""
    if len(first) != len(second) or not first or not all(isinstance(i, dict) for i in first):
        return []
    keys = [k for k in first[0] if "." not in k and k.isascii()
            and not _clock_derived(first[0][k])]
    return [k for k in keys if all(isinstance(b, dict) and a.get(k) == b.get(k)
                                   for a, b in zip(first, second, strict=True))]


# Values computed from the clock at each run (a token's seconds left): two runs may
# agree on them and a third, a second later, not, so they never serve as a stable key.
CLOCK_DERIVED = frozenset({"seconds_left"})


def _clock_derived(value: Any) -> bool:
    if isinstance(value, dict):
        return any(k in CLOCK_DERIVED or _clock_derived(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_clock_derived(v) for v in value)
    return False


@pytest.mark.parametrize("name", SHAPED)
def test_field_and_query_on_every_command_with_json(tree_world, name):
    world = tree_world
    r = world.run(name, "-o", "json")
    assert r.exit_code == 0, r
    data = json.loads(r.stdout)
    items, is_list = _items(world, name, data)
    assert items, f"{name}: the world gives it nothing to show; seed something"

    q = world.run(name, "--query", "@")
    assert q.exit_code == 0, q
    again = json.loads(q.stdout)
    assert type(again) is type(data)

    # --field: one line per item, the raw value; on one object, one line
    again_items, _ = _items(world, name, again)
    keys = _stable(items, again_items)
    if keys:
        key = keys[0]
        f = world.run(name, "--field", key)
        assert f.exit_code == 0, f
        assert f.stdout.splitlines() == [_raw(i.get(key)) for i in items], key
        # two fields: tab-separated, in the order given
        two = world.run(name, "--field", keys[-1], "--field", key)
        assert two.stdout.splitlines() == [f"{_raw(i.get(keys[-1]))}\t{_raw(i.get(key))}"
                                           for i in items]
    else:  # nothing stable to compare: one line per item all the same
        key = next(iter(items[0]))
        f = world.run(name, "--field", key)
        assert f.exit_code == 0, f
        assert len(f.stdout.splitlines()) == len(items)

    # a path that matches nothing in any item: exit 2 naming it, nothing on stdout
    bad = world.run(name, "--field", "no_such_field.deep")
    assert bad.exit_code == 2, bad
    assert "'no_such_field.deep'" in bad.stderr and "matches nothing" in bad.stderr
    assert bad.stdout == "" and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) <= 2

    # --field after --query: the query's result is what is printed from
    if is_list and isinstance(items[0], dict):
        query = "events[:1]" if isinstance(data, dict) else "[:1]"
        first = world.run(name, "--query", query, "--field", key)
        assert first.exit_code == 0, first
        assert len(first.stdout.splitlines()) == 1


def test_events_list_field_is_one_line_per_event_and_envelope_fields_once(
        tree_world):
    """The known failure: `events list --field id` printed one empty line (its JSON form
    is an object holding `events`)."""
    ids = [e["id"] for e in json.loads(tree_world.run("events list", "-o", "json").stdout)
           ["events"]]
    assert len(ids) >= 3
    r = tree_world.run("events list", "--field", "id")
    assert r.exit_code == 0, r
    assert r.stdout.splitlines() == ids
    r = tree_world.run("events list", "--field", "id", "--field", "types.0")
    assert [line.split("\t")[0] for line in r.stdout.splitlines()] == ids
    assert all(line.split("\t")[1].startswith(("file.", "transfer.", "download.",
                                               "upload.", "permission."))
               for line in r.stdout.splitlines())
    # the object's own fields, as docs/events.md uses them: once
    r = tree_world.run("events list", "--field", "next_iteration_token")
    assert r.stdout == f"{ids[-1]}\n"
    r = tree_world.run("events list", "--field", "events", "--field", "next_url")
    assert r.stdout.count("\n") == 1 and r.stdout.startswith('[{"id":')
    r = tree_world.run("events list", "-o", "columns=id", "--no-headers")
    assert r.stdout.split() == ids
    r = tree_world.run("events list", "-o", "columns=next_iteration_token", "--no-headers")
    assert r.stdout.split() == [ids[-1]]
    r = tree_world.run("events list", "--field", "idd")
    assert r.exit_code == 2 and "'idd' matches nothing" in r.stderr and r.stdout == ""


def test_a_list_index_in_a_field_path(tree_world):
    r = tree_world.run("user list", "--field", "name", "--field", "acls.0")
    assert r.stdout.splitlines() == ["usr1\tadmin", "usr2\t"]  # usr2 has no acl: empty
    r = tree_world.run("user list", "--field", "acls.1")  # no user has a second acl
    assert r.exit_code == 2 and "'acls.1'" in r.stderr
    r = tree_world.run("node info", "--field", "capabilities.0.name")
    info = json.loads(tree_world.run("node info", "-o", "json").stdout)
    assert r.exit_code == 0, r
    assert r.stdout == info["capabilities"][0]["name"] + "\n"
    last = len(info["capabilities"]) - 1
    r = tree_world.run("node info", "--field", f"capabilities.{last}.name")
    assert r.stdout == info["capabilities"][last]["name"] + "\n"
    r = tree_world.run("node info", "--field", f"capabilities.{last + 1}.name")
    assert r.exit_code == 2  # one past the end is nothing


def test_field_after_query_takes_the_result_of_the_query(tree_world):
    r = tree_world.run("events list", "--query", "events[?id=='2']", "--field", "id")
    assert r.stdout == "2\n"
    r = tree_world.run("user list", "--query", "[?name=='usr2']", "--field", "name",
                       "--field", "transfer_user")
    assert r.stdout == "usr2\taspera\n"
    # a query giving one object: one line; giving a scalar: no field in it
    r = tree_world.run("user list", "--query", "[0]", "--field", "name")
    assert r.stdout == "usr1\n"
    r = tree_world.run("user list", "--query", "[0].name", "--field", "name")
    assert r.exit_code == 2 and "'name' matches nothing" in r.stderr
    # a query that keeps nothing: nothing to print, and no error
    r = tree_world.run("user list", "--query", "[?name=='nobody']", "--field", "name")
    assert r.exit_code == 0 and r.stdout == ""


def test_json_null_is_a_value_not_a_missing_path(tree_world):
    r = tree_world.run("events list", "--field", "next_url")  # present in the object
    assert r.exit_code == 0, r
    r = tree_world.run("user list", "--query", "[].{n: name, z: `null`}", "--field", "z")
    assert r.exit_code == 0 and r.stdout == "\n\n"
