"""``events ship`` and ``events stats`` (nodecli/cli/events_ship.py) at the edges the
mutation run found unwatched: the sink's credentials from a file and the environment
(what the collector is sent, each refusal word for word), the CA and .creds files, the
notices of a batch set aside, shipping every node to one collector and resuming each,
and ``events stats`` of a node from the epoch or after ``--since``. In process, over
HTTPS to the emulator and its collector."""

from __future__ import annotations

import base64
import json
import os

import pytest

from tests.test_events_ship import _collector_server as _collector_server  # the fixtures
from tests.test_events_ship import collector as collector
from tests.test_events_ship import ship_env as ship_env
from tests.test_events_ship import stored_ids


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def ship(invoke, url: str, env: dict[str, str], *args: str):
    return invoke("events", "ship", "--to", url, "--resume", "m", "--since", "1h", *args,
                  env=env)


def error_line(stderr: str) -> str:
    return stderr.splitlines()[0].removeprefix("nodecli: error: ")


# --- --sink-creds FILE and the environment -----------------------------------------------

def test_a_creds_file_of_one_line_without_equals_is_a_token(invoke, ship_env, log, collector,
                                                           tmp_path):
    log.generate(2)
    creds = tmp_path / "creds"
    creds.write_text("\n  tok-en/1+2  \n\n")  # blank lines are nothing; the line stripped
    collector.state.token = "tok-en/1+2"
    r = ship(invoke, collector.url, ship_env, "--sink-creds", str(creds))
    assert r.exit_code == 0, r
    assert collector.state.headers[-1]["Authorization"] == "Bearer tok-en/1+2"
    assert stored_ids(collector.state) == ["1", "2"]


def test_a_creds_file_of_keys_in_any_case_with_spaces_and_equals_in_values(
        invoke, ship_env, log, collector, tmp_path):
    log.generate(1)
    creds = tmp_path / "creds"
    creds.write_text("  User = alice \n\nPASSWORD= p=w x \n")
    collector.state.user, collector.state.password = "alice", "p=w x"
    r = ship(invoke, collector.url, ship_env, "--sink-creds", str(creds))
    assert r.exit_code == 0, r
    assert collector.state.headers[-1]["Authorization"] == basic("alice", "p=w x")
    padded = tmp_path / "padded"
    padded.write_text("c2VjcmV0LXRva2Vu==\n")  # one line, '=' but no key: the token
    collector.state = type(collector.state)(token="c2VjcmV0LXRva2Vu==")
    log.generate(1)
    r = ship(invoke, collector.url, ship_env, "--sink-creds", str(padded))
    assert r.exit_code == 0, r
    assert collector.state.headers[-1]["Authorization"] == "Bearer c2VjcmV0LXRva2Vu=="
    # no word before the '=' (a dot; 33 characters), or only padding after it: a token
    for token in ("a.b=c", "k" * 33 + "=v", "usr=="):
        odd = tmp_path / "odd"
        odd.write_text(token + "\n")
        collector.state = type(collector.state)(token=token)
        log.generate(1)
        r = ship(invoke, collector.url, ship_env, "--sink-creds", str(odd))
        assert r.exit_code == 0, r
        assert collector.state.headers[-1]["Authorization"] == f"Bearer {token}"
    token_file = tmp_path / "token"
    token_file.write_text("token = t-1\n")  # one line with a key: the key's value
    collector.state = type(collector.state)(token="t-1")
    log.generate(1)
    r = ship(invoke, collector.url, ship_env, "--sink-creds", str(token_file))
    assert r.exit_code == 0, r
    assert collector.state.headers[-1]["Authorization"] == "Bearer t-1"
    # one line with a key whose value pads with '=': the key is before the first '='
    token_file.write_text("token=YWJjZA==\n")
    collector.state = type(collector.state)(token="YWJjZA==")
    log.generate(1)
    r = ship(invoke, collector.url, ship_env, "--sink-creds", str(token_file))
    assert r.exit_code == 0, r
    assert collector.state.headers[-1]["Authorization"] == "Bearer YWJjZA=="


@pytest.mark.parametrize("name", ["NODECLI_SINK_USER", "NODECLI_SINK_PASSWORD"])
def test_the_environment_comes_before_the_creds_file(invoke, ship_env, log, collector,
                                                     tmp_path, name):
    log.generate(1)
    creds = tmp_path / "creds"
    creds.write_text("user=alice\npassword=file-pw\n")
    env = dict(ship_env, **{name: "from-env"})
    r = ship(invoke, collector.url, env, "--sink-creds", str(creds))
    assert r.exit_code == 0, r
    want = basic("from-env", "file-pw") if name == "NODECLI_SINK_USER" else \
        basic("alice", "from-env")
    assert collector.state.headers[-1]["Authorization"] == want


def test_the_token_of_the_environment_comes_before_the_files(invoke, ship_env, log,
                                                             collector, tmp_path):
    log.generate(1)
    creds = tmp_path / "creds"
    creds.write_text("file-token\n")
    r = ship(invoke, collector.url, dict(ship_env, NODECLI_SINK_TOKEN="env-token"),
             "--sink-creds", str(creds))
    assert r.exit_code == 0, r
    assert collector.state.headers[-1]["Authorization"] == "Bearer env-token"
    # and each of the three alone, from the environment
    log.generate(1)
    r = ship(invoke, collector.url, dict(ship_env, NODECLI_SINK_USER="u",
                                         NODECLI_SINK_PASSWORD="p"))
    assert r.exit_code == 0, r
    assert collector.state.headers[-1]["Authorization"] == basic("u", "p")


