"""What the survivors of mutation testing of nodecli/cli/lazy.py showed untested (issue 33,
item 2): the help layout at a given terminal width, line by line (examples and two-column
lists kept pasteable and whole, paragraphs, the usage line, the option list), the lazy
group's own behaviour (names, suggestions, completion, a module that names no command)
and the global options taken from after a subcommand."""

from __future__ import annotations

import json

import click
import click.testing
import pytest
from click.testing import CliRunner

from nodecli.cli.lazy import (
    HelpFormatter,
    LazyGroup,
    adopt,
    hoist_global_options,
    lazy_completer,
    wrap_help,
)
from tests.conftest import cli_context


def raw_block(*lines: str, width: int, indent: str = "") -> list[str]:
    """How help shows a ``\\b`` block (kept as written) at ``width`` columns."""
    return wrap_help("\b\n" + "\n".join(lines), width, indent).split("\n")


# -- examples and two-column lists (``\b`` blocks) ---------------------------------------

DESCRIBED = "  --flag   a description that is long enough to wrap around twice or more"


def test_a_description_stays_beside_its_term_while_24_columns_are_left():
    # the description starts at column 11: 11 + 24 = 35 columns are enough
    assert raw_block(DESCRIBED, width=35) == [
        "  --flag   a description that is",
        "           long enough to wrap",
        "           around twice or more"]
    # one column fewer: the description goes under the term, indented by four
    assert raw_block(DESCRIBED, width=34) == [
        "  --flag",
        "      a description that is long",
        "      enough to wrap around twice",
        "      or more"]


def test_a_term_too_long_for_the_line_is_folded_then_its_description_under_it():
    line = ("  nodecli user add alice --xuser aspera --password-stdin   add a user reading "
            "the password")
    assert raw_block(line, width=30) == [
        "  nodecli user add alice \\",
        "      --xuser aspera \\",
        "      --password-stdin",
        "      add a user reading the",
        "      password"]


def test_a_term_exactly_as_wide_as_the_line_is_kept_whole():
    line = "  nodecli user add alice   add a user reading the password from stdin"
    assert len("  nodecli user add alice") == 24
    assert raw_block(line, width=24) == [
        "  nodecli user add alice",
        "      add a user reading",
        "      the password from",
        "      stdin"]


def test_a_long_description_word_under_its_term_is_never_cut():
    line = "    --password-stdin   read-the-password-from-standard-input (one line) then hash it"
    assert raw_block(line, width=38) == [
        "    --password-stdin",
        "        read-the-password-from-standard-input",
        "        (one line) then hash it"]


def test_a_long_plain_line_is_wrapped_under_its_own_indent_words_whole():
    line = "  some-hyphenated-long-word-that-exceeds and more words than fit"
    assert raw_block(line, width=20) == [
        "  some-hyphenated-long-word-that-exceeds",
        "  and more words",
        "  than fit"]


def test_a_command_example_is_folded_with_backslashes_so_it_can_still_be_pasted():
    line = "  nodecli user add alice --xuser aspera --password-stdin"
    # the example is wrapped two columns short of the line, for the " \"
    assert raw_block(line, width=20) == [
        "  nodecli user add \\",
        "      alice \\",
        "      --xuser \\",
        "      aspera \\",
        "      --password-stdin"]
    line = "  nodecli user add alice --xuser aspera --password-stdin --access-key-of-a-node"
    assert raw_block(line, width=30) == [
        "  nodecli user add alice \\",
        "      --xuser aspera \\",
        "      --password-stdin \\",
        "      --access-key-of-a-node"]


def test_a_shell_prompt_example_is_folded_too_and_never_under_ten_columns():
    assert raw_block("$ nodecli add abc", width=8) == ["$ nodecli \\", "    add \\", "    abc"]
    assert raw_block("$ nodecli add abc", width=13) == ["$ nodecli \\", "    add abc"]


def test_a_line_that_fits_exactly_is_kept_as_written():
    line = "nodecli user add alice --xuser x"
    assert raw_block(line, width=len(line)) == [line]
    assert raw_block(line, width=len(line) - 1) == ["nodecli user add alice \\",
                                                    "    --xuser x"]


# -- paragraphs ---------------------------------------------------------------------------

