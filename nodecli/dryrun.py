"""``--dry-run``: show what a command would send or write, and change nothing.

The one switch is set by the command line before the command runs. Then a request that
would change a node (anything but GET and HEAD) is not sent, a configuration change is
shown as a diff instead of being saved, a file another program would use (a key pair,
an export, a token file) is not written: each raises :class:`DryRunStop` with what would
have happened, which the entry point prints on stdout with exit 0. Reads still happen
(a path is resolved, a node's version read), and caches and checkpoints are simply not
written. Secrets never appear: bodies are shown with secret fields as ``***``.
"""

from __future__ import annotations

import json
from typing import Any

from nodecli.errors import ExitCode, NodecliError

_active = False
SECRET_WORDS = ("secret", "password", "token", "private")


class DryRunStop(NodecliError):
    """What the command would have done (printed on stdout, exit 0)."""

    exit_code = ExitCode.OK


def activate(on: bool = True) -> None:
    global _active
    _active = on


def active() -> bool:
    return _active


def redacted(data: Any) -> Any:
    """``data`` with the values of secret-looking keys as ``***``."""
    if isinstance(data, dict):
        return {k: ("***" if isinstance(k, str) and any(w in k.lower() for w in SECRET_WORDS)
                    and v is not None else redacted(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [redacted(v) for v in data]
    return data


def request(method: str, url: str, body: bytes | None,
            redact: Any = lambda text: text) -> DryRunStop:
    """The stop for a request that would change a node."""
    lines = [f"would send: {method} {redact(url)}"]
    if body:
        try:
            shown = json.dumps(redacted(json.loads(body)), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            shown = f"({len(body)} bytes)"
        lines.append(redact(shown))
    lines.append("nothing was sent (--dry-run)")
    return DryRunStop("\n".join(lines))


def config_change(path: Any, before: bytes | None, after: bytes) -> DryRunStop:
    """The stop for a configuration change: a unified diff (password hashes as ***)."""
    import difflib
    import hashlib
    import re

    def hide(m: re.Match[str]) -> str:  # a changed hash still shows as a change
        tag = hashlib.sha256(m.group(2).encode()).hexdigest()[:8]
        return f'{m.group(1)}"*** ({tag})"'

    def lines(raw: bytes | None) -> list[str]:
        text = (raw or b"").decode("utf-8", "replace")
        return [re.sub(r'^(\s*password\s*=\s*)(.*)$', hide, line)
                for line in text.splitlines(keepends=True)]

    diff = "".join(difflib.unified_diff(lines(before), lines(after), f"{path}",
                                        f"{path} (after)"))
    return DryRunStop(f"would change {path}:\n{diff.rstrip()}\n"
                      "nothing was written (--dry-run)")


def write(path: Any, size: int, mode: int) -> DryRunStop:
    return DryRunStop(f"would write {path} ({size} bytes, mode {oct(mode)[2:]}); nothing was "
                      "written (--dry-run)")
