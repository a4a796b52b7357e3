"""Build-path leaks: a build machine's folders written into shipped files. Folders given with
--build-path are errors; the known build-machine folders (CI workspaces, CI users' homes and
temporary folders, container mounts, isolated build environments, Windows drive paths among
them: release/verify/data/build_prefixes.json), absolute source-file names in binaries
(__FILE__) and absolute paths in shipped CMake / pkg-config files are warnings. Nothing
depends on the verifier's own $HOME, $TMPDIR or user: the same wheel gives the same findings
wherever verify runs.

One finding per root cause: per leaked folder, with the count of files and samples (each
path cut where its string ends). A binary whose only mention of the folder is its own
absolute search-path entry is left to the search-path check. A path inside a file the wheel's
maintainer did not build (a vendor's redistributable: its version resource or code signature
names a vendor that is neither the wheel's author nor the vendor of its extension modules) is
a note: the maintainer cannot fix the vendor's build."""

from __future__ import annotations

import re

from release.distribution.archive import SOURCE_FILE, Leak, starts_with_prefix
from release.findings import Finding, Severity
from release.loader import EntryKind
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.data import load_build_prefixes
from release.verify.wheel_model import WheelModel

NAME = "leaks"
RUNS_PROGRAMS = False

# Where a shipped CMake file hands a consumer a folder or file: set(<VAR> "...") and the
# imported targets' location / usage properties. (Search hints, regexes and comments are not
# paths handed over.)
_CMAKE_VALUE = re.compile(
    r'(?:\bset\s*\(\s*[A-Za-z0-9_]+\s+|\b(?:IMPORTED_LOCATION\w*|IMPORTED_IMPLIB\w*|'
    r'INTERFACE_(?:SYSTEM_)?INCLUDE_DIRECTORIES|INTERFACE_LINK_(?:LIBRARIES|DIRECTORIES))\s+)'
    r'"(/[A-Za-z0-9._+@-]+(?:/[A-Za-z0-9._+@-]+)+)')
# pkg-config: a variable set to an absolute folder (prefix=/...), or -I / -L flags.
_PC_VALUE = re.compile(r"(?m)^[A-Za-z0-9_]+=(/[^\s$]+)|(?<!\S)-[IL](/[^\s$]+)")
_WHY = "a build-machine path leaks the build layout and breaks reproducibility"
# Prose a person reads (the project description in METADATA, a README, release notes): a
# build path quoted there is an example or an instruction, not a path a build recorded.
_PROSE_SUFFIXES = (".md", ".rst", ".txt", ".html")
_PROSE_NAMES = ("METADATA", "README", "CHANGELOG", "CHANGES", "NEWS", "HISTORY")
_SHOWN = 5


def _search_path_entries(wheel: WheelModel, context: VerifyContext) -> dict[str, set[str]]:
    """For each binary, its absolute search-path entries (the search-path check's)."""
    loader = context.loader
    if loader is None:
        return {}
    found: dict[str, set[str]] = {}
    for binary in wheel.binaries:
        absolute = {entry for entry in loader.entries(binary.info)
                    if loader.classify(entry, binary.folder).kind
                    in (EntryKind.ABSOLUTE, EntryKind.SYSTEM)}
        if absolute:
            found[binary.path] = absolute
    return found


def _vendors(wheel: WheelModel) -> dict[str, str]:
    """The files (wheel paths) of vendors other than the wheel's own, and their vendor."""
    own = {binary.info.vendor for binary in wheel.binaries if binary.is_extension}
    return {binary.path: binary.info.vendor for binary in wheel.binaries
            if binary.info.vendor and binary.info.vendor not in own
            and not wheel.metadata.names_vendor(binary.info.vendor)}


def _only_search_path(leak: Leak, entries: set[str]) -> bool:
    """Whether every occurrence of the leak is one of the file's own search-path entries."""
    return bool(entries) and leak.count <= len(leak.samples) and all(
        any(sample == entry or sample.startswith(entry) for entry in entries)
        for sample in leak.samples)


def is_prose(path: str) -> bool:
    """A file of text for people: METADATA, a README or notes, any documentation page."""
    name = path.rsplit("/", 1)[-1]
    return name.endswith(_PROSE_SUFFIXES) or name.split(".")[0].upper() in _PROSE_NAMES


