"""events tail: checkpoints, exactly-once file output, signals, pipes, crash/restart cycles."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from nodecli.emulator.events import start_generator
from tests.conftest import nodecli_cmd, reap, subprocess_env


def ids_of(text: str) -> list[str]:
    return [json.loads(line)["id"] for line in text.splitlines() if line.strip()]


def wait_for(predicate, timeout: float = 120.0) -> None:
    """Poll until ``predicate()`` holds; ``timeout`` is a ceiling for a hung child (a
    loaded machine is slow, never this slow), not a guess at how long it takes."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_resume_continues_where_the_last_run_stopped(invoke, node_env, log, home):
    log.generate(10)
    r = invoke("events", "tail", "--resume", "audit", "--since", "1h", "-o", "jsonl",
               env=node_env)
    assert r.exit_code == 0, r
    assert ids_of(r.stdout) == [str(i) for i in range(1, 11)]
    files = list((home / "state" / "checkpoints").glob("*/audit@all.json"))
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    log.generate(5)
    # the checkpoint wins over --iteration-token
    r = invoke("events", "tail", "--resume", "audit", "--iteration-token", "0", "-o", "jsonl",
               env=node_env)
    assert ids_of(r.stdout) == [str(i) for i in range(11, 16)]
    r = invoke("events", "tail", "--resume", "audit", "-o", "jsonl", env=node_env)
    assert r.stdout == ""
    # another filter is another checkpoint
    r = invoke("events", "tail", "--resume", "audit", "--type-glob", "file.*",
               "--iteration-token", "0", "-o", "jsonl", env=node_env)
    assert r.exit_code == 0
    assert len(list((home / "state" / "checkpoints").glob("*/audit@*.json"))) == 2


def test_max_events_and_until_type_resume_mid_page(invoke, node_env, log, tmp_path):
    log.generate(20, families=["file"])
    ck = str(tmp_path / "ck.json")
    r = invoke("events", "tail", "--checkpoint", ck, "--iteration-token", "0", "--max-events",
               "4", "-o", "jsonl", env=node_env)
    assert ids_of(r.stdout) == ["1", "2", "3", "4"]
    log.append({"types": ["transfer.ended", "upload.ended"], "data": {}})  # id 21
    log.generate(3, families=["file"])
    r = invoke("events", "tail", "--checkpoint", ck, "--until-type", "transfer.ended",
               "-o", "jsonl", env=node_env)
    assert ids_of(r.stdout) == [str(i) for i in range(5, 22)]
    r = invoke("events", "tail", "--checkpoint", ck, "-o", "jsonl", env=node_env)
    assert ids_of(r.stdout) == ["22", "23", "24"]


def test_rejected_checkpoint_never_restarts_silently(invoke, node_env, emulator, log,
                                                     tmp_path):
    log.generate(10)
    ck = tmp_path / "ck.json"
    r = invoke("events", "tail", "--checkpoint", str(ck), "--since", "1h", env=node_env)
    assert r.exit_code == 0
    saved = ck.read_bytes()
    emulator.state.reset()  # the node's log starts over: the saved position is unknown
    log.generate(3)
    r = invoke("events", "tail", "--checkpoint", str(ck), "--since", "1h", env=node_env)
    assert r.exit_code == 1
    assert "refused the position saved in checkpoint" in r.stderr
    assert f"delete {ck}" in r.stderr
    assert r.stdout == ""
    assert ck.read_bytes() == saved


def test_damaged_or_foreign_checkpoint_is_refused(invoke, node_env, log, tmp_path):
    ck = tmp_path / "ck.json"
    ck.write_text("{not json")
    r = invoke("events", "tail", "--checkpoint", str(ck), env=node_env)
    assert r.exit_code == 3
    assert "damaged" in r.stderr
    assert ck.read_text() == "{not json"
    ck.write_text(json.dumps({"version": 1, "node": "elsewhere-123", "iteration_token": "5"}))
    r = invoke("events", "tail", "--checkpoint", str(ck), env=node_env)
    assert r.exit_code == 2
    assert "belongs to node" in r.stderr


