"""The interactive resolve flow, driven in a real pseudo-terminal (pexpect)."""

from __future__ import annotations

import re
import sys

import pexpect
import pytest

from nodecli.emulator.operations import add_operation, mint_service_token, service_state
from tests.conftest import REPO_ROOT, subprocess_env

CONFLICT = re.escape("[u]se existing folder, [r]ename, re[t]ry, [s]kip: ")
ERROR = re.escape("re[t]ry, [s]kip: ")
APPLY = re.escape("Apply this choice to all remaining conflicts? [y/N]: ")
NEW_NAME = re.escape("New folder name: ")


class Pty:
    def __init__(self, emulator, *args: str) -> None:
        token = mint_service_token(emulator.state, "u1", "user:all")
        env = subprocess_env({"NODECLI_SERVICE_URL": emulator.url, "NODECLI_TOKEN": token,
                              "TERM": "xterm"})
        self.child = pexpect.spawn(sys.executable, ["-m", "nodecli", *args], env=env,
                                   cwd=str(REPO_ROOT), encoding="utf-8", timeout=15,
                                   dimensions=(40, 120))
        self.transcript: list[str] = []

    def expect(self, pattern: str) -> str:
        self.child.expect(pattern)
        self.transcript.append(self.child.before + self.child.after)
        return self.child.before

    def answer(self, pattern: str, text: str) -> str:
        before = self.expect(pattern)
        self.child.sendline(text)
        return before

    def finish(self) -> tuple[int, str]:
        self.child.expect(pexpect.EOF)
        self.transcript.append(self.child.before)
        self.child.close()
        code = self.child.exitstatus
        if code is None:  # killed by a signal
            code = 128 + (self.child.signalstatus or 0)
        return code, "".join(self.transcript)


def _stopped(emulator, folder: str, **kw):
    return add_operation(emulator.state, status="stopped", folder_name=folder,
                         parent_id=kw.pop("parent_id", "100"), **kw)


def _puts(emulator):
    return service_state(emulator.state).put_bodies


def test_each_choice_sends_its_body_and_rename_is_validated(emulator):
    a = _stopped(emulator, "alpha")
    b = _stopped(emulator, "beta")
    c = _stopped(emulator, "gamma")
    d = _stopped(emulator, "delta", data={"type": "internal_server_error"})
    p = Pty(emulator, "operations", "resolve", "--workspace", "100", "--interval", "0.01")
    shown = p.answer(CONFLICT, "u")
    assert "operation 1 (workspace.create) stopped: folder conflict on 'alpha'" in shown
    p.answer(APPLY, "n")
    p.answer(CONFLICT, "what")  # not an answer: asked again
    p.answer(CONFLICT, "r")
    p.answer(NEW_NAME, "")
    for bad in ("a/b", "..", "x\x01y"):
        p.answer(NEW_NAME, bad)
    p.answer(NEW_NAME, "beta 2")
    p.answer(APPLY, "")  # default: no
    p.answer(CONFLICT, "t")
    p.answer(APPLY, "n")
    shown = p.answer(ERROR, "t")
    assert "internal_server_error" in shown
    code, out = p.finish()
    assert code == 0, out
    assert "the folder name is empty" in out
    assert "must not contain '/'" in out
    assert "'..' is not a folder name" in out
    assert "control characters" in out
    assert _puts(emulator) == [
        (a.id, {"use_existing": True, "retry": True, "apply_to_all": False}),
        (b.id, {"folder_name": "beta 2", "retry": True, "apply_to_all": False}),
        (c.id, {"retry": True, "apply_to_all": False}),
        (d.id, {"retry": True}),
    ]
    assert re.search(r"1\s+use existing folder\s+success", out)
    assert re.search(r"2\s+rename to 'beta 2'\s+success", out)


def test_apply_to_all_stops_further_prompts(emulator):
    ops = [_stopped(emulator, f"f{i}") for i in range(3)]
    p = Pty(emulator, "operations", "resolve", "--workspace", "100", "--interval", "0.01")
    p.answer(CONFLICT, "u")
    p.answer(APPLY, "y")
    code, out = p.finish()
    assert code == 0, out
    assert out.count("[s]kip:") == 1
    assert out.count("(applied to all)") == 2
    assert _puts(emulator) == [(op.id, {"use_existing": True, "retry": True, "apply_to_all": True})
                               for op in ops]


