"""A variant's run-time dependency is declared (Requires-Dist)."""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement

from release.findings import Finding
from release.release_set.set_model import ReleaseSet, error

NAME = "requirements"


def check(release: ReleaseSet) -> list[Finding]:
    findings = []
    for wheel, entry in release.matched:
        runtime = entry.release.variant.runtime
        if runtime is None:
            continue
        wanted = Requirement(runtime.requirement)
        declared = []
        for text in wheel.facts.metadata.get_all("Requires-Dist") or []:
            try:
                declared.append(Requirement(text))
            except InvalidRequirement:
                continue
        if wanted not in declared:
            findings.append(error(NAME, wheel.facts.path.name, f"Requires-Dist lacks "
                                  f"'{wanted}', the {entry.variant.name} runtime the wheel's "
                                  "libraries load", fix="build the wheel through the "
                                  "pipeline (it appends the requirement)"))
    return findings
