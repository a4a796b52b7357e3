"""Search-path hygiene: every DT_RUNPATH/DT_RPATH entry is $ORIGIN-relative, stays inside
site-packages, names a folder the wheel ships or a declared dependency's folder, and the
package's own folders come before foreign ones."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.verify.checks._common import expand_origin, finding
from release.verify.context import VerifyContext
from release.verify.data import distribution_folder
from release.verify.wheel import ElfFile, WheelModel

NAME = "search-path"
RUNS_PROGRAMS = False
_SYSTEM_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")


def _tag_findings(elf: ElfFile) -> list[Finding]:
    if elf.info.rpath and elf.info.runpath:
        return [finding(NAME, Severity.WARNING, elf.path, "carries both DT_RPATH and "
                        "DT_RUNPATH", why="the loader ignores DT_RPATH then; it is dead weight "
                        "that confuses readers", fix="drop DT_RPATH")]
    if elf.info.rpath:
        return [finding(NAME, Severity.WARNING, elf.path, "uses DT_RPATH where DT_RUNPATH is "
                        "meant", why="DT_RPATH is inherited by every library this file loads "
                        "and overrides LD_LIBRARY_PATH",
                        fix="link with -Wl,--enable-new-dtags (CMake does by default)",
                        rpath=list(elf.info.rpath))]
    return []


def _entry_finding(wheel: WheelModel, context: VerifyContext, elf: ElfFile,
                   entry: str) -> tuple[Finding | None, str]:
    """A finding for one entry (or None) and its class: own, foreign or bad."""
    if entry == "":
        return finding(NAME, Severity.ERROR, elf.path, "has an empty search-path entry",
                       why="an empty entry means the current working directory",
                       fix="remove the stray ':'"), "bad"
    if not entry.startswith(("$ORIGIN", "${ORIGIN}")):
        system = entry.rstrip("/") in _SYSTEM_DIRS
        return finding(NAME, Severity.WARNING if system else Severity.ERROR, elf.path,
                       f"search path '{entry}' is absolute", why="it names a folder of the "
                       "build machine, not the install location", fix="use $ORIGIN-relative "
                       "entries (CMake: INSTALL_RPATH \"$ORIGIN/...\")", entry=entry), "bad"
    folder = expand_origin(entry, elf.folder)
    if folder is None:
        return finding(NAME, Severity.ERROR, elf.path, f"search path '{entry}' leaves "
                       "site-packages", why="it depends on where the interpreter is installed",
                       fix="point it inside the package or at a declared dependency"), "bad"
    prefix = f"{folder}/" if folder else ""
    if any(path.startswith(prefix) for path in wheel.files):
        return None, "own"
    distribution = distribution_folder(context.distribution_dirs, folder)
    if distribution and wheel.metadata.requires_distribution(distribution):
        return None, "foreign"
    if distribution:
        return finding(NAME, Severity.ERROR, elf.path, f"search path '{entry}' enters "
                       f"{folder}/ of '{distribution}', which the wheel does not declare",
                       fix=f"add '{distribution}' to Requires-Dist or drop the entry",
                       entry=entry, distribution=distribution), "bad"
    return finding(NAME, Severity.ERROR, elf.path, f"search path '{entry}' names {folder}/, "
                   "which is not in the wheel", why="a missing folder is searched for nothing "
                   "and hides a packaging mistake", fix="drop the entry or ship the folder",
                   entry=entry), "bad"


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    findings: list[Finding] = []
    for elf in wheel.binaries:
        findings += _tag_findings(elf)
        classes = []
        for entry in elf.info.runpath or elf.info.rpath:
            problem, kind = _entry_finding(wheel, context, elf, entry)
            classes.append(kind)
            if problem is not None:
                findings.append(problem)
        if "own" in classes and "foreign" in classes[:classes.index("own")]:
            findings.append(finding(
                NAME, Severity.WARNING, elf.path, "searches a foreign folder before the "
                "package's own", why="a library of the same name there shadows the shipped one",
                fix="list the package's own folders first",
                entries=list(elf.info.runpath or elf.info.rpath)))
    return findings