def test_output_file_recovers_after_a_crash_mid_page(invoke, node_env, log, tmp_path):
    log.generate(10)
    out = tmp_path / "events.jsonl"
    r = invoke("events", "tail", "--to", str(out), "--since", "1h", env=node_env)
    assert r.exit_code == 0 and r.stdout == ""
    assert ids_of(out.read_text()) == [str(i) for i in range(1, 11)]
    log.generate(5)
    # a crash after writing two events of the next page, and half of a third,
    # before the checkpoint was saved
    extra = [json.dumps({"id": "11", "x": 1}), json.dumps({"id": "12", "x": 1})]
    with open(out, "a") as fh:
        fh.write("\n".join(extra) + '\n{"id": "13", "tr')
    # the deprecated spelling (--output FILE, not a format name) still means the file
    r = invoke("events", "tail", "--output", str(out), env=node_env)
    assert r.exit_code == 0, r
    assert r.stderr.count("\n") == 2 and "--output FILE is deprecated: use --to" in r.stderr
    assert r.stderr.endswith(f"wrote 3 events to {out}\n")  # 11 and 12 were there already
    lines = out.read_text().splitlines()
    assert ids_of(out.read_text()) == [str(i) for i in range(1, 16)]
    assert all(json.loads(line) for line in lines)
    assert Path(str(out) + ".checkpoint").exists()


@pytest.mark.parametrize("args", [["-o", "table"], ["-o", "csv"], ["-o", "yaml"],
                                  ["--output", "table"], ["--output", "csv"],
                                  ["--output", "YAML"], ["--format", "wide"],
                                  ["-o", "json", "--output", "jsonl"]])
def test_o_is_always_a_format_and_never_writes_a_file(invoke, node_env, log, tmp_path,
                                                      monkeypatch, args):
    log.generate(3)
    monkeypatch.chdir(tmp_path)
    r = invoke("events", "tail", "--since", "1h", *args, env=node_env)
    assert r.exit_code == 2, r
    assert ("pretty" in r.stderr and "jsonl" in r.stderr) or "format once" in r.stderr
    assert r.stderr.count("\n") <= 2 and r.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("spelling", ["-o", "--format", "--output"])
def test_each_spelling_of_the_format_gives_the_format(invoke, node_env, log, spelling):
    log.generate(2)
    r = invoke("events", "tail", "--since", "1h", spelling, "jsonl", env=node_env)
    assert r.exit_code == 0, r
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["1", "2"]
    assert r.stderr == ""


def _popen(args: list[str], env: dict[str, str], **kw) -> subprocess.Popen:
    return subprocess.Popen(nodecli_cmd(*args), env=subprocess_env(env),
                            stdout=kw.pop("stdout", subprocess.PIPE),
                            stderr=kw.pop("stderr", subprocess.PIPE), **kw)


def test_broken_pipe_saves_nothing(node_env, log, tmp_path):
    log.generate(3000, families=["transfer"])
    ck = tmp_path / "ck.json"
    proc = _popen(["events", "tail", "--checkpoint", str(ck), "--iteration-token", "0",
                   "--page-size", "3000", "-o", "jsonl"], node_env)
    try:
        assert proc.stdout is not None
        proc.stdout.close()  # the reader is gone before the first page arrives
        proc.wait(timeout=120)
    finally:
        reap(proc)
    assert proc.returncode == 141
    assert proc.stderr is not None and proc.stderr.read() == b""
    saved = json.loads(ck.read_text())  # only the start point, never a page it did not write
    assert saved["iteration_token"] == "0"
    assert saved["skip_ids"] == []


def test_two_tails_on_one_checkpoint_fail_fast(node_env, log, run_cli, tmp_path):
    log.generate(5)
    ck = tmp_path / "ck.json"
    first = _popen(["events", "tail", "-f", "--checkpoint", str(ck), "--interval", "0.2",
                    "--since", "1h"], node_env)
    try:
        wait_for(ck.exists)
        r = run_cli("events", "tail", "--checkpoint", str(ck), env=node_env, timeout=30)
        assert r.exit_code == 1
        assert "in use by another 'events tail'" in r.stderr
    finally:
        first.terminate()
        try:
            first.wait(timeout=60)
        finally:
            reap(first)
    assert first.returncode == 130


def test_sigint_finishes_saves_and_says_how_to_resume(node_env, log, tmp_path, run_cli):
    log.generate(50)
    ck = tmp_path / "ck.json"
    proc = _popen(["events", "tail", "-f", "--checkpoint", str(ck), "--since", "1h",
                   "--interval", "0.1", "-o", "jsonl"], node_env)
    got: list[bytes] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: got.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()  # the checkpoint moves only as the reader takes the events
    try:
        wait_for(lambda: ck.exists() and json.loads(ck.read_text())["iteration_token"] == "50")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        reap(proc)
    reader.join(timeout=60)
    assert proc.returncode == 130
    text = err.decode()
    assert f"resume with: nodecli events tail -f --checkpoint {ck}" in text
    assert "Traceback" not in text
    assert ids_of(got[0].decode()) == [str(i) for i in range(1, 51)]
    log.generate(2)
    r = run_cli("events", "tail", "--checkpoint", str(ck), "-o", "jsonl", env=node_env)
    assert ids_of(r.stdout) == ["51", "52"]


