"""The macOS dynamic loader (dyld) as verify's loader model, for an installed wheel.

* A needed library written "@rpath/REST" is searched in the LC_RPATH folders of the binary,
  then of the binaries that loaded it (dyld walks the chain of loaders): ``search_folders``
  and ``passes_down``. The reader hands the linkage check REST (release/binary/macho.py).
* "@loader_path/dir/libx.dylib" names the folder itself, relative to the binary: that folder
  is searched (for the binary's needed names, a slight over-approximation of dyld, which
  looks for that one name there) after the LC_RPATH folders.
* "@loader_path" in an LC_RPATH entry is the folder of the binary carrying the entry.
* "@executable_path" is the interpreter's folder: outside the wheel, never resolved.
* Code signatures: an arm64 slice must carry one, and a signature must match the bytes it
  signs (the reader checks the page hashes); macOS kills a process loading such code.
* Absolute names under /usr/lib and /System are the system (an allow-list: dyld's shared
  cache provides them); any other absolute install name or LC_RPATH entry is a folder of the
  build machine (a leak; delocate copies such libraries into <package>/.dylibs).
* The platform tag (macosx_11_0_arm64) promises the machine and a deployment target: every
  slice's minimum macOS (LC_BUILD_VERSION) must not be newer; an arm64 slice may need 11.0
  whatever the tag says (no arm64 Mac runs an older macOS).

Load checks need a Mac: ``runner`` is None, so they are reported as not run."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from release.binary.macho import OS_PREFIX
from release.binary.model import BinaryInfo
from release.host import Host, Runner
from release.loader import (
    Entry,
    EntryKind,
    LoaderModel,
    LoaderWords,
    LoadItem,
    Problem,
    SearchFolder,
    SystemPolicy,
)

_SITE = "/@site-packages"
_LOADER_PATH = "@loader_path"
_EXECUTABLE_PATH = "@executable_path"
_SYSTEM_PREFIXES = ("/usr/lib/", "/System/")
_TAG = re.compile(r"^macosx_(\d+)_(\d+)_(arm64|x86_64|universal2|universal|intel)$")
_ARM64_FIRST = (11, 0)          # the first macOS that runs on arm64
_NEWEST_MAJOR = 40              # bounds the enumerated allowed versions

# For a Mac's own runner (none yet): extension modules RTLD_LOCAL, libraries RTLD_GLOBAL.
_LOAD_SCRIPT = """
import ctypes, importlib, sys
for item in sys.argv[1:]:
    mode, path = item.split(":", 1)
    if mode == "m":
        importlib.import_module(path)
    else:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if mode == "g" else ctypes.RTLD_LOCAL)
