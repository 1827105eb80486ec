"""JSON from a node or a service, read so that any answer is data, never a crash.

The standard decoder turns some valid or common inputs into values the rest of the
program cannot use: an integer of more than 4,300 digits raises (Python's guard against
slow conversions), ``1e999`` becomes ``inf`` and ``NaN``/``Infinity`` (not JSON, but
sent by some servers) become floats that ``json.dumps`` writes back as non-JSON. Here
each of these is kept as the text the server sent (a string), so every output format can
show it and ``-o json`` stays strict JSON. Nesting deeper than the interpreter can
follow is reported as such (:class:`TooDeep`), not as "invalid JSON".
"""

from __future__ import annotations

import json
import math
import re
from typing import Any


class TooDeep(ValueError):
    """The JSON nests deeper than this program reads."""


def int_or_text(text: str) -> int | str:
    """``parse_int`` of a decoder: the integer, or its digits when ``int()`` refuses
    (more than 4,300 of them)."""
    try:
        return int(text)
    except ValueError:  # more digits than int() converts
        return text


def float_or_text(text: str) -> float | str:
    """``parse_float`` of a decoder: the float, or the text when no float holds it
    (``1e999``)."""
    value = float(text)
    return value if math.isfinite(value) else text


def decoder(on_constant: list[str] | None = None) -> json.JSONDecoder:
    """A decoder with the rules above; ``on_constant`` (when given) collects every
    non-JSON constant met, so a caller passing the server's text through can tell that
    text is not strict JSON."""
    def constant(name: str) -> str:  # NaN, Infinity, -Infinity: kept as the word sent
        if on_constant is not None:
            on_constant.append(name)
        return name

    return json.JSONDecoder(parse_int=int_or_text, parse_float=float_or_text,
                            parse_constant=constant)


_DECODER = decoder()


def loads(data: bytes | str) -> Any:
    """Decode ``data`` (UTF-8 when bytes); ValueError when it is not JSON, TooDeep when
    it nests too deeply."""
    try:
        return _DECODER.decode(data.decode("utf-8") if isinstance(data, bytes) else data)
    except RecursionError:
        raise TooDeep("the JSON nests deeper than nodecli reads") from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """JSON text with each lone surrogate (which UTF-8 cannot carry) as its ``\\uXXXX``
    escape; in JSON text they only ever stand inside strings, where that means the same."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def compact(obj: Any) -> str:
    """``obj`` (as this module reads it: no NaN, no infinity) as one line of JSON."""
    return escape_surrogates(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def strings(value: Any) -> list[str]:
    """The strings of a JSON array (anything else in it, or a value that is no array,
    gives nothing): how a field such as an event's ``types`` is read whatever was sent."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
