"""Every buildable target x variant of the release matrix has exactly one wheel of its
distribution, nothing else is there, and what is not buildable yet is reported by name."""

from __future__ import annotations

from release.findings import Finding
from release.release_set.set_model import ReleaseSet

NAME = "matrix"


def check(release: ReleaseSet) -> list[Finding]:
    return [*(problem for wheel in release.wheels for problem in wheel.problems),
            *release.coverage.findings]