"""


def loader_relative(binary: str, folder: str) -> str:
    """The LC_RPATH entry that makes ``binary`` search ``folder`` (both wheel-relative)."""
    relative = posixpath.relpath(folder or ".", posixpath.dirname(binary) or ".")
    return _LOADER_PATH if relative == "." else f"{_LOADER_PATH}/{relative}"


def expand_loader_path(entry: str, folder: str) -> str | None:
    """An @loader_path entry as a folder relative to site-packages, for a binary installed in
    ``folder``; None for any other entry or one that leaves site-packages."""
    if entry != _LOADER_PATH and not entry.startswith(_LOADER_PATH + "/"):
        return None
    absolute = posixpath.normpath(posixpath.join(_SITE, folder) + entry[len(_LOADER_PATH):])
    if absolute == _SITE:
        return ""
    if absolute.startswith(_SITE + "/"):
        return absolute[len(_SITE) + 1:]
    return None


def is_system_path(path: str) -> bool:
    return path.startswith(_SYSTEM_PREFIXES) or path.rstrip("/") in ("/usr/lib", "/System")


def parse_tag(platform_tag: str) -> tuple[tuple[int, int], str] | None:
    """((major, minor), arch) of a macOS platform tag; None for other tags."""
    found = _TAG.match(platform_tag)
    if found is None:
        return None
    return (int(found.group(1)), int(found.group(2))), found.group(3)


def _allowed(limit: tuple[int, int]) -> frozenset[str]:
    """Every "X.Y" and "X.Y.Z" (as the reader writes them) not newer than ``limit``."""
    versions = set()
    for major in range(10, min(limit[0], _NEWEST_MAJOR) + 1):
        for minor in range(0, 100):
            if (major, minor) > limit:
                break
            versions.add(f"{major}.{minor}")
            if (major, minor) < limit:   # X.Y.Z is newer than a tag's X.Y
                versions.update(f"{major}.{minor}.{patch}" for patch in range(1, 16))
    return frozenset(versions)


_POLICY_MACHINES = {"arm64": "arm64", "x86_64": "x86_64", "universal2": "universal2"}


class MacOSLoader(LoaderModel):
    words = LoaderWords(search_path="LC_RPATH", relative_entry="@loader_path-relative",
                        how_to_set="install_name_tool -add_rpath @loader_path/...; CMake: "
                                   "INSTALL_RPATH \"@loader_path/...\"")

    def claims_tag(self, platform_tag: str) -> bool:
        return parse_tag(platform_tag) is not None

    def search_entry(self, binary: str, folder: str) -> str:
        return loader_relative(binary, folder)

    def entries(self, info: BinaryInfo) -> tuple[str, ...]:
        return info.runpath

    def classify(self, entry: str, folder: str) -> Entry:
        if entry == "":
            return Entry(entry, EntryKind.EMPTY)
        if entry.startswith("/"):
            return Entry(entry, EntryKind.SYSTEM if is_system_path(entry) else EntryKind.ABSOLUTE)
        expanded = expand_loader_path(entry, folder)
        if expanded is None:   # @executable_path (the interpreter), or cwd-relative
            return Entry(entry, EntryKind.OUTSIDE)
        return Entry(entry, EntryKind.INSIDE, expanded)

    def _rpaths(self, info: BinaryInfo, folder: str, via: str,
                inherited_from: str = "") -> list[SearchFolder]:
        return [SearchFolder(expanded, via, inherited_from) for entry in info.runpath
                if (expanded := expand_loader_path(entry, folder)) is not None]

    def search_folders(self, info: BinaryInfo, folder: str,
                       inherited: Sequence[SearchFolder]) -> list[SearchFolder]:
        direct = []
        for path in info.needed_paths:
            if path.startswith(_LOADER_PATH + "/"):
                expanded = expand_loader_path(posixpath.dirname(path), folder)
                if expanded is not None:
                    direct.append(SearchFolder(expanded, _LOADER_PATH))
        found = [*self._rpaths(info, folder, "LC_RPATH"), *inherited, *direct]
        unique: dict[str, SearchFolder] = {}
        for place in found:
            unique.setdefault(place.folder, place)
        return list(unique.values())

    def names_providers(self, info: BinaryInfo) -> bool:
        return True   # a two-level namespace records each import's library ordinal

    def searches_entries(self, info: BinaryInfo) -> bool:
        return any(path.startswith("@rpath/") for path in info.needed_paths)

    def passes_down(self, info: BinaryInfo, folder: str, path: str) -> list[SearchFolder]:
        return self._rpaths(info, folder, f"LC_RPATH of {path}", inherited_from=path)

    def search_path_problems(self, info: BinaryInfo) -> list[Problem]:
        problems = []
        leaked = [path for path in info.needed_paths
                  if path.startswith("/") and not is_system_path(path)]
        if leaked:
            problems.append(Problem(
                "error", "loads a library by an absolute path outside the system",
                why="the path names a folder of the build machine; dyld looks only there",
                fix="bundle the library (delocate-wheel) and load it as @rpath/ or "
                    "@loader_path/", details={"install_names": leaked}))
        executable = [path for path in info.needed_paths if path.startswith(_EXECUTABLE_PATH)]
        if executable:
            problems.append(Problem(
                "error", "loads a library relative to @executable_path",
                why="in a wheel the executable is the Python interpreter, outside the package",
                fix="use @loader_path/ or @rpath/ install names",
                details={"install_names": executable}))
        if "arm64" in info.unsigned and info.file_type in ("shared", "bundle", "executable"):
            problems.append(Problem(
                "error", "has no code signature for arm64",
                why="macOS on Apple silicon refuses to load unsigned arm64 code",
                fix="sign it (codesign -s - FILE; the linker signs ad hoc by default, "
                    "install_name_tool re-signs)"))
        broken = info.bad_signatures
        if broken:
            arm64 = "arm64" in broken
            problems.append(Problem(
                "error" if arm64 else "warning",
                f"has a code signature that does not match its contents ({', '.join(broken)})",
                why="the file changed after it was signed (install_name_tool, strip); macOS "
                    + ("kills the process that loads it on Apple silicon" if arm64 else
                       "may refuse to load it"),
                fix="sign it again after the last change (codesign -f -s - FILE)"))
        return problems

    def policy(self, platform_tags: Sequence[str]) -> SystemPolicy:
        parsed = [found for tag in platform_tags if (found := parse_tag(tag)) is not None]
        if not parsed:
            return SystemPolicy(name="macosx", libraries=frozenset())
        # several macOS tags: the wheel must load under the oldest one it claims
        target = min(version for version, _ in parsed)
        arches = {arch for _, arch in parsed}
        machine = _POLICY_MACHINES.get(arches.pop(), "") if len(arches) == 1 else ""
        versions = {f"{OS_PREFIX}-x86-64": _allowed(target),
                    f"{OS_PREFIX}-arm64": _allowed(max(target, _ARM64_FIRST))}
        return SystemPolicy(
            name=f"macosx_{target[0]}_{target[1]}", libraries=frozenset(), machine=machine,
            symbol_versions=versions, source="the platform tag's deployment target",
            fix="build with MACOSX_DEPLOYMENT_TARGET at most the tag's version (CMake: "
                "CMAKE_OSX_DEPLOYMENT_TARGET), or raise the tag")

    def is_system(self, name: str, policy: SystemPolicy) -> bool:
        return is_system_path(name) or name in policy.libraries

    def is_loadable_library(self, info: BinaryInfo) -> bool:
        return info.file_type in ("shared", "bundle")

    def binds_by_name(self, info: BinaryInfo) -> bool:
        # two-level namespace: each reference names the library it was linked against
        return not info.two_level_namespace

    def runner(self, platform_tags: Sequence[str], host: Host) -> Runner | None:
        return None   # no Mac to load them on: the load checks report "not run"

    def unloadable(self, info: BinaryInfo, runner: Runner) -> str:
        return ""

    def load_command(self, items: Sequence[LoadItem], runner: Runner,
                     imports: Sequence[str] = ()) -> list[str]:
        return runner.python_command(
            "-c", _LOAD_SCRIPT, *(f"m:{module}" for module in imports),
            *(("l:" if item.extension else "g:") + str(item.path) for item in items))


LOADER = MacOSLoader()
