"""Facts verify relies on, loaded from data files into frozen values: the folders other
distributions install libraries into. (What a platform tag promises belongs to the
platform's loader model: platforms/linux/policy.py for manylinux.)"""

from __future__ import annotations

import fnmatch
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from release.errors import ConfigurationError

_DATA = Path(__file__).with_name("data")
_Row = TypeVar("_Row")


@dataclass(frozen=True)
class DistributionDir:
    dir: str
    library: str
    distribution: str


def load_data_file(path: Path) -> Any:
    """A JSON data file shipped with the tooling; unreadable is a ConfigurationError."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ConfigurationError(f"cannot read data file {path}: {error}",
                                 fix="reinstall the release tooling") from None


def _rows(file: str, key: str, make: Callable[[dict[str, Any]], _Row], *,
          optional: bool = False) -> tuple[_Row, ...]:
    """The rows under ``key`` of a data file in release/verify/data/, each made into a value;
    a malformed row is a ConfigurationError naming the file."""
    path = _DATA / file
    try:
        rows = _data(file).get(key, ()) if optional else _data(file)[key]
        return tuple(make(row) for row in rows)
    except (KeyError, TypeError, AttributeError) as error:
        raise ConfigurationError(f"malformed data file {path}: {error!r}",
                                 fix="fix the row it names") from None


@functools.cache
def _data(file: str) -> Any:
    """A data file of the tooling, read once per process (they never change while it runs)."""
    return load_data_file(_DATA / file)


def load_distribution_dirs() -> tuple[DistributionDir, ...]:
    return _rows("distribution_dirs.json", "dirs",
                 lambda row: DistributionDir(row["dir"], row["library"], row["distribution"]))


@dataclass(frozen=True)
class ImportedLibrary:
    library: str        # glob on the file name
    distribution: str
    module: str         # importing it loads the library into the process
    sole: bool = False  # no other distribution provides the library (libc10.so: torch alone)
    builds: str = ""    # only these builds of the distribution load it ("CUDA"); "": all


def load_imported_libraries() -> tuple[ImportedLibrary, ...]:
    return _rows("distribution_dirs.json", "loaded_by_import",
                 lambda row: ImportedLibrary(row["library"], row["distribution"], row["module"],
                                             bool(row.get("sole", False)),
                                             str(row.get("builds", ""))),
                 optional=True)


@dataclass(frozen=True)
class ToolkitLibrary:
    library: str                      # glob on the file name
    distributions: tuple[str, ...]    # globs on the distribution names that provide it
    toolkit: str = "CUDA"             # the vendor toolkit it belongs to


def load_toolkit_libraries() -> tuple[ToolkitLibrary, ...]:
    return _rows("distribution_dirs.json", "toolkit_libraries",
                 lambda row: ToolkitLibrary(row["library"], tuple(row["distributions"]),
                                            row.get("toolkit", "CUDA")),
                 optional=True)


class _Library(Protocol):
    @property
    def library(self) -> str: ...


_Matching = TypeVar("_Matching", bound=_Library)


def matching(rows: tuple[_Matching, ...], library: str) -> _Matching | None:
    """The first row whose ``library`` glob matches the file name ``library``, if any (the
    package whose import loads it, the CUDA toolkit library it is)."""
    return next((row for row in rows if fnmatch.fnmatchcase(library, row.library)), None)


def matching_all(rows: tuple[_Matching, ...], library: str) -> list[_Matching]:
    """Every row whose ``library`` glob matches the file name ``library``, in file order."""
    return [row for row in rows if fnmatch.fnmatchcase(library, row.library)]


@dataclass(frozen=True)
class BuildPrefix:
    prefix: str
    where: str


def load_build_prefixes() -> tuple[BuildPrefix, ...]:
    """Folders that exist only on build machines (CI workspaces, container mounts)."""
    return _rows("build_prefixes.json", "prefixes",
                 lambda row: BuildPrefix(row["prefix"], row["where"]))


def distribution_row(dirs: tuple[DistributionDir, ...], folder: str,
                     library: str) -> DistributionDir | None:
    """The first row whose folder is ``folder`` and whose glob matches ``library``. A row
    whose glob is "*" only says who owns the folder, not that ``library`` is in it."""
    for row in dirs:
        if row.dir == folder and fnmatch.fnmatchcase(library, row.library):
            return row
    return None


def distribution_folder(dirs: tuple[DistributionDir, ...], folder: str) -> str:
    """The distribution owning ``folder`` whatever the library, or ''."""
    return next((row.distribution for row in dirs if row.dir == folder), "")
