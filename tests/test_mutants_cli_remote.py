"""What the survivors of mutation testing of nodecli/cli/remote.py showed untested
(issue 33): values click read from NODECLI_* variables are named as coming from the
environment, a path from NODECLI_CACERT is shown as it was given, and a profile's
secret is read from the place it recorded. Through the real
entry point against the emulator over HTTPS.
"""

from __future__ import annotations

import re
import sys

import pexpect
import pytest

from nodecli.config.model import NodeProfile
from nodecli.config.paths import resolve_paths
from nodecli.config.secrets import FileBackend, keyring_service
from nodecli.config.store import ConfigStore
from tests.conftest import REPO_ROOT, reap, subprocess_env
from tests.proxy_server import TunnelProxy
from tests.test_secrets import memory_keyring  # noqa: F401 - the fixture


def test_an_access_key_from_the_environment_is_named_so_when_refused(invoke, emulator):
    env = {"NODECLI_URL": emulator.url, "NODECLI_ACCESS_KEY": "AKenv",
           "NODECLI_PASSWORD": "not-its-secret"}
    r = invoke("node", "info", env=env)
    assert r.exit_code == 4, r.stderr
    assert ("access key from the environment; secret from NODECLI_PASSWORD"
            in r.stderr), r.stderr


def test_a_ca_file_from_the_environment_is_named_as_it_was_given(invoke, emulator,
                                                                 tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "empty.pem").write_text("")
    env = {"NODECLI_URL": emulator.url, "NODECLI_USER": "admin",
           "NODECLI_PASSWORD": "admin-pass", "NODECLI_CACERT": "~/empty.pem"}
    r = invoke("node", "info", env=env)
    assert r.exit_code == 2, r.stderr
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: cannot use CA file ~/empty.pem: it is empty")


def test_a_profile_whose_secret_is_in_the_keyring_uses_it_not_a_file_copy(
        invoke, emulator, home, memory_keyring):  # noqa: F811
    """Recorded in the keyring: the keyring is asked first (a copy in the file is only a
    fallback for a keyring that fails), so a stale copy there is not sent."""
    paths = resolve_paths(home)
    with ConfigStore(paths).edit() as cfg:
        cfg.nodes["emu"] = NodeProfile("emu", emulator.url, user="admin", secrets="keyring")
    memory_keyring.items[(keyring_service(paths), "node:emu")] = "admin-pass"
    FileBackend(paths).set("node:emu", "a-stale-password")
    r = invoke("node", "info", "--node", "emu", "-o", "json")
    assert r.exit_code == 0, r.stderr


def test_an_empty_password_on_stdin_is_refused_in_words(invoke, emulator):
    r = invoke("node", "info", "--password-stdin", input="\n",
               env={"NODECLI_URL": emulator.url, "NODECLI_USER": "admin"})
    assert r.exit_code == 2, r.stderr
    assert r.stderr.splitlines()[0] == "nodecli: error: no password on standard input"


# -- what a person is told before anything is sent ------------------------------------------------


def test_a_command_that_needs_a_bearer_token_says_so_before_asking_a_password(invoke,
                                                                              emulator,
                                                                              tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text('{"paths": []}')
    r = invoke("transfer", "start", "--spec", str(spec),
               env={"NODECLI_URL": emulator.url, "NODECLI_USER": "admin"})
    assert r.exit_code == 2, r.stderr
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: this command needs a bearer token: --bearer-file PATH (or "
        "NODECLI_BEARER) with --access-key AK, or a profile that has them")


def test_a_missing_password_without_a_terminal_names_what_and_where(invoke, emulator):
    r = invoke("node", "info", env={"NODECLI_URL": emulator.url, "NODECLI_USER": "admin"})
    assert r.exit_code == 2, r.stderr
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: a password of node user 'admin' is needed and stdin is not a "
        "terminal: use --password-stdin or NODECLI_PASSWORD")


def test_a_missing_proxy_password_without_a_terminal_names_the_variable(invoke, node_env):
    with TunnelProxy(credentials=("bob", "s3cret")) as proxy:
        r = invoke("node", "info", "--proxy", f"http://bob@127.0.0.1:{proxy.port}",
                   env=node_env)
        assert r.exit_code == 2, r.stderr
        assert r.stderr.splitlines()[0] == (
            "nodecli: error: a proxy password is needed and stdin is not a terminal: use "
            "NODECLI_PROXY_PASSWORD")
        assert proxy.stats.tunnels == []


def test_a_proxy_password_is_asked_on_a_terminal_naming_the_proxy(node_env):
    with TunnelProxy(credentials=("bob", "s3cret")) as proxy:
        url = f"http://bob@127.0.0.1:{proxy.port}"
        child = pexpect.spawn(sys.executable, ["-m", "nodecli", "node", "info", "--proxy", url],
                              env=subprocess_env(node_env), cwd=str(REPO_ROOT),
                              encoding="utf-8", timeout=30)
        try:
            child.expect(re.escape(f"Password for proxy {url}: "))
            child.sendline("s3cret")
            child.expect(pexpect.EOF)
        finally:
            reap(child)
        assert child.exitstatus == 0, child.before
        assert proxy.stats.tunnels


def test_credentials_in_clear_are_warned_about_naming_the_node_only(invoke):
    """(The name does not resolve: the warning comes before anything is sent.)"""
    env = {"NODECLI_URL": "http://node.invalid:9092", "NODECLI_USER": "admin",
           "NODECLI_PASSWORD": "a-long-password"}
    r = invoke("node", "info", env=env)
    assert r.exit_code == 6, r.stderr
    assert r.stderr.splitlines()[0] == (
        "nodecli: warning: credentials go to http://node.invalid:9092 over plain http://, "
        "unencrypted: use https:// (nodes serve it on port 9092)")


# -- a node whose clock is off --------------------------------------------------------------------


@pytest.mark.parametrize(("offset", "where", "effect"), [
    (120.0, "ahead of", "expire that much sooner"),
    (-120.0, "behind", "last that much longer"),
])
def test_a_node_clock_off_is_said_with_the_profile_name_and_the_effect(invoke, emulator, home,
                                                                       offset, where,
                                                                       effect):
    with ConfigStore(resolve_paths(home)).edit() as cfg:
        cfg.nodes["emu"] = NodeProfile("emu", emulator.url, user="admin")
    emulator.state.clock_offset = offset
    r = invoke("node", "info", "--node", "emu", env={"NODECLI_PASSWORD": "admin-pass"})
    assert r.exit_code == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if "clock" in line]
    assert len(warnings) == 1, r.stderr
    assert re.fullmatch(
        rf"nodecli: warning: the clock of emu is 1(19|20|21) s {where} this machine's "
        rf"\(its Date header\): bearer tokens signed here {effect} there; fix the clocks "
        r"\(NTP\), or sign with 'nodecli token create --clock-from-node NODE'",
        warnings[0]), warnings
