"""A minimal ELF64 section-table reader: just enough to find the fatbinary section of a
library and the section names of a cubin. Bounds-checked; never loops without advancing."""

from __future__ import annotations

import mmap
import struct
from typing import BinaryIO

from release.errors import BinaryFormatError

_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_MAX_SECTIONS = 65535


def _fail(where: str, what: str) -> BinaryFormatError:
    return BinaryFormatError(f"{where}: {what}",
                             fix="the file is truncated or not a 64-bit little-endian ELF")


def _section_table(data: bytes, *, where: str) -> tuple[int, int, int]:
    """(table offset, entry count, index of the names section) from an ELF header."""
    if len(data) < _HEADER.size or data[:4] != b"\x7fELF":
        raise _fail(where, "not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise _fail(where, "only 64-bit little-endian ELF is supported")
    fields = _HEADER.unpack_from(data, 0)
    shoff, shentsize, shnum, shstrndx = fields[6], fields[11], fields[12], fields[13]
    if shnum and shentsize != _SECTION.size:
        raise _fail(where, f"section header size {shentsize} is not {_SECTION.size}")
    return shoff, shnum, shstrndx


def _names(table: bytes, strings: bytes) -> list[tuple[str, int, int]]:
    result = []
    for index in range(len(table) // _SECTION.size):
        name, _, _, _, offset, size, *_ = _SECTION.unpack_from(table, index * _SECTION.size)
        end = strings.find(b"\0", name)
        text = strings[name:end if end >= 0 else len(strings)].decode("latin-1")
        result.append((text, offset, size))
    return result


def read_sections(stream: BinaryIO, *, where: str) -> dict[str, tuple[int, int]]:
    """Section name -> (file offset, size) of an ELF file, reading only the tables."""
    stream.seek(0, 2)
    file_size = stream.tell()
    stream.seek(0)
    shoff, shnum, shstrndx = _section_table(stream.read(_HEADER.size), where=where)
    if shnum == 0:
        return {}
    if shoff + shnum * _SECTION.size > file_size or shstrndx >= shnum:
        raise _fail(where, "the section table lies outside the file")
    stream.seek(shoff)
    table = stream.read(shnum * _SECTION.size)
    _, _, _, _, str_offset, str_size, *_ = _SECTION.unpack_from(table, shstrndx * _SECTION.size)
    if str_offset + str_size > file_size:
        raise _fail(where, "the section names lie outside the file")
    stream.seek(str_offset)
    strings = stream.read(str_size)
    sections = {}
    for name, offset, size in _names(table, strings):
        if name and name not in sections:
            sections[name] = (offset, size)
    return sections


def section_names_in(data: bytes | mmap.mmap | memoryview, start: int,
                     size: int) -> list[str] | None:
    """Section names of an ELF image held in ``data[start:start + size]``; None when it is
    not a readable ELF (a payload, not a file of ours: callers treat it as unknown)."""
    image = bytes(data[start:start + min(size, _HEADER.size)])
    try:
        shoff, shnum, shstrndx = _section_table(image, where="cubin")
    except BinaryFormatError:
        return None
    if shnum == 0 or shnum > _MAX_SECTIONS or shstrndx >= shnum:
        return None
    if shoff + shnum * _SECTION.size > size:
        return None
    table = bytes(data[start + shoff:start + shoff + shnum * _SECTION.size])
    _, _, _, _, str_offset, str_size, *_ = _SECTION.unpack_from(table, shstrndx * _SECTION.size)
    if str_offset + str_size > size:
        return None
    strings = bytes(data[start + str_offset:start + str_offset + str_size])
    return [name for name, _, _ in _names(table, strings)]
