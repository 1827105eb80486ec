"""What is said to a node beyond info and events: access keys, files, permissions.

Domain only (no click, no rich): functions take a :class:`nodecli.http.Client` opened
on the node and return plain data.
"""
