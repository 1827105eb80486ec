"""events ship: batches to an HTTPS collector (the emulator's), idempotency keys, retries,
refusals, the dead-letter file, gaps, file:, and SIGKILLs at the worst moment."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from nodecli.emulator.collector import CollectorState, build_collector
from nodecli.node.events.ship import WINDOW
from tests.conftest import nodecli_cmd, reap, subprocess_env


@pytest.fixture(scope="module")
def _collector_server(_tls_emulator_session):
    server = build_collector(_tls_emulator_session.paths, CollectorState()).start()
    yield server
    server.stop()


@pytest.fixture
def collector(_collector_server, emulator):
    """The HTTPS collector (the emulator's CA), its state new for this test."""
    _collector_server.state = CollectorState()
    yield _collector_server
    _collector_server.state = CollectorState()


@pytest.fixture
def ship_env(node_env, emulator):
    return dict(node_env, NODECLI_SINK_CACERT=emulator.ca_file)


def stored_ids(state: CollectorState) -> list[str]:
    return [json.loads(line)["id"] for _, lines in state.stored for line in lines]


def keys(state: CollectorState) -> list[str | None]:
    return [key for key, _ in state.stored]


def in_order(found: list[str | None]) -> list[str]:
    """The keys' ``FIRST:LAST`` parts (without the node), by their first event."""
    spans = [str(k).split(":", 1)[1] for k in found]
    return sorted(spans, key=lambda span: int(span.split(":")[0]))


def test_batches_of_exactly_n_and_n_plus_one(invoke, ship_env, log, collector, tmp_path):
    log.generate(10)
    ck = tmp_path / "ck.json"
    args = ("events", "ship", "--to", collector.url + "/ingest", "--checkpoint", str(ck),
            "--batch", "5", "--since", "1h")
    r = invoke(*args, env=dict(ship_env, NODECLI_SINK_TOKEN="s3cret-tok"))
    assert r.exit_code == 0, r
    assert "shipped 10 events to" in r.stderr and "in 2 batches" in r.stderr
    state = collector.state
    # batches in flight together (--window) may be stored in either order
    assert in_order(keys(state)) == ["1:5", "6:10"]
    assert sorted(stored_ids(state), key=int) == [str(i) for i in range(1, 11)]
    # the lines are the node's own JSON objects, one per line
    assert log.get("1") in [lines[0] for _, lines in state.stored]
    sent = state.headers[-1]
    assert sent["Content-Type"] == "application/x-ndjson"
    assert sent["Authorization"] == "Bearer s3cret-tok"
    # N + 1: a batch of 5, then one of 1
    log.generate(6)
    r = invoke(*args, env=ship_env)
    assert r.exit_code == 0, r
    assert in_order(keys(state)[2:]) == ["11:15", "16:16"]
    assert sorted(stored_ids(state), key=int) == [str(i) for i in range(1, 17)]
    r = invoke(*args, env=ship_env)  # nothing new: nothing sent
    assert r.exit_code == 0 and "shipped 0 events" in r.stderr
    assert state.posts == 4


def test_retries_carry_the_same_key_and_deliver_once(invoke, ship_env, log, collector,
                                                     tmp_path):
    log.generate(7)
    collector.state.fail_first = 2  # 503, 503, then 200
    # one batch in flight: the two 503s are both the first batch's
    r = invoke("events", "ship", "--to", collector.url, "--resume", "r", "--batch", "4",
               "--since", "1h", "--window", "1", env=ship_env)
    assert r.exit_code == 0, r
    state = collector.state
    first = keys(state)[0]
    assert state.keys[first] == 3 and state.stored_keys[first] == 1
    assert stored_ids(state) == [str(i) for i in range(1, 8)]


def test_refused_batch_stops_before_it_and_resumes_there(invoke, ship_env, log, collector,
                                                         tmp_path):
    log.generate(15)
    collector.state.refuse = {2}
    ck = tmp_path / "ck.json"
    # one batch in flight: nothing past the refused one is sent (test_ship_window: more)
    args = ("events", "ship", "--to", collector.url, "--checkpoint", str(ck), "--batch", "5",
            "--since", "1h", "--window", "1")
    r = invoke(*args, env=ship_env)
    assert r.exit_code == 6, r
    assert "refused batch" in r.stderr and ":6:10" in r.stderr and "--dead-letter" in r.stderr
    assert stored_ids(collector.state) == [str(i) for i in range(1, 6)]
    saved = json.loads(ck.read_text())
    assert saved["last_event"]["id"] == "5"  # the position before the refused batch
    collector.state.refuse = set()
    r = invoke(*args, env=ship_env)
    assert r.exit_code == 0, r
    assert stored_ids(collector.state) == [str(i) for i in range(1, 16)]
    refused_key = keys(collector.state)[1]
    assert refused_key.endswith(":6:10") and collector.state.keys[refused_key] == 2


def test_dead_letter_sets_the_refused_batch_aside(invoke, ship_env, log, collector, tmp_path):
    log.generate(15)
    collector.state.refuse = {2}  # (the second POST to arrive)
    dead = tmp_path / "dead.jsonl"
    # one batch in flight: the POSTs arrive in the events' order, so the second is 6-10
    r = invoke("events", "ship", "--to", collector.url, "--resume", "d", "--batch", "5",
               "--since", "1h", "--dead-letter", str(dead), "--window", "1", env=ship_env)
    assert r.exit_code == 0, r
    assert f"set aside in {dead}" in r.stderr
    assert stored_ids(collector.state) == [str(i) for i in [1, 2, 3, 4, 5, 11, 12, 13, 14, 15]]
    assert [json.loads(x)["id"] for x in dead.read_text().splitlines()] == \
        ["6", "7", "8", "9", "10"]
    assert stat.S_IMODE(dead.stat().st_mode) == 0o600


def test_bad_sink_urls_and_credentials_on_argv(invoke, ship_env, tmp_path):
    r = invoke("events", "ship", "--to", "ftp://x/y", "--resume", "a", env=ship_env)
    assert r.exit_code == 2 and "unknown scheme" in r.stderr
    r = invoke("events", "ship", "--to", "https://u:pw@host/x", "--resume", "a", env=ship_env)
    assert r.exit_code == 2 and "holds credentials" in r.stderr and "pw" not in r.stderr
    r = invoke("events", "ship", "--to", "https://host/x", env=ship_env)
    assert r.exit_code == 2 and "needs a checkpoint" in r.stderr


def test_gap_stops_or_is_shipped_with_accept_gap(invoke, ship_env, log, collector, tmp_path):
    log.retention = 8
    log.generate(4)
    ck = tmp_path / "ck.json"
    args = ("events", "ship", "--to", collector.url, "--checkpoint", str(ck), "--batch", "50",
            "--since", "1h")
    r = invoke(*args, env=ship_env)
    assert r.exit_code == 0, r
    log.generate(30)  # the node keeps the newest 8 to 10: events 5.. are gone
    oldest = log.first_position
    assert oldest > 5
    saved = ck.read_bytes()
    r = invoke(*args, env=ship_env)
    assert r.exit_code == 1, r
    assert f"after checkpoint {ck}" in r.stderr and "took event 4 " in r.stderr
    assert f"the oldest it holds is event {oldest} " in r.stderr
    assert f"at least {oldest - 5} events missed" in r.stderr
    assert "--accept-gap" in r.stderr
    assert ck.read_bytes() == saved and collector.state.posts == 1
    # events tail says the same (it shares the engine)
    r = invoke("events", "tail", "--checkpoint", str(ck), env=ship_env)
    assert r.exit_code == 1 and f"the oldest it holds is event {oldest} " in r.stderr
    assert r.stdout == ""
    tail_ck = tmp_path / "tail-ck.json"
    tail_ck.write_bytes(saved)
    r = invoke("events", "tail", "--checkpoint", str(tail_ck), "--accept-gap", "-o", "jsonl",
               env=ship_env)
    assert r.exit_code == 0, r
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[0]["types"] == ["nodecli.gap"] and lines[1]["id"] == str(oldest)
    r = invoke(*args, "--accept-gap", env=ship_env)
    assert r.exit_code == 0, r
    assert f"at least {oldest - 5} events missed" in r.stderr
    batch = [json.loads(x) for x in collector.state.stored[-1][1]]
    assert batch[0]["types"] == ["nodecli.gap"]
    assert batch[0]["data"]["missed_at_least"] == oldest - 5
    assert batch[0]["data"]["oldest_held"]["id"] == str(oldest)
    assert [e["id"] for e in batch[1:]] == [str(i) for i in range(oldest, 35)]
    r = invoke(*args, env=ship_env)  # and it goes on from there, no gap any more
    assert r.exit_code == 0 and "shipped 0 events" in r.stderr


def test_only_the_marked_event_dropped_is_no_gap(invoke, ship_env, log, collector, tmp_path):
    """The boundary: the node dropped the event taken last and nothing after it."""
    log.generate(4)
    ck = tmp_path / "ck.json"
    args = ("events", "ship", "--to", collector.url, "--checkpoint", str(ck), "--since", "1h")
    assert invoke(*args, env=ship_env).exit_code == 0
    log.generate(2)
    with log._lock:  # the node drops 1..4 exactly (retention trims by more at once)
        del log._items[:4]
        log._first = 5
    r = invoke(*args, env=ship_env)
    assert r.exit_code == 0, r
    assert stored_ids(collector.state) == ["1", "2", "3", "4", "5", "6"]


def test_file_sink_is_the_exactly_once_file(invoke, ship_env, log, tmp_path):
    log.generate(12)
    out = tmp_path / "ev.jsonl"
    r = invoke("events", "ship", "--to", f"file:{out}", "--batch", "5", "--since", "1h",
               env=ship_env)
    assert r.exit_code == 0, r
    log.generate(3)
    r = invoke("events", "ship", "--to", f"file:{out}", "--batch", "5", env=ship_env)
    assert r.exit_code == 0, r
    got = [json.loads(x)["id"] for x in out.read_text().splitlines()]
    assert got == [str(i) for i in range(1, 16)]
    assert Path(f"{out}.checkpoint").exists()


def test_stats_of_node_and_file_agree(invoke, ship_env, log, tmp_path):
    log.generate(27)
    for user, types, when in (("carol", ["upload.ended", "transfer.ended"],
                               "2026-01-02T03:59:59.999Z"),
                              ("carol", ["upload.ended", "transfer.ended"],
                               "2026-01-02T04:00:00Z"),
                              ("dave", ["zzz.first"], "2026-01-02T04:30:00+01:00")):
        log.append({"user_id": user, "types": types, "time": when, "data": {}})
    out = tmp_path / "ev.jsonl"
    assert invoke("events", "tail", "--to", str(out), "--iteration-token", "0",
                  env=ship_env).exit_code == 0
    r = invoke("events", "stats", "-o", "json", env=ship_env)
    assert r.exit_code == 0, r
    node = _by(json.loads(r.stdout))
    r = invoke("events", "stats", "--file", str(out), "-o", "json", env=ship_env)
    assert r.exit_code == 0, r
    held = _by(json.loads(r.stdout))
    assert node["total"] == held["total"] == 30
    assert node["by_type"] == held["by_type"] and node["by_user"] == held["by_user"]
    assert node["by_hour"] == held["by_hour"]
    assert sum(node["by_type"].values()) == 30
    # the first type counts; hours are UTC, a boundary second in its own hour
    assert node["by_type"]["upload.ended"] >= 2 and node["by_type"]["zzz.first"] == 1
    assert "transfer.ended" not in node["by_type"] or \
        node["by_type"]["transfer.ended"] == sum(1 for e in _events(log) if
                                                 e["types"][0] == "transfer.ended")
    assert node["by_user"]["carol"] >= 2 and node["by_user"]["dave"] == 1
    assert node["by_hour"]["2026-01-02T03:00:00Z"] == 2  # 03:59:59.999 and 04:30+01:00
    assert node["by_hour"]["2026-01-02T04:00:00Z"] == 1
    assert list(node["by_node"].values()) == [30] and held["by_node"] == {"-": 30}
    with open(out, "a") as fh:
        fh.write("not json\n")
    r = invoke("events", "stats", "--file", str(out), "-o", "csv", "--by", "type",
               env=ship_env)
    assert r.exit_code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0] == "by,key,count" and lines[-1] == "total,,30"
    assert "1 line(s)" in r.stderr


