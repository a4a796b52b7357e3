"""Reads NVIDIA fatbinaries from their headers only (no decompression).

A fatbinary lives in an ELF section (``.nv_fatbin``; ``__nv_relfatbin`` in relocatable
device code) as one or more 8-byte aligned containers. Each container holds entries: PTX,
cubins (SASS for one SM) and LTO-IR, each with its architecture, flags and sizes. Layout
(little-endian), as documented by LLVM, ZLUDA and jiegec/fatbinary:

    container: u32 magic 0xBA55ED50 | u16 version | u16 header size | u64 entries size
    entry:     u16 kind @0 | u32 header size @4 | u64 payload size @8
               | u32 compressed size @0x10 | u16 minor, u16 major @0x18 | u32 SM @0x1c
               | u64 flags @0x28 | u64 uncompressed size @0x38 (headers >= 64 bytes)

Malformed input raises BinaryFormatError saying what and where; every loop advances, so a
hostile file cannot make the reader spin."""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

from release._compat import StrEnum
from release.binary import elf
from release.errors import BinaryFormatError, LimitExceeded

CONTAINER_MAGIC = 0xBA55ED50
CONTAINER_HEADER = struct.Struct("<IHHQ")
ENTRY_HEADER = struct.Struct("<HHIQIIHHIIIQ")  # up to and including the flags (0x30 bytes)
MIN_ENTRY_HEADER = ENTRY_HEADER.size
SECTIONS = (".nv_fatbin", "__nv_relfatbin")

FLAG_64BIT = 0x1
FLAG_DEBUG = 0x2
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000    # sm_90a: runs on exactly that capability
FLAG_FAMILY_SPECIFIC = 0x200000  # sm_100f: runs on the family (same major, minor >= Y)


class EntryKind(StrEnum):
    PTX = "ptx"
    CUBIN = "cubin"
    LTO_IR = "lto-ir"
    UNKNOWN = "unknown"


_KINDS = {1: EntryKind.PTX, 2: EntryKind.CUBIN, 8: EntryKind.LTO_IR}


@dataclass(frozen=True)
class FatbinEntry:
    kind: EntryKind
    kind_code: int
    sm: int                       # 90, 100, 120...
    version: tuple[int, int]      # PTX ISA for PTX, cubin ABI for cubins
    flags: int
    offset: int                   # of the entry header, from the start of the section
    header_size: int
    payload_size: int
    uncompressed_size: int | None
    has_kernels: bool | None      # from an uncompressed cubin's sections; None: not knowable

    @property
    def compression(self) -> str | None:
        if self.flags & FLAG_ZSTD:
            return "zstd"
        if self.flags & FLAG_LZ4:
            return "lz4"
        return None

    @property
    def arch_specific(self) -> bool:
        return bool(self.flags & FLAG_ARCH_SPECIFIC)

    @property
    def family_specific(self) -> bool:
        return bool(self.flags & FLAG_FAMILY_SPECIFIC)

    @property
    def suffix(self) -> str:
        return "a" if self.arch_specific else "f" if self.family_specific else ""

    @property
    def name(self) -> str:
        """``sm_90a``, ``sm_100f``, ``compute_120`` or ``lto_90``."""
        prefix = {EntryKind.PTX: "compute", EntryKind.LTO_IR: "lto"}.get(self.kind, "sm")
        return f"{prefix}_{self.sm}{self.suffix}"


@dataclass(frozen=True)
class FatbinContainer:
    offset: int                   # from the start of the section
    version: int
    header_size: int
    size: int                     # bytes of entries after the header
    entries: tuple[FatbinEntry, ...]

    @property
    def has_kernels(self) -> bool:
        """False only for a container proven kernel-less (nvcc's "dlink" container: cubins
        without any .text section and no PTX). Compressed cubins count as having kernels."""
        if any(entry.kind is not EntryKind.CUBIN for entry in self.entries):
            return True
        return any(entry.has_kernels is not False for entry in self.entries)


@dataclass(frozen=True)
class DeviceCode:
    """The device code of one file: the containers of its fatbinary section."""

    file: str
    section: str                  # "" when the file carries no fatbinary
    containers: tuple[FatbinContainer, ...]

    @property
    def entries(self) -> tuple[FatbinEntry, ...]:
        return tuple(entry for container in self.containers for entry in container.entries)


def _fail(where: str, offset: int, what: str) -> BinaryFormatError:
    return BinaryFormatError(f"{where}: fatbinary {what} at offset {offset:#x}",
                             fix="rebuild the library; the file is truncated or not a fatbinary")


def _cubin_has_kernels(data: bytes | mmap.mmap | memoryview,
                       start: int, size: int) -> bool | None:
    """Whether an uncompressed cubin (an ELF) has a ``.text.<kernel>`` section; None when
    the payload is no readable ELF (not knowable). Read in place through the project's ELF
    reader: only the cubin's section table and names are copied, and only the names that
    start with ``.text.`` are decoded."""
    with memoryview(data) as whole, whole[start:start + size] as image:
        try:
            sections = elf.read_sections(image, where="cubin")
        except LimitExceeded:
            raise
        except BinaryFormatError:
            return None
    return next(sections.starting_with(".text."), None) is not None


