"""Small helpers the checks share: making findings."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.loader import Problem


def finding(check: str, severity: Severity, file: str, what: str, *, why: str = "",
            fix: str = "", **details: object) -> Finding:
    return Finding(check=check, severity=severity, file=file, what=what, why=why, fix=fix,
                   details=dict(details))


def not_run(check: str, reason: str) -> Finding:
    return Finding(check=check, severity=Severity.INFO, file="", what=f"not run: {reason}",
                   details={"status": "not run"})


def from_problem(check: str, file: str, problem: Problem) -> Finding:
    """A finding from a problem a platform's loader model reported."""
    return Finding(check=check, severity=Severity(problem.severity), file=file,
                   what=problem.what, why=problem.why, fix=problem.fix,
                   details=dict(problem.details))
