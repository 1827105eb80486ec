"""The node's activity log (interface.md 4): what is said to a node about events.

* :mod:`.pages`: filters and query parameters, one page fetched and validated (a
  hostile answer, Link to another host), ``events list`` and ``events get``.
* :mod:`.checkpoint`: where a tail stands, in a locked, atomically saved file.
* :mod:`.sinks`: where a tail's events go (a stream, or a file appended exactly once).
* :mod:`.tail`: ``events tail`` from the start point to the present and on.

Turning events into text lives in :mod:`nodecli.render.events`; the node's version and
settings (GET /info) in :mod:`nodecli.node.info`. The names used by the command layer
are re-exported here.
"""

from nodecli.node.events.checkpoint import Checkpoint, CheckpointFile, node_key, resume_path
from nodecli.node.events.pages import (
    DEFAULT_PAGE_SIZE,
    MAX_COUNT,
    EventFilter,
    ListResult,
    MalformedPage,
    Page,
    event_id,
    event_types,
    fetch_page,
    foreign_host_notice,
    get_event,
    iter_pages,
    list_events,
    parse_events,
    parse_page,
    validate_page_size,
    validate_token,
)
from nodecli.node.events.sinks import FileSink, Sink, StreamSink
from nodecli.node.events.tail import (
    DEFAULT_SINCE,
    GracefulStop,
    TailInterrupted,
    TailOptions,
    TailState,
    check_destinations,
    raw_lines,
    run_tail,
    tail,
)

__all__ = [
    "DEFAULT_PAGE_SIZE", "DEFAULT_SINCE", "MAX_COUNT", "Checkpoint", "CheckpointFile",
    "EventFilter", "FileSink", "GracefulStop", "ListResult", "MalformedPage", "Page", "Sink",
    "StreamSink", "TailInterrupted", "TailOptions", "TailState", "check_destinations",
    "event_id", "event_types", "fetch_page", "foreign_host_notice", "get_event",
    "iter_pages", "list_events", "node_key", "parse_events", "parse_page", "raw_lines",
    "resume_path", "run_tail", "tail", "validate_page_size", "validate_token",
]
