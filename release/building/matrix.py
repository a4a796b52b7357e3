"""The release matrix: every target x variant the manifest releases, how each is built (on
its release runner, and on this host), and the job matrix of the release workflow
(``python -m release plan``, docs/release.md).

It is computed from the manifest and the platform modules' build routes, never written by
hand: a target or variant added to the manifest is built by the next release, or reported
as not buildable yet, but never left out silently."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from release.build_options import BuildOptions
from release.building.pipeline import run as run_pipeline
from release.building.resolved import ResolvedRelease, load_variants, resolve
from release.errors import ConfigurationError, ReleaseError
from release.host import Host
from release.manifest import Manifest, Target, Variant
from release.platform import BuildRoute

log = logging.getLogger("release")

JSON_VERSION = 1


@dataclass(frozen=True)
class MatrixEntry:
    """One wheel of the release: a target, a variant, and how it is built (the resolved
    release's facts, release/building/resolved.py)."""

    release: ResolvedRelease

    @property
    def target(self) -> Target:
        return self.release.target

    @property
    def variant(self) -> Variant:
        """The manifest's variant (``release.variant`` is it as its provider builds it)."""
        return self.release.declared

    @property
    def distribution(self) -> str:
        return self.release.distribution

    @property
    def route(self) -> BuildRoute:
        """On this host; ``route.buildable`` holds on the target's runner."""
        return self.release.route

    @property
    def name(self) -> str:
        return self.release.name

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "target": self.target.name,
                "platform": self.target.platform, "arch": self.target.arch,
                "variant": self.variant.name, "distribution": self.distribution,
                "runner": self.target.runner, "buildable": self.route.buildable,
                "here": {"route": self.route.route.value, "detail": self.route.detail,
                         "fix": self.route.fix}}


def release_matrix(manifest: Manifest, host: Host) -> tuple[MatrixEntry, ...]:
    """Every (target, variant) the manifest releases, in manifest order (targets outer), as
    ``host`` (the edge's) builds it; each variant is loaded from its provider once."""
    variants = load_variants(manifest)
    return tuple(MatrixEntry(resolve(manifest, selection, host=host, variants=variants))
                 for selection in manifest.selections())


def cibuildwheel_archs(target: Target) -> str:
    """The target's architecture as cibuildwheel's ``--archs`` spells it (Windows' names
    are upper case: AMD64, ARM64)."""
    return target.arch.upper() if target.platform == "windows" else target.arch


def lowest_python(manifest: Manifest) -> str:
    """The oldest CPython 3 minor release Requires-Python admits (the abi3 wheel's floor)."""
    text = str(manifest.project.get("requires-python", ""))
    try:
        specifier = SpecifierSet(text)
    except InvalidSpecifier:
        raise ConfigurationError(f"project.requires-python '{text}' is not a version "
                                 "specifier", fix="write e.g. '>=3.9'") from None
    for minor in range(6, 40):
        if specifier.contains(f"3.{minor}", prereleases=True):
            return f"3.{minor}"
    raise ConfigurationError(f"project.requires-python '{text}' admits no Python 3 release",
                             fix="write e.g. '>=3.9'")


def workflow_jobs(manifest: Manifest, entries: Sequence[MatrixEntry]) -> list[dict[str, str]]:
    """The release workflow's build matrix (``include`` items): one job per buildable
    entry, on its target's runner. A buildable target without a runner is an error, so a
    new platform cannot drop out of the release unnoticed."""
    python = lowest_python(manifest)
    jobs = []
    for entry in entries:
        if not entry.route.buildable:
            continue
        if not entry.target.runner:
            raise ConfigurationError(
                f"tool.release.targets.{entry.target.name}.runner is missing",
                fix="name the CI machine that builds it natively, e.g. runner = "
                    "\"ubuntu-24.04\" (docs/release.md, 'Adding a platform')")
        jobs.append({"name": entry.name, "target": entry.target.name,
                     "platform": entry.target.platform, "arch": entry.target.arch,
                     "archs": cibuildwheel_archs(entry.target), "variant": entry.variant.name,
                     "distribution": entry.distribution, "runner": entry.target.runner,
                     "python": python})
    return jobs