def _creds_refusal(invoke, ship_env, collector, creds) -> str:
    r = ship(invoke, collector.url, ship_env, "--sink-creds", str(creds))
    assert collector.state.posts == 0  # refused before anything is sent
    return f"{r.exit_code} {error_line(r.stderr)}"


def test_what_a_creds_file_refuses_word_for_word(invoke, ship_env, log, collector, tmp_path):
    log.generate(1)
    creds = tmp_path / "creds"
    cases = [
        ("one\ntwo\n", "2 --sink-creds {p}: line 1 is not token=..., user=... or "
                       "password=..."),
        # the line is not shown (it may be a secret); its number counts blank lines
        ("user=a\n\nSecret" + "S" * 30 + "=x\n",
         "2 --sink-creds {p}: line 3 is not token=..., user=... or password=..."),
        (b"token=\xff\xfe\n", "2 --sink-creds {p}: not UTF-8 text"),
        # one line, a word, '=' and a value: a key misspelt, not a token to send
        ("usr=bob\n", "2 --sink-creds {p}: line 1 is not token=..., user=... or "
                      "password=..."),
        ("Pass_Word = x==\n", "2 --sink-creds {p}: line 1 is not token=..., user=... or "
                              "password=..."),
        ("k" * 32 + "=v\n", "2 --sink-creds {p}: line 1 is not token=..., user=... or "
                            "password=..."),
        ("usr=X=\n", "2 --sink-creds {p}: line 1 is not token=..., user=... or "
                     "password=..."),  # a value, not only padding
        # exactly 64 KiB is read whole (the token's line padded with blanks); a byte more
        # is refused, not cut
        (b"token=t-64" + b" " * (64 * 1024 - 11) + b"\n", None),
        (b"token=t-64" + b" " * (64 * 1024 - 10) + b"\n",
         "2 --sink-creds {p} is larger than 65536 bytes"),
    ]
    for content, want in cases:
        if isinstance(content, str):
            content = content.encode()
        creds.write_bytes(content)
        if want is None:
            assert len(content) == 64 * 1024
            collector.state.token = "t-64"
            r = ship(invoke, collector.url, ship_env, "--sink-creds", str(creds))
            assert r.exit_code == 0, r
            collector.state = type(collector.state)()
            continue
        assert _creds_refusal(invoke, ship_env, collector, creds) == want.format(p=creds)


def test_a_misspelt_key_says_how_to_give_a_token_that_holds_equals(invoke, ship_env, log,
                                                                    collector, tmp_path):
    log.generate(1)
    creds = tmp_path / "creds"
    creds.write_text("usr=bob\n")
    r = ship(invoke, collector.url, ship_env, "--sink-creds", str(creds))
    assert r.exit_code == 2 and collector.state.posts == 0
    assert r.stderr.splitlines()[-1] == "hint: a token holding '=' before its end goes on " \
                                        "a line token=TOKEN"
    assert "bob" not in r.stderr


def test_a_creds_file_that_is_not_one(invoke, ship_env, log, collector, tmp_path):
    log.generate(1)
    missing = tmp_path / "none"
    assert _creds_refusal(invoke, ship_env, collector, missing) == \
        f"5 --sink-creds {missing}: no such file"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert _creds_refusal(invoke, ship_env, collector, fifo) == \
        f"2 --sink-creds {fifo} is a named pipe (FIFO), not a regular file"
    plain = tmp_path / "plain"
    plain.write_text("tok\n")
    # (a path through a file is no file, as for every file option: fsutil.read_limited)
    assert _creds_refusal(invoke, ship_env, collector, plain / "x") == \
        f"5 --sink-creds {plain / 'x'}: no such file"


# --- the sink's CA, a NATS .creds file, --sink-insecure, --sink-timeout ------------------

def test_missing_ca_and_creds_files_are_named_before_anything_is_sent(invoke, ship_env, log,
                                                                      collector, tmp_path):
    log.generate(1)
    missing = tmp_path / "ca.pem"
    r = ship(invoke, collector.url, dict(ship_env, NODECLI_SINK_CACERT=str(missing)))
    assert r.exit_code == 5, r
    assert r.stderr == (f"nodecli: error: CA file {missing}: no such file\n"
                        "hint: from --sink-cacert or NODECLI_SINK_CACERT\n")
    r = ship(invoke, collector.url, ship_env, "--creds", str(tmp_path / "x.creds"))
    assert r.exit_code == 5, r
    assert r.stderr == f"nodecli: error: --creds {tmp_path / 'x.creds'}: no such file\n"
    assert collector.state.posts == 0
    # a .creds file that exists is handed on (to a NATS sink; the HTTP sink ignores it)
    creds = tmp_path / "ok.creds"
    creds.write_text("-----BEGIN NATS USER JWT-----\n")
    r = ship(invoke, collector.url, ship_env, "--creds", str(creds))
    assert r.exit_code == 0, r


def test_sink_insecure_ships_without_the_collectors_ca(invoke, node_env, log, collector):
    log.generate(2)
    r = ship(invoke, collector.url, node_env, "--sink-insecure")
    assert r.exit_code == 0, r
    assert stored_ids(collector.state) == ["1", "2"]


def test_a_collector_slower_than_the_sink_timeout_is_not_waited_for(invoke, ship_env, log,
                                                                    collector):
    log.generate(1)
    collector.state.delay = 3.0  # each answer; 0.2 s is the most one attempt may take
    r = ship(invoke, collector.url, ship_env, "--sink-timeout", "0.2")
    assert r.exit_code == 6, r
    assert "did not take batch" in r.stderr
    assert stored_ids(collector.state) in ([], ["1"])  # (it stores, then answers late)


