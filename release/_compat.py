"""What the pipeline uses from Python 3.10 and 3.11, on every Python it runs on.

The build backend runs under whichever interpreter pip builds for, and Requires-Python is
``>=3.9``: ``release``, ``platforms`` and ``cuda`` are written for 3.9 (ruff checks them with
a py39 target, see pyproject.toml). ``tomli`` is a build requirement below 3.11 only."""

from __future__ import annotations

import enum
import sys

if sys.version_info >= (3, 11):
    from enum import StrEnum

    import tomllib
else:
    import tomli as tomllib

    class StrEnum(str, enum.Enum):
        """enum.StrEnum before 3.11: members are their values, as strings too."""

        def __str__(self) -> str:
            return str(self.value)

__all__ = ["StrEnum", "tomllib"]
