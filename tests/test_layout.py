"""The map of the code holds: every module belongs to one part of layout.toml, and imports
only what its part may import (docs/development.md, "Architecture").

Read from the source with ``ast`` (imports inside functions count too), so a lazy import
cannot hide a wrong direction.
"""

from __future__ import annotations

import ast
import tomllib
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "nodecli"


@cache
def layout() -> dict[str, dict]:
    return tomllib.loads((REPO / "layout.toml").read_text(encoding="utf-8"))["parts"]


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def part_of(rel: str) -> str | None:
    """The part whose path names ``rel`` most closely (a file, or a folder it is in)."""
    best: tuple[int, str] | None = None
    for name, part in layout().items():
        for entry in part["paths"]:
            folder = entry.endswith("/")
            if rel == entry or (folder and rel.startswith(entry)):
                if best is None or len(entry) > best[0]:
                    best = (len(entry), name)
    return best[1] if best else None


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def module_file(name: str) -> str | None:
    """The file of the nodecli module ``name`` names (its longest existing prefix)."""
    parts = name.split(".")
    while parts and parts[0] == "nodecli":
        base = REPO.joinpath(*parts)
        if base.with_suffix(".py").is_file():
            return _rel(base.with_suffix(".py"))
        if (base / "__init__.py").is_file():
            return _rel(base / "__init__.py")
        parts = parts[:-1]
    return None


def allowed(importer: str, target: str) -> bool:
    """May a module of part ``importer`` import the file ``target``?"""
    mine, theirs = part_of(importer), part_of(target)
    if mine == theirs:
        return True
    entries = layout()[mine]["imports"]
    return theirs in entries or target in entries


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_every_module_is_on_the_map_and_imports_what_its_part_may(path: Path) -> None:
    rel = _rel(path)
    part = part_of(rel)
    assert part is not None, f"{rel} is in no part of layout.toml"
    imports = _imports(path)
    wrong = sorted({f"{name} ({part_of(target)})" for name in imports
                    if name.startswith("nodecli.") and (target := module_file(name))
                    and not allowed(rel, target)})
    assert wrong == [], f"{rel} ({part}) may not import {wrong}"
    never = layout()[part].get("never", [])
    bad = sorted(n for n in imports if n.split(".")[0] in never)
    assert bad == [], f"{rel} ({part}) must not import {bad}"


def test_the_map_names_real_places_and_keeps_the_emulator_out() -> None:
    parts = layout()
    for name, part in parts.items():
        assert part["holds"], name
        for entry in part["paths"]:
            assert (REPO / entry).exists(), f"{name}: {entry} does not exist"
        for entry in part["imports"]:
            assert entry in parts or (REPO / entry).is_file(), f"{name}: {entry}?"
    # the product never imports the emulator: only the emulator's own command may
    reaching = sorted(n for n, p in parts.items() if "emulator" in p["imports"])
    assert reaching == ["emulator_command"]


def test_the_checker_sees_a_wrong_import(tmp_path: Path) -> None:
    assert allowed("nodecli/cli/users.py", "nodecli/users/manage.py")
    assert not allowed("nodecli/users/manage.py", "nodecli/cli/users.py")
    assert not allowed("nodecli/node/info.py", "nodecli/emulator/state.py")
    assert not allowed("nodecli/render/events.py", "nodecli/node/events/pages.py")
    assert module_file("nodecli.http.client.Client") == "nodecli/http/client.py"
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from nodecli.render import sanitize\n    import rich\n")
    assert {"nodecli.render", "nodecli.render.sanitize", "rich"} <= _imports(bad)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_no_module_outgrows_its_room(path: Path) -> None:
    """One concern per room: a module that outgrows its part's limit holds more than one
    concern and is split."""
    limit = layout()[part_of(_rel(path)) or ""].get("max_lines")
    if limit is not None:
        lines = path.read_text(encoding="utf-8").count("\n")
        assert lines <= limit, f"{path.relative_to(PKG)}: {lines} lines (at most {limit})"


def test_no_module_takes_another_modules_private_names() -> None:
    """``_name`` is a module's own: another module importing it is a seam to make public."""
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nodecli"):
                found += [f"{_rel(path)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert found == []


def test_the_architecture_page_describes_every_part() -> None:
    text = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    section = text[text.index("## Architecture"):]
    for name in layout():
        assert f"`{name}`" in section, f"docs/development.md does not describe {name}"


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
