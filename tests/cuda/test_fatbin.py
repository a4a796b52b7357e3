"""The fatbinary reader on generated fixtures (tests/cuda/fixtures/make_fixtures.py)."""

from __future__ import annotations

import importlib.util
import random
import struct
from pathlib import Path

import pytest

from cuda import fatbin
from cuda.fatbin import EntryKind
from release.errors import BinaryFormatError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
_spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
assert _spec is not None and _spec.loader is not None
make_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixtures)


def read(name: str) -> fatbin.DeviceCode:
    return fatbin.read_device_code(FIXTURES / name, name=name)


def test_fixture_files_match_their_generator() -> None:
    for name, data in make_fixtures.FIXTURES.items():
        assert (FIXTURES / name).read_bytes() == data, f"rerun make_fixtures.py ({name})"


def test_entries_kinds_architectures_and_versions() -> None:
    code = read("complete.elf")
    assert code.section == ".nv_fatbin"
    assert [entry.name for entry in code.entries] == [
        "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "compute_90"]
    ptx = code.entries[-1]
    assert ptx.kind is EntryKind.PTX and ptx.version == (8, 8) and ptx.sm == 90
    assert code.entries[0].kind is EntryKind.CUBIN and code.entries[0].version == (1, 8)
    offsets = [entry.offset for entry in code.entries]
    assert offsets[0] == 16 and offsets == sorted(offsets)


def test_arch_and_family_suffixes() -> None:
    (arch,) = read("arch_specific.elf").entries
    (family,) = read("family_specific.elf").entries
    assert (arch.name, arch.arch_specific, arch.family_specific) == ("sm_100a", True, False)
    assert (family.name, family.arch_specific, family.family_specific) == ("sm_100f", False, True)


def test_compressed_entries_are_read_from_headers() -> None:
    cubin, ptx = read("compressed.elf").entries
    assert (cubin.compression, cubin.payload_size, cubin.uncompressed_size) == ("lz4", 40, 4096)
    assert (ptx.compression, ptx.header_size, ptx.uncompressed_size) == ("zstd", 80, 900)
    assert cubin.has_kernels is None  # not knowable without decompressing


def test_several_containers_and_the_kernel_less_dlink_container() -> None:
    dlink, kernels = read("with_dlink.elf").containers
    assert kernels.offset % 8 == 0 and kernels.offset > dlink.offset
    assert dlink.has_kernels is False and kernels.has_kernels is True


def test_file_without_device_code() -> None:
    code = read("no_device_code.elf")
    assert code.section == "" and code.containers == ()


@pytest.mark.parametrize(("name", "message"), [
    ("truncated.elf", "runs past the end of the section at offset 0x0"),
    ("bad_magic.elf", "bad magic 0xdeadbeef"),
    ("oversized_entry.elf", "payload size 1099511627776 runs past its container at offset 0x10"),
    ("oversized_container.elf", "runs past the end of the section"),
    ("zero_header.elf", "entry header size 0 is invalid"),
])
def test_malformed_fatbins_raise_a_clear_error(name: str, message: str) -> None:
    with pytest.raises(BinaryFormatError) as error:
        read(name)
    assert message in str(error.value) and name in str(error.value)


def test_truncated_elf_is_a_format_error(tmp_path: Path) -> None:
    data = (FIXTURES / "complete.elf").read_bytes()
    broken = tmp_path / "cut.so"
    broken.write_bytes(data[: len(data) - 100])
    # the project's one ELF reader (release/binary/elf.py) words the errors
    with pytest.raises(BinaryFormatError, match=r"section header table at offset \d+ "
                       r"\(\+\d+ bytes\) lies outside the \d+-byte file") as caught:
        fatbin.read_device_code(broken)
    assert str(broken) in caught.value.what and caught.value.fix
    assert "\n" not in caught.value.message
    broken.write_bytes(b"MZ" + bytes(100))
    with pytest.raises(BinaryFormatError, match="not an ELF file"):
        fatbin.read_device_code(broken)
    broken.write_bytes(b"")
    with pytest.raises(BinaryFormatError, match="ELF identification .* lies outside the "
                       "0-byte file"):
        fatbin.read_device_code(broken)


def test_random_corruption_never_crashes() -> None:
    good = make_fixtures.container(make_fixtures.kernel_cubin(90), make_fixtures.ptx(90, (8, 8)))
    generator = random.Random(1234)
    for _ in range(3000):
        data = bytearray(good)
        for _ in range(generator.randint(1, 6)):
            data[generator.randrange(len(data))] = generator.randrange(256)
        data = data[: generator.randint(0, len(data))]
        try:
            containers = fatbin.read_containers(bytes(data))
        except BinaryFormatError:
            continue
        for container in containers:
            assert container.header_size + container.size <= len(data)


def test_zero_padding_between_containers_is_skipped() -> None:
    one = make_fixtures.container(make_fixtures.kernel_cubin(80))
    two = make_fixtures.container(make_fixtures.kernel_cubin(90))
    containers = fatbin.read_containers(one + bytes(24) + two + bytes(8))
    assert [container.offset for container in containers] == [0, len(one) + 24]
    assert struct.unpack_from("<I", two)[0] == fatbin.CONTAINER_MAGIC
