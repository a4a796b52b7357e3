"""A tiny Mach-O writer for tests: a 64-bit thin file with the load commands the reader and
the macOS loader model act on, and fat (universal) files made of such slices. Nothing runs
them; the bytes only need to be what a linker would write for these structures."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence

CPU = {"arm64": 0x0100000C, "x86_64": 0x01000007}
FILE_TYPES = {"dylib": 6, "bundle": 8, "execute": 2}
LC_SEGMENT_64, LC_SYMTAB, LC_LOAD_DYLIB, LC_ID_DYLIB = 0x19, 0x2, 0xC, 0xD
LC_LOAD_WEAK_DYLIB, LC_RPATH, LC_REEXPORT_DYLIB = 0x80000018, 0x8000001C, 0x8000001F
LC_CODE_SIGNATURE, LC_VERSION_MIN_MACOSX, LC_BUILD_VERSION = 0x1D, 0x24, 0x32


def _padded(text: str, base: int) -> bytes:
    raw = text.encode() + b"\0"
    return raw + b"\0" * (-(base + len(raw)) % 8)


def _dylib(cmd: int, name: str) -> bytes:
    tail = _padded(name, 24)
    return struct.pack("<IIIIII", cmd, 24 + len(tail), 24, 2, 0x10000, 0x10000) + tail


def _rpath(path: str) -> bytes:
    tail = _padded(path, 12)
    return struct.pack("<III", LC_RPATH, 12 + len(tail), 12) + tail


def _version(major: int, minor: int, patch: int = 0) -> int:
    return major << 16 | minor << 8 | patch


def macho(*, arch: str = "arm64", kind: str = "dylib", install_name: str = "",
          loads: Sequence[str] = (), weak: Sequence[str] = (), reexports: Sequence[str] = (),
          rpaths: Sequence[str] = (), minos: tuple[int, int] | None = (11, 0),
          old_minos: bool = False, signed: bool = True, exports: Sequence[str] = (),
          hidden: Sequence[str] = (), imports: Sequence[str] = (),
          weak_exports: Sequence[str] = (), flat: bool = False, team: str = "",
          indirect: Sequence[str] = (), local: Sequence[str] = (),
          dysymtab: bool = False) -> bytes:
    """One thin 64-bit little-endian Mach-O file. Symbol names are given as C writes them
    ("PyInit_x"); the file stores them with the leading underscore. Linked for the
    two-level namespace unless ``flat``. ``indirect`` names are N_INDR entries: re-exports
    of a symbol another image defines; ``local`` names are non-external definitions, listed
    first. ``dysymtab`` adds LC_DYSYMTAB, which locates the local, external defined and
    undefined symbols (as ld64 sorts them: locals, exports, imports)."""
    text = b"\xc0\x03\x5f\xd6" * 4
    commands: list[bytes] = []
    if install_name:
        commands.append(_dylib(LC_ID_DYLIB, install_name))
    commands += [_dylib(LC_LOAD_DYLIB, name) for name in loads]
    commands += [_dylib(LC_LOAD_WEAK_DYLIB, name) for name in weak]
    commands += [_dylib(LC_REEXPORT_DYLIB, name) for name in reexports]
    commands += [_rpath(path) for path in rpaths]
    if minos is not None:
        commands.append(struct.pack("<IIII", LC_VERSION_MIN_MACOSX, 16, _version(*minos),
                                    _version(14, 0)) if old_minos else
                        struct.pack("<IIIIII", LC_BUILD_VERSION, 24, 1, _version(*minos),
                                    _version(14, 0), 0))
    # sizes of the commands still to come: segment (72 + 80), symtab (24), signature (16)
    header_size = 32 + sum(map(len, commands)) + 152 + 24 + (16 if signed else 0) \
        + (80 if dysymtab else 0)
    text_offset = (header_size + 15) // 16 * 16
    symbols = ([(name, 0x0E, 1, 0) for name in local]             # N_SECT
               + [(name, 0x0F, 1, 0) for name in exports]          # N_SECT | N_EXT
               + [(name, 0x0F, 1, 0x80) for name in weak_exports]  # N_WEAK_DEF
               + [(name, 0x1F, 1, 0) for name in hidden]           # N_PEXT: private extern
               + [(name, 0x01, 0, 0) for name in imports]          # N_UNDF | N_EXT
               + [(name, 0x0B, 0, 0) for name in indirect])        # N_INDR | N_EXT
    strings = b"\0"
    table = b""
    for name, kind_bits, section, desc in symbols:
        table += struct.pack("<IBBHQ", len(strings), kind_bits, section, desc,
                             0x1000 if section else 0)
        strings += b"_" + name.encode() + b"\0"
    symoff = text_offset + len(text)
    stroff = symoff + len(table)
    sigoff = stroff + len(strings)
    signature_size = len(signature_for(b"\0" * sigoff, team=team))
    segment = struct.pack("<II16sQQQQiiII", LC_SEGMENT_64, 152, b"__TEXT", 0, 0x4000, 0,
                          sigoff, 5, 5, 1, 0)
    segment += struct.pack("<16s16sQQIIIIIIII", b"__text", b"__TEXT", 0x1000, len(text),
                           text_offset, 2, 0, 0, 0x80000400, 0, 0, 0)
    commands.append(segment)
    commands.append(struct.pack("<IIIIII", LC_SYMTAB, 24, symoff, len(symbols), stroff,
                                len(strings)))
    if dysymtab:
        defined = len(exports) + len(weak_exports) + len(hidden)
        commands.append(struct.pack("<20I", 0xB, 80, 0, len(local), len(local), defined,
                                    len(local) + defined, len(imports) + len(indirect),
                                    *([0] * 12)))
    if signed:
        commands.append(struct.pack("<IIII", LC_CODE_SIGNATURE, 16, sigoff, signature_size))
    body = b"".join(commands)
    header = struct.pack("<IiiIIIII", 0xFEEDFACF, CPU[arch], 0, FILE_TYPES[kind],
                         len(commands), len(body), 0x05 if flat else 0x85, 0)
    data = header + body
    data += b"\0" * (text_offset - len(data)) + text + table + strings
    return data + (signature_for(data, team=team) if signed else b"")


def signature_for(code: bytes, page_log: int = 12, team: str = "") -> bytes:
    """A signature: a superblob with one SHA-256 code directory over ``code``; ad hoc, or
    naming the developer ``team`` that signed it."""
    page = 1 << page_log
    hashes = b"".join(hashlib.sha256(code[start:start + page]).digest()
                      for start in range(0, len(code), page))
    ident = b"demo\0"
    named = (team.encode() + b"\0") if team else b""
    header = 52 if team else 44
    directory_length = header + len(ident) + len(named) + len(hashes)
    directory = struct.pack(">IIIIIIIIIBBBBI", 0xFADE0C02, directory_length,
                            0x20200 if team else 0x20001, 2,
                            header + len(ident) + len(named), header, 0, len(hashes) // 32,
                            len(code), 32, 2, 0, page_log, 0)
    if team:
        directory += struct.pack(">II", 0, header + len(ident))   # scatter, team offsets
    directory += ident + named + hashes
    return struct.pack(">IIIII", 0xFADE0CC0, 20 + len(directory), 1, 0, 20) + directory


def fat(slices: Sequence[tuple[str, bytes]]) -> bytes:
    """A fat file of (arch, thin file) slices, each 16-byte aligned."""
    offset = 8 + 20 * len(slices)
    entries, bodies = b"", b""
    for arch, body in slices:
        start = (offset + 15) // 16 * 16
        bodies += b"\0" * (start - offset) + body
        entries += struct.pack(">IIIII", CPU[arch], 0, start, len(body), 4)
        offset = start + len(body)
    return struct.pack(">II", 0xCAFEBABE, len(slices)) + entries + bodies
