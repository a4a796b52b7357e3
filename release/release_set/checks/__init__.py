"""The checks of a release set, in order: each one module with ``NAME`` and
``check(release: ReleaseSet) -> list[Finding]``, judging the set read once
(release/release_set/set_model.py); none imports another.

  files         every file is one of the release's wheels or its sdist
  version       one version everywhere (file names, METADATA, build records, the manifest,
                and the tag's version when given)
  matrix        every buildable target x variant of the release matrix has exactly one wheel,
                nothing else is there, and what is not buildable yet is reported by name
  verify        ``python -m release verify --static`` on every wheel: its errors are the set's
  tag           a wheel's platform tags are its target's architecture; a Linux wheel needs no
                newer glibc than the manylinux image the release builds in
  requirements  a variant's run-time dependency is declared (Requires-Dist)
  sbom          the wheel's CycloneDX SBOM (.dist-info/sboms/, PEP 770) names its distribution,
                every shipped component with the sha256 of the file the wheel holds, and the
                toolchain that built them
  variants      a set of variant wheels (PEP 825, ``build --form variant``): one wheel of the
                project's distribution per label, and ``<name>-<version>-variants.json``
                beside them, equal to the index variantlib merges from the wheels' own
                variant.json files (``--write-variants-json`` writes it first)
  claims        the build record claims the compute capabilities the variant declares, and
                the provider's checks (device-code coverage) ran on the wheel

A variant wheel covers its matrix entry like the variant's separate distribution does; the
CPU entry is covered by the plain ``edgert`` wheel (what installers without variant support
install) or by its null variant."""

from __future__ import annotations

from typing import Protocol

from release.findings import Finding
from release.release_set.checks import (
    claims,
    files,
    matrix_coverage,
    requirements,
    sbom_contents,
    tag,
    variant_index,
    verify,
    version,
)
from release.release_set.set_model import ReleaseSet


class SetCheck(Protocol):
    NAME: str

    def check(self, release: ReleaseSet) -> list[Finding]: ...


CHECKS: tuple[SetCheck, ...] = (files, version, matrix_coverage, verify, tag, requirements,
                                sbom_contents, variant_index, claims)
