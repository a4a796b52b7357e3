"""A GPU variant (cu12, cu13): its claims, runtime wheel and pinned toolchain, as data.

Read from ``cuda/variants/<name>.toml`` into a frozen dataclass; unknown keys and wrong types
are ConfigurationErrors naming the key. Code generation (which SASS and PTX to build) is
derived from the claims here, never detected from the build machine."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from cuda.record import DeviceCodeRecord
from release._toml import read_toml
from release.distribution.buildrecord import RuntimeDependency
from release.errors import ConfigurationError
from release.toolchain import pins
from release.toolchain.pins import PythonPin

COMPILERS = ("nvcc", "nvrtc")
_CAPABILITY = re.compile(r"^(\d{1,2})\.(\d)$")


@dataclass(frozen=True, order=True)
class ComputeCapability:
    """A GPU compute capability such as 8.6 (major 8, minor 6)."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str, *, key: str = "compute capability") -> ComputeCapability:
        match = _CAPABILITY.match(text)
        if match is None:
            raise ConfigurationError(f"{key}: '{text}' is not a compute capability",
                                     fix="write it as MAJOR.MINOR, e.g. \"8.6\"")
        return cls(int(match.group(1)), int(match.group(2)))

    @classmethod
    def from_sm(cls, sm: int) -> ComputeCapability:
        """90 -> 9.0, 100 -> 10.0, 121 -> 12.1 (the number in sm_XY / compute_XY)."""
        return cls(sm // 10, sm % 10)

    @property
    def sm(self) -> int:
        return self.major * 10 + self.minor

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


@dataclass(frozen=True)
class CudaVariant:
    name: str
    major: int
    claims: tuple[ComputeCapability, ...]
    ptx: tuple[ComputeCapability, ...]
    runtime: RuntimeDependency
    compiler: str                       # "nvcc" or "nvrtc" (NVRTC + ptxas + nvFatbin)
    toolchain_pin: str       # its [python.<pin>] entry in release/toolchain/pinned-tools.toml
    source: Path | None = None

    @property
    def toolchain(self) -> PythonPin:
        """The pinned toolchain wheels (versions and sha256s)."""
        return pins.load().python_pin(self.toolchain_pin)

    @property
    def toolchain_requirements(self) -> tuple[str, ...]:
        return self.toolchain.packages

    @property
    def sass_architectures(self) -> tuple[int, ...]:
        """SM numbers to build SASS for: one per claimed compute capability."""
        return tuple(claim.sm for claim in self.claims)

    @property
    def ptx_architectures(self) -> tuple[int, ...]:
        return tuple(arch.sm for arch in self.ptx)

    def to_record(self) -> DeviceCodeRecord:
        """The build record's ``cuda`` section (docs/build-record.md)."""
        return DeviceCodeRecord(major=self.major, claims=tuple(map(str, self.claims)),
                                ptx=tuple(map(str, self.ptx)), runtime=self.runtime)


class _Table:
    """Typed access to one TOML table; remembers which keys were read to reject the rest."""

    def __init__(self, data: dict[str, Any], path: str) -> None:
        self.data = data
        self.path = path
        self.read: set[str] = set()

    def _get(self, key: str, kind: type, kind_name: str) -> Any:
        self.read.add(key)
        if key not in self.data:
            raise ConfigurationError(f"{self.path}.{key} is required",
                                     fix=f"add {key} ({kind_name})")
        value = self.data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ConfigurationError(
                f"{self.path}.{key} must be {kind_name}, got {type(value).__name__}",
                fix=f"write {key} as {kind_name}")
        return value

    def string(self, key: str) -> str:
        value: str = self._get(key, str, "a string")
        return value

    def integer(self, key: str) -> int:
        value: int = self._get(key, int, "an integer")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        values: list[Any] = self._get(key, list, "a list of strings")
        for index, value in enumerate(values):
            if not isinstance(value, str):
                raise ConfigurationError(f"{self.path}.{key}[{index}] must be a string",
                                         fix=f"quote the entries of {key}")
        return tuple(values)

    def table(self, key: str) -> _Table:
        value: dict[str, Any] = self._get(key, dict, "a table")
        return _Table(value, f"{self.path}.{key}")

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.read)
        if unknown:
            raise ConfigurationError(f"{self.path}.{unknown[0]} is not a known key",
                                     fix="remove it or check its spelling")


def _capabilities(table: _Table, key: str) -> tuple[ComputeCapability, ...]:
    values = tuple(ComputeCapability.parse(text, key=f"{table.path}.{key}")
                   for text in table.strings(key))
    if len(set(values)) != len(values):
        raise ConfigurationError(f"{table.path}.{key} lists a compute capability twice",
                                 fix="list each once")
    return tuple(sorted(values))


def _runtime(table: _Table) -> RuntimeDependency:
    runtime = RuntimeDependency(requirement=table.string("requirement"),
                                distribution=table.string("distribution"),
                                library=table.string("library"), dir=table.string("dir"),
                                pin=table.string("pin"))
    table.finish()
    if PurePosixPath(runtime.dir).is_absolute() or ".." in PurePosixPath(runtime.dir).parts:
        raise ConfigurationError(f"{table.path}.dir must be relative to site-packages",
                                 fix="write it like nvidia/cuda_runtime/lib")
    return runtime


def parse(data: dict[str, Any], *, source: str) -> CudaVariant:
    """Validates the contents of a variant file (already read from TOML)."""
    root = _Table(data, source)
    if root.integer("schema") != 1:
        raise ConfigurationError(f"{source}.schema: only schema 1 is understood",
                                 fix="update the release tools")
    name, major = root.string("name"), root.integer("major")
    if not 1 <= major <= 99:   # it names libraries (libcudart.so.12) and distributions
        raise ConfigurationError(f"{source}.major is {major}, not a CUDA major version",
                                 fix="write the CUDA major version, from 1 to 99 (e.g. 12)")
    claims, ptx = _capabilities(root, "claims"), _capabilities(root, "ptx")
    runtime = _runtime(root.table("runtime"))
    toolchain = root.table("toolchain")
    compiler, pin = toolchain.string("compiler"), toolchain.string("pin")
    toolchain.finish()
    root.finish()
    if compiler not in COMPILERS:
        raise ConfigurationError(f"{source}.toolchain.compiler: '{compiler}' is unknown",
                                 fix=f"use one of {', '.join(COMPILERS)}")
    if not claims:
        raise ConfigurationError(f"{source}.claims is empty", fix="claim at least one capability")
    for arch in ptx:
        if arch < claims[0]:
            raise ConfigurationError(f"{source}.ptx: compute_{arch.sm} is older than every claim",
                                     fix="ship PTX for a claimed capability or a newer one")
    return CudaVariant(name=name, major=major, claims=claims, ptx=ptx, runtime=runtime,
                       compiler=compiler, toolchain_pin=pin)


def load(path: Path) -> CudaVariant:
    """Reads and validates ``cuda/variants/<name>.toml``."""
    data = read_toml(Path(path), what="CUDA variant file", fix="correct the file's syntax",
                     unreadable_fix="check the variant's `cuda` path in [tool.release]")
    variant = parse(data, source=Path(path).name)
    return dataclasses.replace(variant, source=Path(path))


def variants_dir() -> Path:
    """The folder holding the shipped variant files."""
    return Path(__file__).resolve().parent / "variants"
