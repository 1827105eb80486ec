"""The node's activity log: what is said to a node about events.

* :mod:`.pages`: filters and query parameters, one page fetched and validated (a
  hostile answer, Link to another host), ``events list`` and ``events get``.
* :mod:`.checkpoint`: where a tail stands, in a locked, atomically saved file.
* :mod:`.sinks`: where a tail's events go (a stream, or a file appended exactly once).
* :mod:`.tail`: ``events tail`` from the start point to the present and on.

Turning events into text lives in :mod:`nodecli.render.events`; the node's version and
settings (GET /info) in :mod:`nodecli.node.info`.
"""
