"""Linkage: every DT_NEEDED of every shipped binary resolves the way the loader resolves it
after ``pip install``: through the object's own DT_RUNPATH, or its DT_RPATH and the DT_RPATH
inherited from the objects that load it (DT_RPATH only applies when the object has no
DT_RUNPATH), into the wheel, into a declared dependency's folder, or to a system library the
wheel's platform policy allows."""

from __future__ import annotations

from dataclasses import dataclass

from release.findings import Finding, Severity
from release.verify.checks._common import expand_origin, finding
from release.verify.context import VerifyContext
from release.verify.data import Policy, distribution_for
from release.verify.wheel import ElfFile, WheelModel

NAME = "linkage"
RUNS_PROGRAMS = False
_LOADER_NAMES = ("ld-linux", "ld64.so", "ld-musl")

IN_WHEEL, EXTERNAL, UNDECLARED, SYSTEM, UNRESOLVED = (
    "wheel", "external", "undeclared", "system", "unresolved")


@dataclass(frozen=True)
class Resolution:
    binary: str          # wheel path of the object that needs it
    needed: str          # the DT_NEEDED name
    kind: str            # IN_WHEEL, EXTERNAL, UNDECLARED, SYSTEM, UNRESOLVED
    target: str = ""     # installed path (wheel) or folder (external)
    distribution: str = ""
    via: str = ""        # "DT_RUNPATH", "DT_RPATH", "DT_RPATH of <loader>", "system"


def wheel_policy(wheel: WheelModel, context: VerifyContext) -> Policy | None:
    """The strictest manylinux policy among the wheel's platform tags."""
    found = [policy for platform in wheel.platforms
             if (policy := context.policies.for_tag(platform)) is not None]
    return max(found, key=lambda policy: policy.priority) if found else None


def _allowed_system(wheel: WheelModel, context: VerifyContext) -> frozenset[str]:
    policy = wheel_policy(wheel, context)
    if policy is not None:
        return policy.libraries
    permissive = min(context.policies.policies, key=lambda p: p.priority if p.libraries else 999)
    return permissive.libraries


def _own_dirs(elf: ElfFile) -> list[tuple[str, str]]:
    entries = elf.info.runpath or elf.info.rpath
    label = "DT_RUNPATH" if elf.info.runpath else "DT_RPATH"
    return [(folder, label) for entry in entries
            if (folder := expand_origin(entry, elf.folder)) is not None]


def _lookup(wheel: WheelModel, context: VerifyContext, folder: str, name: str,
            system: frozenset[str]) -> tuple[str, str, str] | None:
    path = f"{folder}/{name}" if folder else name
    if path in wheel.files:
        return IN_WHEEL, path, ""
    if any(file.startswith(f"{folder}/") for file in wheel.files):
        return None  # the wheel's own folder: the loader just moves on
    distribution = distribution_for(context.distribution_dirs, folder, name)
    if distribution and name not in system:  # system libraries are not in others' folders
        declared = wheel.metadata.requires_distribution(distribution)
        return (EXTERNAL if declared else UNDECLARED), folder, distribution
    return None


def _resolve_one(wheel: WheelModel, context: VerifyContext, elf: ElfFile, name: str,
                 inherited: list[tuple[str, str]], system: frozenset[str]) -> Resolution:
    search = ([] if elf.info.runpath else _own_dirs(elf) + inherited) + (
        _own_dirs(elf) if elf.info.runpath else [])
    for folder, via in search:
        hit = _lookup(wheel, context, folder, name, system)
        if hit is not None:
            return Resolution(elf.path, name, hit[0], hit[1], hit[2], via)
    if name in system or name.startswith(_LOADER_NAMES):
        return Resolution(elf.path, name, SYSTEM, via="system")
    return Resolution(elf.path, name, UNRESOLVED)


def resolve(wheel: WheelModel, context: VerifyContext) -> list[Resolution]:
    """Every DT_NEEDED of every binary, resolved (cached in the context)."""
    cached = context.cache.get(NAME)
    if isinstance(cached, list):
        return cached
    system = _allowed_system(wheel, context)
    inherited = _inherited_rpaths(wheel, context, system)
    result = [_resolve_one(wheel, context, elf, name, inherited.get(elf.installed, []), system)
              for elf in wheel.binaries for name in elf.info.needed]
    context.cache[NAME] = result
    return result


def _inherited_rpaths(wheel: WheelModel, context: VerifyContext,
                      system: frozenset[str]) -> dict[str, list[tuple[str, str]]]:
    """For each binary, the DT_RPATH entries of the binaries that load it (transitively)."""
    loaders: dict[str, set[str]] = {}
    for elf in wheel.binaries:
        for name in elf.info.needed:
            hit = _resolve_one(wheel, context, elf, name, [], system)
            if hit.kind == IN_WHEEL:
                loaders.setdefault(hit.target, set()).add(elf.installed)
    result: dict[str, list[tuple[str, str]]] = {}
    for elf in wheel.binaries:
        seen, pending, dirs = set(), list(loaders.get(elf.installed, ())), []
        while pending:
            loader = pending.pop()
            if loader in seen:
                continue
            seen.add(loader)
            parent = wheel.binary(loader)
            if parent is not None and not parent.info.runpath:
                dirs += [(folder, f"DT_RPATH of {parent.path}") for folder, _ in
                         _own_dirs(parent)]
            pending.extend(loaders.get(loader, ()))
        result[elf.installed] = dirs
    return result


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    findings = []
    sonames = {elf.info.soname or elf.name: elf.path for elf in wheel.binaries}
    for item in resolve(wheel, context):
        if item.kind == UNRESOLVED:
            findings.append(finding(
                NAME, Severity.ERROR, item.binary, f"needs {item.needed}, which is not found "
                "after installation", why="the loader will fail to load this file"
                + (f" unless {sonames[item.needed]} happens to be loaded first"
                   if item.needed in sonames else ""),
                fix="ship the library in the wheel and point DT_RUNPATH at it with $ORIGIN, "
                "or depend on the distribution that provides it", needed=item.needed))
        elif item.kind == UNDECLARED:
            findings.append(finding(
                NAME, Severity.ERROR, item.binary, f"needs {item.needed}, found only in "
                f"{item.target}/ of distribution '{item.distribution}', which the wheel does "
                "not declare", why="a clean install will not have it",
                fix=f"add '{item.distribution}' to Requires-Dist", needed=item.needed,
                distribution=item.distribution))
        elif item.via.startswith("DT_RPATH of "):
            findings.append(finding(
                NAME, Severity.WARNING, item.binary, f"needs {item.needed}, found only through "
                f"the {item.via}", why="it fails when loaded by anything else",
                fix="give this file its own DT_RUNPATH", needed=item.needed))
    return findings
