"""The section table of release/binary/elf.py (``read_sections``), the one ELF reader: what
cuda/fatbin.py reads to find a library's fatbinary and a cubin's section names. Checked
against pyelftools on a real ELF, in place inside another buffer, and within the readers'
budget."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from cuda import fatbin
from release.binary import elf
from release.binary._view import Budget, ReadLimits, using
from release.errors import BinaryFormatError, LimitExceeded
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "cuda" / "fixtures"
_spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
assert _spec is not None and _spec.loader is not None
make_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixtures)


def _reference(data: bytes) -> list[tuple[str, int, int, int]]:
    found = []
    for section in ELFFile(io.BytesIO(data)).iter_sections():
        size = 0 if section["sh_type"] == "SHT_NOBITS" else section["sh_size"]
        found.append((section.name, section["sh_offset"], size, section.header["sh_type"]))
    return found


def _ours(data: bytes) -> list[tuple[str, int, int, int]]:
    return [(s.name, s.offset, s.size, s.kind) for s in elf.read_sections(data, where="x")]


def _kinds(rows: list[tuple[str, int, int, int]]) -> list[tuple[str, int, int]]:
    return [(name, offset, size) for name, offset, size, _kind in rows]


def test_every_section_of_a_real_elf_matches_pyelftools() -> None:
    """The interpreter running this test is a real ELF; every section is compared, none
    left out."""
    data = Path(sys.executable).resolve().read_bytes()
    ours = _ours(data)
    assert len(ours) > 20 and {".dynsym", ".text", ".shstrtab"} <= {row[0] for row in ours}
    assert _kinds(ours) == _kinds(_reference(data))


@pytest.mark.parametrize("name", sorted(make_fixtures.FIXTURES))
def test_the_fatbin_fixtures_match_pyelftools(name: str) -> None:
    data = make_fixtures.FIXTURES[name]
    assert _kinds(_ours(data)) == _kinds(_reference(data))


def test_a_cubin_is_read_in_place_inside_another_buffer() -> None:
    cubin = make_fixtures.cubin_payload(("relu", "gelu"))
    outer = b"\xaa" * 40 + cubin + b"\xbb" * 24
    with memoryview(outer) as whole, whole[40:40 + len(cubin)] as image:
        names = [section.name for section in elf.read_sections(image, where="cubin")]
    assert names == ["", ".text.relu", ".text.gelu", ".shstrtab"]


def test_section_named_finds_the_first_of_a_name() -> None:
    sections = elf.read_sections(make_fixtures.FIXTURES["complete.elf"], where="x")
    found = elf.section_named(sections, ".nv_fatbin")
    assert found is not None and found.offset == 64 and found.size > 0
    assert elf.section_named(sections, "__nv_relfatbin") is None


def test_the_section_table_is_paid_for_from_the_budget_in_force() -> None:
    data = make_fixtures.FIXTURES["complete.elf"]   # three section headers
    budget = Budget(ReadLimits(sections=5))
    with using(budget):
        elf.read_sections(data, where="first")
        assert budget.spent("sections") == 3
        with pytest.raises(LimitExceeded, match="second: section header table needs 3 "
                           "sections, over what is left"):
            elf.read_sections(data, where="second")


def test_a_cubin_past_the_budget_is_refused_not_called_unknown() -> None:
    """A cubin that cannot be read is 'not knowable' (None); one the budget refuses stops
    the read in one line instead of passing as unknown."""
    data = make_fixtures.container(make_fixtures.kernel_cubin(90))
    assert fatbin.read_containers(data)[0].entries[0].has_kernels is True
    with using(Budget(ReadLimits(sections=2))), pytest.raises(LimitExceeded):
        fatbin.read_containers(data)
    garbage = make_fixtures.container(make_fixtures.entry(make_fixtures.CUBIN, 90,
                                                          payload=b"\x7fELF" + bytes(60)))
    assert fatbin.read_containers(garbage)[0].entries[0].has_kernels is None


def test_errors_are_one_line_with_a_fix() -> None:
    data = bytearray(make_fixtures.FIXTURES["complete.elf"])
    data[0x28:0x30] = (1 << 40).to_bytes(8, "little")   # e_shoff far past the end
    with pytest.raises(BinaryFormatError) as caught:
        elf.read_sections(bytes(data), where="lib.so")
    assert caught.value.what.startswith("lib.so: section header table at offset 1099511627776")
    assert caught.value.fix and "\n" not in caught.value.message


# -- the bounds are checked per table; names are decoded on first use ----------------------

def _header_field(data: bytearray, index: int, field: int, value: int, size: int = 8) -> None:
    """Sets a field of section header ``index`` of an elf_with_section file (64-bit)."""
    shoff = int.from_bytes(data[0x28:0x30], "little")
    start = shoff + 64 * index + field
    data[start:start + size] = value.to_bytes(size, "little")


def test_contents_outside_the_file_are_refused_when_the_table_is_read() -> None:
    data = bytearray(make_fixtures.elf_with_section(".nv_fatbin", b"abcd"))
    _header_field(data, 1, 32, 1 << 20)   # sh_size of .nv_fatbin
    with pytest.raises(BinaryFormatError, match=r"^lib.so: section contents at offset 64 "
                       r"\(\+1048576 bytes\) lies outside the \d+-byte file"):
        elf.read_sections(bytes(data), where="lib.so")
    _header_field(data, 1, 4, elf.SHT_NOBITS, size=4)   # no bytes in the file: no bound
    assert elf.section_named(elf.read_sections(bytes(data), where="x"), ".nv_fatbin") == \
        elf.model.Section(".nv_fatbin", 64, 0, elf.SHT_NOBITS)


def test_a_name_outside_its_table_is_refused_before_any_name_is_asked_for() -> None:
    data = bytearray(make_fixtures.elf_with_section(".nv_fatbin", b"abcd"))
    _header_field(data, 1, 0, 1000, size=4)   # sh_name of .nv_fatbin
    with pytest.raises(BinaryFormatError, match="section name: string index 1000 is outside "
                       "its 22-byte table"):
        elf.read_sections(bytes(data), where="lib.so")


def test_an_unterminated_name_is_refused_before_any_name_is_asked_for() -> None:
    data = bytearray(make_fixtures.elf_with_section(".nv_fatbin", b"abcd"))
    _header_field(data, 2, 32, 21)   # the name table loses its last NUL (".shstrtab")
    with pytest.raises(BinaryFormatError, match="section name: string at index 12 is not "
                       "NUL-terminated"):
        elf.read_sections(bytes(data), where="lib.so")


def _named_elf(names: bytes, indexes: list[int]) -> bytes:
    """An ELF64 file whose sections are named by ``indexes`` into the name table ``names``,
    then the name table itself (named by index 14)."""
    import struct
    shoff = (64 + len(names) + 7) & ~7
    count = len(indexes) + 1
    header = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + bytes(9), 1, 62, 1,
                         0, 0, shoff, 0, 64, 0, 0, 64, count, count - 1)
    table = b"".join(struct.pack("<IIQQQQIIQQ", index, 1, 0, 0, 0, 0, 0, 0, 1, 0)
                     for index in indexes)
    table += struct.pack("<IIQQQQIIQQ", 14, 3, 0, 0, 64, len(names), 0, 0, 1, 0)
    body = header + names
    return body + bytes(shoff - len(body)) + table


@pytest.mark.parametrize("query", ["", ".text.", ".text.k", "text.k", ".rel", "\ufffd.t",
                                   "k\0", ".text.k\0x", "é"])
def test_named_and_starting_with_agree_with_the_decoded_names(query: str) -> None:
    """Compared as bytes: a name sharing another's tail (.text.k inside .rel.text.k), a
    name that is not UTF-8, one that is not ASCII, the empty name."""
    names = b"\0.rel.text.k\0\xff.text\0.text.kk\0\xc3\xa9\0"
    table = elf.read_sections(_named_elf(names, [0, 1, 5, 13, 20, 29]), where="x")
    decoded = list(table)
    assert [s.name for s in decoded] == ["", ".rel.text.k", ".text.k", "\ufffd.text",
                                         ".text.kk", "é", ".text"]
    assert list(table.starting_with(query)) == [s for s in decoded if s.name.startswith(query)]
    assert elf.section_named(table, query) == next((s for s in decoded if s.name == query),
                                                   None)
    assert table.names() == [s.name for s in decoded] and len(table) == len(decoded)
    assert table[-1] == decoded[-1] and list(table[1:3]) == decoded[1:3]
    assert table == tuple(decoded) and tuple(decoded) == table and table != decoded[:-1]
