"""The argument of ``verify``, opened and classified before anything else happens: a file, a
zip archive, and the tags its file name promises (what pip installs it by). Nothing here
imports a check, a platform or a tool, so bad input is refused in a fraction of a second."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion

from release.distribution.archive import has_zip_directory
from release.errors import ConfigurationError, WheelError


@dataclass(frozen=True)
class WheelArgument:
    path: Path
    name_tags: tuple[Tag, ...]   # the file name's tags; () when it is no valid wheel name

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(sorted({tag.platform for tag in self.name_tags}))


def variant_label(name: str) -> str | None:
    """A variant wheel's label (PEP 825: the last part of its file name); None for a wheel
    that is not a variant wheel (or a name that is no wheel's)."""
    if not name.endswith(".whl"):
        return None
    parts = name[:-len(".whl")].split("-")
    # name-version(-build)-python-abi-platform-label: six parts are a build tag when the
    # third starts with a digit (as installers read them), else a label
    if len(parts) == 7 or (len(parts) == 6 and not parts[2][:1].isdigit()):
        return parts[-1] if _LABEL.fullmatch(parts[-1]) else None
    return None


_LABEL = re.compile(r"[0-9a-z._]+")


def file_name_tags(name: str) -> tuple[Tag, ...]:
    """The tags a wheel's file name promises, sorted; () for a name that is not a wheel's.
    A variant wheel promises the tags of its name without the label."""
    label = variant_label(name)
    if label is not None:
        name = name[:-len(f"-{label}.whl")] + ".whl"
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
    tags = file_name_tags(path.name)
    try:
        archive = has_zip_directory(path)
    except OSError as error:
        raise WheelError(f"{path.name}: cannot be read ({error.strerror or error})",
                         fix="check the file's permissions") from None
    if not archive:
        raise WheelError(f"{path.name}: not a readable zip archive (no zip directory at its "
                         "end)", fix="pass a .whl file; rebuild or re-download it")
    return WheelArgument(path, tags)