def test_paragraphs_are_filled_to_the_width_under_their_own_indent():
    text = ("First paragraph with some-hyphenated-words and a\n"
            "second source line.\n\n"
            "    An indented paragraph that is long enough to wrap.\n"
            "    Its second line.\n")
    assert wrap_help(text, 24) == (
        "First paragraph with\n"
        "some-hyphenated-words\n"
        "and a second source\n"
        "line.\n"
        "\n"
        "    An indented\n"
        "    paragraph that is\n"
        "    long enough to wrap.\n"
        "    Its second line.")


def test_an_indented_first_paragraph_keeps_its_indent():
    assert wrap_help("    indented from the start, and wrapped", 24) == (
        "    indented from the\n"
        "    start, and wrapped")


def test_a_word_longer_than_the_line_stays_whole_in_a_paragraph():
    assert wrap_help("use --password-stdin-or-the-prompt here", 12, "  ") == (
        "  use\n"
        "  --password-stdin-or-the-prompt\n"
        "  here")


def test_a_kept_block_keeps_its_lines_and_the_paragraph_after_it_is_filled():
    text = "\b\nnodecli a\n  nodecli b\n\nafter the block, filled\nto the line"
    assert wrap_help(text, 40, "  ") == (
        "  nodecli a\n"
        "    nodecli b\n"
        "\n"
        "  after the block, filled to the line")


# -- the usage line and the option list ----------------------------------------------------

def formatter(width: int, indent: int = 0) -> HelpFormatter:
    f = HelpFormatter(width=width)
    for _ in range(indent):
        f.indent()
    return f


def usage(width: int, prog: str, args: str, indent: int = 0) -> str:
    f = formatter(width, indent)
    f.write_usage(prog, args)
    return f.getvalue()


def test_usage_continues_under_the_arguments_while_20_columns_are_left():
    args = "[OPTIONS] NAME --password-stdin --xuser XUSER"
    # "Usage: nodecli user add " is 24 columns: 44 leave 20 for the arguments
    assert usage(44, "nodecli user add", args) == (
        "Usage: nodecli user add [OPTIONS] NAME\n"
        "                        --password-stdin\n"
        "                        --xuser XUSER\n")
    assert usage(43, "nodecli user add", args) == (
        "Usage: nodecli user add [OPTIONS] NAME\n"
        "    --password-stdin --xuser XUSER\n")


def test_usage_continues_under_the_arguments_only_if_its_longest_word_fits():
    args = "[OPTIONS] --a-very-long-option-spelling NAME"  # a word of 29 columns
    assert usage(53, "nodecli user add", args) == (
        "Usage: nodecli user add [OPTIONS]\n"
        "                        --a-very-long-option-spelling\n"
        "                        NAME\n")
    assert usage(52, "nodecli user add", args) == (
        "Usage: nodecli user add [OPTIONS]\n"
        "    --a-very-long-option-spelling NAME\n")


def test_usage_on_a_narrow_indented_page_goes_on_four_columns_in():
    assert usage(30, "nodecli", "[OPTIONS] A B --password-stdin E F G H I J K L M N",
                 indent=1) == ("Usage: nodecli [OPTIONS] A B\n"
                               "      --password-stdin E F G H\n"
                               "      I J K L M N\n")
    # a word longer than the line is kept whole
    assert usage(20, "nodecli", "--a-very-long-option-spelling X") == (
        "Usage: nodecli --a-very-long-option-spelling\n"
        "    X\n")


def test_a_command_with_no_arguments_at_all_has_a_bare_usage_line():
    cmd = adopt(click.Command("bare", options_metavar="", add_help_option=False))
    ctx = cli_context(cmd, "nodecli-bare")
    assert cmd.get_usage(ctx) == "Usage: nodecli-bare"


def option_list(width: int, rows: list[tuple[str, str]], indent: int = 1) -> list[str]:
    f = formatter(width, indent)
    f.write_dl(rows)
    return f.getvalue().split("\n")


THIRTY = "--thirty-columns-exactly-xx XY"  # as wide as the first column may be