def test_sigkill_of_a_piped_tail_loses_no_event_its_checkpoint_covers(node_env, log,
                                                                       tmp_path):
    """``tail -f --checkpoint F -o jsonl | reader``, then SIGKILL: stdout is a pipe, so
    Python block-buffers it (no PYTHONUNBUFFERED here, as for a user); every event the
    checkpoint says was delivered must have reached the reader, or a resume skips it."""
    env = subprocess_env(node_env)
    assert "PYTHONUNBUFFERED" not in env
    log.generate(5)
    ck = tmp_path / "ck.json"
    proc = subprocess.Popen(nodecli_cmd("events", "tail", "-f", "--checkpoint", str(ck),
                                        "--since", "1h", "--interval", "0.1", "-o", "jsonl"),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    try:
        wait_for(lambda: ck.exists() and json.loads(ck.read_text())["iteration_token"] == "5")
        saved = json.loads(ck.read_text())
    finally:
        proc.kill()
        reap(proc)
    reader.join(timeout=60)
    out = got[0]
    assert proc.returncode == -signal.SIGKILL
    delivered = [str(i) for i in range(1, int(saved["iteration_token"]) + 1)]
    assert ids_of(out.decode()) == delivered


def _between_write_and_checkpoint(out: Path, ck: Path) -> bool:
    """True while the file holds bytes that the checkpoint does not cover yet."""
    try:
        saved = json.loads(ck.read_bytes())
        return out.stat().st_size > (saved.get("output") or {}).get("size", 1 << 62)
    except (OSError, ValueError):
        return False


def _ended(proc: subprocess.Popen, err: Path) -> str:
    return f"the tail ended (exit {proc.returncode}): {err.read_text()[-600:]}"


@pytest.mark.slow
def test_exactly_once_across_sigkill_restarts_with_faults(node_env, emulator, log, tmp_path,
                                                          run_cli, pause_point):
    """503s, resets and SIGKILLs while the node keeps logging: every event once, in order.

    Two kills in three land at the worst moment, reached deterministically: the tail
    stops at its checkpoint-save hook (NODECLI_TEST_PAUSE) after a page reached the
    file, before its checkpoint was saved, and is killed there. The others are killed
    just after being let go (somewhere in the next page: fetching, writing or saving).
    """
    log.generate(30_000)  # a backlog keeps the tail writing pages (never caught up)
    out = tmp_path / "events.jsonl"
    ck = Path(str(out) + ".checkpoint")
    stop = start_generator(emulator.state, 300)
    faults = emulator.faults
    faults.path_prefix = "/events"
    rng = random.Random(7)
    pause = pause_point("checkpoint-save")
    env = dict(node_env, **pause.env())
    aimed = 0
    try:
        faults.fail_rate, faults.reset_rate = 0.03, 0.02
        for cycle in range(12):
            err = tmp_path / f"stderr-{cycle}"
            with open(err, "wb") as err_file:
                proc = _popen(["events", "tail", "-f", "--to", str(out), "--since", "1h",
                               "--page-size", str(rng.choice([7, 40, 200])), "--interval",
                               "0.05"], env, stdout=subprocess.DEVNULL, stderr=err_file)
            try:
                conn, let_go = None, rng.randint(1, 4)
                for saves in range(200):  # let it save a few checkpoints, then stop
                    conn = pause.wait(proc)  # at its hook (nothing is being timed)
                    assert conn is not None, _ended(proc, err)
                    # aimed: wait for a save that follows a page written to the file
                    # (a page of ids recovered after the last kill writes nothing)
                    if saves >= let_go and (
                            not cycle % 3 or _between_write_and_checkpoint(out, ck)):
                        break
                    pause.release(conn)
                assert conn is not None and saves < 199
                if cycle % 3:
                    # the file holds bytes its checkpoint does not cover: kill it here
                    aimed += 1
                    os.kill(proc.pid, signal.SIGKILL)
                else:
                    pause.release(conn)
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=60)
                conn.close()
            finally:
                reap(proc)
    finally:
        stop()
        faults.clear()
        faults.path_prefix = "/"
    assert aimed == 8
    r = run_cli("events", "tail", "--to", str(out), "--page-size", "500", env=node_env,
                timeout=300)
    assert r.exit_code == 0, r
    got = ids_of(out.read_text())
    assert len(got) > 30_000
    assert got == [str(i) for i in range(1, log.last_position + 1)]


