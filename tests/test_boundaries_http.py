"""Boundaries of the http part that mutation testing (issue 33) found no test for: the
command's deadline budget, the watchdog on a process whose stdin is closed, proxy URLs
and NO_PROXY entries at their edges. Network behaviour is checked over real sockets and
real TLS (tests/scripted_server.py, the drip node of tests/test_deadline.py)."""

from __future__ import annotations

import time

import pytest

from nodecli.errors import RemoteError
from nodecli.http.client import Endpoint, open_client
from nodecli.http.deadline import Budget
from tests.scripted_server import certificates
from tests.test_deadline import DripNode

# -- the budget ------------------------------------------------------------------------------


def test_a_watch_is_over_once_its_end_has_passed_and_never_without_one():
    budget = Budget(120)
    assert budget.over() is False  # no --timeout: never over
    budget.follow(time.monotonic() + 3600)
    assert budget.over() is False
    budget.follow(time.monotonic() - 1)
    assert budget.over() is True


def test_a_request_ending_at_the_watch_end_says_so():
    """The watch's --timeout is nearer than the deadline: the request ends there, and the
    message names the --timeout (what the user set), not the deadline."""
    budget = Budget(120)
    until = time.monotonic() + 5
    budget.follow(until)
    assert budget.request_ends(None) == (until, "the watch's --timeout")
    far = Budget(1)
    far.follow(time.monotonic() + 3600)
    assert far.request_ends(None)[1] == "the deadline of 1 s"


def test_a_following_budget_gives_every_request_its_own_deadline():
    """A client made without a command's budget follows: a request made after the first
    one's deadline has passed (a sleep that is only a lower bound) still gets its own."""
    budget = Budget(1, following=True)
    budget.request_ends(None)
    time.sleep(1.05)
    now = time.monotonic()
    end, why = budget.request_ends(None)
    assert end > now and why == "the deadline of 1 s"


# -- the watchdog with stdin closed (cron, `0<&-`): the node's socket is descriptor 0 ---------

def test_the_watchdog_cuts_a_connection_on_descriptor_0(tmp_path):
    """A process started with descriptor 0 closed (cron, `0<&-`): the first socket the
    client opens takes it, and the watchdog still watches it and cuts the dripping node
    at the deadline (descriptor 0 is a descriptor like any other). In a child process:
    freeing 0 in the test process would hand it to whichever of its threads opens a
    file or a socket first."""
    import subprocess
    import sys

    from tests.conftest import subprocess_env

    certs = certificates(tmp_path)
    drip = DripNode(certs)
    code = (
        "import os, sys\n"
        "os.close(0)\n"
        "from nodecli.errors import RemoteError\n"
        "from nodecli.http.client import Endpoint, open_client\n"
        f"ep = Endpoint({drip.url()!r}, cacert={certs[0]!r}, deadline=1.0, read_timeout=5,"
        " max_attempts=1)\n"
        "with open_client(ep) as client:\n"
        "    try:\n"
        "        os.fstat(0)\n"
        "    except OSError:\n"
        "        pass  # still free: the request's first descriptor takes it\n"
        "    else:\n"
        "        sys.exit(2)\n"
        "    try:\n"
        "        client.request('GET', '/info')\n"
        "    except RemoteError as exc:\n"
        "        print(exc.message)\n"
        "        sys.exit(0)\n"
        "sys.exit(1)\n")
    try:
        r = subprocess.run([sys.executable, "-c", code], env=subprocess_env(),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "within the deadline of 1 s" in r.stdout, r
        [(cut, sent)] = drip.wait_results(1)
        assert cut and 0 < sent < drip.total, (cut, sent)
    finally:
        drip.close()


class QuickThenDrip(DripNode):
    """Answers its first connection at once, then drips on every other one."""

    def __init__(self, certs: tuple[str, str, str]) -> None:
        self.quick_left = 1
        super().__init__(certs)

    def _drip(self, raw) -> None:
        if self.quick_left:
            self.quick_left -= 1
            with self.ctx.wrap_socket(raw, server_side=True) as conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    request += chunk
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                             b"Connection: close\r\n\r\n{}")
            return
        super()._drip(raw)


