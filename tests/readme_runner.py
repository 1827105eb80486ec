"""Run the shell examples of README.md and of the guides it lists, in order, as a
newcomer would, in a throwaway home.

The documents are README.md, then every ``docs/*.md`` page its "Where to read next"
section links to, in that order (the guides, then the reference and the development
page). Every fenced
block whose info string is ``sh`` (or ``bash``/``shell``) is run, in that order, by ONE
non-interactive bash process, so variables, the current folder
and background jobs (``nodecli emulator serve &``) carry over from block to block as they
do in a terminal. ``$HOME`` is a fresh temporary folder (so ``~`` is too), no
``NODECLI_*`` variable is set, and ``nodecli`` is the one of the running interpreter.

A block fails when a command in it fails (``set -e -o pipefail`` semantics, through an
ERR trap that names the block, its document and its line). An HTML comment on the line
just before a block changes that:

* ``<!-- readme-test: skip (why) -->``: not run (it needs a real remote node, say); the
  reason is mandatory and listed in the test output.
* ``<!-- readme-test: exit=N -->``: the block shows a refusal; its LAST command must exit
  N (other commands in it must succeed).

Everything else that is not ``sh`` (``json``, ``toml``, plain fences) is documentation.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)\s*(.*)$")
DIRECTIVE = re.compile(r"<!--\s*readme-test:\s*(.*?)\s*-->")
RUN_LANGS = {"sh", "bash", "shell"}
FAIL_CODE = 97  # the runner's own exit status for "a block failed"


DOC_LINK = re.compile(r"\]\((docs/[A-Za-z0-9_-]+\.md)(?:#[^)]*)?\)")


@dataclass
class Block:
    index: int
    line: int  # 1-based line of the opening fence in its document
    text: str
    skip: str | None = None
    expect_exit: int | None = None
    doc: str = "README.md"


def documents(readme: Path) -> list[Path]:
    """README.md and the docs/ pages it links to, in the order of their first link in
    its "Where to read next" section (the whole text when it has none)."""
    text = readme.read_text(encoding="utf-8")
    start = text.find("\n## Where to read next")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[start:end if end >= 0 else len(text)]
    order = [readme]
    for m in DOC_LINK.finditer(text):
        page = readme.parent / m.group(1)
        if page not in order:
            order.append(page)
    return order


class ReadmeError(ValueError):
    """README.md breaks the runner's conventions (unterminated fence, bad directive)."""


def parse_blocks(readme: str, doc: str = "README.md", first: int = 1) -> list[Block]:
    """The runnable blocks of ``readme`` (the text of ``doc``), in order, with their
    directives, numbered from ``first``."""
    lines = readme.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip()) if lines[i].startswith("```") else None
        if not m:
            i += 1
            continue
        lang, start = m.group(1).lower(), i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise ReadmeError(f"{doc}:{start + 1}: code fence is never closed")
        i += 1
        if lang not in RUN_LANGS:
            continue
        block = Block(first + len(blocks), start + 1, "\n".join(body), doc=doc)
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        d = DIRECTIVE.search(lines[prev]) if prev >= 0 else None
        if d:
            words = d.group(1)
            if words.startswith("skip"):
                reason = words[4:].strip(" :()")
                if not reason:
                    raise ReadmeError(f"{doc}:{prev + 1}: a skip needs a reason")
                block.skip = reason
            elif (e := re.fullmatch(r"exit\s*=\s*(\d{1,3})", words)):
                block.expect_exit = int(e.group(1))
            else:
                raise ReadmeError(f"{doc}:{prev + 1}: unknown readme-test directive "
                                  f"{words!r} (skip (why) | exit=N)")
        blocks.append(block)
    return blocks


