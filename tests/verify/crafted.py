"""Crafted hostile inputs for verify, repair and check-set, written by code so every case is
reproducible and small in the repository: ``python -m tests.verify.crafted FOLDER`` writes
them all (the tests call the functions directly).

Each writer returns the path it wrote. The wheels are written with zipfile and then patched
byte by byte where a case needs what zipfile refuses to write (a local header naming another
file than the central directory, a wrong CRC-32)."""

from __future__ import annotations

import base64
import hashlib
import struct
import sys
import zipfile
import zlib
from pathlib import Path

_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
SHT_SYMTAB, SHT_STRTAB, SHT_DYNSYM = 2, 3, 11


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def dense_dynsym_elf(symbols: int, *, table: int = SHT_DYNSYM, distinct: bool = False) -> bytes:
    """A 64-bit x86_64 shared library whose symbol table (``.dynsym`` by default) holds
    ``symbols`` defined global functions: 24 bytes each, so 4.3 million make a 100 MB file
    that deflates to about 240 KB when they are identical (all named ``f``); ``distinct``
    names each one (``f0000001``...), as a real library would."""
    names = b"\0.dynsym\0.dynstr\0.shstrtab\0"
    if distinct:
        strings = b"\0" + b"".join(b"f%07d\0" % index for index in range(1, symbols))
        body = bytes(24) + b"".join(_SYMBOL.pack(1 + 9 * (index - 1), (1 << 4) | 2, 0, 1,
                                                 0x1000 + 16 * index, 16)
                                    for index in range(1, symbols))
    else:
        strings = b"\0f\0"
        body = bytes(24) + _SYMBOL.pack(1, (1 << 4) | 2, 0, 1, 0x1000, 16) * (symbols - 1)
    header_size = _ELF_HEADER.size
    dynsym_at = header_size
    dynstr_at = dynsym_at + len(body)
    shstr_at = dynstr_at + len(strings)
    sections_at = (shstr_at + len(names) + 7) & ~7
    sections = [
        bytes(_SECTION.size),
        _SECTION.pack(1, table, 2, 0, dynsym_at, len(body), 2, 1, 8, 24),
        _SECTION.pack(9, SHT_STRTAB, 2, 0, dynstr_at, len(strings), 0, 0, 1, 0),
        _SECTION.pack(17, SHT_STRTAB, 0, 0, shstr_at, len(names), 0, 0, 1, 0),
    ]
    ident = b"\x7fELF\x02\x01\x01" + bytes(9)
    header = _ELF_HEADER.pack(ident, 3, 62, 1, 0, 0, sections_at, 0, 64, 56, 0, 64,
                              len(sections), 3)
    padding = bytes(sections_at - shstr_at - len(names))
    return header + body + strings + names + padding + b"".join(sections)


def overlapping_names_elf(symbols: int, run: int = 1 << 20) -> bytes:
    """A shared library whose ``symbols`` symbols are named by successive offsets into one
    ``run``-byte string: each name is the rest of the run, so the names total about
    ``symbols * run`` bytes though the file holds one run."""
    library = bytearray(dense_dynsym_elf(symbols))
    strings = b"\0" + b"a" * run + b"\0"
    header = _ELF_HEADER.unpack_from(library)
    sections_at, strings_at = header[6], _ELF_HEADER.size + 24 * symbols
    for index in range(1, symbols):
        library[_ELF_HEADER.size + 24 * index:_ELF_HEADER.size + 24 * index + 4] = \
            (index % run + 1).to_bytes(4, "little")
    tail = bytes(library[strings_at + 3:sections_at])   # .shstrtab and padding
    sections = bytearray(library[sections_at:])
    shift = len(strings) - 3
    for number, size in ((2, len(strings)), (3, None)):
        at = number * _SECTION.size
        fields = list(_SECTION.unpack_from(sections, at))
        fields[4] += 0 if number == 2 else shift
        fields[5] = size if size is not None else fields[5]
        _SECTION.pack_into(sections, at, *fields)
    start = (strings_at + len(strings) + len(tail) + 7) & ~7
    body = bytes(library[:strings_at]) + strings + tail
    body += bytes(start - len(body))
    header_fields = list(header)
    header_fields[6] = start
    return _ELF_HEADER.pack(*header_fields) + body[_ELF_HEADER.size:] + bytes(sections)


