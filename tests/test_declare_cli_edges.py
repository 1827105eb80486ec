"""cli/declare.py at its edges (its mutation run's survivors): a node named only by the
environment, a document on stdin, and the diff's changes column word for word."""

from __future__ import annotations

import json

import pytest

from tests.test_declare import node, write  # noqa: F401 - node is a fixture

WIDE = {"COLUMNS": "300"}


def test_export_asks_a_node_named_only_by_the_environment(node, invoke):  # noqa: F811
    r = invoke("export", "-o", "json")  # the default profile alone: the local document
    assert r.exit_code == 0, r.stderr
    assert "access_keys" not in json.loads(r.stdout)
    for env in ({"NODECLI_NODE": "emu"},
                {"NODECLI_URL": node.url, "NODECLI_USER": "admin",
                 "NODECLI_PASSWORD": "admin-pass"}):
        r = invoke("export", "-o", "json", env=env)
        assert r.exit_code == 0, (env, r.stderr)
        assert "access_keys" in json.loads(r.stdout), env


def test_a_document_on_stdin_is_read_and_named_so(invoke, home):
    doc = "version: 1\ntransfer_users:\n  t1: {}\n"
    r = invoke("diff", "-f", "-", "-o", "json", input=doc)
    assert r.exit_code == 1, r.stderr
    assert [(x["kind"], x["name"], x["action"]) for x in json.loads(r.stdout)] == [
        ("transfer_user", "t1", "add")]
    r = invoke("diff", "-f", "-", input="version: 2\n")
    assert r.exit_code == 2
    assert r.stderr.strip().endswith(
        "<stdin>:1: version: unsupported version 2 (this nodecli reads version 1)")


def test_the_changes_column_says_each_field_before_and_after(invoke, home, tmp_path):
    before = ("version: 1\ntransfer_users:\n  aspera: {docroot: /srv/a}\n  other: {}\n"
              "node_users:\n  usr1: {transfer_user: aspera}\n")
    r = invoke("apply", "-f", write(tmp_path, before, "before.yaml"), "--yes")
    assert r.exit_code == 0, r.stderr
    after = ("version: 1\ntransfer_users:\n  aspera: {docroot: /srv/ø}\n"
             "  other: {docroot: /srv/b}\n"
             "node_users:\n  usr1: {transfer_user: other, acls: [admin, internal]}\n")
    r = invoke("diff", "-f", write(tmp_path, after, "after.yaml"), env=WIDE)
    assert r.exit_code == 1, r.stderr
    changes = {x.split()[2]: x.rstrip() for x in r.stdout.splitlines()[1:]}
    assert changes["aspera"].endswith('docroot: "/srv/a" -> "/srv/ø"')
    assert changes["other"].endswith('docroot: - -> "/srv/b"')
    assert changes["usr1"].endswith(
        'transfer_user: "aspera" -> "other"; acls: [] -> ["admin","internal"]')


def test_a_plan_saved_with_prune_prunes_when_carried_out(invoke, home, tmp_path):
    both = ("version: 1\ntransfer_users:\n  t1: {}\nnode_users:\n"
            "  usr1: {transfer_user: t1}\n  usr2: {transfer_user: t1}\n")
    assert invoke("apply", "-f", write(tmp_path, both, "both.yaml"), "--yes").exit_code == 0
    one = "version: 1\ntransfer_users:\n  t1: {}\nnode_users:\n  usr1: {transfer_user: t1}\n"
    saved = tmp_path / "plan.json"
    r = invoke("apply", "-f", write(tmp_path, one, "one.yaml"), "--prune", "--save-plan",
               str(saved))
    assert r.exit_code == 0, r.stderr
    r = invoke("apply", "--plan", str(saved), "--yes")  # no --prune: the plan's own
    assert r.exit_code == 0, r.stderr
    r = invoke("user", "list", "-o", "json")
    assert [u["name"] for u in json.loads(r.stdout)] == ["usr1"]


