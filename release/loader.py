"""The loader model: what a platform's dynamic loader does with a wheel's binaries, in words
verify's checks can use without knowing the binary format.

Each platform module provides one ``LoaderModel``. It owns how a search-path entry is
written for a (binary, folder) pair and how an entry resolves back, which folders a binary
searches (including what a loading binary passes down), which libraries count as system
libraries for a platform tag and what the tag promises (including its machine), how a binary
is loaded in a load check, and how this host runs those binaries (a ``Runner``: natively, or
through an emulator for another machine). The checks in ``release/verify/checks/`` consume
this model plus the format-neutral ``BinaryInfo``; a new binary format is a reader plus a
platform module. A model whose search depends on the wheel's layout rather than on each
file (Windows) overrides ``for_wheel``, whose default is the model itself."""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from release.binary.model import BinaryInfo, BinaryReader
from release.findings import CheckStatus, Finding, Severity
from release.host import Host, Runner


@dataclass(frozen=True)
class SearchFolder:
    """One folder the loader searches for a binary's needed libraries."""

    folder: str               # relative to site-packages ("" is site-packages itself)
    via: str                  # the loader's own word for the source, e.g. the entry's kind
    inherited_from: str = ""  # wheel path of the loading binary that passed it down


class EntryKind(enum.Enum):
    EMPTY = "empty"           # an empty entry
    SYSTEM = "system"         # an absolute path to a system folder
    ABSOLUTE = "absolute"     # any other absolute path (a folder of the build machine)
    OUTSIDE = "outside"       # relative to the binary, but leaves site-packages
    INSIDE = "inside"         # relative to the binary, inside site-packages


@dataclass(frozen=True)
class Entry:
    text: str
    kind: EntryKind
    folder: str = ""          # INSIDE: the folder relative to site-packages


@dataclass(frozen=True)
class Problem:
    """Something a platform finds wrong with one binary's search path, before verify turns
    it into a finding."""

    severity: str             # "error" or "warning"
    what: str
    why: str = ""
    fix: str = ""
    details: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class LoaderWords:
    """How the platform names things, for findings' messages."""

    search_path: str          # the binary's search-path field, e.g. "LC_RPATH"
    relative_entry: str       # an entry relative to the binary, in the platform's words
    how_to_set: str           # how a build sets one


@dataclass(frozen=True)
class SystemPolicy:
    """What a platform tag promises: the system libraries a wheel may need and the newest
    symbol versions it may require of them."""

    name: str                                  # e.g. the policy or deployment target
    libraries: frozenset[str]
    machine: str = ""                          # the machine the tag promises ("": any)
    symbol_versions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    fix: str = ""                              # how to meet the promise when a file breaks it
    source: str = ""                           # where the policy data came from
    # Libraries no wheel may ship, that a driver installs (libcuda.so.1): name -> provider.
    # Needing one is no defect; the file loads only where that driver is installed.
    provided_by: Mapping[str, str] = field(default_factory=dict)

    def too_new(self, required: Sequence[str]) -> list[str]:
        """Required symbol versions ("PREFIX_1.2") the policy does not allow, sorted."""
        found = set()
        for version in required:
            prefix, _, number = version.partition("_")
            if (prefix in self.symbol_versions and number and
                    number not in self.symbol_versions[prefix]):
                found.add(version)
        return sorted(found, key=lambda v: (v.partition("_")[0], _number(v.partition("_")[2])))


