"""The command tree as a whole: bare groups, global options anywhere, -o/--output."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodecli.cli.lazy import hoist_global_options
from nodecli.render import display_width, fit_line, terminal_columns
from tests.conftest import cli_context


def _groups() -> list[tuple[str, ...]]:
    """Every group of the tree (lazily loaded ones included), as its word path."""
    from nodecli.cli.root import cli

    found: list[tuple[str, ...]] = []

    def walk(cmd: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        if not isinstance(cmd, click.Group):
            return
        if path:
            found.append(path)
        ctx = cli_context(cmd, path[-1] if path else "nodecli", parent)
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                walk(sub, (*path, name), ctx)

    walk(cli, (), None)
    return found


GROUPS = _groups()


def test_the_walk_finds_the_groups_and_nested_ones():
    names = {" ".join(g) for g in GROUPS}
    assert {"user", "events", "operations", "key", "token"} <= names
    assert len(GROUPS) >= 12


@pytest.mark.parametrize("path", GROUPS, ids=" ".join)
def test_a_group_alone_prints_its_help_on_stdout_and_exits_0(invoke, path):
    r = invoke(*path)
    assert r.exit_code == 0, r
    assert r.stderr == ""
    assert r.stdout.startswith(f"Usage: nodecli {' '.join(path)} ")
    assert "\nCommands:\n" in r.stdout
    # multi-line, not squashed onto one line with '?' for newlines
    assert r.stdout.count("\n") > 5


def test_a_plain_click_group_added_later_behaves_alike(invoke, monkeypatch):
    """A group created without cls=HelpGroup still gets help + exit 0 (entry point)."""
    from nodecli.cli import root

    @click.group(help="A later group.")
    def later() -> None:
        pass

    @later.command()
    def leaf() -> None:
        """A leaf."""

    monkeypatch.setattr(root.cli, "commands", {**root.cli.commands, "later": later})
    r = invoke("later")
    assert r.exit_code == 0, r
    assert r.stdout.startswith("Usage: nodecli later") and "leaf" in r.stdout


def test_unknown_subcommand_is_still_a_usage_error(invoke):
    r = invoke("user", "frobnicate")
    assert r.exit_code == 2
    assert r.stdout == ""


# -- global options after the subcommand ------------------------------------------------


def test_home_after_the_subcommand_is_the_home(invoke, tmp_path):
    other = tmp_path / "other-home"
    r = invoke("--home", str(other), "user", "add", "alice", "--xuser", "aspera",
               "--password-stdin", input="secretpw1\n")
    assert r.exit_code == 0, r
    r = invoke("user", "list", "-o", "json", "--home", str(other))
    assert r.exit_code == 0, r
    assert [u["name"] for u in json.loads(r.stdout)] == ["alice"]
    r = invoke("user", "list", "-o", "json", f"--home={tmp_path / 'empty'}")
    assert r.exit_code == 0 and json.loads(r.stdout) == []
    # the default home (NODECLI_HOME of the test) was not touched
    r = invoke("user", "list", "-o", "json")
    assert json.loads(r.stdout) == []


def test_quiet_and_verbose_after_the_subcommand(invoke):
    loud = invoke("user", "add", "alice", "--xuser", "aspera", "--password-stdin",
                  input="secretpw1\n")
    assert loud.exit_code == 0 and "warning" in loud.stderr
    quiet = invoke("user", "add", "bob", "--xuser", "aspera", "--password-stdin", "-q",
                   input="secretpw1\n")
    assert quiet.exit_code == 0, quiet
    assert quiet.stderr == ""
    r = invoke("user", "list", "-o", "json", "-vv", "--no-color")
    assert r.exit_code == 0, r
    assert sorted(u["name"] for u in json.loads(r.stdout)) == ["alice", "bob"]


def test_classic_flags_still_work_with_globals_anywhere(invoke):
    r = invoke("-au", "carol", "-x", "aspera", "--password-stdin", "-q", input="secretpw1\n")
    assert r.exit_code == 0, r
    assert r.stderr == ""
    r = invoke("-l", "-o", "json", "-q")
    assert r.exit_code == 0, r
    assert "carol" in r.stdout


def test_values_of_the_commands_own_options_are_never_taken():
    from nodecli.cli.root import cli

    ctx = cli_context(cli, "nodecli")
    users = cli.get_command(ctx, "user")
    # '-q' here is the value of --xuser, '--home' after '--' is an argument
    kept, found = hoist_global_options(ctx, users, ["add", "alice", "--xuser", "-q",
                                                    "-vv", "--", "--home"])
    assert kept == ["add", "alice", "--xuser", "-q", "--", "--home"]
    assert found == {"verbose": 2}
    kept, found = hoist_global_options(ctx, users, ["list", "--home", "/h", "--verbose",
                                                    "-v", "--no-color", "--quiet"])
    assert kept == ["list"]
    assert found == {"home": "/h", "verbose": 2, "no_color": True, "quiet": True}


def test_home_without_a_value_after_the_subcommand_is_exit_2(invoke):
    r = invoke("user", "list", "--home")
    assert r.exit_code == 2
    assert "--home" in r.stderr and r.stderr.count("\n") <= 2


# -- events tail: -o is the format, --to the file ---------------------------------------


def test_tail_output_format_name_is_the_format_never_a_file(invoke, node_env, log, tmp_path,
                                                            monkeypatch):
    log.generate(3)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    for fmt in ("json", "jsonl", "plain", "pretty"):
        r = invoke("events", "tail", "--since", "1h", "--output", fmt, env=node_env)
        assert r.exit_code == 0, r
        assert r.stderr == "" and r.stdout.strip()
    assert list(cwd.iterdir()) == []  # no file named 'json' nor 'json.checkpoint'

    r = invoke("events", "tail", "--since", "1h", "-o", "jsonl", "-q", env=node_env)
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["1", "2", "3"]


def test_tail_to_file_keeps_its_checkpoint_beside_it(invoke, node_env, log, tmp_path):
    log.generate(4)
    out = tmp_path / "ev.jsonl"
    r = invoke("events", "tail", "--since", "1h", "--to", str(out), env=node_env)
    assert r.exit_code == 0, r
    assert r.stdout == "" and r.stderr == f"wrote 4 events to {out}\n"
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["1", "2", "3", "4"]
    assert Path(str(out) + ".checkpoint").exists()


def test_tail_legacy_output_file_with_to_is_refused(invoke, node_env, log, tmp_path):
    r = invoke("events", "tail", "--output", str(tmp_path / "a"), "--to",
               str(tmp_path / "b"), env=node_env)
    assert r.exit_code == 2
    assert "--to" in r.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_tail_output_help_lists_exactly_its_formats(invoke):
    r = invoke("events", "tail", "--help")
    assert "[pretty|plain|json|jsonl]" in r.stdout
    assert "--to FILE" in r.stdout


# -- help texts ---------------------------------------------------------------------------


# (the one walk of the click tree every convention test uses)
from tests.command_world import LEAVES  # noqa: E402


def test_the_walk_finds_every_leaf():
    paths = {" ".join(p) for p, _ in LEAVES}
    assert {"user add", "events tail", "key generate", "completion"} <= paths
    assert len(LEAVES) >= 40


@pytest.mark.parametrize("path", [p for p, _ in LEAVES], ids=" ".join)
def test_every_leaf_help_has_an_example_of_itself(invoke, path):
    r = invoke(*path, "--help")
    assert r.exit_code == 0, r
    lines = r.stdout.splitlines()
    usage = f"nodecli {' '.join(path)}"
    examples = [ln.strip() for ln in lines
                if (ln.startswith("  ") and usage in ln
                    and not ln.startswith("Usage:") and not ln.lstrip().startswith("-"))]
    assert examples, f"'{usage} --help' shows no example line ({usage} ...)"


@pytest.mark.parametrize("path, cmd", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_output_help_names_exactly_the_accepted_formats(path, cmd):
    from nodecli.cli.common import OutputFormat

    known = {"table", "wide", "json", "jsonl", "csv", "text", "pretty", "plain", "yaml",
             "raw", "columns=PATH", "nagios", "prometheus", "tree", "ncdu"}
    for param in cmd.params:
        if "-o" not in getattr(param, "opts", []):
            continue
        if isinstance(param.type, click.Choice):
            accepted = list(param.type.choices)
        else:
            assert isinstance(param.type, OutputFormat), path
            accepted = list(param.type.choices)
            if param.type.shaped:
                accepted += ["yaml", "raw", "columns=PATH"]
        named = [w.strip(".,[]") for w in (param.help or "").split("[default")[0]
                 .replace(":", " ").split()]
        assert [w for w in named if w in known] == accepted, path


def test_key_group_help_describes_the_folder_form_truly(invoke, tmp_path):
    r = invoke("key", "--help")
    assert "key generate ~/keys/ak1/ " in r.stdout
    assert "key generate ~/keys/ak1 " not in r.stdout
    # and it does what the help says: a trailing '/' means a folder with both files
    target = tmp_path / "keys" / "ak1"
    r = invoke("key", "generate", f"{target}/", "--bits", "1024")
    assert r.exit_code == 0, r
    assert sorted(p.name for p in target.iterdir()) == ["private.pem", "public.pem"]


# -- the live status line ---------------------------------------------------------------



@given(st.text(max_size=400), st.integers(min_value=1, max_value=300))
def test_fit_line_never_wraps_and_keeps_what_fits(text, columns):
    line = fit_line(text, columns)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    budget = max(columns - 1, 1)  # the last column stays free; one column at the least
    assert display_width(line) <= budget
    # controls become spaces; format characters, separators and lone surrogates '?'
    # (U+13430..U+1343F: format characters from Unicode 15, unassigned before)
    clean = "".join(" " if (ord(c) < 32 or 0x7F <= ord(c) < 0xA0) else
                    "?" if unicodedata.category(c) in ("Cf", "Cs", "Zl", "Zp")
                    or 0x13430 <= ord(c) <= 0x1343F else c
                    for c in text)
    if display_width(clean) <= budget:
        assert line == clean
    else:
        assert line.endswith("…") and clean.startswith(line[:-1])


def test_fit_line_counts_wide_characters_twice():
    assert fit_line("reconnecting 東京 node", 10) == "reconnec…"
    assert display_width(fit_line("東京東京東京", 6)) <= 5


def test_terminal_columns_follows_columns_then_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "37")
    assert terminal_columns() == 37
    monkeypatch.delenv("COLUMNS")
    import io

    assert terminal_columns(io.StringIO(), default=55) == 55


def _tty_terminal(monkeypatch, columns: int = 30):
    import io

    from nodecli.cli.app import Terminal

    err = io.StringIO()
    term = Terminal(verbosity=0, no_color=True, _stderr=err, _stdout=io.StringIO())
    monkeypatch.setattr(type(term), "stderr_is_tty", property(lambda self: True))
    monkeypatch.setenv("COLUMNS", str(columns))
    return term, err


def test_live_status_line_is_cut_to_the_terminal_width(monkeypatch):
    """The reconnect line of events tail on a 30-column terminal stays on one line."""
    from nodecli.cli.events import reconnect_status

    term, err = _tty_terminal(monkeypatch)
    app = type("A", (), {"term": term})()
    try:
        reconnect_status(app)("connection lost (503 Service Unavailable); retrying in 4s, "
                               "attempt 3 of many")
        written = err.getvalue()
    finally:
        term.status.clear()
    assert written.startswith("\r\x1b[K")
    first = written[4:].split("\r")[0]
    assert "connection lost" in first and first.endswith("…")
    # room for the "^C" a terminal echoes after it: a line that wraps cannot be erased
    assert display_width(first) <= 30 - 3


def test_messages_erase_the_live_status_line_first(monkeypatch):
    """A warning written while the status line is up starts on a clean line, and the
    line is erased (not left as residue) when the status is cleared."""
    term, err = _tty_terminal(monkeypatch, columns=80)
    clock = iter(float(n) for n in range(1000))
    term.status._clock = lambda: next(clock)
    term.status.show("operation 7 (workspace.create): running")
    term.warn("the service answered slowly")
    term.status.clear()
    text = err.getvalue()
    assert "operation 7 (workspace.create): running · " in text
    before, after = text.split("nodecli: warning: the service answered slowly\n", 1)
    assert before.endswith("\r\x1b[K")  # the status line was erased before the message
    assert after.endswith("\r\x1b[K") or after == ""  # and erased at the end, if redrawn
    assert not term.status.active


def test_status_off_a_terminal_writes_each_change_once(monkeypatch):
    import io

    from nodecli.cli.app import Terminal

    err = io.StringIO()
    term = Terminal(verbosity=0, no_color=True, _stderr=err)
    for text in ("op 1: running", "op 1: running", "op 1: stopped"):
        term.status.show(text + " (live)", plain=text)
    term.status.show("no plain text: nothing written off a terminal")
    term.status.clear()
    assert err.getvalue() == "op 1: running\nop 1: stopped\n"
    quiet_err = io.StringIO()
    quiet = Terminal(verbosity=-1, no_color=True, _stderr=quiet_err)
    quiet.status.show("x", plain="x")
    assert quiet_err.getvalue() == ""




# -- path options expand '~' themselves ----------------------------------------------------


def test_cacert_and_bearer_file_expand_a_quoted_tilde(invoke, tmp_path, monkeypatch):

    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ca.pem").write_text("not used before a request\n")
    (tmp_path / "tok").write_text("x\n")
    r = invoke("node", "add", "--no-check", "n1", "--url", "https://node.example:9092",
               "--cacert", "~/ca.pem", "--bearer-file", "~/tok", "--access-key", "ak1")
    assert r.exit_code == 0, r
    r = invoke("node", "show", "n1", "-o", "json")
    shown = r.stdout
    assert str(tmp_path / "ca.pem") in shown and "~/" not in shown



def test_a_mistyped_long_option_still_gets_a_suggestion(invoke):
    r = invoke("user", "list", "--outptu", "json")
    assert r.exit_code == 2
    assert "No such option '--outptu'. Did you mean '--output'?" in r.stderr


def test_the_register_hint_after_key_generate_is_quoted_for_the_shell(invoke, tmp_path):
    import shlex

    target = tmp_path / "my keys" / "a$(id)"
    r = invoke("key", "generate", f"{target}/", "--bits", "1024")
    assert r.exit_code == 0, r
    pasted = r.stderr.split("register the public key on the node: ")[1].splitlines()[0]
    assert shlex.split(pasted)[-2:] == ["--public-key", str(target / "public.pem")]


# -- finding one's way: suggestions, aliases, help, version --------------------------------

def test_a_mistyped_top_level_command_gets_a_suggestion(invoke):
    r = invoke("evnets")
    assert r.exit_code == 2
    assert "No such command 'evnets'. Did you mean 'events'?" in r.stderr
    r = invoke("opperations", "list")
    assert r.exit_code == 2 and "Did you mean 'operations'?" in r.stderr
    r = invoke("zzzz")
    assert r.exit_code == 2 and "Did you mean" not in r.stderr


def test_singular_and_plural_work_but_are_not_shown(invoke):
    from nodecli.cli.root import ALIASES, SUBCOMMANDS, cli

    groups = {"user", "xuser", "key", "token", "node", "access-key", "permission", "transfer",
              "events", "service", "operations", "workspaces"}
    assert set(ALIASES.values()) == groups and groups <= set(SUBCOMMANDS)
    shown = invoke("--help").stdout
    for alias, name in ALIASES.items():
        assert f"\n  {alias} " not in shown
        r = invoke(alias, "--help")
        assert r.exit_code == 0, (alias, r.stderr)
        own = invoke(name, "--help").stdout
        assert r.stdout.startswith(f"Usage: nodecli {alias} ")
        assert r.stdout.split("\n", 1)[1] == own.split("\n", 1)[1]
    ctx = cli_context(cli, "nodecli")
    names = [c.value for c in cli.shell_complete(ctx, "user")]
    assert names == ["user"]
    assert "users" not in cli.list_commands(ctx)


def test_users_alias_runs_the_command(invoke):
    assert invoke("users", "list").exit_code == 0
    r = invoke("event", "tail", "--page-size", "0")
    assert r.exit_code == 2 and "--page-size" in r.stderr


def test_help_command_shows_the_same_help_as_dash_dash_help(invoke):
    assert invoke("help").stdout == invoke("--help").stdout
    for path in (["events", "tail"], ["user"], ["access-key", "set-verification-key"]):
        r = invoke("help", *path)
        assert r.exit_code == 0, r.stderr
        assert r.stdout == invoke(*path, "--help").stdout
    r = invoke("help", "user", "lsit")
    assert r.exit_code == 2 and "Did you mean 'list'?" in r.stderr
    r = invoke("help", "user", "list", "more")
    assert r.exit_code == 2 and "has no subcommands" in r.stderr
    r = invoke("help", "evnts")
    assert r.exit_code == 2 and "Did you mean 'events'?" in r.stderr


def test_version_flags(invoke):
    from nodecli import __version__

    for flag in ("-V", "--version", "-A"):
        r = invoke(flag)
        assert r.exit_code == 0 and r.stdout == f"nodecli {__version__}\n"


def test_root_help_lists_commands_before_the_classic_flags(invoke):
    text = invoke("--help").stdout
    assert text.index("Commands:") < text.index("Options:") < text.index("-b, --backup")
    assert text.index("nodecli events tail") < text.index("Classic flags")


def test_no_help_text_readme_or_man_page_cites_the_developers_spec():
    """Users do not have the contract the developers work from: help says what the node
    does in plain words."""
    root = Path(__file__).resolve().parent.parent
    for name in ("README.md", "man/nodecli.1"):
        text = (root / name).read_text()
        assert "interface.md" not in text and "field-notes" not in text, name
    from nodecli.cli.root import cli

    def walk(cmd: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        ctx = cli_context(cmd, path[-1] if path else "nodecli", parent)
        assert "interface.md" not in cmd.get_help(ctx), path
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, (*path, name), ctx)

    walk(cli, (), None)
