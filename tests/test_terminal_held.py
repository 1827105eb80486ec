"""Terminal.held: while a full-screen view owns the terminal, messages for stderr wait
and then come out in order, bounded; a stderr that is no terminal is never held.
Terminal.abandon: a thread left running says nothing more."""

from __future__ import annotations

import io
import threading

import pytest

from nodecli.cli.app import Terminal


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _term(err: io.StringIO) -> Terminal:
    return Terminal(verbosity=1, no_color=True, _stdout=io.StringIO(), _stderr=err)


def test_messages_wait_for_the_screen_then_come_out_in_order():
    err = Tty()
    term = _term(err)
    with term.held():
        term.debug("one")
        term.warn("two")
        term.info("three")
        assert err.getvalue() == ""
    assert err.getvalue() == "debug: one\nnodecli: warning: two\nthree\n"
    term.info("after")  # held no more
    assert err.getvalue().endswith("three\nafter\n")


def test_only_the_last_are_kept_and_the_rest_are_counted():
    err = Tty()
    term = _term(err)
    with term.held(keep=3):
        for i in range(3):
            term.info(f"m{i}")
    assert err.getvalue() == "m0\nm1\nm2\n"  # exactly keep: nothing dropped, no count
    err = Tty()
    term = _term(err)
    with term.held(keep=3):
        for i in range(5):
            term.info(f"m{i}")
    assert err.getvalue() == "(2 earlier messages not kept)\nm2\nm3\nm4\n"


def test_a_stderr_that_is_no_terminal_gets_each_line_when_it_is_said():
    err = io.StringIO()
    term = _term(err)
    with term.held():
        term.info("now")
        assert err.getvalue() == "now\n"


def test_messages_from_another_thread_are_held_too_and_none_is_lost():
    err = Tty()
    term = _term(err)
    with term.held():
        threads = [threading.Thread(target=lambda n=n: [term.info(f"t{n}-{i}")
                                                        for i in range(200)])
                   for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert err.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert sorted(lines) == sorted(f"t{n}-{i}" for n in range(4) for i in range(200))
    for n in range(4):  # each thread's lines in the order it said them
        assert [x for x in lines if x.startswith(f"t{n}-")] == [f"t{n}-{i}" for i in range(200)]


def _say_in(term: Terminal, said: list[str], go: threading.Event,
            done: threading.Event) -> threading.Thread:
    """A thread that says ``said[0]`` at once, then each of the rest after ``go``."""
    def run() -> None:
        term.info(said[0])
        done.set()
        go.wait(30)
        for text in said[1:]:
            term.info(text)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.parametrize("tty", [True, False], ids=["held", "not held"])
def test_an_abandoned_thread_says_nothing_more_and_the_others_go_on(tty):
    err = Tty() if tty else io.StringIO()
    term = _term(err)
    go, done = threading.Event(), threading.Event()
    with term.held():
        left = _say_in(term, ["before", "after", "later"], go, done)
        assert done.wait(30)
        term.abandon(left)
        go.set()
        left.join(30)
        term.info("main")
    term.info("last")
    assert err.getvalue() == "before\nmain\nlast\n"  # said before: kept, in order


def test_a_thread_not_abandoned_is_still_shown():
    err = Tty()
    term = _term(err)
    go, done = threading.Event(), threading.Event()
    other = threading.Thread(target=lambda: None)
    with term.held():
        kept = _say_in(term, ["one", "two"], go, done)
        assert done.wait(30)
        term.abandon(other)  # another thread abandoned: this one is not
        go.set()
        kept.join(30)
    assert err.getvalue() == "one\ntwo\n"
