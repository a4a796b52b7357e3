"""macOS: Mach-O dylibs named ``@rpath/<file>`` with @loader_path-relative LC_RPATH entries.

Two routes build the same manifest through the same stages (docs/macos.md):

* On a Mac: the system clang, ``-DCMAKE_OSX_ARCHITECTURES`` and
  ``-DCMAKE_OSX_DEPLOYMENT_TARGET``; programs run there.
* Anywhere else: zig from the package index as a CMake toolchain (release/toolchain/zig.py), the OS
  version in the target triple (zig ignores ``-mmacosx-version-min``); nothing here runs
  Mach-O, so ``runner`` is None and verify reads the files only.

universal2 is built as its two thin parts (``parts``), each in a folder of the universal2
build folder, and their install trees are merged with lipo (``merge``). The fix-up stage
checks each binary's install name and LC_RPATH against the pipeline's decision and rewrites
what differs with install_name_tool, which signs arm64 slices again (checked with the
reader's signature check). Repair bundles nothing: the wheel's binaries may load only each
other and macOS itself (/usr/lib, /System), which ``repair`` checks.

Naming, tags and search-path rules are here; verify's dyld loader model is ``loader.py``."""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from platforms.macos.loader import LOADER, is_system_path, loader_relative
from release.binary import read_binary, read_binary_data
from release.binary.macho import MachOReader, is_macho
from release.binary.model import BinaryInfo
from release.distribution.archive import Limits, list_members, member_head, read_member
from release.errors import ConfigurationError, ToolError, WheelError
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
from release.toolchain import commands, zig

__all__ = ["PLATFORM", "MacOSPlatform", "loader_relative"]

# The deployment target of each thin architecture: the one setting the triple, CMake and the
# wheel tag all come from. arm64 starts at 11.0 (no arm64 Mac runs older); x86_64 at 10.13,
# the oldest macOS that CPython's own installers and numpy's wheels still support.
DEPLOYMENT_TARGETS = {"arm64": "11.0", "x86_64": "10.13"}
# A fat target: the thin parts it is merged from.
UNIVERSAL = {"universal2": ("arm64", "x86_64")}
_ZIG_ARCH = {"arm64": "aarch64", "x86_64": "x86_64"}
_LLVM = "14"
_LLVM_FIX = "apt-get install llvm-14 (it provides llvm-install-name-tool-14 and llvm-lipo-14)"


def thin_arches(arch: str) -> tuple[str, ...]:
    """The thin architectures a target is built from: itself, or a universal target's parts."""
    if arch in UNIVERSAL:
        return UNIVERSAL[arch]
    if arch in DEPLOYMENT_TARGETS:
        return (arch,)
    known = ", ".join([*DEPLOYMENT_TARGETS, *UNIVERSAL])
    raise ConfigurationError(f"macOS has no architecture '{arch}'", fix=f"use one of: {known}")


def deployment_target(arch: str) -> str:
    """The oldest macOS a target runs on ("10.13"): a universal target's oldest part."""
    versions = [DEPLOYMENT_TARGETS[part] for part in thin_arches(arch)]
    return min(versions, key=lambda version: tuple(int(word) for word in version.split(".")))


