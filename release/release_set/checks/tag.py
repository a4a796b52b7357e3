"""A wheel's platform tags are its target's architecture; a Linux wheel needs no newer glibc
than the manylinux image the release builds in (``[tool.cibuildwheel]``)."""

from __future__ import annotations

from release.findings import Finding
from release.release_set.set_model import ReleaseSet, error, glibc_of

NAME = "tag"


def check(release: ReleaseSet) -> list[Finding]:
    findings = []
    for wheel, entry in release.matched:
        name = wheel.facts.path.name
        platforms = wheel.facts.name.platform.split(".")
        arch = entry.target.arch
        findings += [error(NAME, name, f"platform tag {tag} is not for {arch}",
                           fix=f"build {entry.target.name} on its runner")
                     for tag in platforms if not tag.endswith(f"_{arch}")]
        if entry.target.platform != "linux":
            continue
        glibc = [found for tag in platforms if (found := glibc_of(tag)) is not None]
        if not glibc:
            findings.append(error(NAME, name, f"{wheel.facts.name.platform} is not a "
                                  "manylinux tag: the wheel was not repaired",
                                  fix="build it through the pipeline's repair stage"))
            continue
        image = release.images.get(arch, "")
        ceiling = glibc_of(image)
        if ceiling is not None and min(glibc) > ceiling:
            findings.append(error(
                NAME, name, f"needs glibc {'.'.join(map(str, min(glibc)))}, newer than the "
                f"{image} image the release builds in",
                fix="build it in cibuildwheel's container, not on the runner itself"))
    return findings
