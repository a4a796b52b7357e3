"""Search-path hygiene: every run-time search-path entry is relative to the binary, stays
inside site-packages, names a folder the wheel ships or a declared dependency's folder, and
the package's own folders come before foreign ones. The loader model classifies each entry
and reports what is wrong with the kind of search path a binary carries. One finding per
root cause: every absolute entry of the wheel is one finding (the build's), every entry that
leaves site-packages another, and so on, with the entries and files in its details."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.loader import Entry, EntryKind, LoaderWords
from release.verify.checks._common import finding, from_problem, not_run
from release.verify.context import VerifyContext
from release.verify.data import distribution_folder
from release.verify.wheel_model import BinaryFile, WheelModel

NAME = "search-path"
RUNS_PROGRAMS = False


def _outside_finding(binary: BinaryFile, entry: Entry, words: LoaderWords,
                     hygiene: Severity) -> Finding | None:
    """A finding for an entry that does not name a folder inside site-packages."""
    if entry.kind is EntryKind.EMPTY:
        return finding(NAME, Severity.ERROR, binary.path, "has an empty search-path entry",
                       why="an empty entry means the current working directory",
                       fix="remove the stray separator")
    if entry.kind is EntryKind.SYSTEM:
        return finding(NAME, Severity.INFO, binary.path, f"search path '{entry.text}' is a "
                       "system folder", why="the loader searches the system's folders anyway; "
                       "it names no folder of the build machine", entry=entry.text)
    if entry.kind is EntryKind.ABSOLUTE:
        return finding(NAME, hygiene, binary.path,
                       f"search path '{entry.text}' is absolute", why="it names a folder of "
                       "the build machine, not the install location",
                       fix=f"use {words.relative_entry} entries ({words.how_to_set})",
                       entry=entry.text)
    if entry.kind is EntryKind.OUTSIDE:
        return finding(NAME, hygiene, binary.path, f"search path '{entry.text}' leaves "
                       "site-packages", why="it depends on where the interpreter is installed",
                       fix="point it inside the package or at a declared dependency",
                       entry=entry.text)
    return None


def _entry_finding(wheel: WheelModel, context: VerifyContext, binary: BinaryFile,
                   entry: Entry, words: LoaderWords) -> tuple[Finding | None, str]:
    """A finding for one entry (or None) and its class: own, foreign or bad.

    A search path that does not resolve anything is a survivable defect (a warning; linkage
    reports what fails to load), except in a wheel with a build record, whose search paths
    the pipeline promises are relative and complete (an error: a broken promise)."""
    hygiene = Severity.ERROR if wheel.build_record is not None else Severity.WARNING
    if entry.kind is not EntryKind.INSIDE:
        return _outside_finding(binary, entry, words, hygiene), "bad"
    folder = entry.folder
    if folder in wheel.folders:
        return None, "own"
    distribution = distribution_folder(context.distribution_dirs, folder)
    if distribution and wheel.metadata.requires_distribution(distribution):
        return None, "foreign"
    if distribution:
        return finding(NAME, hygiene, binary.path, f"search path '{entry.text}' enters "
                       f"{folder}/ of '{distribution}', which the wheel does not declare",
                       fix=f"add '{distribution}' to Requires-Dist or drop the entry",
                       entry=entry.text, distribution=distribution), "bad"
    return finding(NAME, hygiene, binary.path, f"search path '{entry.text}' names "
                   f"{folder}/, which is not in the wheel", why="a missing folder is searched "
                   "for nothing and hides a packaging mistake",
                   fix="drop the entry or ship the folder", entry=entry.text), "bad"


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    loader = context.loader
    if loader is None:
        return [not_run(NAME, "no loader model claims the wheel's platform tag")]
    findings: list[Finding] = []
    problems: dict[tuple[str, str], list[tuple[str, Finding]]] = {}
    # a wheel none of whose binaries searches its entries (macOS: no @rpath/ install name)
    inert = not any(loader.searches_entries(binary.info) for binary in wheel.binaries)
    for binary in wheel.binaries:
        for problem in loader.search_path_problems(binary.info):
            problems.setdefault((problem.severity, problem.what), []).append(
                (binary.path, from_problem(NAME, binary.path, problem)))
        entries = loader.entries(binary.info)
        classes = []
        for text in entries:
            found, kind = _entry_finding(wheel, context, binary,
                                         loader.classify(text, binary.folder), loader.words)
            classes.append(kind)
            if found is not None and inert and found.severity is not Severity.INFO:
                found = _inert(found, loader.words)
            if found is not None:
                cause = _cause(found)
                problems.setdefault((found.severity.value, cause), []).append(
                    (binary.path, found))
        if "own" in classes and "foreign" in classes[:classes.index("own")]:
            findings.append(finding(
                NAME, Severity.WARNING, binary.path, "searches a foreign folder before the "
                "package's own", why="a library of the same name there shadows the shipped one",
                fix="list the package's own folders first", entries=list(entries)))
    for group in problems.values():   # one finding per root cause, with its files
        findings.append(_grouped(group))
    return findings


def _inert(found: Finding, words: LoaderWords) -> Finding:
    """An entry no binary of the wheel searches: a note, not a defect of loading."""
    return finding(NAME, Severity.INFO, found.file, f"{found.what} (inert: no file of the "
                   f"wheel searches its {words.search_path})", why="the loader searches these "
                   "entries only for libraries loaded through them, and no file is",
                   fix=found.fix, **found.details)


def _cause(found: Finding) -> str:
    """What makes entries the same root cause: their kind (absolute, leaving site-packages,
    a missing folder, an empty entry) and, for a foreign folder, its distribution."""
    if "distribution" in found.details:
        return f"undeclared:{found.details['distribution']}"
    for words, cause in (("is absolute", "absolute"), ("leaves site-packages", "outside"),
                         ("which is not in the wheel", "missing"),
                         ("empty search-path entry", "empty")):
        if words in found.what:
            return cause
    return found.what


def _grouped(group: list[tuple[str, Finding]]) -> Finding:
    first = group[0][1]
    entries = sorted({str(f.details["entry"]) for _, f in group if "entry" in f.details})
    files = sorted({path for path, _ in group})
    if len(files) == 1 and len(entries) <= 1:
        return first
    what = first.what
    if len(entries) > 1:
        phrases = {"absolute": "absolute search-path entries",
                   "outside": "search-path entries that leave site-packages",
                   "missing": "search-path entries naming folders the wheel does not ship"}
        phrase = phrases.get(_cause(first), "search-path entries like this")
        what = f"{len(entries)} {phrase}, e.g. '{entries[0]}'"
    return Finding(check=NAME, severity=first.severity, file=files[0] if len(files) == 1 else "",
                   what=f"{len(files)} files carry {what}" if len(entries) > 1 and len(files) > 1
                   else f"{len(files)} files: {what}" if len(files) > 1 else what,
                   why=first.why, fix=first.fix,
                   details={"count": len(files), "files": files[:20], "entries": entries[:20],
                            "entry_count": len(entries)})
