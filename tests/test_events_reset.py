"""A reset log is noticed (issue 34, item 6): a checkpoint keeps the last event taken
(id, time, digest), and a resumed tail whose node now holds another event under that id
stops with exit 1 before writing anything, whatever the checkpoint holds (a position
inside the first page, a time, an iteration token; a stdout pipe's reader that stopped).

Over HTTPS against the emulator; the log is reset as a node's is: a new log whose ids
start again at 1, with later times."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import nodecli_cmd, subprocess_env


def ids_of(text: str) -> list[str]:
    return [json.loads(line)["id"] for line in text.splitlines() if line.strip()]


def _refused(r, ck: Path, saved: bytes) -> None:
    assert r.exit_code == 1, r
    assert r.stdout == ""  # nothing of the new log was written
    assert "the node's log was reset" in r.stderr
    assert f"delete {ck} and choose a start with --since or --iteration-token" in r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert ck.read_bytes() == saved  # nor saved


@pytest.mark.parametrize("version", ["3.7.2", "4.4.0"])  # without / with GET /events/{id}
def test_a_checkpoint_inside_the_first_page_notices_a_reset(invoke, node_env, log, tmp_path,
                                                            node_version, version):
    """The measured case: `--max-events 3` saves a time and the ids 1-3; a new log's
    events 1-3 are after that time. Before: exit 0 from the 4th, 1-3 skipped silently."""
    node_version(version)
    log.generate(10, families=["file"])
    ck = tmp_path / "ck.json"
    r = invoke("events", "tail", "--checkpoint", str(ck), "--since", "1h", "--max-events",
               "3", "-o", "jsonl", env=node_env)
    assert ids_of(r.stdout) == ["1", "2", "3"]
    saved = ck.read_bytes()
    assert json.loads(saved)["last_event"]["id"] == "3"
    log.clear()  # the node's log starts over ...
    log.generate(10, families=["file"])  # ... and has more events than were taken
    _refused(invoke("events", "tail", "--checkpoint", str(ck), "-o", "jsonl", env=node_env),
             ck, saved)


@pytest.mark.parametrize("version", ["3.7.2", "4.4.0"])
@pytest.mark.parametrize("taken", [1, 3, 9, 10])
def test_an_untouched_log_resumes_exactly_after_the_event_taken(invoke, node_env, log,
                                                                tmp_path, node_version,
                                                                version, taken):
    """The check never refuses the log the checkpoint was taken from: inside the page
    (1, 3, 9 of 10), at its last event (10: a whole page, checked by id from 3.7.3)."""
    node_version(version)
    log.generate(10, families=["file"])
    ck = tmp_path / "ck.json"
    r = invoke("events", "tail", "--checkpoint", str(ck), "--since", "1h", "--max-events",
               str(taken), "-o", "jsonl", env=node_env)
    assert ids_of(r.stdout) == [str(i) for i in range(1, taken + 1)]
    log.generate(2, families=["file"])
    r = invoke("events", "tail", "--checkpoint", str(ck), "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r
    assert ids_of(r.stdout) == [str(i) for i in range(taken + 1, 13)]
    assert json.loads(ck.read_bytes())["last_event"]["id"] == "12"


def test_a_whole_page_checkpoint_notices_a_reset_log_that_grew_past_it(invoke, node_env,
                                                                       log, tmp_path):
    """An iteration token after a whole page: a new log longer than the old one accepts
    the token, so only the event by id (GET /events/{id}, 3.7.3+) shows the reset."""
    log.generate(5)
    ck = tmp_path / "ck.json"
    r = invoke("events", "tail", "--checkpoint", str(ck), "--since", "1h", "-o", "jsonl",
               env=node_env)
    assert ids_of(r.stdout) == ["1", "2", "3", "4", "5"]
    saved = ck.read_bytes()
    assert json.loads(saved)["iteration_token"] == "5"
    log.clear()
    log.generate(20)
    _refused(invoke("events", "tail", "--checkpoint", str(ck), "-o", "jsonl", env=node_env),
             ck, saved)


def test_a_reset_log_shorter_than_the_ids_taken_is_noticed_on_an_old_node(
        invoke, node_env, log, tmp_path, node_version):
    """3.7.2 (no GET by id), a checkpoint after ids 1-3 by time, a new log of only 2
    events (both among the ids taken) and, with -f, a 3rd later: never skipped."""
    node_version("3.7.2")
    log.generate(10, families=["file"])
    ck = tmp_path / "ck.json"
    invoke("events", "tail", "--checkpoint", str(ck), "--since", "1h", "--max-events", "3",
           env=node_env)
    saved = ck.read_bytes()
    log.clear()
    log.generate(2, families=["file"])
    _refused(invoke("events", "tail", "--checkpoint", str(ck), "-o", "jsonl", env=node_env),
             ck, saved)
    log.clear()  # an empty new log: the events taken are not there either
    _refused(invoke("events", "tail", "--checkpoint", str(ck), "-o", "jsonl", env=node_env),
             ck, saved)


def test_a_checkpoint_saved_behind_a_pipe_reader_that_stopped_notices_a_reset(
        node_env, log, tmp_path, invoke):
    """`events tail --resume NAME | head -3`: the checkpoint stops at what left the pipe
    (inside the page); a reset log is refused at the next --resume."""
    log.generate(400, families=["file"])
    env = subprocess_env(node_env)
    cmd = " ".join(nodecli_cmd("events", "tail", "--resume", "audit", "--since", "1h",
                               "--page-size", "1000", "-o", "jsonl"))
    proc = subprocess.Popen(["sh", "-c", f"{cmd} | head -3"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert ids_of(out.decode()) == ["1", "2", "3"]
    ck = next((Path(node_env["NODECLI_HOME"]) / "state" / "checkpoints").glob("*/audit@*"))
    saved = ck.read_bytes()
    data = json.loads(saved)
    assert data["skip_ids"] and data["last_event"]["id"] == data["skip_ids"][-1]
    taken = int(data["last_event"]["id"])
    assert 3 <= taken < 400  # head took a buffer, not the whole page
    log.clear()
    log.generate(400, families=["file"])
    _refused(invoke("events", "tail", "--resume", "audit", "-o", "jsonl", env=node_env),
             ck, saved)


def test_a_checkpoint_of_an_older_nodecli_resumes_as_before(invoke, node_env, log, tmp_path):
    log.generate(10, families=["file"])
    ck = tmp_path / "ck.json"
    invoke("events", "tail", "--checkpoint", str(ck), "--since", "1h", "--max-events", "3",
           env=node_env)
    data = json.loads(ck.read_bytes())
    del data["last_event"]  # as saved before the mark existed
    ck.write_text(json.dumps(data))
    r = invoke("events", "tail", "--checkpoint", str(ck), "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r
    assert ids_of(r.stdout) == [str(i) for i in range(4, 11)]
    assert json.loads(ck.read_bytes())["last_event"]["id"] == "10"  # and it gains one


@pytest.mark.parametrize("mark", ["x", {"id": 3, "digest": "d"}, {"id": "3"},
                                  {"id": "3", "digest": "d", "time": 5}])
def test_a_damaged_mark_is_a_damaged_checkpoint(invoke, node_env, log, tmp_path, mark):
    log.generate(3)
    ck = tmp_path / "ck.json"
    invoke("events", "tail", "--checkpoint", str(ck), "--since", "1h", env=node_env)
    data = json.loads(ck.read_bytes())
    data["last_event"] = mark
    ck.write_text(json.dumps(data))
    before = ck.read_bytes()
    r = invoke("events", "tail", "--checkpoint", str(ck), env=node_env)
    assert r.exit_code == 3, r
    assert "damaged (last_event)" in r.stderr
    assert ck.read_bytes() == before


def test_a_filtered_checkpoint_names_the_event_found_where_its_events_were(
        invoke, node_env, log, tmp_path, node_version):
    """`--type file.created`: ids 2 and 4 taken; the new log's first match is id 1, which
    comes where the ids taken should be: refused at once, naming it."""
    node_version("3.7.2")
    kinds = ["permission.created", "file.created"]
    for i in range(6):
        log.append({"types": [kinds[i % 2]], "data": {}})
    ck = tmp_path / "ck.json"
    r = invoke("events", "tail", "--checkpoint", str(ck), "--type", "file.created", "--since",
               "1h", "--max-events", "2", "-o", "jsonl", env=node_env)
    assert ids_of(r.stdout) == ["2", "4"]
    saved = ck.read_bytes()
    log.clear()
    for i in range(6):
        log.append({"types": [kinds[(i + 1) % 2]], "data": {}})
    r = invoke("events", "tail", "--checkpoint", str(ck), "--type", "file.created", "-o",
               "jsonl", env=node_env)
    _refused(r, ck, saved)
    assert "event 1 comes where the checkpoint's events were" in r.stderr
