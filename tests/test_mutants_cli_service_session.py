"""What the survivors of mutation testing of nodecli/cli/service_session.py showed
untested (issue 33): a service command's own --proxy, the refusal when no token is
given, and a profile's token read from the place it recorded. Through the real entry point
against the emulator's collaboration service over HTTPS, through a real CONNECT proxy.
"""

from __future__ import annotations

import re

from nodecli.config.model import ServiceProfile
from nodecli.config.paths import resolve_paths
from nodecli.config.secrets import FileBackend, keyring_service
from nodecli.config.store import ConfigStore
from tests.proxy_server import TunnelProxy
from tests.test_operations import service as service  # the fixture
from tests.test_secrets import memory_keyring  # noqa: F401 - the fixture


def test_a_service_command_goes_through_its_proxy_flag(invoke, service):
    with TunnelProxy() as used, TunnelProxy() as unused:
        r = invoke("-v", "operations", "list", "--proxy", used.url,
                   env={**service.env, "HTTPS_PROXY": unused.url})
        assert r.exit_code == 0, r.stderr
        port = service.emulator.url.rsplit(":", 1)[1]
        assert set(used.stats.tunnels) == {f"localhost:{port}"} and not unused.stats.tunnels
        assert f"via proxy http://127.0.0.1:{used.port} (from --proxy)" in r.stderr


def test_no_token_without_a_terminal_is_refused_in_words(invoke, service):
    """NODECLI_PASSWORD is a node's password, never a service token."""
    env = {"NODECLI_SERVICE_URL": service.env["NODECLI_SERVICE_URL"],
           "NODECLI_PASSWORD": "a-node-password"}
    r = invoke("operations", "list", env=env)
    assert r.exit_code == 2, r.stderr
    assert r.stderr.splitlines()[0] == (
        "nodecli: error: a service access token is needed and stdin is not a terminal: use "
        "--token-file, NODECLI_TOKEN or 'nodecli service add'")
    assert service.requests == []


def test_a_profile_whose_token_is_in_the_keyring_uses_it_not_a_file_copy(
        invoke, service, home, memory_keyring):  # noqa: F811
    paths = resolve_paths(home)
    with ConfigStore(paths).edit() as cfg:
        cfg.services["svc"] = ServiceProfile("svc", service.emulator.url, secrets="keyring")
    memory_keyring.items[(keyring_service(paths), "service:svc")] = service.token
    FileBackend(paths).set("service:svc", "a-stale-token")
    r = invoke("operations", "list", "--service", "svc", "-o", "json")
    assert r.exit_code == 0, r.stderr


def test_v_says_whose_token_from_where_and_how_long_it_has_left(invoke, service):
    r = invoke("-v", "operations", "list", env=service.env)
    assert r.exit_code == 0, r.stderr
    url = service.env["NODECLI_SERVICE_URL"]
    assert any(re.fullmatch(rf"debug: service {re.escape(url)}: token of user u1 "
                            r"from NODECLI_TOKEN, \d+ s left", line)
               for line in r.stderr.splitlines()), r.stderr
