"""Bounds-checked reads from a file's bytes: every offset is checked against the file size
before it is used, so a malformed file fails with BinaryFormatError, never IndexError.

Every table a reader walks and every string table it copies is paid for first from a
``Budget`` (``ReadLimits``): the count a header claims is spent before a row is read, so a
hostile file is refused in one line (``LimitExceeded``) before its tables cost memory or
time. The budget in force is the one ``using(budget)`` set for this thread of work (verify
sets one per wheel, shared by all its binaries); without one, each read gets a fresh one."""

from __future__ import annotations

import contextlib
import mmap
import struct
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Union

from release.errors import BinaryFormatError, LimitExceeded

Buffer = Union[bytes, mmap.mmap]  # a runtime alias: no '|' between types before 3.10
# what a view reads: a file's bytes, or an image inside them (a cubin in a fatbinary section,
# read in place through a memoryview)
Image = Union[bytes, mmap.mmap, memoryview]

_ROWS_AT_ONCE = 4096
_FIX = "the file is truncated or corrupt; rebuild it or re-download the wheel"


@lru_cache(maxsize=64)
def _struct(layout: str) -> struct.Struct:
    return struct.Struct(layout)


@dataclass(frozen=True)
class ReadLimits:
    """What the readers may build from the binaries of one wheel, all together. Real
    libraries stay far below (libtorch_cpu.so, 414 MB: 75,414 dynamic symbols, 38 sections);
    at these limits the kept model is about 150 MB."""

    symbols: int = 500_000        # symbol table entries (dynamic, static, exports)
    sections: int = 100_000       # section headers (ELF, Mach-O, PE)
    records: int = 2_000_000      # other table rows: segments, dynamic entries, versions,
    #                               load commands, imports, relocations, signature slots
    bytes: int = 64 << 20         # string tables and section contents copied out of files
    names: int = 32 << 20         # bytes of decoded symbol names

    def of(self, kind: str) -> int:
        value: int = getattr(self, kind)
        return value


_FIX_BUDGET = ("no real library comes near this; if it is yours, export fewer symbols "
               "(-fvisibility=hidden) or ship fewer, smaller binaries")


class Budget:
    """What is left of ``ReadLimits``; thread-safe (verify reads binaries in parallel)."""

    def __init__(self, limits: ReadLimits | None = None) -> None:
        self.limits = limits or ReadLimits()
        self._spent: dict[str, int] = {}
        self._lock = threading.Lock()

    def spend(self, kind: str, count: int, *, where: str, what: str) -> None:
        """Takes ``count`` units of ``kind``; LimitExceeded (nothing taken) when they are not
        left."""
        limit = self.limits.of(kind)
        with self._lock:
            spent = self._spent.get(kind, 0)
            if count > limit - spent:
                raise LimitExceeded(
                    f"{where}: {what} needs {count:,} {_UNITS[kind]}, over what is left "
                    f"({max(0, limit - spent):,}) of the readers' budget of {limit:,} "
                    f"{_UNITS[kind]} for one wheel", fix=_FIX_BUDGET)
            self._spent[kind] = spent + count

    def spent(self, kind: str) -> int:
        with self._lock:
            return self._spent.get(kind, 0)


_UNITS = {"symbols": "symbols", "sections": "sections", "records": "records",
          "bytes": "bytes", "names": "bytes of symbol names"}
_CURRENT: ContextVar[Budget | None] = ContextVar("release_binary_budget", default=None)


@contextlib.contextmanager
def using(budget: Budget | None) -> Iterator[Budget]:
    """Makes ``budget`` (a fresh one when None and none is in force) the one readers spend
    from, until the block ends."""
    chosen = budget or _CURRENT.get() or Budget()
    token = _CURRENT.set(chosen)
    try:
        yield chosen
    finally:
        _CURRENT.reset(token)


def current_budget() -> Budget:
    return _CURRENT.get() or Budget()


