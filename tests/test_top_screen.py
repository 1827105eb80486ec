"""``nodecli transfer top`` on a real terminal (a pseudo-terminal), against a scripted
HTTPS node the test holds in each state: "reading ..." until the first answer, the
transfers once it comes, a refusal shown as the problem (cut at 200 characters) while the
screen stays up, keys in either case, and the exit. Each step waits for what the screen
shows, never for time."""

from __future__ import annotations

import json
import re
import threading

import pytest

TRANSFERS = [{"id": "T-ONE", "status": "running", "remote_host": "alpha"},
             {"id": "T-TWO", "status": "running", "remote_host": "beta"}]


class TopNode:
    """Answers every GET /ops/transfers: held until ``gate`` opens, then the two
    transfers on a page that links to an empty one, or (``refuse`` set) 403."""

    def __init__(self, certs: tuple[str, str, str]) -> None:
        from tests.scripted_server import ScriptedServer

        self.gate, self.refuse = threading.Event(), threading.Event()
        self.asked = threading.Event()  # a request has come
        self.pause = 0.0  # seconds before each answer: a floor under each refresh's time
        self.server = ScriptedServer(self._answer, tls=(certs[1], certs[2]))

    def _answer(self, seen):
        from tests.scripted_server import reply

        self.asked.set()
        self.gate.wait(60)
        if self.pause:
            yield self.pause
        links: list[tuple[str, str]] = []
        if self.refuse.is_set():  # words whose 201st character (as shown) is the first Z
            said = f"GET {self.server.url()}{seen.target}: HTTP 403: "
            body = {"error": {"user_message": "y" * (200 - len(said)) + "Z" * 20}}
            status = 403
        elif "iteration_token=" in seen.target:  # the page after the last: caught up
            body, status = [], 200
        else:  # every transfer on one page, and where the next page is
            body, status = TRANSFERS, 200
            links = [("Link", f"<{self.server.url()}/ops/transfers?iteration_token=t1>; "
                              'rel="next"')]
        yield reply(status, json.dumps(body).encode(),
                    [("Content-Type", "application/json"), *links], close=False)


@pytest.fixture
def top_node(tmp_path):
    from tests.scripted_server import certificates

    certs = certificates(tmp_path)
    node = TopNode(certs)
    try:
        yield node, {"NODECLI_URL": node.server.url(), "NODECLI_CACERT": certs[0],
                     "NODECLI_BEARER": "tok-top-screen", "NODECLI_ACCESS_KEY": "ak1"}
    finally:
        node.gate.set()
        node.server.close()


class Screen:
    """What a terminal of ``cols`` x ``rows`` shows of the child's output (pyte), read
    until a condition holds: curses sends only the cells that changed, so the bytes
    alone seldom hold a whole line."""

    def __init__(self, child, cols: int, rows: int) -> None:
        import pyte

        self.child, self.raw = child, ""
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.Stream(self.screen)

    @property
    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def wait(self, what, timeout: float = 20.0) -> list[str]:
        """Read until ``what`` (text on some line, or a test of the lines) holds."""
        import time

        import pexpect

        def holds() -> bool:
            return what(self.lines) if callable(what) else any(what in x for x in self.lines)

        deadline = time.monotonic() + timeout
        while not holds():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the screen never showed {what!r}:\n" +
                                     "\n".join(self.lines))
            try:
                data = self.child.read_nonblocking(65536, timeout=min(left, 1.0))
            except pexpect.TIMEOUT:
                continue
            self.raw += data
            self.stream.feed(data)
        return self.lines


def _spawn_top(env: dict[str, str], err: str | None, *args: str, cols: int = 300):
    """``nodecli transfer top`` on a ``cols`` x 24 terminal, its stderr to the file
    ``err`` (None: to the terminal too). The size is the terminal's own, not LINES and
    COLUMNS (curses would keep those through a resize)."""
    import sys

    import pexpect

    from tests.conftest import REPO_ROOT, subprocess_env

    redirect = ' 2>"$TOP_ERR"' if err else ""
    child_env = subprocess_env({**env, "TERM": "xterm", "TOP_ERR": err or ""})
    for name in ("LINES", "COLUMNS"):
        child_env.pop(name, None)
    return pexpect.spawn("/bin/sh", ["-c", f'exec "$@"{redirect}', "sh", sys.executable,
                                     "-m", "nodecli", "transfer", "top", *args],
                         env=child_env, cwd=str(REPO_ROOT), encoding="utf-8", timeout=20,
                         dimensions=(24, cols))