def _covered(leak: Leak, prefixes: set[str]) -> bool:
    """A source file name that lies in a folder leaked anywhere in the wheel: the same build
    root, reported through the folder."""
    return leak.prefix == SOURCE_FILE and any(
        starts_with_prefix(sample, prefix) for prefix in prefixes
        for sample in (leak.samples or (leak.sample,)))


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    """One finding per leaked folder (and one for source file names), naming how many files
    hold it and showing samples: one root cause, one finding."""
    strict = {path.rstrip("/") + "/" for path in context.options.build_paths}
    where = {row.prefix: row.where for row in load_build_prefixes()}
    entries = _search_path_entries(wheel, context)
    vendors = _vendors(wheel)
    # one group per root cause: the build machine the folders belong to (a CI service's
    # workspace, home and temporary folders together), or the folder itself
    groups: dict[tuple[str, str], list[tuple[str, Leak]]] = {}   # (cause, vendor) -> hits
    prefixes = {leak.prefix for leaks in wheel.leaks.values() for leak in leaks
                if leak.prefix != SOURCE_FILE}
    prose: list[tuple[str, Leak]] = []
    for path, leaks in sorted(wheel.leaks.items()):
        for leak in leaks:
            if _covered(leak, prefixes) or _only_search_path(leak, entries.get(path, set())):
                continue
            if is_prose(path) and leak.prefix not in strict:
                prose.append((path, leak))
                continue
            vendor = "" if leak.prefix in strict else vendors.get(path, "")
            cause = leak.prefix if leak.prefix in strict else where.get(leak.prefix,
                                                                        leak.prefix)
            groups.setdefault((cause, vendor), []).append((path, leak))
    findings = [_leak_finding(causes, vendor, hits, strict)
                for causes, vendor, hits in _same_files(groups, strict)]
    if prose:
        files = sorted({path for path, _ in prose})
        samples = list(dict.fromkeys(leak.sample[:120] for _, leak in prose))[:_SHOWN]
        findings.append(finding(
            NAME, Severity.INFO, files[0] if len(files) == 1 else "", f"{len(files)} text "
            f"file(s) for people quote build-machine paths, e.g. {samples[0]!r}",
            why="a path quoted in a description or README is an example, not a recorded "
                "build path", files=files[:20], count=len(files), samples=samples))
    for path, text in sorted(wheel.configs.items()):
        absolute = _absolute_values(path, text)
        if absolute:
            findings.append(finding(
                NAME, Severity.WARNING, path, f"holds {len(absolute)} absolute path(s), e.g. "
                f"'{absolute[0]}'", why="a consumer on another machine gets folders that do not "
                "exist there", fix="compute paths from the file's own location "
                "(CMAKE_CURRENT_LIST_DIR, ${pcfiledir})", paths=absolute[:10],
                count=len(absolute)))
    return findings


def _same_files(groups: dict[tuple[str, str], list[tuple[str, Leak]]], strict: set[str]
                ) -> list[tuple[list[str], str, list[tuple[str, Leak]]]]:
    """Known build-machine folders found in exactly the same files are one root cause (one
    build that recorded several of its folders: a container mount and its isolated build
    environment in the same modules)."""
    merged: dict[tuple[object, ...], tuple[list[str], str, list[tuple[str, Leak]]]] = {}
    for (cause, vendor), hits in sorted(groups.items()):
        files = tuple(sorted({path for path, _ in hits}))
        alone = cause in strict or cause == SOURCE_FILE or vendor
        key: tuple[object, ...] = (cause, vendor) if alone else ("files", files)
        causes, _, found = merged.setdefault(key, ([], vendor, []))
        causes.append(cause)
        found.extend(hits)
    return list(merged.values())


def _leak_finding(causes: list[str], vendor: str, hits: list[tuple[str, Leak]],
                  strict: set[str]) -> Finding:
    cause = causes[0]
    files = list(dict.fromkeys(path for path, _ in hits))
    lead = files[0] if len(files) == 1 else ""
    many = f"{len(files)} files contain" if len(files) > 1 else "contains"
    prefixes = list(dict.fromkeys(leak.prefix for _, leak in hits))
    samples = list(dict.fromkeys(sample[:120] for _, leak in hits for sample in
                                 (leak.samples or (leak.sample,))))[:_SHOWN]
    details = {"prefix": prefixes[0], "prefixes": prefixes, "count": len(files),
               "files": files[:20], "samples": samples,
               "occurrences": sum(leak.count for _, leak in hits)}
    named = ", ".join(f"'{prefix}'" for prefix in prefixes[:3])
    paths = f"the path {named}" if len(prefixes) == 1 else f"the paths {named}"
    if vendor:
        return finding(
            NAME, Severity.INFO, lead, f"{many} {paths} inside files of {vendor}, which the "
            f"wheel's maintainer did not build, e.g. {samples[0]!r}",
            why="a redistributable vendor's build left it; the wheel's own build did not",
            fix="nothing to fix in this wheel's build (report it to the vendor)",
            vendor=vendor, **details)
    if prefixes == [SOURCE_FILE]:
        return finding(
            NAME, Severity.WARNING, lead, f"{many} an absolute source file name, e.g. "
            f"'{samples[0]}'", why=_WHY + " (assert() and __FILE__ keep it)",
            fix="build with -ffile-prefix-map=<source>=<name>", **details)
    known = (f" ({'; '.join(c for c in causes if c not in prefixes)})"
        if any(c not in prefixes for c in causes) else "")
    return finding(
        NAME, Severity.ERROR if cause in strict else Severity.WARNING, lead,
        f"{many} {paths}{known}, e.g. {samples[0]!r}", why=_WHY,
        fix="build with -ffile-prefix-map (/pathmap:, -fdebug-prefix-map) and strip; "
            "configure files with relative paths", **details)


def _absolute_values(path: str, text: str) -> list[str]:
    """The absolute paths a shipped CMake / pkg-config file hands its consumers."""
    if path.endswith(".pc"):
        found = {a or b for a, b in _PC_VALUE.findall(text)}
    elif path.rsplit("/", 1)[-1].startswith("Find"):
        return []   # a find module searches the consumer's machine: its paths are hints
    else:
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        found = set(_CMAKE_VALUE.findall(code))
    return sorted(found)