def build_script(blocks: list[Block]) -> str:
    """One bash script running every block, failing on the first unexpected status."""
    out = [
        "set -E -o pipefail",
        "__blk=0; __line=0; __doc=README.md",
        f"__fail() {{ echo \"@@readme-fail block=$__blk doc=$__doc line=$__line status=$1\" >&2; "
        f"exit {FAIL_CODE}; }}",
        "trap '__fail $?' ERR",
        # background jobs (an emulator) end with the run, whichever way it ends
        "trap '__rc=$?; trap - ERR; __j=$(jobs -p); [ -z \"$__j\" ] || kill $__j 2>/dev/null;"
        " wait 2>/dev/null; exit $__rc' EXIT",
    ]
    for b in blocks:
        if b.skip is not None:
            continue
        marker = f"@@readme-block {b.index} {b.doc} line {b.line}"
        out.append(f"__blk={b.index}; __line={b.line}; __doc={shlex.quote(b.doc)}")
        out.append(f"echo {shlex.quote(marker)}; echo {shlex.quote(marker)} >&2")
        if b.expect_exit is None:
            out.append(b.text)
        else:
            # the refusal shown last in the block must exit N; earlier lines must pass
            body = b.text.rstrip("\n").split("\n")
            last = len(body)
            while last > 0 and (not body[last - 1].strip()
                                or body[last - 1].lstrip().startswith("#")):
                last -= 1
            head, tail = body[: last - 1], body[last - 1:]
            out.extend(head)
            out.append("trap - ERR")
            out.extend(tail)
            out.append(f"__rc=$?; trap '__fail $?' ERR; [ \"$__rc\" -eq {b.expect_exit} ] "
                       f"|| {{ echo \"@@readme-fail block={b.index} doc={b.doc} line={b.line} "
                       f"status=$__rc expected={b.expect_exit}\" >&2; exit {FAIL_CODE}; }}")
    out.append("echo @@readme-done")
    return "\n".join(out) + "\n"


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    # what the run left in $HOME and in the folder it started in (the runner's own
    # script aside): the README's walk must keep its files in $NODECLI_HOME and remove it
    leftovers: list[str] | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and "@@readme-done" in self.stdout

    def failure(self) -> str:
        m = re.search(r"@@readme-fail block=(\d+) doc=(\S+) line=(\d+) status=(\d+)"
                      r"(?: expected=(\d+))?",
                      self.stderr)
        where = "the documentation: the run"
        if m:
            where = f"{m.group(2)}:{m.group(3)} (sh block {m.group(1)})"
            what = f"a command exited {m.group(4)}"
            if m.group(5):
                what = f"the last command exited {m.group(4)}, not {m.group(5)}"
        elif self.timed_out:
            what = "timed out"
        else:
            what = f"bash exited {self.returncode}"
        tail_err = "\n".join(_last_block(self.stderr).splitlines()[-25:])
        tail_out = "\n".join(_last_block(self.stdout).splitlines()[-15:])
        return (f"{where}: {what}.\n--- stderr of that block ---\n{tail_err}\n"
                f"--- stdout of that block ---\n{tail_out}\n"
                "(A block that shows a refusal needs '<!-- readme-test: exit=N -->' on the "
                "line before it; one that cannot run here '<!-- readme-test: skip (why) -->'.)")


def _last_block(text: str) -> str:
    idx = text.rfind("@@readme-block")
    return text[idx:] if idx >= 0 else text


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a newcomer: a fresh HOME, nodecli on PATH, nothing of ours."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NODECLI_", "XDG_", "PYTHON", "PYTEST", "HYPOTHESIS"))}
    env["HOME"] = str(home)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "100"
    env["LC_ALL"] = "C.UTF-8"
    return env


def all_blocks(readme: Path) -> list[Block]:
    """The blocks of README.md and of every page it links to, in running order."""
    blocks: list[Block] = []
    for doc in documents(readme):
        name = doc.relative_to(readme.parent).as_posix()
        blocks += parse_blocks(doc.read_text(encoding="utf-8"), name, len(blocks) + 1)
    return blocks


def run_readme(readme: Path, *, timeout: float = 600.0) -> tuple[list[Block], Result]:
    blocks = all_blocks(readme)
    script = build_script(blocks)
    with tempfile.TemporaryDirectory(prefix="readme-home-") as tmp:
        home = Path(tmp)
        work = home / "work"
        work.mkdir()
        (home / "readme.sh").write_text(script, encoding="utf-8")
        proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc", str(home / "readme.sh")], cwd=work,
            env=clean_env(home), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        finally:
            # background jobs the examples started (an emulator) end with the run
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        left = sorted(str(p.relative_to(home)) for p in home.rglob("*")
                      if p not in (home / "readme.sh", work))
        return blocks, Result(proc.returncode, out, err, timed_out, left)


if __name__ == "__main__":  # python tests/readme_runner.py [README.md]: run them by hand
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    blocks, result = run_readme(path)
    skipped = [b for b in blocks if b.skip]
    print(f"{len(blocks) - len(skipped)} blocks run, {len(skipped)} skipped")
    if not result.ok:
        print(result.failure())
        sys.exit(1)