def wheel(path: Path, files: dict[str, bytes], *, name: str = "demo", version: str = "1.0",
          tag: str = "py3-none-manylinux_2_17_x86_64", wheel_version: str = "1.0",
          dist_info: str | None = None, record: str | None = None) -> Path:
    """A wheel of ``files`` plus METADATA, WHEEL and (unless ``record`` is given) a correct
    RECORD, written into ``path`` (a folder: the file is named for the wheel, or a file)."""
    dist = dist_info or f"{name}-{version}.dist-info"
    if path.is_dir():
        path = path / f"{name}-{version}-{tag}.whl"
    files = {f"{dist}/METADATA": (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                  ).encode(),
             f"{dist}/WHEEL": (f"Wheel-Version: {wheel_version}\nRoot-Is-Purelib: false\n"
                               f"Tag: {tag}\n").encode(), **files}
    if record is None:
        record = "".join(f"{entry},sha256={_digest(data)},{len(data)}\n"
                         for entry, data in files.items()) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry, data in files.items():
            archive.writestr(entry, data)
        archive.writestr(f"{dist}/RECORD", record)
    return path


def dense_dynsym_wheel(folder: Path, symbols: int, *, distinct: bool = False,
                       copies: int = 1) -> Path:
    """A Linux wheel shipping ``copies`` of one ``dense_dynsym_elf``."""
    library = dense_dynsym_elf(symbols, distinct=distinct)
    return wheel(folder, {f"demo/lib/libdense{index}.so": library + bytes(index)
                          for index in range(copies)})


def local_name_differs(folder: Path, *, shown: str = "demo/aevil.py",
                       hidden: str = "../../evil.py") -> Path:
    """A wheel whose central directory names ``shown`` while the member's local header names
    ``hidden`` (same length): extractors that read local headers write ``hidden``."""
    assert len(shown) == len(hidden)
    path = wheel(folder, {shown: b"x = 1\n"})
    data = bytearray(path.read_bytes())
    local = data.find(b"PK\x03\x04")
    while local >= 0:
        length = int.from_bytes(data[local + 26:local + 28], "little")
        if data[local + 30:local + 30 + length] == shown.encode():
            data[local + 30:local + 30 + length] = hidden.encode()
            break
        local = data.find(b"PK\x03\x04", local + 4)
    path.write_bytes(bytes(data))
    return path


def wrong_crc(folder: Path, *, entry: str = "demo/a.py") -> Path:
    """A wheel whose member ``entry`` carries a CRC-32 (in both headers) that its bytes do not
    have; RECORD is right, so only the CRC tells."""
    path = wheel(folder, {entry: b"x = 1\n"})
    data = bytearray(path.read_bytes())
    good = zlib.crc32(b"x = 1\n").to_bytes(4, "little")
    bad = (zlib.crc32(b"x = 1\n") ^ 0xFFFF).to_bytes(4, "little")
    for signature, at in ((b"PK\x03\x04", 14), (b"PK\x01\x02", 16)):
        position = data.find(signature)
        while position >= 0:
            if data[position + at:position + at + 4] == good:
                data[position + at:position + at + 4] = bad
            position = data.find(signature, position + 4)
    path.write_bytes(bytes(data))
    return path


def invalid_utf8_name(folder: Path) -> Path:
    """A wheel with an entry flagged UTF-8 (bit 11) whose name bytes are not UTF-8."""
    path = wheel(folder, {"demo/caf\u00e9.py": b""})
    data = bytearray(path.read_bytes())
    good = "demo/caf\u00e9.py".encode()
    bad = b"demo/caf\xff\xfe.py"
    assert len(good) == len(bad)
    path.write_bytes(bytes(data).replace(good, bad))
    return path


def other_project_dist_info(folder: Path) -> Path:
    """``demo-1.0-….whl`` whose only .dist-info folder is ``other-1.0.dist-info``."""
    path = folder / "demo-1.0-py3-none-manylinux_2_17_x86_64.whl"
    return wheel(path, {"demo/__init__.py": b""}, dist_info="other-1.0.dist-info")


