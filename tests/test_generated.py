"""Generated files (completions, man page) are current; completion works end to end."""

from __future__ import annotations

import json
import subprocess
import sys

from nodecli import devtools
from nodecli.errors import ExitCode
from tests.conftest import REPO_ROOT, subprocess_env


def test_committed_generated_files_match_a_fresh_generation():
    stale = devtools.stale_files(REPO_ROOT)
    assert stale == [], (
        f"stale generated files {stale}: run 'python -m nodecli.devtools generate' and commit"
    )


def test_check_command_names_stale_files(tmp_path):
    devtools.generate(tmp_path)
    assert devtools.stale_files(tmp_path) == []
    (tmp_path / "man" / "nodecli.1").write_text("old\n")
    (tmp_path / "completions" / "nodecli.fish").unlink()
    assert devtools.stale_files(tmp_path) == ["completions/nodecli.fish", "man/nodecli.1"]


def test_generate_writes_what_is_missing_or_stale_and_nothing_else(tmp_path):
    root = tmp_path / "new" / "checkout"  # not there yet: made, parents and all
    want = devtools.generated_files()
    assert devtools.generate(root) == sorted(want)
    assert {rel: (root / rel).read_text(encoding="utf-8") for rel in want} == want
    assert devtools.generate(root) == []  # current: nothing written
    (root / "man" / "nodecli.1").write_text("old\n")
    assert devtools.generate(root) == ["man/nodecli.1"]
    assert devtools.stale_files(root) == []


def test_the_command_line_of_the_generator(tmp_path, capsys):
    assert devtools.main(["generate"], tmp_path) == 0
    assert capsys.readouterr() == ("".join(f"wrote {rel}\n"
                                           for rel in sorted(devtools.generated_files())), "")
    assert devtools.main(["check"], tmp_path) == 0
    assert capsys.readouterr() == ("", "")
    (tmp_path / "man" / "nodecli.1").write_text("old\n")
    assert devtools.main(["check"], tmp_path) == 1
    assert capsys.readouterr() == (
        "", "stale: man/nodecli.1 (run: python -m nodecli.devtools generate)\n")
    assert devtools.main(["generate"], tmp_path) == 0
    assert capsys.readouterr().out == "wrote man/nodecli.1\n"
    for wrong in (["regenerate"], [], ["check", "generate"]):
        assert devtools.main(wrong, tmp_path) == 2
        assert capsys.readouterr() == ("", "usage: python -m nodecli.devtools "
                                           "generate|check\n")


def test_the_generator_as_a_module_reads_its_own_arguments():
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "nodecli.devtools", *args],
                              capture_output=True, text=True, env=subprocess_env(), cwd="/",
                              timeout=120)

    assert (run("check").returncode, run("check").stderr) == (0, "")
    usage = run()
    assert (usage.returncode, usage.stderr) == (
        2, "usage: python -m nodecli.devtools generate|check\n")


def test_generation_is_deterministic():
    """Same files from fresh interpreters with different hash seeds (set/dict order), in
    another working folder, and in this process."""
    script = ("import json, sys; from nodecli import devtools; "
              "json.dump(devtools.generated_files(), sys.stdout)")
    runs = []
    for seed in ("1", "4242"):
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=subprocess_env({"PYTHONHASHSEED": seed}), cwd="/",
                              check=True)
        runs.append(json.loads(proc.stdout))
    here = devtools.generated_files()
    assert set(here) == {"completions/nodecli.bash", "completions/nodecli.zsh",
                         "completions/nodecli.fish", "man/nodecli.1"}
    assert all(here.values())
    assert all(text.isascii() for text in here.values())  # whatever the reader's locale
    assert runs[0] == runs[1] == here


def test_man_page_content():
    page = devtools.generated_files()["man/nodecli.1"]
    assert page.startswith('.TH NODECLI 1 "" ')
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS",
                    "ENVIRONMENT", "FILES"):
        assert f"\n.SH {section}\n" in page
    for code in ExitCode:
        assert f"\n{int(code)}\tT{{\n" in page
    for cmd in ("nodecli user add", "nodecli xuser set", "nodecli config import",
                "nodecli completion"):
        assert f'.SS "{cmd.replace("-", chr(92) + "-")}' in page
    assert "\\fB\\-\\-restriction\\fR" not in page  # options are rendered with their short form
    assert "\\fB\\-r, \\-\\-restriction R\\fR" in page
    assert "NODECLI_PASSWORD" in page and "NODECLI_HOME" in page


