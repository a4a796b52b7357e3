"""Running another machine's Linux binaries on this one: qemu-user, in a root folder of that
machine's Debian packages (its C library, C++ runtime and a real CPython) plus the wheels
edgert needs at run time (numpy), unpacked into the tool cache, never installed.

The packages come from the Debian mirrors apt is configured with, through a private apt
state folder in the cache (``apt-get download`` with that machine's architecture): nothing is
added to the system's dpkg architectures or package lists. The root folder is provisioned
once per cross.toml entry (its folder name carries a hash of the entry) and is complete only
when its interpreter has imported ctypes and numpy under the emulator."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import zipfile
from pathlib import Path

from platforms.linux.cross import CrossTarget, has_compilers, toolchain_arguments
from release import _cmd
from release._lock import folder_size, megabytes, provisioning
from release.errors import CommandError, EnvironmentFailure, ToolError
from release.loader import Runner
from release.tools import COMPLETE_MARKER

log = logging.getLogger("release")

_CHECK_IMPORTS = "import ctypes, numpy; print(numpy.__version__)"
_ROOT_CONTENT = ("arch", "debian_architecture", "packages", "python", "python_version", "site",
                 "wheels", "wheel_platform")


def find_emulator(target: CrossTarget) -> str | None:
    """The first of the target's qemu-user programs on PATH."""
    return next((found for name in target.emulators if (found := shutil.which(name))), None)


def root_folder(target: CrossTarget, cache: Path) -> Path:
    """Where the target's root folder lives in the tool cache: named after what goes into
    it, so another entry gets another folder and every checkout shares one."""
    content = {key: getattr(target, key) for key in _ROOT_CONTENT}
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:12]
    return cache / "sysroots" / f"linux-{target.arch}-python{target.python_version}-{digest}"


def runner(target: CrossTarget, emulator: str, root: Path) -> Runner:
    """Programs for ``target`` run by ``emulator`` in ``root``; built with the cross
    toolchain when its compilers are installed (else the runner cannot build)."""
    return Runner(machine=target.arch, prefix=(emulator, "-L", str(root)),
                  python=str(root / target.python),
                  cmake_arguments=tuple(toolchain_arguments(target))
                  if has_compilers(target) else None)


def existing_runner(target: CrossTarget, cache: Path) -> Runner | None:
    """A runner when the emulator is on PATH and the root folder is complete; no download."""
    emulator = find_emulator(target)
    root = root_folder(target, cache)
    if emulator is None or not (root / COMPLETE_MARKER).is_file():
        return None
    return runner(target, emulator, root)


def provision_runner(target: CrossTarget, cache: Path) -> Runner | None:
    """A runner for ``target``, provisioning its root folder into ``cache`` (once); None when
    no emulator is installed. Download failures are EnvironmentFailures."""
    emulator = find_emulator(target)
    if emulator is None:
        log.info("no %s on PATH: %s binaries are checked without running them (fix: "
                 "apt-get install %s)", target.emulators[0], target.arch,
                 target.emulator_package)
        return None
    root = root_folder(target, cache)
    if not (root / COMPLETE_MARKER).is_file():
        with provisioning(root, f"the {target.arch} root folder"):
            if not (root / COMPLETE_MARKER).is_file():
                _provision_root(target, emulator, root, cache)
    return runner(target, emulator, root)


def _provision_root(target: CrossTarget, emulator: str, root: Path, cache: Path) -> None:
    if root.exists():
        log.warning("discarding the incomplete root folder %s", root)
    partial, wheels = (root.with_name(root.name + suffix) for suffix in (".partial", ".wheels"))
    for folder in (root, partial, wheels):
        shutil.rmtree(folder, ignore_errors=True)
    log.info("downloading %s Debian packages (%s) and wheels (%s) for the %s root folder %s "
             "(once per cache)", len(target.packages), ", ".join(target.packages[:4])
             + (", ..." if len(target.packages) > 4 else ""), ", ".join(target.wheels),
             target.arch, root)
    try:
        _fill_root(target, emulator, partial, apt_state=cache / "apt" /
                   target.debian_architecture, wheels=wheels)
        partial.rename(root)
        log.info("%s root folder: %s in %s", target.arch, megabytes(folder_size(root)), root)
    except (CommandError, ToolError) as error:
        raise EnvironmentFailure(f"cannot provision the {target.arch} root folder: "
                                 f"{error.what}", fix=error.fix or "check the connection to "
                                 "the Debian mirror and the package index") from None
    except OSError as error:
        raise EnvironmentFailure(f"cannot write the {target.arch} root folder {root}: "
                                 f"{error.strerror}", fix="check the disk and the cache "
                                 "folder (RELEASE_CACHE_DIR)") from None
    finally:
        for folder in (partial, wheels):
            shutil.rmtree(folder, ignore_errors=True)


