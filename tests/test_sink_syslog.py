"""The syslog sink against Debian's rsyslogd (plain TCP and TLS through gtls): rsyslog
parses every message as RFC 5424 (the file it writes says what it understood), octet
counting keeps a message whole whatever it holds, and a receiver that went away is a
retryable error, never a batch written into a dead connection."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nodecli.errors import UsageError
from nodecli.node.events.batch import Shipped, SinkContext, SinkError
from nodecli.node.events.sink_syslog import (
    message,
    open_sink,
    parse_url,
    printable,
    sd_value,
    timestamp,
)
from tests.real_sinks import Rsyslogd


def event(i: int, node: str = "emu", types: tuple[str, ...] = ("file.created", "file"),
          **extra: Any) -> Shipped:
    doc = {"id": str(i), "time": "2030-06-15T17:30:00.25+05:30", "types": list(types),
           **extra}
    return Shipped(node, str(i), types, json.dumps(doc).encode())


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    from nodecli.emulator.tls import make_certificates

    return make_certificates(tmp_path_factory.mktemp("syslog-certs"))


@pytest.fixture(scope="module")
def rsyslog(tmp_path_factory: pytest.TempPathFactory, certs) -> Iterator[Rsyslogd]:
    server = Rsyslogd(tmp_path_factory.mktemp("rsyslog"), certs)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def sinks() -> Iterator[Callable[..., Any]]:
    made: list[Any] = []

    def _open(url: str, **ctx: Any) -> Any:
        made.append(open_sink(url, SinkContext(**{"timeout": 10, **ctx})))
        return made[-1]

    yield _open
    for sink in made:
        sink.close()


_marks = iter(range(10**6))


def shipped(rsyslog: Rsyslogd, sink: Any, batch: list[Shipped]) -> list[dict[str, str]]:
    """What rsyslog wrote for ``batch``: the batch, then a marker event on the same
    connection, and everything between the file's old end and the marker once the
    marker is written (one connection keeps its order), so nothing is missed or extra."""
    before = len(rsyslog.lines())
    marker = Shipped("marker", f"m{next(_marks)}", ("marker",), b"{}")
    sink.deliver(batch)
    sink.deliver([marker])

    def marked() -> bool:
        return any(f'id="{marker.event_id}"' in line["sd"] for line in rsyslog.lines()[before:])

    rsyslog.wait_for(before + 1)
    from tests.real_sinks import _until

    _until(marked, 60, rsyslog.log)
    got = rsyslog.lines()[before:]
    end = next(i for i, line in enumerate(got) if f'id="{marker.event_id}"' in line["sd"])
    return got[:end]


def test_every_event_arrives_once_in_order_as_rfc5424(rsyslog, sinks):
    batch = [event(i) for i in range(1, 31)]
    got = shipped(rsyslog, sinks(f"syslog+tcp://127.0.0.1:{rsyslog.port}"), batch)
    assert [line["msg"] for line in got] == [e.line.decode() for e in batch]  # 30, in order
    first = got[0]
    assert first["version"] == "1"  # rsyslog's RFC 5424 parser took it
    assert first["pri"] == "134"  # local0.info
    assert first["app"] == "nodecli"
    assert first["procid"] == str(os.getpid())
    assert first["msgid"] == "file.created"
    assert first["time"] == "2030-06-15T12:00:00.250000Z"  # the event's time, in UTC
    assert first["hostname"] == printable(socket.gethostname(), 255)
    assert [line["sd"] for line in got[:2]] == \
        ['[nodecli@32473 node="emu" id="1"]', '[nodecli@32473 node="emu" id="2"]']


def test_octet_counting_keeps_a_message_with_newlines_whole(rsyslog, sinks):
    lines = Shipped("emu", "nl", ("file.created",), b'{"a":\n"b\nc"}\n')
    after = event(99)
    got = shipped(rsyslog, sinks(f"syslog+tcp://127.0.0.1:{rsyslog.port}"), [lines, after])
    assert [line["msg"] for line in got] == ['{"a":\n"b\nc"}\n', after.line.decode()]


def test_hostile_events_survive(rsyslog, sinks):
    huge = event(1, data={"path": "é" * 100_000})  # 600 kB of JSON
    odd = Shipped('n"o]d\\e', 'i"d]\\x é', ("x y\x1bé" + "t" * 40,), b'{"id": "\xc3\xa9"}')
    untyped = Shipped("emu", "3", (), b'{"time": "not a time"}')
    before = datetime.now(UTC).replace(microsecond=0)
    got = shipped(rsyslog, sinks(f"syslog+tcp://127.0.0.1:{rsyslog.port}"),
                  [huge, odd, untyped])
    assert [line["msg"] for line in got] == [e.line.decode() for e in (huge, odd, untyped)]
    assert got[1]["sd"] == '[nodecli@32473 node="n\\"o\\]d\\\\e" id="i\\"d\\]\\\\x é"]'
    assert got[1]["msgid"] == "xy" + "t" * 30  # printable ASCII only, 32 at most
    assert got[2]["msgid"] == "-"
    assert before <= datetime.fromisoformat(got[2]["time"]) <= datetime.now(UTC)


def test_tls_with_the_ca_given(rsyslog, certs, sinks):
    got = shipped(rsyslog, sinks(f"syslog+tls://localhost:{rsyslog.tls_port}",
                                 cacert=certs[0]), [event(5)])
    assert [(line["version"], line["msg"]) for line in got] == [("1", event(5).line.decode())]


def test_tls_refuses_a_receiver_whose_ca_is_not_given(rsyslog):
    with pytest.raises(SinkError) as caught:
        open_sink(f"syslog+tls://localhost:{rsyslog.tls_port}", SinkContext(timeout=10))
    assert not caught.value.retryable
    assert "certificate" in caught.value.message
    assert "--cacert" in (caught.value.hint or "")


def test_a_receiver_that_went_away_is_retryable_and_no_batch_goes_into_the_void(tmp_path,
                                                                               sinks):
    server = Rsyslogd(tmp_path / "rs").start()
    try:
        sink = sinks(f"syslog+tcp://127.0.0.1:{server.port}")
        assert [line["msg"] for line in shipped(server, sink, [event(1)])] == \
            [event(1).line.decode()]
        server.stop()  # closes our connection
        with pytest.raises(SinkError) as caught:
            sink.deliver([event(2)])
        assert caught.value.retryable
        assert f"127.0.0.1:{server.port}" in caught.value.message
        server.start()  # the same port: the next batch connects again
        # the closed connection is seen before writing: this batch is not lost in it
        assert [line["msg"] for line in shipped(server, sink, [event(2)])] == \
            [event(2).line.decode()]
    finally:
        server.stop()


def test_a_receiver_that_is_not_there_is_retryable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: refused
        with pytest.raises(SinkError) as caught:
            open_sink(f"syslog+tcp://127.0.0.1:{port}", SinkContext(timeout=5))
    assert caught.value.retryable


# -- the message, piece by piece ------------------------------------------------------


NOW = datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def test_the_whole_frame():
    item = Shipped("emu", "7", ("file.created",), b'{"time": "2030-06-15T12:00:00Z"}')
    body = (b'<134>1 2030-06-15T12:00:00.000000Z host nodecli 42 file.created '
            b'[nodecli@32473 node="emu" id="7"] {"time": "2030-06-15T12:00:00Z"}')
    assert message(item, "host", "42", NOW) == b"%d %s" % (len(body), body)


def test_the_length_counts_bytes_not_characters():
    frame = message(Shipped("é", "é", (), "é".encode()), "h", "1", NOW)
    length, _, body = frame.partition(b" ")
    assert int(length) == len(body) and len(body) > len(body.decode())


@pytest.mark.parametrize(("line", "expected"), [
    (b'{"time": "2030-06-15T12:00:00Z"}', "2030-06-15T12:00:00.000000Z"),
    (b'{"time": "2030-06-15T17:30:00.1234567+05:30"}', "2030-06-15T12:00:00.123456Z"),
    (b'{"time": "2030-06-15T12:00:00"}', "2030-01-02T03:04:05.123456Z"),  # no zone: now
    (b'{"time": "yesterday"}', "2030-01-02T03:04:05.123456Z"),
    (b'{"time": 17}', "2030-01-02T03:04:05.123456Z"),
    (b'{"time": "9999-12-31T23:59:59-05:00"}', "2030-01-02T03:04:05.123456Z"),
    (b"[1, 2]", "2030-01-02T03:04:05.123456Z"),
    (b"not json", "2030-01-02T03:04:05.123456Z"),
])
def test_timestamps(line, expected):
    assert timestamp(line, NOW) == expected


def test_printable_and_structured_data_values():
    assert printable("a b\tc\x7fé~!", 32) == "abc~!"
    assert printable("x" * 33, 32) == "x" * 32
    assert printable(" \t", 32) == "-"
    assert sd_value('a"b\\c]d[e=f') == 'a\\"b\\\\c\\]d[e=f'


@pytest.mark.parametrize(("url", "expected"), [
    ("syslog+tcp://127.0.0.1:1514", ("syslog+tcp", "127.0.0.1", 1514)),
    ("syslog+tcp://logs.example", ("syslog+tcp", "logs.example", 514)),
    ("syslog+tls://logs.example/", ("syslog+tls", "logs.example", 6514)),
    ("syslog+tls://[::1]:7000", ("syslog+tls", "::1", 7000)),
])
def test_urls(url, expected):
    assert parse_url(url) == expected


@pytest.mark.parametrize("url", [
    "syslog+udp://host:514", "syslog+tcp://", "syslog+tcp://host:x", "syslog+tcp://host/x",
    "syslog+tcp://host?x=1", "syslog+tcp://user@host", "syslog://host",
])
def test_urls_a_sink_cannot_use(url):
    with pytest.raises(UsageError):
        parse_url(url)


def test_the_whole_frame_of_an_event_without_a_time_and_with_odd_names():
    item = Shipped("a\ud800", "7", (), b"{}")  # a lone surrogate, as JSON may carry
    body = (b'<134>1 2030-01-02T03:04:05.123456Z h nodecli 1 - '
            b'[nodecli@32473 node="a\\\\ud800" id="7"] {}')
    assert message(item, "h", "1", NOW) == b"%d %s" % (len(body), body)


def test_what_the_url_errors_say():
    with pytest.raises(UsageError) as caught:
        parse_url("syslog+udp://host:514")
    assert caught.value.message == "not a syslog URL: 'syslog+udp://host:514'"
    assert caught.value.hint == "syslog+tcp://HOST:PORT or syslog+tls://HOST:PORT"
    with pytest.raises(UsageError) as caught:
        parse_url("syslog+tcp://host:99999")
    assert caught.value.message == "bad port in 'syslog+tcp://host:99999'"


@pytest.mark.parametrize("tls", [False, True])
def test_a_receiver_that_stops_reading_fails_the_batch_within_the_timeout(certs, tls):
    """The receiver takes the connection (and the TLS handshake) and never reads: the
    kernel's buffers fill, and the batch fails, retryable, at the timeout."""
    import ssl
    import threading

    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        held: list[socket.socket] = []

        def take() -> None:
            conn, _ = listener.accept()
            if tls:
                server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                server.load_cert_chain(certs[1], certs[2])
                conn = server.wrap_socket(conn, server_side=True)
            held.append(conn)

        taker = threading.Thread(target=take, daemon=True)
        taker.start()
        scheme = "syslog+tls" if tls else "syslog+tcp"
        sink = open_sink(f"{scheme}://localhost:{listener.getsockname()[1]}",
                         SinkContext(timeout=1, cacert=certs[0]))
        try:
            taker.join(30)
            with pytest.raises(SinkError) as caught:
                sink.deliver([event(i, data={"x": "y" * 1_000_000}) for i in range(8)])
            assert caught.value.retryable
            assert caught.value.message.startswith("sending to syslog receiver localhost:")
        finally:
            sink.close()
            for conn in held:
                conn.close()
