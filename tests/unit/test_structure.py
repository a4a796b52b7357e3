"""The seams hold: release/ never imports the platform or variant packages it plugs in, and
verify's checks speak only through the loader model, never a binary format's own terms."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PLUGGED_IN = {"cuda", "platforms"}
FORMAT_WORDS = re.compile(r"\bELF\b|\bDT_[A-Z]+|\$\{?ORIGIN|RUNPATH|manylinux|Mach-O|\bPE\b")


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_release_never_imports_what_plugs_into_it() -> None:
    imported = {path: imported_packages(path) & PLUGGED_IN
                for path in (ROOT / "release").rglob("*.py")}
    offenders = {str(path.relative_to(ROOT)): sorted(names)
                 for path, names in imported.items() if names}
    assert offenders == {}


def test_checks_never_name_a_binary_format() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
                 for path in sorted((ROOT / "release" / "verify" / "checks").glob("*.py"))
                 for number, line in enumerate(path.read_text().splitlines(), 1)
                 if FORMAT_WORDS.search(line)]
    assert offenders == []


def _code_lines(path: Path) -> list[str]:
    comment = "#"
    return [line for line in path.read_text(errors="replace").splitlines()
            if not line.strip().startswith(comment) and not line.strip().startswith('"')]


def test_the_wheel_search_path_rule_is_written_once() -> None:
    """Only the platform modules write a relative search-path token for the wheel's binaries;
    CMake and the pipeline receive entries. (The CMake package's link option for a consumer
    application, edgertConfig.cmake.in, is the application's search path, not the wheel's.)"""
    token = re.compile(r"\$ORIGIN|@loader_path")
    sources = [path for folder in ("release", "native", "cuda")
               for path in (ROOT / folder).rglob("*")
               if path.is_file() and (path.suffix in (".py", ".cmake")
                                      or path.name == "CMakeLists.txt")]
    writers = sorted(str(path.relative_to(ROOT)) for path in sources
                     if any(token.search(line) for line in _code_lines(path)))
    assert writers == []
