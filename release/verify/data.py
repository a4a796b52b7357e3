"""Facts verify relies on, loaded from data files into frozen values: the folders other
distributions install libraries into. (What a platform tag promises belongs to the
platform's loader model: platforms/linux/policy.py for manylinux.)"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from release.errors import ConfigurationError

_DATA = Path(__file__).with_name("data")


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


def load_distribution_dirs() -> tuple[DistributionDir, ...]:
    path = _DATA / "distribution_dirs.json"
    try:
        return tuple(DistributionDir(row["dir"], row["library"], row["distribution"])
                     for row in load_data_file(path)["dirs"])
    except (KeyError, TypeError) as error:
        raise ConfigurationError(f"malformed data file {path}: {error!r}",
                                 fix="fix the row it names") from None


@dataclass(frozen=True)
class ImportedLibrary:
    library: str        # glob on the file name
    distribution: str
    module: str         # importing it loads the library into the process


def load_imported_libraries() -> tuple[ImportedLibrary, ...]:
    path = _DATA / "distribution_dirs.json"
    try:
        return tuple(ImportedLibrary(row["library"], row["distribution"], row["module"])
                     for row in load_data_file(path).get("loaded_by_import", ()))
    except (KeyError, TypeError, AttributeError) as error:
        raise ConfigurationError(f"malformed data file {path}: {error!r}",
                                 fix="fix the row it names") from None


def imported_by(rows: tuple[ImportedLibrary, ...], library: str) -> ImportedLibrary | None:
    """The package whose import loads ``library`` into the process, if any."""
    return next((row for row in rows if fnmatch.fnmatchcase(library, row.library)), None)


@dataclass(frozen=True)
class ToolkitLibrary:
    library: str                      # glob on the file name
    distributions: tuple[str, ...]    # globs on the distribution names that provide it


def load_toolkit_libraries() -> tuple[ToolkitLibrary, ...]:
    path = _DATA / "distribution_dirs.json"
    try:
        return tuple(ToolkitLibrary(row["library"], tuple(row["distributions"]))
                     for row in load_data_file(path).get("toolkit_libraries", ()))
    except (KeyError, TypeError, AttributeError) as error:
        raise ConfigurationError(f"malformed data file {path}: {error!r}",
                                 fix="fix the row it names") from None


def toolkit_library(rows: tuple[ToolkitLibrary, ...], library: str) -> ToolkitLibrary | None:
    return next((row for row in rows if fnmatch.fnmatchcase(library, row.library)), None)


@dataclass(frozen=True)
class BuildPrefix:
    prefix: str
    where: str


def load_build_prefixes() -> tuple[BuildPrefix, ...]:
    """Folders that exist only on build machines (CI workspaces, container mounts)."""
    path = _DATA / "build_prefixes.json"
    try:
        return tuple(BuildPrefix(row["prefix"], row["where"])
                     for row in load_data_file(path)["prefixes"])
    except (KeyError, TypeError) as error:
        raise ConfigurationError(f"malformed data file {path}: {error!r}",
                                 fix="fix the row it names") from None


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
