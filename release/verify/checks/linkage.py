"""Linkage: every needed library of every shipped binary resolves the way the platform's
loader resolves it after ``pip install`` (the loader model says which folders a binary
searches, including what the binaries that load it pass down): into the wheel, into a
declared dependency's folder, or to a system library the wheel's platform tag allows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from release.findings import Finding, Severity
from release.loader import LoaderModel, LoaderWords
from release.verify.checks._common import finding, not_run
from release.verify.context import VerifyContext
from release.verify.linkage_model import (
    IMPORTED,
    IN_WHEEL,
    OPTIONAL,
    SYSTEM,
    TOOLKIT,
    UNDECLARED,
    UNRESOLVED,
    Resolution,
    resolutions,
)
from release.verify.optional_imports import OptionalImport, optional_modules
from release.verify.wheel_model import BinaryFile, WheelModel

NAME = "linkage"
RUNS_PROGRAMS = False

def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    """One finding per root cause. The severity depends on what the resolution says, the
    same in every wheel: not found anywhere is an error; from a distribution the wheel does
    not declare (found in its folder, loaded by its import, or a CUDA toolkit library) a
    warning: it loads only where the user installed that by hand; from a declared
    dependency, an extra, a driver, or through what every loader passes down, a note."""
    if context.loader is None:
        return [not_run(NAME, "no loader model claims the wheel's platform tag")]
    resolved = resolutions(context)
    shipped = {name for binary in wheel.binaries for name in (binary.name, binary.info.soname)
               if name}
    missing = [r for r in resolved if r.kind == UNRESOLVED]
    optional = optional_modules(wheel, sorted({r.binary for r in missing if (binary := _file(
        wheel, r.binary)) is not None and binary.is_extension}), context.options.limits)
    findings = _unresolved(context.loader.words,
                           [r for r in missing if r.binary not in optional], shipped)
    findings += _optional_modules([r for r in missing if r.binary in optional], optional)
    groups: dict[tuple[str, str], list[Resolution]] = {}
    opened = _alternatives(wheel, resolved) if any(
        item.builds for item in resolved if item.kind == IMPORTED) else set()
    for item in resolved:
        if item.kind == SYSTEM and item.via != "system":
            groups.setdefault((SYSTEM, item.via), []).append(item)
        elif item.kind == UNDECLARED:
            groups.setdefault((UNDECLARED, item.distribution), []).append(item)
        elif item.kind == TOOLKIT:
            groups.setdefault((TOOLKIT, item.via), []).append(item)
        elif (item.kind == IMPORTED and item.builds and context.static and
                item.binary not in opened):
            groups.setdefault(("variant", item.distribution), []).append(item)
        elif item.kind in (IMPORTED, OPTIONAL):
            about = {IMPORTED: item.via, OPTIONAL: item.distribution}
            groups.setdefault((item.kind, about[item.kind]), []).append(item)
        elif item.kind == IN_WHEEL and item.unreached:
            groups.setdefault(("partial", item.binary), []).append(item)
        elif item.kind == IN_WHEEL and item.inherited_from:
            groups.setdefault(("inherited", ""), []).append(item)
    for kind in (UNDECLARED, TOOLKIT, "partial", "variant", OPTIONAL, IMPORTED, SYSTEM,
                 "inherited"):
        for key, items in sorted((k[1], v) for k, v in groups.items() if k[0] == kind):
            findings.append(_group_finding(kind, key, items, context.loader.words))
    findings += _shared_names(context.loader, resolved)
    return findings


def _shared_names(loader: LoaderModel, resolved: tuple[Resolution, ...]) -> list[Finding]:
    """One warning for the shipped libraries loaded by a name other packages' libraries
    share (Windows: one module per name in a process), with the files that load them."""
    items = [item for item in resolved
             if item.kind == IN_WHEEL and loader.shared_by_name(item.target)]
    if not items:
        return []
    targets = sorted({item.target for item in items})
    names = sorted({target.rsplit("/", 1)[-1] for target in targets})
    files = sorted({item.binary for item in items})
    return [finding(
        NAME, Severity.WARNING, targets[0] if len(targets) == 1 else "",
        f"{len(files)} files load {_names(names)} by a name other packages' libraries share",
        why="the process keeps one library per name: whichever package loads its copy first "
            "serves every package's imports of that name, whatever its version or build",
        fix="repair with delvewheel, whose name mangling (on by default; do not pass "
            "--no-mangle or --no-mangle-all for them) renames each bundled library to "
            "<name>-<hash>.dll", libraries=targets[:20], files=files[:20], count=len(files))]


def _alternatives(wheel: WheelModel, resolved: tuple[Resolution, ...]) -> set[str]:
    """Libraries the package opens itself (no shipped file needs them, no module) that are
    alternatives of each other: in one folder, exporting (nearly) the same functions, so the
    package chooses one at run time (bitsandbytes' backends, one per CUDA, ROCm or CPU build
    of torch) and a library only one build of a dependency provides is its choice, not an
    assumption."""
    loaded = {item.target for item in resolved if item.kind == IN_WHEEL}
    opened: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for binary in wheel.binaries:
        if binary.is_extension or binary.installed in loaded:
            continue
        exports = frozenset(symbol.name for symbol in binary.info.dynamic_symbols
                            if symbol.exported and symbol.kind == "func")
        if exports:
            opened.setdefault(binary.folder, []).append((binary.path, exports))
    found: set[str] = set()
    for libraries in opened.values():
        for index, (path, exports) in enumerate(libraries):
            for other, theirs in libraries[index + 1:]:
                if len(exports & theirs) >= 0.9 * min(len(exports), len(theirs)):
                    found.update((path, other))
    return found


def _file(wheel: WheelModel, path: str) -> BinaryFile | None:
    return next((binary for binary in wheel.binaries if binary.path == path), None)


def _optional_modules(items: list[Resolution], optional: Mapping[str, OptionalImport]
                      ) -> list[Finding]:
    """One note per extension module the package imports only under a guard catching
    ImportError, whose needed libraries are found nowhere: its designed fallback."""
    by_file: dict[str, list[str]] = {}
    for item in items:
        by_file.setdefault(item.binary, []).append(item.needed)
    return [finding(
        NAME, Severity.INFO, path, f"needs {_names(names)}, not found after installation; the "
        f"package imports {optional[path].module} only under try/except ImportError "
        f"({', '.join(optional[path].importers[:3])})", why="an optional part: the package "
        "falls back when it does not load (installing the library enables it)",
        needed=sorted(set(names)), importers=list(optional[path].importers))
        for path, names in sorted(by_file.items())]


def _unresolved(words: LoaderWords, items: list[Resolution], shipped: set[str]
                ) -> list[Finding]:
    """Libraries found nowhere: one error per file whose search path misses libraries the
    wheel ships, one per library the wheel does not ship (with the files that need it)."""
    by_file: dict[str, list[str]] = {}
    by_library: dict[str, list[str]] = {}
    for item in items:
        if item.needed in shipped:
            by_file.setdefault(item.binary, []).append(item.needed)
        else:
            by_library.setdefault(item.needed, []).append(item.binary)
    findings = []
    for path, names in sorted(by_file.items()):
        findings.append(finding(
            NAME, Severity.ERROR, path, f"needs {_names(names)}, which the wheel ships but this "
            "file does not find after installation", why="the loader will fail to load this "
            "file unless something else has loaded those libraries first",
            fix=f"point {words.search_path} at their folder with a {words.relative_entry} "
                "entry", needed=sorted(names), count=len(names)))
    by_files: dict[tuple[str, ...], list[str]] = {}   # the same files need them: one cause
    for name, needing in by_library.items():
        by_files.setdefault(tuple(sorted(set(needing))), []).append(name)
    for files, names in sorted(by_files.items(), key=lambda row: sorted(row[1])):
        plural = len(names) > 1
        findings.append(finding(
            NAME, Severity.ERROR, files[0] if len(files) == 1 else "",
            f"{_files(list(files))} {_names(names)}, which {'are' if plural else 'is'} not "
            "found after installation", why="the loader will fail to load those files",
            fix=f"ship the {'libraries' if plural else 'library'} in the wheel and point "
                f"{words.search_path} at {'them' if plural else 'it'} with a "
                f"{words.relative_entry} entry, or depend on the distribution that provides "
                f"{'them' if plural else 'it'}",
            needed=sorted(names)[0] if not plural else sorted(names), files=list(files)[:20],
            count=len(files)))
    return findings


def _names(names: list[str]) -> str:
    shown = sorted(set(names))
    return ", ".join(shown[:6]) + (f" and {len(shown) - 6} more" if len(shown) > 6 else "")


def _files(files: list[str]) -> str:
    count = len(set(files))
    return "needs" if count == 1 else f"{count} files need"


class _Shared(TypedDict):
    """The details every grouped linkage finding carries."""

    files: list[str]
    count: int
    needed: list[str]


def _group_finding(kind: str, key: str, items: list[Resolution],
                   words: LoaderWords) -> Finding:
    """One finding for the files that need libraries of one driver (SYSTEM), one package's
    import (IMPORTED), one extra-only or undeclared distribution (OPTIONAL, UNDECLARED), one
    kind of CUDA toolkit library (TOOLKIT), one binary only some loaders serve ("partial"),
    or everything found through what the loaders pass down ("inherited")."""
    names = sorted({item.needed for item in items})
    files = sorted({item.binary for item in items})
    first = files[0] if len(files) == 1 else ""
    many = f"{len(files)} files need" if len(files) > 1 else "needs"
    shown = _names(names)
    common = _Shared(files=files[:20], count=len(files), needed=names)
    if kind == UNDECLARED:
        where = sorted({f"loaded by `{item.via}`" if item.via.startswith("import ") else
                        f"found only in {item.target}/" for item in items})
        return finding(
            NAME, Severity.WARNING, first, f"{many} {shown}, {' and '.join(where)} of "
            f"distribution '{key}', which the wheel does not declare",
            why="a clean install does not have it: those files load only where the user "
                "installed it by hand", fix=f"add '{key}' to Requires-Dist (under an extra "
            "if it is optional)", distribution=key, **common)
    if kind == TOOLKIT:
        toolkit = key.removeprefix("the ").removesuffix(" toolkit")
        providers = sorted({item.distribution for item in items})
        return finding(
            NAME, Severity.WARNING, first, f"{many} {shown}, libraries of the {toolkit} toolkit "
            "the wheel neither ships nor declares, with no search path to them",
            why=f"they load only where a {toolkit} toolkit is on the loader path (or the "
            "package preloads them from a wheel the user installed by hand)",
            fix=f"declare the wheels that provide them ({'; '.join(providers)}), as an extra "
                "if they are optional", providers=providers, toolkit=toolkit, **common)
    if kind == "partial":
        loaders = sorted({loader for item in items for loader in item.unreached})
        named = ", ".join(loader or "the interpreter (a direct load)" for loader in loaders[:3])
        return finding(
            NAME, Severity.WARNING, key, f"needs {shown}, found only through the search path "
            f"some of its loaders pass down, not when loaded by {named}",
            why="loaded that way first, it fails", fix=f"give this file its own "
            f"{words.search_path}", loaders=loaders[:10], **common)
    if kind == "variant":
        builds = items[0].builds
        return finding(
            NAME, Severity.WARNING, first, f"{many} {shown}, which only the {builds} builds of "
            f"the declared '{key}' load (`{items[0].via}`): not provable statically: depends "
            f"on which build of {key} is installed", why=f"with another build of {key} "
            f"installed (a CPU one), nothing provides them and those files fail to load",
            fix=f"pin the build in Requires-Dist (a {key} version with its local label), "
                "declare the wheels that provide the libraries, or run a full verify against "
                "the build users install", distribution=key, builds=builds, **common)
    if kind == OPTIONAL:
        extras = ", ".join(f"[{extra}]" for extra in items[0].extras)
        return finding(
            NAME, Severity.INFO, first, f"{many} {shown} from '{key}', which only the extra "
            f"{extras} declares", why=f"they load only when the package is installed with "
            f"{extras}; the package must load them on demand", extras=list(items[0].extras),
            **common)
    if kind == IMPORTED and key.startswith("import "):
        return finding(
            NAME, Severity.INFO, first, f"{many} {shown} from the declared "
            f"'{items[0].distribution}', found by name after `{key}`",
            why="they load only after that import (the package imports it first)", **common)
    if kind == IMPORTED:
        return finding(
            NAME, Severity.INFO, first, f"{many} {shown}, libraries of {key} that a declared "
            f"wheel provides ({items[0].distribution}), with no search path to them",
            why="they load once the package has preloaded them from that wheel", **common)
    if kind == "inherited":
        return finding(
            NAME, Severity.INFO, first, f"{many} {shown}, found through the search path every "
            "file that loads them passes down", why="the loader also searches the folders the "
            "files that load them pass down (auditwheel's layout relies on it); loaded on "
            "their own, they would not find them", **common)
    return finding(
        NAME, Severity.INFO, first, f"{many} {', '.join(names)}, installed by {key} (no wheel "
        "may ship it)", why="they load only on a machine with that driver", **common)
