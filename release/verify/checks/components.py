"""Expected components: every component and the extension the build record names is in the
wheel. A missing one is an error, never a skip."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel_model import WheelModel

NAME = "components"
RUNS_PROGRAMS = False


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    record = wheel.build_record
    if record is None:
        return [finding(NAME, Severity.INFO, "", "no build record (<package>/_release.json): "
                        "checked as a third-party wheel")]
    shipped = {binary.path for binary in wheel.binaries}
    expected = [(c.name, c.file) for c in record.components]
    if record.extension is not None:
        expected.append((record.extension.module, record.extension.file))
    findings = []
    for name, path in expected:
        if path not in wheel.files:
            findings.append(finding(
                NAME, Severity.ERROR, path, f"component '{name}' is missing from the wheel",
                why="the build record promises it; users linking it will fail",
                fix="check the component's install() rule and the wheel layout step",
                component=name))
        elif path not in shipped:
            findings.append(finding(NAME, Severity.ERROR, path, f"component '{name}' is not a "
                                    "readable binary", fix="rebuild the wheel", component=name))
    return findings