def _by(rows):
    """The rows of events stats -o json as {"total": N, "by_type": {key: count}...}."""
    out = {}
    for row in rows:
        if row["by"] == "total":
            out["total"] = row["count"]
        else:
            out.setdefault(f"by_{row['by']}", {})[row["key"]] = row["count"]
    return out


def _events(log):
    return [json.loads(log.get(str(i))) for i in range(1, log.last_position + 1)]


def _popen(args, env, **kw):
    return subprocess.Popen(nodecli_cmd(*args), env=subprocess_env(env), **kw)


@pytest.mark.slow
def test_sigkills_after_delivery_repeat_only_that_batch_with_its_key(
        ship_env, emulator, log, collector, tmp_path, run_cli, pause_point):
    """10 SIGKILLs, each after a page's batches reached the collector and before the
    checkpoint moved (the batch-delivered hook), while the node keeps logging and fails
    now and then, and the collector fails the first batches: every event is held, the
    only repeats are the batches of the page each killed run was sending, each with the
    key it had."""
    log.generate(600)  # full batches first (read again the same), then short ones (noted)
    faults = emulator.faults
    faults.path_prefix = "/events"
    collector.state.fail_first = 2
    pause = pause_point("batch-delivered")
    env = dict(ship_env, **pause.env())
    ck = tmp_path / "ck.json"
    args = ["events", "ship", "-f", "--to", collector.url, "--checkpoint", str(ck),
            "--since", "1h", "--batch", "150", "--interval", "0.05"]
    kills = 0
    try:
        faults.fail_rate = 0.05
        for cycle in range(10):
            err = tmp_path / f"stderr-{cycle}"
            with open(err, "wb") as err_file:
                proc = _popen(args, env, stdout=subprocess.DEVNULL, stderr=err_file)
            try:
                conn = None
                for _ in range(1 + cycle % 3):  # a batch or three, then the kill
                    if conn is not None:
                        pause.release(conn)
                    conn = pause.wait(proc)
                    assert conn is not None, err.read_text()[-600:]
                    # the node logs on while a batch is delivered: 20 a batch, fewer than
                    # a batch holds, so shipping catches up and sends short batches too
                    # (counted, not timed: a loaded machine sends the same batches)
                    log.generate(20)
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
                proc.wait(timeout=60)
                conn.close()
            finally:
                reap(proc)
    finally:
        faults.clear()
        faults.path_prefix = "/"
    r = run_cli("events", "ship", "--to", collector.url, "--checkpoint", str(ck),
                "--batch", "150", env=ship_env, timeout=300)
    assert r.exit_code == 0, r
    state = collector.state
    seen: dict[str, list[bytes]] = {}
    order: list[str] = []
    for key, lines in state.stored:
        if key in seen:
            assert seen[key] == lines  # a repeat is the same batch, with the same key
            continue
        seen[key] = lines
        order.append(key)
    # batches in flight together may reach the collector in either order (--window)
    order.sort(key=lambda k: int(json.loads(seen[k][0])["id"]))
    ids = [json.loads(x)["id"] for k in order for x in seen[k]]
    assert ids == [str(i) for i in range(1, log.last_position + 1)]
    # each kill repeats the batches it had sent (at most the window); after a kill in a
    # page a restart sent in two batches (the one noted, then the rest), both of them
    repeats = len(state.stored) - len(order)
    assert kills == 10 and kills <= repeats <= (WINDOW + 1) * kills
    assert any(len(seen[k]) < 150 for k in order[:-1])  # kills after short batches too