@pytest.mark.slow
def test_terminal_gets_pretty_lines_status_line_and_resume_hint(node_env, emulator, log):
    import pexpect

    log.generate(3, families=["file"])
    log.append({"user_id": "carol", "types": ["upload.started", "transfer.started"],
                "data": {"direction": "receive", "status": "running", "end_time_usec": None,
                         "bytes_transferred": 1_500_000, "current_rate_kbps": 900,
                         "target_rate_kbps": 1000, "remote_host": "10.1.2.3"}})
    emulator.faults.path_prefix = "/events"
    emulator.faults.push("503", "reset")
    child = None
    try:
        child = pexpect.spawn(nodecli_cmd()[0], nodecli_cmd("events", "tail", "-f", "--since",
                                                            "1h", "--interval", "0.2")[1:],
                              # wide enough for the whole summary (lines are cut to
                              # the terminal's width)
                              env=subprocess_env({**node_env, "COLUMNS": "200"}),
                              timeout=60, encoding="utf-8")
        child.expect(r"reconnecting \(attempt 1, next in \d+ s\): HTTP 503")
        child.expect(r"reconnecting \(attempt 2")
        child.expect("resumed")
        child.expect(r"upload\.started\s+carol\s+receive \[RUNNING\] 10\.1\.2\.3 1\.5 MB")
        child.sendintr()
        child.expect(r"resume with: nodecli events tail -f --iteration-token 4")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 130
    finally:
        emulator.faults.path_prefix = "/"
        if child is not None:
            reap(child)


@pytest.mark.slow
def test_emulator_serve_event_rate_feeds_a_follower(home, run_cli, tmp_path):
    """`nodecli emulator serve --event-rate N` (the nodes helper's command) + tail -f."""
    import importlib.util

    if importlib.util.find_spec("nodecli.cli.emulator") is None:
        pytest.skip("this build has no 'emulator serve' command")
    from nodecli.config.model import NodeUser, TransferUser
    from nodecli.config.paths import resolve_paths
    from nodecli.config.store import ConfigStore
    from nodecli.users.passwords import hash_password

    with ConfigStore(resolve_paths(home)).edit() as cfg:
        cfg.transfer_users["xfer"] = TransferUser("xfer", ["file:////data/*"])
        cfg.users["admin"] = NodeUser("admin", "xfer", hash_password("admin-pass", log_n=4), [])
    port_file = tmp_path / "port"
    server = _popen(["emulator", "serve", "--no-tls", "--port", "0", "--port-file",
                     str(port_file), "--event-rate", "100"], {"NODECLI_HOME": str(home)})
    try:
        wait_for(port_file.exists)
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        r = run_cli("events", "tail", "-f", "--iteration-token", "0", "--max-events", "40",
                    "--interval", "0.1", "-o", "jsonl", "--url", url, "--user", "admin",
                    env={"NODECLI_PASSWORD": "admin-pass", "NODECLI_HOME": str(home)},
                    timeout=60)
        assert r.exit_code == 0, r
        assert ids_of(r.stdout) == [str(i) for i in range(1, 41)]
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.communicate(timeout=60)
        finally:
            reap(server)


@pytest.mark.parametrize("no_color", ["", "1"])
def test_pretty_is_coloured_only_on_a_colour_terminal(node_env, log, no_color):
    import pexpect

    log.append({"user_id": "dan", "types": ["file.created"],
                "data": {"path": "/data/\x1b]0;pwned\x07x.csv", "size": 2000}})
    child = pexpect.spawn(nodecli_cmd()[0], nodecli_cmd("events", "tail", "--since", "1h")[1:],
                          env=subprocess_env(dict(node_env, NO_COLOR=no_color, TERM="xterm")),
                          timeout=60, encoding="utf-8")
    try:
        child.expect(pexpect.EOF)
        child.close()
    finally:
        reap(child)
    out = child.before
    assert child.exitstatus == 0
    assert "file.created" in out and "/data/x.csv (2.0 kB)" in out  # the OSC sequence is gone
    assert "pwned" not in out
    assert ("\x1b[32m" in out) == (no_color == "")
