"""The node's activity log (interface.md 4): what is said to a node about events.

* :mod:`.pages`: filters and query parameters, one page fetched and validated (a
  hostile answer, Link to another host), ``events list`` and ``events get``.
* :mod:`.checkpoint`: where a tail stands, in a locked, atomically saved file.
* :mod:`.sinks`: where a tail's events go (a stream, or a file appended exactly once).
* :mod:`.tail`: ``events tail`` from the start point to the present and on.

Turning events into text lives in :mod:`nodecli.render.events`; the node's version and
settings (GET /info) in :mod:`nodecli.node.info`. The names used by the command layer
are re-exported here, each imported on first use.
"""

import importlib
from typing import Any

# name -> submodule: imported on first use, so ``events list`` loads pages.py alone
# (not the tail, its signals and checkpoints)
_WHERE = {
    "Checkpoint": "checkpoint",
    "CheckpointFile": "checkpoint",
    "DEFAULT_PAGE_SIZE": "pages",
    "DEFAULT_SINCE": "tail",
    "EventFilter": "pages",
    "FileSink": "sinks",
    "GracefulStop": "tail",
    "ListResult": "pages",
    "MAX_COUNT": "pages",
    "MalformedPage": "pages",
    "Page": "pages",
    "Sink": "sinks",
    "StreamSink": "sinks",
    "TailInterrupted": "tail",
    "TailOptions": "tail",
    "TailState": "tail",
    "check_destinations": "tail",
    "event_id": "pages",
    "event_types": "pages",
    "fetch_page": "pages",
    "foreign_host_notice": "pages",
    "get_event": "pages",
    "iter_pages": "pages",
    "list_events": "pages",
    "node_key": "checkpoint",
    "parse_events": "pages",
    "parse_page": "pages",
    "raw_lines": "tail",
    "resume_path": "checkpoint",
    "run_tail": "tail",
    "validate_page_size": "pages",
    "validate_token": "pages",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once: later uses are plain attribute reads
    return value


__all__ = sorted(_WHERE)  # (every name above, each from its submodule)
