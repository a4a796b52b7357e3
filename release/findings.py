"""A finding is one fact ``verify`` reports. Checks return lists of them; nothing raises."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from release._compat import StrEnum
from release.errors import one_line


class Severity(StrEnum):
    ERROR = "error"      # the wheel is broken or violates a promise; verify exits non-zero
    WARNING = "warning"  # suspicious, worth a look; does not fail verify
    INFO = "info"        # a fact for the report (tables, measurements)


@dataclass(frozen=True)
class Finding:
    check: str           # e.g. "linkage", "search-path", "ownership", "coverage"
    severity: Severity
    file: str            # path inside the wheel ("" for the wheel as a whole)
    what: str            # what was found
    why: str = ""        # why it matters
    fix: str = ""        # how to fix it
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # one finding, one line: names from the wheel may hold newlines or control characters
        for name in ("file", "what", "why", "fix"):
            object.__setattr__(self, name, one_line(getattr(self, name)))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.value
        return data
