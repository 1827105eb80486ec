"""Plain http:// URLs: the http.client transport (nodecli.plain_http).

The wire form is checked against httpx2 (which serves https:// URLs) as a property, and
the transport over real sockets: the emulator, and small raw servers for what the
emulator does not do (gzip sent unasked, a keep-alive connection the server dropped).
"""

from __future__ import annotations

import gzip
import socket
import subprocess
import sys
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.errors import RemoteError
from nodecli.http import Auth, Endpoint, open_client
from nodecli.plain_http import split_url
from tests.conftest import subprocess_env

_chars = st.characters(codec="utf-8", exclude_categories=("Cs",))
_ascii = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
_value = st.one_of(st.text(_chars, max_size=6), st.integers(-5, 5), st.booleans(), st.none())
_params = st.one_of(
    st.none(),
    st.dictionaries(st.text(_chars, min_size=1, max_size=4),
                    st.one_of(_value, st.lists(_value, max_size=2)), max_size=3),
    st.lists(st.tuples(st.text(_chars, min_size=1, max_size=4), _value), max_size=4),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=st.text(_chars, max_size=8) | st.text(_ascii, max_size=10)
       | st.text(st.sampled_from(list("a./%?#é ")), max_size=10),
       query=st.text(_chars, max_size=6) | st.text(_ascii, max_size=8), params=_params)
def test_plain_urls_are_the_urls_httpx2_would_send(path, query, params):
    import httpx2

    url = f"http://node.example:8080/{path}" + (f"?{query}" if query else "")
    try:
        want = str(httpx2.Client().build_request("GET", url, params=params).url)
    except Exception:  # noqa: BLE001 - httpx2 refuses it: nothing to compare
        return
    host, port, target, full = split_url(url, params)
    assert full == want
    assert (host, port) == ("node.example", 8080)
    assert target.startswith("/") and "#" not in target
    assert full.split("#")[0].endswith(target.lstrip("/")) or target == "/"


def _serve_once(replies: list[bytes]) -> tuple[int, list[bytes]]:
    """A raw server: one reply per connection, each connection closed after its reply.
    Returns the port and the list the received requests are appended to."""
    server = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def loop() -> None:
        for reply in replies:
            conn, _ = server.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                seen.append(data)
                conn.sendall(reply)
        server.close()

    threading.Thread(target=loop, daemon=True).start()
    return server.getsockname()[1], seen


def _reply(body: bytes, *headers: str) -> bytes:
    head = ["HTTP/1.1 200 OK", f"Content-Length: {len(body)}",
            "Content-Type: application/json", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def test_gzip_sent_unasked_is_decoded_and_bounded():
    small = gzip.compress(b'{"version": "4.4.0"}')
    bomb = gzip.compress(b"0" * (8 * 1024 * 1024))
    port, seen = _serve_once([_reply(small, "Content-Encoding: gzip"),
                              _reply(bomb, "Content-Encoding: gzip")])
    client = open_client(Endpoint(f"http://127.0.0.1:{port}", max_body=1024 * 1024))
    assert client.json("GET", "/info") == {"version": "4.4.0"}
    with pytest.raises(RemoteError, match="larger than 1048576 bytes"):
        client.request("GET", "/big")
    assert seen[0].startswith(b"GET /info HTTP/1.1\r\n")
    assert b"accept-encoding: identity" in seen[0].lower()


def test_a_keep_alive_connection_the_server_dropped_is_not_reused():
    # Each reply says keep-alive but the server closes after it: the next request
    # (a POST, never retried) must go out on a fresh connection and succeed.
    port, seen = _serve_once([_reply(b"{}"), _reply(b'{"ok": true}')])
    client = open_client(Endpoint(f"http://127.0.0.1:{port}"))
    assert client.json("GET", "/a") == {}
    import time

    time.sleep(0.2)  # the server has closed its side by now
    assert client.request("POST", "/b", json_body={"x": 1}).json() == {"ok": True}
    assert [r.split(b" ")[1] for r in seen] == [b"/a", b"/b"]


def test_basic_auth_and_params_reach_the_emulator(emulator):
    client = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass")))
    assert client.json("GET", "/info")["transfer_user"] == "xfer"
    # one keep-alive connection serves consecutive requests
    assert client.json("GET", "/info", params={"x": "a b"})["transfer_user"] == "xfer"
    assert len(client._plain._conns) == 1


def _last_line(code: str, home) -> str:
    """The last line a fresh interpreter running ``code`` prints, as admin on ``home``."""
    env = subprocess_env({"NODECLI_HOME": str(home), "NODECLI_PASSWORD": "admin-pass"})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    return out.strip().splitlines()[-1]


def test_a_plain_http_command_never_imports_httpx2_or_builds_tls(emulator, home):
    code = (
        "import sys\n"
        "from nodecli.cli.main import run\n"
        f"rc = run(['node', 'info', '--url', {emulator.url!r}, '--user', 'admin'])\n"
        "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in "
        "('httpx2', 'httpcore2', 'httpx', 'httpcore', 'anyio', 'h11')))\n"
    )
    assert _last_line(code, home) == "0 []"


def test_an_events_page_imports_no_more_than_it_needs(emulator, home, log):
    """The events list hot path: no HTTP stack beyond http.client, and none of the
    modules whose import cost a few milliseconds a run (pathlib, dataclasses, hashlib)."""
    log.generate(3)
    code = (
        "import io, sys\n"
        "from nodecli.cli.main import run\n"
        "real, sys.stdout = sys.stdout, io.StringIO()\n"
        f"rc = run(['events', 'list', '--url', {emulator.url!r}, '--user', 'admin',\n"
        "          '--iteration-token', '0', '--count', '3', '-o', 'json'])\n"
        "sys.stdout = real\n"
        "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in "
        "('httpx2', 'httpcore2', 'anyio', 'h11', 'pathlib', 'dataclasses', 'hashlib', "
        "'rich', 'cryptography')))\n"
    )
    assert _last_line(code, home) == "0 []"
