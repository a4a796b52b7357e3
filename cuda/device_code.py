"""The device code of a wheel's binaries, read once per verify run: the one place in the CUDA
provider that reads fatbinaries (cuda/fatbin.py), shared by the ``coverage`` check
(cuda/coverage.py) and the ``variant-properties`` check (cuda/variant_properties.py) through the
run's analyses (``context.analysis(of_wheel)``, release/verify/analyses.py).

A binary is read from the wheel model (its fatbinary section, from the extracted file or
from the zip alike, so this also runs under --static) or, for callers outside verify
(``coverage.check_wheel``), from a file on disk. A fatbinary that cannot be read is kept
with what was wrong, for the coverage check to report; it never stops the others."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cuda.fatbin import SECTIONS, DeviceCode, EntryKind, read_containers, read_device_code
from release.errors import BinaryFormatError
from release.verify.context import VerifyContext
from release.verify.wheel_model import BinaryFile, WheelModel

# one fatbinary section read whole, within verify's memory bound: far above the device code
# of the wheels whose build record claims compute capabilities (under 1 MB here); a larger
# one is refused in one line (LimitExceeded)
FATBIN_LIMIT = 192 << 20


@dataclass(frozen=True)
class Unreadable:
    """A binary whose fatbinary could not be read: the error's what and fix."""

    file: str
    what: str
    fix: str


@dataclass(frozen=True)
class WheelDeviceCode:
    """The device code of every binary read (one ``DeviceCode`` each, empty for a binary
    without a fatbinary section) and the binaries whose fatbinary was unreadable."""

    codes: tuple[DeviceCode, ...]
    unreadable: tuple[Unreadable, ...]

    def sm_numbers(self, kind: EntryKind) -> set[str]:
        """The SM numbers of the shipped entries of ``kind`` ("90" for sm_90 and
        compute_90)."""
        return {str(entry.sm) for code in self.codes for entry in code.entries
                if entry.kind is kind}


def _read(name: str, source: BinaryFile | Path) -> DeviceCode:
    """The device code of one binary, named ``name`` in findings: a wheel model's binary
    (its first fatbinary section, read within FATBIN_LIMIT) or an ELF file on disk."""
    if isinstance(source, Path):
        return read_device_code(source, name=name)
    for section in SECTIONS:
        if source.info.section(section) is not None:
            data = source.read_section(section, limit=FATBIN_LIMIT)
            containers = read_containers(data, where=f"{name} section {section}")
            return DeviceCode(file=name, section=section, containers=containers)
    return DeviceCode(file=name, section="", containers=())


def read_all(binaries: Iterable[tuple[str, BinaryFile | Path]]) -> WheelDeviceCode:
    """The device code of each (name, binary); never raises on a malformed fatbinary."""
    codes, unreadable = [], []
    for name, source in binaries:
        try:
            codes.append(_read(name, source))
        except BinaryFormatError as error:
            unreadable.append(Unreadable(file=name, what=error.what, fix=error.fix))
    return WheelDeviceCode(codes=tuple(codes), unreadable=tuple(unreadable))


def of_wheel(wheel: WheelModel, context: VerifyContext) -> WheelDeviceCode:
    """The analysis both CUDA checks ask for: ``context.analysis(of_wheel)``."""
    return read_all((binary.path, binary) for binary in wheel.binaries)