def test_the_option_list_in_two_columns_on_a_wide_terminal():
    assert option_list(80, [
        ("-q, --quiet", "say less: only errors, and the data asked for"),
        (THIRTY, "beside it"),
        ("--home DIR", ""),
        ("--a-very-long-option-name-here TEXT", "the long one"),
        ("-x", "a first paragraph\n\na second one\nwith a continued line"),
    ]) == [
        "  -q, --quiet                     say less: only errors, and the data asked for",
        "  --thirty-columns-exactly-xx XY  beside it",
        "  --home DIR",
        "  --a-very-long-option-name-here TEXT",
        "                                  the long one",
        "  -x                              a first paragraph",
        "                                  a second one with a continued line",
        ""]


def test_descriptions_stay_beside_while_24_columns_are_left_for_them():
    rows = [("-q, --quiet", "say less: only errors, and the data asked for"),
            (THIRTY, "beside it")]
    # descriptions start at column 34: 58 columns leave them 24
    assert option_list(58, rows) == [
        "  -q, --quiet                     say less: only errors,",
        "                                  and the data asked for",
        "  --thirty-columns-exactly-xx XY  beside it",
        ""]
    assert option_list(57, rows) == [
        "  -q, --quiet",
        "      say less: only errors, and the data asked for",
        "  --thirty-columns-exactly-xx XY",
        "      beside it",
        ""]


def test_a_description_goes_under_its_term_when_a_word_of_it_would_not_fit_beside():
    assert option_list(58, [(THIRTY, "a-word-of-twenty-four-xx and more")]) == [
        "  --thirty-columns-exactly-xx XY  a-word-of-twenty-four-xx",
        "                                  and more",
        ""]
    assert option_list(58, [(THIRTY, "a-word-of-twenty-five-xxx and more")]) == [
        "  --thirty-columns-exactly-xx XY",
        "      a-word-of-twenty-five-xxx and more",
        ""]


def test_a_term_one_column_wider_than_the_first_column_has_its_description_under():
    assert option_list(80, [("--thirty-one-columns-exactly-xy", "under it"),
                            ("-q", "quiet")]) == [
        "  --thirty-one-columns-exactly-xy",
        "                                  under it",
        "  -q                              quiet",
        ""]


def test_descriptions_break_between_words_never_at_a_hyphen_or_inside_a_word():
    assert option_list(58, [(THIRTY, "aaaa bbbb cccc dddd-eeee-ffff")]) == [
        "  --thirty-columns-exactly-xx XY  aaaa bbbb cccc",
        "                                  dddd-eeee-ffff",
        ""]
    assert option_list(20, [("-q", "see a-very-long-word-longer ok")], indent=0) == [
        "-q", "    see", "    a-very-long-word-longer", "    ok", ""]


def test_on_a_very_narrow_terminal_descriptions_wrap_at_no_less_than_ten_columns():
    assert option_list(20, [("-q", "narrow terminal text that wraps")], indent=0) == [
        "-q", "    narrow terminal", "    text that wraps", ""]
    assert option_list(12, [("-q", "abcdef ghij")], indent=0) == [
        "-q", "    abcdef", "    ghij", ""]


def test_an_option_list_with_no_rows_or_a_blank_description_writes_no_text():
    assert option_list(80, []) == [""]
    assert option_list(80, [("-b", "   "), ("-c", "")]) == [
        "  -b  ", "  -c", ""]


# -- the lazy group -----------------------------------------------------------------------

LONG_WORD = "--an-option-spelling-far-longer-than-any-help-line-can-hold-on-this-terminal"
ALPHA = click.Command("alpha", help=f"Alpha body: see {LONG_WORD}.",
                      callback=lambda: click.echo("alpha ran"))
NOT_A_COMMAND = "a string"


def demo_group() -> click.Group:
    """A group made as the tree makes its groups: a lazy command (with an alias), a
    command held by the group, a hidden one, and an option of its own."""
    @click.group("demo", cls=LazyGroup, lazy_subcommands={
        "alpha": ("tests.test_mutants_cli_lazy:ALPHA", "The alpha one.")},
        aliases={"alphas": "alpha"})
    @click.option("--level", type=int, help="A level.")
    def demo(level: int | None) -> None:
        """A demo group."""

    @demo.command("beta")
    def beta() -> None:
        """The beta one."""
        click.echo("beta ran")

    @demo.command("gamma", hidden=True)
    def gamma() -> None:
        """The hidden one."""
    return demo


