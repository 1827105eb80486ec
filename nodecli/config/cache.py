"""The one parse cache of ``config.toml``: its parsed table, for exactly its bytes.

Parsing TOML in pure Python is most of what a command that reads a large config does;
the cache keeps the parsed table (``marshal``, which reads back plain data without a
parser) next to the exact bytes it came from. It is only a shortcut: a cache for other
bytes or another version of nodecli, damaged or unreadable is ignored. What it gives is
validated by the model like a parse would be, except the format of each password hash,
which was checked when the table was cached. It lives in the private state folder, 0600:
it holds what config.toml holds (password hashes), and whoever can write it can write
config.toml.
"""

from __future__ import annotations

import contextlib
import marshal
from binascii import crc32
from pathlib import Path
from typing import Any

from nodecli import __version__

# The version of nodecli is part of the key: a table cached by another version may not
# pass this version's checks, and the model trusts the hash formats the cache gives. The
# number goes up whenever the checks of the model change.
MAGIC = b"nodecli-config-cache 6 " + __version__.encode("ascii") + b"\n"


def load(path: Path, raw: bytes) -> dict[str, Any] | None:
    """The parsed table cached for ``raw``; None when there is none (never an error)."""
    from nodecli.fsutil import read_regular

    try:
        blob = read_regular(path, 4 * len(raw) + 1024)
    except (OSError, ValueError):
        return None
    head = len(MAGIC)
    end = blob.find(b"\n", head, head + 40)
    fields = blob[head:end].split(b" ")
    if not blob.startswith(MAGIC) or end < 0 or len(fields) != 2 or \
            not all(f.isdigit() for f in fields) or int(fields[0]) != len(raw):
        return None
    start = end + 1
    if not blob.startswith(raw, start):  # (compared in place)
        return None
    payload = memoryview(blob)[start + len(raw):]
    if crc32(payload) != int(fields[1]):
        return None  # torn or damaged
    try:
        # (only plain data is used: what is not a table validating as a config is
        # ignored; the file is private to its owner, like config.toml)
        data = marshal.loads(payload)  # noqa: S302
    except (EOFError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def save(path: Path, raw: bytes, data: dict[str, Any]) -> None:
    """Cache ``data``, the parsed table of ``raw``. Best effort, not synced: a cache that
    is missing, stale or torn is simply not used."""
    from nodecli.fsutil import atomic_write, ensure_private_dir

    with contextlib.suppress(OSError, ValueError):
        payload = marshal.dumps(data)
        ensure_private_dir(path.parent)
        head = MAGIC + b"%d %d\n" % (len(raw), crc32(payload))
        atomic_write(path, head + raw + payload, durable=False, quiet=True)
