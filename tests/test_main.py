"""The entry point: one mapping from failures to exit codes, quiet broken pipes."""

from __future__ import annotations

import subprocess

import pytest

from nodecli.config.model import NodeUser, TransferUser
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore
from nodecli.errors import ExitCode
from nodecli.users.passwords import hash_password
from tests.conftest import nodecli_cmd, reap, subprocess_env


def _many_users(home, n: int) -> None:
    digest = hash_password("pw-for-all", log_n=4)
    with ConfigStore(resolve_paths(home)).edit() as cfg:
        cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
        for i in range(n):
            name = f"user{i:05d}"
            cfg.users[name] = NodeUser(name, "xfer", digest, ["admin"])


def test_closed_stdout_exits_141_without_a_word(home):
    # far more than a pipe buffer (64 KiB), so the writer meets EPIPE mid-output
    _many_users(home, 3000)
    proc = subprocess.Popen(nodecli_cmd("user", "list", "-o", "json"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=subprocess_env())
    try:
        assert proc.stdout is not None
        proc.stdout.read(100)  # the reader takes a little, then goes away, like `| head -c100`
        proc.stdout.close()
        _, err = proc.communicate(timeout=60)
    finally:
        reap(proc)
    assert proc.returncode == ExitCode.BROKEN_PIPE
    assert err == b""


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["user", "--help"], ["user"],
                                  ["help", "user"], ["user", "list", "-o", "json"]])
def test_a_stdout_with_no_reader_at_all_exits_141_without_a_word(home, argv):
    """The reader is gone before nodecli starts (the read end closed first): whatever
    writes first (click's eager --help and --version while the arguments are parsed, a
    command, or the last flush of a short output) meets EPIPE, and the exit is 141."""
    import os

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(nodecli_cmd(*argv), stdout=write_end, stderr=subprocess.PIPE,
                              env=subprocess_env(), timeout=60)
    finally:
        os.close(write_end)
    assert (proc.returncode, proc.stderr) == (ExitCode.BROKEN_PIPE, b"")


def test_help_and_version_on_stdout_exit_0(invoke):
    r = invoke("--help")
    assert r.exit_code == 0 and "Classic flags" in r.stdout and r.stderr == ""
    r = invoke("-A")
    assert r.exit_code == 0 and r.stdout.startswith("nodecli ")


def test_usage_errors_are_one_line_plus_a_hint(invoke):
    r = invoke("--bogus")
    assert r.exit_code == ExitCode.USAGE and r.stdout == ""
    assert r.stderr.splitlines() == [
        "nodecli: error: No such option '--bogus'. (Did you mean one of: '--user', "
        "'--verbose'?)",
        "hint: see 'nodecli --help'",
    ]
    r = invoke("user", "add")
    assert r.exit_code == ExitCode.USAGE
    assert r.stderr.splitlines() == ["nodecli: error: Missing argument 'NAME'.",
                                     "hint: see 'nodecli user add --help'"]


def test_classic_flags_refused_with_a_subcommand(invoke):
    r = invoke("-l", "user", "list")
    assert r.exit_code == ExitCode.USAGE and "cannot be combined" in r.stderr


