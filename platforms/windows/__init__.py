"""Windows: PE DLLs in <package>/lib, found through os.add_dll_directory.

The wheel is built with zig targeting ``x86_64-windows-gnu`` (UCRT, like CPython; libc++
linked statically into each DLL, so no C++ runtime DLL ships): cross-built on Linux, where its
programs run under wine (``wine.py``), and with the same zig on a Windows machine (MSVC cannot
compile the kernels' GCC/Clang vector code). The stable-ABI extension links an import library
of ``python3.dll`` made from ``python3.def`` and is compiled with this interpreter's headers
and a Windows ``pyconfig.h``.

PE files carry no search path, so the fix-up stage has nothing to rewrite; the repair stage
checks that every DLL a shipped file imports is either shipped or a Windows system DLL (the
wheel bundles nothing from outside, so delvewheel has nothing to graft) and never renames
the project's own DLLs: their names are the SDK's interface. The PE reader
(release/binary/pe.py) and the loader model verify uses (``loader.py``) complete it."""

from __future__ import annotations

import logging
import os
import shutil
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from platforms.windows import wine
from platforms.windows.loader import LOADER
from release.binary import read_binary_data
from release.binary.pe import PeReader
from release.distribution.archive import Limits, list_members, read_member
from release.errors import BinaryFormatError, ReleaseError, ToolError
from release.host import Host, Runner
from release.manifest import Target
from release.platform import BuildRoute, Platform, RepairRequest, Route
from release.tool import Tool
from release.toolchain import commands, zig

TARGET = zig.ZigTarget(triple="x86_64-windows-gnu", system="Windows", processor="AMD64")
PYCONFIG = Path(__file__).with_name("pyconfig.h")
_ARCHES = {"amd64": "x86_64"}
log = logging.getLogger("release")


def toolchain_folder(cache: Path) -> Path:
    """The zig toolchain for x86_64 Windows, shared by builds and SDK consumers."""
    return cache / "toolchains" / TARGET.triple


def python_folder(build_dir: Path, cache: Path) -> tuple[Path, Path]:
    """Headers (this interpreter's, with the Windows pyconfig.h) and the import library of
    python3.dll, made in ``build_dir`` for the extension; rewritten only when they change."""
    folder = build_dir / "python-windows"
    include = folder / "include"
    source = Path(sysconfig.get_paths()["include"])
    if not (source / "Python.h").is_file():
        raise ToolError(f"this Python has no C headers ({source}/Python.h is missing)",
                        fix="install the interpreter's development files (apt-get install "
                            "python3-dev) or use a python.org / pyenv build")
    stamp = folder / "source.txt"
    wanted = f"{source}\n{PYCONFIG.read_text(encoding='utf-8')}"
    library = folder / "python3.lib"
    if (not stamp.is_file() or stamp.read_text(encoding="utf-8") != wanted
            or not library.is_file()):
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(source, include)
        shutil.copyfile(PYCONFIG, include / "pyconfig.h")
        dlltool = zig.tool_path(toolchain_folder(cache), "dlltool")
        commands.run([dlltool, "-d", Path(__file__).with_name("python3.def"), "-l", library,
                      "-m", "i386:x86-64"], what="make the python3.dll import library")
        stamp.write_text(wanted, encoding="utf-8")
    return include, library