def test_the_man_page_of_a_tree_with_missing_help_texts():
    """What the tree does not hold today, each in a made-up tree: no help text at all, only
    a short one, an option without help whose value comes from a variable, a hidden
    command, and a command's own help-option names (its context settings)."""
    import click

    @click.group("bare")
    @click.option("--plain", envvar="BARE_PLAIN")
    def bare(plain):
        pass

    bare.add_command(click.Command("short", short_help="The short help."))
    bare.add_command(click.Command("none"))
    bare.add_command(click.Command("hushhush", help="Never in the page.", hidden=True))
    bare.add_command(click.Command("own", help="Own names.",
                                   context_settings={"help_option_names": ["-?", "--usage"]}))
    page = devtools.man_page(bare).split("\n")
    at = page.index(".SH DESCRIPTION")
    assert page[at + 1:at + 3] == ["", ".SH OPTIONS"]
    at = page.index("\\fB\\-\\-plain TEXT\\fR")
    assert page[at - 1:at + 2] == [".TP", "\\fB\\-\\-plain TEXT\\fR", ""]
    at = page.index("\\fBBARE_PLAIN\\fR")
    assert page[at + 1] == "Same as nodecli \\-\\-plain"
    assert page[page.index('.SS "nodecli short [OPTIONS]"') + 1] == "The short help."
    assert page[page.index('.SS "nodecli none [OPTIONS]"') + 1] == ""
    assert not any("hushhush" in line or "Never in the page" in line for line in page)
    at = page.index('.SS "nodecli own [OPTIONS]"')
    assert "\\fB\\-?, \\-\\-usage\\fR" in page[at:]


def test_man_page_renders_without_roff_errors(tmp_path):
    import shutil

    if shutil.which("groff") is None:
        import pytest

        pytest.skip("groff not installed")
    proc = subprocess.run(["groff", "-t", "-man", "-Tutf8", "-ww", "-z",
                           str(REPO_ROOT / "man" / "nodecli.1")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def _complete(words: str, home) -> list[str]:
    env = subprocess_env({"_NODECLI_COMPLETE": "bash_complete", "COMP_WORDS": words,
                          "COMP_CWORD": str(len(words.split(" ")) - 1)})
    proc = subprocess.run([sys.executable, "-m", "nodecli"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [line.split(",", 1)[1] for line in proc.stdout.splitlines() if line]


def test_dynamic_completion_of_names(invoke, home):
    invoke("xuser", "add", "aspera", "-r", "s3://*")
    invoke("xuser", "add", "astro", "--docroot", "/a")
    invoke("-au", "alice", "-x", "aspera", "-p", "pw")
    invoke("-au", "bob", "-x", "aspera", "-p", "pw")
    assert _complete("nodecli user show ", home) == ["alice", "bob"]
    assert _complete("nodecli user add carol --xuser as", home) == ["aspera", "astro"]
    assert _complete("nodecli -d -u a", home) == ["alice"]
    assert _complete("nodecli xuser delete ast", home) == ["astro"]
    assert "user" in _complete("nodecli us", home)


def test_completion_with_damaged_config_completes_nothing(invoke, home):
    invoke("-au", "alice", "-x", "aspera", "-p", "pw")
    path = home / "config.toml"
    path.write_text("[broken\n")
    assert _complete("nodecli user show ", home) == []


def test_completion_command_prints_click_script(invoke):
    r = invoke("completion", "bash")
    assert r.exit_code == 0
    assert "_NODECLI_COMPLETE=bash_complete" in r.stdout
    assert r.stdout == (REPO_ROOT / "completions" / "nodecli.bash").read_text()
    assert invoke("completion", "zsh").stdout.startswith("#compdef nodecli")
    assert "complete --no-files --command nodecli" in invoke("completion", "fish").stdout
    assert invoke("completion", "tcsh").exit_code == 2


def test_tests_make_each_context_as_a_run_does():
    """click caches a command's help option the first time it is asked for, with the
    help names of the context that asks. A test that walks the tree making click's
    Context directly, without the command's settings, would make this process's man
    page show ``--help`` without ``-h`` (as it did when the suite first ran in several
    workers): every test makes its contexts with ``tests.conftest.cli_context``."""
    bare = [f"{path.name}:{n}" for path in sorted((REPO_ROOT / "tests").glob("*.py"))
            if path.name != "conftest.py"
            for n, line in enumerate(path.read_text().splitlines(), 1)
            if "click." + "Context(" in line]
    assert bare == []