def test_a_batch_set_aside_is_said_sanitized_and_cut(invoke, ship_env, log, collector,
                                                     tmp_path):
    log.generate(2)
    collector.state.refuse = {1}
    folder = tmp_path / ("d\x1b[31m" + "x" * 200) / ("y" * 200)
    folder.mkdir(parents=True)
    dead = folder / "dead.jsonl"
    r = ship(invoke, collector.url, ship_env, "--dead-letter", str(dead))
    assert r.exit_code == 0, r
    said = [line.removeprefix("nodecli: warning: ") for line in r.stderr.splitlines()
            if line.startswith("nodecli: warning: the collector refused batch")]
    assert len(said) == 1 and "\x1b" not in said[0]
    assert said[0].startswith("the collector refused batch ")
    assert len(said[0]) == 400 and said[0].endswith("x" * 20)
    assert dead.exists()


# --- events ship --all-nodes to a collector -----------------------------------------------

@pytest.fixture
def two_nodes(invoke, emulator, home):
    """Profiles n1 and n2, each with a log of its own."""
    from nodecli.emulator.app import build_server

    other = build_server(emulator.paths, persist=False).start()
    for name, server in (("n1", emulator.server), ("n2", other)):
        r = invoke("node", "add", name, "--url", server.url, "--user", "admin",
                   "--password-stdin", input="admin-pass\n")
        assert r.exit_code == 0, r.stderr
    yield emulator.server, other
    other.stop()


def _ids_by_node(state) -> dict[str, list[int]]:
    got: dict[str, list[int]] = {}
    for key, lines in state.stored:
        node = str(key).split(":", 1)[0]
        got.setdefault(node, []).extend(int(json.loads(x)["id"]) for x in lines)
    return {k: sorted(v) for k, v in sorted(got.items())}


def test_every_node_to_one_collector_resumes_each_node_by_name(invoke, two_nodes, collector,
                                                               emulator):
    from nodecli.emulator.events import log_for

    one, two = (log_for(s.state) for s in two_nodes)
    one.generate(3)
    two.generate(5)
    env = {"NODECLI_SINK_CACERT": emulator.ca_file}
    args = ("events", "ship", "--all-nodes", "--since", "1h", "--to", collector.url,
            "--resume", "fleet", "--batch", "2")
    r = invoke(*args, env=env)
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[-1] == f"shipped 8 events from 2 node(s) to {collector.url}"
    assert _ids_by_node(collector.state) == {"n1": [1, 2, 3], "n2": [1, 2, 3, 4, 5]}
    one.generate(2)
    r = invoke(*args, env=env)  # each node from its own checkpoint in the state folder
    assert r.exit_code == 0, r.stderr
    assert r.stderr.splitlines()[-1] == f"shipped 2 events from 2 node(s) to {collector.url}"
    assert _ids_by_node(collector.state) == {"n1": [1, 2, 3, 4, 5], "n2": [1, 2, 3, 4, 5]}


def test_all_nodes_refuse_one_checkpoint_file_with_a_file_sink(invoke, two_nodes, tmp_path):
    r = invoke("events", "ship", "--all-nodes", "--to", f"file:{tmp_path / 'o.jsonl'}",
               "--checkpoint", str(tmp_path / "ck.json"))
    assert r.exit_code == 2, r
    assert r.stderr == ("nodecli: error: --checkpoint FILE holds one node's position: with "
                        "--nodes use --resume NAME (a checkpoint per node)\n")
    assert not (tmp_path / "o.jsonl").exists()


# --- events stats of a node ----------------------------------------------------------------

def _stats(invoke, env, *args: str) -> dict[str, int]:
    r = invoke("events", "stats", "-o", "json", "--by", "type", *args, env=env)
    assert r.exit_code == 0, r
    return {row["key"] if row["by"] == "type" else "total": row["count"]
            for row in json.loads(r.stdout)}


def test_stats_count_from_the_epochs_first_second_or_after_since(invoke, node_env, log):
    log.append({"types": ["old.first"], "time": "1970-01-01T00:00:01Z"})
    log.append({"types": ["old.second"], "time": "1999-12-31T23:59:59Z"})
    log.generate(3, families=["file"])
    every = _stats(invoke, node_env)
    assert every["old.first"] == 1 and every["old.second"] == 1 and every["total"] == 5
    since = _stats(invoke, node_env, "--since", "1999-12-31T23:59:58Z")  # not 10 minutes
    assert "old.first" not in since and since["old.second"] == 1 and since["total"] == 4


def test_stats_keep_the_nodes_info_and_log_when_it_cannot_be_read(invoke, node_env, log,
                                                                  emulator, served):
    log.generate(1)
    emulator.faults.path_prefix = "/info"
    emulator.faults.push("500")
    try:
        r = invoke("-v", "events", "stats", "-o", "json", env=node_env)
    finally:
        emulator.faults.clear()
    assert r.exit_code == 0, r
    assert [line for line in r.stderr.splitlines() if "/info" in line][-1].startswith(
        "debug: GET /info failed (")
    for _ in range(2):  # the first asks /info again and keeps it; the second reads it kept
        assert invoke("events", "stats", env=node_env).exit_code == 0
    assert sum(" /info " in line for line in served) == 2


