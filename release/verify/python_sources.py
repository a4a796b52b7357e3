"""The wheel's Python files, read when a check asks about them (which extension modules a
package imports only as an option, which libraries its RTLD_GLOBAL opener names), never at
open time: within a byte budget per question, nothing run."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from release.distribution.archive import Limits, read_member
from release.verify.wheel_model import WheelModel

BUDGET = 32 << 20            # bytes of Python read at most per question


def python_files(wheel: WheelModel, wanted: Callable[[str], bool],
                 limits: Limits) -> Iterator[tuple[str, str]]:
    """(wheel path, text) of the ``.py`` members ``wanted`` accepts, in archive order, until
    the budget is spent."""
    left = BUDGET
    for member in wheel.members:
        if not member.name.endswith(".py") or not wanted(member.name):
            continue
        if member.declared_size > left:
            return
        left -= member.declared_size
        yield member.name, read_member(wheel.archive, member, limits).decode("utf-8", "replace")
