"""Test inputs downloaded as files (not installed): each pinned by its file name and sha256
and fetched exactly, a download of that one named file, never what a resolver would choose
today. Looked for, in order, in the cache folder, in the local wheel folders pip is told
about (``PIP_FIND_LINKS``: a machine's own wheelhouse), then at its address. A file whose
digest is not the pinned one is refused naming both digests."""

from __future__ import annotations

import hashlib
import os
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from release import progress
from release._lock import megabytes, provisioning


@dataclass(frozen=True)
class PinnedFile:
    name: str     # the file name, as the index lists it
    sha256: str   # of the reviewed file
    url: str      # where that one file is


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def local_copies(name: str) -> list[Path]:
    folders = os.environ.get("PIP_FIND_LINKS", "").split()
    return [Path(folder) / name for folder in folders
            if not folder.startswith(("http://", "https://", "file:"))
            and (Path(folder) / name).is_file()]


def fetch(pin: PinnedFile, folder: Path) -> Path:
    """``folder``/``pin.name`` with the pinned digest, fetched once."""
    target = folder / pin.name
    if target.is_file() and sha256_of(target) == pin.sha256:
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with provisioning(target, pin.name):
        if target.is_file() and sha256_of(target) == pin.sha256:
            return target
        partial = target.with_name(target.name + ".partial")
        local = local_copies(pin.name)
        source = str(local[0]) if local else pin.url
        with progress.long_step(f"fetching {pin.name} from {source}",
                                size=lambda: megabytes(partial.stat().st_size)):
            if local:
                shutil.copyfile(local[0], partial)
            else:
                with urllib.request.urlopen(pin.url, timeout=300) as response, \
                        partial.open("wb") as out:
                    shutil.copyfileobj(response, out, 1 << 20)
        got = sha256_of(partial)
        if got != pin.sha256:
            partial.unlink()
            pytest.fail(f"{source} has sha256 {got}, not the pinned {pin.sha256}: the file "
                        f"{pin.name} changed where it is fetched from; review the new one and "
                        "pin it, or fetch the reviewed one")
        partial.rename(target)
    return target