def _read_entry(data: bytes | mmap.mmap | memoryview, offset: int, end: int, *, base: int,
                where: str) -> FatbinEntry:
    if end - offset < MIN_ENTRY_HEADER:
        raise _fail(where, offset - base, "entry header is truncated")
    (kind_code, _, header_size, payload_size, _, _, minor, major, sm, _, _,
     flags) = ENTRY_HEADER.unpack_from(data, offset)
    if header_size < MIN_ENTRY_HEADER or header_size > end - offset:
        raise _fail(where, offset - base, f"entry header size {header_size} is invalid")
    if payload_size > end - offset - header_size:
        raise _fail(where, offset - base,
                    f"entry payload size {payload_size} runs past its container")
    uncompressed = None
    if header_size >= 0x40:
        (uncompressed,) = struct.unpack_from("<Q", data, offset + 0x38)
    kind = _KINDS.get(kind_code, EntryKind.UNKNOWN)
    compressed = bool(flags & (FLAG_LZ4 | FLAG_ZSTD))
    has_kernels = None
    if kind is EntryKind.CUBIN and not compressed:
        has_kernels = _cubin_has_kernels(data, offset + header_size, payload_size)
    return FatbinEntry(kind=kind, kind_code=kind_code, sm=sm, version=(major, minor),
                       flags=flags, offset=offset - base, header_size=header_size,
                       payload_size=payload_size, uncompressed_size=uncompressed,
                       has_kernels=has_kernels)


def _read_container(data: bytes | mmap.mmap | memoryview, offset: int, end: int, *,
                    base: int, where: str) -> FatbinContainer:
    if end - offset < CONTAINER_HEADER.size:
        raise _fail(where, offset - base, "container header is truncated")
    magic, version, header_size, size = CONTAINER_HEADER.unpack_from(data, offset)
    if magic != CONTAINER_MAGIC:
        raise _fail(where, offset - base,
                    f"bad magic {magic:#010x} (expected {CONTAINER_MAGIC:#x})")
    if header_size < CONTAINER_HEADER.size or size > end - offset - header_size:
        raise _fail(where, offset - base,
                    f"container (header {header_size} bytes, entries {size} bytes) runs past "
                    f"the end of the section")
    entries = []
    position, entries_end = offset + header_size, offset + header_size + size
    while position < entries_end:
        entry = _read_entry(data, position, entries_end, base=base, where=where)
        entries.append(entry)
        position += entry.header_size + entry.payload_size
    return FatbinContainer(offset=offset - base, version=version, header_size=header_size,
                           size=size, entries=tuple(entries))


def read_containers(data: bytes | mmap.mmap | memoryview, *, start: int = 0,
                    size: int | None = None, where: str = "<bytes>"
                    ) -> tuple[FatbinContainer, ...]:
    """Every container in ``data[start:start + size]`` (a fatbinary section's contents).

    Zero bytes between containers (alignment padding) are skipped 8 at a time."""
    end = len(data) if size is None else start + size
    if end > len(data):
        raise _fail(where, 0, f"section of {size} bytes is larger than the file")
    containers = []
    position = start
    while position < end:
        chunk = min(8, end - position)
        if bytes(data[position:position + chunk]) == bytes(chunk):
            position += 8
            continue
        container = _read_container(data, position, end, base=start, where=where)
        containers.append(container)
        position += (container.header_size + container.size + 7) & ~7
    return tuple(containers)


def read_device_code(path: Path | str, *, name: str | None = None) -> DeviceCode:
    """The fatbinary containers of an ELF file (empty when it has no fatbinary section).

    ``name`` is how findings refer to the file (e.g. its path inside a wheel)."""
    path = Path(path)
    label = name if name is not None else str(path)
    with path.open("rb") as stream:
        if path.stat().st_size == 0:   # no memory map of an empty file
            return _device_code(b"", where=str(path), label=label)
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return _device_code(view, where=str(path), label=label)


def _device_code(data: bytes | mmap.mmap, *, where: str, label: str) -> DeviceCode:
    """The containers of the first fatbinary section of the ELF file in ``data``, read in
    place (the section table is the ELF reader's; the section's bytes are never copied)."""
    sections = elf.read_sections(data, where=where)
    found = next((section for section in (elf.section_named(sections, candidate)
                                          for candidate in SECTIONS) if section), None)
    if found is None:
        return DeviceCode(file=label, section="", containers=())
    if found.size == 0:
        return DeviceCode(file=label, section=found.name, containers=())
    containers = read_containers(data, start=found.offset, size=found.size,
                                 where=f"{label} section {found.name}")
    return DeviceCode(file=label, section=found.name, containers=containers)