def zig_target(arch: str) -> zig.ZigTarget:
    """The zig toolchain of a thin architecture. CMake on a Linux host sets no run-time path
    flag for Darwin (its Darwin rules ask ``sw_vers``), so the toolchain names it. zig's C++
    runtime is compiled with debug information and its linker writes a debug map (the
    object files' build paths) into every binary: ``-Wl,-S`` leaves it out."""
    version = DEPLOYMENT_TARGETS[arch]
    settings = {"CMAKE_OSX_DEPLOYMENT_TARGET": f'"{version}"',
                "CMAKE_SHARED_LIBRARY_RUNTIME_C_FLAG": '"-Wl,-rpath,"',
                "CMAKE_SHARED_LIBRARY_RUNTIME_CXX_FLAG": '"-Wl,-rpath,"',
                **{f"CMAKE_{kind}_LINKER_FLAGS_INIT": '"-Wl,-S"'
                   for kind in ("SHARED", "MODULE", "EXE")}}
    # install() rewrites LC_RPATH with it; install(RUNTIME_DEPENDENCY_SET) (edgert_install)
    # reads load commands with otool, which CMake looks for only on a Mac host.
    name_tool = _find_tool("install-name-tool", mac=False)
    if name_tool is not None:
        settings["CMAKE_INSTALL_NAME_TOOL"] = f'"{name_tool}"'
    otool = _find_tool("otool", mac=False)
    if otool is not None:
        settings.update({"CMAKE_GET_RUNTIME_DEPENDENCIES_PLATFORM": "macos+macho",
                         "CMAKE_GET_RUNTIME_DEPENDENCIES_TOOL": "otool",
                         "CMAKE_GET_RUNTIME_DEPENDENCIES_COMMAND": f'"{otool}"'})
    return zig.ZigTarget(triple=f"{_ZIG_ARCH[arch]}-macos.{version}", system="Darwin",
                         processor=arch, settings=settings)


def _is_mac(host: Host) -> bool:
    return host.system == "darwin"


def _find_tool(tool: str, *, mac: bool) -> str | None:
    """An LLVM binutil ("install-name-tool", "lipo"): LLVM's (which re-signs what it edits)
    wherever found, else on a Mac the system's."""
    names = [f"llvm-{tool}-{_LLVM}", f"llvm-{tool}"]
    if mac:
        names.append(tool.replace("-", "_"))
    return next((found for name in names if (found := shutil.which(name)) is not None), None)


def _require_tool(tool: str, *, mac: bool) -> str:
    found = _find_tool(tool, mac=mac)
    if found is None:
        raise ToolError(f"llvm-{tool} was not found on PATH",
                        fix="xcode-select --install" if mac else _LLVM_FIX)
    return found


