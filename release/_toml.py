"""The one TOML reader: every data file of the project (pyproject.toml, the pinned tools, the
CUDA variant files and PTX driver table, the cross-build table) is read by ``read_toml``,
which turns each way a file can fail into one ConfigurationError line naming the file (and,
for a syntax error, the line and column) and how to fix it. Only this module imports tomllib
(release/_compat.py holds the import for Pythons before 3.11); tests/quality holds it.

A file is data someone else may have written: one larger than ``MAX_BYTES``, one nesting
arrays or tables deeper than ``MAX_DEPTH``, or one holding an integer too long for Python to
convert is refused in one line too, never a traceback (tomllib nests by recursion)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from release._compat import tomllib
from release.errors import ConfigurationError

MAX_BYTES = 4 << 20   # no data file of a project comes near: pyproject.toml is a few KiB
MAX_DEPTH = 32        # arrays and tables inside one another; the deepest real key has 5


def depth(value: object) -> int:
    """How deeply ``value`` nests lists and tables (a scalar: 0), without recursion."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, level = pending.pop()
        children = (item.values() if isinstance(item, dict) else
            item if isinstance(item, list) else None)
        if children is None:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_DEPTH:
            return deepest
        pending.extend((child, level + 1) for child in children)
    return deepest


def read_toml(path: Path, *, fix: str, what: str = "", unreadable_fix: str | None = None,
              missing_fix: str | None = None) -> dict[str, Any]:
    """The table in ``path``. ``what`` names the file before its path in errors ("CUDA
    variant file"); ``fix`` is the fix for a syntax error, ``unreadable_fix`` for a file that
    cannot be read (default ``fix``) and ``missing_fix`` for one that does not exist (without
    one, a missing file is told as an unreadable one)."""
    named = f"{what} {path}" if what else str(path)
    unreadable = fix if unreadable_fix is None else unreadable_fix
    try:
        with Path(path).open("rb") as file:
            data = file.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise ConfigurationError(f"{named} is larger than {MAX_BYTES >> 20} MiB",
                                     fix="a data file this size is not one the project wrote: "
                                         "restore it")
        text = data.decode("utf-8")
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
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:   # its text ends "(at line L, column C)"
        raise ConfigurationError(f"{named} is not valid TOML: {error}", fix=fix) from None
    except RecursionError:
        raise _too_deep(named) from None
    except ValueError:   # an integer of more digits than int() converts (4300)
        raise ConfigurationError(f"{named} holds a number too long to read",
                                 fix="no setting needs a number of thousands of digits: "
                                     "correct it") from None
    if depth(table) > MAX_DEPTH:
        raise _too_deep(named)
    return table


def _too_deep(named: str) -> ConfigurationError:
    return ConfigurationError(f"{named} nests arrays or tables more than {MAX_DEPTH} deep",
                              fix="no setting nests that deep: remove the nesting")
