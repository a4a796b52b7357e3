"""Which extension modules a package imports only as an option: every import of the module
in the package's Python sits in a ``try`` whose handler catches ImportError (or
ModuleNotFoundError, or any exception), as numba imports its TBB threading layer. Such a
module failing to load is the package's designed fallback, not a broken install.

The sources are read from the wheel only when asked (linkage asks for the extension modules
whose needed libraries are found nowhere), only the package's own ``.py`` files that mention
the module's name, within a byte budget; nothing is run."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from release.distribution.archive import Limits
from release.verify.python_sources import python_files
from release.verify.wheel_model import WheelModel

_CATCHING = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException",
                       "OSError"})


@dataclass(frozen=True)
class OptionalImport:
    module: str          # the extension module, dotted ("numba.np.ufunc.tbbpool")
    importers: tuple[str, ...]   # the Python files (wheel paths) that import it, each guarded


def dotted(path: str) -> str:
    """The module an extension file is imported as: "a/b/_c.cpython-311-x86_64-linux-gnu.so"
    -> "a.b._c"."""
    folder, _, name = path.rpartition("/")
    stem = name.split(".")[0]
    return f"{folder.replace('/', '.')}.{stem}" if folder else stem


def optional_modules(wheel: WheelModel, extensions: Collection[str],
                     limits: Limits) -> dict[str, OptionalImport]:
    """For each extension module (wheel path) imported only under a guard that catches
    ImportError: how (path -> OptionalImport). A module no Python file imports is not in it."""
    wanted = {path: dotted(path) for path in extensions}
    if not wanted:
        return {}
    packages = {module.split(".")[0] for module in wanted.values()}
    guarded: dict[str, list[str]] = {}
    unguarded: set[str] = set()
    for name, source in _sources(wheel, packages, {m.rsplit(".", 1)[-1] for m in
                                                   wanted.values()}, limits):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for module, is_guarded in _imports(tree, name):
            if is_guarded:
                guarded.setdefault(module, []).append(name)
            else:
                unguarded.add(module)
    found = {}
    for path, module in wanted.items():
        if module in guarded and module not in unguarded:
            found[path] = OptionalImport(module, tuple(sorted(set(guarded[module]))))
    return found


def _sources(wheel: WheelModel, packages: set[str], names: set[str],
             limits: Limits) -> Iterator[tuple[str, str]]:
    """The package's Python files that mention one of ``names``, within the byte budget."""
    for path, text in python_files(wheel, lambda path: path.split("/")[0] in packages, limits):
        if any(name in text for name in names):
            yield path, text


def _package_of(path: str) -> str:
    """The package a Python file belongs to: "a/b/c.py" -> "a.b", "a/b/__init__.py" -> "a.b"."""
    return path.rpartition("/")[0].replace("/", ".")


def _imports(tree: ast.Module, path: str) -> Iterator[tuple[str, bool]]:
    """(module imported, whether a guard catching ImportError surrounds it) for every import
    statement of the module, relative imports resolved against its package."""
    package = _package_of(path)
    for node, guarded in _walk(tree, False):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, guarded
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                keep = len(parts) - (node.level - 1)
                base = ".".join([*parts[:max(keep, 0)], *([base] if base else [])])
            for alias in node.names:
                yield (f"{base}.{alias.name}" if base else alias.name), guarded
                yield base, guarded


def _walk(node: ast.AST, guarded: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Try):
            catches = any(_catches(handler) for handler in child.handlers)
            for statement in child.body:
                yield statement, guarded or catches
                yield from _walk(statement, guarded or catches)
            for part in (*child.handlers, *child.orelse, *child.finalbody):
                yield part, guarded
                yield from _walk(part, guarded)
            continue
        yield child, guarded
        yield from _walk(child, guarded)


def _catches(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(kind, ast.Name) and kind.id in _CATCHING or
               isinstance(kind, ast.Attribute) and kind.attr in _CATCHING for kind in kinds)
