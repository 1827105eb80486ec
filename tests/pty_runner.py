"""nodecli in a real pseudo-terminal, many times, without paying a Python start-up each
time: one driver process, started in a pty like any interactive nodecli, imports the
entry point once and then forks a child for each command. The child is the process the
user would have: its stdout, stdin and controlling terminal are the pty (at the size the
test set just before), its environment and working folder are the command's, its stderr
is a file, and it runs ``python -m nodecli``'s own ``main()`` to its normal exit
(atexit handlers and flushes included). Only the interpreter's start and the import of
``nodecli.cli.main`` and of the root group (neither reads the environment on import;
every group's own module is still imported by the child) are shared.

The test side sends each command over a Unix socket; the driver waits for the child,
then writes a marker to the pty (after everything the child wrote) and the exit status
to the socket."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import tempfile
from typing import Any

DRIVER = r"""
import json, os, socket, sys, traceback

import nodecli.cli.main
import nodecli.cli.root

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
requests = sock.makefile("rb")
for line in requests:
    req = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            requests.close()
            sock.close()
            err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(err, 2)
            os.close(err)
            os.environ.clear()
            os.environ.update(req["env"])
            import time
            time.tzset()
            os.chdir(req["cwd"])
            sys.argv = [req["argv0"], *req["argv"]]
            nodecli.cli.main.main()
        except SystemExit:
            raise
        except BaseException:
            traceback.print_exc()
            os._exit(70)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    sys.stdout.write("\x1e%d\x1e\n" % req["id"])
    sys.stdout.flush()
    sock.sendall((json.dumps({"id": req["id"], "code": os.waitstatus_to_exitcode(status)})
                  + "\n").encode())
"""

MARK = re.compile("\x1e(\\d+)\x1e\r\n")


class PtyRunner:
    """``run(argv, env, columns, rows=...)``: the exit status, the stdout shown in the
    pty (CRLF made LF, escape sequences kept) and the stderr of ``nodecli ARGV``."""

    def __init__(self, repo_root: str, env: dict[str, str]) -> None:
        import pexpect

        self._dir = tempfile.mkdtemp(prefix="nodecli-pty-")  # short: AF_UNIX paths
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(os.path.join(self._dir, "s"))
        listener.listen(1)
        listener.settimeout(60)
        self._repo_root = repo_root
        self._argv0 = os.path.join(repo_root, "nodecli", "__main__.py")
        self._serial = 0
        self.child = pexpect.spawn(sys.executable, ["-c", DRIVER,
                                                    os.path.join(self._dir, "s")],
                                   env=env, cwd=repo_root, encoding="utf-8", timeout=60,
                                   dimensions=(24, 80))
        try:
            self._conn, _ = listener.accept()
        except BaseException:
            self.close()
            raise
        finally:
            listener.close()
        self._conn.settimeout(60)
        self._answers = self._conn.makefile("rb")

    def run(self, argv: list[str], env: dict[str, str], columns: int, stderr_path: str, *,
            rows: int = 200, cwd: str | None = None) -> tuple[int, str, str]:
        self._serial += 1
        self.child.setwinsize(rows, columns)
        self._conn.sendall((json.dumps({
            "id": self._serial, "argv": argv, "env": env, "cwd": cwd or self._repo_root,
            "stderr": stderr_path, "argv0": self._argv0}) + "\n").encode())
        self.child.expect(MARK)
        assert self.child.match.group(1) == str(self._serial), self.child.match.group(0)
        text = self.child.before or ""
        answer: dict[str, Any] = json.loads(self._answers.readline())
        assert answer["id"] == self._serial, answer
        with open(stderr_path, encoding="utf-8", errors="replace") as fh:
            err = fh.read()
        return answer["code"], text.replace("\r\n", "\n"), err

    def close(self) -> None:
        for closing in (getattr(self, "_answers", None), getattr(self, "_conn", None)):
            if closing is not None:
                closing.close()
        if self.child.isalive():
            self.child.close(force=True)
        shutil.rmtree(self._dir, ignore_errors=True)
