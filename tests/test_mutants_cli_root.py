"""What the survivors of mutation testing of nodecli/cli/root.py showed untested (issue 33,
item 2): classic flags are named by their long spelling in the refusals, and a refused
--deadline is quoted to exactly 40 characters."""

from __future__ import annotations

import pytest

from nodecli.errors import ExitCode


@pytest.mark.parametrize(("argv", "message"), [
    (["-l", "-u", "alice", "user", "list"],
     "classic flags (--list, --user) cannot be combined with the 'user' subcommand"),
    (["--acl-list", "-d", "-u", "x", "user", "list"],
     "classic flags (--acl-list, --delete, --user) cannot be combined with the 'user' "
     "subcommand"),
    (["-l", "-d", "-u", "x"], "choose one action, not --list, --delete"),
])
def test_classic_flags_are_named_by_their_long_spelling(invoke, home, argv, message):
    r = invoke(*argv)
    assert r.exit_code == ExitCode.USAGE
    assert r.stderr.splitlines()[0] == f"nodecli: error: {message}"


def test_a_deadline_past_a_week_is_quoted_to_forty_characters(invoke, home):
    week_and_a_second = "1w" + "0s" * 19 + "1s"  # 42 characters, a valid duration
    r = invoke("--deadline", f"  {week_and_a_second}  ", "user", "list")
    assert r.exit_code == ExitCode.USAGE
    assert r.stderr.splitlines()[0] == (
        f"nodecli: error: --deadline (NODECLI_DEADLINE): {week_and_a_second[:40]!r} is not "
        "between 1s and 1w")
    r = invoke("--deadline", "1w" + "0s" * 20, "user", "list")  # exactly a week: taken
    assert r.exit_code == 0, r.stderr
