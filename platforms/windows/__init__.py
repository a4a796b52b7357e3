"""Windows: PE DLLs in <package>/lib found through os.add_dll_directory, repaired by
delvewheel.

Naming, tags, the PE reader (release/binary/pe.py) and the loader model verify uses
(``loader.py``) are here; compiling (zig targeting x86_64-windows-gnu, run under wine) and
repair arrive with the Windows wheel work. Until then check_host refuses with the reason."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from platforms.windows.loader import LOADER
from release.binary.pe import PeReader
from release.errors import ToolError
from release.loader import Runner
from release.manifest import Target
from release.platform import BuildRoute, RepairRequest, Route, SearchPath


class WindowsPlatform:
    name = "windows"
    loader = LOADER
    reader = PeReader()

    def check_host(self, target: Target) -> None:
        route = self.build_route(target)
        raise ToolError(f"building {target.name} wheels is not supported by this pipeline yet "
                        f"({route.detail})", fix=route.fix)

    def build_route(self, target: Target) -> BuildRoute:
        return BuildRoute(Route.NOT_BUILDABLE, "the Windows platform module has no toolchain "
                          "or repair yet", fix="build the linux targets; Windows support is "
                          "planned (zig and wine)")

    def cmake_arguments(self, target: Target, *, ccache: bool, cache: Path,
                        build_dir: Path) -> list[str]:
        return []

    def library_file(self, library: str) -> str:
        return f"{library}.dll"

    def extension_file(self, module: str) -> str:
        return f"{module}.pyd"

    def wheel_platform_tag(self, target: Target) -> str:
        return "win_amd64" if target.arch == "amd64" else f"win_{target.arch}"

    def python_tag(self) -> str:
        return "cp39-abi3"

    def search_entries(self, binary: str, folders: Sequence[str]) -> tuple[str, ...]:
        return ()  # PE has no run-time search path; the package adds its lib/ at import

    def fix_up(self, root: Path, search_paths: Sequence[SearchPath]) -> list[str]:
        return []  # PE has no run-time search path; the package adds its lib/ at import

    def repair(self, request: RepairRequest) -> Path:
        raise ToolError("Windows repair is not available yet", fix="build a linux target")

    def runner(self, target: Target, *, cache: Path) -> Runner | None:
        return None

    def emulated(self, *, cache: Path) -> tuple[Runner, ...]:
        return ()


PLATFORM = WindowsPlatform()
