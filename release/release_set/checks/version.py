"""One version everywhere: the file names, METADATA, the build records, the manifest and
the tag's version when given."""

from __future__ import annotations

from release.distribution.wheel import normalize_distribution
from release.findings import Finding
from release.release_set.set_model import ReleaseSet, error

NAME = "version"


def check(release: ReleaseSet) -> list[Finding]:
    manifest, version = release.manifest, release.version
    prefix = f"{normalize_distribution(manifest.distribution)}-"
    findings = [error(NAME, path.name, f"the sdist's version is not {version}",
                      fix="rebuild the sdist from the tagged commit")
                for path in sorted(release.folder.glob(f"{prefix}*.tar.gz"))
                if path.name != f"{prefix}{version}.tar.gz"]
    if release.expect_version and release.expect_version != manifest.version:
        findings.append(error(NAME, "pyproject.toml", f"the manifest's version is "
                              f"{manifest.version}, the release is {release.expect_version}",
                              fix="set project.version and tag that commit"))
    for wheel, _ in release.matched:
        facts = wheel.facts
        found = {"file name": facts.name.version,
                 "METADATA": facts.metadata.get("Version", "")}
        if facts.record is not None:
            found["build record"] = facts.record.version
        findings += [error(NAME, facts.path.name, f"{where} says version '{value or '?'}', "
                           f"the release is {version}",
                           fix="rebuild every wheel from the tagged commit")
                     for where, value in found.items() if value != version]
    return findings
