"""What `node add` and `node set` say of the login they check (cli/node_set.check_login):
who logged in, and a refusal's hint that names --no-check. Over HTTPS, the emulator."""

from __future__ import annotations

from tests.test_long_running import Bearer, bearer  # noqa: F401 - the fixture

NO_CHECK = "--no-check saves the profile without asking the node"


def test_the_login_checked_names_who_logged_in(invoke, emulator, bearer, tmp_path):  # noqa: F811
    r = invoke("node", "add", "adm", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r.stderr
    assert "login checked: GET /info as node user 'admin'\n" in r.stderr
    r = invoke("node", "add", "key", "--url", emulator.url, "--access-key", "ak1",
               "--password-stdin", input="ak1-secret\n")
    assert r.exit_code == 0, r.stderr
    assert " as access key 'ak1'\n" in r.stderr
    token = tmp_path / "tok"
    token.write_text(bearer.token() + "\n")
    r = invoke("node", "add", "tok", "--url", emulator.url, "--access-key", "ak1",
               "--bearer-file", str(token))
    assert r.exit_code == 0, r.stderr
    assert " as access key 'ak1' with a bearer token\n" in r.stderr


def test_a_refused_login_keeps_its_own_hint_and_names_no_check(invoke, emulator):
    r = invoke("node", "add", "bad", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="wrong\n")
    assert r.exit_code == 4, r.stderr
    hint = r.stderr.split("hint: ", 1)[1].strip()
    assert hint.endswith("; " + NO_CHECK), hint  # the 401's own hint, then --no-check


def test_a_failure_without_a_hint_of_its_own_gets_only_no_check(invoke, emulator):
    emulator.faults.push(*["500"] * 8)  # /info answers 500, every attempt
    r = invoke("node", "add", "down", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code != 0
    assert r.stderr.split("hint: ", 1)[1].strip() == NO_CHECK, r.stderr


def test_node_set_checks_the_login_through_the_stored_proxy_password(invoke, emulator):
    from tests.proxy_server import TunnelProxy

    with TunnelProxy(credentials=("bob", "proxy-pw")) as proxy:
        r = invoke("node", "add", "via", "--url", emulator.url, "--user", "admin",
                   "--password-stdin", "--proxy", f"http://bob@127.0.0.1:{proxy.port}",
                   input="admin-pass\n", env={"NODECLI_PROXY_PASSWORD": "proxy-pw"})
        assert r.exit_code == 0, r.stderr
        refused = proxy.stats.refused
        # the proxy password now comes from the secret store, not the environment
        r = invoke("node", "set", "via", "--cacert", emulator.ca_file)
        assert r.exit_code == 0, r.stderr
        assert "login checked" in r.stderr and proxy.stats.refused == refused
