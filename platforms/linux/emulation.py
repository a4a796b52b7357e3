"""Running another machine's Linux binaries on this one: qemu-user, in a root folder of that
machine's Debian packages (its C library, C++ runtime and a real CPython) plus the wheels
edgert needs at run time (numpy), unpacked into the tool cache, never installed.

The packages come from the Debian mirrors apt is configured with, through a private apt
state folder in the cache (``apt-get download NAME=VERSION`` with that machine's
architecture): nothing is added to the system's dpkg architectures or package lists. Every
.deb and wheel is pinned by version and sha256 in release/toolchain/pinned-tools.toml, and another
file is refused. The root folder is provisioned once per cross.toml entry and pins (its folder name
carries a hash of both), is complete only when its interpreter has imported ctypes and numpy under
the emulator, and is sealed with a manifest of its files' hashes that each use checks
(release/toolchain/toolcache.py; the byte code the interpreter writes is tolerated)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

from platforms.linux.cross import CrossTarget, has_compilers, toolchain_arguments
from release.errors import CommandError, EnvironmentFailure, ToolError
from release.host import Runner
from release.toolchain import commands, toolcache, tools
from release.toolchain.pins import DebianPackage

log = logging.getLogger("release")

_CHECK_IMPORTS = "import ctypes, numpy; print(numpy.__version__)"
_ROOT_CONTENT = ("arch", "debian_architecture", "python", "python_version", "site")


def find_emulator(target: CrossTarget) -> str | None:
    """The first of the target's qemu-user programs on PATH."""
    return next((found for name in target.emulators if (found := shutil.which(name))), None)


def root_folder(target: CrossTarget, cache: Path) -> Path:
    """Where the target's root folder lives in the tool cache: named after what goes into
    it, so another entry gets another folder and every checkout shares one."""
    content: dict[str, object] = {key: getattr(target, key) for key in _ROOT_CONTENT}
    content.update(packages=target.packages.digest, wheels=target.wheels.digest)
    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:12]
    return cache / "sysroots" / f"linux-{target.arch}-python{target.python_version}-{digest}"


def runner(target: CrossTarget, emulator: str, root: Path) -> Runner:
    """Programs for ``target`` run by ``emulator`` in ``root``; built with the cross
    toolchain when its compilers are installed (else the runner cannot build)."""
    return Runner(machine=target.arch, prefix=(emulator, "-L", str(root)),
                  python=str(root / target.python),
                  cmake_arguments=tuple(toolchain_arguments(target))
                  if has_compilers(target) else None)


def byte_code(name: str) -> bool:
    """What the root's interpreter writes beside the sources it imports."""
    return "/__pycache__/" in f"/{name}" and name.endswith(".pyc")


def existing_runner(target: CrossTarget, cache: Path) -> Runner | None:
    """A runner when the emulator is on PATH and the root folder is complete and intact; no
    download (a damaged root is named in a warning)."""
    emulator = find_emulator(target)
    root = root_folder(target, cache)
    if emulator is None or not root.is_dir():
        return None
    found = toolcache.damage(root, tolerated=byte_code)
    if found is not None:
        log.warning("the %s root folder is not used: %s", target.arch, found.describe(root))
        return None
    return runner(target, emulator, root)


def provision_runner(target: CrossTarget, cache: Path) -> Runner | None:
    """A runner for ``target``, provisioning its root folder into ``cache`` (once, and again
    when it is damaged); None when no emulator is installed. Download failures are
    EnvironmentFailures, a file another than its pin a ToolError."""
    emulator = find_emulator(target)
    if emulator is None:
        log.info("no %s on PATH: %s binaries are checked without running them (fix: "
                 "apt-get install %s)", target.emulators[0], target.arch,
                 target.emulator_package)
        return None
    root = root_folder(target, cache)
    try:
        toolcache.provision(
            root, lambda partial: _fill_root(target, emulator, partial, cache=cache),
            what=f"the {target.arch} root folder", tolerated=byte_code,
            describes={"packages": target.packages_pin, "wheels": target.wheels_pin})
    except CommandError as error:
        raise EnvironmentFailure(f"cannot provision the {target.arch} root folder: "
                                 f"{error.what}", fix=error.fix or "check the connection to "
                                 "the Debian mirror and the package index") from None
    return runner(target, emulator, root)


