"""Build tools the pipeline provisions from the package index on demand (never at import).

Each tool lands once in the cache folder (``$RELEASE_CACHE_DIR``, default
``~/.cache/edgert-release``) under a folder named after its requirement, so test runs and
CI reuse it."""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from release import _cmd
from release._lock import folder_size, megabytes, provisioning
from release.errors import CommandError, EnvironmentFailure, ToolError
from release.options import default_cache_dir


def cache_dir() -> Path:
    """The tool cache for callers outside a build (verify, tests): ``RELEASE_CACHE_DIR`` or
    the default. A build gets its cache from its resolved options (release/options.py)."""
    configured = os.environ.get("RELEASE_CACHE_DIR")
    return Path(configured) if configured else default_cache_dir()


@dataclass(frozen=True)
class CMakeRoute:
    """A CMake release range a consumer may use: imported targets need >= 3.28."""

    name: str          # "old" or "new"
    requirement: str   # pip requirement that provisions it


CMAKE_OLD = CMakeRoute("old", "cmake==3.24.*")
CMAKE_NEW = CMakeRoute("new", "cmake>=3.28,<5")


COMPLETE_MARKER = ".complete"   # written last: a folder without it is discarded on use
log = logging.getLogger("release")


def _slug(requirement: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", requirement).strip("_")


def pip_tool(requirement: str, executable: str, *, cache: Path | None = None) -> Path:
    """Installs ``requirement`` into its own folder of the tool cache with pip and returns
    the path of ``executable`` (a path relative to that folder). One process at a time
    provisions a folder (a lock beside it); what it downloads is announced, with pip naming
    each file and its size as it comes, and nothing is left outside the cache."""
    target = (cache or cache_dir()) / "tools" / _slug(requirement)
    binary = target / executable
    if binary.exists() and (target / COMPLETE_MARKER).exists():
        return binary
    with provisioning(target, requirement):
        if not (binary.exists() and (target / COMPLETE_MARKER).exists()):
            _pip_install(requirement, target)
    if not binary.exists():
        raise ToolError(f"{requirement} installed but {executable} is missing",
                        fix=f"remove {target} and retry")
    return binary


def _pip_install(requirement: str, target: Path) -> None:
    if target.exists():
        log.warning("discarding the incomplete tool folder %s", target)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    log.info("downloading %s from the package index into %s (once per cache)",
             requirement, target)
    try:
        (partial / ".tmp").mkdir(parents=True)
        # pip's own scratch folders live in the partial folder: nothing stays in TMPDIR
        _cmd.run([sys.executable, "-m", "pip", "install", "--progress-bar", "off",
                  "--disable-pip-version-check", "--target", partial, requirement],
                 what=f"pip install {requirement}", env={"TMPDIR": str(partial / ".tmp")},
                 stream=True)
        shutil.rmtree(partial / ".tmp", ignore_errors=True)
        (partial / COMPLETE_MARKER).write_text(requirement + "\n")
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    except CommandError as error:
        raise EnvironmentFailure(error.what, fix="check the connection to the package index, "
                                 f"or install the tool by hand ({requirement})") from None
    except OSError as error:
        raise EnvironmentFailure(f"cannot install {requirement} into {target}: "
                                 f"{error.strerror}", fix="check the disk and the cache "
                                 "folder (RELEASE_CACHE_DIR)") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    log.info("%s: %s in %s", requirement, megabytes(folder_size(target)), target)


def pip_site(requirement: str, *, cache: Path | None = None) -> Path:
    """A folder of the tool cache with ``requirement`` (and its dependencies) installed by
    pip, laid out like site-packages; provisioned once."""
    return pip_tool(requirement, ".", cache=cache)


def cmake_version(cmake: Path | str) -> tuple[int, int, int]:
    output = _cmd.run([str(cmake), "--version"], what="cmake --version")
    match = re.search(r"cmake version (\d+)\.(\d+)\.(\d+)", output)
    if not match:
        raise ToolError(f"cannot read the version of {cmake}", fix="install CMake >= 3.24")
    major, minor, patch = (int(group) for group in match.groups())
    return major, minor, patch


def cmake(route: CMakeRoute = CMAKE_NEW, *, cache: Path | None = None) -> Path:
    """A CMake executable for ``route``: the one on PATH when it fits, else provisioned."""
    on_path = shutil.which("cmake")
    if on_path is not None:
        version = cmake_version(on_path)
        if route is CMAKE_NEW and version >= (3, 28, 0):
            return Path(on_path)
        if route is CMAKE_OLD and (3, 24, 0) <= version < (3, 25, 0):
            return Path(on_path)
    return pip_tool(route.requirement, "cmake/data/bin/cmake", cache=cache)


def ninja(*, cache: Path | None = None) -> Path:
    """Ninja from PATH, else from the ``ninja`` package on the index."""
    on_path = shutil.which("ninja")
    if on_path is not None:
        return Path(on_path)
    return pip_tool("ninja", "bin/ninja", cache=cache)
