"""The pipeline's modules form layers: no circle of module-level imports (the imports a
type checker follows included, ``if TYPE_CHECKING:`` ones too) among release/, platforms/
and cuda/. A circle means two modules each need the other to be understood: the data types
of the build record and the verify context's analyses were such circles once. Imports inside
a function count as well: deferring an import hides a circle from the interpreter, not from
a reader (the command line, ``release.__main__``, imports verify's; nothing imports it
back)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.quality.sources import sources, tree

# the shipped package's modules are imported from native/python
SHIPPED = ROOT / "native" / "python"


def _module_name(path: Path, top: Path = ROOT) -> str:
    parts = list(path.relative_to(top).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import of a module: at module level, under ifs and trys, inside functions."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def _graph(paths: list[Path] | None = None, top: Path = ROOT) -> dict[str, set[str]]:
    modules = {_module_name(path, top): path for path in (sources() if paths is None else paths)}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _imports(tree(path)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:   # relative: from the module's package
                    package = name.split(".")[: -node.level or None]
                    base = ".".join([*package, base] if base else package)
                # `from package import module` needs the module; `from module import
                # name` the module the name is in
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            graph[name] |= {target for target in targets if target in modules and target != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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
    return found


def test_no_circle_of_imports() -> None:
    assert _circles(_graph()) == []


def test_no_circle_of_imports_in_the_shipped_package() -> None:
    """edgert itself: the front end and the passes import the program format
    (edgert/program_format.py), never the public ``edgert.export`` that calls them."""
    graph = _graph(sorted((SHIPPED / "edgert").rglob("*.py")), SHIPPED)
    assert "edgert.export" in graph and "edgert._torch" in graph
    assert _circles(graph) == []


def test_the_scan_finds_a_circle_and_reads_every_import() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x.y\n"
                     "def f():\n    import z\n")
    assert sorted(alias.name for node in _imports(tree) for alias in node.names) == [
        "TYPE_CHECKING", "x.y", "z"]


@pytest.mark.parametrize("package", ["release.verify.checks", "release.release_set.checks"])
def test_no_check_imports_another_check(package: str) -> None:
    """What several checks need (the linkage model, the ownership model; the release set as
    read once) is a model of its own beside the checks (release/verify/*_model.py,
    release/release_set/set_model.py); a check reads it, never another check. The checks'
    private helpers (``_common``, ``_cmake_probe``) are not checks."""
    graph = _graph()
    checks = {name for name in graph if name.startswith(package + ".")
              and not name.rsplit(".", 1)[1].startswith("_")}
    assert checks, "no check modules found"
    assert {name: sorted(graph[name] & checks) for name in sorted(checks)
            if graph[name] & checks} == {}
