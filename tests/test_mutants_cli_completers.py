"""What the survivors of mutation testing of nodecli/cli/completers.py showed untested
(issue 33, item 2): where each kind of name is read from (and what is not taken), which
home is read, and the classic short-flag clusters, through the real entry point's
completion protocol, in-process (tests/test_completion.py runs the same protocol in
subprocesses, which also checks that no heavy stack is imported)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nodecli.config.model import NodeProfile, TransferUser
from nodecli.config.paths import resolve_paths
from nodecli.config.store import ConfigStore


def tab(words: str, *, shell: str = "bash") -> list[tuple[str, ...]]:
    """What nodecli answers on <TAB> after ``words`` (the last word is the incomplete
    one): (type, value) per item for bash, (type, value, help) for zsh."""
    from nodecli.cli.main import run

    parts = words.split(" ")
    env = {"_NODECLI_COMPLETE": f"{shell}_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(len(parts) - 1)}
    with CliRunner().isolation(env=env) as (out, err, _):
        with pytest.raises(SystemExit) as stop:
            run([])
        text, errors = out.getvalue().decode(), err.getvalue().decode()
    assert (stop.value.code, errors) == (0, "")
    lines = text.splitlines()
    if shell == "zsh":
        return [tuple(lines[i:i + 3]) for i in range(0, len(lines), 3)]
    return [tuple(line.split(",", 1)) for line in lines if line]


def names(words: str) -> list[str]:
    return [item[1] for item in tab(words) if item[0] == "plain"]


def add_profiles(home: Path, **nodes: str | None) -> None:
    with ConfigStore(resolve_paths(home)).edit() as cfg:
        for xuser in ("aspera", "archive"):
            cfg.transfer_users[xuser] = TransferUser(xuser, ["file:////data/*"])
        for name, access_key in nodes.items():
            cfg.nodes[name] = NodeProfile(name=name, url=f"https://{name}:9092",
                                          access_key=access_key)


def key_pair_folder(home: Path, name: str, private: bool = True) -> None:
    folder = home / "keys" / name
    folder.mkdir(parents=True)
    (folder / ("private.pem" if private else "public.pem")).write_text("x")


def emulator_keys(home: Path, text: str) -> None:
    folder = home / "state" / "emulator"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "access_keys.json").write_text(text)


@pytest.fixture
def names_home(invoke, home, tmp_path):
    """A home with node users, transfer users, node and service profiles, made by the
    commands a user runs."""
    from tests.test_completion import add_names

    add_names(invoke, tmp_path)
    return home


def test_each_kind_of_name_completes_sorted_by_what_is_typed(names_home):
    assert names("nodecli user show ") == ["ops", "usr1", "usr2"]
    assert names("nodecli user show u") == ["usr1", "usr2"]
    assert names("nodecli user show x") == []
    assert names("nodecli xuser delete ") == ["archive", "aspera"]
    assert names("nodecli node show ") == ["lab", "prod"]
    assert names("nodecli operations list --service c") == ["corp", "corp-test"]


def test_access_keys_come_from_profiles_key_folders_and_an_emulator_run(names_home):
    key_pair_folder(names_home, "AKlocal")
    key_pair_folder(names_home, "AKpublic-only", private=False)
    (names_home / "keys" / "stray-file").write_text("x")
    emulator_keys(names_home, json.dumps({"access_keys": [
        {"id": "AKemu"}, {"id": 7}, {"secret": "no id"}, {"id": "AKprod"}]}))
    # the lab profile has no access key: nothing stands for it
    assert names("nodecli access-key show ") == ["AKemu", "AKlocal", "AKprod"]
    assert names("nodecli access-key show AKl") == ["AKlocal"]


@pytest.mark.parametrize("saved", [
    "not json", json.dumps([{"id": "AKemu"}]), json.dumps({"access_keys": ["AKemu"]}),
    json.dumps({"access_keys": None}), json.dumps({"keys": [{"id": "AKemu"}]})])
def test_a_damaged_emulator_key_list_leaves_the_other_sources(names_home, saved):
    key_pair_folder(names_home, "AKlocal")
    emulator_keys(names_home, saved)
    assert names("nodecli access-key show ") == ["AKlocal", "AKprod"]


def test_an_emulator_key_list_over_8_mib_is_not_read(names_home):
    entries = {"access_keys": [{"id": "AKemu"}]}
    text = json.dumps(entries)
    padding = " " * ((8 << 20) + (1 << 19))  # 8.5 MiB of blanks inside the object
    emulator_keys(names_home, text[:-1] + padding + "}")
    assert names("nodecli access-key show ") == ["AKprod"]
    emulator_keys(names_home, text[:-1] + padding[:(8 << 20) - 100] + "}")
    assert names("nodecli access-key show ") == ["AKemu", "AKprod"]


def test_a_damaged_config_still_completes_the_key_folders(names_home):
    key_pair_folder(names_home, "AKlocal")
    (names_home / "config.toml").write_text("[broken\n")
    assert names("nodecli user show ") == []
    assert names("nodecli access-key show ") == ["AKlocal"]


def test_checkpoint_and_scan_names_come_from_their_files(home):
    nodes = home / "state" / "checkpoints"
    for node, files in {"prod": ["nightly@aa.json", "night-audit@bb.json", "odd@x@y.json",
                                 "notes.txt", "plain.json", "nightly@cc.json"],
                        "lab": ["weekly@dd.json"]}.items():
        (nodes / node).mkdir(parents=True)
        for name in files:
            (nodes / node / name).write_text("{}")
    (nodes / "a-file-not-a-folder").write_text("x")
    assert names("nodecli events tail --resume ") == ["night-audit", "nightly", "odd",
                                                      "weekly"]
    assert names("nodecli events tail --resume ni") == ["night-audit", "nightly"]
    scans = home / "state" / "scans"
    scans.mkdir(parents=True)
    for name in ("big.json", "small.json", "notes.txt"):
        (scans / name).write_text("{}")
    assert names("nodecli files du --resume ") == ["big", "small"]


def test_file_and_folder_options_let_the_shell_complete_paths(names_home):
    assert tab("nodecli token create -u usr1 --key-file-dir ab") == [("dir", "ab")]
    assert tab("nodecli token create -u usr1 --key-file-path ab") == [("file", "ab")]


def test_the_home_typed_on_the_line_wins(names_home, tmp_path, monkeypatch):
    monkeypatch.setenv("NODECLI_HOME", str(tmp_path / "empty-home"))
    assert names("nodecli user show ") == []
    assert names(f"nodecli --home {names_home} user show ") == ["ops", "usr1", "usr2"]
    assert names(f"nodecli --home {names_home} -mu ") == ["ops", "usr1", "usr2"]
    assert names(f"nodecli --home {names_home} -muus") == ["-muusr1", "-muusr2"]
    assert names(f"nodecli --home {names_home} access-key show ") == ["AKprod"]


# -- classic short-flag clusters ----------------------------------------------------------

def test_a_cluster_ending_in_a_value_option_completes_its_value(names_home):
    assert names("nodecli -mu ") == ["ops", "usr1", "usr2"]
    assert names("nodecli -du u") == ["usr1", "usr2"]
    assert names("nodecli -au new -x a") == ["archive", "aspera"]


def test_a_value_typed_against_its_flags_completes_with_them(names_home):
    assert names("nodecli -muus") == ["-muusr1", "-muusr2"]
    assert names("nodecli -au new -xar") == ["-xarchive"]
    assert names("nodecli user list -ojs") == ["-ojson", "-ojsonl"]


def test_after_a_double_dash_a_cluster_is_no_cluster(names_home):
    assert "ops" not in names("nodecli -- -mu ")
    assert names("nodecli -- -muus") == []


def test_a_home_typed_after_the_subcommand_is_the_home_names_come_from(names_home, tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv("NODECLI_HOME", str(tmp_path / "empty-home"))
    assert names(f"nodecli user show --home {names_home} u") == ["usr1", "usr2"]
    assert names(f"nodecli xuser --home={names_home} delete ") == ["archive", "aspera"]
    # a --home still awaiting its value: nothing to complete from, and no error
    assert tab("nodecli user show --home ") == []


def test_a_word_without_its_dash_is_no_cluster(names_home):
    from nodecli.cli.completers import split_cluster
    from nodecli.cli.root import cli
    from tests.conftest import cli_context

    # "xmu" and "xuus" read from their second letter would be -mu and -u with "us"
    assert split_cluster(cli, cli_context(cli, "nodecli"), "xmu") is None
    assert names("nodecli -q xuus") == []
    assert "ops" not in names("nodecli xmu ")


def test_without_any_home_set_the_platform_folders_are_read(tmp_path, monkeypatch):
    monkeypatch.delenv("NODECLI_HOME")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    with ConfigStore(resolve_paths()).edit() as cfg:
        cfg.transfer_users["aspera"] = TransferUser("aspera", ["file:////data/*"])
    assert (tmp_path / "xdg-config" / "nodecli" / "config.toml").is_file()
    assert names("nodecli xuser delete ") == ["aspera"]