def to_json(manifest: Manifest, entries: Sequence[MatrixEntry]) -> dict[str, Any]:
    """``plan --json``: every entry, the workflow's jobs, and what is not buildable yet."""
    return {"version": JSON_VERSION, "distribution": manifest.distribution,
            "release_version": manifest.version,
            "entries": [entry.to_json() for entry in entries],
            "build": workflow_jobs(manifest, entries),
            "not_buildable": [{"name": e.name, "target": e.target.name,
                               "variant": e.variant.name, "reason": e.route.detail}
                              for e in entries if not e.route.buildable]}


def _release_column(entry: MatrixEntry) -> str:
    if not entry.route.buildable:
        return "not buildable yet"
    return entry.target.runner or "(no runner declared)"


def _host_column(route: BuildRoute) -> str:
    text = f"{route.route.value}: {route.detail}"
    return f"{text} (fix: {route.fix})" if route.fix else text


def render_text(manifest: Manifest, entries: Sequence[MatrixEntry]) -> str:
    """The table ``python -m release plan`` prints."""
    buildable = sum(1 for entry in entries if entry.route.buildable)
    here = sum(1 for entry in entries if entry.route.reachable)
    rows = [("target", "variant", "distribution", "release", "this host")]
    rows += [(e.target.name, e.variant.name, e.distribution, _release_column(e),
              _host_column(e.route)) for e in entries]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = [f"{manifest.distribution} {manifest.version}: {len(entries)} wheels in the "
             f"release matrix; {buildable} built by the release, "
             f"{len(entries) - buildable} not buildable yet; {here} buildable on this host"]
    lines += ["  ".join([*(cell.ljust(width) for cell, width in zip(row, widths)), row[4]])
              for row in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class BuildOutcome:
    """What ``plan --build`` did for one entry: a wheel, a failure, or nothing (the host
    cannot build it)."""

    entry: MatrixEntry
    wheel: Path | None = None
    error: ReleaseError | None = None

    @property
    def status(self) -> str:
        if self.wheel is not None:
            return f"built {self.wheel.name}"
        if self.error is not None:
            return f"failed: {self.error.message}"
        return f"not built here ({_host_column(self.entry.route)})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.entry.name, "here": self.entry.route.route.value,
                "wheel": None if self.wheel is None else str(self.wheel),
                "error": None if self.error is None else self.error.message}


def build_reachable(manifest: Manifest, entries: Sequence[MatrixEntry],
                    options_for: Callable[[MatrixEntry], BuildOptions]) -> list[BuildOutcome]:
    """Builds every entry this host can reach, one after the other; a failure is recorded
    and the next entry is built (an interrupt stops everything)."""
    outcomes = []
    reachable = [entry for entry in entries if entry.route.reachable]
    log.info("building %d wheels, one after the other: %s (each is a full build, repair and "
             "verify: minutes each, about 22 minutes for all on 2 cores with warm caches; "
             "a cold cache first downloads the toolchains they need)", len(reachable),
             ", ".join(entry.name for entry in reachable))
    for entry in entries:
        if not entry.route.reachable:
            outcomes.append(BuildOutcome(entry))
            continue
        log.info("=== %s (%s): wheel %d of %d ===", entry.name, entry.route.route.value,
                 reachable.index(entry) + 1, len(reachable))
        try:
            result = run_pipeline(manifest, options_for(entry), host=entry.release.host,
                                  resolved=entry.release)
        except ReleaseError as error:
            log.error("%s failed: %s", entry.name, error.message)
            outcomes.append(BuildOutcome(entry, error=error))
            continue
        outcomes.append(BuildOutcome(entry, wheel=result.wheel))
    return outcomes
