"""The build folder's safety: one build at a time (a lock), scratch work inside the build
folder rather than the output folder, and publication by one final rename from a temporary
name of this process, so a killed or failed build never leaves a file with a release's name
anywhere under ``--out``, and two builds sharing ``--out`` never share a temporary file."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from release import _lock
from release.distribution.wheel import write_atomically
from release.errors import EnvironmentFailure
from release.toolchain import commands

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
    """Holds the build folder's lock; a second build on the same folder fails at once. Once
    held, programs a killed build left running in the folder are stopped (commands)."""
    make_folder(build_dir, action="create the build folder")
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory locks; builds must not share a folder
        yield
        return
    try:
        handle = _lock.usable_lock_file(build_dir / LOCK_FILE).open("a")
    except OSError as error:
        raise _failure("open the lock file in", build_dir, error) from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EnvironmentFailure(f"another build is using {build_dir}",
                                     fix="wait for it to finish, or pass another "
                                         "--build-dir") from None
        try:
            stopped = commands.stop_leftovers(str(build_dir))
            if stopped:
                log.info("stopped %d programs left running in %s by an interrupted build",
                         stopped, build_dir)
            with commands.owned_by(str(build_dir)):
                yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def scratch(build_dir: Path) -> Iterator[Path]:
    """A private work folder inside the (locked) build folder; stale ones from killed runs
    (which may hold complete but unverified wheels) are removed first. The programs the
    build runs get a temporary folder inside it (TMPDIR), so what they leave there (a
    repair tool's unpacked wheel) goes with it."""
    for stale in build_dir.glob(SCRATCH_PREFIX + "*"):
        log.info("removing %s left by an interrupted build", stale)
        shutil.rmtree(stale, ignore_errors=True)
    try:
        folder = tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, dir=build_dir)
    except OSError as error:
        raise _failure("create a work folder in", build_dir, error) from None
    with folder as path:
        temporary = Path(path) / "tmp"
        temporary.mkdir()
        with commands.child_environment({"TMPDIR": str(temporary)}):
            yield Path(path)


# What this process has published, for the message of an interrupted run: a signal that
# lands after the rename must not be told as "no wheel was written".
_published: list[Path] = []


def published() -> tuple[Path, ...]:
    return tuple(_published)


PARTIAL_SUFFIX = ".partial"
_PARTIAL = re.compile(r"^\.(?P<wheel>.+\.whl)\.(?P<host>[A-Za-z0-9-]*)-(?P<pid>[0-9]+)\."
                      r"[A-Za-z0-9_]+\.partial$")
_LEGACY_PARTIAL = re.compile(r"^\..+\.whl\.partial$")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32]


def _partial_prefix(wheel_name: str) -> str:
    """The start of this process' temporary names in ``--out``: hidden, named for the wheel,
    this host and this process (so no two builds ever share one)."""
    return f".{wheel_name}.{_host()}-{os.getpid()}."


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_partials(out_dir: Path) -> list[Path]:
    """Temporary files in ``out_dir`` whose writer is gone (a killed publish on this host, or
    the single shared name of older releases); returns those removed."""
    removed: list[Path] = []
    try:
        entries = list(out_dir.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _PARTIAL.match(entry.name)
        stale = (match is not None and match["host"] == _host()
                 and not process_alive(int(match["pid"]))) or (
            match is None and _LEGACY_PARTIAL.match(entry.name) is not None)
        if stale and entry.is_file() and not entry.is_symlink():
            with contextlib.suppress(OSError):
                entry.unlink()
                removed.append(entry)
                log.info("removed %s left by an interrupted publish", entry)
    return removed


def check_writable(out_dir: Path) -> None:
    """Fails before any work when a wheel could not be published into ``out_dir``."""
    make_folder(out_dir, action="create the output folder")
    remove_stale_partials(out_dir)
    try:
        handle, name = tempfile.mkstemp(prefix=_partial_prefix("probe.whl"),
                                        suffix=PARTIAL_SUFFIX, dir=out_dir)
    except OSError as error:
        raise _failure("write to the output folder", out_dir, error) from None
    os.close(handle)
    os.unlink(name)


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):  # (not every system opens folders)
        descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _pause_before_rename() -> None:
    """Nothing; a test widens the race between writing and renaming through it."""


def publish(wheel: Path, out_dir: Path, index: tuple[Path, str] | None = None) -> Path:
    """Copies the finished wheel into ``out_dir`` under a temporary name of this process
    (hidden, unique: another build publishing into the same folder has its own), flushes it
    to disk and renames it: the release name appears only complete, and two builds that
    publish the same wheel each rename a complete file (the last one stays). ``index``
    (a path and its text: the variants index the wheel joins) is written after it."""
    final = out_dir / wheel.name
    if final.is_dir():
        raise EnvironmentFailure(f"{final} is a folder", fix="remove it or choose another --out")
    try:
        handle, name = tempfile.mkstemp(prefix=_partial_prefix(wheel.name),
                                        suffix=PARTIAL_SUFFIX, dir=out_dir)
    except OSError as error:
        raise _failure("write the wheel to", out_dir, error) from None
    partial = Path(name)
    try:
        with os.fdopen(handle, "wb") as target, wheel.open("rb") as source:
            shutil.copyfileobj(source, target, 1 << 20)
            target.flush()
            os.fsync(target.fileno())
        os.chmod(partial, 0o666 & ~_UMASK)  # what a plain copy gets (mkstemp: 0600)
        _pause_before_rename()
        os.replace(partial, final)
    except BaseException as error:
        # the rename is the one step that removes the temporary name: if it is gone, the
        # wheel is published, whatever interrupted us after it
        if not os.path.lexists(partial) and final.is_file():
            _published.append(final)
        else:
            with contextlib.suppress(OSError):
                partial.unlink()
        if isinstance(error, OSError):
            raise _failure("write the wheel to", out_dir, error) from None
        raise
    _published.append(final)
    _fsync_folder(out_dir)
    if index is not None:
        write_atomically(*index)
    return final


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()   # read once, at import: os.umask can only be read by setting it
