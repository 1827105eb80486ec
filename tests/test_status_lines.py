"""What a person sees while waiting: retry status lines, tail progress, cleartext warnings.

Live lines are drawn only on a terminal, so these run nodecli in a real pseudo-terminal.
"""

from __future__ import annotations

import socket
import sys

import pexpect
import pytest

from nodecli.http.checks import in_clear
from nodecli.http.client import Auth, Endpoint
from tests.conftest import REPO_ROOT, reap, subprocess_env


def _spawn(env: dict[str, str], *args: str) -> pexpect.spawn:
    return pexpect.spawn(sys.executable, ["-m", "nodecli", *args],
                         env=subprocess_env(dict(env, TERM="xterm")), cwd=str(REPO_ROOT),
                         encoding="utf-8", timeout=30, dimensions=(24, 120))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed


def test_a_one_shot_command_says_it_is_retrying(home):
    env = {"NODECLI_URL": f"https://127.0.0.1:{_closed_port()}", "NODECLI_USER": "admin",
           "NODECLI_PASSWORD": "x", "NODECLI_HOME": str(home)}
    child = _spawn(env, "node", "info")
    child.expect(r"retry 1 of 3 in \d+ s")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 6
    assert "after 4 attempts" in child.before


def test_no_status_line_when_stderr_is_not_a_terminal(invoke, home):
    env = {"NODECLI_URL": f"https://127.0.0.1:{_closed_port()}", "NODECLI_USER": "admin",
           "NODECLI_PASSWORD": "x"}
    r = invoke("node", "info", env=env)
    assert r.exit_code == 6
    assert "retry 1 of" not in r.stderr and "\r" not in r.stderr


def test_tail_into_a_file_shows_quiet_progress_on_a_terminal(node_env, log, tmp_path):
    log.generate(30)
    out = tmp_path / "events.jsonl"
    child = _spawn(node_env, "events", "tail", "-f", "--to", str(out), "--since", "1h",
                   "--interval", "0.2")
    try:
        child.expect("30 events written; last event 20")
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        reap(child)
    child.close()
    assert child.exitstatus == 130
    assert len(out.read_text().splitlines()) == 30


@pytest.mark.parametrize("url,kind,clear", [
    ("http://node.example:9092", "basic", True),
    ("http://10.1.2.3:9092", "bearer", True),
    ("http://[2001:db8::1]:9092", "basic", True),
    ("http://node.example:9092", "none", False),
    ("https://node.example:9092", "basic", False),
    ("http://localhost:9092", "basic", False),
    ("http://api.localhost:9092", "basic", False),
    ("http://127.0.0.2:9092", "basic", False),
    ("http://[::1]:9092", "basic", False),
])
def test_credentials_in_clear_are_only_those_leaving_the_machine(url, kind, clear):
    assert in_clear(Endpoint(url, Auth(kind))) is clear


def test_plain_http_to_another_host_warns_once(invoke):
    env = {"NODECLI_URL": "http://node.invalid:9092", "NODECLI_USER": "admin",
           "NODECLI_PASSWORD": "x"}
    r = invoke("node", "info", env=env)
    assert r.exit_code == 6
    assert r.stderr.count("over plain http://, unencrypted") == 1


def test_plain_http_to_this_machine_does_not_warn(invoke, plain_emulator, home):
    env = {"NODECLI_URL": plain_emulator.url, "NODECLI_USER": "admin",
           "NODECLI_PASSWORD": "admin-pass"}
    r = invoke("node", "info", env=env)
    assert r.exit_code == 0, r.stderr
    assert "unencrypted" not in r.stderr
