"""Duplicate definitions: strong exported symbols defined by more than one shipped library.

Ignored: linker-generated symbols every shared object defines (BENIGN), weak definitions
(vague linkage: inline functions, templates) and STB_GNU_UNIQUE ones, which the loader
merges into one copy per process by design."""

from __future__ import annotations

from release.binary.model import GLOBAL
from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel import WheelModel

NAME = "duplicates"
RUNS_PROGRAMS = False
BENIGN = frozenset({"_init", "_fini", "__bss_start", "_edata", "_end", "__end__", "_etext",
                    "__data_start", "data_start", "_IO_stdin_used", "__dso_handle"})
_SAMPLE = 10


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    definers: dict[str, list[str]] = {}
    for binary in wheel.binaries:
        loadable = (context.loader.is_loadable_library(binary.info) if context.loader
                    else binary.info.file_type == "shared")
        if not loadable:
            continue  # programs are not loaded beside each other
        for symbol in binary.info.dynamic_symbols:
            if symbol.exported and symbol.binding == GLOBAL and symbol.name not in BENIGN:
                definers.setdefault(symbol.name, []).append(binary.path)
    # One group per set of definers: linear in the symbols, one finding per root cause
    # (the same code shipped N times is one finding, not N*(N-1)/2 pairs).
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, paths in definers.items():
        libraries = tuple(sorted(set(paths)))
        if len(libraries) > 1:
            groups.setdefault(libraries, []).append(name)
    record = wheel.build_record
    components = {c.file for c in record.components} if record else set()
    findings = []
    for libraries, names in sorted(groups.items()):
        ours = all(path in components for path in libraries)
        if len(libraries) == 2:
            what = (f"{len(names)} exported symbols defined by both {libraries[0]} and "
                    f"{libraries[1]}")
        else:
            shown = ", ".join(libraries[:3])
            what = (f"{len(names)} exported symbols defined by each of {len(libraries)} "
                    f"libraries ({shown}, ...)")
        findings.append(finding(
            NAME, Severity.ERROR if ours else Severity.WARNING, libraries[-1], what,
            why="the loader binds every user to whichever loads first",
            fix="define each symbol in one library (hide internals with -fvisibility=hidden)",
            pair=list(libraries[:2]), libraries=list(libraries[:_SAMPLE]),
            library_count=len(libraries), count=len(names), sample=sorted(names)[:_SAMPLE]))
    return findings
