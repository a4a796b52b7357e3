"""The Mach-O reader on synthetic files (tests/verify/macho_writer.py): thin and fat files,
the load commands verify uses, the symbol table; and bounded fuzzing: truncated and mutated
copies end in a result or a one-line BinaryFormatError, never anything else."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from release.binary import Budget, ReadLimits, is_binary, read_binary, read_binary_data
from release.binary.macho import MachOReader
from release.binary.model import HIDDEN, WEAK, BinaryInfo
from release.errors import BinaryFormatError, LimitExceeded
from tests.verify.macho_writer import fat, macho

_LIBRARY = macho(install_name="@rpath/libdemo.1.dylib",
                 loads=["@rpath/libdep.dylib", "@loader_path/../.dylibs/libz.1.dylib",
                        "/usr/lib/libSystem.B.dylib"],
                 weak=["@rpath/sub/libopt.dylib"], reexports=["/usr/lib/libc++.1.dylib"],
                 rpaths=["@loader_path", "@loader_path/../lib"], minos=(12, 3),
                 exports=["demo_run", "_ZN4demo3runEv"], hidden=["demo_internal"],
                 weak_exports=["demo_weak"], imports=["malloc"])


def test_reads_a_thin_library() -> None:
    info = read_binary_data(_LIBRARY, where="libdemo.dylib")
    assert (info.format, info.machine, info.bits, info.file_type) == \
        ("macho", "arm64", 64, "shared")
    assert info.soname == "@rpath/libdemo.1.dylib"
    assert info.needed_paths == ("@rpath/libdep.dylib", "@loader_path/../.dylibs/libz.1.dylib",
                                 "/usr/lib/libSystem.B.dylib", "@rpath/sub/libopt.dylib",
                                 "/usr/lib/libc++.1.dylib")
    assert info.needed == ("libdep.dylib", "libz.1.dylib", "/usr/lib/libSystem.B.dylib",
                           "/usr/lib/libc++.1.dylib")   # not the weak @rpath/sub/libopt.dylib
    assert info.runpath == ("@loader_path", "@loader_path/../lib") and info.rpath == ()
    assert info.required_versions == ("macOS-arm64_12.3",)
    assert info.unsigned == () and info.bad_signatures == () and info.architectures == ()
    assert info.section("__TEXT,__text") is not None


def test_symbols_lose_the_leading_underscore() -> None:
    symbols = {s.name: s for s in read_binary_data(_LIBRARY, where="x").dynamic_symbols}
    assert symbols["demo_run"].exported and symbols["demo_run"].kind == "func"
    assert symbols["_ZN4demo3runEv"].exported          # "__ZN..." in the file
    assert symbols["demo_weak"].binding == WEAK and not symbols["demo_weak"].exported
    # a private extern is this image's own, as a hidden ELF symbol: not a dynamic symbol
    assert "demo_internal" not in symbols
    assert not symbols["malloc"].defined
    static = {s.name: s for s in read_binary_data(_LIBRARY, where="x",
                                                  static_symbols=True).symbols}
    assert static["demo_internal"].visibility == HIDDEN and not static["demo_internal"].exported


def test_an_extension_module_is_a_bundle_exporting_pyinit() -> None:
    info = read_binary_data(macho(arch="x86_64", kind="bundle", exports=["PyInit__demo"],
                                  minos=(10, 9), old_minos=True, signed=False), where="x")
    assert (info.machine, info.file_type, info.unsigned) == ("x86_64", "bundle", ("x86_64",))
    assert info.required_versions == ("macOS-x86-64_10.9",)   # LC_VERSION_MIN_MACOSX
    assert any(s.name == "PyInit__demo" and s.exported for s in info.dynamic_symbols)


def test_static_symbols_only_when_asked() -> None:
    info = read_binary_data(_LIBRARY, where="x", static_symbols=True)
    assert {s.name for s in info.symbols} >= {"demo_run", "demo_internal", "malloc"}
    assert read_binary_data(_LIBRARY, where="x").symbols == ()


def test_a_fat_file_is_the_union_of_its_slices() -> None:
    data = fat([("x86_64", macho(arch="x86_64", loads=["@rpath/liba.dylib"], minos=(10, 9),
                                 exports=["both", "intel_only"])),
                ("arm64", macho(arch="arm64", loads=["@rpath/liba.dylib", "@rpath/libb.dylib"],
                                exports=["both"]))])
    info = read_binary_data(data, where="universal.dylib")
    assert info.machine == "universal2" and info.architectures == ("x86_64", "arm64")
    assert info.needed == ("liba.dylib", "libb.dylib")
    assert sorted(info.required_versions) == ["macOS-arm64_11.0", "macOS-x86-64_10.9"]
    assert sorted(s.name for s in info.dynamic_symbols) == ["both", "intel_only"]
    single = read_binary_data(fat([("arm64", macho())]), where="x")
    assert single.machine == "arm64" and single.architectures == ("arm64",)


def test_magic_recognition() -> None:
    assert is_binary(_LIBRARY[:16]) and is_binary(fat([("arm64", macho())])[:16])
    java = b"\xca\xfe\xba\xbe\x00\x00\x00\x34" + b"\0" * 8   # a Java class file, version 52
    assert not MachOReader().matches(java)


def test_read_binary_on_a_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "libdemo.dylib"
    path.write_bytes(_LIBRARY)
    assert read_binary(path).soname == "@rpath/libdemo.1.dylib"


@pytest.mark.parametrize("cut", [4, 20, 40, 200, len(_LIBRARY) - 20])
def test_truncated_files_are_refused_in_one_line(cut: int) -> None:
    with pytest.raises(BinaryFormatError) as refused:
        read_binary_data(_LIBRARY[:cut], where="cut.dylib")
    assert refused.value.what.startswith("cut.dylib: ") and "\n" not in refused.value.what


def test_an_error_naming_a_corrupt_section_stays_one_line() -> None:
    data = bytearray(_LIBRARY)
    name = data.find(b"__text\0")
    data[name + 4] = ord("\n")                                   # "__te\nt"
    data[name + 40:name + 48] = (10**6).to_bytes(8, "little")    # its size: past the end
    with pytest.raises(BinaryFormatError, match=r"section __TEXT,__te\\nt") as refused:
        read_binary_data(bytes(data), where="x")
    assert "\n" not in refused.value.what


def test_a_fat_slice_past_the_end_is_refused() -> None:
    data = bytearray(fat([("arm64", macho())]))
    data[16:20] = (10**6).to_bytes(4, "big")      # the slice's offset
    with pytest.raises(BinaryFormatError, match="fat slice"):
        read_binary_data(bytes(data), where="x")


_BUDGET = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
_FAT = fat([("x86_64", macho(arch="x86_64", loads=["@rpath/liba.dylib"])), ("arm64", _LIBRARY)])


def _read_or_refuse(data: bytes) -> None:
    try:
        info = read_binary_data(data, where="fuzz")
    except BinaryFormatError as error:
        assert error.what.startswith("fuzz") and "\n" not in error.what, error.what
    else:
        assert isinstance(info, BinaryInfo) and len(info.needed) <= len(data)


@_BUDGET
@given(st.sampled_from([_LIBRARY, _FAT]),
       st.lists(st.tuples(st.integers(0, len(_FAT) - 1), st.integers(0, 255)), max_size=16),
       st.integers(0, len(_FAT)))
def test_macho_reader_mutations(seed: bytes, edits: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(seed)
    for position, value in edits:
        data[position % len(data)] = value
    _read_or_refuse(bytes(data[: max(cut, 16)]))


@_BUDGET
@given(st.sampled_from([b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe",
                        b"\xca\xfe\xba\xbe\x00\x00\x00\x02", b"\xca\xfe\xba\xbf\x00\x00\x00\x01"]),
       st.binary(min_size=0, max_size=512))
def test_macho_reader_garbage(magic: bytes, tail: bytes) -> None:
    _read_or_refuse(magic + tail)


def test_the_namespace_the_image_was_linked_for() -> None:
    assert read_binary_data(macho(), where="two-level").two_level_namespace
    assert not read_binary_data(macho(flat=True), where="flat").two_level_namespace


def test_a_developer_signature_names_its_team() -> None:
    signed = read_binary_data(macho(team="ABCDE12345"), where="vendor")
    assert signed.vendor == "ABCDE12345" and not signed.bad_signatures
    assert read_binary_data(macho(), where="ad hoc").vendor == ""


def test_local_symbols_are_neither_read_nor_paid_for_when_lc_dysymtab_locates_them() -> None:
    """A library's many local symbols (LC_DYSYMTAB puts them first): the dynamic symbols are
    read from the external range only, so a budget of a few symbols is enough."""
    data = macho(local=[f"local_{index}" for index in range(1000)], exports=["run"],
                 imports=["malloc"], dysymtab=True)
    info = read_binary_data(data, where="x", budget=Budget(ReadLimits(symbols=10)))
    assert sorted(s.name for s in info.dynamic_symbols) == ["malloc", "run"]
    with pytest.raises(LimitExceeded):   # all 1002 symbols
        read_binary_data(data, where="x", static_symbols=True,
                         budget=Budget(ReadLimits(symbols=10)))
    assert len(read_binary_data(data, where="x", static_symbols=True).symbols) == 1002
