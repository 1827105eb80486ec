"""``events list`` (nodecli/cli/events.py's ``_show_page``) at the edges the mutation
run found unwatched: a page in each format, a field of the node's cut in the table
and whole in jsonl, csv and ``--field``. In process, over HTTPS to the emulator (a
canned page)."""

from __future__ import annotations

import json
import re

import pytest

from nodecli.emulator.server import Reply
from tests.test_mutants_events_merged import n1 as n1  # the fixtures
from tests.test_mutants_events_ship import two_nodes as two_nodes

EVENT = (b'{"id":"' + b"i" * 100 + b'","time":"' + b"t" * 60
         + b'","user_id":"u","types":["file.created"],"data":{}}')
NO_LINK = 'nodecli: warning: the node sent no Link rel="next" header\n'


@pytest.mark.parametrize(("args", "stdout"), [
    (["-o", "table"],
     "id" + " " * 80 + "time" + " " * 38 + "type          user  summary\n"
     + "i" * 79 + "…  " + "t" * 39 + "…  file.created  u     ? (?)\n"),
    (["-o", "jsonl"], EVENT.decode() + "\n"),
    (["-o", "csv"], "id,time,user_id,types,data\n" + "i" * 100 + "," + "t" * 60
     + ",u,file.created,{}\n"),
    (["--field", "id"], "i" * 100 + "\n"),  # the items of the page's "events"
])
def test_a_page_in_each_format_cut_only_in_the_table(invoke, node_env, log, args, stdout):
    log.push_reply(Reply(200, b"[" + EVENT + b"]", {}))
    r = invoke("events", "list", *args, env=node_env)
    assert (r.exit_code, r.stdout, r.stderr) == (0, stdout, NO_LINK)


# --- events tail: --output's words, Ctrl-C's resume command, the merged tail's ends ------

FORMATS = "pretty, plain, json, jsonl"


