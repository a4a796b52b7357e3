"""The run-time memory limit (issue 35, item 9: a program of a few hundred bytes could make
``run()`` allocate 5.3 GB). ``Program.run(..., memory_limit=BYTES)``, the environment
variable EDGERT_MEMORY_LIMIT (read when a program is loaded) and the C API's
``edgert_program_set_memory_limit`` / ``edgert_program_run_with_limit`` cap the tensor memory a
run holds at once; an allocation past the cap is refused before it is made, with the bytes
the run needed and the cap. The caps here are small: no test allocates much."""

from __future__ import annotations

import ctypes
import sys
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import NATIVE, NativeInstall

sys.path.insert(0, str(NATIVE / "python"))
from edgert import export  # noqa: E402  (pure Python: no extension needed)

MIB = 1 << 20
HUGE = [65536, 20480]                 # float32: 5 GiB from one element
HUGE_BYTES = 65536 * 20480 * 4


def _expanding_program() -> bytes:
    """One float32 element expanded to 5 GiB, then summed: the hostile program's shape."""
    builder = export.ProgramBuilder()
    x = builder.input("float32", (1, 1))
    wide = builder.op("edgert::expand", [x], {"shape": HUGE})
    builder.output(builder.op("edgert::sum", [wide]))
    return builder.to_bytes()


def _relu_chain(length: int) -> bytes:
    builder = export.ProgramBuilder()
    value = builder.input("float32", (-1,))
    for _ in range(length):
        value = builder.op("edgert::relu", [value])
    builder.output(value)
    return builder.to_bytes()


def test_a_tiny_program_asking_for_gigabytes_is_refused_before_allocating(
        edgert: ModuleType) -> None:
    data = _expanding_program()
    assert len(data) < 16 * 1024
    program = edgert.load(data)
    with pytest.raises(edgert.OutOfMemoryError) as refused:
        program.run([np.ones((1, 1), np.float32)], memory_limit=MIB)
    message = str(refused.value)
    assert f"the run needs at least {HUGE_BYTES} bytes (5.0 GiB)" in message
    assert f"over its memory limit of {MIB} bytes (1.0 MiB)" in message
    assert f"node 0 (edgert::expand) asked for {HUGE_BYTES} bytes" in message
    assert "refused before allocating it" in message
    assert program.memory_plan.peak_bytes == 0


