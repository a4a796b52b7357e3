"""Ownership: which shipped library registers each operator and backend; exactly one may
(the model, exact or heuristic: release/verify/ownership_model.py)."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.ownership_model import of
from release.verify.wheel_model import WheelModel

NAME = "ownership"
RUNS_PROGRAMS = False
def _blame(owners: list[str], wheel: WheelModel, kind: str) -> str:
    record = wheel.build_record
    expected = {c.file for c in record.components if kind in c.registers} if record else set()
    unexpected = [path for path in owners if path not in expected]
    return (unexpected or sorted(owners))[-1]


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    ownership = of(context)
    if ownership.mode == "none":
        return [finding(NAME, Severity.INFO, "", "not run: no build record; pass "
                        "--heuristic-ownership to infer ownership from strings")]
    findings = [finding(NAME, Severity.INFO, "", f"{len(ownership.owners)} registrations "
                        f"({ownership.mode})", table=ownership.owners,
                        measurement=ownership.measurement)]
    for name, owners in sorted(ownership.owners.items()):
        if len(owners) > 1:
            kind = "operators" if name.startswith("op:") else "backends"
            findings.append(finding(
                NAME, Severity.ERROR if ownership.mode == "exact" else Severity.WARNING,
                _blame(owners, wheel, kind),
                f"{name} is registered by {len(owners)} libraries: {', '.join(sorted(owners))}",
                why="loading them together registers it twice: the process aborts or the "
                "winner depends on load order", fix="keep the code in one component and link "
                "it from the others", registration=name, owners=sorted(owners)))
    record = wheel.build_record
    if ownership.mode == "exact" and record is not None and record.extension is not None:
        for name, owners in sorted(ownership.owners.items()):
            if record.extension.file in owners:
                findings.append(finding(
                    NAME, Severity.ERROR, record.extension.file, f"the extension registers "
                    f"{name}", why="the extension must only link components",
                    fix="move the code into its component library"))
    return findings
