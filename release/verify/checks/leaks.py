"""Build-path leaks: the build folder, the source folder, temporary folders or the home
folder written into shipped files. Folders given with --build-path are errors; those taken
from the environment ($HOME, $TMPDIR, /tmp/) are warnings."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel import WheelModel

NAME = "leaks"
RUNS_PROGRAMS = False


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    strict = {path.rstrip("/") + "/" for path in context.options.build_paths}
    binaries = {binary.path for binary in wheel.binaries}
    findings = []
    for path, leaks in sorted(wheel.leaks.items()):
        for leak in leaks:
            if leak.prefix == "/tmp/" and path not in binaries and leak.prefix not in strict:
                continue  # scripts name /tmp/ legitimately; in binaries it is a build folder
            if leak.prefix not in strict and any(
                    other.prefix in strict and other.sample.startswith(leak.sample[:20])
                    or leak.sample.startswith(other.prefix) for other in leaks
                    if other.prefix in strict):
                continue  # already reported through the build folder it lies in
            findings.append(finding(
                NAME, Severity.ERROR if leak.prefix in strict else Severity.WARNING, path,
                f"contains the path '{leak.prefix}': {leak.sample[:120]!r}",
                why="a build-machine path leaks the build layout and breaks reproducibility",
                fix="build with -ffile-prefix-map and strip; configure files with relative paths",
                prefix=leak.prefix))
    return findings
