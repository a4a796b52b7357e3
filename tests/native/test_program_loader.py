"""The program format: writer/loader agreement, and hostile bytes rejected cleanly."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import MLP_MODEL, NATIVE, NativeInstall

sys.path.insert(0, str(NATIVE / "python"))
from edgert import export  # noqa: E402  (pure Python: no extension needed)

ALL_DTYPES = ["float32", "int8", "uint8", "int32", "int64"]


# One attribute of every kind the format has (int, float, string, int list, float list).
ATTRIBUTES = {
    "i": -7,
    "f": 0.25,
    "s": "héllo",
    "ints": [1, -2, 3],
    "floats": [0.5, -1.5],
    "empty": [],
}


def constants_program() -> tuple[bytes, list[np.ndarray]]:
    """One constant of every dtype routed straight to the outputs, plus a node carrying
    every attribute kind (ignored by relu, but the loader must consume it exactly)."""
    builder = export.ProgramBuilder()
    x = builder.input("float32", (2, -1))
    builder.output(builder.op("edgert::relu", [x], ATTRIBUTES))
    arrays = [(np.arange(24).reshape(2, 3, 4) - 5).astype(dtype) for dtype in ALL_DTYPES]
    arrays.append(np.zeros((0, 3), np.float32))
    for array in arrays:
        builder.output(builder.constant(array))
    return builder.to_bytes(), arrays


def test_python_round_trip_preserves_everything() -> None:
    data, arrays = constants_program()
    program = export.read_program(data)
    assert export.write_program(program) == data
    node = program.nodes[0]
    assert node.op == "edgert::relu"
    assert node.attributes == ATTRIBUTES
    constants = [program.values[index].data for index in program.outputs[1:]]
    for expected, actual in zip(arrays, constants, strict=True):
        assert actual is not None and actual.dtype == expected.dtype
        np.testing.assert_array_equal(actual, expected)
    assert program.values[program.inputs[0]].shape == (2, -1)


def test_constant_data_is_16_byte_aligned() -> None:
    data, arrays = constants_program()
    for array in arrays[:-1]:
        offset = data.find(array.tobytes())
        assert offset > 0 and offset % export.CONSTANT_ALIGNMENT == 0


def test_native_loader_reads_python_writer_output(edgert: ModuleType) -> None:
    data, arrays = constants_program()
    program = edgert.load(data)
    assert program.input_info == [edgert.TensorInfo(np.dtype("float32"), (2, -1))]
    x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)
    outputs = program.run([x])
    np.testing.assert_array_equal(outputs[0], np.maximum(x, 0))
    for expected, actual in zip(arrays, outputs[1:], strict=True):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        assert actual.tobytes() == expected.tobytes()


# ------------------------------------------------------------------- hostile programs


def _patched(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    """``data`` with one field changed and the checksum fixed, so a test reaches the check
    past the header that it is about."""
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    struct.pack_into("<I", out, export.CHECKSUM_OFFSET, export.program_checksum(out))
    return bytes(out)


def _with_size(data: bytes) -> bytes:
    """Fixes the declared size (and the checksum) so a test reaches the checks past the
    header."""
    return export.seal_program(data)


def _simple(shape: tuple[int, ...] = (1, 4), dtype: str = "float32") -> bytes:
    builder = export.ProgramBuilder()
    x = builder.input(dtype, shape)
    builder.output(builder.op("edgert::relu", [x]))
    return builder.to_bytes()


def _constant_program() -> bytes:
    builder = export.ProgramBuilder()
    builder.output(builder.constant(np.ones((2, 3), np.float32)))
    return builder.to_bytes()


def _flipped(data: bytes, offset: int) -> bytes:
    out = bytearray(data)
    out[offset] ^= 0xFF
    return bytes(out)


def bad_programs() -> dict[str, bytes]:
    good = _simple()
    const = _constant_program()
    first_value = 36  # header (32) + value count (4)
    first_dim = first_value + 8
    constant_length = first_dim + 16
    node_program = _simple()
    relu_inputs = node_program.index(b"edgert::relu") + len(b"edgert::relu") + 4
    overflow = _simple((1 << 40, 1 << 40))
    return {
        "empty": b"",
        "truncated_header": good[:10],
        "truncated_body": good[:-3],
        "truncated_body_size_fixed": _with_size(good[:-3]),
        "trailing_bytes": _with_size(good + b"\0\0\0\0"),
        "wrong_magic": b"NOTEDGRT" + good[8:],
        "wrong_version": _patched(good, 8, "<I", 99),
        "value_index_out_of_range": _patched(node_program, relu_inputs, "<i", 77),
        "graph_output_out_of_range": _patched(good, len(good) - 4, "<i", 1 << 20),
        "constant_length_mismatch": _patched(const, constant_length, "<Q", 20),
        "constant_huge_length": _patched(const, constant_length, "<Q", (1 << 64) - 8),
        "negative_dim_constant": _patched(const, first_dim, "<q", -3),
        "negative_dim_input": _patched(good, first_dim, "<q", -2),
        "overflowing_numel": overflow,
        "unknown_dtype": _patched(good, first_value, "<B", 9),
        "too_many_dims": _patched(good, first_value + 4, "<I", 1000),
        "huge_value_count": _patched(good, 32, "<I", 0xFFFFFFFF),
        "flipped_byte": _flipped(good, len(good) // 2),
        "huge_node_count": _patched(good, good.index(b"edgert::relu") - 8, "<I", 0x7FFFFFFF),
    }


CHECK_SCRIPT = r"""
import ctypes, json, sys
from pathlib import Path
import edgert
library = ctypes.CDLL(str(Path(edgert.__file__).parent / "lib" / "libedgert.so"))
library.edgert_last_error.restype = ctypes.c_char_p
results = {}
for path in sorted(Path(sys.argv[1]).glob("*.bin")):
    data = path.read_bytes()
    try:
        edgert.load(data)
        python = ["accepted", ""]
    except edgert.EdgertError as error:
        python = [type(error).__name__, str(error)]
    handle = ctypes.c_void_p()
    code = library.edgert_program_load_bytes(data, len(data), ctypes.byref(handle))
    results[path.stem] = python + [code, library.edgert_last_error().decode(), bool(handle.value)]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def bad_program_results(
    native_install: NativeInstall, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[object]]:
    folder = tmp_path_factory.mktemp("bad-programs")
    for name, data in bad_programs().items():
        (folder / f"{name}.bin").write_bytes(data)
    completed = native_install.python(CHECK_SCRIPT, str(folder))
    assert completed.returncode == 0, f"crashed ({completed.returncode}): {completed.stderr}"
    return json.loads(completed.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", sorted(bad_programs()))
def test_bad_program_is_rejected(name: str, bad_program_results: dict[str, list[object]]) -> None:
    python_class, python_message, c_code, c_message, handle_set = bad_program_results[name]
    assert python_class == "InvalidProgramError", (name, python_message)
    assert str(python_message).startswith("invalid program: ")
    assert c_code == 1  # EDGERT_ERROR_INVALID_PROGRAM
    assert c_message == python_message
    assert handle_set is False


def test_bad_program_messages_name_the_problem(
    bad_program_results: dict[str, list[object]],
) -> None:
    expected = {
        "wrong_magic": "wrong magic",
        "wrong_version": "unsupported format version 99",
        "value_index_out_of_range": "input index 77 out of range",
        "constant_length_mismatch": "constant holds 20 bytes but its dtype and shape need 24",
        "negative_dim_constant": "negative dimension -3",
        "overflowing_numel": "overflows",
        "unknown_dtype": "unknown dtype code 9",
        "huge_value_count": "exceeds the remaining bytes",
        "trailing_bytes": "trailing bytes",
        "truncated_body_size_fixed": "exceeds the remaining bytes",
        "truncated_body": "checksum mismatch (file corrupted, or truncated or padded",
        "flipped_byte": "program bytes 0..",
    }
    for name, fragment in expected.items():
        assert fragment in str(bad_program_results[name][1]), (name, bad_program_results[name])


def test_every_truncation_of_a_valid_program_is_rejected(edgert: ModuleType) -> None:
    data, _ = constants_program()
    for cut in range(len(data)):
        with pytest.raises(edgert.InvalidProgramError):
            edgert.load(_with_size(data[:cut]) if cut >= 32 else data[:cut])


def test_python_reader_rejects_what_the_loader_rejects() -> None:
    for name, data in bad_programs().items():
        if name in (
            "value_index_out_of_range",
            "graph_output_out_of_range",
            "negative_dim_input",
            "overflowing_numel",
        ):
            continue  # structural checks belong to the native loader only
        with pytest.raises(export.InvalidProgramError):
            export.read_program(data)


# ----------------------------------------------------------------------------- checksum


def test_writer_writes_version_2_with_a_checksum_over_every_other_byte() -> None:
    data, _ = constants_program()
    magic, version, flags, size, checksum, reserved = struct.unpack_from("<8sIIQII", data)
    assert (magic, version, flags, size, reserved) == (b"EDGRTPRG", 2, 0, len(data), 0)

    assert checksum == zlib.crc32(data[:24] + data[28:])


def test_the_loader_computes_the_writers_checksum_at_every_length(edgert: ModuleType) -> None:
    """Constants of 0 to 1199 bytes and one of 3 MiB, so files of every length over a range of
    1200 bytes and one that is mapped: the native CRC
    (folded with carry-less multiplication where the processor has it, by table otherwise)
    agrees with zlib's, which the writer uses."""
    lengths = [*range(0, 1200), 3 << 20]
    for length in lengths:
        builder = export.ProgramBuilder()
        builder.output(builder.constant(np.full(length, 7, np.uint8)))
        data = builder.to_bytes()
        (output,) = edgert.load(data).run([])
        assert output.nbytes == length


FLIP_SEEDS = range(5)


@pytest.mark.parametrize("seed", FLIP_SEEDS)
def test_a_random_byte_flip_is_an_error_naming_the_byte_range(edgert: ModuleType,
                                                              seed: int) -> None:
    data, _ = constants_program()
    rng = np.random.default_rng(seed)
    offset = int(rng.integers(12, len(data)))   # past the magic and the version
    out = bytearray(data)
    out[offset] ^= int(rng.integers(1, 256))
    with pytest.raises(edgert.InvalidProgramError) as raised:
        edgert.load(bytes(out))
    message = str(raised.value)
    if offset in range(16, 24):   # the size field: the message also says what it declares
        assert "truncated or padded: the header declares" in message
    assert message.startswith(f"invalid program: program bytes 0..{len(data)}: checksum mismatch "
                              "(file corrupted"), (offset, message)
    with pytest.raises(export.InvalidProgramError, match="checksum mismatch"):
        export.read_program(bytes(out))


def test_a_flip_in_mapped_constant_data_is_an_error_at_load_file(edgert: ModuleType,
                                                                   tmp_path: Path) -> None:
    builder = export.ProgramBuilder()
    builder.output(builder.constant(np.ones((512, 1024), np.float32)))   # 2 MiB: mapped
    data = bytearray(builder.to_bytes())
    path = tmp_path / "good.edgert"
    path.write_bytes(data)
    assert edgert.load(str(path)).memory_plan.constants == "mapped"
    data[len(data) - 1000] ^= 0x01
    path.write_bytes(data)
    with pytest.raises(edgert.InvalidProgramError, match=rf"program bytes 0..{len(data)}: "):
        edgert.load(str(path))


OLD_VERSION_SCRIPT = r"""
import ctypes, json, sys, warnings
from pathlib import Path
import numpy as np
import edgert
library = ctypes.CDLL(str(Path(edgert.__file__).parent / "lib" / "libedgert.so"))
library.edgert_last_warning.restype = ctypes.c_char_p
library.edgert_program_format_version.restype = ctypes.c_uint32
library.edgert_program_format_version.argtypes = [ctypes.c_void_p]
results = {}
for name in sys.argv[1:]:
    data = Path(name).read_bytes()
    # edgert.load first: it loads the kernels, which the C calls below then find registered.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = edgert.load(data)
    noted = [(w.category.__name__, str(w.message)) for w in caught]
    output = loaded.run([np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)])[0]
    handle = ctypes.c_void_p()
    code = library.edgert_program_load_bytes(data, len(data), ctypes.byref(handle))
    results[Path(name).stem] = [code, library.edgert_program_format_version(handle),
                                library.edgert_last_warning().decode(), output.tolist(),
                                loaded.format_version, noted]
    library.edgert_program_free(handle)
print(json.dumps(results))
"""


def test_an_old_version_file_loads_with_a_note(native_install: NativeInstall,
                                                 tmp_path: Path) -> None:
    program = export.read_program(_simple())
    old = export.write_program(program, version=1)
    assert struct.unpack_from("<I", old, 8) == (1,) and len(old) == len(_simple()) - 8
    assert export.write_program(export.read_program(old)) == _simple()   # re-saved: version 2
    (tmp_path / "old.bin").write_bytes(old)
    (tmp_path / "new.bin").write_bytes(_simple())
    completed = native_install.python(OLD_VERSION_SCRIPT, str(tmp_path / "old.bin"),
                                      str(tmp_path / "new.bin"))
    assert completed.returncode == 0, completed.stderr
    results = json.loads(completed.stdout)
    code, version, note, output, python_version, python_notes = results["old"]
    assert (code, version, python_version) == (0, 1, 1)
    assert note.startswith("program format version 1 carries no checksum"), note
    assert python_notes == [["ProgramFormatWarning", note]]   # Python says what C says
    assert output == [[0.0, 2.0, 0.0, 4.0]]
    assert results["new"] == [0, 2, "", [[0.0, 2.0, 0.0, 4.0]], 2, []]


def test_the_shipped_models_are_version_2() -> None:
    for model in sorted((NATIVE / "python" / "edgert" / "models").glob("*.edgert")):
        data = model.read_bytes()
        assert struct.unpack_from("<I", data, 8) == (2,), model.name
        assert struct.unpack_from("<I", data, 24) == (export.program_checksum(data),), model.name


# ----------------------------------------------------------------------------- fuzzing


def delegate_chain(pairs: int = 3) -> bytes:
    """linear -> relu pairs the CPU delegate claims, with and without biases."""
    builder = export.ProgramBuilder()
    value = builder.input("float32", (-1, 4))
    for pair in range(pairs):
        weight = builder.constant(np.full((4, 4), 0.25 * (pair + 1), np.float32))
        bias = builder.constant(np.arange(4, dtype=np.float32)) if pair % 2 == 0 else None
        value = builder.op("edgert::linear", [value, weight, bias])
        value = builder.op("edgert::relu", [value])
    builder.output(value)
    return builder.to_bytes()


def write_corpus(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "constants.bin").write_bytes(constants_program()[0])
    (folder / "simple.bin").write_bytes(_simple())
    (folder / "int64.bin").write_bytes(_simple((3,), "int64"))
    (folder / "mlp.bin").write_bytes(MLP_MODEL.read_bytes())
    (folder / "delegated.bin").write_bytes(delegate_chain())


def test_fuzzer_runs_clean_for_20_seconds(native_install: NativeInstall, tmp_path: Path) -> None:
    write_corpus(tmp_path / "corpus")
    completed = subprocess.run(
        [
            native_install.program("fuzz_program_loader"),
            "-max_total_time=20",
            "-seed=7",
            str(tmp_path / "corpus"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    executed = int(completed.stdout.split("executed ")[1].split()[0])
    assert executed > 10_000, completed.stdout
    delegated = int(completed.stdout.split("; ")[1].split()[0])
    assert delegated > 0, completed.stdout   # the CPU delegate ran fuzzed programs
