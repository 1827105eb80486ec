"""What is said to a node beyond info and events: access keys, files, permissions.

Domain only (no click, no rich): functions take a :class:`nodecli.http.client.Client` opened
on the node and return plain data.
"""

from typing import Any


def listed(data: Any, key: str, what: str) -> list[dict[str, Any]]:
    """The objects of a list answer. A node may wrap the list (``{key: [...]}`` or
    ``{"items": [...]}``); entries that are not objects are skipped."""
    from nodecli.errors import RemoteError

    if isinstance(data, dict):
        data = data.get(key) or data.get("items") or []
    if not isinstance(data, list):
        raise RemoteError(f"{what} did not answer with a list")
    return [x for x in data if isinstance(x, dict)]
