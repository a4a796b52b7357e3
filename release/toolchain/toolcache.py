"""Entries of the tool cache (``$RELEASE_CACHE_DIR``): complete and intact, or made again.

An entry is a folder (an installed tool, a CUDA toolchain, an emulator root) made in a
``.partial`` folder and sealed last with a manifest, ``.manifest.json``: every file's sha256
and size, and the file's status (size, modification and change times, inode) when it was
hashed. ``damage`` checks an entry at every use, cheaply: it lists the folder and compares
each file's status with the manifest; only a file whose status moved is read and hashed
again. Writing a file, truncating it, touching it back or replacing it all move its change
time, which no program can set; a file that is missing or not in the manifest is damage too.
A file whose status moved but whose bytes are the ones sealed (a cache restored onto another
disk) gets its status refreshed, so the next check is cheap again.

``provision`` makes an entry when it is absent, incomplete or damaged (a warning names the
file), and refuses, in one line naming the file, an entry that is damaged again right after it
was made."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from release import progress
from release._lock import folder_size, megabytes, provisioning
from release.errors import EnvironmentFailure, ToolError

MANIFEST = ".manifest.json"
SCHEMA = 1
_CHUNK = 1 << 20
log = logging.getLogger("release")

Fingerprint = tuple[int, int, int, int]   # size, mtime_ns, ctime_ns, inode


@dataclass(frozen=True)
class Damage:
    file: str        # relative to the entry, '/'-separated
    what: str        # "changed", "missing", "not in its manifest", ...

    def describe(self, entry: Path) -> str:
        return f"{entry / self.file} is {self.what}"


def _fingerprint(status: os.stat_result) -> Fingerprint:
    return status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _walk(folder: Path, relative: str = "") -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(relative path, entry) of every file and link below ``folder``, folders descended."""
    with os.scandir(folder) as entries:
        for entry in entries:
            name = f"{relative}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(Path(entry.path), name + "/")
            elif name != MANIFEST:
                yield name, entry


def _describe(path: Path, status: os.stat_result) -> dict[str, object]:
    if stat.S_ISLNK(status.st_mode):
        return {"link": os.readlink(path), "status": list(_fingerprint(status))}
    return {"sha256": file_sha256(path), "size": status.st_size,
            "status": list(_fingerprint(status))}


def _statuses(folder: Path) -> dict[str, tuple[Path, os.stat_result]]:
    return {name: (Path(entry.path), entry.stat(follow_symlinks=False))
            for name, entry in _walk(folder)}


def _named(statuses: Mapping[str, tuple[Path, os.stat_result]]
           ) -> Iterator[tuple[str, os.stat_result]]:
    return ((name, status) for name, (_, status) in statuses.items())


def _status_line(name: str, status: os.stat_result) -> str:
    return (f"{name}\0{status.st_size}\0{status.st_mtime_ns}\0{status.st_ctime_ns}"
            f"\0{status.st_ino}")


def _status_digest(statuses: Iterable[tuple[str, os.stat_result]]) -> str:
    """One digest of every file's name and status: equal means nothing was touched."""
    lines = sorted(_status_line(name, status) for name, status in statuses)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _current_status_digest(folder: Path) -> str:
    """The status digest of ``folder`` as it is now, keeping nothing per file: the whole of
    a clean check."""
    return _status_digest((name, entry.stat(follow_symlinks=False))
                          for name, entry in _walk(folder))


def seal(folder: Path, *, describes: Mapping[str, object]) -> None:
    """Writes the manifest of ``folder`` (last: the entry counts as complete from then on).
    ``describes`` says what the entry is (its pin), for people reading the file."""
    statuses = _statuses(folder)
    files = {name: _describe(path, status) for name, (path, status) in statuses.items()}
    _write_manifest(folder, {"schema": SCHEMA, "describes": dict(describes),
                             "status": _status_digest(_named(statuses))}, files)


