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

    def write(self, data: Any, out: IO[str]) -> None:
        """Shape ``data`` (a command's JSON form) onto ``out``."""
        result = self.apply(data)
        if self.fields:
            for item in _items(result):
                out.write("\t".join(_raw(pick(item, p)) for p in self.fields) + "\n")
        elif self.columns:
            _columns(_items(result), self.columns, out, self.no_headers)
        elif self.fmt == "yaml":
            out.write(yaml_text(result))
        elif self.fmt == "raw":
            for item in (result if isinstance(result, list) else [result]):
                out.write(_raw(item) + "\n")
        else:
            from nodecli.render.table import json_text

            out.write(json_text(result, indent=2) + "\n")


def path(text: str) -> tuple[str, ...]:
    """``data.folder_name`` -> ("data", "folder_name"); ``items.0.id`` indexes a list."""
    parts = tuple(text.strip().split("."))
    if not text.strip() or any(p == "" for p in parts) or len(parts) > MAX_PATH_PARTS:
        raise UsageError(f"{text[:60]!r} is not a field path (names joined by dots, "
                         "e.g. data.folder_name)")
    return parts


def pick(item: Any, parts: tuple[str, ...]) -> Any:
    for part in parts:
        if isinstance(item, dict):
            item = item.get(part)
        elif isinstance(item, list) and part.isdigit() and int(part) < len(item):
            item = item[int(part)]
        else:
            return None
    return item


def _items(result: Any) -> list[Any]:
    return result if isinstance(result, list) else [result]


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
