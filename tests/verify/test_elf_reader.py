"""The ELF reader against pyelftools on real system libraries, and on hostile input."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

from release.binary import read_binary, read_binary_data
from release.binary.model import BinaryInfo
from release.errors import BinaryFormatError

SYSTEM = [Path(p) for p in ("/lib/x86_64-linux-gnu/libstdc++.so.6",
                            "/lib/x86_64-linux-gnu/libz.so.1",
                            "/lib/x86_64-linux-gnu/libm.so.6",
                            "/lib/x86_64-linux-gnu/libgcc_s.so.1")]
SYSTEM = [path for path in SYSTEM if path.exists()]


def _reference(path: Path) -> dict[str, object]:
    with path.open("rb") as handle:
        elf = ELFFile(handle)
        dynamic = next(s for s in elf.iter_sections() if isinstance(s, DynamicSection))
        tags = [(tag.entry.d_tag, tag) for tag in dynamic.iter_tags()]
        dynsym = elf.get_section_by_name(".dynsym")
        symbols = [(s.name, s["st_info"]["bind"], s["st_shndx"] != "SHN_UNDEF")
                   for s in dynsym.iter_symbols()][1:]
        versions = []
        for section in elf.iter_sections():
            if isinstance(section, GNUVerNeedSection):
                for _need, auxes in section.iter_versions():
                    versions += [aux.name for aux in auxes]
        return {
            "machine": elf["e_machine"],
            "needed": [t.needed for kind, t in tags if kind == "DT_NEEDED"],
            "soname": next((t.soname for kind, t in tags if kind == "DT_SONAME"), ""),
            "symbols": symbols, "versions": versions,
            "sections": [(s.name, s["sh_offset"], s["sh_size"], s["sh_type"])
                         for s in elf.iter_sections()],
        }


@pytest.mark.parametrize("path", SYSTEM, ids=[p.name for p in SYSTEM])
def test_matches_pyelftools(path: Path) -> None:
    info = read_binary(path)
    expected = _reference(path)
    assert info.machine == "x86_64" and expected["machine"] == "EM_X86_64"
    assert list(info.needed) == expected["needed"]
    assert info.soname == expected["soname"]
    binding = {"STB_GLOBAL": "global", "STB_WEAK": "weak", "STB_LOCAL": "local",
               "STB_GNU_UNIQUE": "unique", "STB_LOOS": "unique"}
    assert [(s.name, s.binding, s.defined) for s in info.dynamic_symbols] == [
        (name, binding[bind], defined) for name, bind, defined in expected["symbols"]]
    assert list(info.required_versions) == expected["versions"]
    # Every section pyelftools lists, in order, with its offset; the one documented difference
    # (release/binary/model.py, Section.size): a section without file contents (SHT_NOBITS,
    # .bss and .tbss) has size 0 here, as it occupies no bytes of the file.
    assert [(s.name, s.offset, s.size) for s in info.sections] == [
        (name, offset, 0 if kind == "SHT_NOBITS" else size)
        for name, offset, size, kind in expected["sections"]]
    assert any(kind == "SHT_NOBITS" for *_rest, kind in expected["sections"])


def test_system_files_exist() -> None:
    assert len(SYSTEM) >= 3, "expected the usual x86_64 system libraries"


def test_symbol_versions_of_libstdcxx_imports() -> None:
    info = read_binary(SYSTEM[0])
    imported = [s for s in info.dynamic_symbols if not s.defined and s.version]
    assert imported and all(s.version.startswith(("GLIBC_", "GCC_", "CXXABI", "GLIBCXX"))
                            for s in imported)
    assert any(s.exported and s.version.startswith("GLIBCXX_") for s in info.dynamic_symbols)


def _small_elf() -> bytes:
    return min(SYSTEM, key=lambda p: p.stat().st_size).read_bytes()


def test_every_truncation_raises_only_binary_format_error() -> None:
    data = _small_elf()
    lengths = list(range(0, 4096)) + list(range(4096, len(data), 7))
    failures = 0
    for length in lengths:
        try:
            read_binary_data(data[:length], where="truncated")
        except BinaryFormatError as error:
            assert "truncated" in error.what
            failures += 1
    assert failures >= len(lengths) - 1  # only the complete file (if listed) may parse


def test_random_garbage_and_bit_flips() -> None:
    """Each mutated file is refused with a one-line BinaryFormatError naming it, or parses
    into a model consistent with its bytes; both outcomes occur among the 400 mutations."""
    rng = random.Random(1234)
    data = bytearray(_small_elf())
    parsed = refused = 0
    for _ in range(400):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            position = rng.randrange(0, min(len(mutated), 8192)) if rng.random() < 0.8 else \
                rng.randrange(len(mutated) - 4096, len(mutated))
            mutated[position] = rng.randrange(256)
        try:
            info = read_binary_data(bytes(mutated), where="mutated")
        except BinaryFormatError as error:
            assert error.what.startswith("mutated") and "\n" not in error.what, error.what
            refused += 1
        else:
            _assert_consistent(info, bytes(mutated))
            parsed += 1
    assert parsed > 0 and refused > 0, (parsed, refused)
    for size in (0, 3, 16, 64, 1000):
        with pytest.raises(BinaryFormatError):
            read_binary_data(b"\x7fELF" + bytes(rng.randrange(256) for _ in range(size)),
                             where="garbage")


def _assert_consistent(info: BinaryInfo, data: bytes) -> None:
    """What a model read from ``data`` must satisfy: the file's size, sections inside the
    file, every needed library and the soname spelled in the file's bytes."""
    assert info.format == "elf" and info.size == len(data)
    for section in info.sections:
        assert 0 <= section.offset and section.offset + section.size <= len(data), section
    for name in (*info.needed, info.soname):
        assert all(piece.encode() in data for piece in name.split("\ufffd")), name


def test_huge_section_count_is_rejected_quickly() -> None:
    data = bytearray(_small_elf())
    struct.pack_into("<H", data, 0x3C, 0xFFFF)   # e_shnum
    with pytest.raises(BinaryFormatError, match="section header"):
        read_binary_data(bytes(data), where="huge count")


def test_section_offset_past_end_is_rejected() -> None:
    data = bytearray(_small_elf())
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    struct.pack_into("<Q", data, shoff + 64 + 0x18, len(data) * 4)  # section 1 sh_offset
    with pytest.raises(BinaryFormatError, match="outside"):
        read_binary_data(bytes(data), where="bad offset")


def test_not_an_elf_file(tmp_path: Path) -> None:
    path = tmp_path / "text.so"
    path.write_text("not a binary")
    with pytest.raises(BinaryFormatError, match="not a binary format"):
        read_binary(path)
    with pytest.raises(BinaryFormatError, match="cannot read"):
        read_binary(tmp_path / "missing.so")
