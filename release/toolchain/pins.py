"""The pinned tools: every tool the pipeline fetches, by version and sha256, from one data file
(``release/toolchain/pinned-tools.toml``) read into frozen values.

Three kinds of entry: wheels from the package index (``PythonPin``: installed with pip in
hash-checking mode, so any other file is refused), Debian packages unpacked into an emulator
root (``DebianPin``: each .deb's sha256 compared after download) and programs the pipeline
compiles for itself with a pinned compiler (``BuiltPin``: the result's sha256s compared).
Every problem with the file is a ConfigurationError naming the key."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from release._toml import read_toml
from release.errors import ConfigurationError

DATA = Path(__file__).with_name("pinned-tools.toml")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_EXACT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][A-Za-z0-9.+!_-]*)$")
_FIX = "correct release/toolchain/pinned-tools.toml (its header says how each entry is written)"


@dataclass(frozen=True)
class PinnedFile:
    file: str       # a wheel's file name, a Debian package name, or a built program's name
    sha256: str


@dataclass(frozen=True)
class PythonPin:
    """Wheels from the package index, installed together into one folder of the tool cache."""

    name: str
    purpose: str
    packages: tuple[str, ...]           # exact pins: "cmake==3.24.3"
    files: tuple[PinnedFile, ...]       # every acceptable wheel of those packages
    executable: str = ""                # relative to the install folder ("" : a site folder)
    platform: str = ""                  # install for this platform tag instead of this machine's
    python_version: str = ""            # with ``platform``: the Python the wheels are for

    def requirements_text(self) -> str:
        """A pip requirements file in hash-checking mode: each package with every hash."""
        lines = []
        for package in self.packages:
            hashes = [f"--hash=sha256:{pinned.sha256}" for pinned in self.files
                      if _wheel_of(pinned.file, package)]
            lines.append(" ".join([package, *hashes]))
        return "\n".join(lines) + "\n"

    @property
    def versions(self) -> dict[str, str]:
        """Package name -> pinned version."""
        return {name: version for name, _, version in
                (package.partition("==") for package in self.packages)}

    @property
    def digest(self) -> str:
        """Names the entry's cache folder: another pin, another folder."""
        return _digest(asdict(self))


@dataclass(frozen=True)
class DebianPackage:
    name: str
    version: str
    sha256: str


@dataclass(frozen=True)
class DebianPin:
    name: str
    purpose: str
    architecture: str
    packages: tuple[DebianPackage, ...]

    @property
    def digest(self) -> str:
        return _digest(asdict(self))


@dataclass(frozen=True)
class BuiltPin:
    name: str
    purpose: str
    compiler: str                       # the PythonPin that compiles it
    sources: tuple[str, ...]            # relative to the project root
    files: tuple[PinnedFile, ...]       # what the build must produce, byte for byte

    def sha256_of(self, file: str) -> str:
        return next(pinned.sha256 for pinned in self.files if pinned.file == file)


@dataclass(frozen=True)
class Pins:
    python: dict[str, PythonPin]
    debian: dict[str, DebianPin]
    built: dict[str, BuiltPin]

    def python_pin(self, name: str) -> PythonPin:
        _require(self.python, "python", name)
        return self.python[name]

    def debian_pin(self, name: str) -> DebianPin:
        _require(self.debian, "debian", name)
        return self.debian[name]

    def built_pin(self, name: str) -> BuiltPin:
        _require(self.built, "built", name)
        return self.built[name]


def _require(table: Mapping[str, object], kind: str, name: str) -> None:
    if name not in table:
        raise ConfigurationError(f"release/toolchain/pinned-tools.toml has no "
                                 f"[{kind}.{name}] entry",
                                 fix=f"add it, or name one of: {', '.join(sorted(table))}")


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _wheel_of(file: str, package: str) -> bool:
    """Whether wheel file name ``file`` is a wheel of the pinned ``package`` (name==version)."""
    name, version = package.split("==", 1)
    parts = file.split("-")
    return (file.endswith(".whl") and len(parts) >= 5 and
        _normalized(parts[0]) == _normalized(name) and parts[1] == version)