def test_damaged_config_is_exit_3_with_the_file_named(invoke, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("version = 1\n[users\n")
    r = invoke("user", "list")
    assert r.exit_code == ExitCode.CONFIG
    assert str(home / "config.toml") in r.stderr and "Traceback" not in r.stderr


def test_profile_listings_stay_local_and_light(home, tmp_path):
    """`node list` / `service list` read the config only: no HTTP, crypto, rich or keyring
    import (the secret store is opened only for a profile that keeps its token there)."""
    import sys

    from nodecli.config.model import NodeProfile, ServiceProfile
    from tests.conftest import REPO_ROOT

    token_file = tmp_path / "svc.tok"
    token_file.write_text("opaque-token\n")
    with ConfigStore(resolve_paths(home)).edit() as cfg:
        cfg.nodes["n"] = NodeProfile("n", "https://node:9092", user="admin")
        cfg.services["s"] = ServiceProfile("s", "https://svc:443", token_file=str(token_file))
    code = (
        "import sys, io\n"
        "from nodecli.cli.main import run\n"
        "real, sys.stdout = sys.stdout, io.StringIO()\n"
        "rcs = [run(['node', 'list']), run(['service', 'list', '-o', 'json'])]\n"
        "out, sys.stdout = sys.stdout.getvalue(), real\n"
        "heavy = ('httpx2', 'httpcore', 'cryptography', 'rich', 'keyring', 'ssl')\n"
        "print(rcs, sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in heavy}))\n"
        "print(out)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=subprocess_env(),
                          capture_output=True, text=True, timeout=60, cwd=str(REPO_ROOT))
    first, _, rest = proc.stdout.partition("\n")
    assert first == "[0, 0] []", proc.stdout + proc.stderr
    assert f"file {token_file}" in rest  # the token's source is still reported


def test_a_quoted_string_stays_on_one_line_and_is_bounded():
    from nodecli.errors import shorten

    assert shorten("a\nnodecli: error: fake\r\nline") == "a?nodecli: error: fake??line"
    assert shorten("x" * 10, 5) == "xxxx…"
    assert shorten(None) == "" and shorten(42) == "42"


def test_every_message_line_is_safe_for_a_terminal(capsys):
    """The writer strips escape sequences and controls from every line of a message
    (the domain no longer sanitises: this is the one place)."""
    from nodecli.cli.app import Terminal

    term = Terminal(verbosity=0, no_color=True)
    term.warn("server said \x1b[31mred\x1b[0m\x07 and \x9b2J")
    term.info("two\nlines\x1b]0;title\x07")
    term.error("one\nline only")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\x9b" not in err
    assert err.splitlines() == ["nodecli: warning: server said red? and ?2J", "two",
                                "lines", "nodecli: error: one?line only"]


def test_an_error_on_a_terminal_is_coloured_unless_no_color_is_anywhere_on_the_line(home):
    """The last-resort writer decides colour before any option is parsed: --no-color is
    looked for in the whole command line (here after the command's own words)."""
    import pexpect

    from tests.conftest import REPO_ROOT, nodecli_cmd

    env = subprocess_env({"TERM": "xterm"})
    env.pop("NO_COLOR", None)
    said = {}
    for extra in ([], ["--no-color"]):
        argv = nodecli_cmd("node", "show", "no-such-profile", *extra)
        child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(REPO_ROOT),
                              encoding="utf-8", timeout=30)
        try:
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        assert child.exitstatus == ExitCode.NOT_FOUND
        said[bool(extra)] = child.before
        assert "hint: add one with: nodecli node add NAME --url URL" in child.before
    assert "no-such-profile" in said[False] and "\x1b[" in said[False]
    assert "no-such-profile" in said[True] and "\x1b[" not in said[True]


def test_an_unexpected_exception_is_one_line_naming_it_and_a_hint(monkeypatch, capsys):
    """The last resort (no path of the product is meant to reach it, so the command tree
    is replaced by one that fails): one line and a hint, exit 1; NODECLI_DEBUG=1 lets
    the exception through with its traceback."""
    import nodecli.cli.root
    from nodecli.cli.main import run

    class Broken:
        def main(self, **kwargs):
            raise RuntimeError("boom")

    monkeypatch.setattr(nodecli.cli.root, "cli", Broken())
    monkeypatch.delenv("NODECLI_DEBUG", raising=False)
    assert run(["user", "list"]) == ExitCode.ERROR
    assert capsys.readouterr().err == (
        "nodecli: error: internal error: RuntimeError: boom\n"
        "hint: this is a bug in nodecli; NODECLI_DEBUG=1 shows the traceback\n")
    monkeypatch.setenv("NODECLI_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        run(["user", "list"])