def test_every_node_keeps_its_info_and_logs_when_it_cannot_be_read(invoke, two_nodes,
                                                                   collector, emulator,
                                                                   served):
    from nodecli.emulator.events import log_for

    log_for(two_nodes[0].state).generate(1)
    env = {"NODECLI_SINK_CACERT": emulator.ca_file}
    args = ("events", "ship", "--all-nodes", "--since", "1h", "--to", collector.url,
            "--resume", "i")
    emulator.faults.path_prefix = "/info"
    emulator.faults.push("500")  # n1's
    try:
        r = invoke("-v", *args, env=env)
    finally:
        emulator.faults.clear()
    assert r.exit_code == 0, r
    assert (f"debug: GET /info failed (GET {two_nodes[0].url}/info: HTTP 500: injected "
            "failure); node version unknown") in r.stderr.splitlines()
    served.clear()
    for _ in range(2):  # the first asks /info again and keeps it; the second reads it kept
        assert invoke(*args, env=env).exit_code == 0
    assert sum(" /info " in line for line in served) == 1


def test_every_nodes_hints_and_warnings_are_said_led_by_its_name_and_cut(
        invoke, two_nodes, collector, emulator):
    from nodecli.emulator.events import log_for
    from nodecli.node.events.pages import foreign_host_notice

    one = log_for(two_nodes[0].state)
    one.generate(1)
    host = "h" * 300 + ".example:9092"
    one.link_host = host  # the Link of n1's page names another host: a warning
    try:
        r = invoke("events", "ship", "--all-nodes", "--since", "1h", "--to", collector.url,
                   "--resume", "w", env={"NODECLI_SINK_CACERT": emulator.ca_file})
    finally:
        one.link_host = None
    assert r.exit_code == 0, r.stderr
    said = sorted(line.removeprefix("nodecli: warning: ") for line in r.stderr.splitlines()
                  if line.startswith("nodecli: warning: "))
    assert said[0] == ("n1: " + foreign_host_notice(host, two_nodes[0].url))[:400]
    assert said[0].endswith("the next pages o")  # (the host is in the first 400)
    assert said[1].startswith("n2: hint: the node's event log is empty")  # n2 holds none


@pytest.mark.slow
def test_a_signal_ends_every_nodes_retries_of_a_collector_that_keeps_failing(
        two_nodes, collector, emulator, tmp_path):
    """-f and a collector that answers 429 to every batch: each node's sink waits and
    tries again, its status said; SIGINT ends the waits at once, and the run, with the
    hint that the same command resumes."""
    import signal
    import subprocess

    from nodecli.emulator.events import log_for
    from tests.conftest import nodecli_cmd, reap, subprocess_env
    from tests.test_events_tail import wait_for

    log_for(two_nodes[0].state).generate(1)
    collector.state.fail_first, collector.state.fail_status = 10**9, 429
    err = tmp_path / "stderr"
    args = ["events", "ship", "-f", "--all-nodes", "--since", "1h", "--to", collector.url,
            "--resume", "s", "--interval", "0.05"]
    with open(err, "wb") as err_file:
        proc = subprocess.Popen(nodecli_cmd(*args), stdout=subprocess.DEVNULL,
                                stderr=err_file, env=subprocess_env(
                                    {"NODECLI_SINK_CACERT": emulator.ca_file}))
    try:
        wait_for(lambda: "n1: reconnecting (attempt 1, next in " in err.read_text())
        proc.send_signal(signal.SIGINT)
        # the sink's waits are up to 60 s each and never end while the collector fails:
        # only the signal reaching them ends the run
        assert proc.wait(timeout=50) == 130, err.read_text()
    finally:
        reap(proc)
    lines = err.read_text().splitlines()
    assert lines[-2:] == ["nodecli: interrupted after 0 events from 2 node(s)",
                          "hint: the same command resumes each node where it stopped"], lines


# --- what events ship says at its end, --batch, --dry-run -------------------------------

def test_the_end_names_the_sink_cut_at_200_and_one_batch(invoke, ship_env, log, collector):
    log.generate(1)
    url = collector.url + "/" + "p" * 300  # (the collector takes any path)
    r = ship(invoke, url, ship_env)
    assert r.exit_code == 0, r
    assert r.stderr.splitlines()[-1] == f"shipped 1 event to {url[:200]} in 1 batch"
    assert stored_ids(collector.state) == ["1"]


def test_a_batch_is_one_event_or_more(invoke, ship_env, log, collector):
    log.generate(2)
    r = ship(invoke, collector.url, ship_env, "--batch", "0")
    assert r.exit_code == 2 and "--batch" in r.stderr and collector.state.posts == 0
    r = ship(invoke, collector.url, ship_env, "--batch", "1", "--window", "1")
    assert r.exit_code == 0, r
    assert r.stderr.splitlines()[-1] == f"shipped 2 events to {collector.url} in 2 batches"
    assert [len(lines) for _, lines in collector.state.stored] == [1, 1]


def test_dry_run_names_the_sink_and_sends_nothing(invoke, ship_env, two_nodes, log,
                                                  collector, emulator):
    log.generate(1)
    url = collector.url + "/" + "q" * 300
    r = invoke("--dry-run", "events", "ship", "--to", url, "--resume", "d", env=ship_env)
    assert r.exit_code == 0, r
    assert r.stdout == f"would ship events to {url[:200]}; nothing was sent (--dry-run)\n"
    r = invoke("--dry-run", "events", "ship", "--all-nodes", "--to", url, "--resume", "d",
               env={"NODECLI_SINK_CACERT": emulator.ca_file})
    assert r.exit_code == 0, r
    assert r.stdout == (f"would ship events of 2 node(s) to {url[:200]}; nothing was sent "
                        "(--dry-run)\n")
    assert collector.state.posts == 0