def _fill_root(target: CrossTarget, emulator: str, root: Path, *, cache: Path) -> None:
    """Unpacks the pinned packages and wheels into ``root`` and proves its interpreter
    imports ctypes and numpy under the emulator."""
    packages = [package.name for package in target.packages.packages]
    log.info("downloading %s Debian packages (%s) and wheels (%s) for the %s root folder %s "
             "(once per cache)", len(packages), ", ".join(packages[:4])
             + (", ..." if len(packages) > 4 else ""), ", ".join(target.wheels.packages),
             target.arch, root)
    for package in download_packages(target, cache / "apt" / target.debian_architecture):
        commands.run(["dpkg-deb", "-x", package, root], what=f"dpkg-deb -x {package.name}")
    relative_symlinks(root)
    tools.install_pinned(target.wheels, root / target.site)
    commands.run([emulator, "-L", root, root / target.python, "-c", _CHECK_IMPORTS],
                 what=f"the {target.arch} Python under {emulator}", stderr="separate",
                 fix="remove the root folder and retry")


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


def download_latest(target: CrossTarget, state: Path, wanted: list[str]) -> list[Path]:
    """Downloads ``wanted`` (``NAME`` or ``NAME=VERSION``) with a private apt state into a
    fresh folder of ``state``; returns the .deb files."""
    apt = commands.find_tool("apt-get", fix="provision the root folder on Debian or Ubuntu")
    debs = state / "debs"
    shutil.rmtree(debs, ignore_errors=True)
    for folder in (state / "lists" / "partial", state / "cache" / "archives" / "partial", debs):
        folder.mkdir(parents=True, exist_ok=True)
    options = _apt_options(target, state)
    commands.run([apt, *options, "-q", "update"],
                 what=f"apt-get update ({target.debian_architecture})")
    commands.run([apt, *options, "-q", "download", *wanted], cwd=debs,
                 what=f"apt-get download ({target.debian_architecture})",
                 fix="apt's sources must be Debian 12 (bookworm); a pinned version the mirror no "
                 "longer has needs a new pin: python .ci/pin_hashes.py --debian "
                 f"{target.debian_architecture} (release/toolchain/pinned-tools.toml)")
    return sorted(debs.glob("*.deb"))


def download_packages(target: CrossTarget, state: Path) -> list[Path]:
    """The target's pinned Debian packages (.deb files), downloaded with a private apt state
    and each checked against its pinned sha256."""
    pinned = target.packages.packages
    found = download_latest(target, state, [f"{package.name}={package.version}"
                                            for package in pinned])
    for package in pinned:
        check_package(package, found)
    return found


def check_package(package: DebianPackage, found: list[Path]) -> None:
    """Raises ToolError unless one downloaded .deb is ``package`` with its pinned sha256."""
    prefix = f"{package.name}_"
    matches = [path for path in found if path.name.startswith(prefix)]
    if len(matches) != 1:
        raise ToolError(f"apt-get download gave {len(matches)} files for {package.name}",
                        fix="check apt's sources (Debian 12)")
    actual = toolcache.file_sha256(matches[0])
    if actual != package.sha256:
        raise ToolError(f"{matches[0].name} has sha256 {actual}, the pin of {package.name}="
                        f"{package.version} says {package.sha256}",
                        fix="the mirror served another file than the pin: check apt's "
                            "sources, or review and update release/toolchain/pinned-tools.toml")


def relative_symlinks(root: Path) -> None:
    """Rewrites absolute symbolic links inside ``root`` relative to it: the emulator resolves
    them on this machine, where an absolute target names this machine's own files."""
    for link in [path for path in root.rglob("*") if path.is_symlink()]:
        target = os.readlink(link)
        if target.startswith("/"):
            link.unlink()
            link.symlink_to(os.path.relpath(root / target.lstrip("/"), link.parent))


