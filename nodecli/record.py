"""Small value classes without ``@dataclass``.

``@dataclass`` writes and compiles each class's methods when its module is imported:
about half a millisecond per class, paid at every start of every command. The records
here compare and print by the fields their class names in ``_FIELDS``.
"""

from __future__ import annotations

from typing import Any


class Record:
    """Equality and repr by the fields named in ``_FIELDS``, like a dataclass's.

    Mutable records have no hash (as with ``@dataclass(eq=True)``)."""

    __slots__ = ()
    _FIELDS: tuple[str, ...] = ()
    #: fields left out of repr (secrets), as ``field(repr=False)`` would
    _NO_REPR: frozenset[str] = frozenset()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS
                          if name not in self._NO_REPR)
        return f"{type(self).__qualname__}({inner})"

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` (as ``dataclasses.replace``; the class's ``__init__``
        takes every field by name, and refuses unknown ones with TypeError)."""
        values = {name: getattr(self, name) for name in self._FIELDS}
        values.update(changes)
        return type(self)(**values)


class FrozenRecord(Record):
    """A record whose fields cannot change once built, hashable by them (as with
    ``@dataclass(frozen=True)``). ``__init__`` sets the fields with :meth:`_set`."""

    __slots__ = ()

    def _set(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of {type(self).__name__}")

    def __hash__(self) -> int:
        return hash(self._values())
