"""A name that ends with a newline is refused like any name with a control character:
``$`` in the name pattern also matched before a final newline, so ``user add
$'alice\\n'`` stored a user the classic table then showed as ``alice?``."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize("argv", [
    ("user", "add", "alice\n", "--xuser", "x"),
    ("xuser", "add", "x2\n", "-r", "file:////data/*"),
    ("node", "add", "n\n", "--url", "https://n:9092", "--user", "u", "--no-secret"),
])
def test_a_name_ending_with_a_newline_is_refused_and_nothing_is_stored(invoke, home, argv):
    assert invoke("xuser", "add", "x", "-r", "file:////data/*").exit_code == 0
    before = (home / "config.toml").read_bytes()
    r = invoke(*argv)
    assert r.exit_code == 2, r
    assert "invalid" in r.stderr and "'" + argv[2].rstrip("\n") + "\\\\n'" in r.stderr
    assert (home / "config.toml").read_bytes() == before


def test_a_config_holding_such_a_name_is_refused_at_its_place(invoke, home):
    home.mkdir(parents=True, exist_ok=True)
    Path(home / "config.toml").write_text(
        'version = 1\n[transfer_users.x]\n[users."alice\\n"]\ntransfer_user = "x"\n')
    r = invoke("user", "list")
    assert r.exit_code == 3, r
    assert "config.toml: users -> alice?: in" in r.stderr  # one line: the newline shown as ?
    assert len(r.stderr.splitlines()) == 2  # the error and its hint