def _recent() -> str:
    """A time 30 minutes ago, as a node writes it."""
    from datetime import UTC, datetime, timedelta

    return (datetime.now(UTC) - timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def error_line(stderr: str) -> str:
    return stderr.splitlines()[0].removeprefix("nodecli: error: ")


@pytest.mark.parametrize(("args", "message"), [
    (["-o", "json", "--output", "jsonl"], "give the format once: -o/--format or --output"),
    (["--output", "YAML"], f"'YAML' is not a format of events tail (choose from {FORMATS})"),
    (["--output", ""], f"'' is not a format of events tail (choose from {FORMATS})"),
    (["--output", "x.jsonl", "--to", "y.jsonl"],
     f"'x.jsonl' is not a format ({FORMATS}) and --to already names the output file"),
    (["--since", "yesterday-ish"], None),
])
def test_what_tail_refuses_before_asking_the_node_word_for_word(invoke, node_env, served,
                                                                 tmp_path, monkeypatch,
                                                                 args, message):
    monkeypatch.chdir(tmp_path)
    r = invoke("events", "tail", *args, env=node_env)
    assert r.exit_code == 2, r
    if message is None:  # (the parser's own words follow the option's name)
        assert error_line(r.stderr).startswith("--since: ")
    else:
        assert error_line(r.stderr) == message
    assert (r.stdout, served, list(tmp_path.iterdir())) == ("", [], [])


def test_output_as_a_format_and_as_the_old_spelling_of_to(invoke, node_env, log, tmp_path):
    log.generate(1)
    r = invoke("events", "tail", "--since", "1h", "--output", "jsonl", env=node_env)
    assert (r.exit_code, r.stderr) == (0, "")
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["1"]
    out = tmp_path / "a b.jsonl"  # quoted in the command the warning gives
    r = invoke("events", "tail", "--since", "1h", "--output", str(out), env=node_env)
    assert r.exit_code == 0, r
    assert r.stderr == (f"nodecli: warning: --output FILE is deprecated: use --to "
                        f"'{out}' (-o/--output is the format: {FORMATS})\n"
                        f"wrote 1 event to {out}\n")
    assert r.stdout == "" and len(out.read_text().splitlines()) == 1


@pytest.fixture
def ctrl_c_when_caught_up(monkeypatch):
    """Ctrl-C while a following tail waits for new events (the wait is where a person
    presses it): the wait raises KeyboardInterrupt, as the signal handler does."""
    from nodecli import interrupt

    def pressed(seconds=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(interrupt, "wait", pressed)


def _resume_line(stderr: str) -> str | None:
    said = [line for line in stderr.splitlines() if "resume with:" in line]
    assert len(said) <= 1, stderr
    return said[0].split("resume with: ", 1)[1] if said else None


def test_ctrl_c_says_the_command_that_resumes_with_the_options_given(
        invoke, emulator, log, home, tmp_path, ctrl_c_when_caught_up):
    log.generate(2, families=["file"])
    ck, out = tmp_path / "c k.json", tmp_path / "out.jsonl"
    flags = ["--url", emulator.url, "--user", "admin", "--insecure"]
    env = {"NODECLI_PASSWORD": "admin-pass"}
    r = invoke("events", "tail", "-f", *flags, "--type-glob", "file.*", "--checkpoint",
               str(ck), "-o", "jsonl", env=env)
    assert r.exit_code == 130, r
    assert "interrupted after 2 events" in r.stderr
    assert _resume_line(r.stderr) == (f"nodecli events tail -f --url {emulator.url} --user "
                                      f"admin --insecure --type-glob 'file.*' "
                                      f"--checkpoint '{ck}'")
    # a named checkpoint, --to after it, --type; values from the environment are left
    # out (they are still there when the command is pasted)
    env = {"NODECLI_URL": emulator.url, "NODECLI_USER": "admin",
           "NODECLI_PASSWORD": "admin-pass"}
    r = invoke("events", "tail", "-f", "--type", "file.created", "--resume", "r1",
               "--to", str(out), env=env)
    assert r.exit_code == 130, r
    assert _resume_line(r.stderr) == (f"nodecli events tail -f --type file.created "
                                      f"--resume r1 --to {out}")
    r = invoke("events", "tail", "--since", "1h", "-f", "--to", str(out), "-o", "jsonl",
               env=env)
    assert _resume_line(r.stderr) == f"nodecli events tail -f --to {out}"
    # no file: the iteration token where it stopped; before any event: no command
    r = invoke("events", "tail", "--since", "1h", "-f", "-o", "jsonl", env=env)
    assert (r.exit_code, _resume_line(r.stderr)) == (
        130, "nodecli events tail -f --iteration-token 2")


# --- events list and tail over every node --------------------------------------------------

def test_every_nodes_page_in_a_table_cut_and_in_csv_whole(invoke, two_nodes, served):
    from nodecli.emulator.events import log_for

    for server in two_nodes:
        log_for(server.state).push_reply(Reply(200, b"[" + EVENT + b"]", {}))
    r = invoke("events", "list", "--all-nodes", "-o", "table")
    assert r.exit_code == 0, r
    row = "i" * 79 + "…  " + "t" * 39 + "…  file.created  ? (?)"
    assert r.stdout.splitlines()[1:] == [f"n1    {row}", f"n2    {row}"]
    assert r.stdout.splitlines()[0].split() == ["node", "id", "time", "type", "summary"]
    for server in two_nodes:
        log_for(server.state).push_reply(Reply(200, b"[" + EVENT + b"]", {}))
    r = invoke("events", "list", "--all-nodes", "-o", "csv")
    assert r.exit_code == 0, r
    assert r.stdout.splitlines() == ["node,id,time,type,summary",
                                     f"n1,{'i' * 100},{'t' * 60},file.created,? (?)",
                                     f"n2,{'i' * 100},{'t' * 60},file.created,? (?)"]


def test_every_nodes_long_fields_cut_in_the_table_whole_in_csv_and_none_said(
        invoke, two_nodes):
    from nodecli.emulator.events import log_for

    long = {"id": "9", "time": "2026-01-02T03:04:05Z", "user_id": "u",
            "types": ["file." + "x" * 70], "data": {"path": "/" + "p" * 250, "size": 5}}
    for fmt in ("table", "csv"):
        for server in two_nodes:
            log_for(server.state).push_reply(Reply(200, json.dumps([long]).encode(), {}))
        r = invoke("events", "list", "--all-nodes", "-o", fmt)
        assert r.exit_code == 0, r
        if fmt == "table":
            assert re.split(r"  +", r.stdout.splitlines()[1]) == [
                "n1", "9", "2026-01-02T03:04:05Z", ("file." + "x" * 70)[:59] + "…",
                "/" + "p" * 198 + "… (5 B)"]
        else:
            assert r.stdout.splitlines()[1] == (f"n1,9,2026-01-02T03:04:05Z,file.{'x' * 70},"
                                                f"/{'p' * 250} (5 B)")
    for server in two_nodes:
        log_for(server.state).push_reply(Reply(200, b"[]", {}))
    r = invoke("events", "list", "--all-nodes")
    assert (r.exit_code, r.stdout, r.stderr.splitlines()[0]) == (0, "", "no events"), r


@pytest.mark.parametrize(("args", "message"), [
    (["--iteration-token", "5"], "an iteration token belongs to one node: not with --nodes"),
    (["--checkpoint", "ck.json"], "--checkpoint FILE holds one node's position: with --nodes "
                                  "use --resume NAME or --to FILE (a checkpoint per node)"),
    (["-o", "json"], "a merged tail writes jsonl, plain or pretty"),
])
def test_what_a_merged_tail_refuses_before_asking_a_node(invoke, two_nodes, served, tmp_path,
                                                         monkeypatch, args, message):
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    served.clear()
    r = invoke("events", "tail", "--all-nodes", *args)
    assert (r.exit_code, error_line(r.stderr), r.stdout) == (2, message, "")
    assert served == [] and list(here.iterdir()) == []


def test_a_merged_tail_keeps_each_nodes_info_in_the_home_and_logs_its_failure(
        invoke, n1, log, served):
    log.generate(1)
    emulator = n1
    emulator.faults.path_prefix = "/info"
    emulator.faults.push(*["500"] * 20)
    try:
        r = invoke("-v", "events", "tail", "--all-nodes", "--since", "1h", "-o", "jsonl")
    finally:
        emulator.faults.clear()
    assert r.exit_code == 0, r
    said = [line for line in r.stderr.splitlines() if "GET /info failed (" in line]
    assert len(said) == 1 and said[0].endswith("); node version unknown"), r.stderr
    served.clear()
    for _ in range(2):
        r = invoke("events", "tail", "--all-nodes", "--since", "1h", "-o", "jsonl")
        assert r.exit_code == 0, r
    assert sum(" /info " in line for line in served) == 1, served  # then from the home


def test_a_merged_tails_warning_is_cut_at_400_characters(invoke, n1, log):
    from nodecli.node.events.pages import foreign_host_notice

    host = "f" * 300 + ".example:9092"  # the notice, led by the node's name, is longer
    log.generate(1)
    log.link_host = host
    try:
        r = invoke("events", "tail", "--all-nodes", "--since", "1h", "-o", "jsonl")
    finally:
        log.link_host = None
    assert r.exit_code == 0, r.stderr
    whole = "n1: " + foreign_host_notice(host, n1.url.rstrip("/"))
    assert len(whole) > 400
    assert [line.removeprefix("nodecli: warning: ") for line in r.stderr.splitlines()
            if line.startswith("nodecli: warning: ")] == [whole[:400]]


def test_a_merged_tail_on_a_terminal_shows_a_files_progress_only(n1, log, tmp_path):
    from tests.conftest import nodecli_cmd, pty_to_the_end, subprocess_env

    log.generate(1)
    out = tmp_path / "all.jsonl"
    env = subprocess_env({"TERM": "xterm"})
    del env["COLUMNS"]
    status, said = pty_to_the_end(nodecli_cmd("events", "tail", "--all-nodes", "--since", "1h",
                                              "--to", str(out)), env)
    assert status == 0, said
    assert re.search(rf"1 event written; last event \S+; to {re.escape(str(out))} ", said), said
    status, said = pty_to_the_end(nodecli_cmd("events", "tail", "--all-nodes", "--since", "1h",
                                              "-o", "jsonl"), env)
    assert status == 0 and "written" not in said, said


@pytest.fixture
def fleet_ctrl_c_when_caught_up(monkeypatch):
    """Ctrl-C while every node of a merged tail waits for new events: each node's wait
    ends as the signal ends it (not before every node has caught up: no race)."""
    from nodecli.node.events import merged

    def pressed(self, seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(merged.FleetStop, "sleep", pressed)


@pytest.mark.parametrize("resumable", [True, False])
def test_ctrl_c_ends_a_merged_tail_resumable_only_with_a_checkpoint(
        invoke, two_nodes, fleet_ctrl_c_when_caught_up, resumable):
    from nodecli.emulator.events import log_for

    for n, server in enumerate(two_nodes, 1):
        log_for(server.state).generate(n)
    r = invoke("events", "tail", "-f", "--all-nodes", "--since", "1h", "-o", "jsonl",
               *(["--resume", "r"] if resumable else []))
    assert r.exit_code == 130, r
    assert len(r.stdout.splitlines()) == 3
    said = r.stderr.splitlines()
    assert "nodecli: interrupted after 3 events from 2 node(s)" in said
    assert ("hint: the same command resumes each node where it stopped" in said) is resumable


def test_reconnecting_is_a_warning_off_a_terminal_and_resumed_a_line_of_its_own(
        invoke, node_env, emulator, log, monkeypatch):
    from tests.test_mutants_events_ship import ctrl_c_at_second_wait

    ctrl_c_at_second_wait(monkeypatch)
    log.generate(1)
    emulator.faults.path_prefix = "/events"
    emulator.faults.push("503")
    try:
        r = invoke("events", "tail", "-f", "--since", "1h", "-o", "jsonl", env=node_env)
    finally:
        emulator.faults.path_prefix = "/"
    assert r.exit_code == 130, r
    said = r.stderr.splitlines()
    assert re.fullmatch(r"nodecli: warning: reconnecting \(attempt 1, next in \d+ s\): "
                        r"HTTP 503", said[0]), said
    assert said[1:3] == ["resumed", "nodecli: interrupted after 1 event"], said
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["1"]


# --- a terminal: pretty lines in colour, cut to its width ----------------------------------

def test_pretty_lines_on_a_terminal_are_coloured_by_family_and_cut(node_env, log):
    from tests.conftest import nodecli_cmd, pty_to_the_end, subprocess_env

    when = _recent()
    log.append({"time": when, "user_id": "carol", "types": ["upload.started",
                                                             "transfer.started"],
                "data": {"direction": "receive", "status": "running", "end_time_usec": None,
                         "bytes_transferred": 1_500_000, "current_rate_kbps": 900,
                         "target_rate_kbps": 1000, "remote_host": "10.1.2.3"}})
    log.append({"time": when, "user_id": "dan", "types": ["node.custom"], "data": {}})
    env = subprocess_env(dict(node_env, TERM="xterm"))
    del env["NO_COLOR"], env["COLUMNS"]  # (the tests' own: colour on, the pty's width)
    status, said = pty_to_the_end(nodecli_cmd("events", "tail", "--since", "1h"), env,
                                  dimensions=(24, 100))
    assert status == 0, said
    t = f"\x1b[2m{when[:19]}Z\x1b[0m"
    assert said.split("\r\n") == [
        # a family's colour, the running marker bold, the summary cut at the 100th column
        f"{t}  \x1b[36mupload.started          \x1b[0m  carol       receive "
        "\x1b[1;36m[RUNNING]\x1b[0m 10.1.2.3 1.5 MB now 9…",
        f"{t}  \x1b[0mnode.custom             \x1b[0m  dan         ", ""], said


def test_plain_on_a_terminal_is_plain_and_pretty_without_colour_is_cut(node_env, log):
    from nodecli.render.events import plain_line, pretty_line
    from tests.conftest import nodecli_cmd, pty_to_the_end, subprocess_env

    event = {"time": _recent(), "user_id": "carol", "types": ["transfer.started"],
             "data": {"direction": "send", "status": "running", "remote_host": "h" * 70}}
    log.append(event)
    env = subprocess_env(dict(node_env, TERM="xterm"))
    del env["NO_COLOR"], env["COLUMNS"]  # colour on: -o plain still has none
    status, said = pty_to_the_end(nodecli_cmd("events", "tail", "--since", "1h", "-o",
                                              "plain"), env, dimensions=(24, 100))
    shown = {**event, "id": "1"}
    assert (status, said) == (0, plain_line(shown) + "\r\n"), said
    env["NO_COLOR"] = "1"  # pretty with no colour: the same cut as with it
    status, said = pty_to_the_end(nodecli_cmd("events", "tail", "--since", "1h"), env,
                                  dimensions=(24, 100))
    assert (status, said) == (0, pretty_line(shown, 100) + "\r\n"), said
    assert len(pretty_line(shown, 100)) == 100


def _tail_to_a_file_on_a_pty(node_env, out) -> str:
    """``events tail --since 1h --to out`` on a real terminal of its own width, to its
    end (exit 0): all it showed."""
    from tests.conftest import nodecli_cmd, pty_to_the_end, subprocess_env

    env = subprocess_env(dict(node_env, TERM="xterm"))
    del env["COLUMNS"]
    status, said = pty_to_the_end(nodecli_cmd("events", "tail", "--since", "1h", "--to",
                                              str(out)), env)
    assert status == 0, said
    return said


def test_a_file_on_a_terminal_shows_how_far_it_has_got(node_env, log, emulator, tmp_path):
    stamp = "2026-01-02T03:04:05.000000Z" + "\x1b[31m" + "x" * 30  # cut at 40, made safe
    log.generate(1)  # (the next page, after the canned one: nothing new)
    log.push_reply(Reply(200, json.dumps([{"id": "7", "time": stamp, "types": ["file.created"],
                                           "data": {}}]).encode(),
                         {"Link": f'<{emulator.url}/events?iteration_token=1>; rel="next"'}))
    out = tmp_path / "ev\x1b[2Jents.jsonl"
    said = _tail_to_a_file_on_a_pty(node_env, out)
    shown = str(out).replace("\x1b[2J", "")
    assert (f"\u280b 1 event written; last event 2026-01-02T03:04:05.000000Z{'x' * 13}; "
            f"to {shown} \u00b7 ") in said
    assert said.endswith(f"\r\x1b[Kwrote 1 event to {shown}\r\n"), said


def test_a_file_on_a_terminal_with_events_of_no_time_says_none(node_env, log, emulator,
                                                                tmp_path):
    log.generate(1)  # (the next page, after the canned one: nothing new)
    log.push_reply(Reply(200, b'[{"id": "7", "types": ["file.created"], "data": {}}]',
                         {"Link": f'<{emulator.url}/events?iteration_token=1>; rel="next"'}))
    out = tmp_path / "events.jsonl"
    said = _tail_to_a_file_on_a_pty(node_env, out)
    assert f"\u280b 1 event written; to {out} \u00b7 " in said, said


# --- events list: what goes to stderr with a page --------------------------------------------

def test_a_pages_token_warnings_and_hint_on_stderr(invoke, node_env, log, emulator):
    token = "t k" + "x" * 250  # longer than the line's cut, and a word the shell splits
    link = f'<{emulator.url}/events?iteration_token={token.replace(" ", "%20")}>; rel="next"'
    log.push_reply(Reply(200, b"[" + EVENT + b"]", {"Link": link}))
    r = invoke("events", "list", "-o", "jsonl", env=node_env)
    assert (r.exit_code, r.stdout) == (0, EVENT.decode() + "\n"), r
    assert r.stderr == (f"next iteration token: {token[:199]}… (continue with "
                        f"--iteration-token '{token}')\n")
    log.push_reply(Reply(200, b"[" + EVENT + b"]", {"Link": link}))
    r = invoke("events", "list", "-o", "json", env=node_env)  # (the token is in the object)
    assert (r.exit_code, r.stderr) == (0, ""), r
    far = f'<https://{"f" * 400}.example/events?iteration_token=2>; rel="next"'
    log.push_reply(Reply(200, b"[" + EVENT + b"]", {"Link": far}))
    r = invoke("events", "list", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r
    from nodecli.node.events.pages import foreign_host_notice

    host = "f" * 400 + ".example"
    assert r.stderr == ("nodecli: warning: " + foreign_host_notice(host, emulator.url)[:399] + "…"
                        + "\nnext iteration token: 2 (continue with --iteration-token 2)\n")


# --- events list: the page as a json document, its table's cuts, an empty page -------------

def test_a_page_as_one_json_document_names_the_next_page(invoke, node_env, log, emulator):
    link = f"{emulator.url}/events?iteration_token=2"
    log.push_reply(Reply(200, b"[" + EVENT + b"]", {"Link": f'<{link}>; rel="next"'}))
    r = invoke("events", "list", "-o", "json", env=node_env)
    assert (r.exit_code, r.stderr) == (0, ""), r
    assert json.loads(r.stdout) == {"events": [json.loads(EVENT)],
                                    "next_iteration_token": "2", "next_url": link}


LONG = {"id": "9", "time": "2026-01-02T03:04:05Z", "user_id": "u" * 70,
        "types": ["file." + "x" * 70], "data": {"path": "/" + "p" * 250, "size": 5}}


def test_the_tables_type_user_and_summary_are_cut_and_an_empty_page_said(
        invoke, node_env, log, emulator):
    log.push_reply(Reply(200, json.dumps([LONG]).encode(), {}))
    r = invoke("events", "list", env=node_env)
    assert (r.exit_code, r.stderr) == (0, NO_LINK), r
    assert re.split(r"  +", r.stdout.splitlines()[1]) == [
        "9", "2026-01-02T03:04:05Z", ("file." + "x" * 70)[:59] + "…", "u" * 59 + "…",
        "/" + "p" * 198 + "… (5 B)"]
    from nodecli.node.events.pages import LOGGING_HINT

    log.push_reply(Reply(200, b"[]", {}))  # (and the whole log is empty: the hint)
    r = invoke("events", "list", env=node_env)
    assert (r.exit_code, r.stdout) == (0, ""), r
    assert r.stderr == f"no events\n{NO_LINK}hint: {LOGGING_HINT}\n"


def test_a_foreign_hosts_warning_names_this_node_and_a_long_link_problem_is_cut(
        invoke, node_env, log, emulator):
    from nodecli.node.events.pages import foreign_host_notice

    far = '<https://far.example/events?iteration_token=2>; rel="next"'
    log.push_reply(Reply(200, b"[" + EVENT + b"]", {"Link": far}))
    r = invoke("events", "list", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r
    notice = foreign_host_notice("far.example", emulator.url)
    assert emulator.url in notice
    assert r.stderr.splitlines()[0] == "nodecli: warning: " + notice
    # (a port that is no number is quoted whole by the URL parser: the line is cut)
    bad = "<https://h:" + "9x" * 200 + '/events?iteration_token=2>; rel="next"'
    log.push_reply(Reply(200, b"[" + EVENT + b"]", {"Link": bad}))
    r = invoke("events", "list", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r
    problem = r.stderr.splitlines()[0].removeprefix("nodecli: warning: ")
    assert problem.startswith('the Link rel="next" header is not a usable URL (')
    assert (len(problem), problem[-1]) == (300, "…"), problem


# --- a table on a narrow terminal: what stays whole, what is left out -----------------------

NARROW = {"id": "i" * 30, "time": "2026-01-02T03:04:05Z", "user_id": "carol",
          "types": ["file.created"], "data": {"path": "/" + "p" * 80, "size": 5}}


def test_a_page_on_a_narrow_terminal_keeps_id_and_time_whole_and_leaves_out_the_user(
        node_env, log):
    from tests.conftest import nodecli_cmd, pty_to_the_end, subprocess_env

    log.push_reply(Reply(200, json.dumps([NARROW]).encode(), {}))
    env = subprocess_env(dict(node_env, TERM="xterm"))
    del env["COLUMNS"]
    status, said = pty_to_the_end(nodecli_cmd("events", "list"), env, dimensions=(24, 70))
    assert status == 0, said
    assert said.split("\r\n")[:3] == [
        "left out to fit the terminal: user (-o wide shows them)",
        "id" + " " * 30 + "time                  type     summary",
        "i" * 30 + "  2026-01-02T03:04:05Z  file.c…  /ppppp…"], said
    log.push_reply(Reply(200, json.dumps([NARROW]).encode(), {}))
    status, said = pty_to_the_end(nodecli_cmd("events", "list", "-o", "wide"), env,
                                  dimensions=(24, 70))
    assert status == 0 and "left out" not in said and " carol " in said, said


def test_every_nodes_page_on_a_narrow_terminal_keeps_node_id_and_time_whole(
        invoke, emulator, home):
    from nodecli.emulator.app import build_server
    from nodecli.emulator.events import log_for
    from tests.conftest import nodecli_cmd, pty_to_the_end, subprocess_env

    other = build_server(emulator.paths, persist=False).start()
    try:
        for name, server in (("node-number-one", emulator.server), ("node-number-two", other)):
            r = invoke("node", "add", name, "--url", server.url, "--user", "admin",
                       "--password-stdin", input="admin-pass\n")
            assert r.exit_code == 0, r.stderr
            log_for(server.state).push_reply(Reply(200, json.dumps([NARROW]).encode(), {}))
        env = subprocess_env({"TERM": "xterm"})
        del env["COLUMNS"]
        status, said = pty_to_the_end(nodecli_cmd("events", "list", "--all-nodes"), env,
                                      dimensions=(24, 70))
    finally:
        other.stop()
    assert status == 0, said
    assert said.split("\r\n") == [
        "node             id" + " " * 30 + "time                  type    summary",
        *(f"node-number-{n}  {'i' * 30}  2026-01-02T03:04:05Z  file.…  /ppppp…"
          for n in ("one", "two")), ""], said
