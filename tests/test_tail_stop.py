"""Ctrl-C and SIGTERM in a tail (node/events/stop.py GracefulStop), with real signals sent
to this process's main thread.

Python runs a signal's handler wherever the main thread is at that moment. When that is
inside a finalizer (an object's ``__del__``, a generator the garbage collector closes),
the KeyboardInterrupt the handler raises is printed as "ignored" and dropped: a
``tail -f`` kept running after its Ctrl-C. The stop must still happen, at the next pause
or before the next page is written."""

from __future__ import annotations

import signal

import pytest

from nodecli.node.events.stop import GracefulStop
from tests.lost_signal import signal_main_thread, swallow_one_signal

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture
def stop():
    stop = GracefulStop()
    stop.install()
    assert signal.getsignal(signal.SIGINT) == stop._handler  # the test's own premise
    try:
        yield stop
    finally:
        stop.restore()


def test_a_signal_lost_in_a_finalizer_still_ends_the_next_pause(stop):
    swallow_one_signal()
    with pytest.raises(KeyboardInterrupt):
        stop.sleep(20)


def test_a_signal_lost_in_a_finalizer_writes_no_further_page(stop):
    swallow_one_signal()
    written = []
    with pytest.raises(KeyboardInterrupt), stop.critical():
        written.append("page")
    assert written == []


def test_a_pause_of_no_time_still_stops_after_a_lost_signal(stop):
    swallow_one_signal()
    with pytest.raises(KeyboardInterrupt):
        stop.sleep(0)


def test_a_signal_during_a_page_lets_the_page_finish_then_stops(stop):
    written = []
    with pytest.raises(KeyboardInterrupt), stop.critical():
        signal_main_thread()
        for _ in range(1000):
            pass
        written.append("page")  # the handler has run, and let the write go on
        assert stop.requested
    assert written == ["page"]


def test_a_second_signal_during_a_page_stops_at_once(stop):
    written = []
    with pytest.raises(KeyboardInterrupt), stop.critical():
        signal_main_thread()
        for _ in range(1000):
            pass
        written.append("first")
        signal_main_thread()
        for _ in range(1000):
            pass
        written.append("second")
    assert written == ["first"]


def test_sigterm_stops_the_pause_as_sigint_does(stop):
    with pytest.raises(KeyboardInterrupt):
        signal_main_thread(signal.SIGTERM)
        stop.sleep(20)


def test_no_signal_no_stop(stop):
    written = []
    with stop.critical():
        written.append("page")
    stop.sleep(0.01)
    assert written == ["page"] and stop.requested is False


def test_a_pause_under_a_second_lasts_its_time(stop):
    import time

    started = time.monotonic()
    stop.sleep(0.2)  # (a node polled every 0.2 s is not polled in a busy loop)
    assert time.monotonic() - started >= 0.2
