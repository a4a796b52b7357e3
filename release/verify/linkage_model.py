"""The linkage model: every needed library of every shipped binary resolved the way the
platform's loader resolves it after ``pip install`` (the loader model says which folders a
binary searches, including what the binaries that load it pass down): into the wheel, into a
declared dependency's folder, to a system library the wheel's platform tag allows, or not at
all. Computed once per verify run (``context.analyses``); the linkage, duplicates,
load-matrix and metadata checks read it, and none of them imports another."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from packaging.utils import canonicalize_name

from release._compat import StrEnum
from release.loader import LoaderModel, SearchFolder, SystemPolicy
from release.verify.context import VerifyContext
from release.verify.data import distribution_row, matching, matching_all
from release.verify.dist_info_files import marker_environment
from release.verify.wheel_model import BinaryFile, WheelModel


class ResolutionKind(StrEnum):
    """Where a needed library is found (its value is the word the report uses)."""

    IN_WHEEL = "wheel"            # a file the wheel ships
    EXTERNAL = "external"         # a declared dependency's folder
    UNDECLARED = "undeclared"     # a distribution the wheel does not declare
    SYSTEM = "system"             # a system library the platform tag allows
    UNRESOLVED = "unresolved"     # nowhere
    IMPORTED = "imported"         # loaded by a declared dependency's import, found by name
    OPTIONAL = "optional"         # a distribution only extras declare
    TOOLKIT = "toolkit"           # a CUDA toolkit library nothing ships a path to


IN_WHEEL, EXTERNAL, UNDECLARED, SYSTEM, UNRESOLVED, IMPORTED, OPTIONAL, TOOLKIT = ResolutionKind
_CHAINS = 8   # distinct loading chains followed per binary (each adds what it passes down)


@dataclass(frozen=True)
class Resolution:
    binary: str          # wheel path of the object that needs it
    needed: str          # the needed library's name
    kind: ResolutionKind
    target: str = ""     # installed path (wheel) or folder (external)
    distribution: str = ""
    via: str = ""        # the loader's word for the search-path source, or "system"
    inherited_from: str = ""  # the loading binary whose search path found it
    extras: tuple[str, ...] = ()  # OPTIONAL: the extras that declare the distribution
    # the loaders (wheel paths; "" for a load by the interpreter itself) through which the
    # binary does not find it: what only some of its loaders pass down
    unreached: tuple[str, ...] = ()
    module: str = ""     # IMPORTED: the module whose import loads it into the process
    # IMPORTED: only these builds of the distribution load it ("CUDA"), and the wheel's
    # requirement does not pin one: which build is installed decides
    builds: str = ""


@dataclass(frozen=True)
class Hit:
    """A needed library's name found in one searched folder."""

    kind: ResolutionKind
    target: str                        # installed path (wheel) or folder (external)
    distribution: str = ""
    # False when the folder is only known to belong to another distribution (a "*" row),
    # which does not say the library is there
    certain: bool = True
    extras: tuple[str, ...] = ()       # OPTIONAL: the extras that declare the distribution


@dataclass(frozen=True)
class Chain:
    """One way a binary is loaded: by ``loader`` (a wheel path; "" for the interpreter),
    which with the binaries that loaded it passes ``folders`` down."""

    loader: str
    folders: tuple[SearchFolder, ...]


