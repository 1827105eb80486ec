"""cli/declare.py at the edges its second mutation run found untested: what `apply
--dry-run` shows of the config, the names of the steps an apply that stopped lists, a
saved plan (refused when the node or its own prune flag changed; its files found from
anywhere), secrets given as references, and the size bounds of a document and a plan."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from nodecli.emulator.server import secret_digest
from tests.conftest import REPO_ROOT, reap, subprocess_env
from tests.test_declare import node, write  # noqa: F401 - node is a fixture

LOCAL_ONLY = "version: 1\ntransfer_users:\n  t1: {}\n  t2: {}\n"


def test_a_dry_run_apply_shows_the_config_diff_against_the_config_as_it_is(invoke, home,
                                                                             tmp_path):
    assert invoke("xuser", "add", "old", "-r", "file:////old/*").exit_code == 0
    before = (home / "config.toml").read_bytes()
    r = invoke("--dry-run", "apply", "-f", write(tmp_path, LOCAL_ONLY))
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert f"would change {home / 'config.toml'}:" in out
    assert "+[transfer_users.t1]" in out and "+[transfer_users.t2]" in out
    assert "+[transfer_users.old]" not in out  # a diff from the file, not from nothing
    assert "nothing to change" not in out
    assert out.rstrip().endswith("nothing was sent or written (--dry-run)")
    assert (home / "config.toml").read_bytes() == before


def test_a_dry_run_apply_with_no_config_yet_shows_every_line_added(invoke, home,
                                                                    tmp_path):
    assert not (home / "config.toml").exists()
    r = invoke("--dry-run", "apply", "-f", write(tmp_path, LOCAL_ONLY))
    assert r.exit_code == 0, r.stderr
    diff = [line for line in r.stdout.splitlines()
            if line[:1] in "+- " and not line.startswith(("+++", "---"))]
    assert diff and all(line.startswith("+") for line in diff), diff
    assert not (home / "config.toml").exists()


def test_a_dry_run_apply_with_nothing_to_change_says_so(invoke, home, tmp_path):
    f = write(tmp_path, LOCAL_ONLY)
    assert invoke("apply", "-f", f).exit_code == 0
    r = invoke("--dry-run", "apply", "-f", f)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == ["nothing to change",
                                     "nothing was sent or written (--dry-run)"]


def test_a_dry_run_apply_with_prune_shows_the_local_removals(invoke, home, tmp_path):
    both = ("version: 1\ntransfer_users:\n  t1: {}\nnode_users:\n"
            "  usr1: {transfer_user: t1}\n  usr2: {transfer_user: t1}\n")
    assert invoke("apply", "-f", write(tmp_path, both, "both.yaml")).exit_code == 0
    one = "version: 1\ntransfer_users:\n  t1: {}\nnode_users:\n  usr1: {transfer_user: t1}\n"
    r = invoke("--dry-run", "apply", "-f", write(tmp_path, one, "one.yaml"), "--prune")
    assert r.exit_code == 0, r.stderr
    assert "-[users.usr2]" in r.stdout
    assert "-[users.usr1]" not in r.stdout


def test_a_dry_run_apply_of_node_changes_alone_shows_no_config_and_keeps_text(
        node, invoke, home, tmp_path):  # noqa: F811
    doc = ("version: 1\naccess_keys:\n  ak1:\n    storage: {type: local, path: /data}\n"
           "    permissions:\n      - {path: /projects, user: zoë, levels: [list]}\n")
    r = invoke("--dry-run", "apply", "-f", write(tmp_path, doc))
    assert r.exit_code == 0, r.stderr
    assert "would send: POST /access_keys" in r.stdout
    assert '"access_id": "zoë"' in r.stdout  # text as it is, not \u00eb
    assert "would change" not in r.stdout and "config.toml" not in r.stdout


def _stopped_apply(node, invoke, tmp_path, local: str, name: str = "doc.yaml",  # noqa: F811
                   *extra: str):
    """An apply whose first permission request fails (500, not retried): the local
    additions and the new access key before it are done; the permission and the local
    removals after it are not. The lines that say so."""
    doc = local + ("access_keys:\n  ak1:\n    storage: {type: local, path: /data}\n"
                   "    permissions:\n      - {path: /projects, user: alice, levels: [list]}\n")
    node.faults.path_prefix = "/permissions"
    node.faults.push("500")
    try:
        r = invoke("apply", "-f", write(tmp_path, doc, name), "--yes", *extra)
    finally:
        node.faults.clear()
    assert r.exit_code == 6, r.stderr
    return [line.strip() for line in r.stderr.splitlines() if line.startswith("  ")]


NODE_STEPS = ["done: add access key ak1 on emu",
              "not done: add permission ak1 /projects user alice on emu"]


@pytest.mark.parametrize("users, shown", [
    (3, "done: add transfer user t1, add transfer user t2, add transfer user t3"),
    (4, "done: add transfer user t1, add transfer user t2, add transfer user t3 "
        "(and 1 more local)"),
    (6, "done: add transfer user t1, add transfer user t2, add transfer user t3 "
        "(and 3 more local)"),
])
def test_a_stopped_apply_names_three_local_changes_and_counts_the_rest(
        node, invoke, tmp_path, users, shown):  # noqa: F811
    local = "version: 1\ntransfer_users:\n" + "".join(
        f"  t{i}: {{}}\n" for i in range(1, users + 1))
    assert _stopped_apply(node, invoke, tmp_path, local) == [shown, *NODE_STEPS]


def test_a_stopped_apply_counts_the_local_removals_not_done(node, invoke,  # noqa: F811
                                                            tmp_path):
    many = "version: 1\ntransfer_users:\n  t1: {}\nnode_users:\n" + "".join(
        f"  usr{i}: {{transfer_user: t1}}\n" for i in range(1, 6))
    assert invoke("apply", "-f", write(tmp_path, many, "many.yaml")).exit_code == 0
    lines = _stopped_apply(node, invoke, tmp_path,
                           "version: 1\ntransfer_users:\n  t1: {}\nnode_users: {}\n",
                           "none.yaml", "--prune")
    assert lines == [*NODE_STEPS,
                     "not done: remove node user usr1, remove node user usr2, "
                     "remove node user usr3 (and 2 more local)"]


def test_a_saved_plan_is_refused_when_the_node_changed_under_it(node, invoke,  # noqa: F811
                                                                 tmp_path):
    doc = "version: 1\naccess_keys:\n  ak1:\n    storage: {type: local, path: /data}\n"
    plan = tmp_path / "p.plan"
    assert invoke("apply", "-f", write(tmp_path, doc), "--save-plan",
                  str(plan)).exit_code == 0
    node.add_access_key("ak1", "made-elsewhere")  # the node moved
    node.state.access_keys["ak1"].storage = {"type": "local", "path": "/data"}
    r = invoke("apply", "--plan", str(plan))
    assert r.exit_code == 1 and "the plan is stale" in r.stderr, r.stderr


def test_a_saved_plan_whose_prune_flag_was_edited_is_refused(invoke, home, tmp_path):
    both = ("version: 1\ntransfer_users:\n  t1: {}\nnode_users:\n"
            "  usr1: {transfer_user: t1}\n  usr2: {transfer_user: t1}\n")
    assert invoke("apply", "-f", write(tmp_path, both, "both.yaml")).exit_code == 0
    one = "version: 1\ntransfer_users:\n  t1: {}\nnode_users:\n  usr1: {transfer_user: t1}\n"
    plan = tmp_path / "p.plan"
    assert invoke("apply", "-f", write(tmp_path, one, "one.yaml"), "--save-plan",
                  str(plan)).exit_code == 0
    saved = json.loads(plan.read_text())
    assert saved["prune"] is False
    plan.write_text(json.dumps({**saved, "prune": True}))
    r = invoke("apply", "--plan", str(plan), "--yes")
    assert r.exit_code == 1 and "the plan is stale" in r.stderr, r.stderr
    assert "usr2" in invoke("user", "list").stdout


def test_a_saved_plan_finds_the_documents_files_from_another_folder(
        node, invoke, tmp_path, monkeypatch):  # noqa: F811
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ak1.secret").write_text("from-the-file\n")
    doc = ("version: 1\naccess_keys:\n  ak1:\n    storage: {type: local, path: /data}\n"
           "    secret: file:ak1.secret\n")
    plan = tmp_path / "p.plan"
    assert invoke("apply", "-f", write(docs, doc), "--save-plan", str(plan)).exit_code == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    r = invoke("apply", "--plan", str(plan))
    assert r.exit_code == 0, r.stderr
    assert node.state.access_keys["ak1"].secret_digest == secret_digest("from-the-file")


def test_apply_takes_a_secret_from_a_file_beside_the_document(node, invoke, tmp_path,  # noqa: F811
                                                              monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ak1.secret").write_text("beside-the-document\n")
    doc = ("version: 1\naccess_keys:\n  ak1:\n    storage: {type: local, path: /data}\n"
           "    secret: file:ak1.secret\n")
    f = write(docs, doc)
    monkeypatch.chdir(tmp_path)
    r = invoke("apply", "-f", f)
    assert r.exit_code == 0, r.stderr
    assert node.state.access_keys["ak1"].secret_digest == secret_digest(
        "beside-the-document")


def test_apply_takes_a_secret_from_stdin(node, invoke, tmp_path):  # noqa: F811
    doc = ("version: 1\naccess_keys:\n  ak1:\n    storage: {type: local, path: /data}\n"
           "    secret: stdin\n")
    r = invoke("apply", "-f", write(tmp_path, doc), input="from-stdin\n")
    assert r.exit_code == 0, r.stderr
    assert node.state.access_keys["ak1"].secret_digest == secret_digest("from-stdin")
    assert "from-stdin" not in r.stdout + r.stderr


def test_a_changed_mapping_is_shown_as_compact_json(node, invoke, tmp_path):  # noqa: F811
    doc = ("version: 1\naccess_keys:\n  ak1:\n    storage: {type: local, path: /data}\n"
           "    configuration: {transfer: {a: 1, b: [x]}}\n")
    assert invoke("apply", "-f", write(tmp_path, doc)).exit_code == 0
    changed = doc.replace("a: 1", "a: 2")
    r = invoke("diff", "-f", write(tmp_path, changed, "changed.yaml"),
               env={"COLUMNS": "300"})
    assert r.exit_code == 1, r.stderr
    assert ('configuration.transfer: {"a":1,"b":["x"]} -> {"a":2,"b":["x"]}'
            in r.stdout), r.stdout


# -- size bounds --------------------------------------------------------------------------


def test_a_document_on_stdin_at_its_size_bound(invoke, home, monkeypatch):
    from nodecli.declare import document

    text = "version: 1\ntransfer_users: {t1: {}}"
    monkeypatch.setattr(document, "MAX_DOCUMENT_BYTES", len(text))
    r = invoke("diff", "-f", "-", input=text)  # exactly the bound: read whole
    assert r.exit_code == 1, r.stderr
    r = invoke("diff", "-f", "-", input=text + " ")
    assert r.exit_code == 2
    assert r.stderr.strip().endswith(f"<stdin>: larger than {len(text)} bytes"), r.stderr


def test_a_document_file_over_its_bound_is_named_a_document(invoke, home, tmp_path,
                                                             monkeypatch):
    from nodecli.declare import document

    f = write(tmp_path, LOCAL_ONLY)
    monkeypatch.setattr(document, "MAX_DOCUMENT_BYTES", len(LOCAL_ONLY) - 1)
    r = invoke("diff", "-f", f)
    assert r.exit_code == 2
    assert f"document {f} is larger than {len(LOCAL_ONLY) - 1} bytes" in r.stderr, r.stderr


def test_a_plan_over_its_bound_is_named_a_plan(invoke, home, tmp_path, monkeypatch):
    from nodecli.cli import declare

    plan = tmp_path / "p.plan"
    assert invoke("apply", "-f", write(tmp_path, LOCAL_ONLY), "--save-plan",
                  str(plan)).exit_code == 0
    size = plan.stat().st_size
    monkeypatch.setattr(declare, "MAX_PLAN_BYTES", size - 1)
    r = invoke("apply", "--plan", str(plan))
    assert r.exit_code == 2
    assert f"plan {plan} is larger than {size - 1} bytes" in r.stderr, r.stderr
    monkeypatch.setattr(declare, "MAX_PLAN_BYTES", size)
    r = invoke("apply", "--plan", str(plan))  # exactly the bound
    assert r.exit_code == 0, r.stderr


def test_an_endless_stdin_is_refused_at_the_documents_bound(home):
    """`yes | nodecli diff -f -` ends with an error once the bound is passed, instead
    of reading until memory runs out."""
    from nodecli.declare.document import MAX_DOCUMENT_BYTES

    proc = subprocess.Popen([sys.executable, "-m", "nodecli", "diff", "-f", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=REPO_ROOT,
                            env=subprocess_env({"NODECLI_HOME": str(home)}))
    sent = [0]

    def feed() -> None:
        chunk = b"# " + b"y" * 65533 + b"\n"
        try:
            while True:  # until nodecli stops reading
                proc.stdin.write(chunk)  # type: ignore[union-attr]
                sent[0] += len(chunk)
        except (BrokenPipeError, ValueError, OSError):
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        err = proc.stderr.read()  # type: ignore[union-attr]
        assert proc.wait(timeout=120) == 2
    finally:
        reap(proc)
    assert f"<stdin>: larger than {MAX_DOCUMENT_BYTES} bytes" in err.decode(), err[-300:]
    assert sent[0] >= MAX_DOCUMENT_BYTES


def test_a_document_on_stdin_finds_its_files_from_the_current_folder(
        node, invoke, tmp_path, monkeypatch):  # noqa: F811
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "ak1.pem").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    doc = ("version: 1\naccess_keys:\n  ak1:\n    storage: {type: local, path: /data}\n"
           "    verification_key: {file: ak1.pem}\n")
    assert invoke("apply", "-f", write(tmp_path, doc)).exit_code == 0
    monkeypatch.chdir(tmp_path)
    r = invoke("diff", "-f", "-", input=doc)  # ak1.pem from here: nothing to change
    assert r.exit_code == 0, r.stderr + r.stdout
