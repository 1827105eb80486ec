"""Checkpoints of ``events tail`` (nodecli/node/events/checkpoint.py), at the edges the
mutation run found unwatched: the reset messages word for word (the taken event's id
cut after 60 characters, its time after 40, a checkpoint without a path), the marked
event asked for by id once per resume and by its quoted id, a node's answer that is not
an object, the names of checkpoint folders and files at their length limits, a second
tail refused with its hint, and --dry-run leaving the checkpoint unwritten.

In process: the pure parts directly; the requests over HTTPS to the emulator, or to a
scripted server where the answer must be one no node gives."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodecli.errors import ConflictError
from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.node.events import checkpoint as ckm
from nodecli.node.events import tail
from nodecli.node.events.pages import EventFilter
from nodecli.node.events.sinks import StreamSink
from nodecli.node.info import NodeInfo
from tests.scripted_server import ScriptedServer, Seen, certificates, reply

ID60, ID61 = "i" * 60, "i" * 61
T40, T41 = "t" * 40, "t" * 41


def _check(eid: str, when: str | None, path: Path | None,
           on_page: bool = True) -> ckm.ResumeCheck:
    mark = {"id": eid, "time": when, "digest": "0" * 32}
    cp = ckm.Checkpoint("", "2021-01-01T00:00:00Z", skip=[eid] if on_page else [],
                        last_event=mark)
    return ckm.ResumeCheck(cp, path)


@pytest.mark.parametrize("eid, said_id", [(ID60, ID60), (ID61, "i" * 59 + "…")])
@pytest.mark.parametrize("when, said_when", [(None, ""), (T40, " of " + T40),
                                             (T41, " of " + "t" * 39 + "…")])
def test_a_reset_without_a_checkpoint_path_names_the_event_taken(eid, said_id, when,
                                                                 said_when):
    check = _check(eid, when, None)
    with pytest.raises(ckm.LogReset) as exc:
        check.page_end(True)
    assert exc.value.message == ("the node's log was reset: it ends before the events the "
                                 f"checkpoint took (the checkpoint took event {said_id}"
                                 f"{said_when} last)")
    assert exc.value.hint == ("the events after that point are not the ones the checkpoint "
                              "counts on; nothing was skipped or written")


def test_a_reset_with_a_checkpoint_path_says_which_file_to_delete(tmp_path):
    ck = tmp_path / "ck.json"
    check = _check("7", "2021-01-01T00:00:00Z", ck)
    check.page_end(False)  # not caught up: the page may still hold the event
    with pytest.raises(ckm.LogReset) as exc:
        check.left_skip(ID61)
    assert exc.value.message == (
        f"the node's log was reset: event {'i' * 59}… comes where the checkpoint's events "
        f"were (checkpoint {ck} took event 7 of 2021-01-01T00:00:00Z last)")
    assert exc.value.hint == (
        "the events after that point are not the ones the checkpoint counts on; nothing was "
        f"skipped or written; to start over, delete {ck} and choose a start with --since or "
        "--iteration-token")
    with pytest.raises(ckm.LogReset) as exc:
        _check("7", None, ck).left_skip(ID60)
    assert exc.value.message.startswith(f"the node's log was reset: event {ID60} comes ")


@pytest.mark.parametrize("supports", [False, None])
def test_a_node_without_get_by_id_is_not_asked_and_nothing_stays_pending(supports):
    check = _check("7", None, None, on_page=False)
    assert check.by_id and check.pending
    check.fetch(None, supports)  # type: ignore[arg-type]  # (no request is made)
    assert not check.pending


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates(tmp_path_factory.mktemp("certs"))


def _asked(certs: Any, answer: bytes) -> Iterator[tuple[ScriptedServer, Any]]:
    def script(seen: Seen):
        yield reply(200, answer, [("Content-Type", "application/json")])

    with ScriptedServer(script, tls=(certs[1], certs[2])) as server, open_client(
            Endpoint(server.url(), Auth("basic", "admin", "pw"), cacert=certs[0],
                     deadline=10.0, max_attempts=1)) as client:
        yield server, client


@pytest.mark.parametrize("answer, said", [
    (b'{"id": "a/b", "time": "2022-02-02T00:00:00Z", "types": []}',
     " (of 2022-02-02T00:00:00Z)"),
    (b'{"id": "a/b", "time": "%s", "types": []}' % T40.encode(), f" (of {T40})"),
    (b'{"id": "a/b", "time": "%s", "types": []}' % T41.encode(), f" (of {'t' * 39}…)"),
    (b'{"id": "a/b", "types": []}', ""),
    (b'[{"id": "a/b", "types": []}]', ""),  # not an object: another event, not a crash
    (b"not json", ""),
])
def test_the_event_asked_by_its_quoted_id_and_found_changed_is_a_reset(certs, answer, said):
    for server, client in _asked(certs, answer):
        check = _check("a/b", "2021-01-01T00:00:00Z", None, on_page=False)
        with pytest.raises(ckm.LogReset) as exc:
            check.fetch(client, True)
        assert [s.target for s in server.seen] == ["/events/a%2Fb"]
        assert exc.value.message == (
            f"the node's log was reset: its event a/b{said} is another event (the "
            "checkpoint took event a/b of 2021-01-01T00:00:00Z last)")
        assert not check.pending


@pytest.mark.parametrize("eid, said_id", [(ID60, ID60), (ID61, "i" * 59 + "…")])
def test_a_changed_event_names_its_id_cut_after_60_characters(certs, eid, said_id):
    for _, client in _asked(certs, b'{"id": "x", "types": []}'):
        with pytest.raises(ckm.LogReset) as exc:
            _check(eid, None, None, on_page=False).fetch(client, True)
        assert exc.value.message.startswith(
            f"the node's log was reset: its event {said_id} is another event (")


def test_a_resumed_tail_asks_for_the_marked_event_once(emulator, log, tmp_path):
    """A checkpoint after a whole page: the marked event is asked for by id on the first
    page only, not again on each page after it."""
    log.generate(8)
    client = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                                  label="emu", cacert=emulator.ca_file))
    faults = emulator.faults
    try:
        ck = ckm.CheckpointFile(tmp_path / "ck.json", node="emu", flt=EventFilter())
        opts = tail.TailOptions(token="0", page_size=4)
        first = tail.tail(client, opts, StreamSink(io.StringIO()), checkpoint=ck,
                          info=NodeInfo("4.4.5"))
        assert first.emitted == 8
        assert json.loads(ck.path.read_text())["last_event"]["id"] == "8"
        log.generate(8)
        faults.path_prefix, faults.slow_seconds = "/events/", 0.0
        faults.push(*["slow"] * 10)  # no-op faults: what is left counts the requests
        out = io.StringIO()
        again = tail.tail(client, tail.TailOptions(page_size=4), StreamSink(out),
                          checkpoint=ck, info=NodeInfo("4.4.5"))
        assert again.emitted == 8 and again.pages == 3  # (the last one empty)
        assert 10 - len(faults.queue) == 1
    finally:
        faults.clear()
        client.close()


def _client(url: str, **auth: Any) -> Any:
    return open_client(Endpoint(url, Auth("basic", password="pw", **auth), label=None))


def test_node_keys_tell_access_keys_apart_and_keep_a_label_of_40_characters():
    url = "https://node.example:9092"
    keys = {ckm.node_key(_client(url, access_key=k)) for k in ("key-one", "key-two")}
    assert len(keys) == 2
    assert ckm.node_key(_client(url, username="u")) != ckm.node_key(_client(url))
    for label, kept in [("Prod-1.a_b", "Prod-1.a_b"), ("L" * 40, "L" * 40),
                        ("L" * 41, "L" * 40), ("a b/c", "a_b_c")]:
        c = open_client(Endpoint(url, Auth("basic", "u", "pw"), label=label))
        assert ckm.node_key(c).rsplit("-", 1)[0] == kept
    unlabelled = ckm.node_key(_client("https://Node.Example:9092", username="u"))
    assert unlabelled.rsplit("-", 1)[0] == "Node.Example_9092"


@pytest.mark.parametrize("n, hashed", [(75, False), (76, True)])
def test_a_filter_key_of_80_characters_names_the_file_and_a_longer_one_is_hashed(
        tmp_path, n, hashed):
    flt = EventFilter(type="a" * n)  # key "type-" + n letters
    path = ckm.resume_path(tmp_path, _client("https://n.example", username="u"), "daily",
                           flt)
    if hashed:
        assert path.name.startswith("daily@f-") and len(path.name) == len("daily@f-") + 16 + 5
    else:
        assert path.name == f"daily@type-{'a' * n}.json"


def test_a_second_tail_on_a_checkpoint_is_refused_at_once_with_the_reason(tmp_path):
    path = tmp_path / "ck.json"
    one = ckm.CheckpointFile(path, node="n", flt=EventFilter())
    one.lock()
    try:
        with pytest.raises(ConflictError) as exc:
            ckm.CheckpointFile(path, node="n", flt=EventFilter()).lock()
        assert exc.value.message == (f"checkpoint {path} is in use by another 'events tail'")
        assert exc.value.hint == ("two tails on one checkpoint would interleave; stop the "
                                  "other one or use another checkpoint")
    finally:
        one.unlock()


def test_dry_run_tails_without_saving_the_checkpoint(invoke, node_env, log, tmp_path):
    log.generate(3)
    ck = tmp_path / "ck.json"
    r = invoke("--dry-run", "events", "tail", "--checkpoint", str(ck), "--iteration-token",
               "0", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0, r
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["1", "2", "3"]
    assert not ck.exists()


def test_an_event_mark_is_the_digest_of_its_canonical_json_whatever_the_key_order():
    """The mark is kept in checkpoints across nodecli versions and compares an event read
    from a page with the same event from GET /events/{id}: its digest is of the canonical
    JSON (keys sorted, no spaces, ASCII), so key order and spacing do not change it."""
    import hashlib

    canonical = '{"a":[1,2],"b":"\\u00e9","id":"1","time":"2021-01-01T00:00:00Z"}'
    want = {"id": "1", "time": "2021-01-01T00:00:00Z",
            "digest": hashlib.sha256(canonical.encode()).hexdigest()[:32]}
    assert ckm.event_mark(json.loads(canonical)) == want
    assert ckm.event_mark({"time": "2021-01-01T00:00:00Z", "id": "1", "b": "é",
                           "a": [1, 2]}) == want
    assert ckm.event_mark({"id": 5, "time": 17})["time"] is None  # (a time not a string)
    assert ckm.event_mark({"id": 5})["time"] is None


def _saved(path: Path, **fields: Any) -> ckm.CheckpointFile:
    data = {"version": 1, "node": "n1", "filter": {"type": None, "type_glob": None},
            "iteration_token": "5", "skip_ids": [], "last_ids": []}
    path.write_text(json.dumps({**data, **fields}))
    return ckm.CheckpointFile(path, node="n1", flt=EventFilter())


@pytest.mark.parametrize("fields, error, message, hint", [
    ({"node": "n2"}, "UsageError", "checkpoint {p} belongs to node n2, not n1",
     "use another checkpoint for this node"),
    ({"filter": {"type": "file.created", "type_glob": None}}, "UsageError",
     'checkpoint {p} was saved with another filter ({{"type": "file.created", '
     '"type_glob": null}})', "use the same --type/--type-glob, or another checkpoint"),
    ({"last_event": {"id": "5"}}, "ConfigError", "checkpoint {p} is damaged (last_event)",
     "nothing was changed; to start over, delete {p}"),
])
def test_a_checkpoint_of_another_node_or_filter_or_damaged_says_what_to_do(
        tmp_path, fields, error, message, hint):
    path = tmp_path / "ck.json"
    with pytest.raises(Exception) as exc:
        _saved(path, **fields).load()
    assert type(exc.value).__name__ == error
    assert exc.value.message == message.format(p=path)  # type: ignore[attr-defined]
    assert exc.value.hint == hint.format(p=path)  # type: ignore[attr-defined]


@pytest.mark.parametrize("output", [[1, 2], "out.jsonl", 7])
def test_an_output_record_that_is_not_an_object_is_ignored(tmp_path, output):
    """(a file sink reads the record's fields: only an object is one)"""
    cp = _saved(tmp_path / "ck.json", output=output).load()
    assert cp is not None and cp.output is None and cp.token == "5"


@pytest.mark.parametrize("detail, said", [("", ""), ("page 3\n of  7", " page 3 of 7")])
def test_the_pause_hook_says_its_point_pid_and_detail_and_waits_for_an_answer(
        monkeypatch, detail, said):
    """NODECLI_TEST_PAUSE=POINT@SOCKET (docs/development.md), in this process: a folder
    with '@' in its name too; another point, or a spec without a socket, goes on."""
    import os
    import shutil
    import socket
    import tempfile
    import threading

    folder = tempfile.mkdtemp(prefix="p@")  # (short: AF_UNIX paths)
    where = os.path.join(folder, "s")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(where)
        listener.listen(2)
        listener.settimeout(60)  # (a ceiling for a hang, not a measure)
        monkeypatch.setenv("NODECLI_TEST_PAUSE", f"here@{where}")
        ckm.pause_for_tests("elsewhere", detail)  # another point: no connection
        monkeypatch.setenv("NODECLI_TEST_PAUSE", "here")
        ckm.pause_for_tests("here", detail)  # no socket named: no connection
        monkeypatch.setenv("NODECLI_TEST_PAUSE", f"here@{where}")
        done = threading.Event()
        waiter = threading.Thread(target=lambda: (ckm.pause_for_tests("here", detail),
                                                  done.set()), daemon=True)
        waiter.start()
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(60)
            line = b""
            while not line.endswith(b"\n"):
                line += conn.recv(100)
            assert line == f"here {os.getpid()}{said}\n".encode()
            assert not done.is_set()  # it waits for the answer
            conn.sendall(b"go\n")
            waiter.join(timeout=60)
        assert done.is_set()
        listener.settimeout(0)
        with pytest.raises(BlockingIOError):
            listener.accept()  # the two calls before did not connect
    finally:
        listener.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_save_stops_at_its_hook_before_the_file_is_written(monkeypatch, tmp_path):
    """The point the SIGKILL tests stop a tail at (`checkpoint-save`): the checkpoint is
    not yet on disk there, and is once the hook is answered."""
    import os
    import socket
    import tempfile
    import threading

    folder = tempfile.mkdtemp(prefix="ck")
    where = os.path.join(folder, "s")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(where)
        listener.listen(1)
        listener.settimeout(60)  # (a ceiling for a hang, not a measure)
        monkeypatch.setenv("NODECLI_TEST_PAUSE", f"checkpoint-save@{where}")
        ck = ckm.CheckpointFile(tmp_path / "ck.json", node="n1", flt=EventFilter())
        saving = threading.Thread(target=ck.save, args=(ckm.Checkpoint("9"),), daemon=True)
        saving.start()
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(60)
            line = b""
            while not line.endswith(b"\n"):
                line += conn.recv(100)
            assert line == f"checkpoint-save {os.getpid()}\n".encode()
            assert not ck.path.exists()
            conn.sendall(b"go\n")
            saving.join(timeout=60)
        assert json.loads(ck.path.read_text())["iteration_token"] == "9"
    finally:
        listener.close()
        os.unlink(where)
        os.rmdir(folder)