# --- one batch sink shared by the nodes of a fleet ----------------------------------------

def test_the_shared_sink_is_resumed_before_a_retry_and_works_without_resume():
    """(``--all-nodes``: each node's ShipSink delivers through one _Serial; a NATS sink
    is told to publish again after a failure, other sinks have nothing to resume)"""
    from nodecli.cli.events_ship import _Serial
    from tests.test_ship_sink_window import Flaky, items, sink_of

    tried_when_resumed: list[list[str]] = []
    batch = Flaky({"1": 1})
    batch.resume = lambda: tried_when_resumed.append(list(batch.tries))
    naps: list[float] = []
    ship = sink_of(_Serial(batch), naps=naps)
    try:
        ship.take(items(1, 2), ["a", "b"])
    finally:
        ship.close()
    assert batch.held == [["1", "2"]] and tried_when_resumed == [["1"]] and len(naps) == 1
    plain = Flaky({"1": 1})  # no resume
    ship = sink_of(_Serial(plain), naps=naps)
    try:
        ship.take(items(1), ["a"])
    finally:
        ship.close()
    assert plain.held == [["1"]] and plain.tries == ["1", "1"]


# --- the refusals of events ship, one node or many, word for word -------------------------

def test_what_ship_refuses_before_anything_is_sent_word_for_word(invoke, ship_env, two_nodes,
                                                                 collector, tmp_path,
                                                                 emulator):
    cases = [
        (["--to", f"file:{tmp_path / 'o.jsonl'}", "--dead-letter", str(tmp_path / "d")],
         "--dead-letter is for a collector that may refuse a batch, not for file:"),
        (["--all-nodes", "--to", collector.url, "--resume", "x", "--iteration-token", "0"],
         "an iteration token belongs to one node: not with --nodes"),
        (["--to", collector.url], "events ship needs a checkpoint: --resume NAME or "
         "--checkpoint FILE (where shipping stands between runs)"),
    ]
    fleet_env = {"NODECLI_SINK_CACERT": emulator.ca_file}  # (the profiles n1, n2)
    for args, message in cases:
        r = invoke("events", "ship", *args, env=fleet_env if "--all-nodes" in args else ship_env)
        assert (r.exit_code, r.stderr) == (2, f"nodecli: error: {message}\n"), args
    r = invoke("events", "ship", "--all-nodes", "--to", collector.url, "--resume", "x",
               "--creds", str(tmp_path / "none.creds"), env=fleet_env)
    assert (r.exit_code, r.stderr) == (
        5, f"nodecli: error: --creds {tmp_path / 'none.creds'}: no such file\n")
    assert collector.state.posts == 0 and not (tmp_path / "o.jsonl").exists()


def test_every_node_ships_with_the_sinks_options(invoke, two_nodes, collector, tmp_path):
    """--sink-insecure, --sink-creds and --dead-letter reach the one sink of a fleet."""
    from nodecli.emulator.events import log_for

    log_for(two_nodes[0].state).generate(2)
    creds = tmp_path / "creds"
    creds.write_text("user=fleet\npassword=pw\n")
    collector.state.user, collector.state.password = "fleet", "pw"
    collector.state.refuse = {1}
    dead = tmp_path / "dead.jsonl"
    r = invoke("events", "ship", "--all-nodes", "--since", "1h", "--to", collector.url,
               "--resume", "o", "--sink-insecure", "--sink-creds", str(creds),
               "--dead-letter", str(dead))
    assert r.exit_code == 0, r.stderr
    assert collector.state.headers[-1]["Authorization"] == basic("fleet", "pw")
    assert [line for line in r.stderr.splitlines() if "set aside" in line] == [
        "nodecli: warning: the collector refused batch n1:1:2 (2 events): POST "
        f"{collector.url}: HTTP 400: batch 1 refused; set aside in {dead}"]
    assert [json.loads(line)["id"] for line in dead.read_text().splitlines()] == ["1", "2"]


# --- where events ship starts and what it takes ------------------------------------------

def _ago(minutes: float) -> str:
    from datetime import UTC, datetime, timedelta

    return (datetime.now(UTC) - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_ship_starts_at_since_or_a_token_and_takes_the_filters_events(invoke, ship_env, log,
                                                                      collector):
    log.append({"types": ["file.created"], "time": _ago(30)})  # before the default start
    log.append({"types": ["transfer.started"], "time": _ago(20)})
    log.append({"types": ["file.deleted"], "time": _ago(1)})
    log.append({"types": ["transfer.ended"], "time": _ago(0)})
    cases = [
        (["--since", "1h"], ["1", "2", "3", "4"]),  # not the last 10 minutes (the default)
        (["--iteration-token", "2"], ["3", "4"]),
        (["--since", "1h", "--type", "file.created"], ["1"]),
        (["--since", "1h", "--type-glob", "transfer.*"], ["2", "4"]),
    ]
    for i, (args, ids) in enumerate(cases):
        collector.state = type(collector.state)()
        r = invoke("events", "ship", "--to", collector.url, "--resume", f"s{i}", *args,
                   env=ship_env)
        assert r.exit_code == 0, r
        assert stored_ids(collector.state) == ids, args


@pytest.mark.parametrize(("args", "message"), [
    (["--checkpoint", "ck.json", "--resume", "r"],
     "give --checkpoint FILE or --resume NAME, not both"),
    (["--resume", "a/b"], "invalid checkpoint name 'a/b': letters, digits, '.', '_' and '-' "
     "(at most 64)"),
])
def test_a_dry_run_refuses_what_the_run_would(invoke, ship_env, collector, args, message):
    r = invoke("--dry-run", "events", "ship", "--to", collector.url, *args, env=ship_env)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"nodecli: error: {message}\n")