def _write_manifest(folder: Path, header: Mapping[str, object],
                    files: Mapping[str, object]) -> None:
    """Two JSON lines: a header (with the status digest, all a clean check reads) and the
    files."""
    partial = folder / (MANIFEST + ".partial")
    partial.write_text(json.dumps(header, sort_keys=True) + "\n"
                       + json.dumps(files, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, folder / MANIFEST)


def _read_header(folder: Path) -> dict[str, object] | None:
    try:
        with (folder / MANIFEST).open(encoding="utf-8") as handle:
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("schema") != SCHEMA:
        return None
    return header


def read_manifest(folder: Path) -> tuple[dict[str, object], dict[str, dict[str, object]]] | None:
    """The entry's manifest (header, files), or None when it has none (incomplete) or it is
    unreadable."""
    try:
        header_line, files_line = (folder / MANIFEST).read_text(encoding="utf-8").splitlines()
        header, files = json.loads(header_line), json.loads(files_line)
    except (OSError, ValueError):
        return None
    if (not isinstance(header, dict) or header.get("schema") != SCHEMA or
            not isinstance(files, dict)):
        return None
    return header, files


def _file_damage(name: str, path: Path, status: os.stat_result,
                 sealed: dict[str, object]) -> Damage | None:
    if list(_fingerprint(status)) == sealed.get("status"):
        return None
    if "link" in sealed:
        same = stat.S_ISLNK(status.st_mode) and os.readlink(path) == sealed["link"]
    else:
        same = (stat.S_ISREG(status.st_mode) and status.st_size == sealed.get("size")
            and file_sha256(path) == sealed.get("sha256"))
    return None if same else Damage(name, "changed since it was installed")


def damage(folder: Path, *, tolerated: Callable[[str], bool] = lambda name: False
           ) -> Damage | None:
    """The first difference between ``folder`` and its manifest, or None when it is intact.
    ``tolerated(name)`` names files the tool itself may add (an interpreter's byte code)."""
    header = _read_header(folder)
    if header is None:
        return Damage(MANIFEST, "missing or unreadable: the entry is incomplete")
    if header.get("status") == _current_status_digest(folder):
        return None
    statuses = _statuses(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        return Damage(MANIFEST, "unreadable: the entry is incomplete")
    files = manifest[1]
    for name in sorted(statuses):
        path, status = statuses[name]
        if name not in files:
            if tolerated(name):
                continue
            return Damage(name, "not in its manifest (added after it was installed)")
        found = _file_damage(name, path, status, files[name])
        if found is not None:
            return found
    missing = sorted(set(files) - set(statuses))
    if missing:
        return Damage(missing[0], "missing")
    _refresh(folder, manifest[0], files, statuses)
    return None


def _refresh(folder: Path, header: dict[str, object], files: dict[str, dict[str, object]],
             statuses: Mapping[str, tuple[Path, os.stat_result]]) -> None:
    """Records the status of files whose bytes were just checked, so the next check is
    cheap again (best effort: a read-only cache is checked in full each time)."""
    for name, sealed in files.items():
        sealed["status"] = list(_fingerprint(statuses[name][1]))
    try:
        _write_manifest(folder, {**header, "status": _status_digest(_named(statuses))}, files)
    except OSError as error:
        log.debug("cannot refresh the manifest of %s: %s", folder, error)


def provision(folder: Path, make: Callable[[Path], None], *, what: str,
              describes: Mapping[str, object],
              tolerated: Callable[[str], bool] = lambda name: False) -> Path:
    """``folder``, made by ``make(partial)`` when it is absent, incomplete or damaged, and
    checked against its manifest: an entry damaged right after it was made is refused."""
    if folder.exists() and damage(folder, tolerated=tolerated) is None:
        return folder
    with provisioning(folder, what):   # one process at a time; the others wait, then use it
        return _provision_locked(folder, make, what=what, describes=describes,
                                 tolerated=tolerated)


def _provision_locked(folder: Path, make: Callable[[Path], None], *, what: str,
                      describes: Mapping[str, object], tolerated: Callable[[str], bool]) -> Path:
    found = damage(folder, tolerated=tolerated) if folder.exists() else None
    if folder.exists() and found is None:
        return folder       # another process made it while this one waited
    if found is not None:
        log.warning("%s: %s; installing it again", what, found.describe(folder))
    partial = folder.with_name(folder.name + ".partial")
    try:
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with progress.long_step(f"making {what} in {folder}",
                                size=lambda: megabytes(folder_size(partial))):
            make(partial)
        seal(partial, describes=describes)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    except OSError as error:
        where = f" ({error.filename})" if error.filename else ""
        raise EnvironmentFailure(f"cannot write {what} into {folder}: {error.strerror}{where}",
                                 fix="check the disk and the cache folder "
                                     "(RELEASE_CACHE_DIR)") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    again = damage(folder, tolerated=tolerated)
    if again is not None:
        raise ToolError(f"{what}: {again.describe(folder)} right after it was installed",
                        fix="something rewrites the tool cache: check what else writes "
                            "RELEASE_CACHE_DIR, or point it at a private folder")
    log.info("%s: %s in %s", what, megabytes(folder_size(folder)), folder)
    return folder