class MacOSPlatform(Platform):
    name = "macos"
    # What the pipeline says before a first configure (release/building/pipeline.py)
    first_configure_note = ("a cross build's compiler checks run zig, which first builds its "
                            "C and C++ runtime for the target into its cache: minutes the "
                            "first time, seconds afterwards")
    loader = LOADER
    reader = MachOReader()

    def build_route(self, target: Target, host: Host) -> BuildRoute:
        try:
            arches = thin_arches(target.arch)
        except ConfigurationError as error:
            return BuildRoute(Route.ELSEWHERE, error.what, fix=error.fix)
        wanted = ["install-name-tool", *(("lipo",) if len(arches) > 1 else ())]
        mac = _is_mac(host)
        missing = [f"llvm-{tool}" for tool in wanted if _find_tool(tool, mac=mac) is None]
        if mac:
            if shutil.which("clang") is None:
                return BuildRoute(Route.NATIVE, "this Mac's clang was not found",
                                  fix="xcode-select --install")
            return BuildRoute(Route.NATIVE, f"this Mac's clang ({' + '.join(arches)})",
                              fix="xcode-select --install" if missing else "")
        detail = (f"zig {zig.requirement().split('==')[-1]} from the package index "
                  f"({', '.join(zig_triple(arch) for arch in arches)}); programs not run "
                  "(verify reads files only)")
        if missing:
            return BuildRoute(Route.CROSS, f"{detail}; {', '.join(missing)} not found",
                              fix=_LLVM_FIX)
        return BuildRoute(Route.CROSS, detail)

    def parts(self, target: Target) -> tuple[Target, ...]:
        """The thin targets a fat target is merged from; (target,) for a thin one."""
        arches = thin_arches(target.arch)
        if arches == (target.arch,):
            return (target,)
        return tuple(replace(target, name=f"{target.platform}-{arch}", arch=arch)
                     for arch in arches)

    def requested_arch(self, environ: Mapping[str, str]) -> str | None:
        """The target a PEP 517 build on a Mac was asked for (``requested_arch``)."""
        return requested_arch(environ)

    def merge(self, installs: Sequence[Path], into: Path, *, host: Host) -> list[str]:
        """Merges the parts' install trees into ``into``: every file that is Mach-O in each
        tree becomes one fat file (lipo); any other file must be identical in every tree.
        Returns the merged files (relative, "/"-separated)."""
        return merge_trees(installs, into, mac=_is_mac(host))

    def cmake_arguments(self, target: Target, *, host: Host, ccache: bool, cache: Path,
                        build_dir: Path) -> list[str]:
        arches = thin_arches(target.arch)
        if len(arches) != 1:
            raise ConfigurationError(f"{target.name} is configured as its parts "
                                     f"({', '.join(arches)}), not as one build",
                                     fix="configure each part (MacOSPlatform.parts)")
        arch = arches[0]
        version = DEPLOYMENT_TARGETS[arch]
        if _is_mac(host):
            arguments = [f"-DCMAKE_OSX_ARCHITECTURES={arch}",
                         f"-DCMAKE_OSX_DEPLOYMENT_TARGET={version}"]
            launcher = shutil.which("ccache")
            if launcher is not None and ccache:
                arguments += [f"-DCMAKE_C_COMPILER_LAUNCHER={launcher}",
                              f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}"]
            return arguments
        # The wrappers live in the tool cache, one folder per triple, rewritten only when
        # their text changes: every build folder and clone sees the same compiler, so ccache
        # (which keys on the compiler's file) reuses what any of them compiled.
        arguments = [*toolchain_arguments(arch, cache / "toolchains" / zig_triple(arch),
                                          cache=cache),
                     # the stable-ABI extension needs this interpreter's headers only (no
                     # libpython: it links with -undefined dynamic_lookup)
                     f"-DPython_INCLUDE_DIR={_python_include()}"]
        launcher = shutil.which("ccache")
        if launcher is not None and ccache:
            arguments[:0] = [f"-DCMAKE_C_COMPILER_LAUNCHER={launcher}",
                             f"-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}"]
        return arguments

    def toolchain_tools(self, target: Target, host: Host) -> tuple[Tool, ...]:
        return () if _is_mac(host) else (zig.tool(),)

    def library_file(self, library: str) -> str:
        return f"lib{library}.dylib"

    def extension_file(self, module: str) -> str:
        return f"{module}.abi3.so"

    def wheel_platform_tag(self, target: Target) -> str:
        thin_arches(target.arch)
        return f"macosx_{deployment_target(target.arch).replace('.', '_')}_{target.arch}"

    def python_tag(self) -> str:
        return "cp39-abi3"

    def search_entries(self, binary: str, folders: Sequence[str]) -> tuple[str, ...]:
        return tuple(loader_relative(binary, folder) for folder in folders)

    def plan_edits(self, root: Path, search_paths: Sequence[SearchPath]) -> Edits:
        """install_name_tool's edits (one run per file): the install name and exactly the
        decided LC_RPATH entries, where the file differs."""
        binaries = []
        for entry in search_paths:
            found = read_binary(root / entry.binary, readers=(self.reader,))
            edits = name_edits(found, entry)
            binaries.append(BinaryEdits(entry, found, (tuple(edits),) if edits else ()))
        return Edits("install-name-tool", tuple(binaries))

    def edit_tool(self, name: str, *, host: Host) -> str:
        return _require_tool(name, mac=_is_mac(host))

    def after_edit(self, path: Path, info: BinaryInfo, *, host: Host) -> BinaryInfo:
        return _sign_again(path, info, mac=_is_mac(host))

    def check_fixed(self, info: BinaryInfo, entry: SearchPath) -> None:
        check_fixed(info, entry)

    def repair(self, request: RepairRequest) -> Path:
        check_self_contained(request.wheel)
        out = request.out_dir / request.wheel.name
        shutil.copyfile(request.wheel, out)
        return out

    def runner(self, target: Target, *, host: Host, cache: Path) -> Runner | None:
        return None   # no Mach-O runs here; on a Mac the release workflow runs the wheel

    def emulated(self, host: Host, *, cache: Path) -> tuple[Runner, ...]:
        return ()


