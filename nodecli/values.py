"""Raw JSON from the command line: ``--set key=value`` (typed) and ``--body JSON``.

The escape hatch for what interface.md does not show: a user who knows what their
server wants can send it exactly.

``--set`` values are typed the way a shell user means them:

=========================  ==========================
``KEY=true`` / ``false``   JSON boolean
``KEY=null``               JSON null
``KEY=42``, ``KEY=-1.5``   JSON number
``KEY={...}``/``[...]``    that JSON (must be valid)
``KEY="42"``               the JSON string "42" (quote to keep a string)
``KEY=anything else``      the string, as typed
=========================  ==========================

A dotted key (``configuration.activity_event_logging=true``) builds nested objects.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from nodecli.errors import UsageError

# (compiled on first use, by re's cache)
KEY_PART = r"[A-Za-z_][A-Za-z0-9_-]{0,127}"
NUMBER = r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?"
MAX_RAW = 1024 * 1024


def has_surrogates(text: Any) -> bool:
    """Whether ``text`` holds lone surrogates (bytes that were not UTF-8, as Python
    keeps them from argv)."""
    return isinstance(text, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for strict JSON: a repeated key is an error."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def no_constants(name: str) -> Any:
    """``parse_constant`` for strict JSON: NaN and Infinity are not JSON."""
    raise ValueError(f"{name} is not JSON")


def _strict_json(text: str, what: str) -> Any:
    def finite(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise ValueError(f"the number {literal[:40]} is too large to send as JSON")
        return value

    if len(text) > MAX_RAW:
        raise UsageError(f"{what} is larger than {MAX_RAW} bytes")
    try:
        return json.loads(text, object_pairs_hook=unique_keys, parse_constant=no_constants,
                          parse_float=finite)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{what} is not valid JSON: {str(exc)[:120]}") from None


def typed_value(text: str, what: str = "value") -> Any:
    """The JSON value a ``--set`` right-hand side means (see the module doc)."""
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    if re.fullmatch(NUMBER, text):
        number = float(text) if any(c in text for c in ".eE") else int(text)
        if isinstance(number, float) and not math.isfinite(number):
            # 1e999 would go out as "Infinity", which is not JSON
            raise UsageError(f"{what}: the number {text} is too large to send as JSON")
        return number
    if text[:1] in ("{", "[", '"'):
        return _strict_json(text, what)
    if any(ord(c) < 32 or ord(c) == 127 for c in text) or has_surrogates(text):
        raise UsageError(f"{what} contains control characters or bytes that are not UTF-8")
    return text


def parse_assignment(text: str) -> tuple[list[str], Any]:
    """``KEY=VALUE`` -> (key path, typed value); exit 2 with the reason otherwise."""
    if "=" not in text:
        raise UsageError(f"--set takes KEY=VALUE, not {text[:60]!r}")
    key, raw = text.split("=", 1)
    parts = key.split(".")
    if not key or not all(re.fullmatch(KEY_PART, p) for p in parts):
        raise UsageError(f"--set: invalid key {key[:60]!r}: letters, digits, '_' and '-', "
                         "dots for nested objects")
    return parts, typed_value(raw, f"--set {key}")


def build_object(assignments: Iterable[str]) -> dict[str, Any]:
    """The object that ``--set`` assignments describe (later ones win; nested by dots)."""
    obj: dict[str, Any] = {}
    for text in assignments:
        parts, value = parse_assignment(text)
        node = obj
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
    return obj


def parse_body(text: str, what: str = "--body") -> dict[str, Any]:
    """A JSON object given whole on the command line (or read from a file by the CLI)."""
    value = _strict_json(text, what)
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(value), "a number")
        raise UsageError(f"{what} must be a JSON object, not {kind}")
    return value
