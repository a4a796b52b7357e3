"""The build folder's safety: one build at a time (a lock), scratch work inside the build
folder rather than the output folder, and publication by one final rename, so a killed or
failed build never leaves a file with a release's name anywhere under ``--out``."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from release.errors import EnvironmentFailure

log = logging.getLogger("release")

LOCK_FILE = ".release.lock"
SCRATCH_PREFIX = "scratch-"


def _failure(action: str, path: Path, error: OSError) -> EnvironmentFailure:
    reason = error.strerror or str(error)
    fixes = {errno.ENOSPC: "free disk space and run again",
             errno.EROFS: "choose a writable folder",
             errno.EACCES: "choose a folder you may write to",
             errno.ENOTDIR: "a path component is a file: choose another path",
             errno.EEXIST: "a file has that name: choose another path",
             errno.ENAMETOOLONG: "choose a shorter path"}
    return EnvironmentFailure(f"cannot {action} {path}: {reason}",
                              fix=fixes.get(error.errno or 0, "check the path and the disk"))


def make_folder(path: Path, *, action: str = "create the folder") -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _failure(action, path, error) from None
    if not path.is_dir():
        raise _failure(action, path, OSError(errno.ENOTDIR, "not a folder"))


@contextmanager
def locked(build_dir: Path) -> Iterator[None]:
    """Holds the build folder's lock; a second build on the same folder fails at once."""
    make_folder(build_dir, action="create the build folder")
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks; builds must not share a folder
        yield
        return
    with (build_dir / LOCK_FILE).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EnvironmentFailure(f"another build is using {build_dir}",
                                     fix="wait for it to finish, or pass another "
                                         "--build-dir") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def scratch(build_dir: Path) -> Iterator[Path]:
    """A private work folder inside the (locked) build folder; stale ones from killed runs
    are removed first."""
    for stale in build_dir.glob(SCRATCH_PREFIX + "*"):
        log.info("removing %s left by an interrupted build", stale)
        shutil.rmtree(stale, ignore_errors=True)
    try:
        folder = tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, dir=build_dir)
    except OSError as error:
        raise _failure("create a work folder in", build_dir, error) from None
    with folder as path:
        yield Path(path)


def publish(wheel: Path, out_dir: Path) -> Path:
    """Copies the finished wheel into ``out_dir`` under a hidden partial name and renames it:
    the release name appears only complete."""
    final = out_dir / wheel.name
    partial = out_dir / f".{wheel.name}.partial"
    if final.is_dir():
        raise EnvironmentFailure(f"{final} is a folder", fix="remove it or choose another --out")
    try:
        shutil.copyfile(wheel, partial)
        os.replace(partial, final)
    except OSError as error:
        raise _failure("write the wheel to", out_dir, error) from None
    finally:
        partial.unlink(missing_ok=True)
    return final
