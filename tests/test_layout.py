"""The map of the code holds: who may import whom (README, "Architecture").

Read from the source with ``ast`` (imports inside functions count too), so a lazy import
cannot hide a wrong direction.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "nodecli"


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _layer(path: Path) -> str:
    rel = path.relative_to(PKG).parts
    if rel[0] in ("cli", "render", "emulator"):
        return rel[0]
    if rel[0] in ("devtools.py", "__main__.py"):  # tooling and the entry point
        return rel[0]
    return "domain"


def _hits(imports: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in imports if n.split(".")[0] in prefixes
                  or any(n == p or n.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_imports_follow_the_layers(path: Path) -> None:
    layer = _layer(path)
    imports = _imports(path)
    if layer == "domain":
        # the domain returns data and raises errors; turning them into text is not its job
        assert _hits(imports, ("click", "rich", "nodecli.cli", "nodecli.render")) == []
    elif layer == "emulator":
        assert _hits(imports, ("click", "rich", "nodecli.cli", "nodecli.render")) == []
    elif layer == "render":
        assert _hits(imports, ("click", "nodecli.cli", "httpx2", "cryptography")) == []


def test_the_checker_sees_a_wrong_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from nodecli.render import sanitize\n    import rich\n")
    assert _hits(_imports(bad), ("rich", "nodecli.render")) == [
        "nodecli.render", "nodecli.render.sanitize", "rich"]


# One concern per room: a module that outgrows these limits holds more than one concern
# and is split (README, "Architecture").
MAX_LINES = {"domain": 600, "cli": 500, "render": 500, "emulator": 600}


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_no_module_outgrows_its_room(path: Path) -> None:
    limit = MAX_LINES.get(_layer(path))
    if limit is not None:
        lines = path.read_text(encoding="utf-8").count("\n")
        assert lines <= limit, f"{path.relative_to(PKG)}: {lines} lines (at most {limit})"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_circles() -> None:
    """No module imports, directly or through others, a module that imports it back
    (lazy imports inside functions count too: a circle is a knot in the map)."""
    names = {_module_name(p): p for p in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        graph[name] = set()
        for imported in _imports(path):
            while imported and imported not in names:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(imported + "."):
                graph[name].add(imported)
    # a package's __init__ re-exporting its own modules is its face, not a circle
    for name in graph:
        graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}
    circle = find_circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (a path that ends where it starts), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_circle_finder_finds_circles() -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"x": {"x2"}, "x2": {"y"}, "y": {"x2"}}) == ["x2", "y", "x2"]
