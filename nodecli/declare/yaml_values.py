"""A composed YAML document as Python data, for :mod:`nodecli.declare.document`.

Two readings of the node tree PyYAML composes (composing keeps each node's line):
:func:`quick`, which notes nothing and gives up (:class:`Again`) on anything unusual,
and :func:`marked`, which notes each place's line so that an error can name it. Both
spend a :class:`Budget` of values, so aliases cannot make a short text stand for more
values than memory holds.
"""

from __future__ import annotations

from typing import Any

ALIAS_VALUES = 1_000_000  # values YAML aliases may add to a document (see Budget)


class Bad(Exception):
    """A place of the document (``where``: keys and indexes) and what is wrong there."""

    def __init__(self, where: tuple[Any, ...], message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


class TooMany(Exception):
    """The document's values outnumber its :class:`Budget` (``limit``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit


class Budget:
    """Values a reading may still build. YAML aliases repeat a node without repeating
    its text, so ten lines can stand for a billion values ("billion laughs"); a
    document without aliases holds at most two values a byte (``{a,b}``: two keys, two
    empty values), so its budget is twice its size, plus a million for honest aliases."""

    __slots__ = ("left", "limit")

    def __init__(self, text_size: int) -> None:
        self.limit = self.left = 2 * text_size + ALIAS_VALUES

    def take(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise TooMany(self.limit)


def marked(node: Any, where: tuple[Any, ...], lines: dict[tuple[Any, ...], int],
           budget: Budget) -> Any:
    """A composed YAML node as Python data, each place's line noted in ``lines``."""
    import yaml

    budget.take()
    lines[where] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                lines[(*where, "?")] = key_node.start_mark.line + 1
                raise Bad((*where, "?"), "a key must be a word")
            try:
                key = scalar(key_node)
            except Bad as bad:
                lines[(*where, "?")] = key_node.start_mark.line + 1
                raise Bad((*where, "?"), bad.message) from None
            if not isinstance(key, str):
                key = str(key)
            if key in out:
                lines[(*where, key)] = key_node.start_mark.line + 1
                raise Bad((*where, key), "given twice")
            out[key] = marked(value_node, (*where, key), lines, budget)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [marked(v, (*where, i), lines, budget) for i, v in enumerate(node.value)]
    try:
        return scalar(node)
    except Bad as bad:  # an unreadable value: its own place and line
        raise Bad(where, bad.message) from None


class Again(Exception):
    """The quick reading met something only the marked reading can say (or read) right."""


def quick(node: Any, budget: Budget) -> Any:
    """A YAML node as data, no lines noted; Again where :func:`marked` must say where."""
    import yaml

    budget.take()
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _PLAIN_TAGS:
                raise Again
            key = key_node.value
            if key in out:
                raise Again
            out[key] = quick(value_node, budget)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [quick(v, budget) for v in node.value]
    if node.tag in _PLAIN_TAGS:
        return node.value
    try:
        return scalar(node)
    except Bad:
        raise Again from None


_CONSTRUCTOR: list[Any] = []


_PLAIN_TAGS = {"tag:yaml.org,2002:str": str}


def scalar(node: Any) -> Any:
    import yaml

    if node.tag in _PLAIN_TAGS:  # most of a document: text, taken as it is
        return node.value
    if not _CONSTRUCTOR:
        _CONSTRUCTOR.append(yaml.constructor.SafeConstructor())
    constructor = _CONSTRUCTOR[0]
    try:
        return constructor.construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError, OverflowError,  # ValueError: 2026-02-30
            LookupError, AttributeError) as exc:
        # a failed construction leaves the node marked as being built: the next reading
        # of it (the marked one, after the quick one gave up) would be told "recursive
        # node" instead of what is wrong, so the next value gets a fresh constructor
        _CONSTRUCTOR.clear()
        if isinstance(exc, (LookupError, AttributeError)):
            # PyYAML's own constructors fail so on some tagged values, saying nothing of
            # use: `!!bool maybe` (KeyError), `!!int ''` (IndexError), `!!timestamp x`
            # (AttributeError: its pattern did not match)
            why = "not a " + str(node.tag).replace("tag:yaml.org,2002:", "!!")
        else:
            why = (str(exc).splitlines() or ["?"])[0]
        raise Bad((), f"unreadable value: {why}") from None
    finally:
        constructor.constructed_objects.clear()