def test_rename_applied_to_all_still_asks_each_new_name(emulator):
    a = _stopped(emulator, "a")
    b = _stopped(emulator, "b")
    p = Pty(emulator, "operations", "resolve", "--workspace", "100", "--interval", "0.01")
    p.answer(CONFLICT, "r")
    p.answer(NEW_NAME, "a2")
    p.answer(APPLY, "y")
    p.answer(NEW_NAME, "b2")
    code, out = p.finish()
    assert code == 0, out
    assert out.count("[s]kip:") == 1 and out.count("Apply this choice") == 1
    assert _puts(emulator) == [(a.id, {"folder_name": "a2", "retry": True, "apply_to_all": True}),
                               (b.id, {"folder_name": "b2", "retry": True, "apply_to_all": True})]


def test_skip_sends_nothing_and_exit_reflects_it(emulator):
    a = _stopped(emulator, "a")
    b = _stopped(emulator, "b")
    p = Pty(emulator, "operations", "resolve", "--workspace", "100", "--interval", "0.01")
    p.answer(CONFLICT, "s")
    p.answer(APPLY, "n")
    p.answer(CONFLICT, "t")
    p.answer(APPLY, "n")
    code, out = p.finish()
    assert code == 1, out
    assert _puts(emulator) == [(b.id, {"retry": True, "apply_to_all": False})]
    assert service_state(emulator.state).operations[a.id].status == "stopped"
    assert "1 of 2 operation(s) did not end in success" in out


def test_ctrl_c_leaves_remaining_operations_untouched(emulator):
    ops = [_stopped(emulator, f"f{i}") for i in range(3)]
    p = Pty(emulator, "operations", "resolve", "--workspace", "100", "--interval", "0.01")
    p.answer(CONFLICT, "u")
    p.answer(APPLY, "n")
    p.expect(CONFLICT)
    p.child.sendintr()
    code, out = p.finish()
    assert code == 130, out
    assert ("nodecli: interrupted: 1 operation(s) had been sent a resolution; the remaining "
            "ones were left untouched\r\n") in out, out
    assert _puts(emulator) == [
        (ops[0].id, {"use_existing": True, "retry": True, "apply_to_all": False})]
    states = service_state(emulator.state).operations
    assert [states[op.id].status for op in ops[1:]] == ["stopped", "stopped"]


def test_second_conflict_after_resume_is_asked_again(emulator):
    op = _stopped(emulator, "Shared", conflicts=1)
    p = Pty(emulator, "operations", "resolve", "--workspace", "100", "--interval", "0.01")
    p.answer(CONFLICT, "u")
    p.answer(APPLY, "n")
    shown = p.answer(CONFLICT, "r")  # the resumed operation stopped on a second conflict
    assert "folder conflict on 'Shared'" in shown
    p.answer(NEW_NAME, "Shared-2")
    p.answer(APPLY, "n")
    code, out = p.finish()
    assert code == 0, out
    assert _puts(emulator) == [
        (op.id, {"use_existing": True, "retry": True, "apply_to_all": False}),
        (op.id, {"folder_name": "Shared-2", "retry": True, "apply_to_all": False})]
    assert re.search(r"1\s+use existing folder, then rename to 'Shared-2'\s+success", out)


def test_second_conflict_skipped_ends_stopped(emulator):
    op = _stopped(emulator, "Shared", conflicts=1)
    p = Pty(emulator, "operations", "resolve", "--workspace", "100", "--interval", "0.01")
    p.answer(CONFLICT, "t")
    p.answer(APPLY, "n")
    p.answer(CONFLICT, "s")
    p.answer(APPLY, "n")
    code, out = p.finish()
    assert code == 1, out
    assert _puts(emulator) == [(op.id, {"retry": True, "apply_to_all": False})]
    assert re.search(r"1\s+retry, then skip\s+stopped\s+skipped \(folder_conflict", out)
    assert service_state(emulator.state).operations[op.id].status == "stopped"


