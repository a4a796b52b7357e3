"""The PE reader on images built here (tests/verify/pe_images.py) and on a large real DLL
from the Windows corpus (marked ``index``: downloaded once into the tool cache)."""

from __future__ import annotations

import struct
import zipfile

import pytest

from release.binary import Budget, is_binary, read_binary, read_binary_data
from release.binary.model import GLOBAL
from release.binary.pe import PeReader
from release.errors import BinaryFormatError
from tests.verify import corpus
from tests.verify.pe_images import ARM64, EXECUTABLE, GUI, I386, pe_image


def test_a_dll_with_imports_delay_loads_and_exports() -> None:
    data = pe_image(imports=["KERNEL32.dll", "python311.dll", "KERNEL32.dll"],
                    delayed=["nvcuda.dll"], exports=["PyInit_demo", "helper"])
    info = read_binary_data(data, where="demo.pyd")
    assert (info.format, info.machine, info.bits, info.file_type, info.subsystem) == \
        ("pe", "x86_64", 64, "shared", "windows_cui")
    assert info.needed == ("KERNEL32.dll", "python311.dll")   # once each, in order
    assert info.delay_needed == ("nvcuda.dll",)
    assert (info.soname, info.rpath, info.runpath) == ("", (), ())
    assert {(s.name, s.binding, s.defined, s.exported) for s in info.dynamic_symbols} == \
        {("PyInit_demo", GLOBAL, True, True), ("helper", GLOBAL, True, True)}
    assert all(s.kind == "func" for s in info.dynamic_symbols)   # they point into .text


def test_machines_programs_and_pe32() -> None:
    assert read_binary_data(pe_image(machine=ARM64), where="a").machine == "aarch64"
    program = read_binary_data(pe_image(machine=I386, bits=32, characteristics=EXECUTABLE,
                                        subsystem=GUI, imports=["user32.dll"]), where="p")
    assert (program.machine, program.bits, program.file_type, program.subsystem,
            program.needed) == ("x86", 32, "executable", "windows_gui", ("user32.dll",))


def test_long_section_names_and_section_bytes() -> None:
    data = pe_image(long_section="edgert_reg")
    info = read_binary_data(data, where="x", sections=["edgert_reg"])
    assert info.section("edgert_reg") is not None
    assert info.section_data["edgert_reg"] == b"edgert_reg"


def test_dispatch_by_magic(tmp_path) -> None:
    data = pe_image(imports=["kernel32.dll"])
    assert is_binary(data[:16]) and PeReader().matches(data[:16])
    path = tmp_path / "demo.dll"
    path.write_bytes(data)
    assert read_binary(path).needed == ("kernel32.dll",)


@pytest.mark.parametrize("cut", [2, 0x3C, 0x44, 0x60, 0x150, 0x400, 0x500])
def test_truncated_images_are_refused_in_one_line(cut: int) -> None:
    data = pe_image(imports=["KERNEL32.dll"], exports=["PyInit_demo"])
    with pytest.raises(BinaryFormatError) as refused:
        read_binary_data(data[:cut], where="cut.dll")
    assert refused.value.what.startswith("cut.dll: ") and "\n" not in refused.value.what


def _patched(data: bytes, offset: int, layout: str, value: int) -> bytes:
    changed = bytearray(data)
    struct.pack_into(layout, changed, offset, value)
    return bytes(changed)


@pytest.mark.parametrize("offset,layout,value,words", [
    (0x3C, "<I", 0x7FFFFFF0, "implausible"),                 # e_lfanew far away
    (0x40, "<I", 0, "no PE signature"),                       # a DOS program
    (0x58, "<H", 0x999, "optional header magic"),             # neither PE32 nor PE32+
    (0x54, "<H", 0, "no optional header"),                    # an object file
    (0x46, "<H", 0xFFFF, "section table"),                    # too many sections
    (0xD0, "<I", 0x7777777, "lies in no section"),            # import RVA outside
])
def test_corrupt_headers_are_refused(offset: int, layout: str, value: int,
                                     words: str) -> None:
    data = _patched(pe_image(imports=["KERNEL32.dll"]), offset, layout, value)
    with pytest.raises(BinaryFormatError, match=words):
        read_binary_data(data, where="bad.dll")


@pytest.mark.index
def test_a_real_large_dll_is_read_in_one_pass() -> None:
    """numpy's bundled OpenBLAS (20 MB, ~9500 exports), from the Windows corpus (downloaded
    into the tool cache by the corpus helper when missing). The work is bounded by counts,
    not by a clock: the readers' budget records every export read once, each name's bytes
    once, each section once, and directory records linear in the exports."""
    wheel = corpus.wheel("corpus-windows", "numpy")
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if "openblas" in n and n.endswith(".dll"))
        data = archive.read(name)
    budget = Budget()
    info = read_binary_data(data, where=name, budget=budget)
    assert info.machine == "x86_64" and info.file_type == "shared"
    exports = info.dynamic_symbols
    assert len(exports) > 1000 and all(s.exported for s in exports)
    assert "KERNEL32.dll" in info.needed
    assert budget.spent("symbols") == len(exports)
    assert budget.spent("names") == sum(len(s.name.encode()) + 1 for s in exports)
    assert budget.spent("sections") == len(info.sections)
    assert budget.spent("records") <= 3 * len(exports)


def test_the_version_resource_names_the_vendor() -> None:
    info = PeReader().read(pe_image(company="Microsoft Corporation"), where="msvcp140.dll")
    assert info.vendor == "Microsoft Corporation"
    assert PeReader().read(pe_image(), where="ours.dll").vendor == ""