@dataclass(frozen=True)
class _Resolver:
    wheel: WheelModel
    context: VerifyContext
    loader: LoaderModel
    policy: SystemPolicy
    environment: Mapping[str, str] | None   # marker values of the wheel's tags
    # the wheel's files and folders as the loader compares names (loader.file_key)
    files: Mapping[str, str] = field(default_factory=dict)
    folders: frozenset[str] = frozenset()

    def declared(self, distribution: str) -> tuple[ResolutionKind, tuple[str, ...]]:
        """(EXTERNAL, ()) when Requires-Dist declares it for this wheel's platform, (OPTIONAL,
        extras) when only extras do, (UNDECLARED, ()) otherwise."""
        declaration = self.wheel.metadata.requires_distribution(distribution, self.environment)
        if declaration.required:
            return EXTERNAL, ()
        return (OPTIONAL, declaration.extras) if declaration.extras else (UNDECLARED, ())

    def lookup(self, folder: str, name: str) -> Hit | None:
        """What the loader finds for ``name`` in ``folder`` (None: nothing, it moves on)."""
        path = f"{folder}/{name}" if folder else name
        shipped = self.files.get(self.loader.file_key(path))
        if shipped is not None:
            return Hit(IN_WHEEL, shipped)
        if self.loader.file_key(folder) in self.folders:
            return None  # the wheel's own folder: the loader just moves on
        row = distribution_row(self.context.distribution_dirs, folder, name)
        if row is not None and not self.loader.is_system(name, self.policy):
            kind, extras = self.declared(row.distribution)
            return Hit(kind, folder, row.distribution, row.library != "*", extras)
        return None

    def imported(self, binary: BinaryFile, name: str) -> Resolution | None:
        """How ``name`` is found by name once a package's import has loaded it: from a
        declared dependency (IMPORTED, OPTIONAL under an extra), from the package itself, or
        (UNDECLARED) from a dependency the wheel does not declare that alone provides it."""
        rows = matching_all(self.context.imported_libraries, name)
        own_name = canonicalize_name(self.wheel.metadata.name)
        for row in rows:
            if canonicalize_name(row.distribution) == own_name:
                if self.loader.is_loadable_library(binary.info):
                    # the package's own library, loaded by its own import before this one
                    return Resolution(binary.path, name, IMPORTED, distribution=row.distribution,
                                      via=f"import {row.module}", module=row.module)
                continue
            kind, extras = self.declared(row.distribution)
            if kind == EXTERNAL:
                builds = "" if self.wheel.metadata.pins_build(row.distribution) else row.builds
                return Resolution(binary.path, name, IMPORTED, distribution=row.distribution,
                                  via=f"import {row.module}", module=row.module, builds=builds)
        for row in rows:
            kind, extras = self.declared(row.distribution)
            if kind == OPTIONAL:
                return Resolution(binary.path, name, OPTIONAL, distribution=row.distribution,
                                  via=f"import {row.module}", extras=extras, module=row.module)
        sole = next((row for row in rows if row.sole and canonicalize_name(row.distribution)
                     != own_name), None)
        if sole is not None:
            return Resolution(binary.path, name, UNDECLARED, distribution=sole.distribution,
                              via=f"import {sole.module}", module=sole.module)
        return None

    def find(self, binary: BinaryFile, name: str,
             inherited: list[SearchFolder]) -> Resolution:
        """How ``name`` resolves for ``binary`` when its loaders pass ``inherited`` down."""
        preloaded = self.loader.preloaded(name)
        if preloaded is not None and self.loader.file_key(preloaded[0]) in self.files:
            return Resolution(binary.path, name, IN_WHEEL, self.files[
                self.loader.file_key(preloaded[0])], via=f"preloaded by {preloaded[1]}")
        maybe: Resolution | None = None   # a folder another distribution owns
        for place in self.loader.search_folders(binary.info, binary.folder, inherited):
            hit = self.lookup(place.folder, name)
            if hit is None:
                continue
            found = Resolution(binary.path, name, hit.kind, hit.target, hit.distribution,
                               place.via, place.inherited_from, hit.extras)
            if hit.certain:
                if found.kind == UNDECLARED:   # ... unless a declared dependency loads it
                    through = self.imported(binary, name)
                    if through is not None and through.kind == IMPORTED:
                        return through
                return found
            maybe = maybe or found  # the wheel's own copy further along still wins
        if self.loader.is_system(name, self.policy):
            return Resolution(binary.path, name, SYSTEM,
                              via=self.policy.provided_by.get(name, "system"))
        # a declared dependency's import first, then what the binary's own search path
        # reaches, then an extra's or an undeclared dependency's import
        through = self.imported(binary, name)
        if through is not None and through.kind == IMPORTED:
            return through
        if maybe is not None:
            return maybe
        if through is not None:
            return through
        toolkit = matching(self.context.toolkit_libraries, name)
        if toolkit is not None:
            # no search path to it: the package preloads it (from a declared NVIDIA wheel)
            # or a CUDA toolkit on the loader path provides it
            declaration = self.wheel.metadata.declares_matching(toolkit.distributions,
                                                                self.environment)
            kind = (IMPORTED if declaration.required else OPTIONAL if declaration.extras
                    else TOOLKIT)
            return Resolution(binary.path, name, kind, distribution=", ".join(
                toolkit.distributions), via=f"the {toolkit.toolkit} toolkit",
                extras=declaration.extras)
        return Resolution(binary.path, name, UNRESOLVED)

    def chains(self) -> dict[str, tuple[Chain, ...]]:
        """For each binary (installed path), the ways it is loaded: from the binaries a user
        loads directly (extension modules, libraries nothing ships needs by name), each
        library reached through what its loaders pass down, chain by chain (the loader walks
        the chain of loaders and what each passes down, as the loader model says)."""
        binaries = {binary.installed: binary for binary in self.wheel.binaries}
        wanted = {name for binary in self.wheel.binaries for name in binary.info.needed}
        found: dict[str, dict[tuple[SearchFolder, ...], str]] = {
            binary.installed: {(): ""} for binary in self.wheel.binaries
            if binary.is_extension or not ({binary.name, binary.info.soname} & wanted)}
        pending: deque[tuple[str, tuple[SearchFolder, ...]]] = deque(
            (installed, ()) for installed in sorted(found))
        while pending:
            installed, folders = pending.popleft()
            binary = binaries[installed]
            passed = _unique_folders((*self.loader.passes_down(binary.info, binary.folder,
                                                               binary.path), *folders))
            for name in binary.info.needed:
                hit = self.find(binary, name, list(folders))
                if hit.kind != IN_WHEEL or hit.target == installed or hit.target not in binaries:
                    continue
                known = found.setdefault(hit.target, {})
                if passed not in known and len(known) < _CHAINS:
                    known[passed] = binary.path
                    pending.append((hit.target, passed))
        return {installed: tuple(Chain(loader, folders) for folders, loader in
                                 found.get(installed, {(): ""}).items())
                for installed in binaries}

    def resolve(self, binary: BinaryFile, name: str, chains: tuple[Chain, ...]) -> Resolution:
        """``name`` for ``binary`` under every chain that loads it: found by all, by some
        (``unreached`` names the loaders whose chain misses it), or by none."""
        results = [(chain.loader, self.find(binary, name, list(chain.folders)))
                   for chain in chains]
        hits = [result for _, result in results if result.kind == IN_WHEEL]
        if not hits:
            resolved = [result for _, result in results if result.kind != UNRESOLVED]
            return (resolved or [results[0][1]])[0]
        if len(hits) == len(results):
            return hits[0]
        missed = tuple(sorted({loader for loader, result in results
                               if result.kind != IN_WHEEL}))
        return replace(hits[0], unreached=missed)


