"""events ship --to https://...: the URL checks (one line, exit 2), the bound on attempts
per batch (nodecli.node.events.sink_http.ATTEMPTS), the dead-letter file (appended, never
through a link); events stats: the node named, hours in time order, odd node fields."""

from __future__ import annotations

import json
import re

from nodecli.node.events.sink_http import ATTEMPTS
from tests import test_events_ship as shipping

# the collector fixtures of tests/test_events_ship.py (module-scoped server, fresh state)
_collector_server = shipping._collector_server
collector = shipping.collector
ship_env = shipping.ship_env
keys = shipping.keys


def test_a_bad_port_or_no_host_is_refused_in_one_line(invoke, ship_env, log):
    log.generate(2)
    for url, said in [("https://collector.example:65536/in", "invalid URL"),
                      ("https://collector.example:-1/in", "invalid URL"),
                      ("https:///in", "no host"), ("https://:8443/in", "no host")]:
        r = invoke("events", "ship", "--to", url, "--resume", "b", "--since", "1h",
                   env=ship_env)
        assert r.exit_code == 2, (url, r)
        lines = r.stderr.strip().splitlines()
        assert said in lines[0] and "Traceback" not in r.stderr, (url, r.stderr)


def test_a_batch_is_tried_attempts_times_then_fails(
        invoke, ship_env, log, collector):
    """429 with Retry-After: 0 (no wait): the 5th attempt is taken, a 6th is never made."""
    assert ATTEMPTS == 5
    log.generate(3)
    collector.state.fail_status = 429
    collector.state.fail_first = ATTEMPTS - 1
    r = invoke("events", "ship", "--to", collector.url, "--resume", "a", "--since", "1h",
               env=ship_env)
    assert r.exit_code == 0, r
    assert list(collector.state.keys.values()) == [ATTEMPTS]
    assert collector.state.batches == 1

    log.generate(2)
    collector.state.posts = 0
    collector.state.fail_first = ATTEMPTS
    r = invoke("events", "ship", "--to", collector.url, "--resume", "a", "--since", "1h",
               env=ship_env)
    assert r.exit_code == 6, r
    assert "did not take batch" in r.stderr and ":4:5" in r.stderr
    assert collector.state.posts == ATTEMPTS and collector.state.batches == 1


def test_dead_letter_appends_every_batch_and_never_follows_a_link(invoke, ship_env, log,
                                                                   collector, tmp_path):
    log.generate(15)
    collector.state.refuse = {2, 3}  # (the second and third POSTs to arrive)
    dead = tmp_path / "dead.jsonl"
    # one batch in flight: the POSTs arrive in the events' order (with more, which batch
    # arrives second is the machine's choice)
    r = invoke("events", "ship", "--to", collector.url, "--resume", "d", "--batch", "5",
               "--since", "1h", "--dead-letter", str(dead), "--window", "1", env=ship_env)
    assert r.exit_code == 0, r
    assert [json.loads(x)["id"] for x in dead.read_text().splitlines()] == \
        [str(i) for i in range(6, 16)]  # the second batch set aside after the first
    # a link at the dead-letter path is not followed (nor is the file it names written)
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    log.generate(2)
    collector.state.posts = 0
    collector.state.refuse = {1}
    r = invoke("events", "ship", "--to", collector.url, "--resume", "d", "--batch", "5",
               "--since", "1h", "--dead-letter", str(link), env=ship_env)
    assert r.exit_code == 6, r
    assert f"cannot open the dead-letter file {link}" in r.stderr
    assert target.read_text() == ""


def test_stats_name_the_node_read_and_hours_in_time_order(invoke, ship_env, log, tmp_path):
    log.generate(5)
    for when in ("2026-01-02T03:10:00Z", "2026-01-02T03:20:00Z", "2026-01-02T01:00:00Z"):
        log.append({"user_id": "u", "types": ["x.y"], "time": when, "data": {}})
    r = invoke("events", "stats", "-o", "json", "--by", "node", "--by", "hour",
               env=ship_env)
    assert r.exit_code == 0, r
    rows = json.loads(r.stdout)
    nodes = {x["key"]: x["count"] for x in rows if x["by"] == "node"}
    assert list(nodes.values()) == [8] and "-" not in nodes  # the node read, not "-"
    hours = [x["key"] for x in rows if x["by"] == "hour"]
    assert hours == sorted(hours) and hours[:2] == ["2026-01-02T01:00:00Z",
                                                    "2026-01-02T03:00:00Z"]
    # in a file, a node that is not a non-empty string is no node
    merged = tmp_path / "odd.jsonl"
    merged.write_text("".join(json.dumps(x) + "\n" for x in
                              [{"id": "1", "node": 5}, {"id": "2", "node": ""},
                               {"id": "3", "node": "n"}]))
    r = invoke("events", "stats", "--file", str(merged), "-o", "json", "--by", "node")
    assert r.exit_code == 0, r
    assert {x["key"]: x["count"] for x in json.loads(r.stdout) if x["by"] == "node"} == \
        {"-": 2, "n": 1}


