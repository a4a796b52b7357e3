"""The Windows loader as verify's loader model, for a wheel installed by pip.

CPython (3.8 and later) loads an extension module with ``LoadLibraryExW`` and
``LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR``: a DLL's imports are
found in the loading DLL's own folder, in the folders the process added with
``os.add_dll_directory``, and in System32. PATH and the current folder are not searched.
PE files carry no search path of their own: the package adds its folders when it is
imported. This model reads those folders from the wheel (``for_wheel``): the calls of
``os.add_dll_directory`` in the top-level packages' ``__init__.py``, evaluated without running
them (``dll_directories``: path expressions built from ``__file__``, as this pipeline's
packages and delvewheel's patch write them). A call whose argument cannot be evaluated falls
back to the conventional folders (``<package>/lib``, delvewheel's ``<name>.libs``); a wheel
whose packages add no folder gets none, so DLLs it keeps outside the loading file's folder
are reported missing, as Windows would.

System DLLs are an allow-list (``system-dlls.json``), compared in lower case. Load checks run
where the host runs Windows programs: on Windows, or under wine (``platforms/windows/wine.py``)
with a helper that loads each file as CPython does."""

from __future__ import annotations

import ast
import fnmatch
import json
import posixpath
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from platforms.windows.wine import windows_path
from release.binary.model import BinaryInfo
from release.errors import ToolError
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

SYSTEM_DLLS = Path(__file__).with_name("system-dlls.json")

# A tag's architecture as the binary readers name the machine (release/binary/pe.py).
_MACHINES = {"win_amd64": "x86_64", "win_arm64": "aarch64", "win32": "x86"}
_DLL_LOAD_DIR = "the DLL's own folder"
_ADDED = "os.add_dll_directory"


SHARED_DLL_NAMES = Path(__file__).with_name("shared-dll-names.json")
# delvewheel's mangled name: <name>-<32 hex digits>.dll
_MANGLED = re.compile(r".+-[0-9a-f]{32}\.dll\Z", re.IGNORECASE)


@cache
def shared_dll_names() -> tuple[str, ...]:
    """The name patterns of DLLs many packages ship builds of (shared-dll-names.json)."""
    data = json.loads(SHARED_DLL_NAMES.read_text(encoding="utf-8"))
    return tuple(pattern.lower() for pattern in data["patterns"])


def collides_by_name(name: str) -> bool:
    """Whether a shipped DLL of this file name may be another package's build in the same
    process: an unmangled name that many packages ship (zlib1.dll, msvcp140.dll)."""
    lower = name.lower()
    return not _MANGLED.match(lower) and any(
        fnmatch.fnmatchcase(lower, pattern) for pattern in shared_dll_names())


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
    """The conventional folders of a wheel (site-packages relative) its packages add with
    os.add_dll_directory: ``<name>.libs`` (delvewheel) and ``<package>/lib``."""
    top = sorted(folder for folder in folders if folder and "/" not in folder)
    libs = [folder for folder in top if folder.endswith(".libs")]
    own = [f"{folder}/lib" for folder in top if f"{folder}/lib" in folders]
    return (*own, *libs)


class _Unknown(Exception):
    """An expression ``dll_directories`` cannot evaluate without running the code."""


_PATH_FUNCTIONS = {"abspath", "realpath", "normpath", "str", "fspath", "Path", "PurePath",
                   "WindowsPath", "PureWindowsPath", "resolve", "absolute"}