def test_the_environment_sets_the_limit_of_programs_loaded_after(
        edgert: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGERT_MEMORY_LIMIT", "1M")
    program = edgert.load(_expanding_program())
    with pytest.raises(edgert.OutOfMemoryError, match=f"over its memory limit of {MIB} bytes"):
        program.run([np.ones((1, 1), np.float32)])
    # a cap given to run() is the one in force for that run (0: none), here a smaller one
    with pytest.raises(edgert.OutOfMemoryError, match="over its memory limit of 4096 bytes"):
        program.run([np.ones((1, 1), np.float32)], memory_limit=4096)


@pytest.mark.parametrize("text", ["lots", "-1", "1.5G", "12Q", "99999999999999999999",
                                  "20000000000T"])
def test_an_unreadable_environment_limit_refuses_the_load(
        edgert: ModuleType, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("EDGERT_MEMORY_LIMIT", text)
    with pytest.raises(edgert.InvalidArgumentError,
                       match=r"EDGERT_MEMORY_LIMIT is '.*', not a byte count"):
        edgert.load(_relu_chain(1))


@pytest.mark.parametrize("text", ["", "0"])
def test_an_empty_or_zero_environment_limit_is_no_limit(
        edgert: ModuleType, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("EDGERT_MEMORY_LIMIT", text)
    data = np.linspace(-1, 1, MIB // 4, dtype=np.float32)
    np.testing.assert_array_equal(edgert.load(_relu_chain(3)).run([data])[0],
                                  np.maximum(data, 0))


def test_the_figure_counts_what_the_run_holds(edgert: ModuleType) -> None:
    """relu after relu on 1 MiB: the second output is made while the first is held, so the
    run needs 2 MiB; 1.5 MiB refuses it at node 1, 2 MiB runs it."""
    data = np.linspace(-1, 1, MIB // 4, dtype=np.float32)
    program = edgert.load(_relu_chain(2))
    with pytest.raises(edgert.OutOfMemoryError) as refused:
        program.run([data], memory_limit=MIB + MIB // 2)
    message = str(refused.value)
    assert f"the run needs at least {2 * MIB} bytes" in message
    assert f"node 1 (edgert::relu) asked for {MIB} bytes (1.0 MiB) while the run held {MIB}" \
        in message
    np.testing.assert_array_equal(program.run([data], memory_limit=2 * MIB)[0],
                                  np.maximum(data, 0))
    # the cap was for those runs only: the program's own (none) is back
    np.testing.assert_array_equal(program.run([data])[0], np.maximum(data, 0))
    np.testing.assert_array_equal(program.run([data], memory_limit=0)[0], np.maximum(data, 0))


@pytest.mark.parametrize("limit", [-1, 2**63, 1.5, "1M", True])
def test_memory_limit_is_a_byte_count(edgert: ModuleType, limit: object) -> None:
    program = edgert.load(_relu_chain(1))
    with pytest.raises((TypeError, ValueError), match="memory_limit must be"):
        program.run([np.ones(4, np.float32)], memory_limit=limit)


@pytest.mark.parametrize("op", ["matmul", "conv2d"])
def test_every_cap_ends_in_a_result_or_a_clean_refusal(edgert: ModuleType, op: str) -> None:
    """Kernels allocate scratch inside the thread pool's regions too (packed panels): a
    refusal there comes back as the run's error, never through the pool, at every cap."""
    rng = np.random.default_rng(7)
    builder = export.ProgramBuilder()
    if op == "matmul":
        a = builder.input("float32", (96, 200))
        builder.output(builder.op("edgert::matmul", [a, builder.constant(
            rng.standard_normal((200, 160)).astype(np.float32))]))
        data = rng.standard_normal((96, 200)).astype(np.float32)
    else:
        a = builder.input("float32", (1, 8, 24, 24))
        weight = builder.constant(rng.standard_normal((16, 8, 3, 3)).astype(np.float32))
        builder.output(builder.op("edgert::conv2d", [a, weight, None], {"padding": [1, 1]}))
        data = rng.standard_normal((1, 8, 24, 24)).astype(np.float32)
    program = edgert.load(builder.to_bytes())
    expected = program.run([data])[0]
    refused = 0
    for limit in [1, 4096, *range(16 << 10, 1 << 20, 24 << 10), 64 * MIB]:
        try:
            out = program.run([data], memory_limit=limit)[0]
        except edgert.OutOfMemoryError as error:
            assert "over its memory limit of" in str(error)
            refused += 1
            continue
        np.testing.assert_array_equal(out, expected)
    assert refused >= 2
    np.testing.assert_array_equal(program.run([data])[0], expected)


class _View(ctypes.Structure):   # edgert_tensor_view
    _fields_ = [("dtype", ctypes.c_int), ("ndim", ctypes.c_size_t),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p),
                ("nbytes", ctypes.c_size_t)]


def test_the_c_api_sets_reads_and_applies_the_limit(edgert: ModuleType,
                                                    native_install: NativeInstall) -> None:
    assert edgert.operators()   # the kernel libraries are loaded
    library = ctypes.CDLL(str(native_install.library("edgert")))
    library.edgert_last_error.restype = ctypes.c_char_p
    library.edgert_program_memory_limit.restype = ctypes.c_uint64
    library.edgert_program_set_memory_limit.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    library.edgert_program_run_with_limit.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(_View), ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_size_t, ctypes.c_uint64]
    library.edgert_program_run_with.argtypes = library.edgert_program_run_with_limit.argtypes[:5]
    library.edgert_operator_attributes.restype = ctypes.c_char_p
    data = _expanding_program()
    program = ctypes.c_void_p()
    assert library.edgert_program_load_bytes(data, len(data), ctypes.byref(program)) == 0
    try:
        assert library.edgert_program_memory_limit(program) == 0
        shape = (ctypes.c_int64 * 2)(1, 1)
        one = ctypes.c_float(1.0)
        view = _View(0, 2, shape, ctypes.cast(ctypes.byref(one), ctypes.c_void_p), 4)
        outputs = (ctypes.c_void_p * 1)()
        out_of_memory = 7   # EDGERT_ERROR_OUT_OF_MEMORY
        assert library.edgert_program_run_with_limit(program, ctypes.byref(view), 1, outputs, 1,
                                                     MIB) == out_of_memory
        assert f"over its memory limit of {MIB} bytes".encode() in library.edgert_last_error()
        assert library.edgert_program_memory_limit(program) == 0   # that call's only
        assert library.edgert_program_set_memory_limit(program, 4096) == 0
        assert library.edgert_program_memory_limit(program) == 4096
        assert library.edgert_program_run_with(program, ctypes.byref(view), 1, outputs,
                                               1) == out_of_memory
        assert b"the run needs at least 5368709120 bytes" in library.edgert_last_error()
        assert list(outputs) == [None]
    finally:
        library.edgert_program_free(program)
    library.edgert_operator_count.restype = ctypes.c_size_t
    library.edgert_operator_name.restype = ctypes.c_char_p
    names = [library.edgert_operator_name(i) for i in range(library.edgert_operator_count())]
    assert library.edgert_operator_attributes(len(names)) is None   # past the end
    assert library.edgert_operator_attributes(names.index(b"edgert::softmax")) == b"axis:int"
    assert library.edgert_operator_attributes(names.index(b"edgert::add")) == b""
