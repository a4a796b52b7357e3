"""macOS: Mach-O dylibs with @loader_path-relative LC_RPATH, repaired by delocate.

Naming, tags and search-path rules are here, and what verify needs: the Mach-O reader
(release/binary/macho.py) and the dyld loader model (``loader.py``). Compiling (zig from
Linux, clang on a Mac) and repair arrive with the macOS wheel work; until then check_host
refuses with the reason."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from platforms.macos.loader import LOADER, loader_relative
from release.binary.macho import MachOReader
from release.errors import ToolError
from release.loader import Runner
from release.manifest import Target
from release.platform import BuildRoute, RepairRequest, Route, SearchPath

_MINIMUM = {"arm64": "11_0", "x86_64": "10_13", "universal2": "10_13"}


__all__ = ["PLATFORM", "MacOSPlatform", "loader_relative"]


class MacOSPlatform:
    name = "macos"
    loader = LOADER
    reader = MachOReader()

    def check_host(self, target: Target) -> None:
        route = self.build_route(target)
        raise ToolError(f"building {target.name} wheels is not supported by this pipeline yet "
                        f"({route.detail})", fix=route.fix)

    def build_route(self, target: Target) -> BuildRoute:
        return BuildRoute(Route.NOT_BUILDABLE, "the macOS platform module has no toolchain, "
                          "fix-up or repair yet", fix="build the linux targets; macOS support "
                          "is planned (zig cross builds and native builds on a Mac)")

    def cmake_arguments(self, target: Target, *, ccache: bool, cache: Path,
                        build_dir: Path) -> list[str]:
        return [f"-DCMAKE_OSX_DEPLOYMENT_TARGET={_MINIMUM[target.arch].replace('_', '.')}"]

    def library_file(self, library: str) -> str:
        return f"lib{library}.dylib"

    def extension_file(self, module: str) -> str:
        return f"{module}.abi3.so"

    def wheel_platform_tag(self, target: Target) -> str:
        return f"macosx_{_MINIMUM[target.arch]}_{target.arch}"

    def python_tag(self) -> str:
        return "cp39-abi3"

    def search_entries(self, binary: str, folders: Sequence[str]) -> tuple[str, ...]:
        return tuple(loader_relative(binary, folder) for folder in folders)

    def fix_up(self, root: Path, search_paths: Sequence[SearchPath]) -> list[str]:
        raise ToolError("macOS fix-up is not available yet", fix="build a linux target")

    def repair(self, request: RepairRequest) -> Path:
        raise ToolError("macOS repair is not available yet", fix="build a linux target")

    def runner(self, target: Target, *, cache: Path) -> Runner | None:
        return None

    def emulated(self, *, cache: Path) -> tuple[Runner, ...]:
        return ()


PLATFORM = MacOSPlatform()