@pytest.mark.slow
def test_a_fleet_ship_killed_after_a_short_batch_sends_it_again_with_its_key(
        two_nodes, collector, emulator, pause_point, run_cli):
    """A node's page shorter than --batch is noted in that node's checkpoint before it
    is sent; killed after the collector took it (the checkpoint not moved), the restart
    sends the same events again under the same key, then the ones logged since."""
    import signal
    import subprocess

    from nodecli.emulator.events import log_for
    from tests.conftest import nodecli_cmd, reap, subprocess_env

    one = log_for(two_nodes[0].state)
    one.generate(3)
    pause = pause_point("batch-delivered")
    env = {"NODECLI_SINK_CACERT": emulator.ca_file}
    args = ["events", "ship", "--all-nodes", "--since", "1h", "--to", collector.url,
            "--resume", "k", "--batch", "5"]
    proc = subprocess.Popen(nodecli_cmd(*args), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=subprocess_env(dict(env,
                                                                           **pause.env())))
    try:
        conn = pause.wait(proc)
        assert conn is not None
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        conn.close()
    finally:
        reap(proc)
    assert [key for key, _ in collector.state.stored] == ["n1:1:3"]
    one.generate(2)  # a restart that read a page again would now find 5 events
    r = run_cli(*args, env=env)
    assert r.exit_code == 0, r
    assert [key for key, _ in collector.state.stored] == ["n1:1:3", "n1:1:3", "n1:4:5"]


@pytest.mark.parametrize("option", ["--checkpoint", "--dead-letter", "--sink-cacert",
                                    "--sink-creds", "--creds"])
def test_a_file_option_refuses_a_folder_before_anything_is_sent(invoke, ship_env, log,
                                                               collector, tmp_path, option):
    log.generate(1)
    extra = [] if option == "--checkpoint" else ["--resume", "f"]
    r = invoke("events", "ship", "--to", collector.url, "--since", "1h", option,
               str(tmp_path), *extra, env=ship_env)
    assert r.exit_code == 2, r
    named = f"'{option}' (env var: 'NODECLI_SINK_CACERT')" if option == "--sink-cacert" \
        else f"'{option}'"
    assert f"Invalid value for {named}: File '{tmp_path}' is a directory." in r.stderr, r
    assert collector.state.posts == 0


def test_file_options_expand_a_leading_tilde(invoke, ship_env, log, collector, emulator,
                                            tmp_path):
    """~ in a quoted path (the shell left it) is the home: the CA, the credentials and
    the checkpoint are found and written there, a refused batch set aside there."""
    import shutil

    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(emulator.ca_file, home / "ca.pem")
    (home / "creds").write_text("token=t1\n")
    log.generate(2)
    collector.state.token = "t1"
    collector.state.refuse = {1}
    env = {k: v for k, v in ship_env.items() if k != "NODECLI_SINK_CACERT"}
    env["HOME"] = str(home)
    r = invoke("events", "ship", "--to", collector.url, "--since", "1h", "--batch", "1",
               "--checkpoint", "~/ck.json", "--sink-cacert", "~/ca.pem",
               "--sink-creds", "~/creds", "--dead-letter", "~/dead.jsonl", env=env)
    assert r.exit_code == 0, r
    assert (home / "ck.json").is_file()
    assert [json.loads(line)["id"] for line in
            (home / "dead.jsonl").read_text().splitlines()] == ["1"]
    assert stored_ids(collector.state) == ["2"]
    r = invoke("events", "ship", "--to", collector.url, "--resume", "t", "--since", "1h",
               "--creds", "~/missing.creds", env=env | {"NODECLI_SINK_CACERT": "~/ca.pem"})
    assert r.exit_code == 5, r
    assert r.stderr == f"nodecli: error: --creds {home / 'missing.creds'}: no such file\n"


def test_every_node_with_a_window_of_one_sends_nothing_past_a_refused_batch(
        invoke, two_nodes, collector, emulator):
    from nodecli.emulator.events import log_for

    log_for(two_nodes[0].state).generate(4)
    collector.state.refuse = {1}
    r = invoke("events", "ship", "--all-nodes", "--since", "1h", "--to", collector.url,
               "--resume", "w1", "--batch", "1", "--window", "1",
               env={"NODECLI_SINK_CACERT": emulator.ca_file})
    assert r.exit_code == 6, r.stderr
    assert "n1: the collector refused batch n1:1:1 (1 event)" in r.stderr
    assert collector.state.posts == 1  # batch 2 waits for batch 1: it is never sent


@pytest.mark.slow
def test_a_signal_ends_a_following_ship_with_the_resume_hint(ship_env, log, collector,
                                                            tmp_path):
    import signal
    import subprocess

    from tests.conftest import nodecli_cmd, reap, subprocess_env
    from tests.test_events_tail import wait_for

    log.generate(3)
    err = tmp_path / "stderr"
    args = ["events", "ship", "-f", "--since", "1h", "--to", collector.url, "--resume", "f",
            "--interval", "0.05"]
    with open(err, "wb") as err_file:
        proc = subprocess.Popen(nodecli_cmd(*args), stdout=subprocess.DEVNULL,
                                stderr=err_file, env=subprocess_env(ship_env))
    try:
        wait_for(lambda: len(stored_ids(collector.state)) == 3)
        assert proc.poll() is None  # -f: caught up, it goes on polling
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130, err.read_text()
    finally:
        reap(proc)
    lines = err.read_text().splitlines()
    assert lines[-1] == "hint: the same command resumes where it stopped", lines
    assert lines[-2].startswith("nodecli: interrupted"), lines


