"""What the survivors of mutation testing of nodecli/cli/resolve.py showed untested
(issue 33): what a person sees on a terminal while resolved operations are watched.
In a real pseudo-terminal against the emulator's collaboration service over HTTPS (the
dialogue itself is tests/test_operations_pty.py).
"""

from __future__ import annotations

import json
import re

from nodecli.emulator.operations import add_operation, mint_service_token, service_state
from tests.conftest import spawn_stdout_to, subprocess_env
from tests.test_operations_pty import APPLY, CONFLICT, ERROR, NEW_NAME, Pty


def test_a_resolve_on_a_terminal_shows_each_resumed_operation_on_the_live_line(emulator):
    op = add_operation(emulator.state, parent_id="100", status="stopped", folder_name="a")
    service_state(emulator.state).run_polls = 3
    p = Pty(emulator, "operations", "resolve", op.id, "--workspace", "100", "--use-existing",
            "--yes", "--interval", "0.01")
    p.expect(re.escape(f"operation {op.id} (workspace.create): running"))
    code, out = p.finish()
    assert code == 0, out


def test_each_question_says_which_operation_of_how_many(emulator):
    a = add_operation(emulator.state, parent_id="100", status="stopped", folder_name="a")
    b = add_operation(emulator.state, parent_id="100", status="stopped",
                      data={"type": "internal_server_error"})
    p = Pty(emulator, "operations", "resolve", "--workspace", "100", "--interval", "0.01")
    shown = p.answer(CONFLICT, "s")
    assert f"[1/2] operation {a.id} (workspace.create) stopped: folder conflict on 'a'" \
        in shown, shown
    p.answer(APPLY, "n")
    shown = p.answer(ERROR, "s")
    assert f"[2/2] operation {b.id} (workspace.create) stopped: internal_server_error" \
        in shown, shown
    code, out = p.finish()
    assert code == 1, out


class _StdoutToFile(Pty):
    """The dialogue of :class:`Pty` with ``operations resolve --workspace 100 -o json``,
    its stdout sent to ``out`` by a shell."""

    def __init__(self, emulator, out) -> None:
        token = mint_service_token(emulator.state, "u1", "user:all")
        env = subprocess_env({"NODECLI_SERVICE_URL": emulator.url, "NODECLI_TOKEN": token,
                              "TERM": "xterm"})
        args = ["operations", "resolve", "--workspace", "100", "--interval", "0.01",
                "-o", "json"]
        self.child = spawn_stdout_to(out, args, env, timeout=15, dimensions=(40, 120))
        self.transcript = []


def _folder_conflicts(emulator, *folders: str) -> list:
    """A stopped operation of workspace 100 with a folder conflict on each of ``folders``."""
    return [add_operation(emulator.state, parent_id="100", status="stopped", folder_name=f)
            for f in folders]


def test_the_questions_go_to_the_terminal_and_only_the_summary_to_stdout(emulator, tmp_path):
    """stdout to a file (as `> summary.json`): every question, hint and head line is on
    stderr, the terminal; an answer that is none is met with the keys there are."""
    a = add_operation(emulator.state, parent_id="100", status="stopped", folder_name="a")
    b = add_operation(emulator.state, parent_id="100", status="stopped",
                      data={"type": "internal_server_error"})
    out = tmp_path / "summary.json"
    p = _StdoutToFile(emulator, out)
    p.answer(CONFLICT, "what")
    shown = p.answer(CONFLICT, "r")
    assert "  please answer u / r / t / s" in shown, shown
    p.answer(NEW_NAME, "a/b")
    shown = p.answer(NEW_NAME, "a2")
    assert "must not contain '/' or '\\'; try again" in shown, shown
    p.answer(APPLY, "n")
    p.answer(ERROR, "u")
    shown = p.answer(ERROR, "s")
    assert "  please answer t / s" in shown, shown
    code, _ = p.finish()
    assert code == 1
    rows = json.loads(out.read_text())
    assert [(r["operation"], r["choice"]) for r in rows] == [(a.id, "rename to 'a2'"),
                                                             (b.id, "skip")]


def test_a_choice_applied_to_all_is_said_on_the_terminal_not_in_the_summary(emulator,
                                                                           tmp_path):
    """stdout to a file: each later conflict's line, "-> ... (applied to all)", is on the
    terminal (the rename's too, before its own name is asked); the file is the summary."""
    a, b, c = _folder_conflicts(emulator, "a", "b", "c")
    out = tmp_path / "summary.json"
    p = _StdoutToFile(emulator, out)
    p.answer(CONFLICT, "r")
    p.answer(NEW_NAME, "a2")
    p.answer(APPLY, "y")
    shown = p.answer(NEW_NAME, "b2")
    assert (f"[2/3] operation {b.id} (workspace.create) stopped: folder conflict on 'b'"
            " -> rename (applied to all)") in shown, shown
    shown = p.answer(NEW_NAME, "c2")
    assert f"[3/3] operation {c.id} (workspace.create) stopped: folder conflict on 'c'" \
        " -> rename (applied to all)" in shown, shown
    code, _ = p.finish()
    assert code == 0
    rows = json.loads(out.read_text())
    assert [(r["operation"], r["choice"]) for r in rows] == [
        (a.id, "rename to 'a2'"), (b.id, "rename to 'b2'"), (c.id, "rename to 'c2'")]


def test_use_existing_applied_to_all_is_said_on_the_terminal(emulator, tmp_path):
    a, b = _folder_conflicts(emulator, "a", "b")
    out = tmp_path / "summary.json"
    p = _StdoutToFile(emulator, out)
    p.answer(CONFLICT, "u")
    p.answer(APPLY, "y")
    code, shown = p.finish()
    assert code == 0
    assert (f"[2/2] operation {b.id} (workspace.create) stopped: folder conflict on 'b'"
            " -> use existing folder (applied to all)") in shown, shown
    rows = json.loads(out.read_text())
    assert [(r["operation"], r["choice"]) for r in rows] == [
        (a.id, "use existing folder"), (b.id, "use existing folder")]
