"""Where nodecli keeps its files: --home / NODECLI_HOME resolution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecli.config.paths import Paths, absolute, resolve_paths
from tests.conftest import subprocess_env

_parts = st.lists(st.sampled_from(["", ".", "..", "a", "b c", "x.y", "~", "é"]), max_size=6)


@settings(max_examples=400, deadline=None)
@given(prefix=st.sampled_from(["", "/", "//", "///", "~/", "~"]), parts=_parts)
def test_absolute_is_what_pathlib_gives(prefix, parts):
    """The same folder as ``Path(home).expanduser().absolute()``: '~' expanded, relative
    to the working folder, '//' (beyond a leading pair) and '.' dropped, '..' kept."""
    home = prefix + "/".join(parts)
    if not home:
        return
    if home.startswith("~") and not home.startswith("~/") and home != "~":
        return  # ~name: see test_unknown_user_home_is_a_plain_folder_name
    if not home.startswith("~") and str(Path(home)).startswith("~"):
        # pathlib drops a leading './' before expanding, so './~' would become $HOME;
        # a shell (and nodecli) keeps it a folder named '~' in the working folder
        return
    assert absolute(home) == str(Path(home).expanduser().absolute())


@pytest.mark.parametrize("home, expected", [
    ("./~", os.path.join(os.getcwd(), "~")),
    ("a/./b//", os.path.join(os.getcwd(), "a", "b")),
    ("/x/../y", "/x/../y"),
    ("//srv/x", "//srv/x"),
    ("~nosuchuser-nodecli/x", os.path.join(os.getcwd(), "~nosuchuser-nodecli", "x")),
])
def test_absolute_examples(home, expected):
    assert absolute(home) == expected


def test_paths_are_paths_and_compare_by_value(tmp_path):
    paths = resolve_paths(tmp_path)
    assert paths == Paths(tmp_path, tmp_path, tmp_path / "state")
    assert hash(paths) == hash(resolve_paths(str(tmp_path)))
    assert paths.config_file == tmp_path / "config.toml"
    assert paths.keys_dir == tmp_path / "keys"
    assert all(isinstance(v, str) for v in paths.as_dict().values())  # as JSON shows them
    with pytest.raises(AttributeError):
        paths.config_dir = "/elsewhere"  # type: ignore[misc]


def test_unknown_user_home_is_a_plain_folder_name(tmp_path, monkeypatch, invoke):
    """``--home ~nosuchuser/x`` names a folder; it used to end in an internal error
    (pathlib's expanduser raised for the unknown user). In process, through the entry
    point's error mapping: a subprocess would run mutmut's trampolines in a process
    without mutmut's state, and from another folder, so that mutation testing failed it
    before any mutant."""
    monkeypatch.chdir(tmp_path)
    r = invoke("--home", "~nosuchuser-nodecli/x", "config", "path", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    assert json.loads(r.stdout)["config"] == str(tmp_path / "~nosuchuser-nodecli" / "x"
                                                 / "config.toml")


def test_local_commands_do_not_import_the_network_or_crypto_stacks(tmp_path):
    """Reading the config, listing users and adding one never import the HTTP or TLS
    stacks, cryptography or rich (output is not a terminal): local commands start fast."""
    env = subprocess_env({"NODECLI_HOME": str(tmp_path), "NODECLI_PASSWORD": "s3cret-pw!"})
    probe = ("import sys\n"
             "sys.argv = ['nodecli', *sys.argv[1:]]\n"
             "from nodecli.cli.main import main\n"
             "try:\n    main()\n"
             "except SystemExit:\n    pass\n"
             "heavy = {'httpx2', 'httpcore2', 'h11', 'ssl', 'cryptography', 'rich'}\n"
             "bad = sorted(heavy & {m.split('.')[0] for m in sys.modules})\n"
             "sys.stderr.write(f'IMPORTED={bad}\\n')\n")
    for argv in (["xuser", "add", "aspera", "--restriction", "file:////data/*"],
                 ["user", "add", "alice", "--xuser", "aspera"], ["user", "list"], ["-l"],
                 ["xuser", "list"], ["user", "show", "alice"]):
        r = subprocess.run([sys.executable, "-c", probe, *argv], env=env, capture_output=True,
                           text=True, timeout=60, check=False)
        assert "IMPORTED=[]" in r.stderr, (argv, r.stderr)
