"""Small helpers the checks share: making findings, and the findings that say a check did
not run (their ``status``, a ``CheckStatus``, is what the run reports for the check)."""

from __future__ import annotations

from release.findings import CheckStatus, Finding, Severity
from release.loader import Problem


def finding(check: str, severity: Severity, file: str, what: str, *, why: str = "",
            fix: str = "", **details: object) -> Finding:
    return Finding(check=check, severity=severity, file=file, what=what, why=why, fix=fix,
                   details=dict(details))


def not_run(check: str, reason: str) -> Finding:
    """The check was left out on purpose (--static, nothing to check, no loader model)."""
    return Finding(check=check, severity=Severity.INFO, file="", what=f"not run: {reason}",
                   status=CheckStatus.NOT_RUN)


def environment(check: str, file: str, reason: str, *, fix: str = "",
                **details: object) -> Finding:
    """This machine could not run the check (or part of it): not the wheel's fault."""
    return Finding(check=check, severity=Severity.INFO, file=file,
                   what=f"{CheckStatus.ENVIRONMENT.value}: {reason}", fix=fix,
                   details=dict(details), status=CheckStatus.ENVIRONMENT)


def from_problem(check: str, file: str, problem: Problem) -> Finding:
    """A finding from a problem a platform's loader model reported."""
    return Finding(check=check, severity=Severity(problem.severity), file=file,
                   what=problem.what, why=problem.why, fix=problem.fix,
                   details=dict(problem.details))
