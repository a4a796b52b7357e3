"""A small, strict PE/COFF reader for DLLs, extension modules (.pyd) and programs: the COFF
and optional headers, the section table, the import and delay-load import tables (the DLL
names) and the export table (the exported names).

Machines use the same words as the ELF reader (``x86_64``, ``aarch64``, ``x86``), so a
platform tag's promise compares across formats. Exports become defined, global ``Symbol``s
(``PyInit_*`` marks an extension module). PE has no run-time search path: ``rpath`` and
``runpath`` stay empty; ``soname`` stays empty because the Windows loader matches a DLL by
its file name, not by the name in its export directory.

Everything is bounded by the file size: counts, offsets and RVAs are checked before use and
every failure is a BinaryFormatError naming the file and the structure."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from release.binary import model
from release.binary._view import Buffer, ByteView
from release.errors import BinaryFormatError

MAGIC = b"MZ"
PE_SIGNATURE = b"PE\0\0"
PE32, PE32_PLUS = 0x10B, 0x20B

_MACHINES = {0x8664: "x86_64", 0xAA64: "aarch64", 0x14C: "x86", 0x1C4: "arm",
             0xA641: "arm64ec"}
_SUBSYSTEMS = {1: "native", 2: "windows_gui", 3: "windows_cui", 9: "windows_ce_gui",
               10: "efi_application", 16: "windows_boot_application"}
IMAGE_FILE_EXECUTABLE_IMAGE, IMAGE_FILE_DLL = 0x0002, 0x2000
DIRECTORY_EXPORT, DIRECTORY_IMPORT, DIRECTORY_RESOURCE, DIRECTORY_DELAY_IMPORT = 0, 1, 2, 13
RT_VERSION = 16
_COMPANY = "CompanyName".encode("utf-16-le") + b"\0\0"
_MAX_VERSION_INFO = 64 * 1024   # a version resource is a few hundred bytes

_MAX_SECTIONS = 96 * 1024     # the field is 16 bits; the bound only keeps errors readable
_MAX_NAME = 65536             # longest DLL or export name read
_HEADER_REACH = 64 * 1024 * 1024  # e_lfanew beyond this is corrupt, whatever the file size


@dataclass(frozen=True)
class _SectionHeader:
    name: str
    virtual_size: int
    address: int
    raw_size: int
    offset: int
    characteristics: int


class PeReader:
    name = "pe"

    def matches(self, head: bytes) -> bool:
        return head[:2] == MAGIC

    def read(self, data: Buffer, *, where: str, sections: Collection[str] = (),
             static_symbols: bool = False) -> model.BinaryInfo:
        return _Parser(data, where).parse(sections)


class _Parser:
    def __init__(self, data: Buffer, where: str) -> None:
        self.data = data   # (a file's bytes: ``find`` without a copy)
        self.view = ByteView(data, where=where)
        self.sections: list[_SectionHeader] = []
        self._last: _SectionHeader | None = None

    def fail(self, what: str) -> Exception:
        return self.view.fail(what)

    def parse(self, wanted: Collection[str]) -> model.BinaryInfo:
        view = self.view
        if view.read(0, 2, "DOS header") != MAGIC:
            raise self.fail("not a PE file (bad MZ magic)")
        (lfanew,) = view.unpack("I", 0x3C, "DOS header e_lfanew")
        if lfanew > _HEADER_REACH:
            raise self.fail(f"PE header offset {lfanew} is implausible")
        if view.read(lfanew, 4, "PE signature") != PE_SIGNATURE:
            raise self.fail("not a PE image (no PE signature; a DOS program?)")
        (machine, count, _time, symbol_table, symbol_count, optional_size,
         characteristics) = view.unpack("HHIIIHH", lfanew + 4, "COFF header")
        if count > _MAX_SECTIONS:
            raise self.fail(f"COFF header: {count} sections")
        optional = lfanew + 24
        if optional_size < 2:
            raise self.fail("no optional header: an object file, not an image")
        (magic,) = view.unpack("H", optional, "optional header magic")
        if magic not in (PE32, PE32_PLUS):
            raise self.fail(f"unknown optional header magic {magic:#x}")
        bits = 64 if magic == PE32_PLUS else 32
        (subsystem,) = view.unpack("H", optional + 68, "optional header subsystem")
        image_base_layout, image_base_at = ("Q", 24) if bits == 64 else ("I", 28)
        (self.image_base,) = view.unpack(image_base_layout, optional + image_base_at,
                                         "optional header image base")
        directories_at = optional + (112 if bits == 64 else 96)
        (directory_count,) = view.unpack("I", directories_at - 4, "optional header "
                                         "NumberOfRvaAndSizes")
        directory_count = min(directory_count, 16)
        if directories_at + 8 * directory_count > optional + optional_size:
            raise self.fail(f"optional header: {directory_count} data directories do not fit "
                            f"its {optional_size} bytes")
        directories = view.table("II", directories_at, directory_count, 8, "data directories")
        self.sections = self._section_table(optional + optional_size, count,
                                            symbol_table, symbol_count)

        def directory(index: int) -> tuple[int, int]:
            return ((directories[index][0], directories[index][1])
                if index < len(directories) else (0, 0))

        imports = self._imports(*directory(DIRECTORY_IMPORT))
        delayed = self._delay_imports(*directory(DIRECTORY_DELAY_IMPORT))
        exports = self._exports(*directory(DIRECTORY_EXPORT))
        vendor = self._company(*directory(DIRECTORY_RESOURCE))
        file_type = ("shared" if characteristics & IMAGE_FILE_DLL else
                     "executable" if characteristics & IMAGE_FILE_EXECUTABLE_IMAGE else "other")
        return model.BinaryInfo(
            format="pe", machine=_MACHINES.get(machine, f"machine-{machine:#x}"), bits=bits,
            little_endian=True, file_type=file_type, size=view.size,
            needed=_unique(imports), delay_needed=_unique(delayed),
            subsystem=_SUBSYSTEMS.get(subsystem, f"subsystem-{subsystem}"), vendor=vendor,
            sections=tuple(model.Section(s.name, s.offset, s.raw_size, s.characteristics,
                                         s.address) for s in self.sections),
            dynamic_symbols=tuple(
                model.Symbol(name, model.GLOBAL, model.DEFAULT, True, kind)
                for name, kind in exports),
            section_data={s.name: view.read(s.offset, min(s.virtual_size or s.raw_size,
                                                          s.raw_size), f"section {s.name}",
                                                          paid=True)
                          for s in self.sections if s.name in wanted})

    def _section_table(self, offset: int, count: int, symbol_table: int,
                       symbol_count: int) -> list[_SectionHeader]:
        rows = self.view.table("8sIIIIIIHHI", offset, count, 40, "section table",
                               kind="sections")
        result = []
        for raw, virtual_size, address, raw_size, raw_offset, *_, characteristics in rows:
            name = bytes(raw).rstrip(b"\0").decode("utf-8", "replace")
            if name.startswith("/") and name[1:].isdigit() and symbol_table:
                # a long name (mingw, zig): an offset into the COFF string table, which
                # follows the 18-byte symbol records
                name = self._string(symbol_table + 18 * symbol_count + int(name[1:]),
                                    f"long name of section {name}")
            if raw_size:
                self.view.check(raw_offset, raw_size, f"section {name}")
            result.append(_SectionHeader(name, virtual_size, address, raw_size, raw_offset,
                                         characteristics))
        return result

    def _offset(self, rva: int, what: str) -> int:
        """The file offset of the bytes at ``rva``; a failure when no section holds them."""
        last = self._last
        if last is not None and last.address <= rva < last.address + last.raw_size:
            return rva - last.address + last.offset
        for section in self.sections:
            if section.address <= rva < section.address + section.raw_size:
                self._last = section
                return rva - section.address + section.offset
        raise self.fail(f"{what}: RVA {rva:#x} lies in no section's file data")

    def _string(self, offset: int, what: str) -> str:
        self.view.check(offset, 1, what)
        data = self.data
        end = data.find(b"\0", offset, min(offset + _MAX_NAME, self.view.size))
        if end < 0:
            raise self.fail(f"{what}: string at offset {offset} is not NUL-terminated")
        return bytes(data[offset:end]).decode("utf-8", "replace")

    def _string_at(self, rva: int, what: str) -> str:
        return self._string(self._offset(rva, what), what)

    def _records(self, rva: int, size: int, layout: str, record: int,
                 what: str) -> list[tuple[int, ...]]:
        """The records of a descriptor table up to its all-zero terminator."""
        if rva == 0:
            return []
        offset = self._offset(rva, what)
        result: list[tuple[int, ...]] = []
        while True:
            row = self.view.unpack(layout, offset, what)
            if not any(row):
                return result
            self.view.spend("records", 1, what)
            result.append(row)
            offset += record
            if size and len(result) * record > size + record:
                raise self.fail(f"{what}: no terminating entry within its {size} bytes")

    def _imports(self, rva: int, size: int) -> list[str]:
        rows = self._records(rva, size, "IIIII", 20, "import directory")
        return [self._string_at(row[3], "imported DLL name") for row in rows]

    def _delay_imports(self, rva: int, size: int) -> list[str]:
        rows = self._records(rva, size, "IIIIIIII", 32, "delay-load import directory")
        names = []
        for attributes, name, *_ in rows:
            # attribute bit 0 clear: an old (Visual C++ 6) table of addresses, not RVAs
            if not attributes & 1:
                name -= self.image_base
            names.append(self._string_at(name, "delay-loaded DLL name"))
        return names

    def _exports(self, rva: int, size: int) -> list[tuple[str, str]]:
        if rva == 0:
            return []
        offset = self._offset(rva, "export directory")
        (_flags, _time, _major, _minor, _name, _base, function_count, name_count, functions,
         names, ordinals) = self.view.unpack("IIHHIIIIIII", offset, "export directory")
        if name_count == 0:
            return []
        if name_count > function_count:
            raise self.fail(f"export directory: {name_count} names for {function_count} "
                            "functions")
        name_rvas = self.view.table("I", self._offset(names, "export name table"),
                                    name_count, 4, "export name table", kind="symbols")
        indexes = self.view.table("H", self._offset(ordinals, "export ordinal table"),
                                  name_count, 2, "export ordinal table")
        addresses = self.view.table("I", self._offset(functions, "export address table"),
                                    function_count, 4, "export address table")
        result = []
        for (name_rva,), (index,) in zip(name_rvas, indexes):
            if index >= function_count:
                raise self.fail(f"export ordinal table: index {index} beyond {function_count} "
                                "functions")
            (address,) = addresses[index]
            # an address inside the export directory is a forwarder ("OTHER.name")
            kind = ("notype" if rva <= address < rva + size else
                "func" if self._executable(address) else "object")
            name = self._string_at(name_rva, "export name")
            self.view.spend("names", len(name) + 1, "export name table")
            result.append((name, kind))
        return result

    def _company(self, rva: int, size: int) -> str:
        """The CompanyName of the version resource ("" when there is none); a resource tree
        this reader cannot follow is no version resource, never an error."""
        if rva == 0 or size == 0:
            return ""
        try:
            base = self._offset(rva, "resource directory")
            data = self._resource_data(base, RT_VERSION)
        except BinaryFormatError:
            return ""
        if data is None:
            return ""
        at = data.find(_COMPANY)
        if at < 0 or at % 2:
            return ""
        start = at + len(_COMPANY)
        start += -start % 4   # the value is aligned to 4 bytes within the resource
        end = start
        while end + 1 < len(data) and data[end:end + 2] != b"\0\0":
            end += 2
        return data[start:end].decode("utf-16-le", "replace").strip()

    def _resource_data(self, base: int, kind: int) -> bytes | None:
        """The bytes of the first resource of ``kind`` (type, then any name and language)."""
        offset = self._resource_entry(base, base, kind)
        for _level in range(2):   # name, then language: the first of each
            if offset is None or not offset & 0x80000000:
                return None
            offset = self._resource_entry(base, base + (offset & 0x7FFFFFFF), None)
        if offset is None or offset & 0x80000000:
            return None
        data_rva, data_size = self.view.unpack("II", base + offset, "resource data entry")
        if data_size > _MAX_VERSION_INFO:
            return None
        return self.view.read(self._offset(data_rva, "version resource"), data_size,
                              "version resource")

    def _resource_entry(self, base: int, directory: int, wanted: int | None) -> int | None:
        """The OffsetToData of the entry with id ``wanted`` (None: the first entry)."""
        named, numbered = self.view.unpack("HH", directory + 12, "resource directory")
        rows = self.view.table("II", directory + 16, min(named + numbered, 4096), 8,
                               "resource directory entries")
        for name, offset in rows:
            if wanted is None or (not name & 0x80000000 and name == wanted):
                return int(offset)
        return None

    def _executable(self, rva: int) -> bool:
        return any(s.address <= rva < s.address + max(s.virtual_size, s.raw_size)
                   and s.characteristics & 0x20000000 for s in self.sections)


def _unique(names: list[str]) -> tuple[str, ...]:
    """Names in first-seen order, once each (an image may import one DLL in several
    descriptors)."""
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name, None)
    return tuple(seen)