def test_the_watchdog_still_watches_after_a_request_that_ended_in_time(tmp_path):
    """A request answered in time, then, once its deadline has passed (a sleep that is
    only a lower bound), a dripping one on the same client: the watchdog, idle meanwhile,
    still cuts it at its deadline."""
    certs = certificates(tmp_path)
    node = QuickThenDrip(certs)
    try:
        ep = Endpoint(node.url(), cacert=certs[0], deadline=1.0, read_timeout=5,
                      max_attempts=1)
        with open_client(ep) as client:
            assert client.request("GET", "/info").status == 200
            time.sleep(1.2)  # past the first request's deadline
            with pytest.raises(RemoteError, match=r"within the deadline of 1 s"):
                client.request("GET", "/info")
        [(cut, sent)] = node.wait_results(1)
        assert cut and 0 < sent < node.total, (cut, sent)
    finally:
        node.close()


def test_the_watchdog_never_keeps_a_process_alive():
    """The watchdog's thread is a daemon (a command that ends without closing a client
    still exits) and is named for a stack dump."""
    import threading

    from nodecli.http.deadline import Watchdog

    before = set(threading.enumerate())
    watchdog = Watchdog()
    try:
        watchdog.arm(time.monotonic() + 3600)
        [thread] = set(threading.enumerate()) - before
        assert thread.name == "nodecli-deadline" and thread.daemon
    finally:
        watchdog.close()


# -- NO_PROXY entries at their edges -----------------------------------------------------------

@pytest.mark.parametrize("host,no_proxy,hit", [
    ("node.example.com.", "example.com", True),  # a fully qualified name's final dot
    ("example.com.", ".example.com", True),
    ("[::1]", "::1", True),  # a URL's bracketed IPv6 host
    ("::1", "[::1]", True),  # an entry in brackets
    ("node", "a,,node", True),  # an empty entry is skipped, not the end of the list
    ("node", "node:3128", True),  # an entry's port is not part of the name
    ("10.1.2.3", "10.1.0.0/8", True),  # host bits set in a CIDR entry, as curl takes it
    ("10.1.2.3", "192.168.0.0/16,10.0.0.0/8", True),  # the second range of the list
    ("10.1.2.3", "node,10.1.2.3", True),  # an address after a name
])
def test_no_proxy_entries_at_their_edges(host, no_proxy, hit):
    from nodecli.http.proxies import bypassed

    assert bypassed(host, no_proxy) is hit


def test_the_proxy_from_the_environment_names_its_variable_and_no_proxy_only_bypasses_its_hosts():
    from nodecli.http.proxies import proxy_for

    assert proxy_for("https://n:9092", {"https_proxy": "http://p:1"}).source == "https_proxy"
    assert proxy_for("https://n:9092", {"HTTPS_PROXY": "http://p:1"}).source == "HTTPS_PROXY"
    assert proxy_for("http://n:9092", {"ALL_PROXY": "http://p:1"}).source == "ALL_PROXY"
    # a NO_PROXY that names other hosts leaves this one on the proxy
    env = {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "other,.example.org"}
    assert proxy_for("https://n:9092", env).host == "p"
    # no NO_PROXY at all: every host goes through the proxy, whatever its name
    assert proxy_for("https://xxxx:9092", {"HTTPS_PROXY": "http://p:1"}).host == "p"


def test_a_proxy_shown_with_a_user_and_no_password_yet_has_no_stars():
    from nodecli.http.proxies import parse_proxy

    proxy = parse_proxy("http://bob@p.example:3128")
    assert proxy.shown() == "http://bob@p.example:3128"
    assert proxy.with_password("pw").shown() == "http://bob:***@p.example:3128"


