"""The parse cache of YAML documents: the last ones read, checked, for their exact bytes.

Reading a YAML document is most of what ``diff -f`` of a large one costs, even with
libyaml: PyYAML makes a Python node, with two marks and a resolver call, for every
scalar (10,000 node users are about 90,000 nodes; libyaml alone parses them in a
twentieth of the time). The config has the same trouble with TOML and keeps its parsed
table next to the exact bytes it came from (:mod:`nodecli.config.cache`); a document
read through this module is kept the same way, by the same code, in
``STATE/declare/document-HASH.cache`` (HASH: of the document's path): its checked
form (``Document.to_dict()``, what a saved plan holds). Documents read in turn (drift
checks of production and staging from cron, a diff then an apply) each keep theirs;
past 16 files, those written longest ago go. Reading the same bytes again checks that
plain data again instead of composing YAML. A cache for other
bytes, of another nodecli, torn or damaged is not used; a JSON document (the json
module reads it quickly) and a dry run write none. It lives in the private state
folder, 0600, and holds what the document holds: whoever can write it can write
config.toml too.
"""

from __future__ import annotations

from pathlib import Path

from nodecli.declare.document import Document, from_data, parse
from nodecli.errors import UsageError

KEEP = 16


def cache_file(folder: Path, source: str) -> Path:
    """The cache of the document ``source`` names (a path, or ``<stdin>``)."""
    from hashlib import sha256

    return folder / f"document-{sha256(source.encode('utf-8', 'replace')).hexdigest()[:16]}.cache"


def parse_cached(raw: bytes, source: str, base_dir: str, folder: Path | None) -> Document:
    """:func:`~nodecli.declare.document.parse`, through the cache in ``folder``."""
    if folder is None or raw.lstrip()[:1] == b"{":
        return parse(raw, source, base_dir)
    from nodecli.config import cache as parse_cache

    cache = cache_file(folder, source)
    data = parse_cache.load(cache, raw)
    if data is not None:
        try:
            doc = from_data(data, source)
        except (UsageError, RecursionError):
            pass  # (what another nodecli kept: these bytes are read again)
        else:
            doc.base_dir = base_dir
            return doc
    doc = parse(raw, source, base_dir)
    parse_cache.save(cache, raw, doc.to_dict())  # (a quiet write: none in a dry run)
    _prune(folder, cache)
    return doc


def _prune(folder: Path, kept: Path) -> None:
    """At most KEEP caches: ``kept`` (just written) and those written most recently."""
    from nodecli import dryrun

    if dryrun.active():
        return
    try:
        others = sorted((p for p in folder.glob("document-*.cache") if p != kept),
                        key=lambda p: p.stat().st_mtime_ns)
        for old in others[:max(0, len(others) - (KEEP - 1))]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # (another nodecli pruning beside this one, a folder never made)
