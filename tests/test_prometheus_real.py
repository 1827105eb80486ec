"""A real Prometheus server (Debian's ``prometheus`` package; .ci/run installs it)
scrapes ``nodecli exporter``, and its HTTP API then answers ``nodecli_up`` for the node.
Without the binary the test is skipped with the reason; under ``CI=true`` a missing
server is a failure."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from tests.test_exporter_snapshot import Exporter

LISTENING = re.compile(r'msg="Listening on" address=127\.0\.0\.1:(\d+)')


def _prometheus() -> str:
    found = shutil.which("prometheus") or \
        ("/usr/bin/prometheus" if os.access("/usr/bin/prometheus", os.X_OK) else None)
    if found is None:
        reason = "no prometheus binary (Debian: apt-get install prometheus)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}: CI must have it (.ci/run installs it)")
        pytest.skip(reason)
    return found


def _until(what, within: float, step: float = 0.2):
    """``what()`` once it is truthy; a failure naming the last value after ``within``."""
    deadline = time.monotonic() + within
    while True:
        value = what()
        if value:
            return value
        assert time.monotonic() < deadline, f"still {value!r} after {within:g} s"
        time.sleep(step)


def test_prometheus_scrapes_the_exporter(invoke, emulator, home, log, tmp_path: Path):
    binary = _prometheus()
    log.generate(2)
    r = invoke("node", "add", "emu", "--url", emulator.url, "--user", "admin",
               "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r.stderr
    exporter = Exporter(home, "--all-nodes", "--node-timeout", "20")
    prometheus = None
    try:
        config = tmp_path / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                          "scrape_configs:\n  - job_name: nodecli\n    static_configs:\n"
                          f"      - targets: ['127.0.0.1:{exporter.port}']\n")
        logfile = tmp_path / "prometheus.log"
        with open(logfile, "wb") as out:
            prometheus = subprocess.Popen(
                [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                 "--web.listen-address=127.0.0.1:0"],
                stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path)

        def port() -> str | None:
            assert prometheus is not None and prometheus.poll() is None, \
                logfile.read_text()[-2000:]
            found = LISTENING.search(logfile.read_text())
            return found.group(1) if found else None

        api = f"http://127.0.0.1:{_until(port, 60)}/api/v1/query"

        def query(expr: str) -> dict[str, str]:
            try:
                answer = httpx2.get(api, params={"query": expr}, timeout=10).json()
            except (httpx2.TransportError, ValueError):
                return {}
            return {s["metric"].get("node", s["metric"].get("job", "")): s["value"][1]
                    for s in answer.get("data", {}).get("result", [])}

        _until(lambda: query("nodecli_up").get("emu") == "1", 90)
        assert query("nodecli_up") == {"emu": "1"}
        assert query('up{job="nodecli"}') == {"nodecli": "1"}  # Prometheus read our page
        states = query('nodecli_health_state{check="reachable"}')
        assert states == {"emu": "0"}
        assert float(_until(lambda: query("nodecli_certificate_days_left").get("emu"),
                            30)) > 300
    finally:
        if prometheus is not None:
            prometheus.terminate()
            try:
                prometheus.wait(timeout=30)
            except subprocess.TimeoutExpired:
                prometheus.kill()
                prometheus.wait()
        exporter.stop()
