"""The Windows loader as verify's loader model, for a wheel installed by pip.

CPython (3.8 and later) loads an extension module with ``LoadLibraryExW`` and
``LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR``: a DLL's imports are
found in the loading DLL's own folder, in the folders the process added with
``os.add_dll_directory``, and in System32. PATH and the current folder are not searched.
PE files carry no search path of their own: the package adds its folders when it is
imported. This model takes those folders from the wheel's layout (``for_wheel``):

* ``<package>/lib``: where this pipeline's wheels install their DLLs; the package's
  ``__init__.py`` adds it.
* ``<name>.libs`` at the top of site-packages: where delvewheel puts the DLLs it bundles
  (with mangled names) and the folder its patch of ``__init__.py`` adds.

System DLLs are an allow-list (``system-dlls.json``), compared in lower case. No load check
runs yet: this host cannot load PE files (``runner`` is None)."""

from __future__ import annotations

import fnmatch
import json
import posixpath
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from release.binary.model import BinaryInfo
from release.loader import (
    Entry,
    EntryKind,
    Host,
    LoaderWords,
    LoadItem,
    Problem,
    Runner,
    SearchFolder,
    SystemPolicy,
)

SYSTEM_DLLS = Path(__file__).with_name("system-dlls.json")

# A tag's architecture as the binary readers name the machine (release/binary/pe.py).
_MACHINES = {"win_amd64": "x86_64", "win_arm64": "aarch64", "win32": "x86"}
_DLL_LOAD_DIR = "the DLL's own folder"
_ADDED = "os.add_dll_directory"


@dataclass(frozen=True)
class SystemDlls:
    libraries: frozenset[str]
    patterns: tuple[str, ...]
    about: str


@cache
def system_dlls() -> SystemDlls:
    data = json.loads(SYSTEM_DLLS.read_text(encoding="utf-8"))
    return SystemDlls(frozenset(name.lower() for name in data["libraries"]),
                      tuple(pattern.lower() for pattern in data["patterns"]), data["about"])


def added_folders(folders: Collection[str]) -> tuple[str, ...]:
    """The folders of a wheel (site-packages relative) its packages add with
    os.add_dll_directory: ``<name>.libs`` (delvewheel) and ``<package>/lib``."""
    top = sorted(folder for folder in folders if folder and "/" not in folder)
    libs = [folder for folder in top if folder.endswith(".libs")]
    own = [f"{folder}/lib" for folder in top if f"{folder}/lib" in folders]
    return (*own, *libs)


class WindowsLoader:
    words = LoaderWords(search_path="os.add_dll_directory",
                        relative_entry="<package>.libs",
                        how_to_set="ship the DLL in <package>.libs (or <package>/lib) and add "
                                   "that folder with os.add_dll_directory in the package's "
                                   "__init__.py (delvewheel repair does both)")

    def __init__(self, added: Sequence[str] = ()) -> None:
        self.added = tuple(added)

    def for_wheel(self, folders: Collection[str]) -> WindowsLoader:
        return WindowsLoader(added_folders(folders))

    def claims_tag(self, platform_tag: str) -> bool:
        return platform_tag in _MACHINES

    def search_entry(self, binary: str, folder: str) -> str:
        return folder  # the entry is the folder the package adds, site-packages relative

    def entries(self, info: BinaryInfo) -> tuple[str, ...]:
        return ()  # a PE file carries no search path

    def classify(self, entry: str, folder: str) -> Entry:
        if entry == "":
            return Entry(entry, EntryKind.EMPTY)
        if posixpath.isabs(entry) or ":" in entry:
            return Entry(entry, EntryKind.ABSOLUTE)
        normal = posixpath.normpath(entry)
        if normal == ".." or normal.startswith("../"):
            return Entry(entry, EntryKind.OUTSIDE)
        return Entry(entry, EntryKind.INSIDE, "" if normal == "." else normal)

    def search_folders(self, info: BinaryInfo, folder: str,
                       inherited: Sequence[SearchFolder]) -> list[SearchFolder]:
        found = [SearchFolder(folder, _DLL_LOAD_DIR)]
        found += [SearchFolder(added, _ADDED) for added in self.added if added != folder]
        return found

    def passes_down(self, info: BinaryInfo, folder: str, path: str) -> list[SearchFolder]:
        return []  # each DLL's imports are searched from its own folder

    def search_path_problems(self, info: BinaryInfo) -> list[Problem]:
        return []

    def policy(self, platform_tags: Sequence[str]) -> SystemPolicy:
        machines = {_MACHINES[tag] for tag in platform_tags if tag in _MACHINES}
        dlls = system_dlls()
        return SystemPolicy(
            name="windows", libraries=dlls.libraries,
            machine=machines.pop() if len(machines) == 1 else "",
            fix="ship the DLL in <package>.libs and add it with os.add_dll_directory "
                "(delvewheel repair does both)",
            source="platforms/windows/system-dlls.json")

    def is_system(self, name: str, policy: SystemPolicy) -> bool:
        lower = name.lower()
        return lower in policy.libraries or any(
            fnmatch.fnmatchcase(lower, pattern) for pattern in system_dlls().patterns)

    def is_loadable_library(self, info: BinaryInfo) -> bool:
        return info.format == "pe" and info.file_type == "shared"

    def runner(self, platform_tags: Sequence[str], host: Host) -> Runner | None:
        return None  # no PE loader on this host (wine is not modelled yet)

    def load_command(self, items: Sequence[LoadItem], runner: Runner) -> list[str]:
        raise NotImplementedError("no load check runs for Windows wheels (runner is None)")


LOADER = WindowsLoader()