class _PathEvaluator:
    """Evaluates a path expression of one module to a site-packages relative path."""

    def __init__(self, tree: ast.Module, module_file: str) -> None:
        self.module_file = module_file
        self.names: dict[str, list[ast.expr]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.names.setdefault(target.id, []).append(node.value)
            elif (isinstance(node, (ast.NamedExpr, ast.AnnAssign)) and
                    isinstance(node.target, ast.Name) and node.value is not None):
                self.names.setdefault(node.target.id, []).append(node.value)

    def value(self, node: ast.expr, depth: int = 0) -> str:
        if depth > 20:
            raise _Unknown
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return self.module_file
            for bound in self.names.get(node.id, ()):
                try:
                    return self.value(bound, depth + 1)
                except _Unknown:
                    continue
            raise _Unknown
        if isinstance(node, ast.Subscript):
            return self.subscript(node, depth)
        if isinstance(node, ast.Attribute):
            if node.attr in ("pardir", "curdir"):
                return ".." if node.attr == "pardir" else "."
            if node.attr == "parent":
                return posixpath.dirname(self.value(node.value, depth + 1))
            raise _Unknown
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return posixpath.join(self.value(node.left, depth + 1),
                                  self.value(node.right, depth + 1))
        if isinstance(node, ast.Call) and not node.keywords:
            return self.call(node, depth)
        raise _Unknown

    def subscript(self, node: ast.Subscript, depth: int) -> str:
        """``os.path.split(p)[0]`` (the folder), ``[1]`` or ``[-1]`` (the name), and
        ``Path(p).parents[N]``."""
        index = node.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
            raise _Unknown
        value = node.value
        if (isinstance(value, ast.Call) and _function_name(value) == "split"
                and len(value.args) == 1 and not value.keywords):
            folder, name = posixpath.split(self.value(value.args[0], depth + 1))
            if index.value in (0, -2):
                return folder
            if index.value in (1, -1):
                return name
        if isinstance(value, ast.Attribute) and value.attr == "parents" and index.value >= 0:
            path = self.value(value.value, depth + 1)
            for _ in range(index.value + 1):
                path = posixpath.dirname(path)
            return path
        raise _Unknown

    def call(self, node: ast.Call, depth: int) -> str:
        function = node.func
        name = _function_name(node)
        arguments = [self.value(argument, depth + 1) for argument in node.args]
        if (isinstance(function, ast.Attribute) and name in ("resolve", "absolute")
                and not arguments):
            return self.value(function.value, depth + 1)
        if name == "join" and arguments:
            return posixpath.join(*arguments)
        if name == "dirname" and len(arguments) == 1:
            return posixpath.dirname(arguments[0])
        if name in _PATH_FUNCTIONS and len(arguments) == 1:
            return arguments[0]
        raise _Unknown


def _function_name(node: ast.Call) -> str:
    function = node.func
    return (function.attr if isinstance(function, ast.Attribute) else
        function.id if isinstance(function, ast.Name) else "")


# ctypes' ways of loading a DLL by its path: the class constructors and the loaders'
# LoadLibrary (ctypes.cdll.LoadLibrary, ctypes.windll.LoadLibrary)
_LOADS = {"WinDLL", "CDLL", "PyDLL", "OleDLL", "LoadLibrary"}


@dataclass(frozen=True)
class DllDirectories:
    """What a wheel's packages do for the loader when imported: the folders they add with
    os.add_dll_directory and the DLLs they load by their path first (preloads, such as
    scikit-learn's ``_distributor_init.py`` loading ``.libs/vcomp140.dll``)."""

    folders: tuple[str, ...]      # site-packages relative, in the order they are added
    unknown: tuple[str, ...]      # the modules with a call that could not be evaluated
    preloads: tuple[tuple[str, str], ...] = ()   # (site-packages relative DLL, module)


def _relative(text: str) -> str | None:
    """A path evaluated from a module, as a site-packages relative path; None when it
    names a folder of the machine or leaves site-packages."""
    text = text.replace("\\", "/")
    if posixpath.isabs(text) or text[1:2] == ":":
        return None
    normal = posixpath.normpath(text)
    normal = "" if normal == "." else normal
    return None if normal == ".." or normal.startswith("../") else normal


def dll_directories(init_modules: Mapping[str, str]) -> DllDirectories:
    """Reads the ``os.add_dll_directory`` calls and the ctypes loads by path (``WinDLL``,
    ``CDLL``, ``LoadLibrary``) of the top-level packages' ``__init__.py`` and
    ``_distributor_init.py`` ("<pkg>/<module>.py" -> source) without running them."""
    folders: list[str] = []
    unknown: list[str] = []
    preloads: list[tuple[str, str]] = []
    for module_file, source in sorted(init_modules.items()):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue  # not importable either; other checks see it
        evaluator = _PathEvaluator(tree, module_file)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or len(node.args) < 1:
                continue
            name = _function_name(node)
            if name not in _LOADS and (name != "add_dll_directory" or len(node.args) != 1):
                continue
            try:
                path = _relative(evaluator.value(node.args[0]))
            except _Unknown:
                if name == "add_dll_directory":
                    unknown.append(module_file)
                continue  # a load by name, or of a path we cannot evaluate
            if path is None:
                continue
            if name != "add_dll_directory":
                if "/" in path and (path, module_file) not in preloads:
                    preloads.append((path, module_file))
            elif path not in folders:
                folders.append(path)
    return DllDirectories(tuple(folders), tuple(unknown), tuple(preloads))


class WindowsLoader(LoaderModel):
    words = LoaderWords(search_path="os.add_dll_directory",
                        relative_entry="<package>.libs",
                        how_to_set="ship the DLL in <package>.libs (or <package>/lib) and add "
                                   "that folder with os.add_dll_directory in the package's "
                                   "__init__.py (delvewheel repair does both)")

    def __init__(self, added: Sequence[str] = (),
                 preloads: Sequence[tuple[str, str]] = ()) -> None:
        self.added = tuple(added)
        # a DLL loaded by its path first is the module of its name for the whole process
        self.preloads = {posixpath.basename(path).lower(): (path, module)
                         for path, module in reversed(preloads)}

    def for_wheel(self, folders: Collection[str], init_modules: Mapping[str, str], *,
                  platform_tags: Sequence[str] = ()) -> WindowsLoader:
        found = dll_directories(init_modules)
        added = found.folders
        if found.unknown:
            # a call we cannot evaluate: assume the conventional folders, and the folder of
            # the package whose module makes it (the commonest argument)
            packages = tuple(posixpath.dirname(module) for module in found.unknown)
            added = (*added, *(f for f in (*added_folders(folders), *packages)
                               if f not in added))
        return WindowsLoader(tuple(folder for folder in added if folder in folders),
                             found.preloads)

    def file_key(self, path: str) -> str:
        return path.lower()   # Windows file names and module names ignore case

    def preloaded(self, name: str) -> tuple[str, str] | None:
        return self.preloads.get(name.lower())

    def names_providers(self, info: BinaryInfo) -> bool:
        return True   # each import names its DLL

    def shared_by_name(self, path: str) -> bool:
        return collides_by_name(posixpath.basename(path))

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

    def binds_by_name(self, info: BinaryInfo) -> bool:
        return False   # each import names the DLL it binds to

    def runner(self, platform_tags: Sequence[str], host: Host) -> Runner | None:
        machines = {_MACHINES[tag] for tag in platform_tags if tag in _MACHINES}
        if len(machines) != 1:
            return None
        return host.runner(machines.pop(), "windows")

    def unloadable(self, info: BinaryInfo, runner: Runner) -> str:
        """Without a Windows Python (under wine) only the stable ABI's python3.dll is there,
        as a stand-in: a module built for one version imports python3X.dll."""
        if runner.python:
            return ""
        versioned = [name for name in info.needed
                     if fnmatch.fnmatchcase(name.lower(), "python3[0-9]*.dll")]
        return (f"needs {versioned[0]}, which no Windows Python provides here (only the stable "
                "ABI's python3.dll has a stand-in)") if versioned else ""

    def load_command(self, items: Sequence[LoadItem], runner: Runner,
                     imports: Sequence[str] = ()) -> list[str]:
        """Adds the folders the wheel's packages add (``for_wheel``), then loads each item
        as CPython does: with Python where the runner has one (on Windows), else with the
        ``load-dlls`` helper (under wine), which imports no module."""
        sites = {item.site for item in items if item.site is not None}
        folders = [site / folder for site in sorted(sites) for folder in self.added]
        if runner.python:
            return runner.python_command("-c", _LOAD_SCRIPT, *map(str, folders), "--",
                                         *(f"m:{module}" for module in imports),
                                         *(("e:" if item.extension else "l:") + str(item.path)
                                           for item in items))
        if imports:
            raise ToolError(f"loading these files needs `import {', '.join(imports)}` first, "
                            "and no Windows Python runs here",
                            fix="run verify on Windows for this check")
        path = _path_for(runner)
        arguments: list[str] = []
        for folder in folders:
            arguments += ["--add-dll-directory", path(folder)]
        for item in items:
            arguments += ["--extension" if item.extension else "--library", path(item.path)]
        return runner.command(runner.helper("load-dlls"), *arguments)


# Run by a Windows Python: os.add_dll_directory for each folder, then each file loaded with
# LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR (ctypes' default, the
# flags of CPython's extension loader); an extension must export PyInit_<name>.
_LOAD_SCRIPT = """
import ctypes, os, sys
arguments = sys.argv[1:]
split = arguments.index("--")
handles = [os.add_dll_directory(folder) for folder in arguments[:split]]
for item in arguments[split + 1:]:
    kind, path = item[:2], item[2:]
    if kind == "m:":
        __import__(path)
        continue
    library = ctypes.WinDLL(path)
    if kind == "e:":
        getattr(library, "PyInit_" + os.path.basename(path).split(".")[0])
"""


def _path_for(runner: Runner) -> Callable[[Path], str]:
    """How the runner's programs name a path of this host: as it is on Windows, on wine's
    drive Z: otherwise."""
    return str if not runner.prefix else windows_path


LOADER = WindowsLoader()