def test_workspace_create_wait_offers_resolve(emulator):
    p = Pty(emulator, "workspaces", "create", "--name", "conflict-docs", "--wait",
            "--interval", "0.01")
    p.answer(re.escape("Resolve it now? [Y/n]: "), "")
    p.answer(CONFLICT, "r")
    p.answer(NEW_NAME, "docs-2")
    p.answer(APPLY, "n")
    code, out = p.finish()
    assert code == 0, out
    (op_id, body), = _puts(emulator)
    assert body == {"folder_name": "docs-2", "retry": True, "apply_to_all": False}
    assert service_state(emulator.state).operations[op_id].status == "success"


@pytest.mark.slow
def test_watch_shows_spinner_with_elapsed_time_on_a_terminal(emulator):
    # Event-driven: the operation stays running until the spinner has shown the elapsed
    # seconds counting up; only then does the test let it succeed (no race with the clock).
    op = add_operation(emulator.state, parent_id="100", polls=1_000_000)
    p = Pty(emulator, "operations", "watch", op.id, "--workspace", "100", "--interval", "1.1")
    p.expect(re.escape("operation 1 (workspace.create): running · 0s"))
    p.expect(re.escape("operation 1 (workspace.create): running · 1s"))
    p.expect(re.escape("operation 1 (workspace.create): running · 2s"))
    with emulator.state.lock:
        service_state(emulator.state).operations[op.id].polls_left = 0
    code, out = p.finish()
    assert code == 0, out
    assert "operation 1: success" in out
    assert len(service_state(emulator.state).requests) >= 3


def test_apply_to_all_flag_on_a_terminal_skips_the_question(emulator):
    ops = [_stopped(emulator, f"f{i}") for i in range(2)]
    p = Pty(emulator, "operations", "resolve", "--workspace", "100", "--apply-to-all",
            "--interval", "0.01")
    p.answer(CONFLICT, "t")
    code, out = p.finish()
    assert code == 0, out
    assert "Apply this choice" not in out
    assert _puts(emulator) == [(op.id, {"retry": True, "apply_to_all": True}) for op in ops]


def test_token_prompt_on_a_terminal(emulator):
    token = mint_service_token(emulator.state, "u1", "user:all")
    add_operation(emulator.state, status="success")
    env = subprocess_env({"NODECLI_SERVICE_URL": emulator.url})
    child = pexpect.spawn(sys.executable, ["-m", "nodecli", "operations", "list"], env=env,
                          cwd=str(REPO_ROOT), encoding="utf-8", timeout=15)
    child.expect("Access token: ")
    child.sendline(token)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert token not in child.before  # hidden input
    assert "workspace 100  success" in child.before


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "rich"])
def test_operations_list_fits_80_columns_and_wide_shows_all(emulator, colour):
    """Low-value columns are left out first; ids, statuses and times stay whole."""
    ops = [_stopped(emulator, "the quarterly reports of the whole northern region"),
           _stopped(emulator, "Projects", parent_id="1234567")]
    token = mint_service_token(emulator.state, "u1", "user:all")
    env = subprocess_env({"NODECLI_SERVICE_URL": emulator.url, "NODECLI_TOKEN": token,
                          "TERM": "xterm"})
    if colour:
        env.pop("NO_COLOR", None)

    def run(*extra: str) -> str:
        child = pexpect.spawn(sys.executable, ["-m", "nodecli", "operations", "list", *extra],
                              env=env, cwd=str(REPO_ROOT), encoding="utf-8", timeout=15,
                              dimensions=(40, 80))
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, child.before
        return re.sub(r"\x1b\[[0-9;]*m", "", child.before).replace("\r", "")

    text = run()
    table = [line for line in text.splitlines() if line and not line.startswith("left out")]
    assert all(len(line) <= 80 for line in table), table
    left = re.search(r"left out to fit the terminal: (.*) \(-o wide shows them\)", text)
    # the conflict folder (cut with '…') gives way before the user column is left out
    assert left is not None and {"updated"} <= set(left.group(1).split(", "))
    assert "updated" not in table[0]
    rows = "\n".join(table)
    for op in ops:  # id, status and time whole, on the op's first line
        assert re.search(rf"^{op.id}\s+.*\bstopped\b.*\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s*$",
                         rows, re.M), rows
    wide = run("-o", "wide")
    assert "left out" not in wide
    head = wide.splitlines()[0] if not colour else wide
    assert "updated" in head and "user" in head and "type" in head
