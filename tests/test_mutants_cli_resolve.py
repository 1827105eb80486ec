"""What the survivors of mutation testing of nodecli/cli/resolve.py showed untested
(issue 33): what a person sees on a terminal while resolved operations are watched.
In a real pseudo-terminal against the emulator's collaboration service over HTTPS (the
dialogue itself is tests/test_operations_pty.py).
"""

from __future__ import annotations

import re

from nodecli.emulator.operations import add_operation, service_state
from tests.test_operations_pty import APPLY, CONFLICT, ERROR, Pty


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
