"""The interface each ``platforms/<os>/`` module implements, and the registry that finds it.

The pipeline loop (release/pipeline.py) is written once; a platform supplies only what
differs per operating system: how to compile for a target, how binaries are named and
fixed up, which repair tool tags the wheel, and whether this host can run what it built."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from release.errors import ConfigurationError
from release.manifest import Target


@dataclass(frozen=True, kw_only=True)
class SearchPath:
    """Where one shipped binary must find its dependencies, as package-relative folders.

    ``folders`` are relative to the wheel root (site-packages), e.g. ``edgert/lib`` or
    ``nvidia/cuda_runtime/lib``; the platform turns them into $ORIGIN / @loader_path entries."""

    binary: str                 # path inside the wheel, "/"-separated
    folders: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class RepairRequest:
    wheel: Path
    out_dir: Path
    keep: tuple[str, ...]       # file names of our own libraries: never renamed or copied
    exclude: tuple[str, ...]    # libraries provided by declared dependencies (e.g. libcudart)


class Platform(Protocol):
    name: str

    def check_host(self, target: Target) -> None:
        """Raises ToolError when this host cannot build ``target`` (with how to fix it)."""

    def cmake_arguments(self, target: Target, environ: Mapping[str, str]) -> list[str]:
        """Compiler/toolchain arguments for configuring native/ for ``target``."""

    def library_file(self, library: str) -> str:
        """File name of a shared library: "edgert_kernels" -> "libedgert_kernels.so"."""

    def extension_file(self, module: str) -> str:
        """File name of the stable-ABI extension module "_C" -> "_C.abi3.so"."""

    def wheel_platform_tag(self, target: Target) -> str:
        """The platform tag before repair (the repair tool may replace it)."""

    def python_tag(self) -> str:
        """Python and ABI tags of the wheel, e.g. "cp39-abi3"."""

    def fix_up(self, root: Path, search_paths: Sequence[SearchPath]) -> list[str]:
        """Rewrites each binary's run-time search path; returns the files it changed."""

    def repair(self, request: RepairRequest) -> Path:
        """Runs the platform's repair tool; returns the repaired wheel (in request.out_dir)."""

    def can_run(self, target: Target) -> bool:
        """Whether binaries built for ``target`` run on this host (load checks, SDK probes)."""


def get_platform(name: str) -> Platform:
    """Imports ``platforms.<name>`` and returns its PLATFORM object."""
    try:
        module = importlib.import_module(f"platforms.{name}")
    except ModuleNotFoundError:
        raise ConfigurationError(f"no platform module for '{name}'",
                                 fix="use linux, macos or windows") from None
    platform: Platform = module.PLATFORM
    return platform
