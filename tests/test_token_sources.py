"""Token sources against what a node sees: a token file rewritten in place is what the
next request carries (whatever its size and times say), and a minted token expires on
the node's clock, not this machine's. Real sockets; HTTPS with the emulator."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.tokens.source import FileToken, MintedToken
from nodecli.tokens.wire import decode_unverified, token_expiry
from tests.scripted_server import ScriptedServer, Seen, certificates, reply
from tests.test_long_running import Bearer, bearer  # noqa: F401 - the fixture


def _rewrite_in_place(path: Path, text: str) -> None:
    """Write ``text`` into the same file (same inode), then give the file back the times
    it had: what a writer does within one tick of a coarse file-system clock."""
    before = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(0)
        fh.write(text.encode())
        fh.truncate()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == \
        (before.st_ino, before.st_size, before.st_mtime_ns)


def test_a_token_rewritten_in_place_with_the_same_size_and_time_is_sent(tmp_path):
    certs = certificates(tmp_path / "tls")

    def answer(seen: Seen) -> list[bytes]:
        return [reply(200, b"{}")]

    path = tmp_path / "token"
    path.write_text("A" * 40 + "\n")
    source = FileToken(str(path))
    with ScriptedServer(answer, tls=(certs[1], certs[2])) as node:
        ep = Endpoint(node.url(), Auth("bearer", access_key="ak1", source=source),
                      cacert=certs[0])
        with open_client(ep) as client:
            client.request("GET", "/info")
            _rewrite_in_place(path, "B" * 40 + "\n")
            client.request("GET", "/info")
            _rewrite_in_place(path, "C" * 40 + "\n")
            client.request("GET", "/info")
    assert [s.headers["authorization"] for s in node.seen] == \
        [f"Bearer {c * 40}" for c in "ABC"]
    assert source.seen() == [c * 40 for c in "ABC"]


def test_a_token_file_being_rewritten_keeps_the_last_good_token(tmp_path):
    path = tmp_path / "token"
    path.write_text("A" * 40)
    source = FileToken(str(path))
    assert source.current() == "A" * 40
    path.write_text("")  # truncated by a writer, not yet written
    assert source.current() == "A" * 40
    path.write_text("B" * 40)
    assert source.current() == "B" * 40
    assert source.renew() is False  # a 401 with nothing newer in the file


def _client(emulator, source):
    return open_client(emulator.endpoint(Auth("bearer", access_key="ak1",
                                              access_key_header="X-Vendor-AccessKey",
                                              source=source)))


@pytest.mark.parametrize("offset", [7200.0, -7200.0], ids=["ahead", "behind"])
def test_a_minted_token_expires_on_the_nodes_clock(bearer, emulator, offset):  # noqa: F811
    """A node 2 h ahead refuses a token that ends an hour after this machine's now; the
    token minted after its first answer ends an hour after the NODE's now. Behind, a token
    on this machine's clock is accepted, but for 3 h instead of 1: once the node's clock is
    known, the next request has a token minted on it."""
    emulator.state.clock_offset = offset
    source = MintedToken(str(bearer.key_file), "ak1", "alice", ttl=3600)
    with _client(emulator, source) as client:
        assert client.json("GET", "/access_keys/self")["id"] == "ak1"
        node_now = emulator.state.now()
        expires = token_expiry(decode_unverified(source.current()).claims).timestamp()
        assert client.clock_offset is not None
    # the token's life counted on the node's clock: an hour, give or take the second
    # the claim is rounded to and the time this test took
    assert 3600 - 60 < expires - node_now <= 3600 + 1, (expires - node_now, offset)


def test_a_minted_token_is_renewed_when_the_nodes_clock_says_so(bearer):  # noqa: F811
    """With the node an hour ahead, a 2 h token minted now has 2 h left there: renewed
    when less than the margin of THAT is left, not of this machine's 2 h."""
    now = [1_000_000.0]
    source = MintedToken(str(bearer.key_file), "ak1", "alice", ttl=7200,
                         clock=lambda: now[0], offset=3600.0)
    first = source.current()
    claims = decode_unverified(first).claims
    assert token_expiry(claims) == datetime.fromtimestamp(now[0] + 3600 + 7200, UTC)
    now[0] += 7200 - 300  # exactly the margin (300 s) left on the node's clock
    assert source.current() == first
    now[0] += 1  # less than the margin left
    assert source.current() != first and source.minted == 2
