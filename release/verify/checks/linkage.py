"""Linkage: every needed library of every shipped binary resolves the way the platform's
loader resolves it after ``pip install`` (the loader model says which folders a binary
searches, including what the binaries that load it pass down): into the wheel, into a
declared dependency's folder, or to a system library the wheel's platform tag allows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.utils import canonicalize_name

from release.findings import Finding, Severity
from release.loader import LoaderModel, SearchFolder, SystemPolicy
from release.verify.checks._common import finding, not_run
from release.verify.context import VerifyContext
from release.verify.data import distribution_row, matching
from release.verify.metadata import marker_environment
from release.verify.wheel import BinaryFile, WheelModel

NAME = "linkage"
RUNS_PROGRAMS = False

IN_WHEEL, EXTERNAL, UNDECLARED, SYSTEM, UNRESOLVED, IMPORTED, OPTIONAL, TOOLKIT = (
    "wheel", "external", "undeclared", "system", "unresolved", "imported", "optional", "toolkit")


@dataclass(frozen=True)
class Resolution:
    binary: str          # wheel path of the object that needs it
    needed: str          # the needed library's name
    kind: str            # IN_WHEEL, EXTERNAL, UNDECLARED, SYSTEM, UNRESOLVED, IMPORTED, OPTIONAL
    target: str = ""     # installed path (wheel) or folder (external)
    distribution: str = ""
    via: str = ""        # the loader's word for the search-path source, or "system"
    inherited_from: str = ""  # the loading binary whose search path found it
    extras: tuple[str, ...] = ()  # OPTIONAL: the extras that declare the distribution


@dataclass(frozen=True)
class _Resolver:
    wheel: WheelModel
    context: VerifyContext
    loader: LoaderModel
    policy: SystemPolicy
    environment: Mapping[str, str] | None   # marker values of the wheel's tags

    def declared(self, distribution: str) -> tuple[str, tuple[str, ...]]:
        """(EXTERNAL, ()) when Requires-Dist declares it for this wheel's platform, (OPTIONAL,
        extras) when only extras do, (UNDECLARED, ()) otherwise."""
        declaration = self.wheel.metadata.requires_distribution(distribution, self.environment)
        if declaration.required:
            return EXTERNAL, ()
        return (OPTIONAL, declaration.extras) if declaration.extras else (UNDECLARED, ())

    def lookup(self, folder: str, name: str
               ) -> tuple[str, str, str, bool, tuple[str, ...]] | None:
        """(kind, target, distribution, certain) for ``name`` in ``folder``; certain is False
        when the folder is only known to belong to another distribution (a "*" row), which
        does not say the library is there."""
        path = f"{folder}/{name}" if folder else name
        if path in self.wheel.files:
            return IN_WHEEL, path, "", True, ()
        if folder in self.wheel.folders:
            return None  # the wheel's own folder: the loader just moves on
        row = distribution_row(self.context.distribution_dirs, folder, name)
        if row is not None and not self.loader.is_system(name, self.policy):
            kind, extras = self.declared(row.distribution)
            return kind, folder, row.distribution, row.library != "*", extras
        return None

    def resolve(self, binary: BinaryFile, name: str,
                inherited: list[SearchFolder]) -> Resolution:
        maybe: Resolution | None = None   # a folder another distribution owns
        for place in self.loader.search_folders(binary.info, binary.folder, inherited):
            hit = self.lookup(place.folder, name)
            if hit is None:
                continue
            found = Resolution(binary.path, name, hit[0], hit[1], hit[2], place.via,
                               place.inherited_from, hit[4])
            if hit[3]:
                return found
            maybe = maybe or found  # the wheel's own copy further along still wins
        if self.loader.is_system(name, self.policy):
            return Resolution(binary.path, name, SYSTEM,
                              via=self.policy.provided_by.get(name, "system"))
        loaded = matching(self.context.imported_libraries, name)
        own = loaded is not None and canonicalize_name(loaded.distribution) == \
            canonicalize_name(self.wheel.metadata.name)
        if loaded is not None and own and self.loader.is_loadable_library(binary.info):
            # the package's own library, loaded by its own import before this one
            return Resolution(binary.path, name, IMPORTED, distribution=loaded.distribution,
                              via=f"import {loaded.module}")
        if loaded is not None and not own:
            # found by name once `import <module>` has loaded it: fine if it is declared
            kind, extras = self.declared(loaded.distribution)
            return Resolution(binary.path, name, IMPORTED if kind == EXTERNAL else kind,
                              distribution=loaded.distribution, via=f"import {loaded.module}",
                              extras=extras)
        if maybe is not None:
            return maybe
        toolkit = matching(self.context.toolkit_libraries, name)
        if toolkit is not None:
            # no search path to it: the package preloads it (from a declared NVIDIA wheel)
            # or a CUDA toolkit on the loader path provides it
            declaration = self.wheel.metadata.declares_matching(toolkit.distributions,
                                                                self.environment)
            kind = (IMPORTED if declaration.required else OPTIONAL if declaration.extras
                    else TOOLKIT)
            return Resolution(binary.path, name, kind, distribution=", ".join(
                toolkit.distributions), via="preload by the package", extras=declaration.extras)
        return Resolution(binary.path, name, UNRESOLVED)

    def inherited(self) -> dict[str, list[SearchFolder]]:
        """For each binary, the folders passed down by the binaries that load it
        (transitively)."""
        loaders: dict[str, set[str]] = {}
        for binary in self.wheel.binaries:
            for name in binary.info.needed:
                hit = self.resolve(binary, name, [])
                if hit.kind == IN_WHEEL:
                    loaders.setdefault(hit.target, set()).add(binary.installed)
        result: dict[str, list[SearchFolder]] = {}
        for binary in self.wheel.binaries:
            # sorted: the first loader to pass a folder down is the same on every run
            seen, folders = set(), []
            pending = sorted(loaders.get(binary.installed, ()), reverse=True)
            while pending:
                loader = pending.pop()
                if loader in seen:
                    continue
                seen.add(loader)
                parent = self.wheel.binary(loader)
                if parent is not None:
                    folders += self.loader.passes_down(parent.info, parent.folder, parent.path)
                pending.extend(sorted(loaders.get(loader, ()), reverse=True))
            result[binary.installed] = folders
        return result


def resolve(wheel: WheelModel, context: VerifyContext) -> list[Resolution]:
    """Every needed library of every binary, resolved (cached in the context); empty when
    no loader model claims the wheel."""
    cached = context.cache.get(NAME)
    if isinstance(cached, list):
        return cached
    if context.loader is None or context.policy is None:
        return []
    resolver = _Resolver(wheel, context, context.loader, context.policy,
                         marker_environment(wheel.tags))
    inherited = resolver.inherited()
    result = [resolver.resolve(binary, name, inherited.get(binary.installed, []))
              for binary in wheel.binaries for name in binary.info.needed]
    context.cache[NAME] = result
    return result


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    if context.loader is None:
        return [not_run(NAME, "no loader model claims the wheel's platform tag")]
    words = context.loader.words
    findings = []
    sonames = {binary.info.soname or binary.name: binary.path for binary in wheel.binaries}
    # notes and warnings about libraries the wheel may need without shipping them: one
    # finding per group (kind, and the driver / import / distribution / library it is about)
    groups: dict[tuple[str, str], list[Resolution]] = {}
    for item in resolve(wheel, context):
        if item.kind == SYSTEM and item.via != "system":
            groups.setdefault((SYSTEM, item.via), []).append(item)
        if item.kind == UNRESOLVED:
            findings.append(finding(
                NAME, Severity.ERROR, item.binary, f"needs {item.needed}, which is not found "
                "after installation", why="the loader will fail to load this file"
                + (f" unless {sonames[item.needed]} happens to be loaded first"
                   if item.needed in sonames else ""),
                fix=f"ship the library in the wheel and point {words.search_path} at it with a "
                f"{words.relative_entry} entry, or depend on the distribution that provides it",
                needed=item.needed))
        elif item.kind == UNDECLARED:
            where = (f"loaded by `{item.via}`" if item.via.startswith("import ")
                     else f"found only in {item.target}/")
            findings.append(finding(
                NAME, Severity.ERROR, item.binary, f"needs {item.needed}, {where} of "
                f"distribution '{item.distribution}', which the wheel does not declare",
                why="a clean install will not have it",
                fix=f"add '{item.distribution}' to Requires-Dist", needed=item.needed,
                distribution=item.distribution))
        elif item.kind in (IMPORTED, OPTIONAL, TOOLKIT):
            about = {IMPORTED: item.via, OPTIONAL: item.distribution, TOOLKIT: item.needed}
            groups.setdefault((item.kind, about[item.kind]), []).append(item)
        elif item.inherited_from:
            findings.append(finding(
                NAME, Severity.WARNING, item.binary, f"needs {item.needed}, found only through "
                f"the {item.via}", why="it fails when loaded by anything else",
                fix=f"give this file its own {words.search_path}", needed=item.needed))
    for kind in (OPTIONAL, TOOLKIT, IMPORTED, SYSTEM):
        for key, items in sorted((k[1], v) for k, v in groups.items() if k[0] == kind):
            findings.append(_group_finding(kind, key, items))
    return findings


def _group_finding(kind: str, key: str, items: list[Resolution]) -> Finding:
    """One finding for the files that need libraries of one driver (SYSTEM), one package's
    import (IMPORTED), one extra-only distribution (OPTIONAL) or one CUDA toolkit library
    (TOOLKIT)."""
    names = sorted({item.needed for item in items})
    files = sorted({item.binary for item in items})
    first = files[0] if len(files) == 1 else ""
    many = f"{len(files)} file(s) need"
    shown = ", ".join(names[:6])
    common: dict[str, Any] = {"files": files[:20], "count": len(files)}
    if kind == OPTIONAL:
        extras = ", ".join(f"[{extra}]" for extra in items[0].extras)
        return finding(
            NAME, Severity.INFO, first, f"{many} {shown} from '{key}', which only the extra "
            f"{extras} declares", why=f"they load only when the package is installed with "
            f"{extras}; the package must load them on demand", needed=names,
            extras=list(items[0].extras), **common)
    if kind == TOOLKIT:
        return finding(
            NAME, Severity.WARNING, first, f"{many} {key}, a CUDA toolkit library the wheel "
            "neither ships nor declares, with no search path to it",
            why="it loads only where a CUDA toolkit is on the loader path (or the package "
            "preloads it from a wheel the user installed by hand)",
            fix=f"declare the NVIDIA wheel that provides it ({items[0].distribution}), as an "
            "extra if it is optional", needed=key, **common)
    if kind == IMPORTED:
        more = f" and {len(names) - 6} more" if len(names) > 6 else ""
        return finding(
            NAME, Severity.INFO, first, f"{many} {shown}{more} from the declared "
            f"'{items[0].distribution}', found by name after `{key}`",
            why="they load only after that import (the package imports it first)",
            needed=names, **common)
    return finding(
        NAME, Severity.INFO, first, f"{many} {', '.join(names)}, installed by {key} (no wheel "
        "may ship it)", why="they load only on a machine with that driver", needed=names,
        **common)