def other_version_dist_info(folder: Path) -> Path:
    """``demo-1.0-….whl`` whose .dist-info folder is ``demo-2.0.dist-info``."""
    path = folder / "demo-1.0-py3-none-manylinux_2_17_x86_64.whl"
    return wheel(path, {"demo/__init__.py": b""}, dist_info="demo-2.0.dist-info")


def future_wheel_version(folder: Path) -> Path:
    """A wheel whose WHEEL file says ``Wheel-Version: 9.0`` (pip refuses majors above 1)."""
    return wheel(folder, {"demo/__init__.py": b""}, wheel_version="9.0")


def long_component(folder: Path, length: int = 300) -> Path:
    """A wheel with a path component of ``length`` bytes (no file system stores one over
    255)."""
    return wheel(folder, {f"demo/{'a' * length}.py": b"x = 1\n"})


def signature_elsewhere(folder: Path) -> Path:
    """A wheel with ``demo/payload.p7s`` and ``demo/run.jws`` that RECORD does not list (the
    exemption is for ``.dist-info/RECORD.p7s`` and ``RECORD.jws`` only)."""
    path = wheel(folder, {"demo/__init__.py": b""})
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("demo/payload.p7s", b"import os\n")
        archive.writestr("demo/run.jws", b"import os\n")
    return path


def contradicting_record(folder: Path) -> Path:
    """A wheel whose RECORD lists ``demo/a.py`` twice: first with a wrong hash, then with the
    right one (a reader where the last row wins accepts it)."""
    data = b"x = 1\n"
    files = {"demo/a.py": data}
    dist = "demo-1.0.dist-info"
    metadata = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"
    wheel_file = (b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                  b"Tag: py3-none-manylinux_2_17_x86_64\n")
    record = (f"{dist}/METADATA,sha256={_digest(metadata)},{len(metadata)}\n"
              f"{dist}/WHEEL,sha256={_digest(wheel_file)},{len(wheel_file)}\n"
              f"demo/a.py,sha256={_digest(b'other')},5\n"
              f"demo/a.py,sha256={_digest(data)},{len(data)}\n{dist}/RECORD,,\n")
    return wheel(folder, files, record=record)


def many_configs(folder: Path, count: int = 5, size: int = 15 << 20) -> Path:
    """``count`` shipped .cmake files of ``size`` bytes each (spaces: they deflate 1000x):
    files verify reads whole, more of them than it keeps."""
    return wheel(folder, {f"demo/cmake/part{index}.cmake": b" " * size
                          for index in range(count)})


def long_record(folder: Path, rows: int = 200_000) -> Path:
    """A RECORD listing ``rows`` files the wheel does not hold (one finding, not 200,000)."""
    path = wheel(folder, {"demo/__init__.py": b""})
    dist = "demo-1.0.dist-info"
    with zipfile.ZipFile(path) as archive:
        record = archive.read(f"{dist}/RECORD").decode()
    record += "".join(f"demo/ghost{index}.py,,\n" for index in range(rows))
    return wheel(folder, {"demo/__init__.py": b""}, record=record)


CASES = {
    "many-configs": many_configs,
    "long-record": long_record,
    "dense-dynsym": lambda folder: dense_dynsym_wheel(folder, 4_300_000),
    # just inside the readers' budget (500,000 symbols for the wheel), each name distinct
    "symbols-at-budget": lambda folder: dense_dynsym_wheel(folder, 245_000, distinct=True,
                                                           copies=2),
    "overlapping-names": lambda folder: wheel(
        folder, {"demo/lib/libnames.so": overlapping_names_elf(100_000)}),
    "local-name-differs": local_name_differs,
    "wrong-crc": wrong_crc,
    "invalid-utf8-name": invalid_utf8_name,
    "other-project-dist-info": other_project_dist_info,
    "other-version-dist-info": other_version_dist_info,
    "wheel-version-9": future_wheel_version,
    "long-component": long_component,
    "signature-elsewhere": signature_elsewhere,
    "contradicting-record": contradicting_record,
}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.verify.crafted FOLDER", file=sys.stderr)
        return 2
    root = Path(argv[0])
    for case, write in CASES.items():
        folder = root / case
        folder.mkdir(parents=True, exist_ok=True)
        print(f"{case}: {write(folder)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