def test_stats_of_a_file_count_unreadable_lines_and_bound_a_line(invoke, tmp_path):
    from nodecli.node.events.stats import MAX_LINE

    path = tmp_path / "big.jsonl"
    with open(path, "wb") as fh:
        fh.write(b'{"id": "1", "types": ["a.b"]}\n')
        fh.write(b"not json\n[2]\n")
        # an event of exactly MAX_LINE bytes with its newline: read
        head = b'{"id": "2", "types": ["a.b"]}'
        fh.write(head + b" " * (MAX_LINE - len(head) - 1) + b"\n")
        # one longer: its first MAX_LINE bytes are not read as an event, though they
        # hold one, and the rest (blank) is nothing
        head = b'{"id": "3", "types": ["a.b"]}'
        fh.write(head + b" " * (MAX_LINE - len(head)) + b"   \n")
    r = invoke("events", "stats", "--file", str(path), "-o", "json", "--by", "type")
    assert r.exit_code == 0, r
    assert json.loads(r.stdout)[0] == {"by": "type", "key": "a.b", "count": 2}
    assert f"warning: 3 line(s) of {path} are not events" in r.stderr


def test_a_refusal_says_what_the_collector_said(invoke, ship_env, log, collector):
    log.generate(2)
    collector.state.refuse = {1}
    r = invoke("events", "ship", "--to", collector.url, "--resume", "r", "--since", "1h",
               env=ship_env)
    assert r.exit_code == 6, r
    assert "refused batch" in r.stderr and "batch 1 refused" in r.stderr  # its words


def test_a_collector_slower_than_sink_timeout_fails_the_batch(invoke, ship_env, log,
                                                              collector):
    """--sink-timeout bounds each attempt, ATTEMPTS of them the batch: a collector that
    answers after 3 s is given up on at 1 s each time (not waited for within the 5 s
    the batch may take), and the batch is not delivered; a collector that answers after
    1 s is waited for with a timeout of 4 s."""
    log.generate(2)
    collector.state.delay = 3.0
    r = invoke("events", "ship", "--to", collector.url, "--resume", "t", "--since", "1h",
               "--sink-timeout", "1", env=ship_env)
    assert r.exit_code == 6, r
    assert "did not take batch" in r.stderr
    # each attempt is cut at 1 s, so more than one is made; the batch's bound is
    # ATTEMPTS x --sink-timeout = 5 s (not the command's deadline), which five attempts
    # of 1 s and the waits between them outlast: the 5th, if made, is cut by it
    # (on a machine so loaded that the first attempt alone outlasts the 5 s, the
    # deadline cuts it and no count is said)
    said = re.search(r"no (?:complete )?answer within the (read timeout of 1 s|deadline of "
                     r"5 s)(?: after (\d+) attempts)?", r.stderr)
    assert said, r.stderr
    bound, attempts = said.group(1), int(said.group(2) or 1)
    assert attempts <= ATTEMPTS, r.stderr
    assert 2 <= attempts or bound == "deadline of 5 s", r.stderr
    assert attempts < ATTEMPTS or bound == "deadline of 5 s", r.stderr
    collector.state.delay = 1.0
    r = invoke("events", "ship", "--to", collector.url, "--resume", "t", "--since", "1h",
               "--sink-timeout", "4", env=ship_env)
    assert r.exit_code == 0, r


def test_the_collector_takes_no_batch_whose_body_was_cut(ship_env, collector):
    """A sender killed mid-body (as `events ship` under SIGKILL): the emulator's collector,
    like any HTTP server, acts on no request it did not read whole."""
    import socket
    import ssl
    from urllib.parse import urlsplit

    where = urlsplit(collector.url)
    ctx = ssl.create_default_context(cafile=ship_env["NODECLI_SINK_CACERT"])
    with socket.create_connection((where.hostname, where.port), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=where.hostname) as tls:
        tls.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                    b"Idempotency-Key: cut\r\n\r\n" + b'{"id": "1"}\n')
        tls.settimeout(10)
        # close_notify: the collector reads the end of the body, and answers it with its
        # own close_notify once its handler is done (nothing else: no answer)
        try:
            plain = tls.unwrap()
            plain.settimeout(10)
            rest = plain.recv(100)
        except ssl.SSLEOFError:  # closed without close_notify: its handler is done too
            rest = b""
        assert rest == b""
    assert (collector.state.posts, collector.state.stored) == (0, [])
