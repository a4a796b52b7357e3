"""``check_release_set``: read the set once, run every set check, report. The report is
rendered by verify's renderer (release/verify/report.py ``render_findings``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from release.building.matrix import MatrixEntry, release_matrix
from release.errors import ConfigurationError
from release.findings import Finding, Severity
from release.host import Host
from release.manifest import Manifest
from release.release_set.checks import CHECKS
from release.release_set.set_model import Verifier, read_release_set
from release.verify.api import verify_wheel
from release.verify.options import VerifyOptions
from release.verify.report import render_findings

JSON_VERSION = 1


@dataclass(frozen=True)
class SetReport:
    """What check-set found, made once at the end of the check (a value: nothing grows it)."""

    folder: str
    findings: tuple[Finding, ...] = ()
    wheels: Mapping[str, str] = field(default_factory=dict)        # matrix entry -> wheel
    not_buildable: Mapping[str, str] = field(default_factory=dict)  # matrix entry -> reason

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {"version": JSON_VERSION, "folder": self.folder, "ok": self.ok,
                "wheels": dict(self.wheels), "not_buildable": dict(self.not_buildable),
                "findings": [finding.to_json() for finding in self.findings]}

    def render_text(self) -> str:
        lines = [f"{name}: {wheel}" for name, wheel in self.wheels.items()]
        lines += [f"{name}: not buildable yet ({reason})"
                  for name, reason in self.not_buildable.items()]
        lines += render_findings(self.findings)
        errors = sum(1 for f in self.findings if f.severity is Severity.ERROR)
        wheels = f"{len(self.wheels)} wheel{'' if len(self.wheels) == 1 else 's'}"
        lines.append(f"{self.folder}: {'OK' if self.ok else 'FAILED'} ({wheels}, "
                     f"{len(self.not_buildable)} not buildable yet, {errors} errors)")
        return "\n".join(lines)


def check_release_set(folder: Path, manifest: Manifest, *, host: Host,
                      expect_version: str | None = None, verify: Verifier | None = None,
                      entries: Sequence[MatrixEntry] | None = None,
                      write_index: bool = False) -> SetReport:
    """Checks the distributions in ``folder`` against the release ``manifest`` describes, as
    ``host`` (the edge's) would build it; ``verify`` defaults to verify --static with the
    project's providers on that host."""
    if not folder.is_dir():
        raise ConfigurationError(f"check-set: {folder} is not a folder",
                                 fix="pass the folder holding the release's wheels and sdist")
    providers = VerifyOptions(providers=manifest.providers)
    release = read_release_set(
        folder, manifest, entries=release_matrix(manifest, host) if entries is None else entries,
        verify=verify or (lambda path: verify_wheel(path, static=True, options=providers,
                                                    host=host)),
        expect_version=expect_version, write_index=write_index)
    findings = tuple(finding for check in CHECKS for finding in check.check(release))
    return SetReport(folder=str(folder), findings=findings,
                     wheels=release.coverage.wheels,
                     not_buildable=release.coverage.not_buildable)
