"""One process at a time provisions a tool-cache entry: an exclusive lock on a small file
beside the entry (``<entry>.lock``), held while it is made. A second process waits (saying
so once), then finds the entry complete and uses it, so a tool is provisioned at most once
per cache however many builds and verify runs start together."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from release.errors import EnvironmentFailure

log = logging.getLogger("release")

if sys.platform == "win32":
    import msvcrt

    def _try_lock(handle: IO[bytes]) -> bool:
        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _wait_lock(handle: IO[bytes]) -> None:
        while True:
            try:   # LK_LOCK retries for 10 s, then raises: keep waiting
                msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
                return
            except OSError:
                continue

    def _unlock(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try_lock(handle: IO[bytes]) -> bool:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _wait_lock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)

    def _unlock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def usable_lock_file(path: Path) -> Path:
    """``path``, ready to open as a lock file: an empty folder in its place (a damaged cache
    or build folder) is removed with a log line; a folder with files in it is an error."""
    if path.is_dir() and not path.is_symlink():
        try:
            path.rmdir()
        except OSError:
            raise EnvironmentFailure(f"{path} is a folder, not the lock file",
                                     fix=f"remove {path} (it is not the build's)") from None
        log.warning("removed the folder %s that stood in place of the lock file", path)
    return path


def lock_path(entry: Path) -> Path:
    return entry.with_name(entry.name + ".lock")


@contextlib.contextmanager
def provisioning(entry: Path, what: str) -> Iterator[None]:
    """Holds the lock of the tool-cache entry ``entry`` (a folder or file) while the caller
    makes it; ``what`` names it in the message shown when another process holds it."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with usable_lock_file(lock_path(entry)).open("a+b") as handle:
        if not _try_lock(handle):
            log.info("waiting for another process that is provisioning %s", what)
            _wait_lock(handle)
        try:
            yield
        finally:
            _unlock(handle)


def folder_size(folder: Path) -> int:
    """Bytes in the files under ``folder`` (links not followed)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def megabytes(size: int) -> str:
    return f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"
