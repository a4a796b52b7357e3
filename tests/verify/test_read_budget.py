"""Every reader pays for what it builds before it builds it: a budget too small for a file
refuses it with LimitExceeded (one line, nothing half-read), a budget that fits reads it,
and one budget spans every binary read with it (verify passes one per wheel)."""

from __future__ import annotations

import pytest

from release.binary import Budget, ReadLimits, read_binary_data
from release.errors import BinaryFormatError, LimitExceeded
from tests.verify import crafted
from tests.verify.macho_writer import macho
from tests.verify.pe_images import pe_image

_FILES = {
    "elf": lambda: crafted.dense_dynsym_elf(4),   # entry 0 and three symbols: four entries
    "macho": lambda: macho(exports=["a", "b", "c", "d"], signed=False),
    "pe": lambda: pe_image(exports=["a", "b", "c", "d"]),
}


@pytest.mark.parametrize("kind", sorted(_FILES))
def test_symbols_past_the_budget_are_refused(kind: str) -> None:
    data = _FILES[kind]()
    with pytest.raises(LimitExceeded, match=r"needs 4 symbols, over what is left \(3\)") as error:
        read_binary_data(data, where="lib", budget=Budget(ReadLimits(symbols=3)))
    assert isinstance(error.value, BinaryFormatError) and "\n" not in error.value.message
    assert read_binary_data(data, where="lib", budget=Budget(ReadLimits(symbols=4)))


@pytest.mark.parametrize("kind", sorted(_FILES))
def test_sections_past_the_budget_are_refused(kind: str) -> None:
    with pytest.raises(LimitExceeded, match="sections"):
        read_binary_data(_FILES[kind](), where="lib", budget=Budget(ReadLimits(sections=0)))


def test_one_budget_spans_every_binary_read_with_it() -> None:
    budget = Budget(ReadLimits(symbols=6))
    read_binary_data(crafted.dense_dynsym_elf(4), where="first", budget=budget)
    assert budget.spent("symbols") == 4
    with pytest.raises(LimitExceeded, match=r"second: .* over what is left \(2\)"):
        read_binary_data(crafted.dense_dynsym_elf(4), where="second", budget=budget)


def test_names_are_paid_by_the_bytes_decoded() -> None:
    """Symbols named by successive offsets into one run: each decoded name is paid for."""
    data = crafted.overlapping_names_elf(2000, run=4096)
    with pytest.raises(LimitExceeded, match="bytes of symbol names"):
        read_binary_data(data, where="lib", budget=Budget(ReadLimits(names=1 << 20)))
    info = read_binary_data(data, where="lib", budget=Budget(ReadLimits(names=16 << 20)))
    assert len(info.dynamic_symbols) == 1999


def test_string_tables_are_paid_by_their_bytes() -> None:
    with pytest.raises(LimitExceeded, match="bytes"):
        read_binary_data(crafted.dense_dynsym_elf(4), where="lib",
                         budget=Budget(ReadLimits(bytes=8)))
