"""nodecli.interrupt: the process's SIGINT/SIGTERM handler notes the signal before it
raises, so a Ctrl-C whose KeyboardInterrupt a finalizer swallowed still ends every
long-running command at its next pause (token renewal, operation and transfer watches,
the exporter, a shipping sink's backoff). Real signals, sent to this process's main
thread."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from nodecli import interrupt
from tests.lost_signal import signal_main_thread, swallow_one_signal

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

SIGNALS = [signal.SIGINT, signal.SIGTERM]


@pytest.fixture
def installed(monkeypatch):
    """interrupt's handler, as cli.main installs it, with no signal taken yet; the
    handlers and the note are put back afterwards."""
    monkeypatch.setattr(interrupt, "_taken", None)
    old = {sig: signal.getsignal(sig) for sig in SIGNALS}
    interrupt.install()
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@pytest.mark.timeout(60)  # (the pause would never end: this test's limit fails it)
@pytest.mark.parametrize("sig", SIGNALS)
def test_a_signal_lost_in_a_finalizer_ends_the_next_pause_at_once(installed, sig):
    swallow_one_signal(sig)
    with pytest.raises(KeyboardInterrupt):
        interrupt.wait(None)


def test_a_lost_signal_ends_a_pause_of_no_time_and_is_seen_by_check(installed):
    swallow_one_signal()
    with pytest.raises(KeyboardInterrupt):
        interrupt.check()
    with pytest.raises(KeyboardInterrupt):
        interrupt.wait(0)


@pytest.mark.timeout(60)
def test_a_signal_caught_once_still_ends_the_next_pause(installed):
    # a command that caught the first KeyboardInterrupt to tidy up does not go on waiting
    with pytest.raises(KeyboardInterrupt):
        signal_main_thread()
        for _ in range(1000):
            pass
    with pytest.raises(KeyboardInterrupt):
        interrupt.wait(None)


def test_no_signal_no_stop(installed):
    interrupt.check()
    interrupt.wait(0)
    interrupt.wait(0.01)


@pytest.mark.parametrize("seconds", [0.05, 0.3])
def test_a_pause_lasts_its_time(installed, seconds):
    import time

    started = time.monotonic()
    interrupt.wait(seconds)
    assert time.monotonic() - started >= seconds


def _when_main_thread_waits(then) -> threading.Thread:
    """Run ``then()`` on another thread once the main thread is inside interrupt.wait's
    select (seen in its stack, not guessed from time)."""
    main = threading.main_thread().ident
    where = interrupt.__file__
    selects = {n for n, line in enumerate(Path(where).read_text().splitlines(), 1)
               if "select.select(" in line}

    def watch() -> None:
        while True:
            frame = sys._current_frames().get(main or 0)
            if frame is not None and frame.f_code.co_filename == where and \
                    frame.f_lineno in selects:
                break
            threading.Event().wait(0.001)
        then()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.timeout(60)
@pytest.mark.parametrize("sig", SIGNALS)
def test_a_signal_another_thread_takes_ends_an_endless_pause(installed, sig):
    # the kernel may hand a process's signal to any thread: the main thread's select
    # must still wake
    taker = _when_main_thread_waits(
        lambda: signal.pthread_kill(threading.get_ident(), sig))
    with pytest.raises(KeyboardInterrupt):
        interrupt.wait(None)
    taker.join(5)


def test_another_handled_signal_does_not_end_the_pause(installed):
    taken = []
    old = signal.signal(signal.SIGUSR1, lambda signum, frame: taken.append(signum))
    try:
        signal_main_thread(signal.SIGUSR1)
        for _ in range(1000):
            pass
        interrupt.wait(0.01)
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert taken == [signal.SIGUSR1]


def test_install_off_the_main_thread_changes_nothing(installed):
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}
    failures: list[BaseException] = []

    def other() -> None:
        try:
            interrupt.install()
        except BaseException as exc:  # noqa: BLE001 - reported by the assert below
            failures.append(exc)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert failures == []
    assert {sig: signal.getsignal(sig) for sig in SIGNALS} == before


def test_token_renewal_stops_after_a_signal_lost_during_a_write(installed, tmp_path):
    from nodecli.tokens.issuing import renew_into

    made = []

    def make():
        made.append(len(made))
        if len(made) == 1:
            swallow_one_signal()  # as a finalizer of the HTTP request that minted it
        return f"token-{len(made)}", None

    path = tmp_path / "token"
    with pytest.raises(KeyboardInterrupt):
        renew_into(path, make, 1.0, rounds=3)
    assert made == [0]
    assert path.read_text() == "token-1\n"
    assert (path.stat().st_mode & 0o777) == 0o600


@pytest.mark.parametrize("sig", SIGNALS)
def test_the_nodecli_process_notes_its_signals(sig):
    """cli.main installs the handler: in a real nodecli process, a signal lost in a
    finalizer still ends the command's endless pause (the process dies of the
    KeyboardInterrupt; without the note it would wait for ever)."""
    script = textwrap.dedent(f"""
        import signal
        import nodecli.cli.main as entry
        from nodecli import interrupt

        class Swallows:
            def __del__(self):
                signal.raise_signal({int(sig)})
                for _ in range(1000):
                    pass

        def command(argv=None):
            Swallows()
            interrupt.wait(None)
            print("the pause ended without a KeyboardInterrupt")
            return 0

        entry.run = command
        entry.main()
    """)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.stdout == ""
    assert proc.returncode == -signal.SIGINT, proc.stderr[-500:]


def _sleeps_in(path: Path) -> list[int]:
    """Lines of ``path`` that name ``time.sleep`` (a call, or a default or argument)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(node.lineno for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr == "sleep"
                  and isinstance(node.value, ast.Name) and node.value.id == "time")


# pauses of at most 50 ms, in loops that look at the clock each time round
SHORT_SLEEPS = {"nodecli/fsutil.py", "nodecli/node/events/delivery.py"}


def test_no_product_pause_is_a_time_sleep():
    """Every pause of the product is interrupt.wait (the emulator is beside it): a
    time.sleep on the main thread is not woken by a signal another thread took, nor
    ended by one a finalizer swallowed."""
    root = Path(__file__).resolve().parent.parent
    found = {}
    for path in sorted((root / "nodecli").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name.startswith("nodecli/emulator/") or name in SHORT_SLEEPS:
            continue
        lines = _sleeps_in(path)
        if lines:
            found[name] = lines
    assert found == {}
    for name in SHORT_SLEEPS:  # (the exceptions still exist, or the list is stale)
        assert _sleeps_in(root / name), name
