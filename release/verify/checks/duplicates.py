"""Duplicate definitions: strong exported symbols defined by more than one shipped library.

Ignored, since the loader cannot bind one user to the wrong copy or they are the same code:
linker-generated symbols every shared object defines (BENIGN), weak definitions (vague
linkage: inline functions, templates), STB_GNU_UNIQUE ones (merged into one copy per process
by design), version-node symbols (a version definition's own name: OPENSSL_1_1_0), module
init functions (PyInit_*), and symbols only extension modules define (loaded RTLD_LOCAL, they
do not interpose on each other). Reported apart: byte-identical copies of one library (one
finding per set of copies, not their symbols) and std:: symbols (one note: every C++ module
that instantiates them exports them)."""

from __future__ import annotations

from release.binary.model import GLOBAL
from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel import BinaryFile, WheelModel

NAME = "duplicates"
RUNS_PROGRAMS = False
BENIGN = frozenset({"_init", "_fini", "__bss_start", "_edata", "_end", "__end__", "_etext",
                    "__data_start", "data_start", "_IO_stdin_used", "__dso_handle"})
_STD = ("_ZNSt", "_ZNKSt", "_ZSt", "_ZTISt", "_ZTSSt", "_ZTVSt", "_ZTTSt", "_ZGVZNSt",
        "_ZNSa", "_ZNKSa", "_ZNSs", "_ZNKSs", "_ZNSi", "_ZNSo", "_ZNSd")
_SAMPLE = 10


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
        (standard if name.startswith(_STD) else groups).setdefault(libraries, []).append(name)
    record = wheel.build_record
    components = {c.file for c in record.components} if record else set()
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
            NAME, Severity.INFO, "", f"{len(names)} std:: symbols are exported by more than one "
            f"of {len(exporters)} libraries", why="every C++ module that instantiates them "
            "exports them; one copy wins, and they are the same code",
            fix="export only the API (a version script or -fvisibility=hidden)",
            count=len(names), libraries=exporters[:_SAMPLE], sample=names[:_SAMPLE]))
    return findings


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