def run_demo(*args: str) -> click.testing.Result:
    return CliRunner().invoke(demo_group(), list(args), terminal_width=80)


def test_the_group_help_lists_lazy_and_held_commands_first_and_no_hidden_one():
    r = run_demo("--help")
    assert r.exit_code == 0, r.output
    assert r.output.split("\n")[1:] == [
        "",
        "  A demo group.",
        "",
        "Commands:",
        "  alpha  The alpha one.",
        "  beta   The beta one.",
        "",
        "Options:",
        "  --level INTEGER  A level.",
        "  --help           Show this message and exit.",
        ""]


def test_a_lazily_loaded_command_gets_the_help_layout_of_the_tree():
    # click's own layout would cut the word at the line's end
    r = run_demo("alpha", "--help")
    assert r.exit_code == 0, r.output
    assert f"  {LONG_WORD}." in r.output.split("\n")


def test_a_group_named_alone_on_a_tab_completes_its_commands_and_prints_no_help():
    from tests.test_mutants_cli_completers import tab

    assert tab("nodecli xuser ") == [("plain", n) for n in ("add", "delete", "list",
                                                             "set", "show")]


def test_commands_lazy_aliased_and_held_all_run():
    assert run_demo("alpha").output == "alpha ran\n"
    assert run_demo("alphas").output == "alpha ran\n"
    assert run_demo("beta").output == "beta ran\n"
    demo = demo_group()
    assert demo.list_commands(cli_context(demo, "demo")) == ["alpha", "beta", "gamma"]


@pytest.mark.parametrize(("typed", "suggestion"), [
    ("alph", " Did you mean 'alpha'?"), ("bet", " Did you mean 'beta'?"),
    ("gamm", ""), ("alphass", " Did you mean 'alpha'?")])
def test_a_mistyped_command_is_suggested_only_among_the_shown_names(typed, suggestion):
    r = run_demo(typed)
    assert r.exit_code == 2
    assert f"Error: No such command {typed!r}.{suggestion}\n" in r.output


def test_completion_offers_shown_commands_with_their_help_then_the_options():
    demo = demo_group()
    ctx = cli_context(demo, "demo")

    def offered(incomplete: str) -> list[tuple[str, str | None]]:
        return [(c.value, c.help) for c in demo.shell_complete(ctx, incomplete)]

    assert offered("") == [("alpha", "The alpha one."), ("beta", "The beta one.")]
    assert offered("b") == [("beta", "The beta one.")]
    assert offered("g") == []
    assert offered("--") == [("--level", "A level."), ("--help", "Show this message and exit.")]


def test_a_lazy_name_that_is_no_command_is_named_as_a_programming_error():
    @click.group("broken", cls=LazyGroup, lazy_subcommands={
        "oops": ("tests.test_mutants_cli_lazy:NOT_A_COMMAND", "Not a command.")})
    def broken() -> None:
        """A group with a wrong entry."""

    with pytest.raises(TypeError, match=r"^tests\.test_mutants_cli_lazy:NOT_A_COMMAND is "
                                        r"not a click command$"):
        broken.get_command(cli_context(broken, "broken"), "oops")


def test_a_lazy_completer_calls_the_completer_of_that_name_with_the_context(tmp_path):
    from nodecli.cli.root import cli
    from nodecli.config.model import TransferUser
    from nodecli.config.paths import resolve_paths
    from nodecli.config.store import ConfigStore

    typed_home = tmp_path / "typed-home"  # a --home on the line, not NODECLI_HOME
    with ConfigStore(resolve_paths(typed_home)).edit() as cfg:
        for name in ("aspera", "archive", "other"):
            cfg.transfer_users[name] = TransferUser(name, ["file:////data/*"])
    complete = lazy_completer("complete_transfer_users")
    assert complete.__name__ == "complete_transfer_users"
    ctx = cli_context(cli, "nodecli")
    ctx.params["home"] = str(typed_home)
    items = complete(ctx, cli.params[0], "a")
    assert [i.value for i in items] == ["archive", "aspera"]


# -- global options after a subcommand ----------------------------------------------------

