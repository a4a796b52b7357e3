"""Bounded fuzzing of the ELF and PE readers and the wheel reader (hypothesis, a few seconds each):
any input ends in a result or in BinaryFormatError / WheelError, never anything else."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from release.binary import read_binary_data
from release.binary.model import BinaryInfo
from release.errors import BinaryFormatError, WheelError
from release.verify import verify_wheel
from tests.verify import fuzz_properties
from tests.verify.pe_images import pe_image

_SEED = min((Path(p) for p in ("/lib/x86_64-linux-gnu/libz.so.1",
                               "/lib/x86_64-linux-gnu/libgcc_s.so.1") if Path(p).exists()),
            key=lambda p: p.stat().st_size).read_bytes()
_BUDGET = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                   suppress_health_check=[HealthCheck.too_slow])


def _read_or_refuse(data: bytes) -> None:
    """The property: a BinaryFormatError naming where it failed, or a model consistent with
    the bytes: reading again gives the same model, its size is the file's, every section lies
    inside the file, and every library name it reports is spelled in the file (the pieces
    between replacement characters, where the bytes were not UTF-8)."""
    try:
        info = read_binary_data(data, where="fuzz")
    except BinaryFormatError as error:
        assert error.what.startswith("fuzz") and "\n" not in error.what, error.what
        return
    assert isinstance(info, BinaryInfo) and info.size == len(data)
    assert read_binary_data(data, where="fuzz") == info
    for section in info.sections:
        assert 0 <= section.offset and section.offset + section.size <= len(data), section
    for name in (*info.needed, *info.delay_needed, info.soname, *info.rpath, *info.runpath):
        assert all(piece.encode() in data for piece in name.split("\ufffd")), name


@_BUDGET
@given(st.lists(st.tuples(st.integers(0, len(_SEED) - 1), st.integers(0, 255)), max_size=16),
       st.integers(0, len(_SEED)))
def test_elf_reader_mutations(edits: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(_SEED)
    for position, value in edits:
        data[position] = value
    _read_or_refuse(bytes(data[: max(cut, 16)]))


@_BUDGET
@given(st.binary(min_size=0, max_size=512))
def test_elf_reader_garbage(tail: bytes) -> None:
    _read_or_refuse(b"\x7fELF\x02\x01\x01" + tail)


_PE_SEED = pe_image(imports=["KERNEL32.dll", "python311.dll"], delayed=["nvcuda.dll"],
                    exports=["PyInit_demo", "helper"], long_section="edgert_reg")


@_BUDGET
@given(st.lists(st.tuples(st.integers(0, len(_PE_SEED) - 1), st.integers(0, 255)),
                max_size=16), st.integers(0, len(_PE_SEED)))
def test_pe_reader_mutations(edits: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(_PE_SEED)
    for position, value in edits:
        data[position] = value
    _read_or_refuse(bytes(data[: max(cut, 16)]))


@_BUDGET
@given(st.lists(st.tuples(st.integers(0x3C, 0x400), st.integers(0, 255)), min_size=1,
                max_size=12))
def test_pe_reader_header_mutations(edits: list[tuple[int, int]]) -> None:
    """Edits aimed at the headers, section table and data directories."""
    data = bytearray(_PE_SEED)
    for position, value in edits:
        data[position] = value
    _read_or_refuse(bytes(data))


def test_pe_section_names_in_errors_are_one_line() -> None:
    """Found by the long PE run: a section name holding a newline, in the error about its
    data lying outside the file, split the one-line error in two."""
    data = bytearray(_PE_SEED)
    table = 0x40 + 24 + 240
    data[table:table + 8] = b".r\nd\x1bta\0"
    data[table + 20:table + 24] = (1 << 24).to_bytes(4, "little")   # raw data far outside
    with pytest.raises(BinaryFormatError) as caught:
        read_binary_data(bytes(data), where="fuzz")
    assert "section .r\\nd\\x1bta at offset" in caught.value.what, caught.value.what


@_BUDGET
@given(st.binary(min_size=0, max_size=512))
def test_pe_reader_garbage(tail: bytes) -> None:
    _read_or_refuse(b"MZ" + tail)


def _wheel_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("demo-1.0.dist-info/METADATA", "Name: demo\nVersion: 1.0\n")
        archive.writestr("demo-1.0.dist-info/WHEEL", "Tag: py3-none-any\n")
        archive.writestr("demo/lib.so", _SEED[:4096])
        archive.writestr("demo-1.0.dist-info/RECORD", "demo/lib.so,,\n")
    return buffer.getvalue()


@settings(max_examples=120, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1,
                max_size=8))
def test_wheel_reader_mutations(tmp_path: Path, edits: list[tuple[int, int]]) -> None:
    data = bytearray(_wheel_bytes())
    for position, value in edits:
        data[position % len(data)] = value
    path = tmp_path / "fuzz.whl"
    path.write_bytes(bytes(data))
    try:
        report = verify_wheel(path, static=True)
    except WheelError as error:
        assert error.what and error.fix, "a refusal says what and how to fix it"
    else:
        assert all(finding.check and finding.what for finding in report.findings)


_TEXT = settings(max_examples=300, deadline=None, derandomize=True, database=None)
_RECORD_PIECES = st.sampled_from(["demo/a.py", ",", "sha256=", "AAAA", "12", "\r", "\n", "\r\n",
                                  '"', "\0", "0", "-1", "md5=x", "", "\u2028"])


@_TEXT
@given(st.lists(_RECORD_PIECES, max_size=40).map("".join))
def test_record_parser(text: str) -> None:
    fuzz_properties.record_property(text)


@_TEXT
@given(st.text(max_size=400))
def test_record_parser_on_any_text(text: str) -> None:
    fuzz_properties.record_property(text)


@_TEXT
@given(st.text(max_size=400))
def test_metadata_and_wheel_parsers(text: str) -> None:
    fuzz_properties.metadata_property(text)


_NAME_PIECES = st.sampled_from(["demo", "/", "//", ".", "..", "\\", "demo-1.0.data",
                                "purelib", "platlib", "scripts", "canary", "x.so", "\0", "C:"])


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_NAME_PIECES, min_size=1, max_size=6).map("".join), min_size=1,
                max_size=4))
def test_member_names_never_escape(tmp_path: Path, names: list[str]) -> None:
    # absolute names aim at the canary folder beside the scratch folder
    aimed = [name.replace("canary", str(tmp_path / "canary").lstrip("/")) for name in names]
    fuzz_properties.names_property(aimed, tmp_path)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6))
def test_repair_gate_and_verify_agree(tmp_path: Path, edits: list[tuple[int, int]]) -> None:
    data = bytearray(fuzz_properties.repair_seed())
    for position, value in edits:
        data[position % len(data)] = value
    fuzz_properties.repair_gate_property(bytes(data), tmp_path)


def test_names_with_control_characters_stay_one_line(tmp_path: Path) -> None:
    """Found by the long repair run: a member name holding a newline split the one-line
    error. Such names are refused before anything is unpacked (no installer writes them
    alike), and the refusal writes them as escapes on one line, as does the error about a
    missing local header."""
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    path.write_bytes(fuzz_properties.names_wheel(["demo/a\nb.py", "demo/\x1b[31mred.py"]))
    with pytest.raises(WheelError) as refused:
        verify_wheel(path, static=True)
    assert "demo/a\\nb.py" in refused.value.message
    assert "demo/\\x1b[31mred.py" in refused.value.message
    assert "\n" not in refused.value.message and "\x1b" not in refused.value.message
    data = bytearray(path.read_bytes())
    local = data.find(b"demo/a\nb.py")               # the local header's copy of the name
    data[local - 30:local - 26] = b"XXXX"            # its signature: no valid local header
    path.write_bytes(bytes(data))
    with pytest.raises(WheelError) as caught:
        verify_wheel(path, static=True)
    assert "demo/a\\nb.py" in caught.value.message and "\n" not in caught.value.message