# --- one node: what the tail says on the way, and Ctrl-C (in process) --------------------

def ctrl_c_at_second_wait(monkeypatch) -> list[float | None]:
    """The pause between polls of a following command: the first (the retry's) passes at
    once, the second (caught up) is Ctrl-C. Returns the pauses asked for, in order."""
    from nodecli import interrupt

    waits: list[float | None] = []

    def wait(seconds=None):
        waits.append(seconds)
        if len(waits) > 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(interrupt, "wait", wait)
    return waits


def test_a_following_ship_says_reconnecting_resumed_and_how_to_go_on(
        invoke, ship_env, log, collector, emulator, monkeypatch):
    import re

    waits = ctrl_c_at_second_wait(monkeypatch)
    log.generate(2)
    emulator.faults.path_prefix = "/events"
    emulator.faults.push("503")
    try:
        r = invoke("events", "ship", "-f", "--to", collector.url, "--resume", "c", "--since",
                   "1h", "--interval", "0.5", env=ship_env)
    finally:
        emulator.faults.clear()
        emulator.faults.path_prefix = "/"
    assert r.exit_code == 130, r
    assert 0.4 <= waits[-1] <= 0.6  # once caught up: --interval, jittered by 20 %
    said = r.stderr.splitlines()
    assert re.fullmatch(r"nodecli: warning: reconnecting \(attempt 1, next in \d+ s\): "
                        r"HTTP 503", said[0]), said
    assert said[1:] == ["resumed", "nodecli: interrupted after 2 events",
                        "hint: the same command resumes where it stopped"], said
    assert stored_ids(collector.state) == ["1", "2"]
    # the same command goes on from there, its hints and warnings said
    waits.clear()
    waits.append(0)  # (the next wait is Ctrl-C)
    log.generate(1)
    r = invoke("events", "ship", "-f", "--to", collector.url, "--resume", "c",
               env=ship_env)
    assert r.exit_code == 130, r
    assert stored_ids(collector.state) == ["1", "2", "3"]


def test_one_node_ships_hints_warnings_and_debug_lines(invoke, ship_env, log, collector,
                                                       emulator):
    emulator.faults.path_prefix = "/info"
    emulator.faults.push("500")
    try:  # -v: what the tail did
        r = invoke("-v", "events", "ship", "--to", collector.url, "--resume", "w", "--since",
                   "1h", env=ship_env)
    finally:
        emulator.faults.clear()
        emulator.faults.path_prefix = "/"
    assert r.exit_code == 0, r
    assert (f"debug: GET /info failed (GET {emulator.url}/info: HTTP 500: injected "
            "failure); node version unknown") in r.stderr.splitlines()
    r = ship(invoke, collector.url, ship_env)  # a node that logs, an empty log: a hint
    assert r.exit_code == 0, r
    assert r.stderr.startswith("hint: the node's event log is empty"), r
    log.generate(1)
    host = "other.example:9092"
    log.link_host = host  # the page's Link names another host: a warning
    try:
        r = ship(invoke, collector.url, ship_env)
    finally:
        log.link_host = None
    assert r.exit_code == 0, r
    assert r.stderr.startswith("nodecli: warning: ") and host in r.stderr.splitlines()[0], r


def test_a_following_ship_retries_a_batch_the_collector_did_not_take(
        invoke, ship_env, log, collector, monkeypatch, tmp_path, emulator):
    import re
    from urllib.parse import quote

    from nodecli import interrupt

    def wait(seconds=None):  # no wait; Ctrl-C at the first once the batch is held
        if collector.state.batches >= 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(interrupt, "wait", wait)
    log.generate(2)
    collector.state.fail_first, collector.state.fail_status = 1, 500  # (not retried by HTTP)
    ck = tmp_path / "ck.json"
    r = invoke("events", "ship", "-f", "--to", collector.url, "--checkpoint", str(ck),
               "--since", "1h", env=ship_env)
    assert r.exit_code == 130, r
    said = r.stderr.splitlines()
    key = f"{quote(emulator.url, safe='')}:1:2"  # the node's part: the URL given
    assert re.fullmatch(r"nodecli: warning: reconnecting \(attempt 1, next in \d+ s\): the "
                        rf"collector did not take batch {re.escape(key)}: POST "
                        r"\S+: HTTP 500: injected failure", said[0]), said
    assert said[1:] == ["resumed", "nodecli: interrupted after 2 events",
                        "hint: the same command resumes where it stopped"], said
    assert stored_ids(collector.state) == ["1", "2"]


