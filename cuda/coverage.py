"""The verify check CUDA contributes: GPU device-code coverage. Every compute capability
the wheel claims (build record ``cuda.claims``) runs some shipped device code, and no library
carries code for an architecture nobody claimed. The fatbinary reader and the rules are
fatbin.py and coverage_model.py; the wheel's `.nv_fatbin` sections are read once per run by
device_code.py (``context.analysis(device_code.of_wheel)``, shared with the
variant-properties check), from the zip or the extracted files alike, so this also runs
under --static."""

from __future__ import annotations

from cuda import coverage_model, device_code
from cuda.record import device_code_record
from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel_model import WheelModel

NAME = "coverage"
RUNS_PROGRAMS = False


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    read = context.analysis(device_code.of_wheel)
    findings = coverage_model.unreadable(read)
    if wheel.build_record is None:
        return findings + [finding(
            NAME, Severity.INFO, code.file, f"carries {len(code.entries)} device-code entries "
            f"for {', '.join(sorted({e.name for e in code.entries}))}; not judged: the wheel "
            "declares no claimed compute capabilities") for code in read.codes
            if code.containers]
    return findings + coverage_model.check_device_code(read.codes,
                                                          device_code_record(wheel.build_record))
