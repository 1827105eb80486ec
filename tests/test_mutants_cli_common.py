"""The shared CLI helpers (nodecli/cli/common.py) as a user meets them: the words of
each refusal, the bounds of a count, the formats an unknown -o lists, a document read
from '-', the proxy password a profile keeps, and the default profile's messages."""

from __future__ import annotations

import json
import tomllib

import pytest

REMOTE = ["--url", "https://h.example:9092", "--access-key", "ak"]


def _error(r) -> str:
    return r.stderr.splitlines()[0]


# --- Count: from low up to 2^63-1 -------------------------------------------------------

def test_a_count_below_its_low_is_refused_in_words(invoke):
    r = invoke("events", "list", "--count", "-1")
    assert r.exit_code == 2
    assert _error(r) == ("nodecli: error: Invalid value for '--count': -1 is smaller "
                         "than 0")
    r = invoke("events", "list", "--count", str(2**63))
    assert r.exit_code == 2
    assert _error(r) == ("nodecli: error: Invalid value for '--count': "
                         f"{2**63} is more than a node can count (2^63-1)")


def test_a_count_at_either_bound_is_taken(invoke, node_env, log):
    log.generate(3)
    for count in ("0", str(2**63 - 1)):
        r = invoke("events", "list", "--count", count, "-o", "json", env=node_env)
        assert r.exit_code == 0, r.stderr


# --- OutputFormat: what an unknown format lists -----------------------------------------

def test_an_unknown_format_lists_the_formats_there_are(invoke, tmp_path):
    r = invoke("node", "list", "-o", "xml")
    assert r.exit_code == 2
    assert _error(r) == ("nodecli: error: Invalid value for '-o' / '--output': 'xml' is "
                         "not one of table, wide, json, jsonl, csv, yaml, raw, "
                         "columns=PATH,...")
    # a command whose json is not shaped lists its own formats only
    (tmp_path / "d.yaml").write_text("{}\n")
    r = invoke("diff", "-f", str(tmp_path / "d.yaml"), "-o", "xml")
    assert r.exit_code == 2
    assert _error(r) == ("nodecli: error: Invalid value for '-o' / '--output': 'xml' is "
                         "not one of table, json")


def test_an_unknown_format_is_quoted_to_40_characters(invoke):
    r = invoke("node", "list", "-o", "x" * 39 + "yz")
    assert r.exit_code == 2
    assert f"'{'x' * 39}y' is not one of" in _error(r)


# --- InputFile: '-' is standard input where the option allows it -----------------------

def test_a_document_from_standard_input(invoke, home):
    invoke("xuser", "add", "x", "-r", "file:////d/*")
    exported = invoke("config", "export", "-").stdout
    r = invoke("config", "import", "-", "--merge", input=exported)
    assert r.exit_code == 0, r.stderr


def test_a_dash_is_a_file_name_where_stdin_is_not_taken(invoke, home):
    r = invoke("node", "info", "--url", "https://127.0.0.1:1", "--user", "u",
               "--cacert", "-", input="")
    assert r.exit_code == 5, r
    assert r.stderr.splitlines() == ["nodecli: error: CA file -: no such file"]


def test_node_set_with_a_missing_file_names_it(invoke, home, tmp_path):
    assert invoke("node", "add", "a", *REMOTE).exit_code == 0
    missing = tmp_path / "ca.pem"
    r = invoke("node", "set", "a", "--cacert", str(missing))
    assert r.exit_code == 5, r
    assert r.stderr.splitlines() == [f"nodecli: error: CA file {missing}: no such file"]


# --- secrets and confirmations without a terminal ---------------------------------------

def test_a_password_from_nodecli_password(invoke, home):
    r = invoke("user", "add", "bob", "-x", "x", input="",
               env={"NODECLI_PASSWORD": "pw-1234567"})
    assert r.exit_code == 0, r.stderr
    r = invoke("user", "add", "eve", "-x", "x", input="")
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "nodecli: error: a password is needed and stdin is not a terminal: use "
        "-p/--password, --password-stdin or NODECLI_PASSWORD"]
    r = invoke("user", "delete", "bob", input="")
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "nodecli: error: confirmation needed and stdin is not a terminal: use --yes"]


def test_an_empty_password_given_as_a_flag_is_refused_in_words(invoke, home):
    r = invoke("user", "add", "bob", "-x", "x", "-p", "", input="")
    assert (r.exit_code, r.stderr) == (2, "nodecli: error: the password is empty\n"), r
    assert invoke("user", "list", "-o", "json").stdout.strip() == "[]"


def test_a_secret_with_no_variable_names_only_its_flags(invoke, home):
    r = invoke("node", "info", "--url", "https://127.0.0.1:1", "--user", "u", input="")
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "nodecli: error: a password of node user 'u' is needed and stdin is not a "
        "terminal: use --password-stdin or NODECLI_PASSWORD"]