class ByteView:
    """A read-only view of ``data`` that names ``where`` in every error."""

    def __init__(self, data: Image, *, where: str, byte_order: str = "<") -> None:
        self.data = data
        self.size = len(data)
        self.where = where
        self.byte_order = byte_order
        self.budget = current_budget()

    def spend(self, kind: str | None, count: int, what: str) -> None:
        if kind is None:   # paid for by the caller
            return
        self.budget.spend(kind, count, where=self.where, what=what)

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
              what: str, kind: str | None = "records") -> list[tuple[int, ...]]:
        """``count`` records of ``layout`` spaced ``entry_size`` apart (paid for first)."""
        packer = self._paid_rows(layout, offset, count, entry_size, what, kind)
        if entry_size != packer.size:
            return [packer.unpack_from(self.data, offset + index * entry_size)
                    for index in range(count)]
        rows: list[tuple[int, ...]] = []
        end, step = offset + count * entry_size, _ROWS_AT_ONCE * entry_size
        for start in range(offset, end, step):   # a slice at a time, unpacked in one call
            rows.extend(packer.iter_unpack(self.data[start:min(start + step, end)]))
        return rows

    def rows(self, layout: str, offset: int, count: int, entry_size: int,
             what: str, kind: str | None = "records") -> Iterator[tuple[int, ...]]:
        """``table``, one record at a time: nothing but the current row is held. The count
        is checked and spent before the first row is read."""
        packer = self._paid_rows(layout, offset, count, entry_size, what, kind)
        return self._rows(packer, offset, count, entry_size)

    def _paid_rows(self, layout: str, offset: int, count: int, entry_size: int,
                   what: str, kind: str | None) -> struct.Struct:
        """The row layout, once the table is checked to lie in the file and is paid for."""
        packer = _struct(self.byte_order + layout)
        if count and entry_size < packer.size:
            raise self.fail(f"{what}: entry size {entry_size} is smaller than {packer.size}")
        self.check(offset, count * entry_size, what)
        self.spend(kind, count, what)
        return packer

    def _rows(self, packer: struct.Struct, offset: int, count: int,
              entry_size: int) -> Iterator[tuple[int, ...]]:
        if entry_size == packer.size:
            # a slice at a time (copied: no buffer export that would keep a memory map
            # from closing when a reader stops early)
            end = offset + count * entry_size
            step = _ROWS_AT_ONCE * entry_size
            for start in range(offset, end, step):
                yield from packer.iter_unpack(self.data[start:min(start + step, end)])
            return
        for index in range(count):
            yield packer.unpack_from(self.data, offset + index * entry_size)

    def string_end(self, start: int, end: int) -> int:
        """Where the NUL that ends the string at ``start`` is, before ``end`` (-1: none), found
        in place: a string table is never copied whole to read a few names from it."""
        data = self.data
        if not isinstance(data, memoryview):
            return data.find(b"\0", start, end)
        position = start
        while position < end:
            stop = min(end, position + 4096)
            found = bytes(data[position:stop]).find(b"\0")
            if found >= 0:
                return position + found
            position = stop
        return -1

    def read(self, offset: int, length: int, what: str, *, paid: bool = False) -> bytes:
        """The bytes at ``offset``; ``paid`` spends them from the budget's ``bytes`` (string
        tables and section contents, which can be as large as the file)."""
        self.check(offset, length, what)
        if paid:
            self.spend("bytes", length, what)
        return bytes(self.data[offset:offset + length])


def string_at(table: bytes, index: int, *, view: ByteView, what: str) -> str:
    """The NUL-terminated string at ``index`` of a string table."""
    if index < 0 or index >= len(table):
        raise view.fail(f"{what}: string index {index} is outside its {len(table)}-byte table")
    end = table.find(b"\0", index)
    if end < 0:
        raise view.fail(f"{what}: string at index {index} is not NUL-terminated")
    return table[index:end].decode("utf-8", "replace")
