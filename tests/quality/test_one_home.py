"""Facts the pipeline computes in one place only: the host machine is read by one function
(release.loader.Host.current; everything else is handed the Host value) and a variant is
loaded from its provider by one module (release.pipeline.build_variant). An AST scan of
release/, platforms/ and cuda/ holds both."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("release", "platforms", "cuda")
# calls that read the host machine's architecture
MACHINE_READERS = {("platform", "machine"), ("platform", "uname"), ("os", "uname")}


def _sources() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> module, for `import platform as host_platform` and the like."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
    return aliases


def _calls(tree: ast.Module) -> Iterator[tuple[ast.Call, str]]:
    """Each call with the name of the function it is in ("" at module level)."""
    def visit(node: ast.AST, function: str) -> Iterator[tuple[ast.Call, str]]:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else function
            if isinstance(child, ast.Call):
                yield child, inner
            yield from visit(child, inner)
    yield from visit(tree, "")


def _machine_reads() -> list[str]:
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases = _module_aliases(tree)
        imported = {alias.asname or alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module in ("platform", "os")
                    for alias in node.names if alias.name in ("machine", "uname")}
        for call, function in _calls(tree):
            target = call.func
            hit = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and (aliases.get(target.value.id, ""), target.attr) in MACHINE_READERS
            hit = hit or (isinstance(target, ast.Name) and target.id in imported)
            if hit:
                found.append(f"{path.relative_to(ROOT)}:{function}")
    return found


def test_one_function_reads_the_host_machine() -> None:
    assert _machine_reads() == ["release/loader.py:current"]


def test_the_scan_sees_an_aliased_read() -> None:
    """The scan finds the forms the pipeline used before (an aliased module, a local import)."""
    tree = ast.parse("import platform as p\ndef f():\n    import os\n    return p.machine(), "
                     "os.uname()\n")
    aliases = _module_aliases(tree)
    hits = [(aliases[c.func.value.id], c.func.attr, f) for c, f in _calls(tree)
            if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)]
    assert hits == [("platform", "machine", "f"), ("os", "uname", "f")]


def test_one_module_loads_variants() -> None:
    callers = []
    for path in _sources():
        tree = ast.parse(path.read_text(), filename=str(path))
        for call, function in _calls(tree):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else \
                call.func.id if isinstance(call.func, ast.Name) else ""
            if name == "load_variant":
                callers.append(f"{path.relative_to(ROOT)}:{function}")
    assert callers == ["release/pipeline.py:build_variant"]
