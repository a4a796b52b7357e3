"""One part of a toolchain as the build record and the SBOM name it: a compiler, CMake, Ninja,
zig, a CUDA toolkit wheel. Platforms, variants and the SBOM all speak of tools in this type."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Tool:
    """One part of the toolchain: ``name`` (``GNU CXX compiler``, ``cmake``), its version."""

    name: str
    version: str
    purl: str = ""        # for tools from a package index: pkg:pypi/ziglang@0.17.1


__all__ = ["Tool"]