# -- checks around a request -------------------------------------------------------------------

def test_the_clock_offset_of_a_date_header_and_of_no_usable_one():
    from nodecli.http.checks import clock_offset_of

    # 2024-01-01T00:00:00Z = 1704067200; the Date is taken as half a second old
    assert clock_offset_of("Mon, 01 Jan 2024 00:00:00 GMT", 1704067200.0) == 0.5
    assert clock_offset_of("Mon, 01 Jan 2024 00:00:10 GMT", 1704067200.0) == 10.5
    assert clock_offset_of("Mon, 01 Jan 2024 00:00:00 +0100", 1704067200.0) == -3599.5
    for bad in (None, "", "yesterday", "Mon, 01 Jan 2024 00:00:00 -0000"):  # -0000: no zone
        assert clock_offset_of(bad, 1704067200.0) is None, bad


@pytest.mark.parametrize(("url", "kind", "clear"), [
    ("http://node.example:9092", "basic", True),
    ("http://node.example:9092", "none", False),  # no credentials to lose
    ("https://node.example:9092", "basic", False),
    ("HTTP://node.example:9092", "basic", True),  # urlsplit lowers the scheme
    ("http://localhost:9092", "basic", False),
    ("http://LOCALHOST.:9092", "basic", False),
    ("http://api.localhost:9092", "basic", False),
    ("http://localhost.example:9092", "basic", True),
    ("http://127.9.9.9:9092", "basic", False),  # all of 127/8 is loopback
    ("http://[::1]:9092", "basic", False),
    ("http://10.0.0.1:9092", "basic", True),
])
def test_credentials_in_clear_at_the_edges_of_this_machine(url, kind, clear):
    from nodecli.http.checks import in_clear
    from nodecli.http.client import Auth

    assert in_clear(Endpoint(url, Auth(kind, "admin", "pw"))) is clear


@pytest.mark.parametrize(("value", "safe"), [
    ("plain value ~", True), ("", True), ("caf\u00e9", True),  # Latin-1 goes as it is
    ("caf\u00e9 au lait", True), ("caf\u00e9~", True), ("a\x80", True), ("\u00ff", True),
    ("tab\there", False), ("del\x7f", False), ("nl\n", False), ("\u0100", False),
    ("\u20ac", False),
])
def test_header_values_that_can_be_sent_as_they_are(value, safe):
    from nodecli.http.checks import header_safe

    assert header_safe(value) is safe


@pytest.mark.parametrize(("url", "params", "headers"), [
    ("/x\udcff", None, None),
    ("/x", {"k\udcff": "v"}, None),
    ("/x", {"k": "v\udcff"}, None),
    ("/x", [("k", "v"), ("k2", "v\udcff")], None),
    ("/x", ("a", "b\udcff"), None),
    ("/x", None, {"X-A": "ok", "X-B": "v\udcff"}),
    ("/x\udcff", {"k": "v"}, None),  # the URL, with clean parameters
    ("/x\udcff", [("k", "v")], None),
    ("/x", [("k", "v\udcff"), ("k2", "v")], None),  # the bad one first
])
def test_bytes_that_are_not_utf8_are_refused_wherever_they_are(url, params, headers):
    from nodecli.errors import UsageError
    from nodecli.http.checks import refuse_undecodable

    with pytest.raises(UsageError, match=r"udcff' holds bytes that are not UTF-8 text"):
        refuse_undecodable(url, params, headers)
    refuse_undecodable("/x", {"k": "v"}, {"X-A": "ok"})  # clean: nothing said


