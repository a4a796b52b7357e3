"""The argument of ``verify``, opened and classified before anything else happens: a file, a
zip archive, and the tags its file name promises (what pip installs it by). Nothing here
imports a check, a platform or a tool, so bad input is refused in a fraction of a second."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion

from release.errors import ConfigurationError, WheelError


@dataclass(frozen=True)
class WheelArgument:
    path: Path
    name_tags: tuple[Tag, ...]   # the file name's tags; () when it is no valid wheel name

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(sorted({tag.platform for tag in self.name_tags}))


def file_name_tags(name: str) -> tuple[Tag, ...]:
    """The tags a wheel's file name promises, sorted; () for a name that is not a wheel's."""
    try:
        _, _, _, tags = parse_wheel_filename(name)
    except (InvalidWheelFilename, InvalidVersion):
        return ()
    return tuple(sorted(tags, key=str))


def classify(path: Path) -> WheelArgument:
    """``path`` as a wheel to verify; a ConfigurationError when it is not a file, a
    WheelError when it is not a zip archive (reads only the archive's end)."""
    if not path.is_file():
        raise ConfigurationError(f"verify: {path} is not a file",
                                 fix="pass the path of a .whl file")
    try:
        archive = zipfile.is_zipfile(path)
    except OSError as error:
        raise WheelError(f"{path.name}: cannot be read ({error.strerror or error})",
                         fix="check the file's permissions") from None
    if not archive:
        raise WheelError(f"{path.name}: not a readable zip archive (no zip directory at its "
                         "end)", fix="pass a .whl file; rebuild or re-download it")
    return WheelArgument(path, file_name_tags(path.name))
