"""The interface each ``platforms/<os>/`` module implements, and the registry that finds it.

The pipeline loop (release/building/pipeline.py) is written once; a platform supplies only what
differs per operating system: how to compile for a target, how binaries are named and
fixed up, which repair tool tags the wheel, how this host runs what it built (natively or
emulated), and (for verify) its loader model and binary reader (release/loader.py)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from release._compat import StrEnum
from release.binary.model import BinaryInfo, BinaryReader
from release.errors import ConfigurationError
from release.host import Host, Runner
from release.loader import LoaderModel
from release.manifest import Target, platform_names
from release.tool import Tool


@dataclass(frozen=True)
class SearchPath:
    """Where one shipped binary must find its dependencies: the folders (relative to the
    wheel root, e.g. ``edgert/lib``) and the entries the platform's loader model writes for
    them. Decided once by the pipeline; CMake and the fix-up stage both receive it."""

    binary: str                 # path inside the wheel, "/"-separated
    folders: tuple[str, ...]
    entries: tuple[str, ...]


@dataclass(frozen=True)
class RepairRequest:
    wheel: Path
    out_dir: Path
    keep: tuple[str, ...]       # file names of our own libraries: never renamed or copied
    exclude: tuple[str, ...]    # libraries provided by declared dependencies (e.g. libcudart)
    # the wheel's binaries as the caller already read them (path inside the wheel -> model),
    # so a repair that only reads them does not parse them again; empty: not read yet
    binaries: Mapping[str, BinaryInfo] = field(default_factory=dict)


@dataclass(frozen=True)
class BinaryEdits:
    """One shipped binary as the platform found it and the edits that give it its decided
    search path: each step is the edit tool's arguments, run with the file appended; no
    steps when it already has it."""

    entry: SearchPath
    found: BinaryInfo
    steps: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Edits:
    """The fix-up stage's plan (``Platform.plan_edits``): data, read from the files, with
    nothing run; release/building/patcher.py applies it."""

    tool: str                                  # the program that edits ("patchelf"), or ""
    binaries: tuple[BinaryEdits, ...] = ()     # every shipped binary, in the decision's order


class Route(StrEnum):
    """How a target is built: the words ``python -m release plan`` prints."""

    NATIVE = "native"                        # compiled and run on a machine of the target
    CROSS = "cross+emulated"                 # cross-compiled; its programs run under an emulator
    ELSEWHERE = "needs another host"         # the platform builds it, but not on this host
    NOT_BUILDABLE = "not buildable yet"      # the platform module cannot build it anywhere


@dataclass(frozen=True)
class BuildRoute:
    """The answer of ``Platform.build_route``: the route, what it uses (or why there is
    none), and what this host lacks for it ("" when nothing: the host can build it)."""

    route: Route
    detail: str
    fix: str = ""

    @property
    def buildable(self) -> bool:
        """Whether a machine chosen for the target (its release runner) can build it."""
        return self.route is not Route.NOT_BUILDABLE

    @property
    def reachable(self) -> bool:
        """Whether this host can build it now."""
        return self.route in (Route.NATIVE, Route.CROSS) and not self.fix


class Platform(Protocol):
    """What a platform module's ``PLATFORM`` is. Platforms subclass it, so mypy checks each
    one against it and the optional capabilities come with their defaults: ``parts`` and
    ``merge`` (fat targets merged from thin builds), ``requested_arch`` (a PEP 517 build's
    requested architecture), ``first_configure_note``. Every method that depends on the
    machine is handed the edge's ``Host`` (the plan's, or verify's in ``emulated``); a
    platform never reads the machine itself."""

    name: str
    loader: LoaderModel | None        # None: verify cannot yet read this platform's wheels
    reader: BinaryReader | None
    # What the pipeline says before a first configure, whose compiler checks print nothing
    first_configure_note: str = "seconds with the host's compilers"

    def build_route(self, target: Target, host: Host) -> BuildRoute:
        """How ``host`` builds ``target`` (natively, cross-built and run emulated, not
        there, or not at all yet), and what it lacks for it; never raises for a missing
        tool, never installs anything. The one answer the plan, ``plan`` and ``check-set``
        read (release/building/resolved.py)."""

    def cmake_arguments(self, target: Target, *, host: Host, ccache: bool, cache: Path,
                        build_dir: Path) -> list[str]:
        """Compiler/toolchain arguments for configuring native/ for ``target`` on ``host``.
        Called in the configure stage: it may provision a toolchain into the tool ``cache``
        and write toolchain files into ``build_dir``."""

    def toolchain_tools(self, target: Target, host: Host) -> tuple[Tool, ...]:
        """What builds ``target`` besides the compilers CMake reports (the SBOM's toolchain):
        a compiler fetched from the package index (zig), by name and version; never fetches."""

    def library_file(self, library: str) -> str:
        """File name of a shared library: "edgert_kernels" -> "libedgert_kernels.so"."""

    def extension_file(self, module: str) -> str:
        """File name of the stable-ABI extension module "_C" -> "_C.abi3.so"."""

    def wheel_platform_tag(self, target: Target) -> str:
        """The platform tag before repair (the repair tool may replace it)."""

    def python_tag(self) -> str:
        """Python and ABI tags of the wheel, e.g. "cp39-abi3"."""

    def search_entries(self, binary: str, folders: Sequence[str]) -> tuple[str, ...]:
        """The run-time search-path entries that make ``binary`` search ``folders`` (all
        relative to the wheel root); empty where the format has no search path."""

    def plan_edits(self, root: Path, search_paths: Sequence[SearchPath]) -> Edits:
        """The edits that give each binary under ``root`` its decided search path, read
        from the files (nothing is run); none by default (a format without a run-time
        search path)."""
        return Edits("")

    def edit_tool(self, name: str, *, host: Host) -> str:
        """Where the program ``name`` of this platform's edits is on ``host``."""
        raise ConfigurationError(f"platform {self.name} plans edits but names no tool for "
                                 f"'{name}'", fix="implement Platform.edit_tool")

    def after_edit(self, path: Path, info: BinaryInfo, *, host: Host) -> BinaryInfo:
        """What the platform does to a file after its edits (macOS signs an arm64 slice
        again); the file as it is then."""
        return info

    def check_fixed(self, info: BinaryInfo, entry: SearchPath) -> None:
        """Raises ToolError when a binary, read again after the fix-up, differs from the
        decision; nothing to hold by default (no edits were planned)."""
        return None

    def repair(self, request: RepairRequest) -> Path:
        """Runs the platform's repair tool; returns the repaired wheel (in request.out_dir)."""

    def runner(self, target: Target, *, host: Host, cache: Path) -> Runner | None:
        """How ``host`` runs binaries built for ``target`` (load checks, SDK probes):
        natively, or through an emulator whose root folder it provisions into ``cache``;
        None when it cannot (verify then reads files only)."""

    def emulated(self, host: Host, *, cache: Path) -> tuple[Runner, ...]:
        """Runners for the machines (and systems) ``host`` runs programs for besides its
        own, whose emulator is installed: a root folder that must be downloaded is used only
        when already in the tool ``cache`` (``runner`` provisions it); what is made locally
        (a wine prefix and its helpers) is made on first use."""

    def parts(self, target: Target) -> tuple[Target, ...]:
        """The thin targets ``target`` is built as: the pipeline configures, builds and
        installs each in a folder of the target's build folder, then hands the install trees
        to ``merge`` (macOS universal2). Default: ``(target,)``, a thin target."""
        return (target,)

    def merge(self, installs: Sequence[Path], into: Path, *, host: Host) -> list[str]:
        """Merges the parts' install trees into ``into`` with ``host``'s tools; returns the
        files it merged. Asked only of a platform whose ``parts`` are several."""
        raise ConfigurationError(f"the {self.name} platform builds no target from parts",
                                 fix="declare only thin targets for it")

    def requested_arch(self, environ: Mapping[str, str]) -> str | None:
        """The architecture a PEP 517 build was asked for in ``environ``, where the platform
        reads one (macOS: cibuildwheel's ARCHFLAGS); None (the default) otherwise."""
        return None


def get_platform(name: str) -> Platform:
    """Imports ``platforms.<name>`` and returns its PLATFORM object."""
    try:
        module = importlib.import_module(f"platforms.{name}")
    except ModuleNotFoundError:
        raise ConfigurationError(f"no platform module for '{name}'",
                                 fix=f"use one of: {', '.join(platform_names())}") from None
    platform: Platform = module.PLATFORM
    return platform


def all_platforms() -> tuple[Platform, ...]:
    """Every platform the manifest may name, in a fixed order (by name)."""
    return tuple(get_platform(name) for name in platform_names())