def test_top_reads_then_shows_then_keeps_a_refusal_on_screen_and_quits(top_node, home,
                                                                        tmp_path):
    import pexpect

    node, env = top_node
    node.pause = 0.05
    err = tmp_path / "stderr"
    child = _spawn_top({**env, "NODECLI_HOME": str(home)}, str(err), "--interval", "0.2",
                       "-v")
    screen = Screen(child, 300, 24)
    try:
        # drawn before the node has answered
        assert screen.wait("reading ...")[0].endswith(" · !! reading ...")
        node.gate.set()
        lines = screen.wait("T-TWO")
        assert "2 active" in lines[0] and "!!" not in lines[0]
        assert lines[1].startswith("sort rate · q quit")
        child.send("S")  # keys in either case
        screen.wait(lambda lines: lines[1].startswith("sort progress · q quit"))
        child.send("F")
        lines = screen.wait(lambda lines: lines[1].startswith("sort progress · failed only"))
        assert not any("T-ONE" in line for line in lines)
        for _ in range(6):  # the filter stays on from one refresh to the next
            seen = len(node.server.seen)
            lines = screen.wait(lambda _, seen=seen: len(node.server.seen) >= seen + 2)
            assert lines[1].startswith("sort progress · failed only"), lines
        child.send("f")
        screen.wait("T-ONE")
        # the node now refuses: its words stay on screen, cut at 200 characters
        node.refuse.set()
        lines = screen.wait("(retrying)")
        shown = lines[0].split(" · !! ", 1)[1]
        assert len(shown) == 200 + len(" (retrying)") and "Z" not in shown
        assert re.fullmatch(rf"GET {node.server.url()}/ops/transfers\?\S+: HTTP 403: y+ "
                            r"\(retrying\)", shown)
        assert "T-ONE" in "\n".join(lines)  # what was read stays shown
        child.send("Q")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    last = re.fullmatch(r"debug: last refresh: 2 transfers in (\d+) ms",
                        err.read_text().splitlines()[-1])
    # the node waits 50 ms before each answer; a refresh past the test's 20 s waits
    # cannot be: the figure is milliseconds
    assert last and 50 <= int(last.group(1)) < 20_000


def test_quitting_before_the_node_answers_ends_at_once(top_node, home, tmp_path):
    """Keys while the first request waits on the node: s and f redraw at once, q ends
    without waiting for it. With colour, only the top line is bold; the cursor is hidden
    while the screen is up."""
    import pexpect

    node, env = top_node
    err = tmp_path / "stderr"
    child = _spawn_top({**env, "NODECLI_HOME": str(home), "NO_COLOR": ""}, str(err),
                       "--interval", "0.2", "-v", cols=60)
    screen = Screen(child, 60, 24)
    try:
        lines = screen.wait(lambda lines: lines[1].startswith("sort rate"))
        assert lines[0].endswith("…") and "reading" not in lines[0]  # cut to 60 columns
        child.setwinsize(24, 300)  # a resize is drawn at once, at the new width
        screen.screen.resize(24, 300)
        screen.wait(lambda lines: lines[0].endswith(" · !! reading ..."))
        assert screen.lines[1].endswith(f" · {node.server.url()}")  # which node
        rows = screen.screen.buffer
        assert all(rows[0][x].bold for x in range(len(screen.lines[0])))
        assert not any(rows[1][x].bold for x in range(len(screen.lines[1])))
        assert screen.screen.cursor.hidden
        # keys are answered while the node still holds its answer (no refresh to wait for)
        child.send("s")
        screen.wait(lambda lines: lines[1].startswith("sort progress · q quit"))
        child.send("f")
        screen.wait(lambda lines: lines[1].startswith("sort progress · failed only"))
        child.send("q")
        child.expect(pexpect.EOF)  # the node has still not answered
    finally:
        child.close(force=True)
    assert not node.gate.is_set() and child.exitstatus == 0
    assert err.read_text().splitlines()[-1] == "debug: last refresh: 0 transfers in 0 ms"


def test_verbose_lines_wait_until_the_screen_is_left(top_node, home):
    import pexpect

    node, env = top_node
    node.gate.set()
    child = _spawn_top({**env, "NODECLI_HOME": str(home)}, None, "--interval", "0.2", "-v")
    screen = Screen(child, 300, 24)
    try:
        lines = screen.wait("T-TWO")
        screen.wait(lambda lines: len(node.server.seen) >= 4)  # a second refresh, at least
        assert not any("debug:" in line for line in screen.lines), lines
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    after = (screen.raw + child.before).rsplit("\x1b[?1049l", 1)[1]  # the screen left
    said = after.replace("\r\n", "\n").splitlines()
    assert said[-1].startswith("debug: last refresh: 2 transfers in ")
    asked = [line for line in said if "debug: > GET https://" in line]
    assert len(asked) >= 4  # the lines of every refresh, none lost



def test_a_refresh_in_flight_when_the_screen_is_left_says_nothing_after(top_node):
    """In process, the feed of the screen (Feed.running) with -v: its request lines are
    held; the node answers only once the screen is left, and what the refresh then says
    (the answer's lines) is not shown, even after its thread has ended."""
    import io

    from nodecli.cli.app import Terminal
    from nodecli.cli.top import Feed
    from nodecli.http.client import Auth, Endpoint, open_client
    from tests.test_terminal_held import Tty

    node, env = top_node
    err = Tty()
    term = Terminal(verbosity=1, no_color=True, _stdout=io.StringIO(), _stderr=err)
    auth = Auth("bearer", token=env["NODECLI_BEARER"], access_key=env["NODECLI_ACCESS_KEY"])
    client = open_client(Endpoint(env["NODECLI_URL"], auth, cacert=env["NODECLI_CACERT"]),
                         log=term.debug)
    try:
        feed = Feed(client, 0.2)
        with feed.running(term):
            assert node.asked.wait(30)  # the first refresh's request, held by the node
            assert err.getvalue() == ""
        node.gate.set()
        feed.thread.join(30)
        assert not feed.thread.is_alive() and feed.version == 1  # it did end its refresh
    finally:
        node.gate.set()
        client.close()
    said = err.getvalue().splitlines()
    assert said and all(line.startswith("debug: > ") for line in said), said