def test_tls_is_verified_with_the_sinks_own_ca(invoke, node_env, emulator, log, collector,
                                               tmp_path):
    log.generate(3)
    args = ("events", "ship", "--to", collector.url, "--resume", "t", "--since", "1h")
    r = invoke(*args, env=node_env)  # the node's CA is trusted; the sink's is not given
    assert r.exit_code == 6, r
    assert "TLS" in r.stderr and "--sink-cacert" in r.stderr
    assert collector.state.posts == 0
    r = invoke(*args, "--sink-cacert", emulator.ca_file, env=node_env)
    assert r.exit_code == 0, r
    assert stored_ids(collector.state) == ["1", "2", "3"]


def test_no_token_follows_a_redirect_to_another_origin(invoke, ship_env, emulator, log,
                                                      collector, tmp_path):
    from pathlib import Path as P

    from nodecli.emulator.tls import make_certificates
    from tests.scripted_server import ScriptedServer, reply

    log.generate(2)
    _ca, cert, key = make_certificates(P(emulator.ca_file).parent)
    elsewhere = collector.url.replace("localhost", "127.0.0.1") + "/ingest"

    def moved(seen):
        yield reply(307, b"", [("Location", elsewhere)])

    with ScriptedServer(moved, tls=(str(cert), str(key))) as srv:
        r = invoke("events", "ship", "--to", srv.url() + "/x", "--resume", "red",
                   "--since", "1h", env=dict(ship_env, NODECLI_SINK_TOKEN="tok-secret-1"))
        assert srv.seen and srv.seen[0].headers["authorization"] == "Bearer tok-secret-1"
    assert r.exit_code == 6, r  # the client never sends a body elsewhere
    assert "refused" in r.stderr and "tok-secret-1" not in r.stderr
    assert collector.state.posts == 0 and collector.state.headers == []


