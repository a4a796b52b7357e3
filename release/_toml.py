"""The one TOML reader: every data file of the project (pyproject.toml, the pinned tools, the
CUDA variant files and PTX driver table, the cross-build table) is read by ``read_toml``,
which turns each way a file can fail into one ConfigurationError line naming the file (and,
for a syntax error, the line and column) and how to fix it. Only this module imports tomllib
(release/_compat.py holds the import for Pythons before 3.11); tests/quality holds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from release._compat import tomllib
from release.errors import ConfigurationError


def read_toml(path: Path, *, fix: str, what: str = "", unreadable_fix: str | None = None,
              missing_fix: str | None = None) -> dict[str, Any]:
    """The table in ``path``. ``what`` names the file before its path in errors ("CUDA
    variant file"); ``fix`` is the fix for a syntax error, ``unreadable_fix`` for a file that
    cannot be read (default ``fix``) and ``missing_fix`` for one that does not exist (without
    one, a missing file is told as an unreadable one)."""
    named = f"{what} {path}" if what else str(path)
    unreadable = fix if unreadable_fix is None else unreadable_fix
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as error:
        if missing_fix is None:
            raise ConfigurationError(f"cannot read {named}: {error.strerror}",
                                     fix=unreadable) from None
        raise ConfigurationError(f"{named} does not exist", fix=missing_fix) from None
    except UnicodeDecodeError as error:
        raise ConfigurationError(f"{named} is not UTF-8 ({error.reason} at byte {error.start})",
                                 fix="save the file as UTF-8") from None
    except OSError as error:
        raise ConfigurationError(f"cannot read {named}: {error.strerror or error}",
                                 fix=unreadable) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:   # its text ends "(at line L, column C)"
        raise ConfigurationError(f"{named} is not valid TOML: {error}", fix=fix) from None
