"""Duplicate definitions: strong exported symbols defined by more than one shipped library.

Ignored, since the loader cannot bind one user to the wrong copy or they are the same code:
linker-generated symbols every shared object defines (BENIGN), weak definitions (vague
linkage: inline functions, templates), STB_GNU_UNIQUE ones (merged into one copy per process
by design), version-node symbols (a version definition's own name: OPENSSL_1_1_0), module
init functions (PyInit_*), and symbols only extension modules define (loaded RTLD_LOCAL, they
do not interpose on each other). Reported apart: byte-identical copies of one library (one
finding per set of copies; a copy counts as its original among the definers) and C++
vague-linkage symbols (one note): std:: symbols, type information, vtables, guard variables
and template instances, which every C++ module that uses them may define, the same by the
one-definition rule. A third-party wheel's clashes beyond a few sets of libraries are one
finding with the largest sets in its details: one export policy, one root cause."""

from __future__ import annotations

from release.binary.model import GLOBAL
from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel import BinaryFile, WheelModel

NAME = "duplicates"
RUNS_PROGRAMS = False
# Symbols a linker makes in every image (section bounds, the image's own handle and header;
# the readers drop a leading underscore, so __mh_dylib_header reads _mh_dylib_header). Some
# linkers (zig's) export them from every image; each image binds its own.
BENIGN = frozenset({"_init", "_fini", "__bss_start", "_edata", "_end", "__end__", "_etext",
                    "__data_start", "data_start", "_IO_stdin_used", "__dso_handle",
                    "_mh_dylib_header", "_mh_bundle_header", "_mh_execute_header"})
_STD = ("_ZNSt", "_ZNKSt", "_ZSt", "_ZTISt", "_ZTSSt", "_ZTVSt", "_ZTTSt", "_ZGVZNSt",
        "_ZNSa", "_ZNKSa", "_ZNSs", "_ZNKSs", "_ZNSi", "_ZNSo", "_ZNSd")
_VAGUE = ("_ZTI", "_ZTS", "_ZTV", "_ZTT", "_ZGV", "_ZTH", "_ZTW")
_SAMPLE = 10
_GROUPS_SHOWN = 3   # a third-party wheel's clash groups reported one by one, at most


def _loadable(wheel: WheelModel, context: VerifyContext) -> list[BinaryFile]:
    return [binary for binary in wheel.binaries
            if (context.loader.is_loadable_library(binary.info) if context.loader
                else binary.info.file_type == "shared")]   # programs are not loaded together


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    binaries = _loadable(wheel, context)
    extensions = {binary.path for binary in binaries if binary.is_extension}
    findings, copies = _copies(wheel, binaries)
    copy_of = {path: group[0] for group in copies for path in group}
    definers: dict[str, list[str]] = {}
    for binary in binaries:
        for symbol in binary.info.dynamic_symbols:
            if (symbol.exported and symbol.binding == GLOBAL and symbol.name not in BENIGN
                    and symbol.name != symbol.version and not symbol.name.startswith("PyInit_")):
                definers.setdefault(symbol.name, []).append(binary.path)
    # One group per set of definers: linear in the symbols, one finding per root cause
    # (the same code shipped N times is one finding, not N*(N-1)/2 pairs).
    groups: dict[tuple[str, ...], list[str]] = {}
    standard: dict[tuple[str, ...], list[str]] = {}
    for name, paths in definers.items():
        libraries = tuple(sorted(set(paths)))
        if len(libraries) < 2 or set(libraries) <= extensions:
            continue
        if len({copy_of.get(path, path) for path in libraries}) < 2:
            continue  # only copies of one library: reported once as copies
        libraries = tuple(sorted({copy_of.get(path, path) for path in libraries}))
        (standard if _vague(name) else groups).setdefault(libraries, []).append(name)
    record = wheel.build_record
    components = {c.file for c in record.components} if record else set()
    theirs = [(libraries, names) for libraries, names in groups.items()
              if not all(path in components for path in libraries)]
    if len(theirs) > _GROUPS_SHOWN:
        findings.append(_summary(theirs))
        groups = {libraries: names for libraries, names in groups.items()
                  if all(path in components for path in libraries)}
    for libraries, names in sorted(groups.items()):
        ours = all(path in components for path in libraries)
        findings.append(finding(
            NAME, Severity.ERROR if ours else Severity.WARNING, libraries[-1],
            _what(len(names), "exported symbols", libraries),
            why="the loader binds every user to whichever loads first",
            fix="define each symbol in one library (hide internals with -fvisibility=hidden)",
            pair=list(libraries[:2]), libraries=list(libraries[:_SAMPLE]),
            library_count=len(libraries), count=len(names), sample=sorted(names)[:_SAMPLE]))
    if standard:
        names = sorted({name for group in standard.values() for name in group})
        exporters = sorted({path for group in standard for path in group})
        findings.append(finding(
            NAME, Severity.INFO, "", f"{len(names)} C++ vague-linkage symbols (std::, type "
            f"information, template instances) are exported by more than one of "
            f"{len(exporters)} libraries", why="every C++ module that uses them may define "
            "them; one copy wins, and the one-definition rule makes them the same",
            fix="export only the API (a version script or -fvisibility=hidden)",
            count=len(names), libraries=exporters[:_SAMPLE], sample=names[:_SAMPLE]))
    return findings


