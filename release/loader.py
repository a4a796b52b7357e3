"""The loader model: what a platform's dynamic loader does with a wheel's binaries, in words
verify's checks can use without knowing the binary format.

Each platform module provides one ``LoaderModel``. It owns how a search-path entry is
written for a (binary, folder) pair and how an entry resolves back, which folders a binary
searches (including what a loading binary passes down), which libraries count as system
libraries for a platform tag and what the tag promises, and how a binary is loaded in a load
check. The checks in ``release/verify/checks/`` consume this model plus the format-neutral
``BinaryInfo``; a new binary format is a reader plus a platform module."""

from __future__ import annotations

import enum
import platform as host_platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from release.binary.model import BinaryInfo, BinaryReader


@dataclass(frozen=True)
class Host:
    """The machine verify runs on (passed in, so other hosts are testable anywhere)."""

    system: str      # "linux", "darwin", "windows"
    machine: str     # "x86_64", "aarch64"...

    @classmethod
    def current(cls) -> Host:
        machine = host_platform.machine().lower()
        return cls(host_platform.system().lower(), {"amd64": "x86_64", "arm64": "aarch64"}.get(
            machine, machine))


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
            if prefix in self.symbol_versions and number and \
                    number not in self.symbol_versions[prefix]:
                found.add(version)
        return sorted(found, key=lambda v: (v.partition("_")[0], _number(v.partition("_")[2])))


def _number(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


@dataclass(frozen=True)
class LoadItem:
    path: Path
    extension: bool           # an extension module (loaded as the interpreter imports it)


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

    def can_load(self, platform_tags: Sequence[str], host: Host) -> bool:
        """Whether binaries of a wheel with these tags can be loaded on ``host``."""

    def load_command(self, items: Sequence[LoadItem]) -> list[str]:
        """A command that loads ``items`` in order in one fresh process and exits 0."""


class HasLoader(Protocol):
    """The part of a platform verify needs: its loader model and binary reader."""

    name: str
    loader: LoaderModel | None
    reader: BinaryReader | None


def loader_for(platforms: Sequence[HasLoader],
               platform_tags: Sequence[str]) -> HasLoader | None:
    """The platform whose loader claims the wheel's tags (None: none does, or no tag)."""
    for candidate in platforms:
        loader = candidate.loader
        if loader is not None and any(loader.claims_tag(tag) for tag in platform_tags):
            return candidate
    return None
