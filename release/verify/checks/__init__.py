"""The checks verify runs, in order, and the one loop that runs them (``run_checks``). A
check is one module with ``NAME``, ``RUNS_PROGRAMS`` (False: it only reads files, so it
runs under --static) and
``check(wheel: WheelModel, context: VerifyContext) -> list[Finding]``.
Add a check by writing its module and listing it in CHECKS; a variant provider adds its own
(release/variants.py, e.g. cuda/coverage.py). Checks speak through the wheel's loader model
(``context.loader``, release/loader.py), never a binary format's own terms; they share the
analyses of ``context.analyses`` (release/verify/analyses.py), and a check that did not run
says so with a finding carrying its ``CheckStatus`` (``_common.not_run``,
``_common.environment``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from release.errors import DeadlineReached, EnvironmentFailure, ReleaseError, ToolError
from release.findings import CheckStatus, Finding, Severity
from release.verify.checks import (
    components,
    duplicates,
    identity,
    leaks,
    linkage,
    load_matrix,
    metadata,
    ownership,
    private_copies,
    sdk_routes,
    search_path,
    variant,
)
from release.verify.checks._common import environment, not_run
from release.verify.context import VerifyContext
from release.verify.wheel_model import WheelModel


class Check(Protocol):
    NAME: str
    RUNS_PROGRAMS: bool

    def check(self, wheel: WheelModel, context: VerifyContext) -> list[Finding]: ...


CHECKS: tuple[Check, ...] = (
    identity,
    components,
    linkage,
    search_path,
    ownership,
    private_copies,
    duplicates,
    leaks,
    metadata,
    load_matrix,
    sdk_routes,
    variant,
)


def run_checks(wheel: WheelModel, context: VerifyContext, checks: Sequence[Check] = CHECKS
               ) -> tuple[list[Finding], dict[str, CheckStatus]]:
    """Runs ``checks`` in order: the wheel's own findings, then each check's, and each
    check's status. A check that runs programs is not run under --static or once verify's
    deadline has passed; a check that cannot run says why in a finding."""
    findings = list(wheel.findings)
    status: dict[str, CheckStatus] = {}
    deadline: float | None = None   # seconds, once verify's deadline has passed
    for module in checks:
        if module.RUNS_PROGRAMS and context.static:
            findings.append(not_run(module.NAME, "--static reads files only"))
            status[module.NAME] = CheckStatus.NOT_RUN
            continue
        if module.RUNS_PROGRAMS and deadline is not None:
            findings.append(not_run(module.NAME, f"verify's deadline of {deadline:g} s had "
                                    "passed"))
            status[module.NAME] = CheckStatus.NOT_RUN
            continue
        try:
            found = module.check(wheel, context)
            said = CheckStatus.of(found)
        except DeadlineReached as error:
            deadline = error.seconds
            found = [Finding(check=module.NAME, severity=Severity.ERROR, file="",
                             what=error.what, fix=error.fix,
                             why="verify ran the wheel's code for as long as it may")]
            said = CheckStatus.FAILED
        except (EnvironmentFailure, ToolError) as error:
            found = [environment(module.NAME, "", error.what, fix=error.fix)]
            said = CheckStatus.ENVIRONMENT
        except ReleaseError as error:
            found = [Finding(check=module.NAME, severity=Severity.ERROR, file="",
                             what=f"the check could not run: {error.what}", fix=error.fix)]
            said = CheckStatus.FAILED
        status[module.NAME] = said
        findings.extend(found)
    return findings, status
