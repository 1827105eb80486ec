"""Proxies: the environment as curl and urllib read it, --proxy and a profile's proxy,
credentials never on argv, and TLS verified end to end through a real CONNECT proxy."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecli.http.proxies import ProxyError, bypassed, parse_proxy, proxy_for
from tests.proxy_server import TunnelProxy


def _env(node_env: dict[str, str], **extra: str) -> dict[str, str]:
    return {**node_env, **extra}


def test_https_proxy_from_the_environment_carries_every_request(invoke, node_env, log):
    log.generate(3)
    with TunnelProxy() as proxy:
        r = invoke("events", "list", "-o", "jsonl", env=_env(node_env, HTTPS_PROXY=proxy.url))
        assert r.exit_code == 0, r.stderr
        assert len(r.stdout.splitlines()) == 3
        port = node_env["NODECLI_URL"].rsplit(":", 1)[1]
        assert proxy.stats.tunnels and set(proxy.stats.tunnels) == {f"localhost:{port}"}
        # TLS inside the tunnel: the proxy saw encrypted bytes only
        assert proxy.stats.bytes_up > 0 and proxy.stats.bytes_down > 0


@pytest.mark.parametrize("variable", ["https_proxy", "ALL_PROXY", "all_proxy"])
def test_other_spellings_of_the_environment(invoke, node_env, variable):
    with TunnelProxy() as proxy:
        r = invoke("node", "info", env=_env(node_env, **{variable: proxy.url}))
        assert r.exit_code == 0, r.stderr
        assert proxy.stats.tunnels


def test_no_proxy_sends_the_node_direct(invoke, node_env):
    with TunnelProxy() as proxy:
        for no_proxy in ("localhost", ".localhost,example.com", "*"):
            r = invoke("node", "info", env=_env(node_env, HTTPS_PROXY=proxy.url,
                                                NO_PROXY=no_proxy))
            assert r.exit_code == 0, r.stderr
        assert proxy.stats.tunnels == []


def test_the_flag_wins_over_the_environment_and_v_names_it(invoke, node_env):
    with TunnelProxy() as used, TunnelProxy() as unused:
        r = invoke("-v", "node", "info", "--proxy", used.url,
                   env=_env(node_env, HTTPS_PROXY=unused.url))
        assert r.exit_code == 0, r.stderr
        assert used.stats.tunnels and not unused.stats.tunnels
        assert f"via proxy {used.url}:" not in r.stderr  # (a port is always shown)
        assert f"via proxy http://127.0.0.1:{used.port} (from --proxy)" in r.stderr


def test_a_profile_proxy(invoke, node_env, emulator):
    with TunnelProxy() as proxy:
        r = invoke("node", "add", "viaproxy", "--url", emulator.url, "--user", "admin",
                   "--cacert", emulator.ca_file, "--proxy", proxy.url, "--no-secret")
        assert r.exit_code == 0, r.stderr
        r = invoke("node", "info", "--node", "viaproxy",
                   env={"NODECLI_PASSWORD": "admin-pass"})
        assert r.exit_code == 0, r.stderr
        assert proxy.stats.tunnels
        assert invoke("node", "show", "viaproxy", "-o", "json").stdout.count(proxy.url) == 1


def test_proxy_credentials_never_from_argv(invoke, node_env):
    with TunnelProxy(credentials=("bob", "s3cret")) as proxy:
        url = f"http://bob@127.0.0.1:{proxy.port}"
        r = invoke("node", "info", "--proxy", f"http://bob:s3cret@127.0.0.1:{proxy.port}",
                   env=node_env)
        assert r.exit_code == 2 and "does not go on the command line" in r.stderr
        r = invoke("node", "info", "--proxy", url, env=node_env)  # no terminal to ask on
        assert r.exit_code == 2 and "NODECLI_PROXY_PASSWORD" in r.stderr
        r = invoke("-v", "node", "info", "--proxy", url,
                   env=_env(node_env, NODECLI_PROXY_PASSWORD="s3cret"))
        assert r.exit_code == 0, r.stderr
        assert "s3cret" not in r.stderr and f"bob:***@127.0.0.1:{proxy.port}" in r.stderr
        # in an environment variable the password may be in the URL, as for curl
        r = invoke("node", "info", env=_env(
            node_env, HTTPS_PROXY=f"http://bob:s3cret@127.0.0.1:{proxy.port}"))
        assert r.exit_code == 0, r.stderr
        r = invoke("node", "info", "--proxy", url,
                   env=_env(node_env, NODECLI_PROXY_PASSWORD="wrong"))
        assert r.exit_code == 6 and "407" in r.stderr
        assert proxy.stats.refused >= 1


def test_tls_is_verified_through_the_tunnel(invoke, node_env, tmp_path):
    """A proxy that diverts the tunnel to another TLS server is caught by the
    certificate check, as without a proxy."""
    from nodecli.config.paths import resolve_paths
    from nodecli.emulator.app import build_server

    other = build_server(resolve_paths(str(tmp_path / "other")), persist=False).start()
    try:
        with TunnelProxy(divert=("127.0.0.1", other.port)) as proxy:
            r = invoke("node", "info", env=_env(node_env, HTTPS_PROXY=proxy.url))
            assert r.exit_code == 6
            assert "TLS" in r.stderr and "not trusted" in r.stderr
            assert proxy.stats.tunnels
    finally:
        other.stop()


@pytest.mark.parametrize("text,expected", [
    ("proxy.example:3128", ("http", "proxy.example", 3128, None)),
    ("http://bob@proxy.example", ("http", "proxy.example", 1080, "bob")),
    ("https://[2001:db8::1]:8443/", ("https", "2001:db8::1", 8443, None)),
])
def test_proxy_urls(text, expected):
    p = parse_proxy(text)
    assert (p.scheme, p.host, p.port, p.username) == expected


@pytest.mark.parametrize("text", ["socks5://h:1080", "http://", "http://h:99999", "http://h/x",
                                  "http://u:pw@h:1", "http://1.2.3.999:1", "http://[1:2]:3",
                                  "http://pr\u00f6xy:1", "http://a b:1"])
def test_bad_proxy_urls_are_refused(text):
    with pytest.raises(ProxyError):
        parse_proxy(text)


@pytest.mark.parametrize("host,no_proxy,hit", [
    ("node.example.com", "example.com", True), ("node.example.com", ".example.com", True),
    ("example.com", ".example.com", True), ("badexample.com", "example.com", False),
    ("10.1.2.3", "10.0.0.0/8", True), ("10.1.2.3", "192.168.0.0/16", False),
    ("::1", "::1", True), ("node", "*", True), ("node", "other:3128", False),
    ("node", " node , x", True), ("node", "", False),
])
def test_no_proxy_matching(host, no_proxy, hit):
    assert bypassed(host, no_proxy) is hit


def test_environment_precedence():
    env = {"https_proxy": "http://a:1", "HTTPS_PROXY": "http://b:1", "ALL_PROXY": "http://c:1",
           "HTTP_PROXY": "http://d:1"}
    assert proxy_for("https://n:9092", env).host == "a"
    assert proxy_for("http://n:9092", env).host == "d"
    assert proxy_for("http://n:9092", {**env, "REQUEST_METHOD": "GET"}).host == "c"  # CGI
    assert proxy_for("https://n:9092", env, "http://e:1").host == "e"
    assert proxy_for("https://n:9092", {**env, "NO_PROXY": "n"}, "http://e:1") is None
    assert proxy_for("https://n:9092", {}) is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60) | st.builds(lambda h, p: f"http://{h}:{p}", st.text(max_size=20),
                                         st.integers(-5, 70000))
       | st.builds(lambda h: f"http://[{h}]:1", st.text("0123456789abcdef:.", max_size=20))
       | st.builds(lambda h: f"http://{h}:1", st.text("0123456789.", max_size=20)))
def test_any_proxy_text_parses_to_what_httpx2_takes_or_is_refused(text):
    import httpx2

    try:
        proxy = parse_proxy(text)
    except ProxyError:
        return
    httpx2.Client(proxy=proxy.with_password("p@ss:/").url(), trust_env=False).close()


def test_profiles_store_the_proxy_password_from_stdin(invoke, emulator, node_env):
    with TunnelProxy(credentials=("bob", "pw1")) as proxy:
        url = f"http://bob@127.0.0.1:{proxy.port}"
        r = invoke("node", "add", "p", "--url", emulator.url, "--user", "admin", "--cacert",
                   emulator.ca_file, "--proxy", url, "--password-stdin",
                   "--proxy-password-stdin", input="admin-pass\npw1\n")
        assert r.exit_code == 2 and "both read stdin" in r.stderr
        r = invoke("node", "add", "p", "--url", emulator.url, "--user", "admin", "--cacert",
                   emulator.ca_file, "--proxy", url, "--no-secret", "--proxy-password-stdin",
                   input="pw1\n")
        assert r.exit_code == 0, r.stderr
        r = invoke("node", "info", "--node", "p", env={"NODECLI_PASSWORD": "admin-pass"})
        assert r.exit_code == 0, r.stderr
        assert proxy.stats.tunnels and proxy.stats.refused == 0
        token = emulator_service_token(emulator)
        r = invoke("service", "add", "s", "--url", emulator.url, "--cacert", emulator.ca_file,
                   "--proxy", url, "--proxy-password-stdin", "--token-file", str(token),
                   input="pw1\n")
        assert r.exit_code == 0, r.stderr
        before = len(proxy.stats.tunnels)
        assert invoke("operations", "list", "--service", "s").exit_code == 0
        assert len(proxy.stats.tunnels) > before
        assert invoke("node", "remove", "p").exit_code == 0


def emulator_service_token(emulator):
    import tempfile
    from pathlib import Path

    from nodecli.emulator.operations import mint_service_token

    path = Path(tempfile.mkdtemp()) / "svc.tok"
    path.write_text(mint_service_token(emulator.state, "u1", "user:all") + "\n")
    path.chmod(0o600)
    return path
