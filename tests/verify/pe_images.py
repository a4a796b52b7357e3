"""Small PE images built in the tests: a DOS header, the PE signature, the COFF and optional
headers, a .rdata section holding the import, delay-load import and export tables, and an
executable .text section the exports point into. Only what the reader looks at is filled."""

from __future__ import annotations

import struct
from collections.abc import Sequence

AMD64, ARM64, I386 = 0x8664, 0xAA64, 0x14C
DLL, EXECUTABLE = 0x2000 | 0x0002, 0x0002
CONSOLE, GUI = 3, 2

_RDATA_RVA, _TEXT_RVA, _RSRC_RVA, _HEADERS = 0x1000, 0x8000, 0xE000, 0x400


def _version_resource(company: str) -> bytes:
    """A resource tree holding one RT_VERSION resource whose string table names the
    company: type -> name -> language -> data entry -> a String structure."""
    key = "CompanyName\0".encode("utf-16-le")
    value = (company + "\0").encode("utf-16-le")
    string = struct.pack("<HHH", 6 + len(key) + 2 + len(value), len(value) // 2, 1) + key
    string += b"\0" * (-len(string) % 4) + value
    directory = struct.pack("<IIHHHH", 0, 0, 0, 0, 0, 1)
    tree = bytearray()
    tree += directory + struct.pack("<II", 16, 0x80000000 | 24)            # type 16
    tree += directory + struct.pack("<II", 1, 0x80000000 | 48)             # name 1
    tree += directory + struct.pack("<II", 0x409, 72)                      # language
    tree += struct.pack("<IIII", _RSRC_RVA + 88, len(string), 0, 0)        # data entry
    return bytes(tree + string)


def _align(data: bytearray, boundary: int) -> None:
    data.extend(b"\0" * (-len(data) % boundary))


def _tables(imports: Sequence[str], delayed: Sequence[str], exports: Sequence[str],
            name: str) -> tuple[bytes, dict[int, tuple[int, int]]]:
    """The .rdata bytes and the data directories (index -> (RVA, size)) pointing into them."""
    data = bytearray()
    strings: list[tuple[int, str]] = []   # (offset of the RVA field to patch, text)
    directories: dict[int, tuple[int, int]] = {}
    if imports:
        start = len(data)
        for dll in imports:
            strings.append((len(data) + 12, dll))
            data += struct.pack("<IIIII", 0, 0, 0, 0, 0)
        data += b"\0" * 20
        directories[1] = (_RDATA_RVA + start, len(data) - start)
    if delayed:
        start = len(data)
        for dll in delayed:
            strings.append((len(data) + 4, dll))
            data += struct.pack("<IIIIIIII", 1, 0, 0, 0, 0, 0, 0, 0)
        data += b"\0" * 32
        directories[13] = (_RDATA_RVA + start, len(data) - start)
    if exports:
        start = len(data)
        count = len(exports)
        table = start + 40
        names_at, ordinals_at = table + 4 * count, table + 8 * count
        strings.append((start + 12, name))
        data += struct.pack("<IIHHIIIIIII", 0, 0, 0, 0, 0, 1, count, count,
                            _RDATA_RVA + table, _RDATA_RVA + names_at, _RDATA_RVA + ordinals_at)
        data += b"".join(struct.pack("<I", _TEXT_RVA + 16 * index) for index in range(count))
        for export in sorted(exports):
            strings.append((len(data), export))
            data += b"\0\0\0\0"
        data += b"".join(struct.pack("<H", index) for index in range(count))
        directories[0] = (_RDATA_RVA + start, len(data) - start)
    for field, text in strings:
        struct.pack_into("<I", data, field, _RDATA_RVA + len(data))
        data += text.encode() + b"\0"
    return bytes(data), directories


def pe_image(*, machine: int = AMD64, characteristics: int = DLL, subsystem: int = CONSOLE,
             bits: int = 64, imports: Sequence[str] = (), delayed: Sequence[str] = (),
             exports: Sequence[str] = (), name: str = "demo.dll",
             long_section: str = "", company: str = "") -> bytes:
    """A PE image with these imports, delay-load imports and exports. ``long_section`` adds
    a section whose name is longer than eight bytes (kept in the COFF string table);
    ``company`` a version resource naming that CompanyName."""
    rdata, directories = _tables(imports, delayed, exports, name)
    sections = [(b".rdata", _RDATA_RVA, rdata, 0x40000040),
                (b".text", _TEXT_RVA, b"\xc3" * 256, 0x60000020)]
    if company:
        resources = _version_resource(company)
        sections.append((b".rsrc", _RSRC_RVA, resources, 0x40000040))
        directories[2] = (_RSRC_RVA, len(resources))
    optional_size = 240 if bits == 64 else 224
    header = bytearray(b"MZ" + b"\0" * 62)
    struct.pack_into("<I", header, 0x3C, 0x40)
    files = list(sections)
    if long_section:
        files.append((b"", 0xC000, long_section.encode(), 0x42000040))
    table = bytearray()
    string_table = bytearray(b"\0\0\0\0")
    raw = bytearray()
    for section_name, rva, content, flags in files:
        if not section_name:   # the long name: "/<offset>" into the string table
            section_name = f"/{len(string_table)}".encode()
            string_table += long_section.encode() + b"\0"
        padded = bytearray(content)
        _align(padded, 0x200)
        table += struct.pack("<8sIIIIIIHHI", section_name, len(content), rva, len(padded),
                             _HEADERS + len(raw), 0, 0, 0, 0, flags)
        raw += padded
    struct.pack_into("<I", string_table, 0, len(string_table))
    symbols_at = _HEADERS + len(raw) if long_section else 0
    coff = struct.pack("<4sHHIIIHH", b"PE\0\0", machine, len(files), 0, symbols_at, 0,
                       optional_size, characteristics)
    optional = bytearray(optional_size)
    struct.pack_into("<H", optional, 0, 0x20B if bits == 64 else 0x10B)
    if bits == 64:
        struct.pack_into("<Q", optional, 24, 0x180000000)
    else:
        struct.pack_into("<I", optional, 28, 0x10000000)
    struct.pack_into("<H", optional, 68, subsystem)
    directories_at = 112 if bits == 64 else 96
    struct.pack_into("<I", optional, directories_at - 4, 16)
    for index, (rva, size) in directories.items():
        struct.pack_into("<II", optional, directories_at + 8 * index, rva, size)
    body = header + coff + optional + table
    _align(body, _HEADERS)
    return bytes(body + raw + (string_table if long_section else b""))