class WindowsPlatform(Platform):
    name = "windows"
    loader = LOADER
    reader = PeReader()
    # What the pipeline says before a first configure, whose compiler checks print nothing
    # for minutes (release/building/pipeline.py)
    first_configure_note = ("CMake's compiler checks run zig for x86_64-windows-gnu, which "
                            "first builds its C and C++ runtime for the target into its "
                            "cache: 2 to 4 minutes the first time (docs/windows.md), "
                            "seconds afterwards")

    def build_route(self, target: Target, host: Host) -> BuildRoute:
        if target.arch not in _ARCHES:
            return BuildRoute(Route.NOT_BUILDABLE, f"building {target.name} is not supported: "
                              "only amd64 Windows wheels are built",
                              fix="declare arch = \"amd64\"")
        if host.system == "windows":
            return BuildRoute(Route.NATIVE, f"zig {TARGET.triple} ({zig.requirement()}, from the "
                              "package index: MSVC cannot compile the kernels' vector code)")
        if host.system not in ("linux", "darwin"):
            return BuildRoute(Route.ELSEWHERE, f"building {target.name} needs Windows, Linux or "
                              "macOS", fix="build on one of those")
        found = wine.find_wine() if host.system == "linux" else None
        runs = (f"run under {os.path.basename(found)}" if found else
            f"not run (verify reads files only: apt-get install {wine.WINE_PACKAGE})")
        return BuildRoute(Route.CROSS, f"zig {TARGET.triple} ({zig.requirement()}, from the "
                          f"package index); programs {runs}")

    def cmake_arguments(self, target: Target, *, host: Host, ccache: bool, cache: Path,
                        build_dir: Path) -> list[str]:
        toolchain = zig.write_toolchain(TARGET, toolchain_folder(cache), cache=cache)
        include, library = python_folder(build_dir, cache)
        arguments = [f"-DCMAKE_TOOLCHAIN_FILE={toolchain}", f"-DPython_INCLUDE_DIR={include}",
                     f"-DEDGERT_PYTHON_SABI_LIBRARY={library}",
                     # the fuzz targets replace operator new for the whole process, which an
                     # executable cannot do for the DLLs it loads: they are built on Linux
                     "-DEDGERT_BUILD_FUZZERS=OFF"]
        launcher = shutil.which("ccache")
        if launcher is not None and ccache:
            arguments[:0] = [f"-DCMAKE_C_COMPILER_LAUNCHER={launcher}",
                             f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}"]
        return arguments

    def toolchain_tools(self, target: Target, host: Host) -> tuple[Tool, ...]:
        return (zig.tool(),)

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

    def repair(self, request: RepairRequest) -> Path:
        """Checks that the wheel needs no DLL from outside it (what delvewheel would bundle)
        and passes it on unchanged: nothing is renamed, copied or patched. The binaries the
        caller read already (``request.binaries``) are not parsed again."""
        members = list_members(request.wheel, Limits())   # verify's reader, its rules
        shipped = {member.name.rsplit("/", 1)[-1].lower() for member in members}
        policy = LOADER.policy(["win_amd64"])
        for member in members:
            name = member.name
            if not name.lower().endswith((".dll", ".pyd", ".exe")):
                continue
            info = request.binaries.get(name)
            if info is None or info.format != self.reader.name:   # not read yet: read it
                try:
                    info = read_binary_data(read_member(request.wheel, member, Limits()),
                                            where=name, readers=(self.reader,))
                except BinaryFormatError as error:
                    raise ToolError(f"{name} is not a readable PE file: {error.what}",
                                    fix="rebuild the wheel") from None
            for needed in (*info.needed, *info.delay_needed):
                if needed.lower() not in shipped and not LOADER.is_system(needed, policy):
                    raise ToolError(
                        f"{name} needs {needed}, which is neither shipped in the wheel "
                        "nor a Windows system DLL",
                        fix=f"link {needed} statically, or ship it in the package's lib "
                            "folder (delvewheel repair --add-path DIR bundles it on a "
                            "machine that has it)")
        out = request.out_dir / request.wheel.name
        shutil.copyfile(request.wheel, out)
        return out

    def runner(self, target: Target, *, host: Host, cache: Path) -> Runner | None:
        if host.system == "windows":
            return Runner(_ARCHES.get(target.arch, target.arch))
        if host.system != "linux" or target.arch not in _ARCHES:
            return None
        return self._wine_runner(cache)

    def _wine_runner(self, cache: Path) -> Runner | None:
        toolchain = zig.write_toolchain(TARGET, toolchain_folder(cache), cache=cache)
        return wine.provision_runner(toolchain, cache)

    def emulated(self, host: Host, *, cache: Path) -> tuple[Runner, ...]:
        """The wine runner when wine is installed (its prefix and helpers made on first use:
        zig comes from the package index once); none when that fails (said in the log)."""
        if host.system != "linux" or wine.find_wine() is None:
            return ()
        found = wine.existing_runner(toolchain_folder(cache) / "toolchain.cmake", cache)
        if found is None:
            try:
                found = self._wine_runner(cache)
            except ReleaseError as error:
                log.warning("Windows programs are not run: %s", error.message)
        return () if found is None else (found,)


PLATFORM = WindowsPlatform()

__all__ = ["PLATFORM", "WindowsPlatform"]
