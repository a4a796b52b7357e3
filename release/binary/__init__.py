"""Readers for native binaries. ``read_binary`` picks the reader from the file's magic."""

from __future__ import annotations

import mmap
from collections.abc import Collection, Sequence
from pathlib import Path

from release.binary._view import Budget, Buffer, ReadLimits, using
from release.binary.elf import ElfReader
from release.binary.macho import MachOReader
from release.binary.model import (
    BinaryInfo,
    BinaryReader,
    Section,
    Symbol,
    VersionRequirement,
)
from release.binary.pe import PeReader
from release.errors import BinaryFormatError

__all__ = ["BinaryInfo", "BinaryReader", "Budget", "READERS", "ReadLimits", "Section", "Symbol",
           "VersionRequirement", "is_binary", "read_binary", "read_binary_data"]

READERS: tuple[BinaryReader, ...] = (ElfReader(), PeReader(), MachOReader())


def is_binary(head: bytes, readers: Sequence[BinaryReader] = READERS) -> bool:
    """True when the first bytes of a file belong to a format a reader understands."""
    return any(reader.matches(head) for reader in readers)


def read_binary_data(data: Buffer, *, where: str, sections: Collection[str] = (),
                     static_symbols: bool = False,
                     readers: Sequence[BinaryReader] = READERS,
                     budget: Budget | None = None) -> BinaryInfo:
    """Parses ``data``; ``sections`` names sections whose bytes the result should carry;
    ``static_symbols`` also reads the static symbol table (large in unstripped files).
    The readers spend from ``budget`` (verify passes one per wheel; None: a fresh one, the
    default ``ReadLimits``), and refuse with LimitExceeded past it."""
    head = bytes(data[:16])
    for reader in readers:
        if reader.matches(head):
            with using(budget):
                return reader.read(data, where=where, sections=sections,
                                   static_symbols=static_symbols)
    raise BinaryFormatError(f"{where}: not a binary format this tool reads",
                            fix="pass an ELF, PE or Mach-O file")


def read_binary(path: Path, *, sections: Collection[str] = (), static_symbols: bool = False,
                readers: Sequence[BinaryReader] = READERS,
                budget: Budget | None = None) -> BinaryInfo:
    """Parses the file at ``path`` through a read-only memory map."""
    try:
        with path.open("rb") as handle:
            if path.stat().st_size == 0:
                raise BinaryFormatError(f"{path}: empty file",
                                        fix="pass an ELF, PE or Mach-O file")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return read_binary_data(data, where=str(path), sections=sections,
                                        static_symbols=static_symbols, readers=readers,
                                        budget=budget)
    except OSError as error:
        raise BinaryFormatError(f"{path}: cannot read ({error.strerror})",
                                fix="check that the file exists and is readable") from None
