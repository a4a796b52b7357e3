"""Build-path leaks: a build machine's folders written into shipped files. Folders given with
--build-path are errors; the known build-machine folders (CI workspaces, container mounts,
isolated build environments: release/verify/data/build_prefixes.json), absolute source-file
names in binaries (__FILE__) and absolute paths in shipped CMake / pkg-config files are
warnings. Nothing depends on the verifier's own $HOME, $TMPDIR or user: the same wheel gives
the same findings wherever verify runs."""

from __future__ import annotations

import re

from release.findings import Finding, Severity
from release.verify.archive import SOURCE_FILE
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.data import load_build_prefixes
from release.verify.wheel import WheelModel

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


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    """One finding per leaked folder (and one for source file names), naming how many files
    hold it and showing samples: one root cause, one finding."""
    strict = {path.rstrip("/") + "/" for path in context.options.build_paths}
    where = {row.prefix: row.where for row in load_build_prefixes()}
    groups: dict[str, list[tuple[str, str]]] = {}   # prefix -> (file, sample)
    for path, leaks in sorted(wheel.leaks.items()):
        for leak in leaks:
            covered = [other for other in leaks if other is not leak
                       and other.prefix != SOURCE_FILE and leak.sample.startswith(other.prefix)]
            if covered and (leak.prefix == SOURCE_FILE or leak.prefix not in strict):
                continue  # the same path, already reported through the folder it lies in
            groups.setdefault(leak.prefix, []).append((path, leak.sample))
    findings = []
    for prefix, hits in sorted(groups.items()):
        files = [path for path, _ in hits]
        lead = files[0] if len(files) == 1 else ""
        many = f"{len(files)} files contain" if len(files) > 1 else "contains"
        sample = hits[0][1][:120]
        details = {"prefix": prefix, "count": len(files), "files": files[:20],
                   "samples": [text[:120] for _, text in hits[:5]]}
        if prefix == SOURCE_FILE:
            findings.append(finding(
                NAME, Severity.WARNING, lead, f"{many} an absolute source file name, e.g. "
                f"'{sample}'", why=_WHY + " (assert() and __FILE__ keep it)",
                fix="build with -ffile-prefix-map=<source>=<name>", **details))
            continue
        known = where.get(prefix)
        findings.append(finding(
            NAME, Severity.ERROR if prefix in strict else Severity.WARNING, lead,
            f"{many} the path '{prefix}'" + (f" ({known})" if known else "")
            + f", e.g. {sample!r}", why=_WHY,
            fix="build with -ffile-prefix-map and strip; configure files with relative paths",
            **details))
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
