"""Bounds-checked reads from a file's bytes: every offset is checked against the file size
before it is used, so a malformed file fails with BinaryFormatError, never IndexError."""

from __future__ import annotations

import mmap
import struct
from functools import lru_cache
from typing import Union

from release.errors import BinaryFormatError

Buffer = Union[bytes, mmap.mmap]  # a runtime alias: no '|' between types before 3.10

_FIX = "the file is truncated or corrupt; rebuild it or re-download the wheel"


@lru_cache(maxsize=64)
def _struct(layout: str) -> struct.Struct:
    return struct.Struct(layout)


class ByteView:
    """A read-only view of ``data`` that names ``where`` in every error."""

    def __init__(self, data: Buffer, *, where: str, byte_order: str = "<") -> None:
        self.data = data
        self.size = len(data)
        self.where = where
        self.byte_order = byte_order

    def fail(self, what: str) -> BinaryFormatError:
        return BinaryFormatError(f"{self.where}: {what}", fix=_FIX)

    def check(self, offset: int, length: int, what: str) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise self.fail(f"{what} at offset {offset} (+{length} bytes) lies outside the "
                            f"{self.size}-byte file")

    def unpack(self, layout: str, offset: int, what: str) -> tuple[int, ...]:
        packer = _struct(self.byte_order + layout)
        self.check(offset, packer.size, what)
        values: tuple[int, ...] = packer.unpack_from(self.data, offset)
        return values

    def table(self, layout: str, offset: int, count: int, entry_size: int,
              what: str) -> list[tuple[int, ...]]:
        """``count`` records of ``layout`` spaced ``entry_size`` apart."""
        packer = _struct(self.byte_order + layout)
        if count and entry_size < packer.size:
            raise self.fail(f"{what}: entry size {entry_size} is smaller than {packer.size}")
        self.check(offset, count * entry_size, what)
        if entry_size == packer.size:
            chunk = self.data[offset:offset + count * entry_size]
            return list(packer.iter_unpack(chunk))
        return [packer.unpack_from(self.data, offset + index * entry_size)
                for index in range(count)]

    def read(self, offset: int, length: int, what: str) -> bytes:
        self.check(offset, length, what)
        return bytes(self.data[offset:offset + length])


def string_at(table: bytes, index: int, *, view: ByteView, what: str) -> str:
    """The NUL-terminated string at ``index`` of a string table."""
    if index < 0 or index >= len(table):
        raise view.fail(f"{what}: string index {index} is outside its {len(table)}-byte table")
    end = table.find(b"\0", index)
    if end < 0:
        raise view.fail(f"{what}: string at index {index} is not NUL-terminated")
    return table[index:end].decode("utf-8", "replace")
