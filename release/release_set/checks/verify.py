"""``python -m release verify --static`` on every wheel: its errors are the set's."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.release_set.set_model import ReleaseSet, error

NAME = "verify"


def check(release: ReleaseSet) -> list[Finding]:
    findings = []
    for wheel, _ in release.matched:
        name = wheel.facts.path.name
        if wheel.verify_error is not None:
            findings.append(error(NAME, name, wheel.verify_error.what,
                                  fix=wheel.verify_error.fix))
        elif wheel.report is not None:
            findings += [error(NAME, name, f"[{f.check}] {_located(f)}", fix=f.fix)
                         for f in wheel.report.findings if f.severity is Severity.ERROR]
    return findings


def _located(finding: Finding) -> str:
    return f"{finding.file}: {finding.what}" if finding.file else finding.what
