"""Metadata against the binaries: every binary is built for the machine the platform tag
promises, and needs no newer symbol versions than its policy allows for that machine (the
loader model's SystemPolicy), and every distribution the linkage check resolved into is
declared (and every run-time dependency the build record names is declared and really
used)."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.verify import linkage_model
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel_model import WheelModel

NAME = "metadata"
RUNS_PROGRAMS = False


def _promise_findings(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    """One finding per broken promise, naming every file that breaks it: binaries for
    another machine, and binaries needing versions newer than the tag's policy allows (the
    build's toolchain, one root cause however many files it built)."""
    policy = context.policy
    if policy is None:
        return []
    machines: dict[str, list[str]] = {}
    too_new: dict[str, list[str]] = {}
    for binary in wheel.binaries:
        # a fat file serves every machine it has a slice for (universal2 in an arm64 wheel)
        if (policy.machine and binary.info.machine != policy.machine and
                policy.machine not in binary.info.architectures):
            machines.setdefault(binary.info.machine, []).append(binary.path)
            continue
        for version in policy.too_new(binary.info.required_versions):
            too_new.setdefault(binary.path, []).append(version)
    findings = []
    for machine, files in sorted(machines.items()):
        findings.append(finding(
            NAME, Severity.ERROR, files[0] if len(files) == 1 else "",
            f"{_count(files, 'is', 'are')} built for {machine} but the platform tag promises "
            f"{policy.machine}", why=f"pip installs it on {policy.machine} systems, which "
            "cannot load it", fix="build the wheel with --arch matching its binaries",
            machine=machine, promised=policy.machine, files=files[:20], count=len(files)))
    if too_new:
        versions = sorted({version for found in too_new.values() for version in found},
                          key=_version_order)
        files = sorted(too_new)
        findings.append(finding(
            NAME, Severity.ERROR, files[0] if len(files) == 1 else "",
            f"{_count(files, 'needs', 'need')} {', '.join(versions[-3:])}, newer than the "
            f"{policy.name} tag allows", why="pip installs it on systems whose C/C++ runtime "
            "is too old; the import then fails", fix=policy.fix, versions=versions,
            policy=policy.name, source=policy.source, files=files[:20], count=len(files),
            by_file={path: too_new[path] for path in files[:20]}))
    return findings


def _count(files: list[str], one: str, many: str) -> str:
    return one if len(files) == 1 else f"{len(files)} files {many}"


def _version_order(version: str) -> tuple[str, tuple[int, ...]]:
    prefix, _, number = version.partition("_")
    return prefix, tuple(int(part) for part in number.split(".") if part.isdigit())


def _runtime_findings(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    record = wheel.build_record
    if record is None:
        return []
    used = {item.distribution for item in linkage_model.resolutions(context)
            if item.kind == linkage_model.EXTERNAL}
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
