"""The pipeline's Python sources (release/, platforms/, cuda/) as the quality tier's AST
scans read them: each file listed in one order and parsed once per test session (scans only
read the trees)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("release", "platforms", "cuda")


def sources(*packages: str) -> list[Path]:
    """The .py files of ``packages`` (default: the pipeline's), sorted within each."""
    return [path for package in packages or PACKAGES
            for path in sorted((ROOT / package).rglob("*.py"))]


@functools.cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))
