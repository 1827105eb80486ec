"""events ship --to https://...: the URL checks (one line, exit 2), and
the bound on attempts per batch (nodecli.node.events.sink_http.ATTEMPTS)."""

from __future__ import annotations

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