# --- the proxy password a profile keeps -------------------------------------------------

def _secrets(home) -> dict[str, str]:
    path = home / "secrets.toml"
    return tomllib.loads(path.read_text())["secrets"] if path.exists() else {}


def test_the_proxy_password_is_kept_only_with_a_proxy(invoke, home):
    env = {"NODECLI_PROXY_PASSWORD": "from-env"}
    proxy = ["--proxy", "http://u@p.example:3128"]
    assert invoke("node", "add", "a", *REMOTE, *proxy, input="", env=env).exit_code == 0
    assert invoke("node", "add", "b", *REMOTE, input="", env=env).exit_code == 0
    assert _secrets(home) == {"node:a:proxy": "from-env"}
    r = invoke("node", "add", "c", *REMOTE, *proxy, "--proxy-password-stdin", input="")
    assert r.exit_code == 2
    assert r.stderr.splitlines() == ["nodecli: error: no proxy password on standard input"]
    r = invoke("node", "add", "c", *REMOTE, *proxy, "--proxy-password-stdin",
               input="from-stdin\n")
    assert r.exit_code == 0, r.stderr
    assert _secrets(home)["node:c:proxy"] == "from-stdin"


# --- default profile: its words ---------------------------------------------------------

@pytest.mark.parametrize("kind", ["node"])
def test_the_default_profile_says_what_it_did(invoke, home, kind):
    assert invoke(kind, "add", "a", *REMOTE).exit_code == 0
    assert invoke(kind, "add", "b", *REMOTE).exit_code == 0
    r = invoke(kind, "default", "b")
    assert r.exit_code == 0 and r.stderr == f"default {kind} profile: b\n"
    r = invoke(kind, "default", "--unset")
    assert r.exit_code == 0 and r.stderr == f"no default {kind} profile\n"
    r = invoke(kind, "default", "a", "--unset")
    assert r.exit_code == 2
    assert _error(r) == "nodecli: error: give NAME or --unset, not both"


# --- --nodes / --all-nodes: what matches nothing ----------------------------------------

def test_a_fleet_that_names_no_profile(invoke, home):
    r = invoke("node", "info", "--all-nodes", "-o", "json")
    assert r.exit_code == 2
    assert _error(r) == "nodecli: error: no node profiles"
    assert invoke("node", "add", "a", *REMOTE).exit_code == 0
    r = invoke("node", "info", "--nodes", "zz*,", "-o", "json")
    assert r.exit_code == 2
    assert _error(r) == "nodecli: error: no node profile matches"
    assert json.loads(invoke("node", "list", "-o", "json").stdout)[0]["name"] == "a"


def test_a_fleet_and_one_node_together_are_refused(invoke, home):
    r = invoke("node", "info", "--url", "https://h.example:9092", "--all-nodes")
    assert r.exit_code == 2
    assert _error(r) == "nodecli: error: give --node/--url or --nodes/--all-nodes, not both"


def test_field_with_columns_is_refused_in_words(invoke, home):
    r = invoke("node", "list", "--field", "name", "-o", "columns=name")
    assert r.exit_code == 2
    assert _error(r) == ("nodecli: error: --field prints raw values: not with -o yaml or "
                         "-o columns=")


def test_a_secret_on_stdin_loses_only_its_line_end(invoke, home):
    for name, typed in (("n1", "p1 \n"), ("n2", "p2X\r\n")):
        r = invoke("node", "add", name, "--url", "https://h.example:9092", "--user", "u",
                   "--password-stdin", "--no-check", input=typed)
        assert r.exit_code == 0, r.stderr
    assert _secrets(home) == {"node:n1": "p1 ", "node:n2": "p2X"}


def test_a_proxy_password_on_stdin_is_refused_in_words_where_it_cannot_be(invoke, home):
    r = invoke("node", "add", "n1", "--url", "https://h.example:9092", "--user", "u",
               "--proxy-password-stdin", input="pw\n")
    assert (r.exit_code, r.stderr) == (
        2, "nodecli: error: --proxy-password-stdin goes with --proxy URL\n"), r
    r = invoke("node", "add", "n1", "--url", "https://h.example:9092", "--user", "u",
               "--proxy", "http://pu@proxy.example:3128", "--proxy-password-stdin",
               "--password-stdin", input="pw\n")
    assert (r.exit_code, r.stderr) == (
        2, "nodecli: error: --proxy-password-stdin and --password-stdin both read stdin: "
           "give the proxy's password in NODECLI_PROXY_PASSWORD instead\n"), r
    assert invoke("node", "list", "-o", "json").stdout.strip() == "[]"