def _number(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


@dataclass(frozen=True)
class LoadItem:
    path: Path
    extension: bool           # an extension module (loaded as the interpreter imports it)
    installed: str = ""       # the path relative to site-packages ("": not known)

    @property
    def site(self) -> Path | None:
        """The site-packages folder the item is installed in (None: not known)."""
        if not self.installed:
            return None
        return self.path.parents[len(self.installed.split("/")) - 1]


class LoaderModel(Protocol):
    words: LoaderWords

    def claims_tag(self, platform_tag: str) -> bool:
        """Whether wheels with this platform tag are loaded by this loader."""

    def search_entry(self, binary: str, folder: str) -> str:
        """The entry that makes ``binary`` search ``folder`` (both site-packages relative)."""

    def entries(self, info: BinaryInfo) -> tuple[str, ...]:
        """The search-path entries the loader uses for this binary's own needs."""

    def classify(self, entry: str, folder: str) -> Entry:
        """The inverse of ``search_entry`` for a binary installed in ``folder``."""

    def search_folders(self, info: BinaryInfo, folder: str,
                       inherited: Sequence[SearchFolder]) -> list[SearchFolder]:
        """Folders searched, in order, for the binary's needed libraries; ``inherited`` is
        what the binaries that load it pass down (see ``passes_down``)."""

    def passes_down(self, info: BinaryInfo, folder: str, path: str) -> list[SearchFolder]:
        """Folders this binary adds to the search of the libraries it loads."""

    def search_path_problems(self, info: BinaryInfo) -> list[Problem]:
        """Problems with the kind of search path the binary carries (not its entries)."""

    def policy(self, platform_tags: Sequence[str]) -> SystemPolicy:
        """The system policy the wheel's platform tags promise."""

    def is_system(self, name: str, policy: SystemPolicy) -> bool:
        """Whether the system provides ``name`` under ``policy``."""

    def is_loadable_library(self, info: BinaryInfo) -> bool:
        """A shared library a process can load (not a program, not an object file)."""

    def binds_by_name(self, info: BinaryInfo) -> bool:
        """Whether this image's references to other images' symbols are bound by name alone,
        to whichever loaded image in its scope defines the name first (so two images
        exporting one name interpose on each other), rather than to the library each
        reference was linked against."""

    def runner(self, platform_tags: Sequence[str], host: Host) -> Runner | None:
        """How ``host`` runs the binaries of a wheel with these tags (natively or emulated);
        None when it cannot, and then no check loads or runs them."""

    def unloadable(self, info: BinaryInfo, runner: Runner) -> str:
        """Why ``runner`` cannot load this binary whatever the wheel does (it needs what the
        runner does not offer: a Python DLL no interpreter here provides), or ""."""

    def load_command(self, items: Sequence[LoadItem], runner: Runner,
                     imports: Sequence[str] = ()) -> list[str]:
        """A command that imports the Python modules ``imports`` (declared dependencies whose
        import loads libraries the items need by name), then loads ``items`` in order, in one
        fresh process started by ``runner``, and exits 0; a ToolError when ``runner`` cannot
        import modules."""

    def file_key(self, path: str) -> str:
        """The form in which the loader compares a library's name or path with a file's:
        as written (Linux, macOS); Windows' loader ignores case (``VCOMP140.DLL`` is the
        shipped ``vcomp140.dll``)."""
        return path

    def preloaded(self, name: str) -> tuple[str, str] | None:
        """(installed path, the module that loads it) of a shipped library the package
        loads by its path before any of its binaries, which the loader then reuses for
        every import of that name (Windows: a module of that name already in the
        process); None when the model knows of none."""
        return None

    def searches_entries(self, info: BinaryInfo) -> bool:
        """Whether the loader searches this binary's search-path entries (``entries``) for
        any of its own needs: on Linux always; dyld only for ``@rpath/`` install names.
        A wheel none of whose binaries does carries inert entries."""
        return True

    def names_providers(self, info: BinaryInfo) -> bool:
        """Whether the image's format can record, for each import, the library that provides
        it (Mach-O's two-level namespace, PE's import table), so that an image binding by name
        all the same (flat namespace) is a choice to question; False for ELF, which resolves
        every import from the process's scope by design."""
        return False

    def shared_by_name(self, path: str) -> bool:
        """Whether the shipped library at ``path``, loaded by its name, may bind to another
        package's library of that name loaded first into the process (Windows keeps one
        module per name: an unmangled ``zlib1.dll``); False where each library is found
        by its path (Linux, macOS)."""
        return False

    def for_wheel(self, folders: Collection[str], init_modules: Mapping[str, str], *,
                  platform_tags: Sequence[str] = ()) -> LoaderModel:
        """The model for one wheel whose installed folders (site-packages relative) are
        ``folders`` and whose top-level packages run ``init_modules`` ("<pkg>/__init__.py"
        and "<pkg>/_distributor_init.py" -> source) when imported. A platform whose search
        depends on the wheel rather than on a search path in each binary (Windows: the
        folders a package adds with os.add_dll_directory) or on the wheel's platform tags
        (Linux: a musllinux wheel is loaded by musl's loader, whose rules differ from
        glibc's) overrides it; the default (macOS: the search path is in each file) is the
        model as it is."""
        return self


def bind_to_wheel(loader: LoaderModel, folders: Collection[str],
                  init_modules: Mapping[str, str], *,
                  platform_tags: Sequence[str] = ()) -> LoaderModel:
    """``loader.for_wheel(folders, init_modules, platform_tags=...)``: the model for one
    wheel."""
    return loader.for_wheel(folders, init_modules, platform_tags=platform_tags)


class HasLoader(Protocol):
    """The part of a platform verify needs: its loader model, binary reader and the
    emulated machines this host can run its binaries for."""

    name: str
    loader: LoaderModel | None
    reader: BinaryReader | None

    def emulated(self, host: Host, *, cache: Path) -> tuple[Runner, ...]:
        """Runners for the machines (and systems) ``host`` runs programs for besides its
        own, whose emulator is installed: a root folder that must be downloaded is used only
        when already in the tool ``cache`` (``runner`` provisions it); what is made locally
        (a wine prefix and its helpers) is made on first use."""


def loader_for(platforms: Sequence[HasLoader],
               platform_tags: Sequence[str]) -> HasLoader | None:
    """The platform whose loader claims the wheel's tags (None: none does, or no tag)."""
    for candidate in platforms:
        loader = candidate.loader
        if loader is not None and any(loader.claims_tag(tag) for tag in platform_tags):
            return candidate
    return None


def unclaimed(platform: HasLoader | None, platform_tags: Sequence[str],
              formats: Sequence[str]) -> list[Finding]:
    """What verify says of a wheel whose binaries (of ``formats``) the platform that claims
    its ``platform_tags`` (``loader_for``) cannot load, or that no platform claims."""
    tags = [tag for tag in platform_tags if tag != "any"]
    if platform is None and formats:
        return [Finding(check="platform", severity=Severity.ERROR, file="",
                        what=f"ships {', '.join(formats)} binaries but its platform tag is "
                             f"{', '.join(platform_tags) or 'missing'}",
                        why="installers put it on systems that cannot load its binaries",
                        fix="give the wheel the platform tag its binaries are built for")]
    if platform is not None and platform.reader is not None:
        # binaries of another platform's format (ELF files under a win_amd64 tag)
        native = platform.reader.name
        foreign = [name for name in formats if name != native]
        if foreign:
            alone = native not in formats
            return [Finding(check="platform", severity=Severity.ERROR if alone else
                            Severity.WARNING, file="",
                            what=f"ships {', '.join(foreign)} binaries but its platform tag is "
                                 f"{', '.join(platform_tags)}",
                            why="installers put it on systems that cannot load those binaries",
                            fix="give the wheel the platform tag its binaries are built for, "
                                "or leave the other platform's files out")]
    if platform is not None or not tags:
        return []
    return [Finding(check="platform", severity=Severity.WARNING, file="",
                    what=f"no loader model for platform tag {', '.join(tags)}: its binaries' "
                         "linkage, search paths and tag promises were not checked",
                    why="verify reads only the formats of the platforms it knows",
                    fix="verify on a platform module that reads this format, or check the "
                        "tag", status=CheckStatus.NOT_RUN)]