def _unique_folders(folders: tuple[SearchFolder, ...]) -> tuple[SearchFolder, ...]:
    """The folders in order, each folder once (its first source)."""
    seen: set[str] = set()
    kept = []
    for place in folders:
        if place.folder not in seen:
            seen.add(place.folder)
            kept.append(place)
    return tuple(kept)


@dataclass(frozen=True)
class Linkage:
    """The linkage analysis of one wheel: every needed library of every binary resolved (in
    the binaries' order), and for each binary (installed path) the chains that load it."""

    resolutions: tuple[Resolution, ...] = ()
    chains: Mapping[str, tuple[Chain, ...]] = field(default_factory=dict)


def analyze(wheel: WheelModel, context: VerifyContext) -> Linkage:
    """The linkage analysis (empty when no loader model claims the wheel). Checks read it
    through ``resolutions(context)`` and ``chains(context)``: computed once per run
    (``context.analysis``)."""
    if context.loader is None or context.policy is None:
        return Linkage()
    key = context.loader.file_key
    resolver = _Resolver(wheel, context, context.loader, context.policy,
                         marker_environment(wheel.tags),
                         {key(path): path for path in sorted(wheel.files, reverse=True)},
                         frozenset(key(folder) for folder in wheel.folders))
    chains = resolver.chains()
    return Linkage(tuple(resolver.resolve(binary, name, chains[binary.installed])
                         for binary in wheel.binaries for name in binary.info.needed), chains)


def resolutions(context: VerifyContext) -> tuple[Resolution, ...]:
    """Every needed library of every binary of the run's wheel, resolved (computed once)."""
    return context.analysis(analyze).resolutions


def chains(context: VerifyContext) -> Mapping[str, tuple[Chain, ...]]:
    """For each binary of the run's wheel (installed path), the chains that load it."""
    return context.analysis(analyze).chains
