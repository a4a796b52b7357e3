"""Metadata against the binaries: every binary is built for the machine the platform tag
promises, and needs no newer symbol versions than its policy allows for that machine (the
loader model's SystemPolicy), and every distribution the linkage check resolved into is
declared (and every run-time dependency the build record names is declared and really
used)."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.verify.checks import linkage
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel import WheelModel

NAME = "metadata"
RUNS_PROGRAMS = False


def _promise_findings(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    policy = context.policy
    if policy is None:
        return []
    findings = []
    for binary in wheel.binaries:
        # a fat file serves every machine it has a slice for (universal2 in an arm64 wheel)
        if policy.machine and binary.info.machine != policy.machine and \
                policy.machine not in binary.info.architectures:
            findings.append(finding(
                NAME, Severity.ERROR, binary.path, f"is built for {binary.info.machine} but "
                f"the platform tag promises {policy.machine}", why="pip installs it on "
                f"{policy.machine} systems, which cannot load it", fix="build the wheel with "
                "--arch matching its binaries", machine=binary.info.machine,
                promised=policy.machine))
            continue
        too_new = policy.too_new(binary.info.required_versions)
        if too_new:
            findings.append(finding(
                NAME, Severity.ERROR, binary.path, f"needs {', '.join(too_new[-3:])}, newer "
                f"than the {policy.name} tag allows", why="pip installs it on systems "
                "whose C/C++ runtime is too old; the import then fails",
                fix=policy.fix, versions=too_new, policy=policy.name, source=policy.source))
    return findings


def _runtime_findings(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    record = wheel.build_record
    if record is None:
        return []
    used = {item.distribution for item in linkage.resolve(wheel, context)
            if item.kind == linkage.EXTERNAL}
    findings = []
    for runtime in record.runtime_dependencies:
        name = runtime.distribution
        if not wheel.metadata.requires_distribution(name):
            findings.append(finding(NAME, Severity.ERROR, "", f"the build record's runtime "
                                    f"dependency '{name}' is not in Requires-Dist",
                                    fix=f"declare '{name}'"))
        if name not in used and context.loader is not None:
            findings.append(finding(NAME, Severity.WARNING, "", f"'{name}' is declared but no "
                                    "shipped binary resolves a library from it",
                                    why="the dependency is dead weight, or the search path "
                                        "misses it",
                                    fix=f"check the search path of the binaries that need "
                                        f"{runtime.library}"))
    return findings


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    return _promise_findings(wheel, context) + _runtime_findings(wheel, context)