def test_a_short_batch_is_noted_in_the_checkpoint_before_it_is_sent(invoke, ship_env, log,
                                                                     collector, tmp_path,
                                                                     emulator, home):
    log.generate(2, families=["file"])
    collector.state.refuse = {1}
    ck = tmp_path / "ck.json"
    r = invoke("events", "ship", "--to", collector.url, "--checkpoint", str(ck), "--since",
               "1h", "--type-glob", "file.*", "--batch", "5", env=ship_env)
    assert r.exit_code == 6, r
    saved = json.loads(ck.read_text())  # this node's, this filter's, the batch noted
    port = emulator.url.rsplit(":", 1)[1]
    assert saved["node"].startswith(f"https_localhost_{port}-"), saved
    assert saved["filter"] == {"type": None, "type_glob": "file.*"}
    assert saved["output"] == {"sending": {"node": emulator.url, "first": "1", "lasts": ["2"],
                                           "last": "2"}}
    collector.state.refuse = set()
    log.generate(1, families=["file"])  # the next run sends the noted batch again as it was
    r = invoke("events", "ship", "--to", collector.url, "--checkpoint", str(ck), "--since",
               "1h", "--type-glob", "file.*", "--batch", "5", env=ship_env)
    assert r.exit_code == 0, r
    from urllib.parse import quote

    node = quote(emulator.url, safe="")
    assert [key for key, _ in collector.state.stored] == [f"{node}:1:2", f"{node}:3:3"]
    # a named checkpoint notes it too
    collector.state = type(collector.state)(refuse={1})
    r = invoke("events", "ship", "--to", collector.url, "--resume", "noted", "--since",
               "1h", "--batch", "5", env=ship_env)
    assert r.exit_code == 6, r
    named, = (home / "state" / "checkpoints").glob("*/noted@*.json")
    assert json.loads(named.read_text())["output"] == {
        "sending": {"node": emulator.url, "first": "1", "lasts": ["3"], "last": "3"}}
    # a full batch is not noted (a restart reads the same page again: the same batch)
    collector.state = type(collector.state)(refuse={1})
    r = invoke("events", "ship", "--to", collector.url, "--resume", "full", "--since",
               "1h", "--batch", "3", env=ship_env)
    assert r.exit_code == 6, r
    full, = (home / "state" / "checkpoints").glob("*/full@*.json")
    assert json.loads(full.read_text())["output"] is None


def test_ctrl_c_ends_every_nodes_ship_and_says_the_same_command_resumes(
        invoke, two_nodes, collector, emulator, monkeypatch):
    from nodecli.emulator.events import log_for
    from nodecli.node.events import merged

    def pressed(self, seconds):  # Ctrl-C as every node waits for new events
        raise KeyboardInterrupt

    monkeypatch.setattr(merged.FleetStop, "sleep", pressed)
    for n, server in enumerate(two_nodes, 1):
        log_for(server.state).generate(n)
    r = invoke("events", "ship", "-f", "--all-nodes", "--since", "1h", "--to", collector.url,
               "--resume", "c", env={"NODECLI_SINK_CACERT": emulator.ca_file})
    assert r.exit_code == 130, r
    assert r.stderr.splitlines()[-2:] == [
        "nodecli: interrupted after 3 events from 2 node(s)",
        "hint: the same command resumes each node where it stopped"], r
    assert _ids_by_node(collector.state) == {"n1": [1], "n2": [1, 2]}


def test_a_ship_to_a_file_ends_with_its_count_and_no_batches(invoke, node_env, log, tmp_path):
    log.generate(2)
    out = tmp_path / "o.jsonl"
    r = invoke("events", "ship", "--to", f"file:{out}", "--since", "1h", env=node_env)
    assert r.exit_code == 0, r
    assert r.stderr == f"shipped 2 events to file:{out}\n"
    assert len(out.read_text().splitlines()) == 2


def test_every_nodes_full_batch_is_not_noted_a_short_one_is(invoke, two_nodes, collector,
                                                            emulator, home):
    from nodecli.emulator.events import log_for

    log_for(two_nodes[0].state).generate(3)
    env = {"NODECLI_SINK_CACERT": emulator.ca_file}
    for batch, name in (("3", "full"), ("4", "short")):
        collector.state = type(collector.state)(refuse={1})
        r = invoke("events", "ship", "--all-nodes", "--since", "1h", "--to", collector.url,
                   "--resume", name, "--batch", batch, env=env)
        assert r.exit_code == 6, r
        outputs = [json.loads(p.read_text())["output"]
                   for p in (home / "state" / "checkpoints").glob(f"*/{name}@*.json")]
        noted = [o for o in outputs if o is not None]
        assert noted == ([] if name == "full" else [
            {"sending": {"node": "n1", "first": "1", "lasts": ["3"], "last": "3"}}]), outputs


def test_every_nodes_sink_retries_a_batch_and_says_so_led_by_its_name(
        invoke, two_nodes, collector, emulator, monkeypatch):
    import re

    from nodecli.emulator.events import log_for
    from nodecli.node.events import merged

    def sleep(self, seconds):  # no wait; Ctrl-C at the first once the batch is held
        if collector.state.batches >= 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(merged.FleetStop, "sleep", sleep)
    log_for(two_nodes[0].state).generate(2)
    collector.state.fail_first, collector.state.fail_status = 1, 500  # (not retried by HTTP)
    r = invoke("events", "ship", "-f", "--all-nodes", "--since", "1h", "--to", collector.url,
               "--resume", "r", env={"NODECLI_SINK_CACERT": emulator.ca_file})
    assert r.exit_code == 130, r
    said = [line for line in r.stderr.splitlines() if "n1: " in line]
    assert re.fullmatch(r"nodecli: warning: n1: reconnecting \(attempt 1, next in \d+ s\): the "
                        r"collector did not take batch n1:1:2: POST \S+: HTTP 500: injected "
                        r"failure", said[0]), said
    assert said[1] == "nodecli: warning: n1: resumed", said
    assert _ids_by_node(collector.state) == {"n1": [1, 2]}