class _Entry:
    """One table of the file: typed reads, and unknown keys refused."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, dict):
            raise ConfigurationError(f"{where} must be a table", fix=_FIX)
        self.data: dict[str, Any] = data
        self.where = where
        self.read: set[str] = set()

    def text(self, key: str, *, default: str | None = None) -> str:
        self.read.add(key)
        value = self.data.get(key, default)
        if not isinstance(value, str) or not value and default is None:
            raise ConfigurationError(f"{self.where}.{key} must be a non-empty string", fix=_FIX)
        return value

    def items(self, key: str) -> list[Any]:
        self.read.add(key)
        value = self.data.get(key)
        if not isinstance(value, list) or not value:
            raise ConfigurationError(f"{self.where}.{key} must be a non-empty list", fix=_FIX)
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        values = self.items(key)
        if not all(isinstance(value, str) and value for value in values):
            raise ConfigurationError(f"{self.where}.{key} must list strings", fix=_FIX)
        return tuple(values)

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.read)
        if unknown:
            raise ConfigurationError(f"{self.where}.{unknown[0]} is not a known key",
                                     fix="remove it or check its spelling")


def _sha256(value: object, where: str) -> str:
    if not isinstance(value, str) or not _SHA256.match(value):
        raise ConfigurationError(f"{where}.sha256 must be 64 lowercase hex digits", fix=_FIX)
    return value


def _files(entry: _Entry, key: str = "files") -> tuple[PinnedFile, ...]:
    files = []
    for index, item in enumerate(entry.items(key)):
        row = _Entry(item, f"{entry.where}.{key}[{index}]")
        files.append(PinnedFile(row.text("file"), _sha256(row.data.get("sha256"), row.where)))
        row.read.add("sha256")
        row.finish()
    names = [pinned.file for pinned in files]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"{entry.where}.{key} lists a file twice", fix=_FIX)
    return tuple(files)


def _python(name: str, data: object) -> PythonPin:
    entry = _Entry(data, f"python.{name}")
    packages = entry.strings("packages")
    for package in packages:
        if not _EXACT.match(package):
            raise ConfigurationError(f"{entry.where}.packages: '{package}' is not an exact pin",
                                     fix="write NAME==VERSION")
    pin = PythonPin(name=name, purpose=entry.text("purpose"), packages=packages,
                    files=_files(entry), executable=entry.text("executable", default=""),
                    platform=entry.text("platform", default=""),
                    python_version=entry.text("python-version", default=""))
    entry.finish()
    for package in packages:
        if not any(_wheel_of(pinned.file, package) for pinned in pin.files):
            raise ConfigurationError(f"{entry.where}: no file is a wheel of {package}",
                                     fix="add its rows: python .ci/pin_hashes.py " + package)
    strays = [pinned.file for pinned in pin.files
              if not any(_wheel_of(pinned.file, package) for package in packages)]
    if strays:
        raise ConfigurationError(f"{entry.where}: {strays[0]} is a wheel of no pinned package",
                                 fix="remove the row, or pin its package")
    return pin


def _debian(name: str, data: object) -> DebianPin:
    entry = _Entry(data, f"debian.{name}")
    packages = []
    for index, item in enumerate(entry.items("packages")):
        row = _Entry(item, f"{entry.where}.packages[{index}]")
        packages.append(DebianPackage(row.text("name"), row.text("version"),
                                      _sha256(row.data.get("sha256"), row.where)))
        row.read.add("sha256")
        row.finish()
    pin = DebianPin(name=name, purpose=entry.text("purpose"),
                    architecture=entry.text("architecture"), packages=tuple(packages))
    entry.finish()
    return pin


def _built(name: str, data: object) -> BuiltPin:
    entry = _Entry(data, f"built.{name}")
    pin = BuiltPin(name=name, purpose=entry.text("purpose"), compiler=entry.text("compiler"),
                   sources=entry.strings("sources"), files=_files(entry))
    entry.finish()
    return pin


def parse(data: dict[str, Any], *, where: str = "release/toolchain/pinned-tools.toml") -> Pins:
    """Validates the file's contents (already read from TOML)."""
    if data.get("schema") != 1:
        raise ConfigurationError(f"{where}: expected schema = 1", fix=_FIX)
    unknown = sorted(set(data) - {"schema", "python", "debian", "built"})
    if unknown:
        raise ConfigurationError(f"{where}: '{unknown[0]}' is not a kind of entry",
                                 fix="use [python.NAME], [debian.NAME] or [built.NAME]")

    def tables(kind: str) -> dict[str, Any]:
        value = data.get(kind, {})
        if not isinstance(value, dict):
            raise ConfigurationError(f"{where}: {kind} must hold tables", fix=_FIX)
        return value

    pins = Pins(python={name: _python(name, value) for name, value in tables("python").items()},
                debian={name: _debian(name, value) for name, value in tables("debian").items()},
                built={name: _built(name, value) for name, value in tables("built").items()})
    for built in pins.built.values():
        pins.python_pin(built.compiler)
    return pins


@cache
def load(path: Path = DATA) -> Pins:
    """The pinned tools; read and validated once per process, on first use."""
    data = read_toml(path, fix=_FIX, unreadable_fix="restore release/toolchain/pinned-tools.toml")
    return parse(data, where=str(path))
