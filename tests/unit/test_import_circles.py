"""No import circle anywhere in core (DESIGN.md §1): a module never needs, however indirectly,
a module that needs it. Every import statement counts, including ones inside functions and
under TYPE_CHECKING (a circle there still says two modules are one)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.unit.test_layering import ROOT, imports_in, module_of


def import_graph(root: Path, top: str = "core") -> dict[str, set[str]]:
    """Module -> the project modules it imports (a name imported from a module counts as
    that module; a package as its `__init__`)."""
    files = {
        module_of(p.relative_to(root).as_posix()): p for p in sorted((root / top).rglob("*.py"))
    }

    def owner(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        file = path.relative_to(root).as_posix()
        targets = (owner(i.module) for i in imports_in(path.read_text(encoding="utf-8"), file))
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_core_has_no_import_circle() -> None:
    graph = import_graph(ROOT)
    assert "core.engine.service" in graph  # the walk sees the real tree

    found = circles(graph)

    assert found == [], "import circles:\n  " + "\n  ".join(" <-> ".join(c) for c in found)


def test_a_circle_through_a_package_and_type_checking_is_found(tmp_path: Path) -> None:
    (tmp_path / "core" / "settings").mkdir(parents=True)
    (tmp_path / "core" / "__init__.py").write_text("")
    (tmp_path / "core" / "settings" / "__init__.py").write_text(
        "from core.settings.engine import EngineSettings\n"
    )
    (tmp_path / "core" / "settings" / "engine.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from core.settings import Settings\n"
    )
    (tmp_path / "core" / "leaf.py").write_text("import core.settings.engine\n")

    assert circles(import_graph(tmp_path)) == [["core.settings", "core.settings.engine"]]


def test_a_chain_is_not_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
