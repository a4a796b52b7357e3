"""The result of a verify run: every finding, as text for people or JSON for machines.
The JSON layout is documented in docs/verify.md; ``SCHEMA_VERSION`` changes when it does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from release.findings import CheckStatus, Finding, Severity

SCHEMA_VERSION = 1
_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass(frozen=True)
class Report:
    wheel: str
    static: bool
    findings: list[Finding] = field(default_factory=list)
    checks: dict[str, CheckStatus] = field(default_factory=dict)   # check -> what became of it
    binaries: dict[str, int] = field(default_factory=dict)  # format ("elf") -> files read

    @property
    def ok(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def unchecked(self) -> dict[str, str]:
        """The checks this machine could not run (``CheckStatus.ENVIRONMENT``): check -> why
        (the text of the finding that says so)."""
        reasons = {f.check: f.what for f in self.findings if f.status is CheckStatus.ENVIRONMENT}
        return {name: reasons.get(name, CheckStatus.ENVIRONMENT.value)
                for name, status in self.checks.items() if status is CheckStatus.ENVIRONMENT}

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity is severity)

    def to_json(self) -> dict[str, object]:
        counts = Counter(f.severity.value for f in self.findings)
        return {"version": SCHEMA_VERSION, "wheel": self.wheel, "static": self.static,
                "ok": self.ok,
                "checks": {name: status.value for name, status in self.checks.items()},
                "summary": {s.value: counts.get(s.value, 0) for s in Severity},
                "binaries": dict(sorted(self.binaries.items())),
                "findings": [f.to_json() for f in self.findings]}

    def render_text(self) -> str:
        lines = render_findings(self.findings)
        if self.binaries:
            read = ", ".join(f"{count} {kind}" for kind, count in sorted(self.binaries.items()))
            lines.append(f"binaries read: {read}")
        verdict = "OK" if self.ok else "FAILED"
        lines.append(f"{self.wheel}: {verdict} ({self.count(Severity.ERROR)} errors, "
                     f"{self.count(Severity.WARNING)} warnings, {self.count(Severity.INFO)} "
                     "notes)")
        return "\n".join(lines)


def render_findings(findings: Iterable[Finding]) -> list[str]:
    """The findings for people, errors first, then by check and file: one line each, then
    why, the fix, the tail of a program's stderr and a finding's table, indented (verify's
    report and check-set's)."""
    lines = []
    for item in sorted(findings, key=lambda f: (_ORDER[f.severity], f.check, f.file)):
        where = f" {item.file}:" if item.file else ""
        lines.append(f"{item.severity.value:<7} [{item.check}]{where} {item.what}")
        if item.why:
            lines.append(f"        why: {item.why}")
        if item.fix:
            lines.append(f"        fix: {item.fix}")
        if item.severity is not Severity.INFO and "stderr" in item.details:
            tail = str(item.details["stderr"]).strip().splitlines()[-3:]
            lines.extend(f"        | {line}" for line in tail)
        table = item.details.get("table")
        if isinstance(table, dict) and table and all(isinstance(row, dict)
                                                     for row in table.values()):
            lines.extend(render_table(table))
    return lines


def render_table(table: dict[str, dict[str, str]]) -> list[str]:
    """Rows x columns grid (e.g. library x claimed compute capability), indented."""
    columns = sorted({column for row in table.values() for column in row},
                     key=lambda text: [int(part) if part.isdigit() else 0
                                       for part in text.split(".")])
    first = max(len(name) for name in table)
    widths = [max(len(column), *(len(row.get(column, "")) for row in table.values()))
              for column in columns]

    def line(label: str, cells: list[str]) -> str:
        padded = [cell.ljust(width) for cell, width in zip(cells, widths)]
        return ("        " + "  ".join([label.ljust(first), *padded])).rstrip()

    rows = [line(name, [row.get(c, "missing") for c in columns])
            for name, row in sorted(table.items())]
    return [line("", columns), *rows]