def test_bytes_that_are_not_utf8_are_shown_whole_and_cut_at_80_characters():
    from nodecli.errors import UsageError
    from nodecli.http.checks import check_id, refuse_undecodable

    with pytest.raises(UsageError) as info:
        refuse_undecodable("/x", ("a", "b\udcff"), None)
    assert str(info.value).startswith("'b\\\\udcff' holds bytes that are not UTF-8 text: ids,")
    long = "a" * 90 + "\udcff"
    with pytest.raises(UsageError) as info:
        refuse_undecodable(long, None, None)
    assert str(info.value).startswith(f"{'a' * 80!r} holds bytes")
    with pytest.raises(UsageError) as info:
        check_id("b" * 70 + "/", "transfer id")
    assert str(info.value).startswith(f"invalid transfer id {'b' * 60!r}: no '/'")


def test_ids_at_their_edges():
    from nodecli.errors import UsageError
    from nodecli.http.checks import MAX_ID, check_id

    assert MAX_ID == 256
    for good in ("a" * 256, "a.b", "...", "id with space", "\u00e9t\u00e9"):
        assert check_id(good, "transfer id") == good
    for bad, said in [("", "transfer id must not be empty"),
                      ("  ", "transfer id must not be empty"),
                      ("a" * 257, "transfer id is longer than 256 characters"),
                      (".", "invalid transfer id '.'"), ("..", "invalid transfer id '..'"),
                      ("a/b", "invalid transfer id 'a/b'"),
                      ("a\\b", "invalid transfer id 'a\\\\b'"),
                      ("a\udcffb", "it holds bytes that are not UTF-8 text"),
                      ("a\x00b", "control characters"), ("a\u200bb", "control characters"),
                      ("a\u2028b", "control characters"), ("a\u2029b", "control characters")]:
        with pytest.raises(UsageError) as info:
            check_id(bad, "transfer id")
        assert said in str(info.value), (bad, str(info.value))
    with pytest.raises(UsageError, match=r"^id must not be empty"):
        check_id("")


@pytest.mark.parametrize("text", [
    "", "   ",  # nothing: no proxy URL at all
    "http://bo b@p.example:1", "http://bob\t@p.example:1",  # spaces and controls, even in the user
    "http://a\ud800@p.example:1", "http://a\udfff@p.example:1",  # the first and last surrogates
])
def test_proxy_urls_refused_at_their_edges(text):
    from nodecli.http.proxies import ProxyError, parse_proxy

    with pytest.raises(ProxyError, match=r"^--proxy: "):
        parse_proxy(text)


def test_what_a_proxy_url_may_hold_at_its_edges():
    from nodecli.http.proxies import ProxyError, parse_proxy

    # '!' (33) is the first character that is not a space or a control
    assert parse_proxy("http://bo!b@p.example:1").username == "bo!b"
    # the edges of the surrogate range are ordinary characters, refused as a host
    for text in ("http://\ud7ff.example:1", "http://\ue000.example:1"):
        with pytest.raises(ProxyError, match="is not a host name or address"):
            parse_proxy(text)
    with pytest.raises(ProxyError, match="a proxy URL has no spaces, control characters"):
        parse_proxy("http://bo b@p.example:1")
    # no port: curl's defaults, 443 for an https:// proxy, 1080 for an http:// one
    assert parse_proxy("https://p.example").port == 443
    assert parse_proxy("http://p.example").port == 1080
    assert parse_proxy("p.example").port == 1080
    with pytest.raises(ProxyError, match=r"^--proxy: proxy scheme 'socks5' is not supported"):
        parse_proxy("socks5://p.example:1")
    # a user name with '/' or '@' reaches the HTTP library quoted, in one piece
    proxy = parse_proxy("http://a%2Fb%40c@p.example:1")
    assert proxy.username == "a/b@c"
    assert proxy.with_password("p/w").url() == "http://a%2Fb%40c:p%2Fw@p.example:1"


