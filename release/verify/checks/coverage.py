"""GPU device-code coverage: every compute capability the wheel claims (build record
``cuda.claims``) runs some shipped device code, and no library carries code for an
architecture nobody claimed. The fatbinary reader and the rules live in cuda/ (fatbin.py,
coverage.py); this module feeds them the wheel's `.nv_fatbin` sections, read from the zip or
the extracted files alike, so it also runs under --static."""

from __future__ import annotations

from release.errors import BinaryFormatError
from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel import ElfFile, WheelModel

NAME = "coverage"
RUNS_PROGRAMS = False


def _device_code(elf: ElfFile):  # type: ignore[no-untyped-def]
    from cuda.fatbin import SECTIONS, DeviceCode, read_containers
    for section in SECTIONS:
        if elf.info.section(section) is not None:
            data = elf.read_section(section)
            containers = read_containers(data, where=f"{elf.path} section {section}")
            return DeviceCode(file=elf.path, section=section, containers=containers)
    return DeviceCode(file=elf.path, section="", containers=())


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    from cuda import coverage
    codes, findings = [], []
    for elf in wheel.binaries:
        try:
            codes.append(_device_code(elf))
        except BinaryFormatError as error:
            findings.append(finding(NAME, Severity.ERROR, elf.path,
                                    f"unreadable fatbinary: {error.what}",
                                    why="its device code cannot be judged (or loaded)",
                                    fix=error.fix))
    if wheel.build_record is None:
        return findings + [finding(
            NAME, Severity.INFO, code.file, f"carries {len(code.entries)} device-code entries "
            f"for {', '.join(sorted({e.name for e in code.entries}))}; not judged: the wheel "
            "declares no claimed compute capabilities") for code in codes if code.containers]
    return findings + coverage.check_device_code(codes, wheel.build_record.cuda)
