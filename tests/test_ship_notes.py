"""events ship: which batches the checkpoint notes before they go out (output.sending).

A page as long as --batch is read again the same after a restart, so its batch goes out
with the same idempotency key without a note; a shorter page (the end of the log) may
have grown by then, so it is noted and a restart cuts it where the killed run did."""

from __future__ import annotations

import json
import os
import signal
import subprocess

from tests import test_events_ship as shipping
from tests.conftest import nodecli_cmd, reap, subprocess_env

# the collector fixtures of tests/test_events_ship.py (module-scoped server, fresh state)
_collector_server = shipping._collector_server
collector = shipping.collector
ship_env = shipping.ship_env
keys = shipping.keys


def _sending(ck) -> dict | None:
    return (json.loads(ck.read_text()).get("output") or {}).get("sending")


def test_a_full_batch_is_not_noted_a_short_one_is_and_keeps_its_key(
        ship_env, log, collector, tmp_path, pause_point):
    log.generate(9)
    ck = tmp_path / "ck.json"
    args = ["events", "ship", "--to", collector.url, "--checkpoint", str(ck), "--since",
            "1h", "--batch", "5"]
    pause = pause_point("batch-delivered")
    proc = subprocess.Popen(nodecli_cmd(*args), env=subprocess_env(dict(ship_env,
                                                                        **pause.env())),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        conn = pause.wait(proc)  # 1..5 delivered: exactly --batch events, not noted
        assert conn is not None
        assert _sending(ck) is None
        pause.release(conn)
        conn = pause.wait(proc)  # 6..9 delivered: 4 events, noted
        assert conn is not None
        sending = _sending(ck)
        assert sending is not None
        assert {k: sending[k] for k in ("first", "lasts", "last")} == \
            {"first": "6", "lasts": ["9"], "last": "9"}
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        conn.close()
    finally:
        reap(proc)
    log.generate(3)  # the short page has grown: read again, it holds 6..10
    r = subprocess.run(nodecli_cmd(*args), env=subprocess_env(ship_env),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [k.split(":", 1)[1] for k in keys(collector.state)] == \
        ["1:5", "6:9", "6:9", "10:10", "11:12"]


def test_a_page_with_a_gap_event_is_noted_even_when_it_is_n_long(ship_env, log, collector,
                                                                 tmp_path, pause_point):
    """The gap event is this run's, not the node's: with it a short page makes N events,
    and it may come back longer after a restart: it is noted."""
    log.retention = 8
    log.generate(4)
    ck = tmp_path / "ck.json"
    args = ["events", "ship", "--to", collector.url, "--checkpoint", str(ck), "--since",
            "1h", "--accept-gap"]
    r = subprocess.run(nodecli_cmd(*args, "--batch", "50"), env=subprocess_env(ship_env),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    log.generate(30)  # events 5.. are gone
    held = log.last_position - log.first_position + 1
    pause = pause_point("batch-delivered")
    proc = subprocess.Popen(nodecli_cmd(*args, "--batch", str(held + 1)),
                            env=subprocess_env(dict(ship_env, **pause.env())),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        conn = pause.wait(proc)
        assert conn is not None
        sent = collector.state.stored[-1][1]
        assert len(sent) == held + 1 and json.loads(sent[0])["types"] == ["nodecli.gap"]
        sending = _sending(ck)
        assert sending is not None and sending["last"] == str(log.last_position)
        pause.release(conn)
        assert proc.wait(timeout=120) == 0
    finally:
        reap(proc)
