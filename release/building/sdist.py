"""The sdist: the project's source files and PKG-INFO in one reproducible ``.tar.gz``.

Which files (``source_files``), by where the project folder is:

- a git checkout: exactly the files ``git ls-files`` lists under the project folder (tracked
  files, as they are in the work tree, submodules included). Whatever their folder is called:
  a tracked ``native/.../build/`` is packed like any other folder, and untracked files
  (``.env``, caches, editor swap files, build folders) never are. A tracked file deleted from
  the work tree is left out, as the next commit would leave it out; a tracked PKG-INFO at the
  root is replaced by the generated one. Nothing else is excluded.
- an unpacked sdist (PKG-INFO at its root, no git: ``pip wheel edgert-0.1.0.tar.gz`` or
  ``python -m build`` building the wheel from the sdist it made): every file under the folder
  except PKG-INFO (rewritten), the pipeline's default build and output folders (``build/`` and
  ``dist/`` at the top) and ``__pycache__`` folders (importing the backend writes them); a log
  line says so.
- anywhere else: a ConfigurationError saying how to get one of the above.

pyproject.toml, the readme and the license files must be among the files: an sdist without
them could not build a wheel. The archive is reproducible: entries sorted by name, all dated
SOURCE_DATE_EPOCH (1980-01-01 when unset), owner and group 0 without names, modes 0644 or
0755, PAX format, and a gzip header without a time or file name."""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import os
import shutil
import stat
import tarfile
from collections.abc import Mapping
from pathlib import Path

from release.distribution.core_metadata import core_metadata, standard
from release.distribution.wheel import normalize_distribution, source_date_epoch
from release.errors import CommandError, ConfigurationError
from release.manifest import Manifest
from release.toolchain import commands

log = logging.getLogger("release")

PKG_INFO = "PKG-INFO"
# Left out of an unpacked sdist: what the pipeline and Python write there, never sources.
_UNPACKED_TOP_EXCLUDES = ("build", "dist")
_UNPACKED_EXCLUDES = ("__pycache__",)


def _git_files(root: Path) -> list[str] | None:
    """Tracked files under ``root`` ('/'-separated, relative to it), or None when ``root`` is
    not inside a git work tree (or git is not installed)."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        commands.run([git, "rev-parse", "--is-inside-work-tree"], cwd=root, stderr="separate")
    except CommandError as error:
        if "not a git repository" in error.output:
            return None
        raise ConfigurationError(f"git cannot read the checkout at {root}: "
                                 f"{' '.join(error.output.split())[:300]}",
                                 fix="fix what git reports (for another owner's checkout: git "
                                     "config --global --add safe.directory FOLDER)") from None
    listed = commands.run([git, "ls-files", "-z", "--cached", "--recurse-submodules"], cwd=root,
                      stderr="separate", what="list the tracked files").split("\0")
    deleted = set(commands.run([git, "ls-files", "-z", "--deleted"], cwd=root, stderr="separate",
                           what="list the deleted files").split("\0"))
    files = []
    for name in filter(None, listed):
        if name in deleted:
            log.info("sdist: %s is tracked but deleted from the work tree; left out", name)
        elif not os.path.lexists(root / name):
            raise ConfigurationError(f"git lists '{name}' but it is not in the work tree",
                                     fix="check the file name (git may quote it) and the "
                                         "checkout")
        elif not (root / name).is_dir() or (root / name).is_symlink():
            files.append(name)
    return files or None


def _unpacked_files(root: Path) -> list[str]:
    files = []
    for folder, dirs, names in os.walk(root):
        relative = Path(folder).relative_to(root)
        dirs[:] = [d for d in dirs if d not in _UNPACKED_EXCLUDES and not (
            relative == Path(".") and d in _UNPACKED_TOP_EXCLUDES)]
        # os.walk lists links to folders as folders; they are packed as links
        files += [(relative / d).as_posix() for d in dirs if (Path(folder) / d).is_symlink()]
        files += [(relative / name).as_posix() for name in names]
    return files


def source_files(manifest: Manifest) -> list[str]:
    """The files the sdist of ``manifest.root`` holds, sorted (see the module's rules)."""
    root = manifest.root
    files = _git_files(root)
    if files is None:
        if not (root / PKG_INFO).is_file():
            git = "" if shutil.which("git") else " (and git is not installed)"
            raise ConfigurationError(
                f"{root} is neither a git checkout nor an unpacked sdist{git}; the sdist packs "
                "the files git tracks", fix="build the sdist from a git clone of the project")
        log.info("sdist: %s is an unpacked sdist, not a git checkout: packing its files "
                 "(without %s, build/, dist/ and __pycache__/)", root, PKG_INFO)
        files = _unpacked_files(root)
    files = sorted(name for name in files if name != PKG_INFO)
    _check_required(manifest, set(files))
    return files


def _check_required(manifest: Manifest, files: set[str]) -> None:
    metadata = standard(manifest.project, manifest.root)
    required = ["pyproject.toml", *sorted(p.as_posix() for p in metadata.license_files or ())]
    if metadata.readme is not None and metadata.readme.file is not None:
        required.append(metadata.readme.file.relative_to(manifest.root).as_posix())
    for name in required:
        if name not in files:
            raise ConfigurationError(f"{name} is not tracked by git, so the sdist would lack it "
                                     "and no wheel could be built from it", fix=f"git add {name}")


def _entry(root: Path, name: str, arcname: str, *, epoch: int
           ) -> tuple[tarfile.TarInfo, bytes | None]:
    path = root / name
    status = path.lstat()
    info = tarfile.TarInfo(arcname)
    info.mtime = epoch
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if stat.S_ISLNK(status.st_mode):
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, os.readlink(path), 0o777
        return info, None
    if not stat.S_ISREG(status.st_mode):
        raise ConfigurationError(f"{name} is not a regular file or a link",
                                 fix="an sdist holds files only; remove it from the sources")
    data = path.read_bytes()
    info.size = len(data)
    info.mode = 0o755 if status.st_mode & stat.S_IXUSR else 0o644
    return info, data


def write_sdist(manifest: Manifest, directory: Path, environ: Mapping[str, str]) -> Path:
    """Writes ``<name>-<version>.tar.gz`` into ``directory`` (atomically); returns its path."""
    base = f"{normalize_distribution(manifest.distribution)}-{manifest.version}"
    epoch = source_date_epoch(environ)
    files = source_files(manifest)
    pkg_info = core_metadata(manifest.project, manifest.root).text.encode("utf-8")
    path = directory / f"{base}.tar.gz"
    partial = path.with_name(path.name + ".partial")
    entries = [(f"{base}/{name}", name) for name in files] + [(f"{base}/{PKG_INFO}", None)]
    try:
        with contextlib.ExitStack() as stack:
            raw = stack.enter_context(open(partial, "wb"))
            compressed = stack.enter_context(
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0))
            archive = stack.enter_context(
                tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT))
            for arcname, name in sorted(entries):
                if name is None:
                    info = tarfile.TarInfo(arcname)
                    info.size, info.mtime, info.mode = len(pkg_info), epoch, 0o644
                    data: bytes | None = pkg_info
                else:
                    info, data = _entry(manifest.root, name, arcname, epoch=epoch)
                archive.addfile(info, None if data is None else io.BytesIO(data))
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    log.info("sdist: %s (%d files)", path, len(files) + 1)
    return path
