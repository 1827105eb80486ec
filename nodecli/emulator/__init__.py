"""A node + collaboration-service emulator: a real HTTP(S) server for tests and demos.

It implements interface.md well enough to be the test bed of every network feature:
``server`` holds the HTTP plumbing (routing, TLS, auth, fault injection), ``state``
the node's data, and feature modules register their routes (``events``,
``operations``, ``node``).
"""