def test_what_is_not_a_proxy_url_is_said_in_one_line_cut_at_80_characters():
    from nodecli.http.proxies import ProxyError, parse_proxy

    def said(text: str) -> str:
        with pytest.raises(ProxyError) as info:
            parse_proxy(text, "HTTPS_PROXY", allow_password=True)
        return str(info.value)

    assert said("http://p.example:99999") == (
        "HTTPS_PROXY: 'http://p.example:99999' is not a proxy URL (http://[user@]host:port)")
    long = "http://" + "a" * 73 + "b:99999"  # the 81st character is the 'b'
    assert said(long) == (f"HTTPS_PROXY: {long[:80]!r} is not a proxy URL "
                          "(http://[user@]host:port)")
    for text in ("http://p.example:1?q", "http://p.example:1#f", "http://p.example:1/x"):
        assert said(text) == (f"HTTPS_PROXY: {text!r} is not a proxy URL "
                              "(http://[user@]host:port)")
    assert said("ftp://p.example:1") == (
        "HTTPS_PROXY: proxy scheme 'ftp' is not supported (http:// or https://)")


def test_a_proxy_host_or_path_is_cut_at_its_own_length_and_a_password_gets_its_hint():
    from nodecli.http.proxies import ProxyError, parse_proxy

    def refused(text: str) -> ProxyError:
        with pytest.raises(ProxyError) as info:
            parse_proxy(text)
        return info.value

    path = "http://" + "a" * 73 + "b/x"  # a path; the 81st character is the 'b'
    assert str(refused(path)) == (f"--proxy: {path[:80]!r} is not a proxy URL "
                                  "(http://[user@]host:port)")
    host = "a" * 59 + "_b"  # '_' is not in a host name; the 61st character is the 'b'
    assert str(refused(f"http://{host}:1")) == (
        f"--proxy: {host[:60]!r} is not a host name or address "
        "(an international name goes in its xn-- form)")
    with_password = refused("http://bob:pw@p.example:1")
    assert str(with_password) == ("--proxy: a proxy password does not go on the command "
                                  "line or in the config")
    assert with_password.hint == ("give the user only (http://user@host:port); the password "
                                  "comes from NODECLI_PROXY_PASSWORD, the profile's secret "
                                  "store or a prompt")


def test_a_request_after_the_command_deadline_is_never_sent():
    """A one-shot command whose earlier requests spent its deadline (events list after a
    /info that hung) sends nothing more: the next request fails at once, and the node
    never sees it: the request is not even attempted (left to the watchdog, it was a race
that a loaded machine lost)."""
    from tests.scripted_server import ScriptedServer, reply

    server = ScriptedServer(lambda seen: [reply(200, b"{}")])
    try:
        budget = Budget(1)
        budget.ends_at = time.monotonic() - 0.001  # spent by the command's earlier requests
        ep = Endpoint(server.url(), budget=budget, max_attempts=4)
        said: list[str] = []
        with open_client(ep, log=said.append) as client, pytest.raises(
                RemoteError, match=r"^GET http://localhost:\d+/events: no complete answer "
                                   r"within the command's deadline of 1 s \(--deadline"):
            client.request("GET", "/events")
        assert server.seen == []
        assert said == []  # not even attempted (-v shows no "> GET")
    finally:
        server.close()


def test_the_certificate_of_the_tls_connection_that_answered_is_kept(tmp_path):
    """Over HTTPS the client keeps the node's certificate from the connection that
    carried the answer (health reads it without a second connection); over plain http
    there is none."""
    import ssl
    from pathlib import Path

    from tests.scripted_server import ScriptedServer, reply

    certs = certificates(tmp_path)
    tls = ScriptedServer(lambda seen: [reply(200, b"{}")], tls=(certs[1], certs[2]))
    plain = ScriptedServer(lambda seen: [reply(200, b"{}")])
    try:
        with open_client(Endpoint(tls.url(), cacert=certs[0])) as client:
            client.request("GET", "/info")
            assert client.peer_certificate == ssl.PEM_cert_to_DER_cert(
                Path(certs[1]).read_text())
        with open_client(Endpoint(plain.url())) as client:
            client.request("GET", "/info")
            assert client.peer_certificate is None
    finally:
        tls.close()
        plain.close()