def _sign_again(path: Path, info: BinaryInfo, *, mac: bool) -> BinaryInfo:
    """On a Mac, signs ad hoc an arm64 slice an edit left unsigned or invalid (LLVM's
    install-name-tool signs again by itself; Apple's older ones do not)."""
    codesign = shutil.which("codesign") if mac else None
    if codesign is None or not ("arm64" in info.unsigned or "arm64" in info.bad_signatures):
        return info
    commands.run([codesign, "--force", "--sign", "-", path], what=f"codesign {path.name}",
                 fix="read codesign's message above")
    return read_binary(path)


def requested_arch(environ: Mapping[str, str]) -> str | None:
    """The target a PEP 517 build on a Mac was asked for: cibuildwheel (and pip's users) say
    it with ARCHFLAGS ("-arch arm64 -arch x86_64" for universal2); None when unsaid."""
    words = environ.get("ARCHFLAGS", "").split()
    arches = {word for flag, word in zip(words, words[1:]) if flag == "-arch"}
    if arches == set(UNIVERSAL["universal2"]):
        return "universal2"
    if len(arches) == 1 and (arch := arches.pop()) in DEPLOYMENT_TARGETS:
        return arch
    return None


def zig_triple(arch: str) -> str:
    return f"{_ZIG_ARCH[arch]}-macos.{DEPLOYMENT_TARGETS[arch]}"


def toolchain_arguments(arch: str, folder: Path, *, cache: Path) -> list[str]:
    """What configures any CMake project for ``arch`` with zig (native/, an SDK consumer):
    the toolchain file, written into ``folder``; zig is provisioned into ``cache``."""
    toolchain = zig.write_toolchain(zig_target(arch), folder, cache=cache)
    return [f"-DCMAKE_TOOLCHAIN_FILE={toolchain}"]


def _python_include() -> str:
    return sysconfig.get_paths()["include"]


def wanted_install_name(info: BinaryInfo, binary: str) -> str | None:
    """The install name a shipped library must carry, "@rpath/<file>"; None for other files
    (an executable, the extension module: nothing links against it, and cross-built it is
    a dylib named after its file)."""
    if info.file_type != "shared" or not binary.endswith(".dylib"):
        return None
    return f"@rpath/{posixpath.basename(binary)}"


def name_edits(info: BinaryInfo, entry: SearchPath) -> list[str]:
    """install_name_tool arguments that give ``entry.binary`` its install name and exactly
    the decided LC_RPATH entries, in order; [] when it has them."""
    edits: list[str] = []
    name = wanted_install_name(info, entry.binary)
    if name is not None and info.soname != name:
        edits += ["-id", name]
    if info.runpath != entry.entries:
        for old in dict.fromkeys(info.runpath):
            edits += ["-delete_rpath", old]
        for new in entry.entries:
            edits += ["-add_rpath", new]
    return edits


def check_fixed(info: BinaryInfo, entry: SearchPath) -> None:
    """Raises ToolError when a fixed-up binary still differs from the decision or carries
    an arm64 slice without a valid signature (macOS would kill the process loading it)."""
    name = wanted_install_name(info, entry.binary)
    problems = []
    if name is not None and info.soname != name:
        problems.append(f"install name {info.soname!r}, wanted {name!r}")
    if info.runpath != entry.entries:
        problems.append(f"LC_RPATH {list(info.runpath)}, wanted {list(entry.entries)}")
    if "arm64" in info.unsigned or "arm64" in info.bad_signatures:
        problems.append("its arm64 code signature is missing or does not match its bytes")
    if problems:
        raise ToolError(f"{entry.binary} after the fix-up: {'; '.join(problems)}",
                        fix="use llvm-install-name-tool (LLVM >= 14), which re-signs what it "
                            "edits, or sign again with codesign -f -s - FILE on a Mac")


