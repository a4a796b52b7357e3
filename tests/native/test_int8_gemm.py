"""The int8 GEMM under edgert_quantized::linear and conv2d (docs/kernels.md, "The int8 GEMM"):
outputs equal a numpy integer reference bit for bit across the packing's edges (depths that
are not a multiple of the 16-deep blocks, columns that are not a multiple of the 16-wide
panels, every row count of a tile and large batches), with zero points at and beyond int8's
extremes and static qparams that clamp; a weight given as a constant (packed once by the
prepare function) gives the same bytes as one given at run time; and every instruction set
level the machine has, with one and two threads, gives the same bytes."""

from __future__ import annotations

import functools
import json
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import ROOT, NativeInstall
from tests.native.support import run_op as shared_run_op
from tests.native.test_quantized_conv import attributes, conv_reference

F32 = np.float32
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
LINEAR = "edgert_quantized::linear"
CONV = "edgert_quantized::conv2d"
run_op = functools.partial(shared_run_op, backends=[])


def scalar(value: float | int, dtype: type) -> np.ndarray:
    return np.array([value], dtype)


# ------------------------------------------------------------------- references


def row_qparams(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """choose_qparams for int8, one row at a time (vectorized over the rows)."""
    low = np.minimum(F32(0), rows.min(axis=1, initial=F32(0)))
    high = np.maximum(F32(0), rows.max(axis=1, initial=F32(0)))
    scale = ((high.astype(np.float64) - low.astype(np.float64)) / 255).astype(F32)
    scale[scale == 0] = F32(1)
    zero = np.clip(-128 - np.rint(low.astype(np.float64) / scale.astype(np.float64)), -128, 127)
    return scale, zero.astype(np.int64)


def quantized(rows: np.ndarray, scale: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """quantize to int8 in float32 (NaN to the zero point), as int64."""
    with np.errstate(invalid="ignore", over="ignore"):
        rounded = np.rint(rows / scale)
    rounded = np.where(np.isnan(rounded), F32(0), rounded)
    shifted = rounded + zero.astype(F32)
    return np.clip(shifted, -128, 127).astype(np.int64)


def linear_expected(x, weight, scales, zero_points, bias=None, static=None, relu=False):
    """The documented arithmetic: int64 sums (wrapping modulo 2^64 like the kernel's),
    one float32 conversion, float32 xs · ws, a multiply, the bias, the activation."""
    rows = x.reshape(-1, x.shape[-1])
    if static is None:
        scale, zero = row_qparams(rows)
    else:
        scale = np.full(rows.shape[0], static[0], F32)
        zero = np.full(rows.shape[0], static[1], np.int64)
    centered = quantized(rows, scale[:, None], zero[:, None]) - zero[:, None]
    centered_weight = weight.astype(np.int64) - zero_points.astype(np.int64)[:, None]
    with np.errstate(over="ignore"):
        sums = centered @ centered_weight.T
    out = sums.astype(F32) * (scale[:, None] * scales[None, :])
    if bias is not None:
        out = out + bias
    if relu:
        out = np.where(out > 0, out, F32(0))
    return out.reshape(*x.shape[:-1], weight.shape[0])


def linear_inputs(batch: int, depth: int, columns: int, seed: int, zero_points=None):
    random = np.random.RandomState(seed)
    x = (random.standard_normal((batch, depth)) * 3).astype(F32)
    weight = random.randint(-128, 128, size=(columns, depth)).astype(np.int8)
    scales = random.uniform(0.001, 0.02, columns).astype(F32)
    if zero_points is None:
        zero_points = random.randint(-3, 4, size=columns)
    bias = random.standard_normal(columns).astype(F32)
    return x, weight, scales, np.asarray(zero_points, np.int32), bias


def constant_program(edgert: ModuleType, op: str, arrays: list, attrs: dict | None = None):
    """One node whose input 0 is the program's input and every other input a constant (so
    the prepare function packs the weight); None is an absent input."""
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    value = builder.input(arrays[0].dtype, (-1, *arrays[0].shape[1:]))
    wired = [value] + [None if a is None else builder.constant(a) for a in arrays[1:]]
    builder.output(builder.op(op, wired, attrs))  # type: ignore[arg-type]
    program = edgert.load(builder.to_bytes())
    program.set_backends([])
    return program


# ------------------------------------------------------------------- linear

# (batch, depth, columns): depths around the 16-deep blocks, columns around the 16-wide panels
# and the 64-wide tiles, batches of every tile row count.
LINEAR_SHAPES = [
    (1, 1, 1),
    (2, 3, 5),
    (3, 15, 16),
    (4, 16, 17),
    (5, 17, 31),
    (6, 31, 63),
    (7, 33, 64),
    (8, 64, 65),
    (9, 65, 100),
    (64, 100, 129),
    (1000, 40, 24),
    (13, 300, 70),
]


@pytest.mark.parametrize("shape", LINEAR_SHAPES)
def test_linear_across_the_packing_edges(edgert: ModuleType, shape: tuple) -> None:
    batch, depth, columns = shape
    x, weight, scales, zero_points, bias = linear_inputs(batch, depth, columns, sum(shape))
    (out,) = run_op(edgert, LINEAR, [x, weight, scales, zero_points, bias])
    np.testing.assert_array_equal(out, linear_expected(x, weight, scales, zero_points, bias))
    (out,) = run_op(edgert, LINEAR, [x, weight, scales, zero_points], {"activation": "relu"})
    np.testing.assert_array_equal(out, linear_expected(x, weight, scales, zero_points, relu=True))


@pytest.mark.parametrize(
    "zero_points",
    [
        [-128, 127, -128, 127, 0],  # int8's ends: the int32 epilogue
        [128, -129, 0, 5, -5],  # just outside: the 64-bit epilogue
        [INT32_MIN, INT32_MAX, 0, -1, 1],  # the ends of int32
    ],
)
def test_linear_with_extreme_weight_zero_points(edgert: ModuleType, zero_points: list) -> None:
    x, weight, scales, zeros, bias = linear_inputs(11, 37, 5, 3, zero_points)
    weight[0, :] = -128  # weights at int8's ends too
    weight[1, :] = 127
    (out,) = run_op(edgert, LINEAR, [x, weight, scales, zeros, bias])
    np.testing.assert_array_equal(out, linear_expected(x, weight, scales, zeros, bias))


@pytest.mark.parametrize("zero_point", [-128, 127, 128, -1000, INT32_MAX, INT32_MIN])
def test_linear_static_qparams_clamp_at_any_zero_point(edgert: ModuleType, zero_point: int) -> None:
    x, weight, scales, zeros, bias = linear_inputs(9, 50, 20, 4)
    x[0, :4] = [np.nan, np.inf, -np.inf, 1e30]  # the zero point, the ends
    static = (F32(0.01), zero_point)  # covers about [-1.3, 1.3]: most of x clamps
    inputs = [x, weight, scales, zeros, bias, scalar(static[0], F32), scalar(zero_point, np.int32)]
    for relu in (False, True):
        attrs = {"activation": "relu" if relu else "none"}
        (out,) = run_op(edgert, LINEAR, inputs, attrs)
        expected = linear_expected(x, weight, scales, zeros, bias, static, relu)
        np.testing.assert_array_equal(out, expected)


def test_linear_of_empty_shapes(edgert: ModuleType) -> None:
    x, weight, scales, zeros, bias = linear_inputs(3, 0, 4, 5)
    (out,) = run_op(edgert, LINEAR, [x, weight, scales, zeros, bias])
    np.testing.assert_array_equal(out, np.broadcast_to(bias, (3, 4)))
    x, weight, scales, zeros, bias = linear_inputs(3, 8, 0, 6)
    (out,) = run_op(edgert, LINEAR, [x, weight, scales, zeros, bias])
    assert out.shape == (3, 0)
    nan = np.full((2, 8), np.nan, F32)
    with pytest.raises(edgert.EdgertError, match="non-finite"):
        run_op(edgert, LINEAR, [nan, weight, scales, zeros, bias])


@pytest.mark.parametrize("batch", [1, 5, 64])
def test_linear_with_a_constant_weight_matches_a_run_time_weight(
    edgert: ModuleType, batch: int
) -> None:
    x, weight, scales, zeros, bias = linear_inputs(batch, 70, 33, batch)
    program = constant_program(edgert, LINEAR, [x, weight, scales, zeros, bias])
    for run in range(2):  # the first run prepares, the second reuses the packed weight
        (prepared,) = program.run([x + F32(run)])
        (plain,) = run_op(edgert, LINEAR, [x + F32(run), weight, scales, zeros, bias])
        assert prepared.tobytes() == plain.tobytes()
    expected = linear_expected(x + F32(1), weight, scales, zeros, bias)
    np.testing.assert_array_equal(prepared, expected)


def test_linear_beyond_the_gemm_depth_keeps_the_int64_loop(edgert: ModuleType) -> None:
    x, weight, scales, zeros, bias = linear_inputs(2, 65537, 3, 7)
    (out,) = run_op(edgert, LINEAR, [x, weight, scales, zeros, bias])
    np.testing.assert_array_equal(out, linear_expected(x, weight, scales, zeros, bias))


# ------------------------------------------------------------------- conv2d


def conv_inputs(x_shape, w_shape, seed, zero_points=None):
    random = np.random.RandomState(seed)
    x = (random.standard_normal(x_shape) * 2).astype(F32)
    weight = random.randint(-128, 128, size=w_shape).astype(np.int8)
    scales = random.uniform(0.001, 0.02, w_shape[0]).astype(F32)
    if zero_points is None:
        zero_points = random.randint(-4, 5, size=w_shape[0])
    bias = random.standard_normal(w_shape[0]).astype(F32)
    return x, weight, scales, np.asarray(zero_points, np.int32), bias


# x shape, weight shape, stride, padding, dilation, groups: positions around the 64-wide
# blocks, output channels around the tile rows, taps around the 16-deep blocks.
CONV_CASES = [
    ((1, 3, 9, 9), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # 81 positions, 27 taps
    ((2, 16, 8, 8), (7, 16, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # pointwise, 64 positions
    ((1, 4, 13, 5), (13, 4, 2, 2), (1, 1), (0, 0), (1, 1), 1),  # 48 positions, 16 taps
    ((1, 8, 17, 17), (16, 2, 3, 3), (2, 2), (1, 1), (1, 1), 4),  # groups of 4 outputs
    ((1, 6, 12, 11), (6, 6, 3, 2), (1, 2), (2, 0), (2, 1), 1),  # dilation, strides
    ((3, 2, 5, 5), (4, 2, 1, 1), (2, 2), (1, 1), (1, 1), 1),  # 1x1 with padding and stride
    ((1, 5, 1, 70), (9, 5, 1, 3), (1, 1), (0, 1), (1, 1), 1),  # one output row of 70
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_across_the_packing_edges(edgert: ModuleType, case: tuple) -> None:
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, weight, scales, zero_points, bias = conv_inputs(x_shape, w_shape, len(x_shape) + w_shape[0])
    attrs = attributes(stride, padding, dilation, groups)
    (out,) = run_op(edgert, CONV, [x, weight, scales, zero_points, bias], attrs)
    expected = conv_reference(
        x, weight, scales, zero_points, bias, stride, padding, dilation, groups
    )
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    "zero_points", [[-128, 127, -128, 127, 0, 1], [128, -129, INT32_MIN, INT32_MAX, 0, 3]]
)
def test_conv2d_with_extreme_weight_zero_points(edgert: ModuleType, zero_points: list) -> None:
    x, weight, scales, zeros, bias = conv_inputs((2, 3, 8, 7), (6, 3, 3, 3), 8, zero_points)
    weight[0] = -128
    weight[1] = 127
    (out,) = run_op(edgert, CONV, [x, weight, scales, zeros, bias], {"padding": [1, 1]})
    expected = conv_reference(x, weight, scales, zeros, bias, padding=(1, 1))
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("zero_point", [-128, 127])
def test_conv2d_static_qparams_at_int8_ends(edgert: ModuleType, zero_point: int) -> None:
    x, weight, scales, zeros, bias = conv_inputs((1, 4, 9, 9), (8, 4, 3, 3), 9)
    static = [scalar(0.01, F32), scalar(zero_point, np.int32)]
    (out,) = run_op(
        edgert,
        CONV,
        [x, weight, scales, zeros, bias, *static],
        {"padding": [1, 1], "activation": "relu"},
    )
    expected = conv_reference(
        x, weight, scales, zeros, bias, padding=(1, 1), relu=True, static=(F32(0.01), zero_point)
    )
    np.testing.assert_array_equal(out, expected)


def test_conv2d_with_a_constant_weight_matches_a_run_time_weight(edgert: ModuleType) -> None:
    x, weight, scales, zeros, bias = conv_inputs((2, 5, 10, 9), (12, 5, 3, 3), 10)
    attrs = {"padding": [1, 1], "stride": [1, 2]}
    program = constant_program(edgert, CONV, [x, weight, scales, zeros, bias], attrs)
    for run in range(2):
        (prepared,) = program.run([x * F32(run + 1)])
        (plain,) = run_op(edgert, CONV, [x * F32(run + 1), weight, scales, zeros, bias], attrs)
        assert prepared.tobytes() == plain.tobytes()
    expected = conv_reference(x * F32(2), weight, scales, zeros, bias, (1, 2), (1, 1))
    np.testing.assert_array_equal(prepared, expected)


# ------------------------------------------------------------------- levels and threads

_HASH_OUTPUTS = """
import ctypes, hashlib, json, os
import numpy as np
import edgert
from tests.native.support import run_op
from tests.native.test_int8_gemm import (CONV, LINEAR, constant_program, conv_inputs,
                                         linear_inputs, scalar)
library = ctypes.CDLL(str(edgert.lib_dir() / "libedgert_kernels_quantized.so"))
library.edgert_kernels_quantized_isa.restype = ctypes.c_char_p
floats = ctypes.CDLL(str(edgert.lib_dir() / "libedgert_kernels.so"))
floats.edgert_kernels_isa.restype = ctypes.c_char_p
static = [scalar(0.02, np.float32), scalar(3, np.int32)]
far = [scalar(0.02, np.float32), scalar(-700, np.int32)]
linear = [linear_inputs(b, d, c, b + d) for b, d, c in ((1, 37, 70), (7, 64, 33), (130, 200, 96))]
convs = [(conv_inputs((2, 16, 19, 21), (24, 8, 3, 3), 11), {"padding": [1, 1], "groups": 2}),
         (conv_inputs((1, 8, 14, 14), (10, 8, 1, 1), 12), {}),
         (conv_inputs((1, 8, 15, 15), (8, 1, 3, 3), 13), {"groups": 8, "padding": [1, 1]})]
def cases():
    for x, w, s, z, b in linear:
        yield LINEAR, [x, w, s, z, b], {}
        yield LINEAR, [x, w, s, z, None, *static], {"activation": "relu"}
        yield LINEAR, [x, w, s, z, b, *far], {}
    for (x, w, s, z, b), attrs in convs:
        yield CONV, [x, w, s, z, b], attrs
        yield CONV, [x, w, s, z, b, *static], {**attrs, "activation": "relu"}
def digest(array):
    return hashlib.sha256(array.tobytes()).hexdigest()
hashes = {}
for threads in (1, 2):
    edgert.set_threadpool_size(threads)
    plain = [digest(run_op(edgert, op, arrays, attrs, backends=[])[0])
             for op, arrays, attrs in cases()]
    prepared = [digest(constant_program(edgert, op, arrays, attrs).run([arrays[0]])[0])
                for op, arrays, attrs in cases()]
    hashes[threads] = plain
    assert prepared == plain, "a constant weight gave other bytes"
print(json.dumps({"isa": library.edgert_kernels_quantized_isa().decode(),
                  "float_isa": floats.edgert_kernels_isa().decode(), "hashes": hashes}))
"""

LEVELS = ("portable", "avx2", "avx512", "avx512vnni", "dotprod")


def test_every_level_and_thread_count_gives_the_same_bytes(native_install: NativeInstall) -> None:
    results = {}
    for level in LEVELS:
        environment = {"EDGERT_KERNELS_ISA": level, "PYTHONPATH": f"{native_install.prefix}:{ROOT}"}
        completed = native_install.python(_HASH_OUTPUTS, env=environment, timeout=300)
        assert completed.returncode == 0, completed.stderr
        results[level] = json.loads(completed.stdout)
    chosen = {level: result["isa"] for level, result in results.items()}
    print("levels run:", chosen)
    assert chosen["portable"] == "portable"
    best = max(LEVELS.index(isa) for isa in chosen.values())
    x86 = best < LEVELS.index("dotprod")
    ladder = LEVELS[: best + 1] if x86 else ("portable", "dotprod")[: 1 + (best > 0)]
    # every level up to the best the processor has ran, each under its own name
    assert sorted(set(chosen.values()), key=LEVELS.index) == list(ladder)
    for level in ladder:
        assert chosen[level] == level
    if chosen.get("avx512vnni") == "avx512vnni":
        assert results["avx512vnni"]["float_isa"] == "avx512"  # no VNNI level for floats
    reference = results["portable"]["hashes"]["1"]
    assert len(set(reference)) == len(reference)
    for level, result in results.items():
        assert result["hashes"] == {"1": reference, "2": reference}, f"{level} differs"