@pytest.mark.parametrize("data", [
    ["a list"],
    {"format": "another", "version": 1, "document": {"version": 1}},
    {"format": "PLAN", "version": 2, "document": {"version": 1}},
    {"format": "PLAN", "version": 1, "document": "version: 1"},
])
def test_a_file_that_is_not_a_plan_is_refused_whole(invoke, home, tmp_path, data):
    from nodecli.cli.declare import PLAN_FORMAT

    text = json.dumps(data).replace('"PLAN"', json.dumps(PLAN_FORMAT))
    plan = tmp_path / "plan.json"
    plan.write_text(text)
    r = invoke("apply", "--plan", str(plan), "--yes")
    assert (r.exit_code, r.stderr.strip()) == (
        3, f"nodecli: error: {plan}: not a nodecli plan (format {PLAN_FORMAT}, version 1)")


def _names(invoke) -> list[str]:
    return sorted(u["name"] for u in json.loads(invoke("user", "list", "-o", "json").stdout))


def _doc(*users: str) -> str:
    return "version: 1\ntransfer_users:\n  t1: {}\nnode_users:\n" + "".join(
        f"  {u}: {{transfer_user: t1}}\n" for u in users) if users else \
        "version: 1\ntransfer_users:\n  t1: {}\nnode_users: {}\n"


def test_apply_says_what_it_changed_and_how_many(invoke, home, tmp_path):
    doc = write(tmp_path, _doc("usr1"))
    r = invoke("apply", "-f", doc, "--yes", env=WIDE)
    assert r.exit_code == 0, r.stderr
    assert [line.split()[1:4] for line in r.stdout.splitlines()[1:]] == [
        ["transfer_user", "t1", "add"], ["node_user", "usr1", "add"]]
    assert r.stderr.strip().splitlines()[-1].endswith("applied 2 change(s)")
    r = invoke("apply", "-f", doc, "--yes", env=WIDE)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    assert r.stderr.strip().splitlines() == ["nothing to change"]  # said once


def test_a_saved_plan_says_where_it_went_and_how_to_carry_it_out(invoke, home, tmp_path):
    saved = tmp_path / "p.json"
    r = invoke("apply", "-f", write(tmp_path, _doc("usr1")), "--save-plan", str(saved),
               env=WIDE)
    assert r.exit_code == 0, r.stderr
    assert [line.split()[1:4] for line in r.stdout.splitlines()[1:]] == [
        ["transfer_user", "t1", "add"], ["node_user", "usr1", "add"]]
    assert r.stderr.strip().splitlines()[-1].endswith(
        f"plan saved to {saved} (2 change(s)); carry it out with: nodecli apply --plan "
        f"{saved}")
    assert json.loads(saved.read_text())["prune"] is False


def test_prune_removes_everything_apply_ever_created(invoke, home, tmp_path):
    """Objects apply made stay its own through later documents that leave them out."""
    assert invoke("apply", "-f", write(tmp_path, _doc("usr1"), "a.yaml"), "--yes").exit_code == 0
    assert invoke("apply", "-f", write(tmp_path, _doc("usr2"), "b.yaml"), "--yes").exit_code == 0
    assert _names(invoke) == ["usr1", "usr2"]
    r = invoke("apply", "-f", write(tmp_path, _doc(), "c.yaml"), "--prune", "--yes")
    assert r.exit_code == 0, r.stderr
    assert _names(invoke) == []


def test_what_prune_removed_is_no_longer_its_own(invoke, home, tmp_path):
    """A user apply removed, then made again by hand, is not apply's to remove."""
    assert invoke("apply", "-f", write(tmp_path, _doc("usr1"), "a.yaml"), "--yes").exit_code == 0
    empty = write(tmp_path, _doc(), "c.yaml")
    assert invoke("apply", "-f", empty, "--prune", "--yes").exit_code == 0
    r = invoke("user", "add", "usr1", "--xuser", "t1", "--password-stdin", input="pw-1\n")
    assert r.exit_code == 0, r.stderr
    r = invoke("apply", "-f", empty, "--prune", "--yes")
    assert r.exit_code == 0, r.stderr
    assert _names(invoke) == ["usr1"]


def test_a_plan_of_nothing_says_so_once_before_where_it_went(invoke, home, tmp_path):
    doc = write(tmp_path, _doc("usr1"))
    assert invoke("apply", "-f", doc, "--yes").exit_code == 0
    saved = tmp_path / "p.json"
    r = invoke("apply", "-f", doc, "--save-plan", str(saved))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "nothing to change",
        f"plan saved to {saved} (0 change(s)); carry it out with: nodecli apply --plan "
        f"{saved}"]