def _fill_root(target: CrossTarget, emulator: str, root: Path, *, apt_state: Path,
               wheels: Path) -> None:
    """Unpacks the packages and wheels into ``root``, proves its interpreter imports ctypes
    and numpy under the emulator, and marks it complete."""
    root.mkdir(parents=True)
    for package in download_packages(target, apt_state):
        _cmd.run(["dpkg-deb", "-x", package, root], what=f"dpkg-deb -x {package.name}")
    relative_symlinks(root)
    _unpack_wheels(target, root / target.site, wheels)
    version = _cmd.run([emulator, "-L", root, root / target.python, "-c", _CHECK_IMPORTS],
                       what=f"the {target.arch} Python under {emulator}", stderr="separate",
                       fix="remove the root folder and retry")
    (root / COMPLETE_MARKER).write_text(json.dumps(
        {"packages": list(target.packages), "numpy": version.strip()}) + "\n")


def _apt_options(target: CrossTarget, state: Path) -> list[str]:
    """apt options for a private state folder: the machine's architecture only, its own
    package lists, no lock on or reading of the system's dpkg state."""
    options = {
        "APT::Architecture": target.debian_architecture,
        "APT::Architectures::": target.debian_architecture,
        "Dir::State::Lists": state / "lists", "Dir::Cache": state / "cache",
        "Dir::State::status": "/dev/null", "Debug::NoLocking": "1",
        # as root, apt downloads as the _apt user, who may not write into the cache
        "APT::Sandbox::User": "root" if os.geteuid() == 0 else "",
    }
    return [part for key, value in options.items() if value != ""
            for part in ("-o", f"{key}={value}")]


def download_packages(target: CrossTarget, state: Path) -> list[Path]:
    """The target's Debian packages (.deb files), downloaded with a private apt state."""
    apt = _cmd.find_tool("apt-get", fix="provision the root folder on Debian or Ubuntu")
    debs = state / "debs"
    shutil.rmtree(debs, ignore_errors=True)
    for folder in (state / "lists" / "partial", state / "cache" / "archives" / "partial", debs):
        folder.mkdir(parents=True, exist_ok=True)
    options = _apt_options(target, state)
    _cmd.run([apt, *options, "-q", "update"], what=f"apt-get update ({target.debian_architecture})")
    _cmd.run([apt, *options, "-q", "download", *target.packages], cwd=debs,
             what=f"apt-get download ({target.debian_architecture})",
             fix="apt's sources must be Debian 12 (bookworm), whose package names "
                 "platforms/linux/cross.toml lists")
    return sorted(debs.glob("*.deb"))


def relative_symlinks(root: Path) -> None:
    """Rewrites absolute symbolic links inside ``root`` relative to it: the emulator resolves
    them on this machine, where an absolute target names this machine's own files."""
    for link in [path for path in root.rglob("*") if path.is_symlink()]:
        target = os.readlink(link)
        if target.startswith("/"):
            link.unlink()
            link.symlink_to(os.path.relpath(root / target.lstrip("/"), link.parent))


def _unpack_wheels(target: CrossTarget, site: Path, wheels: Path) -> None:
    """Downloads the target's wheels into the fresh folder ``wheels`` and unpacks them."""
    _cmd.run([sys.executable, "-m", "pip", "download", "--quiet",
              "--disable-pip-version-check", "--only-binary=:all:", "--no-deps",
              "--platform", target.wheel_platform, "--python-version", target.python_version,
              "--implementation", "cp", "--dest", wheels, *target.wheels],
             what=f"pip download {' '.join(target.wheels)} ({target.wheel_platform})",
             fix="check the connection to the package index")
    site.mkdir(parents=True, exist_ok=True)
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
