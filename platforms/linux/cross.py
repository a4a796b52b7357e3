"""Linux targets built on a machine of another architecture: the facts of cross.toml as frozen
values, and the CMake arguments and host checks of a cross build.

The compiler is Debian's cross gcc (docs/cross-building.md says why); the Python extension is
built against this interpreter's headers, since the stable ABI needs headers only and links
no libpython (the extension compiled for aarch64 with x86_64 CPython's headers is byte for
byte the one compiled with Debian's arm64 CPython headers)."""

from __future__ import annotations

import shutil
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from release._toml import read_toml
from release.errors import ConfigurationError, ToolError
from release.toolchain import pins
from release.toolchain.pins import DebianPin, PythonPin

_DATA = Path(__file__).with_name("cross.toml")
_KEYS = frozenset({
    "triplet", "compiler-package", "toolchain", "emulators", "emulator-package",
    "debian-architecture", "packages-pin", "python", "python-version", "site", "wheels-pin"})
_LISTS = frozenset({"emulators"})


@dataclass(frozen=True)
class CrossTarget:
    """How one target architecture is built, run and given a root folder on other hosts."""

    arch: str                        # the target's architecture ("aarch64")
    triplet: str                     # prefix of the cross compilers ("aarch64-linux-gnu")
    compiler_package: str            # the Debian package that provides them
    toolchain: Path                  # the CMake toolchain file
    emulators: tuple[str, ...]       # qemu-user program names, first found wins
    emulator_package: str
    debian_architecture: str         # "arm64"
    packages_pin: str                # [debian.<pin>]: packages unpacked into the root folder
    python: str                      # the interpreter, relative to the root folder
    python_version: str              # "3.11"
    site: str                        # folder on that interpreter's sys.path, in the root
    wheels_pin: str                  # [python.<pin>]: wheels installed into ``site``

    @property
    def compilers(self) -> tuple[str, str]:
        return f"{self.triplet}-gcc", f"{self.triplet}-g++"

    @property
    def packages(self) -> DebianPin:
        return pins.load().debian_pin(self.packages_pin)

    @property
    def wheels(self) -> PythonPin:
        return pins.load().python_pin(self.wheels_pin)


def _strings(source: str, arch: str, table: dict[str, Any], key: str) -> tuple[str, ...]:
    value = table[key]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{source}: targets.{arch}.{key} must be a list of strings",
                                 fix="fix the key it names")
    return tuple(value)


def _target(source: str, arch: str, table: dict[str, Any]) -> CrossTarget:
    unknown = sorted(set(table) - _KEYS)
    missing = sorted(_KEYS - set(table))
    if unknown or missing:
        raise ConfigurationError(f"{source}: targets.{arch}: unknown keys {unknown}, missing "
                                 f"keys {missing}", fix="fix the keys it names")
    text = {key: value for key, value in table.items() if isinstance(value, str)}
    wrong = sorted(key for key in _KEYS - _LISTS if key not in text)
    if wrong:
        raise ConfigurationError(f"{source}: targets.{arch}.{wrong[0]} must be a string",
                                 fix="fix the key it names")
    return CrossTarget(
        arch=arch, triplet=text["triplet"], compiler_package=text["compiler-package"],
        toolchain=_DATA.with_name(text["toolchain"]),
        emulators=_strings(source, arch, table, "emulators"),
        emulator_package=text["emulator-package"],
        debian_architecture=text["debian-architecture"],
        packages_pin=text["packages-pin"], python=text["python"],
        python_version=text["python-version"], site=text["site"],
        wheels_pin=text["wheels-pin"])


@cache
def cross_targets(path: Path = _DATA) -> dict[str, CrossTarget]:
    """Architecture -> how it is cross-built; read once."""
    data = read_toml(path, fix="restore platforms/linux/cross.toml")
    if data.get("schema") != 1 or not isinstance(data.get("targets"), dict):
        raise ConfigurationError(f"{path}: expected schema = 1 and a [targets] table",
                                 fix="restore platforms/linux/cross.toml")
    return {arch: _target(str(path), arch, table) for arch, table in data["targets"].items()}


def cross_target(arch: str, host_arch: str) -> CrossTarget:
    """How ``arch`` is built on a ``host_arch`` machine; a ToolError when it cannot be."""
    found = cross_targets().get(arch)
    if found is None:
        raise ToolError(f"cross-building linux-{arch} on a {host_arch} host is not supported",
                        fix=f"build on a {arch} machine or pass --arch {host_arch}")
    return found


def check_compilers(target: CrossTarget) -> None:
    """Raises ToolError naming the package when the cross compilers are not on PATH."""
    for compiler in target.compilers:
        if shutil.which(compiler) is None:
            raise ToolError(f"the {target.arch} cross compiler '{compiler}' was not found on "
                            "PATH", fix=f"apt-get install {target.compiler_package}")


def has_compilers(target: CrossTarget) -> bool:
    return all(shutil.which(compiler) is not None for compiler in target.compilers)


def toolchain_arguments(target: CrossTarget) -> list[str]:
    """What configures any CMake project for ``target`` (an SDK consumer, a probe)."""
    return [f"-DCMAKE_TOOLCHAIN_FILE={target.toolchain}"]


def cmake_arguments(target: CrossTarget) -> list[str]:
    """Configures native/ for ``target``: the toolchain, and this interpreter's headers for
    the stable-ABI extension (FindPython asks no interpreter for them when cross-compiling)."""
    return [*toolchain_arguments(target),
            f"-DPython_INCLUDE_DIR={sysconfig.get_paths()['include']}"]