def _vague(name: str) -> bool:
    return name.startswith(_STD) or name.startswith(_VAGUE) or _template_instance(name)


def _template_instance(name: str) -> bool:
    """Whether an Itanium-mangled name has a template argument list (a source name directly
    followed by 'I'): an instance every user of the template may define."""
    if not name.startswith("_Z"):
        return False
    index, size = 2, len(name)
    while index < size:
        if name[index].isdigit():
            end = index
            while end < size and name[end].isdigit():
                end += 1
            length = int(name[index:end])
            after = end + length
            if after < size and name[after] == "I":
                return True
            index = max(after, end)
        else:
            index += 1
    return False


def _summary(groups: list[tuple[tuple[str, ...], list[str]]]) -> Finding:
    largest = sorted(groups, key=lambda group: (-len(group[1]), group[0]))
    symbols = sum(len(names) for _, names in groups)
    libraries = sorted({path for paths, _ in groups for path in paths})
    first_paths, first_names = largest[0]
    return finding(
        NAME, Severity.WARNING, "", f"{symbols} exported symbols are defined by more than one "
        f"library, in {len(groups)} sets of {len(libraries)} libraries; the largest: "
        + _what(len(first_names), "symbols", first_paths),
        why="the loader binds every user to whichever loads first",
        fix="export only each library's API (a version script or -fvisibility=hidden)",
        count=symbols, library_count=len(libraries), libraries=libraries[:_SAMPLE],
        groups=[{"libraries": list(paths[:_SAMPLE]), "count": len(names),
                 "sample": sorted(names)[:_SAMPLE]} for paths, names in largest[:20]])


def _what(count: int, kind: str, libraries: tuple[str, ...]) -> str:
    if len(libraries) == 2:
        return f"{count} {kind} defined by both {libraries[0]} and {libraries[1]}"
    return (f"{count} {kind} defined by each of {len(libraries)} libraries "
            f"({', '.join(libraries[:3])}, ...)")


def _copies(wheel: WheelModel, binaries: list[BinaryFile]
            ) -> tuple[list[Finding], list[list[str]]]:
    """Byte-identical libraries: one warning per set of copies."""
    by_digest: dict[str, list[str]] = {}
    for binary in binaries:
        digest = wheel.digests.get(binary.path)
        if digest:
            by_digest.setdefault(digest, []).append(binary.path)
    groups = [sorted(paths) for paths in by_digest.values() if len(paths) > 1]
    findings = [finding(
        NAME, Severity.WARNING, group[-1], f"{len(group)} byte-identical copies of one "
        f"library: {', '.join(group[:4])}" + (", ..." if len(group) > 4 else ""),
        why="both can be loaded into one process, each with its own state",
        fix="ship the library once and point the others' search paths at it",
        copies=group[:_SAMPLE], count=len(group)) for group in sorted(groups)]
    return findings, groups