def test_global_options_between_a_group_and_its_command_are_the_globals(invoke, tmp_path):
    other = tmp_path / "other-home"
    r = invoke("xuser", "--home", str(other), "add", "aspera", "-r", "file:////data/*")
    assert r.exit_code == 0, r
    r = invoke("xuser", "-q", "list", "-o", "json", "--home", str(other))
    assert r.exit_code == 0, r
    assert [u["name"] for u in json.loads(r.stdout)] == ["aspera"]


def test_a_global_value_joined_by_an_equals_sign_keeps_the_rest_of_it(invoke, tmp_path):
    other = tmp_path / "a=b"
    r = invoke("--home", str(other), "xuser", "add", "aspera", "-r", "file:////data/*")
    assert r.exit_code == 0, r
    r = invoke("xuser", "list", "-o", "json", f"--home={other}")
    assert r.exit_code == 0, r
    assert [u["name"] for u in json.loads(r.stdout)] == ["aspera"]


def test_options_of_every_command_on_the_path_are_never_taken():
    """A group's own options stay its own after a subcommand, and so do the options of
    each nested group and of the command at the end of the path."""
    @click.group("outer")
    @click.option("-q", "quiet_here", is_flag=True)
    @click.option("--name")
    def outer(quiet_here: bool, name: str | None) -> None:
        """Outer."""

    @outer.group("inner")
    def inner() -> None:
        """Inner."""

    @inner.command("leaf")
    @click.option("-v", "--verbose", "loud", is_flag=True)
    def leaf(loud: bool) -> None:
        """Leaf."""

    ctx = cli_context(outer, "outer")
    assert hoist_global_options(ctx, outer, ["inner", "-q", "leaf", "-v", "--no-color"]) == (
        ["inner", "-q", "leaf", "-v"], {"no_color": True})
    assert hoist_global_options(ctx, outer, ["inner", "--name", "-q", "--verbose"]) == (
        ["inner", "--name", "-q"], {"verbose": 1})
    assert hoist_global_options(ctx, outer, ["inner", "leaf", "--verbose", "-v"]) == (
        ["inner", "leaf", "--verbose", "-v"], {})
    # a value of an option of the path, the next word or joined to it, is never taken
    assert hoist_global_options(ctx, outer, ["inner", "--name", "--quiet"]) == (
        ["inner", "--name", "--quiet"], {})
    assert hoist_global_options(ctx, outer, ["inner", "--name=v", "--quiet"]) == (
        ["inner", "--name=v"], {"quiet": True})
    assert hoist_global_options(ctx, outer, ["inner", "--name"]) == (["inner", "--name"], {})


# -- what resolve_command says and passes on ----------------------------------------------

def test_a_word_after_a_double_dash_that_looks_like_an_option_is_not_called_a_command(invoke):
    r = invoke("--", "--frobnicate")
    assert r.exit_code == 2
    assert "No such command" not in r.stderr


def test_an_unknown_command_of_a_nested_lazy_group_points_to_that_groups_help(invoke):
    r = invoke("files", "lss")
    assert r.exit_code == 2
    assert r.stderr == ("nodecli: error: No such command 'lss'. Did you mean 'ls'?\n"
                        "hint: see 'nodecli files --help'\n")


def test_an_unknown_command_on_a_tab_completes_without_an_error():
    from tests.test_mutants_cli_completers import tab

    assert ("plain", "user") in tab("nodecli zzz ")  # click offers the commands again
    assert ("plain", "user") in tab("nodecli zzz --no-color --home=x ")


def test_a_value_like_a_global_option_is_the_value_of_the_option_before_it(invoke):
    r = invoke("xuser", "add", "zz", "--docroot", "--quiet")
    assert r.exit_code == 2
    assert "docroot '--quiet' is not absolute" in r.stderr


def test_a_home_without_its_value_after_the_subcommand_is_named(invoke):
    r = invoke("user", "list", "--home")
    assert r.exit_code == 2
    assert r.stderr.splitlines()[0] == "nodecli: error: option '--home' requires an argument"


def test_verbose_after_the_subcommand_keeps_the_messages(invoke):
    r = invoke("xuser", "add", "zz", "--docroot", "/data", "-v")
    assert r.exit_code == 0, r
    assert "added transfer user 'zz'" in r.stderr