def test_stats_of_a_merged_file_by_node_and_missing_fields(invoke, tmp_path):
    merged = tmp_path / "fleet.jsonl"
    lines = [{"node": "a", "id": "1", "types": ["file.created"], "user_id": "u1",
              "time": "2026-03-04T05:06:07Z"},
             {"node": "a", "id": "2", "types": [], "user_id": 7},
             {"node": "b", "id": "1", "types": ["file.deleted", "file.x"], "user_id": True},
             {"id": "3"}]
    merged.write_text("".join(json.dumps(x) + "\n" for x in lines) + "[1]\n\n")
    r = invoke("events", "stats", "--file", str(merged), "-o", "json")
    assert r.exit_code == 0, r
    got = _by(json.loads(r.stdout))
    assert got["total"] == 4
    assert got["by_node"] == {"a": 2, "b": 1, "-": 1}
    assert got["by_type"] == {"file.created": 1, "file.deleted": 1, "-": 2}
    assert got["by_user"] == {"u1": 1, "7": 1, "-": 2}
    assert got["by_hour"] == {"2026-03-04T05:00:00Z": 1, "-": 3}
    assert "1 line(s)" in r.stderr  # [1] is not an event; the empty line is nothing
    rows = json.loads(r.stdout)
    assert [x["key"] for x in rows if x["by"] == "node"] == ["a", "-", "b"]  # most first
    r = invoke("events", "stats", "--file", str(merged), "--since", "1h")
    assert r.exit_code == 2 and "not with --file" in r.stderr
    r = invoke("events", "stats", "--file", str(tmp_path / "none.jsonl"))
    assert r.exit_code == 5 and "no such file" in r.stderr
