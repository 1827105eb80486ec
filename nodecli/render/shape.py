"""Output shaped from a command's JSON form: ``--query`` (JMESPath), ``--field PATH``
(raw values, tab-separated), ``-o yaml``, ``-o raw`` and ``-o columns=PATH,...``.

Every value that came from a node is data: text shown on a terminal passes through
:func:`~nodecli.render.text.sanitize` (``--field`` and columns: one value per cell,
controls as ``?``), JSON through the strict writer, YAML through the safe dumper.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from nodecli.errors import UsageError

MAX_PATH_PARTS = 32


@dataclass(frozen=True, slots=True)
class Shape:
    fmt: str  # "json" (a query's result), "yaml", "raw", or "columns=..."
    query: Any  # a compiled JMESPath expression, or None
    fields: tuple[tuple[str, ...], ...]
    columns: tuple[tuple[str, ...], ...]
    no_headers: bool = False

    @classmethod
    def make(cls, fmt: str, query: str | None, fields: tuple[str, ...],
             no_headers: bool = False) -> Shape:
        compiled = None
        if query is not None:
            import jmespath  # type: ignore[import-untyped]
            from jmespath.exceptions import JMESPathError  # type: ignore[import-untyped]

            try:
                compiled = jmespath.compile(query)
            except JMESPathError as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise UsageError(f"--query: {first}") from None
        columns: tuple[tuple[str, ...], ...] = ()
        if fmt.startswith("columns="):
            columns = tuple(path(p) for p in fmt[len("columns="):].split(","))
            if not columns:
                raise UsageError("-o columns= needs at least one PATH")
        kind = fmt if fmt in ("yaml", "raw") or fmt.startswith("columns=") else "json"
        return cls(kind, compiled, tuple(path(f) for f in fields), columns, no_headers)

    def apply(self, data: Any) -> Any:
        if self.query is None:
            return data
        from jmespath.exceptions import JMESPathError

        try:
            return self.query.search(data)
        except JMESPathError as exc:
            raise UsageError(f"--query: {exc}") from None

    def write(self, data: Any, out: IO[str], items: str | None = None) -> None:
        """Shape ``data`` (a command's JSON form) onto ``out``.

        ``items``: the key under which an object form holds its list (``events list``:
        ``events``): ``--field`` and ``-o columns=`` then take each item of that list, as
        they do on a list, unless ``--query`` reshaped the result first.
        """
        result = self.apply(data)
        if self.fields:
            _fields(result if self.query is not None else data, self.fields,
                    None if self.query is not None else items, out)
        elif self.columns:
            rows = _rows(result, self.columns, None if self.query is not None else items)
            _columns(rows, self.columns, out, self.no_headers)
        elif self.fmt == "yaml":
            out.write(yaml_text(result))
        elif self.fmt == "raw":
            for item in (result if isinstance(result, list) else [result]):
                out.write(_raw(item) + "\n")
        else:
            from nodecli.render.table import json_text

            out.write(json_text(result, indent=2) + "\n")


def path(text: str) -> tuple[str, ...]:
    """``data.folder_name`` -> ("data", "folder_name"); a part that is a number indexes
    a list (``capabilities.0.name``: the first capability's name)."""
    parts = tuple(text.strip().split("."))
    if not text.strip() or any(p == "" for p in parts) or len(parts) > MAX_PATH_PARTS:
        raise UsageError(f"{text[:60]!r} is not a field path (names joined by dots, "
                         "e.g. data.folder_name or capabilities.0.name)")
    return parts


class _Missing:
    """What a path names in an item that does not have it (a JSON null is a value)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def find(item: Any, parts: tuple[str, ...]) -> Any:
    """The value at ``parts`` in ``item``, or :data:`MISSING` when there is none."""
    for part in parts:
        if isinstance(item, dict) and part in item:
            item = item[part]
        elif isinstance(item, list) and part.isdigit() and part.isascii() \
                and int(part) < len(item):
            item = item[int(part)]
        else:
            return MISSING
    return item


def pick(item: Any, parts: tuple[str, ...]) -> Any:
    """The value at ``parts`` in ``item``; None when there is none."""
    found = find(item, parts)
    return None if found is MISSING else found


def _items(result: Any) -> list[Any]:
    return result if isinstance(result, list) else [result]


def _rows(data: Any, paths: tuple[tuple[str, ...], ...], items: str | None) -> list[Any]:
    """What one line (one row) each is printed for: the items of a list, or of the list
    an object holds under ``items``, unless every path names one of that object's own
    fields (``next_iteration_token``, or ``events`` itself): then the object, once."""
    if items is not None and isinstance(data, dict) and isinstance(data.get(items), list):
        return [data] if all(p[0] in data for p in paths) else data[items]
    return _items(data)


def _fields(data: Any, fields: tuple[tuple[str, ...], ...], items: str | None,
            out: IO[str]) -> None:
    """``--field``: one tab-separated line per item of a list (of the list an object
    form holds under ``items``), or one line for one object. A path found in no item is
    an error naming it (exit 2): nothing is printed then, not a column of empty lines.
    On an object form that holds a list, paths that all name the object's own fields
    (``events list --field next_iteration_token``) print those values once."""
    rows = _rows(data, fields, items)
    values = [[find(row, p) for p in fields] for row in rows]
    for i, parts in enumerate(fields):
        if rows and all(v[i] is MISSING for v in values):
            shown = ".".join(parts)
            keys = sorted({k for row in rows[:50] if isinstance(row, dict) for k in row})
            more = ", ..." if len(keys) > 12 else ""
            have = f" (its fields: {', '.join(k[:40] for k in keys[:12])}{more})" \
                if keys else ""
            raise UsageError(f"--field {shown[:80]!r} matches nothing in the result{have}")
    for v in values:
        out.write("\t".join(_raw(None if x is MISSING else x) for x in v) + "\n")


def _raw(value: Any) -> str:
    """A value as a script wants it: text as it is, numbers and booleans as JSON,
    null as nothing, objects and lists as compact JSON; controls shown as ``?``."""
    from nodecli.render.table import json_text
    from nodecli.render.text import sanitize

    if value is None:
        return ""
    if isinstance(value, str):
        return sanitize(value)
    return sanitize(json_text(value))


def _columns(items: list[Any], columns: tuple[tuple[str, ...], ...], out: IO[str],
             no_headers: bool) -> None:
    from nodecli.render.table import Column, render_plain_table

    keys = [".".join(c) for c in columns]
    rows = [{k: pick(item, c) for k, c in zip(keys, columns, strict=True)} for item in items]
    render_plain_table(rows, [Column(k, k) for k in keys], out, headers=not no_headers)


def yaml_text(data: Any) -> str:
    """YAML by the safe dumper (block style, keys in their order, unicode as it is)."""
    import yaml

    from nodecli.render.table import finite

    try:
        return str(yaml.safe_dump(finite(data), sort_keys=False, allow_unicode=True,
                                  default_flow_style=False, width=1000))
    except RecursionError:
        raise UsageError("the result nests too deeply to write as YAML: use -o json") \
            from None
