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
