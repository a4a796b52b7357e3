"""The verify check CUDA contributes: GPU device-code coverage. Every compute capability
the wheel claims (build record ``cuda.claims``) runs some shipped device code, and no library
carries code for an architecture nobody claimed. The fatbinary reader and the rules are
fatbin.py and coverage.py; this module feeds them the wheel's `.nv_fatbin` sections, read
from the zip or the extracted files alike, so it also runs under --static."""

from __future__ import annotations

from cuda import coverage
from cuda.fatbin import SECTIONS, DeviceCode, read_containers
from release.errors import BinaryFormatError
from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel import BinaryFile, WheelModel

NAME = "coverage"
FATBIN_LIMIT = 192 << 20
RUNS_PROGRAMS = False


def device_code(binary: BinaryFile) -> DeviceCode:
    """The device code of one shipped binary (none: no fatbinary section)."""
    for section in SECTIONS:
        if binary.info.section(section) is not None:
            # one section read whole, within verify's memory bound: far above the device
            # code of the wheels whose build record claims compute capabilities (under 1 MB
            # here); a larger one is refused in one line (LimitExceeded)
            data = binary.read_section(section, limit=FATBIN_LIMIT)
            containers = read_containers(data, where=f"{binary.path} section {section}")
            return DeviceCode(file=binary.path, section=section, containers=containers)
    return DeviceCode(file=binary.path, section="", containers=())


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    codes, findings = [], []
    for binary in wheel.binaries:
        try:
            codes.append(device_code(binary))
        except BinaryFormatError as error:
            findings.append(finding(NAME, Severity.ERROR, binary.path,
                                    f"unreadable fatbinary: {error.what}",
                                    why="its device code cannot be judged (or loaded)",
                                    fix=error.fix))
    if wheel.build_record is None:
        return findings + [finding(
            NAME, Severity.INFO, code.file, f"carries {len(code.entries)} device-code entries "
            f"for {', '.join(sorted({e.name for e in code.entries}))}; not judged: the wheel "
            "declares no claimed compute capabilities") for code in codes if code.containers]
    return findings + coverage.check_device_code(codes, wheel.build_record.cuda)