def check_self_contained(wheel_path: Path) -> None:
    """Raises WheelError when a binary in the wheel loads a library that is neither in the
    wheel nor part of macOS: this route bundles nothing, so such a wheel cannot be repaired
    here (delocate-wheel on a Mac copies outside libraries into the wheel)."""
    reader = MachOReader()
    members = list_members(wheel_path, Limits())   # verify's reader, its rules
    shipped = {posixpath.basename(member.name) for member in members}
    for member in members:
        name = member.name
        if not is_macho(member_head(wheel_path, member, 8)):
            continue
        info = read_binary_data(read_member(wheel_path, member, Limits()),
                                where=f"{wheel_path.name}:{name}", readers=(reader,))
        outside = [path for path in info.needed_paths
                   if not is_system_path(path) and posixpath.basename(path) not in shipped]
        if outside:
            raise WheelError(
                f"{name} in {wheel_path.name} loads {', '.join(outside)}, which is neither "
                "in the wheel nor part of macOS (/usr/lib, /System)",
                fix="link that library statically, or build on a Mac and bundle it with "
                    "delocate-wheel (docs/macos.md, Repair)")


def merge_trees(installs: Sequence[Path], into: Path, *, mac: bool = False) -> list[str]:
    """See ``MacOSPlatform.merge``."""
    if len(installs) < 2:
        raise ConfigurationError("a universal merge needs two install trees or more",
                                 fix="pass each thin part's install folder")
    listings = [_listing(tree) for tree in installs]
    first = listings[0]
    for tree, listing in zip(installs[1:], listings[1:]):
        if set(listing) != set(first):
            only = sorted(set(listing) ^ set(first))
            raise ToolError(f"the thin builds installed different files ({', '.join(only[:5])} "
                            f"in only one of {installs[0]} and {tree})",
                            fix="make the install rules the same for every architecture")
    lipo: str | None = None
    merged = []
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    for relative in sorted(first):
        sources = [tree / relative for tree in installs]
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        kind = first[relative]
        if kind == "dir":
            target.mkdir(exist_ok=True)
        elif kind.startswith("link:"):
            if any(listing[relative] != kind for listing in listings):
                raise ToolError(f"{relative} is a different symbolic link in each thin build",
                                fix="make the install rules the same for every architecture")
            os.symlink(kind[len("link:"):], target)
        elif all(_is_macho_file(source) for source in sources):
            lipo = lipo or _require_tool("lipo", mac=mac)
            commands.run([lipo, "-create", *sources, "-output", target],
                         what=f"lipo -create {relative}", fix="read lipo's message above")
            shutil.copymode(sources[0], target)
            merged.append(relative)
        else:
            data = sources[0].read_bytes()
            different = [str(source) for source in sources[1:] if source.read_bytes() != data]
            if different:
                raise ToolError(f"{relative} differs between the thin builds ({sources[0]} and "
                                f"{different[0]}) and is not Mach-O, so it cannot be merged",
                                fix="make the file the same for every architecture")
            shutil.copy2(sources[0], target)
    return merged


def _listing(tree: Path) -> dict[str, str]:
    """Relative path -> "dir", "file" or "link:<target>" for everything under ``tree``."""
    if not tree.is_dir():
        raise ToolError(f"{tree} is not an install folder", fix="run the install stage")
    found = {}
    for folder, dirs, files in os.walk(tree):
        for name in [*dirs, *files]:
            path = Path(folder, name)
            relative = path.relative_to(tree).as_posix()
            mode = path.lstat().st_mode
            found[relative] = (f"link:{os.readlink(path)}" if stat.S_ISLNK(mode) else
                "dir" if stat.S_ISDIR(mode) else "file")
    return found


def _is_macho_file(path: Path) -> bool:
    with path.open("rb") as handle:
        return is_macho(handle.read(8))


PLATFORM = MacOSPlatform()
