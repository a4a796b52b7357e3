"""The wheel's CycloneDX SBOM (.dist-info/sboms/, PEP 770) names its distribution, every
shipped component with the sha256 of the file the wheel holds, and the toolchain that
built them."""

from __future__ import annotations

from release.distribution import sbom
from release.findings import Finding
from release.release_set.set_model import ReleaseSet, error

NAME = "sbom"


def check(release: ReleaseSet) -> list[Finding]:
    findings = []
    for wheel, _ in release.matched:
        facts = wheel.facts
        if facts.record is None:
            continue
        where = f"{facts.name.dist_info}/{sbom.FOLDER}/"
        if facts.sbom is None:
            findings.append(error(NAME, facts.path.name, f"has no SBOM ({where}*.cdx.json, "
                                  "PEP 770)", fix="build it through the pipeline (its "
                                  "fix-up stage writes one)"))
            continue
        findings += [error(NAME, facts.path.name, f"{where} {problem}",
                           fix="rebuild the wheel through the pipeline; never edit a wheel "
                               "by hand")
                     for problem in sbom.check_sbom(facts.sbom, facts.record, facts.digests)]
    return findings
