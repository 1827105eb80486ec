"""Local destructive commands ask on a terminal, as remote ones do (a real pty)."""

from __future__ import annotations

import json
import sys

import pexpect
import pytest

from tests.conftest import REPO_ROOT, reap, spawn_stdout_to, subprocess_env


@pytest.fixture
def spawn():
    """``spawn(home, *args)``: nodecli in a real pty; closed after the test, whatever it
    did."""
    children: list[pexpect.spawn] = []

    def _spawn(home, *args: str) -> pexpect.spawn:
        children.append(pexpect.spawn(
            sys.executable, ["-m", "nodecli", *args],
            env=subprocess_env({"NODECLI_HOME": str(home), "TERM": "xterm"}),
            cwd=str(REPO_ROOT), encoding="utf-8", timeout=20))
        return children[-1]

    yield _spawn
    for child in children:
        reap(child)


def _finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def _users(invoke) -> list[str]:
    return [u["name"] for u in json.loads(invoke("user", "list", "-o", "json").stdout)]


@pytest.fixture
def two_users(invoke, home):
    invoke("xuser", "add", "x", "-r", "s3://*")
    for name in ("u1", "u2"):
        assert invoke("user", "add", name, "--xuser", "x", "--password-stdin",
                      input="pw\n").exit_code == 0
    return home


@pytest.mark.parametrize("answer,code,left", [("n", 1, ["u1", "u2"]), ("y", 0, ["u2"])])
def test_user_delete_asks(two_users, invoke, spawn, answer, code, left):
    child = spawn(two_users, "user", "delete", "u1")
    child.expect(r"Delete node user 'u1'\? \[y/N\]: ")
    child.sendline(answer)
    assert _finish(child) == code
    assert _users(invoke) == left


def test_the_question_is_on_the_terminal_when_stdout_is_a_file(two_users, invoke, tmp_path):
    """`nodecli user delete u1 > log`: the question reaches the person at the terminal
    (stderr); the file gets none of it. An empty answer is the default, no."""
    out = tmp_path / "log"
    child = spawn_stdout_to(out, ["user", "delete", "u1"],
                            subprocess_env({"NODECLI_HOME": str(two_users)}), timeout=20)
    try:
        child.expect(r"Delete node user 'u1'\? \[y/N\]: ")
        child.sendline("")
        assert _finish(child) == 1
    finally:
        reap(child)
    assert "Delete" not in out.read_text()
    assert _users(invoke) == ["u1", "u2"]


def test_xuser_delete_force_names_the_node_users_it_deletes(two_users, invoke, spawn):
    child = spawn(two_users, "xuser", "delete", "x", "--force")
    child.expect(r"Delete transfer user 'x' and its 2 node user\(s\): u1, u2\? \[y/N\]: ")
    child.sendline("")  # the default is no
    assert _finish(child) == 1
    assert _users(invoke) == ["u1", "u2"]


def test_config_import_asks_before_replacing(two_users, invoke, spawn, tmp_path):
    backup = tmp_path / "b.json"
    assert invoke("config", "export", str(backup)).exit_code == 0
    assert invoke("user", "delete", "u2", "--yes").exit_code == 0
    child = spawn(two_users, "config", "import", str(backup))
    child.expect(r"Replace all 1 node user\(s\) and 1 transfer user\(s\) with the 2 and 1 "
                 r"of .*b\.json\? \[y/N\]: ")
    child.sendline("y")
    assert _finish(child) == 0
    assert _users(invoke) == ["u1", "u2"]


def test_no_stdin_on_a_terminal_is_not_a_terminal_to_ask_on(two_users, invoke):
    """stdout and stderr on a terminal, stdin closed (``0<&-``: Python's sys.stdin is
    None): nodecli cannot ask, so it says so and exits 2, as with stdin on a pipe (it
    once took stdout's answer for stdin's and ended in "internal error: input(): lost
    sys.stdin")."""
    child = pexpect.spawn("/bin/sh", ["-c", 'exec "$0" -m nodecli user delete u1 <&-',
                                      sys.executable],
                          env=subprocess_env({"NODECLI_HOME": str(two_users), "TERM": "xterm"}),
                          cwd=str(REPO_ROOT), encoding="utf-8", timeout=20)
    try:
        assert _finish(child) == 2
        said = child.before
    finally:
        reap(child)
    assert "confirmation needed and stdin is not a terminal: use --yes" in said
    assert "internal error" not in said
    assert _users(invoke) == ["u1", "u2"]


@pytest.mark.parametrize("args,out,code,said", [
    (["user", "add", "u3", "--xuser", "x", "--password-stdin"], "", 2,
     "no password on standard input"),
    (["config", "import", "-"], "", 3, "<stdin>: invalid JSON"),
    (["user", "delete", "u1"], "", 2, "stdin is not a terminal: use --yes"),
])
def test_a_closed_stdin_reads_as_an_empty_one(two_users, invoke, args, out, code, said):
    """Descriptor 0 closed (``0<&-``, as some cron daemons start a job): Python has no
    sys.stdin, and nodecli reads it as an empty stdin, with that one-line error, never
    "internal error" (stdout and stderr on a pipe here; on a terminal above)."""
    import subprocess

    proc = subprocess.run(["/bin/sh", "-c", 'exec "$0" -m nodecli "$@" <&-', sys.executable,
                           *args], capture_output=True, text=True, timeout=60, cwd=str(REPO_ROOT),
                          env=subprocess_env({"NODECLI_HOME": str(two_users)}))
    assert (proc.returncode, proc.stdout) == (code, out), proc.stderr
    assert said in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert _users(invoke) == ["u1", "u2"]
