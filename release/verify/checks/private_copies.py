"""No private copies: a component's marker symbols are defined only in that component's own
library, never inside the extension, a plugin or another component."""

from __future__ import annotations

from release.findings import Finding, Severity
from release.verify.checks._common import finding
from release.verify.context import VerifyContext
from release.verify.wheel_model import BinaryFile, WheelModel

NAME = "private-copies"
RUNS_PROGRAMS = False


def _defines(binary: BinaryFile, markers: set[str]) -> set[str]:
    found = {s.name for s in binary.info.dynamic_symbols if s.defined and s.name in markers}
    wanted = {f"\0{marker}\0".encode() for marker in markers - found}
    if binary.section_holds(".strtab", wanted):
        found |= {s.name for s in binary.static_symbols() if s.defined and s.name in markers}
    return found


def check(wheel: WheelModel, context: VerifyContext) -> list[Finding]:
    record = wheel.build_record
    if record is None:
        return [finding(NAME, Severity.INFO, "", "not run: no build record names the "
                        "components' marker symbols")]
    findings = []
    for component in record.components:
        markers = set(component.markers)
        for binary in wheel.binaries:
            if binary.path == component.file or not markers:
                continue
            copied = _defines(binary, markers)
            if copied:
                holder = record.component_for_file(binary.path)
                role = ("the extension" if record.extension and binary.path == record.extension.file
                        else f"component '{holder.name}'" if holder else "this file")
                findings.append(finding(
                    NAME, Severity.ERROR, binary.path, f"{role} carries a private copy of "
                    f"component '{component.name}' (defines {', '.join(sorted(copied))})",
                    why="two copies register twice and diverge", fix=f"link "
                    f"{component.file} instead of compiling its sources in",
                    component=component.name, markers=sorted(copied)))
    return findings
