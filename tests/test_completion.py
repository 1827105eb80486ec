"""Shell completion of every name a user types, through click's real protocol.

Each case runs ``nodecli`` as a subprocess with the variables a shell sets on <TAB>
(``_NODECLI_COMPLETE``, ``COMP_WORDS``, ``COMP_CWORD``) against a real home filled by
real commands; the bash case also goes through the committed script in completions/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from nodecli.cli.completers import split_attached, split_cluster
from tests.conftest import REPO_ROOT, cli_context, subprocess_env

HEAVY = ("httpx2", "httpx", "httpcore", "cryptography", "rich")
PROBE = (
    "import sys, atexit\n"
    "def report():\n"
    f"    heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
    "    sys.stderr.write('HEAVY=' + ','.join(heavy) + '\\n')\n"
    "atexit.register(report)\n"
    "from nodecli.cli.main import main\n"
    "main()\n"
)


def complete(words: str, *, shell: str = "bash", home: Path | None = None,
             extra_env: dict[str, str] | None = None) -> list[str]:
    """What nodecli answers on <TAB> after ``words`` (the last word is the incomplete one).

    Also asserts that completion succeeded silently and imported no heavy stack.
    """
    parts = words.split(" ")
    env = {"_NODECLI_COMPLETE": f"{shell}_complete", "COMP_WORDS": words,
           # bash and zsh send the index of the word; fish sends the word itself
           "COMP_CWORD": parts[-1] if shell == "fish" else str(len(parts) - 1)}
    if home is not None:
        env["NODECLI_HOME"] = str(home)
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, "-c", PROBE], env=subprocess_env(env),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc
    assert proc.stderr == "HEAVY=\n", proc.stderr
    lines = proc.stdout.splitlines()
    if shell == "zsh":  # type, value, help ('_' for none) per item
        return [lines[i + 1] for i in range(0, len(lines), 3) if lines[i] == "plain"]
    return [line.split(",", 1)[1] for line in lines if line.startswith("plain,")]


def kinds(words: str) -> list[str]:
    """The item types (plain, file, dir) offered after ``words``."""
    env = {"_NODECLI_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split(" ")) - 1)}
    proc = subprocess.run([sys.executable, "-m", "nodecli"], env=subprocess_env(env),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc
    return [line.split(",", 1)[0] for line in proc.stdout.splitlines()]


def add_names(invoke, tmp_path) -> None:
    """Users, transfer users, node and service profiles, each made by the command a
    user would run."""
    def ok(*args):
        r = invoke(*args)
        assert r.exit_code == 0, r

    ok("xuser", "add", "aspera", "-r", "file:////data/*")
    ok("xuser", "add", "archive", "--docroot", "/archive")
    for name in ("usr1", "usr2", "ops"):
        ok("-au", name, "-x", "aspera", "-p", "pw-" + name)
    ok("node", "add", "prod", "--url", "https://prod:9092", "--access-key", "AKprod",
       "--no-secret")
    ok("node", "add", "lab", "--url", "https://lab:9092", "--user", "usr1", "--no-secret")
    token = tmp_path / "svc.token"
    token.write_text("opaque-token\n")
    token.chmod(0o600)
    for name in ("corp", "corp-test", "staging"):
        ok("service", "add", name, "--url", f"https://{name}.example", "--token-file",
           str(token))


@pytest.fixture
def filled_home(invoke, home, node_env, log, tmp_path):
    """A home with users, transfer users, node and service profiles, a key pair and a
    checkpoint, each made by the command a user would run."""
    def ok(*args, **kw):
        r = invoke(*args, **kw)
        assert r.exit_code == 0, r
        return r

    add_names(invoke, tmp_path)
    ok("key", "generate", str(home / "keys" / "AKlocal") + "/", "--bits", "1024")
    log.generate(3)
    for name in ("nightly", "night-audit"):
        ok("events", "tail", "--resume", name, "--since", "1h", "-o", "jsonl", env=node_env)
    return home


CASES = [
    # classic flags: a cluster ending in -u completes node users, not subcommands
    ("nodecli -mu ", ["ops", "usr1", "usr2"]),
    ("nodecli -du u", ["usr1", "usr2"]),
    ("nodecli -mu usr1 -x a", ["archive", "aspera"]),
    ("nodecli -u ", ["ops", "usr1", "usr2"]),
    ("nodecli -muus", ["-muusr1", "-muusr2"]),        # the value typed against the flags
    ("nodecli -au new -xar", ["-xarchive"]),
    ("nodecli -au new -x ", ["archive", "aspera"]),
    ("nodecli --xuser ar", ["archive"]),
    ("nodecli -u usr1 --bearer-create --access-key AK", ["AKlocal", "AKprod"]),
    # subcommands
    ("nodecli user show ", ["ops", "usr1", "usr2"]),
    ("nodecli user passwd o", ["ops"]),
    ("nodecli user add new --xuser as", ["aspera"]),
    ("nodecli xuser delete ", ["archive", "aspera"]),
    ("nodecli token create -u ", ["ops", "usr1", "usr2"]),
    ("nodecli token create --user us", ["usr1", "usr2"]),
    ("nodecli token create -u usr1 --access-key ", ["AKlocal", "AKprod"]),
    ("nodecli node show ", ["lab", "prod"]),
    ("nodecli node default p", ["prod"]),
    ("nodecli node info --node ", ["lab", "prod"]),
    ("nodecli events list --node l", ["lab"]),
    ("nodecli events tail --user ", ["ops", "usr1", "usr2"]),
    ("nodecli node add new --url https://x --user o", ["ops"]),
    ("nodecli node add new --url https://x --access-key AKp", ["AKprod"]),
    ("nodecli events tail --resume ", ["night-audit", "nightly"]),
    ("nodecli events tail --resume nightl", ["nightly"]),
    ("nodecli events ship --resume ", ["night-audit", "nightly"]),
    ("nodecli events tail -o ", ["pretty", "plain", "json", "jsonl"]),
    ("nodecli events tail --output j", ["json", "jsonl"]),
    # a command whose json is not shaped (diff) offers no yaml, raw or columns=
    ("nodecli diff -o ", ["table", "json"]),
    ("nodecli service show ", ["corp", "corp-test", "staging"]),
    ("nodecli service remove corp", ["corp", "corp-test"]),
    ("nodecli service default s", ["staging"]),
    ("nodecli operations list --service ", ["corp", "corp-test", "staging"]),
    ("nodecli operations watch --service st", ["staging"]),
    ("nodecli operations resolve --service c", ["corp", "corp-test"]),
    ("nodecli workspaces create --service ", ["corp", "corp-test", "staging"]),
    ("nodecli access-key show ", ["AKlocal", "AKprod"]),
    ("nodecli access-key delete AKl", ["AKlocal"]),
    ("nodecli access-key list --access-key ", ["AKlocal", "AKprod"]),
    # global options may follow the subcommand: --home too
    ("nodecli user show --home HOME u", ["usr1", "usr2"]),
]


def test_every_name_completes(filled_home):
    failures = []
    for words, expected in CASES:
        got = complete(words.replace("HOME", str(filled_home)), home=filled_home)
        if got != expected:
            failures.append(f"{words!r}: {got} != {expected}")
    assert not failures, "\n".join(failures)


def test_zsh_and_fish_protocols_complete_the_same_names(filled_home):
    for shell in ("zsh", "fish"):
        assert complete("nodecli -mu ", shell=shell, home=filled_home) == \
            ["ops", "usr1", "usr2"], shell
        assert complete("nodecli service show c", shell=shell, home=filled_home) == \
            ["corp", "corp-test"], shell
        assert complete("nodecli events tail --resume ", shell=shell, home=filled_home) == \
            ["night-audit", "nightly"], shell


def test_home_given_on_the_command_line_wins(filled_home, tmp_path):
    other = tmp_path / "empty-home"
    assert complete("nodecli user show ", home=other) == []
    assert complete(f"nodecli --home {filled_home} user show ", home=other) == \
        ["ops", "usr1", "usr2"]
    assert complete(f"nodecli --home {filled_home} -mu ", home=other) == ["ops", "usr1", "usr2"]
    # after the subcommand too (the case of CASES cannot tell: its home is also the
    # environment's); before, it was not read on a <TAB>
    assert complete(f"nodecli user show --home {filled_home} u", home=other) == \
        ["usr1", "usr2"]
    assert complete(f"nodecli xuser --home={filled_home} delete ", home=other) == \
        ["archive", "aspera"]


def test_access_keys_of_an_emulator_run_with_the_home(invoke, node_env, emulator, tmp_path):
    """Keys created on the emulator over HTTP are offered when completing with its home
    (its state/emulator/access_keys.json); nothing is asked of the running node."""
    r = invoke("access-key", "create", "--path", "/", "--no-check", "--id", "AKemu1",
               "--secret-stdin",
               input="ak-secret\n", env=node_env)
    assert r.exit_code == 0, r
    emulator_home = emulator.paths.config_dir
    assert complete(f"nodecli --home {emulator_home} access-key show AKe") == ["AKemu1"]
    assert complete(f"nodecli --home {emulator_home} token create --access-key ") == ["AKemu1"]


def test_non_names_keep_their_completion(filled_home):
    assert "user" in complete("nodecli us", home=filled_home)
    assert complete("nodecli events tail --res", home=filled_home) == ["--resume"]
    assert kinds("nodecli token create -u usr1 --key-file-dir ") == ["dir"]
    assert kinds("nodecli token create -u usr1 --key-file-path ") == ["file"]
    assert kinds("nodecli token verify --public-key ") == ["file"]
    assert kinds("nodecli -ml ") == ["plain"] * len(kinds("nodecli -ml "))  # subcommands
    assert "user" in complete("nodecli -ml ", home=filled_home)
    # a value already attached to -u: the next word is a subcommand or option again
    assert "user" in complete("nodecli -uusr1 ", home=filled_home)


def test_damaged_or_missing_state_completes_nothing_silently(filled_home):
    (filled_home / "config.toml").write_text("[broken\n")
    assert complete("nodecli -mu ", home=filled_home) == []
    assert complete("nodecli service show ", home=filled_home) == []
    # keys and checkpoints do not live in config.toml: they still complete
    assert complete("nodecli access-key show ", home=filled_home) == ["AKlocal"]
    assert complete("nodecli events tail --resume n", home=filled_home) == \
        ["night-audit", "nightly"]
    shutil.rmtree(filled_home / "state")
    (filled_home / "keys").chmod(0)
    try:
        assert complete("nodecli events tail --resume ", home=filled_home) == []
        if os.geteuid() != 0:
            assert complete("nodecli access-key show ", home=filled_home) == []
    finally:
        (filled_home / "keys").chmod(0o700)


def test_the_installed_bash_script_offers_the_names(filled_home):
    """The committed completions/nodecli.bash, sourced in a real bash, fills COMPREPLY."""
    if shutil.which("bash") is None:
        pytest.skip("bash not installed")
    script = REPO_ROOT / "completions" / "nodecli.bash"
    venv_bin = str(Path(sys.executable).parent)
    if not (Path(venv_bin) / "nodecli").exists():
        pytest.skip("nodecli entry point not installed beside this interpreter")
    code = (f"source {script}; COMP_WORDS=(nodecli -mu ''); COMP_CWORD=2; "
            "_nodecli_completion nodecli; printf '%s\\n' \"${COMPREPLY[@]}\"")
    env = subprocess_env({"NODECLI_HOME": str(filled_home),
                          "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")})
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-c", code], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc
    assert proc.stdout.split() == ["ops", "usr1", "usr2"]


@pytest.mark.parametrize(("arg", "expected"), [
    ("-mu", ["-m", "-u"]),
    ("-du", ["-d", "-u"]),
    ("-au", ["-a", "-u"]),
    ("-u", None),             # click handles a lone option
    ("-um", None),            # m is the value of -u
    ("-ml", None),            # flags only: nothing awaits a value
    ("-mz", None),            # unknown letter
    ("--modify", None),
    ("-m-u", None),
    ("usr1", None),
])
def test_split_cluster(arg, expected):
    from nodecli.cli.root import cli

    ctx = cli_context(cli, "nodecli")
    assert split_cluster(cli, ctx, arg) == expected


def test_no_line_of_the_tree_makes_completion_fail_or_print(filled_home, capsys):
    """Every command, after each of its options (with and without a value), after an
    unknown option and after stray words: completion answers without raising and
    without writing anything itself (click prints only what it returns)."""
    from click.shell_completion import get_completion_class

    from nodecli.cli.completers import install_completion_classes
    from nodecli.cli.root import cli

    install_completion_classes()
    comp = get_completion_class("bash")(cli, {}, "nodecli", "_NODECLI_COMPLETE")
    root_ctx = cli_context(cli, "nodecli")

    def walk(cmd, path):
        yield cmd, path
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(root_ctx):
                yield from walk(cmd.get_command(root_ctx, name), [*path, name])

    lines = 0
    for cmd, path in walk(cli, []):
        cases = [(path, ""), (path, "-"), ([*path, "--bogus"], ""), ([*path, "x", "y"], "")]
        for param in cmd.params:
            for opt in param.opts:
                if opt.startswith("-"):
                    cases += [([*path, opt], ""), ([*path, opt, "1"], ""), ([*path, opt], "u")]
        for args, incomplete in cases:
            comp.get_completions(list(args), incomplete)
            lines += 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert lines > 500  # the whole tree was walked


def test_the_install_lines_of_the_help_work_as_written(invoke, tmp_path):
    """Each 'mkdir'/'nodecli completion' line of 'completion --help', run by sh in an
    empty $HOME, writes the script that 'completion SHELL' prints."""
    if shutil.which("sh") is None:
        pytest.skip("no sh")
    help_text = invoke("completion", "--help").stdout
    lines = [line.strip() for line in help_text.splitlines()
             if line.strip().startswith(("mkdir -p ", "nodecli completion "))]
    assert len(lines) == 6, lines
    fake_home = tmp_path / "fresh-home"
    fake_home.mkdir()
    env = subprocess_env({"HOME": str(fake_home),
                          "PATH": str(Path(sys.executable).parent) + os.pathsep
                          + os.environ.get("PATH", "")})
    if not (Path(sys.executable).parent / "nodecli").exists():
        pytest.skip("nodecli entry point not installed beside this interpreter")
    proc = subprocess.run(["sh", "-ec", "\n".join(lines)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc
    for shell, where in (("bash", ".local/share/bash-completion/completions/nodecli"),
                         ("zsh", ".zfunc/_nodecli"),
                         ("fish", ".config/fish/completions/nodecli.fish")):
        assert (fake_home / where).read_text() == invoke("completion", shell).stdout


@pytest.mark.parametrize(("word", "expected"), [
    ("-muus", ("-mu", "user", "us")),
    ("-uu", ("-u", "user", "u")),
    ("-ojs", ("-o", "output_format", "js")),
    ("-mu", None),            # nothing typed of the value yet
    ("-ml", None),            # flags only
    ("-mzx", None),           # unknown letter
    ("--user", None),
    ("-u", None),
])
def test_split_attached(word, expected):
    from nodecli.cli.root import cli

    got = split_attached(cli, cli_context(cli, "nodecli"), word)
    assert (got if got is None else (got[0], got[1].name, got[2])) == expected


def test_fifos_in_the_home_never_hang_a_tab(filled_home):
    """A FIFO where the config or the emulator's key list should be: TAB answers (the
    subprocess has a timeout) with what the other sources know."""
    (filled_home / "config.toml").unlink()
    os.mkfifo(filled_home / "config.toml")
    emulator_dir = filled_home / "state" / "emulator"
    emulator_dir.mkdir(parents=True, exist_ok=True)
    (emulator_dir / "access_keys.json").unlink(missing_ok=True)
    os.mkfifo(emulator_dir / "access_keys.json")
    assert complete("nodecli -mu ", home=filled_home) == []
    assert complete("nodecli access-key show ", home=filled_home) == ["AKlocal"]


def test_output_formats_and_shaping_flags_complete_the_same_everywhere(filled_home):
    assert complete("nodecli user list -o ", home=filled_home) == [
        "table", "wide", "json", "jsonl", "csv", "yaml", "raw", "columns="]
    assert complete("nodecli node info -o ", home=filled_home) == [
        "table", "json", "yaml", "raw", "columns="]
    assert complete("nodecli token inspect x -o ", home=filled_home) == [
        "text", "json", "yaml", "raw", "columns="]
    assert set(complete("nodecli events list --", home=filled_home)) >= {
        "--query", "--field", "--no-headers", "--output"}
    assert "--dry-run" in complete("nodecli --", home=filled_home)
    assert complete("nodecli transfer ", home=filled_home) == [
        "cancel", "list", "modify", "show", "start", "top", "watch"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_script_asks_nodecli_through_its_completion_variable(shell):
    from nodecli.cli.completion import completion_source

    source = completion_source(shell)
    assert f"_NODECLI_COMPLETE={shell}_complete" in source
