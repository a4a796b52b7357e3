"""Metadata against the binaries: the manylinux tag promises no newer symbol versions than
the policy allows (GLIBC_, GLIBCXX_, CXXABI_, GCC_), and every distribution the linkage check
resolved into is declared (and every declared CUDA runtime is really used)."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.verify.checks import linkage
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.data import Policy
from release.verify.wheel import ElfFile, WheelModel

NAME = "metadata"
RUNS_PROGRAMS = False


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _too_new(elf: ElfFile, policy: Policy, arch: str) -> list[str]:
    allowed = policy.symbol_versions.get(arch, {})
    too_new = []
    for required in elf.info.required_versions:
        prefix, _, version = required.partition("_")
        if prefix in allowed and version and version not in allowed[prefix]:
            too_new.append(required)
    return sorted(set(too_new), key=lambda v: (v.split("_")[0], _version_key(v.partition("_")[2])))


def _arch(wheel: WheelModel) -> str:
    return next((platform.rsplit("_", 1)[-1] if not platform.endswith("x86_64") else "x86_64"
                 for platform in wheel.platforms if platform.startswith("manylinux")), "")


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    findings: list[Finding] = []
    policy = linkage.wheel_policy(wheel, context)
    if policy is not None:
        arch = _arch(wheel)
        for elf in wheel.binaries:
            too_new = _too_new(elf, policy, arch)
            if too_new:
                findings.append(finding(
                    NAME, Severity.ERROR, elf.path, f"needs {', '.join(too_new[-3:])}, newer "
                    f"than the {policy.name} tag allows", why="pip installs it on systems "
                    "whose C/C++ runtime is too old; the import then fails",
                    fix="build in an older manylinux image or raise the platform tag",
                    versions=too_new, policy=policy.name, source=context.policies.source))
    used = {item.distribution for item in linkage.resolve(wheel, context)
            if item.kind == linkage.EXTERNAL}
    record = wheel.build_record
    cuda = record.cuda if record is not None else None
    runtime = str(cuda.get("runtime_distribution", "")) if isinstance(cuda, dict) else ""
    if runtime and not wheel.metadata.requires_distribution(runtime):
        findings.append(finding(NAME, Severity.ERROR, "", f"the build record's CUDA runtime "
                                f"'{runtime}' is not in Requires-Dist",
                                fix=f"declare '{runtime}'"))
    if runtime and runtime not in used:
        findings.append(finding(NAME, Severity.WARNING, "", f"'{runtime}' is declared but no "
                                "shipped binary resolves a library from it",
                                why="the dependency is dead weight, or the search path misses it",
                                fix="check DT_RUNPATH of the CUDA backend"))
    return findings
