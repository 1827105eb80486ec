"""``--dry-run``: show what a command would send or write, and change nothing.

The one switch is set by the command line before the command runs. Then a request that
would change a node (anything but GET and HEAD) is not sent, a configuration change is
shown as a diff instead of being saved, a file another program would use (a key pair,
an export, a token file) is not written: each raises :class:`DryRunStop` with what would
have happened, which the entry point prints on stdout with exit 0. Reads still happen
(a path is resolved, a node's version read), and caches and checkpoints are simply not
written; ``nodecli api`` sends nothing at all (the request is the command) and a server
(``emulator serve``, ``exporter``) is not started. Secrets never appear: bodies and
query parameters are shown with the values of secret-looking names as ``***``, at any
depth (inside objects and lists).

:class:`DryRunStop` is not an error: like ``SystemExit`` it derives from
``BaseException``, so that code which handles a failed request (``except
NodecliError``, a fleet's per-node errors, ``operations resolve``'s per-operation
outcome) cannot take the stop for a failure and go on changing things.
"""

from __future__ import annotations

import json
from typing import Any

from nodecli.errors import ExitCode

_active = False
SECRET_WORDS = ("secret", "password", "passphrase", "token", "private", "credential",
                "authorization", "cookie", "api_key", "apikey")


class DryRunStop(BaseException):
    """What the command would have done (printed on stdout, exit 0)."""

    exit_code = ExitCode.OK
    hint: str | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def activate(on: bool = True) -> None:
    global _active
    _active = on


def active() -> bool:
    return _active


def secret_name(name: Any) -> bool:
    return isinstance(name, str) and any(w in name.lower() for w in SECRET_WORDS)


def redacted(data: Any) -> Any:
    """``data`` with the values of secret-looking keys as ``***``, at any depth."""
    if isinstance(data, dict):
        return {k: ("***" if secret_name(k) and v is not None else redacted(v))
                for k, v in data.items()}
    if isinstance(data, list):
        return [redacted(v) for v in data]
    return data


def shown_url(url: str, params: Any = None) -> str:
    """``url`` with ``params`` (pairs or a dict) as its query, and the values of
    secret-looking parameters (in either) as ``***``."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:  # (shown as it is; the request itself would fail)
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    extra = params.items() if isinstance(params, dict) else (params or [])
    pairs += [(str(k), str(v)) for k, v in extra]
    if not pairs:
        return url
    query = urlencode([(k, "***" if secret_name(k) else v) for k, v in pairs],
                      safe="*/:,")
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def request(method: str, url: str, body: bytes | None,
            redact: Any = lambda text: text, params: Any = None) -> DryRunStop:
    """The stop for a request that would change a node."""
    lines = [f"would send: {method} {redact(shown_url(url, params))}"]
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
