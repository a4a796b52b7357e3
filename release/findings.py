"""A finding is one fact ``verify`` reports. Checks return lists of them; nothing raises.

A check's status (``CheckStatus``) has its home here too: a finding that says a check did not
run carries it (``Finding.status``), the verify run turns the findings of each check into the
check's status (``Report.checks``), and the JSON report writes the values below."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from release._compat import StrEnum
from release.errors import one_line, printable


class Severity(StrEnum):
    ERROR = "error"      # the wheel is broken or violates a promise; verify exits non-zero
    WARNING = "warning"  # suspicious, worth a look; does not fail verify
    INFO = "info"        # a fact for the report (tables, measurements)


class CheckStatus(StrEnum):
    """What became of one check in a verify run (the JSON report's ``checks`` values)."""

    RAN = "ran"
    NOT_RUN = "not run"                       # on purpose: --static, nothing to check here
    ENVIRONMENT = "not run (environment)"     # this machine could not run it: not the wheel's
    FAILED = "failed"                         # the check itself could not run (an error says why)

    @classmethod
    def of(cls, findings: Iterable[Finding]) -> CheckStatus:
        """A check's status from what it returned: the environment's over an on-purpose
        'not run', either over 'ran'."""
        said = {item.status for item in findings}
        return next((status for status in (cls.ENVIRONMENT, cls.NOT_RUN) if status in said),
                    cls.RAN)


@dataclass(frozen=True)
class Finding:
    check: str           # e.g. "linkage", "search-path", "ownership", "coverage"
    severity: Severity
    file: str            # path inside the wheel ("" for the wheel as a whole)
    what: str            # what was found
    why: str = ""        # why it matters
    fix: str = ""        # how to fix it
    details: dict[str, object] = field(default_factory=dict)
    # set on the finding that says its check did not run (NOT_RUN, ENVIRONMENT)
    status: CheckStatus | None = None

    def __post_init__(self) -> None:
        # one finding, one line: names from the wheel may hold newlines or control characters
        for name in ("file", "what", "why", "fix"):
            object.__setattr__(self, name, one_line(getattr(self, name)))
        # details hold captured output and names from the wheel: lines kept, escapes written
        object.__setattr__(self, "details", _printable(self.details))
        if "status" in self.details:
            raise TypeError("a finding's status is its `status` field (a CheckStatus), not a "
                            "details key")

    def to_json(self) -> dict[str, object]:
        """The JSON form (docs/verify.md): the status, when set, is ``details["status"]``,
        its string value, as it always was."""
        data = asdict(self)
        data["severity"] = self.severity.value
        status = data.pop("status")
        if status is not None:
            data["details"] = {"status": CheckStatus(status).value, **data["details"]}
        return data


def _printable(value: Any) -> Any:
    """``value`` (a details value) with every string in it made printable."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {_printable(key): _printable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_printable(item) for item in value)
    return value
