"""What the survivors of mutation testing of nodecli/cli/nodes.py showed untested (issue 33,
item 2): the tls summary of a profile in each of its four states, and how `node info`
writes capabilities and settings of every JSON type (true alone, false as "=no", strings
as they are, anything else as compact JSON). /info over HTTPS from a scripted node."""

from __future__ import annotations

import pytest

PW = "admin-pass\n"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from tests.scripted_server import certificates

    return certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def info_node(certs):
    from tests.scripted_server import RouteNode

    node = RouteNode(certs)
    try:
        yield node
    finally:
        node.server.close()


def _cells(line: str) -> list[str]:
    import re

    return re.split(r"\s{2,}", line.strip())


def test_the_tls_summary_of_each_kind_of_profile(invoke, home, certs):
    ca = certs[0]
    for args in (["plain", "--url", "http://n:9092"],
                 ["lab", "--url", "https://n:9092", "--insecure"],
                 ["own", "--url", "https://n:9092", "--cacert", ca],
                 ["sys", "--url", "https://n:9092"]):
        r = invoke("node", "add", *args, "--no-check")
        assert r.exit_code == 0, r.stderr
    want = {"plain": "none (http)", "lab": "NOT VERIFIED", "own": f"cacert {ca}",
            "sys": "system CAs"}
    rows = [_cells(line) for line in invoke("node", "list", "-o", "wide").stdout.splitlines()]
    tls = rows[0].index("TLS") if "TLS" in rows[0] else rows[0].index("tls")
    assert {row[0]: row[tls] for row in rows[1:]} == want
    for name, label in want.items():
        lines = invoke("node", "show", name).stdout.splitlines()
        assert [line.split(None, 1)[1] for line in lines if line.startswith("tls ")] == [label]


def test_node_info_writes_each_capability_and_setting_by_its_type(invoke, home, info_node,
                                                                  certs):
    info_node.routes[("GET", "/info")] = [(200, {
        "version": "4.4.5",
        "capabilities": [{"name": "on", "value": True}, {"name": "off", "value": False},
                         {"name": "word", "value": "yes please"},
                         {"name": "many", "value": {"a": [1, 2], "b": None}},
                         {"name": "none"}, {"name": "n", "value": 0}],
        "settings": [{"name": "text", "value": "x y"}, {"name": "obj", "value": {"k": [1]}},
                     {"name": "flag", "value": False}, {"name": "unset"}]}, [])]
    r = invoke("node", "info", "--url", info_node.server.url(), "--cacert", certs[0],
               "--user", "admin", "--password-stdin", input=PW, env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert ("capabilities   on,off=no,word=yes please,many={\"a\":[1,2],\"b\":null},none=null,"
            "n=0") in lines
    assert 'settings       text=x y,obj={"k":[1]},flag=false,unset=null' in lines
    assert info_node.asked() == [("GET", "/info")]


def _field(invoke, name: str, field: str) -> list[str]:
    lines = invoke("node", "show", name, env={"COLUMNS": "200"}).stdout.splitlines()
    return [line[len(field):].strip() for line in lines if line.startswith(field + "  ")]


def test_a_minting_profile_says_whom_its_tokens_name_and_how_long_they_live(invoke, home,
                                                                           tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    pem = tmp_path / "mint.pem"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    pem.chmod(0o600)
    common = ["--url", "https://n:9092", "--access-key", "ak", "--mint-key", str(pem),
              "--no-check"]
    r = invoke("node", "add", "team", *common, "--mint-user-id", "u1", "--mint-group-ids",
               "g1,g2", "--mint-scope-role", "admin", "--mint-ttl", "90m")
    assert r.exit_code == 0, r.stderr
    r = invoke("node", "add", "solo", *common, "--mint-user-id", "u2")
    assert r.exit_code == 0, r.stderr
    assert _field(invoke, "team", "minted tokens") == [
        f"user u1, groups g1,g2, role admin, each valid 1h 30m, signed with {pem}"]
    assert _field(invoke, "solo", "minted tokens") == [
        f"user u2, role user, each valid 1h, signed with {pem}"]
    assert _field(invoke, "solo", "secret") == ["- (tokens are signed here)"]
    assert _field(invoke, "solo", "tls") == ["system CAs"]
