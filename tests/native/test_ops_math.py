"""The operators of math.cpp, compare.cpp and reduce.cpp (docs/operators.md, "Operators of
common models") against numpy and torch references.

Exact operations (sqrt, rsqrt, reciprocal, floor, ceil, round, abs, neg, hardswish,
hardsigmoid, clamp, maximum, minimum, the comparisons, where, the documented float64 sums)
must give the reference's bytes, signed zeros included (NaN payloads aside). The
transcendental functions are held to their error bounds in ulps against float64 (the bounds
docs/kernels.md states: the measured maxima over every float32). Every instruction set and
thread count must give the same bytes, and strided inputs the bytes of contiguous ones.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import ROOT, NativeInstall
from tests.native.support import run_op as shared_run_op

F32 = np.float32
FLOAT_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
NUMERIC = [np.float32, np.int32, np.int64]
EVERY_DTYPE = [np.float32, np.int8, np.uint8, np.int32, np.int64, np.bool_]

run_op = functools.partial(shared_run_op, backends=[])  # the plain kernels


def one(edgert: ModuleType, op: str, arrays: list, attributes: dict | None = None) -> np.ndarray:
    return run_op(edgert, f"edgert::{op}", arrays, attributes)[0]


def values(shape: tuple[int, ...], dtype: type = F32, seed: int = 0) -> np.ndarray:
    random = np.random.RandomState(seed)
    if dtype == np.bool_:
        return random.randint(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.floating):
        return (random.standard_normal(shape) * 3).astype(dtype)
    info = np.iinfo(dtype)
    return random.randint(max(info.min, -50), min(info.max, 50), size=shape).astype(dtype)


SPECIAL = np.array(
    [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        1e-45,
        -1e-45,
        1.17549435e-38,
        3.4028235e38,
        -3.4028235e38,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.0,
        -3.0,
        0.625,
        88.72283,
        88.72284,
        -87.34,
        -103.97,
        -110.5,
        8388607.5,
        -8388607.5,
        16777217.0,
        1e30,
        -1e30,
    ],
    F32,
)


def special_and_random(count: int = 20000, seed: int = 1) -> np.ndarray:
    """The special values, dense values in the functions' interesting range, and random bit
    patterns over the whole float range."""
    random = np.random.RandomState(seed)
    dense = np.linspace(-120, 100, count, dtype=F32)
    patterns = random.randint(0, 2**32, size=count, dtype=np.uint64).astype(np.uint32).view(F32)
    return np.concatenate([SPECIAL, dense, patterns])


def float_bits(array: np.ndarray) -> np.ndarray:
    """The bit patterns of a float32 array, every NaN as one pattern."""
    bits = np.ascontiguousarray(array, F32).view(np.uint32).copy()
    bits[np.isnan(array)] = 0x7FC00000
    return bits


def assert_same_floats(actual: np.ndarray, expected: np.ndarray) -> None:
    """The same float32 bytes, signed zeros included; any NaN matches any NaN."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == F32 and expected.dtype == F32, (actual.dtype, expected.dtype)
    different = float_bits(actual) != float_bits(expected)
    assert not different.any(), (
        f"{different.sum()} differ, e.g. {actual[different][:5]} vs {expected[different][:5]}"
    )


def ulp_errors(actual: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|actual - exact| in units of the last place of float32 at |exact| (2^-149 below
    FLT_MIN); 0 where both are the same NaN or infinity, inf where they disagree."""
    exact = exact.astype(np.float64)
    got = actual.astype(np.float64)
    _, exponent = np.frexp(np.maximum(np.abs(np.nan_to_num(exact, posinf=0, neginf=0)), 2.0**-126))
    ulp = np.ldexp(1.0, np.minimum(exponent, 128) - 24)
    with np.errstate(invalid="ignore", over="ignore"):
        rounded = exact.astype(F32).astype(np.float64)  # inf where the float overflows
        errors = np.abs(got - exact) / ulp
    special = np.isnan(exact) | np.isnan(got) | np.isinf(rounded) | np.isinf(got)
    agree = (np.isnan(exact) & np.isnan(got)) | (got == rounded)
    return np.where(special, np.where(agree, 0.0, np.inf), errors)


# ------------------------------------------------------------- unary float functions


def torch_module():
    """torch, a dev requirement (requirements-dev.txt): missing is a broken setup."""
    import torch
    return torch


def sigmoid64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def silu64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return x / (1 + np.exp(-x))


# Bound in ulps against float64 (docs/kernels.md: the largest error over every float32,
# rounded up), and the float64 reference.
TRANSCENDENTAL = {
    "exp": (1.0, np.exp),
    "log": (1.0, np.log),
    "tanh": (1.5, np.tanh),
    "sigmoid": (2.5, sigmoid64),
    "silu": (2.5, silu64),
}


@pytest.mark.parametrize("op", sorted(TRANSCENDENTAL))
def test_transcendental_functions_are_within_their_bounds(edgert: ModuleType, op: str) -> None:
    bound, reference = TRANSCENDENTAL[op]
    x = special_and_random(200000)
    result = one(edgert, op, [x])
    with np.errstate(all="ignore"):
        errors = ulp_errors(result, reference(x.astype(np.float64)))
    worst = int(np.argmax(errors))
    assert errors[worst] <= bound, f"{op}({x[worst]!r}) = {result[worst]!r}: {errors[worst]} ulp"


def test_transcendental_edge_cases(edgert: ModuleType) -> None:
    inf, nan = np.inf, np.nan
    x = np.array([-inf, inf, nan, -0.0, 0.0, -1.0, 89.0, -104.0, -95.0], F32)
    expected = {
        "exp": [0.0, inf, nan, 1.0, 1.0, math.exp(-1), inf, 0.0, math.exp(-95)],
        "log": [nan, inf, nan, -inf, -inf, nan, math.log(89), nan, nan],
        "tanh": [-1.0, 1.0, nan, -0.0, 0.0, math.tanh(-1), 1.0, -1.0, -1.0],
        "sigmoid": [0.0, 1.0, nan, 0.5, 0.5, 1 / (1 + math.e), 1.0, math.exp(-104), math.exp(-95)],
        "silu": [
            nan,
            inf,
            nan,
            -0.0,
            0.0,
            -1 / (1 + math.e),
            89.0,
            -104 * math.exp(-104),
            -95 * math.exp(-95),
        ],
    }
    for op, wanted in expected.items():
        result = one(edgert, op, [x])
        wanted = np.array(wanted, np.float64)
        errors = ulp_errors(result, wanted)
        assert (errors <= 2.5).all(), (op, result, wanted)
        zeros = wanted == 0
        assert (np.signbit(result[zeros]) == np.signbit(wanted[zeros])).all(), (op, result)
    # Gradual underflow: e^-95 is a subnormal, not 0.
    assert 0 < one(edgert, "exp", [np.array([-95.0], F32)])[0] < 1.2e-38


def hard(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x + F32(3), F32(0)), F32(6))


EXACT = {
    "sqrt": np.sqrt,
    "rsqrt": lambda x: F32(1) / np.sqrt(x),
    "reciprocal": lambda x: F32(1) / x,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,
    "abs": np.abs,
    "neg": np.negative,
    "hardswish": lambda x: x * hard(x) / F32(6),
    "hardsigmoid": lambda x: hard(x) / F32(6),
}


@pytest.mark.parametrize("op", sorted(EXACT))
def test_exact_functions_give_numpys_bytes(edgert: ModuleType, op: str) -> None:
    x = special_and_random(50000)
    with np.errstate(all="ignore"):
        expected = EXACT[op](x).astype(F32)
    assert_same_floats(one(edgert, op, [x]), expected)


def test_rounding_cases(edgert: ModuleType) -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -0.3, 0.3, -0.7, 0.7, 8388607.5, 1e30, -0.0], F32)
    assert_same_floats(
        one(edgert, "round", [x]),
        np.array([0, 2, 2, -0.0, -2, -0.0, 0, -1, 1, 8388608, 1e30, -0.0], F32),
    )
    assert_same_floats(
        one(edgert, "floor", [x]),
        np.array([0, 1, 2, -1, -3, -1, 0, -1, 0, 8388607, 1e30, -0.0], F32),
    )
    assert_same_floats(
        one(edgert, "ceil", [x]),
        np.array([1, 2, 3, -0.0, -2, -0.0, 1, -0.0, 1, 8388608, 1e30, -0.0], F32),
    )


def test_erf_matches_float64(edgert: ModuleType) -> None:
    x = np.concatenate([SPECIAL, np.linspace(-6, 6, 20001, dtype=F32)])
    reference = np.array([math.erf(v) if not math.isnan(v) else math.nan for v in x.astype(float)])
    assert ulp_errors(one(edgert, "erf", [x]), reference).max() <= 1.0


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sin_and_cos_match_float64(edgert: ModuleType, op: str) -> None:
    x = np.concatenate([SPECIAL, np.linspace(-100, 100, 20001, dtype=F32)])
    function = getattr(math, op)
    reference = np.array([function(v) if math.isfinite(v) else math.nan for v in x.astype(float)])
    assert ulp_errors(one(edgert, op, [x]), reference).max() <= 1.0


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_is_torchs_running_sum(edgert: ModuleType, dtype: type, axis: int) -> None:
    """float32 sums in float64, rounded once per output (torch's CPU cumsum gives the same
    bytes); integers wrap."""
    torch = torch_module()
    x = values((4, 37, 5), dtype, 3)
    if dtype != F32:
        x = (x % 1000).astype(dtype)
    expected = torch.cumsum(torch.from_numpy(x), dim=axis).numpy().astype(dtype)
    result = one(edgert, "cumsum", [x], {"axis": axis})
    assert result.dtype == dtype and result.tobytes() == expected.tobytes()
    long = values((3, 5000), dtype, 4) if dtype == F32 else x  # float64 sums of long runs
    wanted = torch.cumsum(torch.from_numpy(long), dim=axis % long.ndim).numpy().astype(dtype)
    assert one(edgert, "cumsum", [long], {"axis": axis % long.ndim}).tobytes() == wanted.tobytes()
    big = np.array([2**62, 2**62, 2**62], np.int64)
    assert one(edgert, "cumsum", [big], {"axis": 0})[-1] == np.int64(-(2**62))  # wraps


def test_cumsum_takes_empty_and_rank_0_tensors_and_refuses_bool(edgert: ModuleType) -> None:
    assert one(edgert, "cumsum", [np.zeros((2, 0), F32)], {"axis": 1}).shape == (2, 0)
    assert one(edgert, "cumsum", [np.array(2.5, F32)], {"axis": 0}) == F32(2.5)
    with pytest.raises(edgert.EdgertError, match="edgert::cumsum: dtype bool is not supported"):
        one(edgert, "cumsum", [np.zeros(3, np.bool_)], {"axis": 0})
    with pytest.raises(edgert.EdgertError, match="attribute axis is required"):
        one(edgert, "cumsum", [np.zeros(3, F32)])


UNARY_FLOAT = [
    "sigmoid",
    "tanh",
    "silu",
    "hardswish",
    "hardsigmoid",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "erf",
    "sin",
    "cos",
    "floor",
    "ceil",
    "round",
]


@pytest.mark.parametrize("op", UNARY_FLOAT + ["abs", "neg"])
def test_unary_functions_agree_with_torch(edgert: ModuleType, op: str) -> None:
    torch = torch_module()
    functions = {
        "silu": torch.nn.functional.silu,
        "hardswish": torch.nn.functional.hardswish,
        "hardsigmoid": torch.nn.functional.hardsigmoid,
    }
    function = functions.get(op) or getattr(torch, op)
    x = np.concatenate([SPECIAL, values((3000,), F32, 2), np.linspace(-12, 12, 2001, dtype=F32)])
    expected = function(torch.from_numpy(x)).numpy()
    result = one(edgert, op, [x])
    np.testing.assert_allclose(result, expected, equal_nan=True, **FLOAT_TOLERANCE)
    zeros = (result == 0) & (expected == 0)
    assert (np.signbit(result[zeros]) == np.signbit(expected[zeros])).all()


@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_float_functions_keep_shape_and_take_empty_tensors(edgert: ModuleType, op: str) -> None:
    for shape in [(), (0,), (2, 0, 3), (3, 5, 7)]:
        result = one(edgert, op, [np.full(shape, 0.25, F32)])
        assert result.shape == shape and result.dtype == F32


@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_float_functions_reject_other_dtypes(edgert: ModuleType, op: str) -> None:
    for dtype in (np.int32, np.bool_):
        with pytest.raises(edgert.EdgertError, match=rf"edgert::{op}: input must be float32"):
            one(edgert, op, [np.zeros(3, dtype)])
    with pytest.raises(edgert.EdgertError, match=rf"edgert::{op}: expected 1 inputs, got 2"):
        one(edgert, op, [np.zeros(3, F32), np.zeros(3, F32)])


# ------------------------------------------------------------- abs, neg, clamp


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_abs_and_neg_wrap_around(edgert: ModuleType, dtype: type) -> None:
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, -7, 0, 7, info.max], dtype)
    abs_result, neg_result = one(edgert, "abs", [x]), one(edgert, "neg", [x])
    assert abs_result.dtype == dtype and neg_result.dtype == dtype
    np.testing.assert_array_equal(
        abs_result, np.array([info.min, info.max, 7, 0, 7, info.max], dtype)
    )
    np.testing.assert_array_equal(
        neg_result, np.array([info.min, info.max, 7, 0, -7, -info.max], dtype)
    )


@pytest.mark.parametrize("op", ["abs", "neg", "clamp"])
def test_sign_operators_reject_non_numeric_dtypes(edgert: ModuleType, op: str) -> None:
    for dtype in (np.int8, np.uint8, np.bool_):
        with pytest.raises(edgert.EdgertError, match=rf"edgert::{op}: dtype \w+ is not supported"):
            one(edgert, op, [np.zeros(3, dtype)])


CLAMP_BOUNDS = [
    {"min": -1.5, "max": 2.0},
    {"min": 0.25},
    {"max": -0.5},
    {"min": 3.0, "max": 1.0},
    {},
    {"min": -2, "max": 4},
]


@pytest.mark.parametrize("bounds", CLAMP_BOUNDS)
def test_clamp_floats(edgert: ModuleType, bounds: dict) -> None:
    torch = torch_module()
    x = np.concatenate([SPECIAL, values((500,), F32, 3)])
    result = one(edgert, "clamp", [x], bounds)
    if bounds:
        expected = torch.clamp(torch.from_numpy(x), bounds.get("min"), bounds.get("max")).numpy()
    else:
        expected = x  # no bounds: x itself
    np.testing.assert_array_equal(result, expected)  # NaN stays NaN; min > max gives max


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_clamp_integers_rounds_bounds_inward(edgert: ModuleType, dtype: type) -> None:
    x = np.arange(-6, 7, dtype=dtype)
    result = one(edgert, "clamp", [x], {"min": -2.5, "max": 3.7})
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, np.clip(x, -2, 3))
    np.testing.assert_array_equal(
        one(edgert, "clamp", [x], {"min": 5.0, "max": 1.0}), np.full_like(x, 1)
    )
    info = np.iinfo(dtype)
    extremes = np.array([info.min, 0, info.max], dtype)
    np.testing.assert_array_equal(
        one(edgert, "clamp", [extremes], {"min": -1e300, "max": 1e300}), extremes
    )
    np.testing.assert_array_equal(
        one(edgert, "clamp", [extremes], {"min": 1e300}), np.full_like(extremes, info.max)
    )
    if dtype == np.int64:  # an integer attribute is exact, beyond float64's 2^53
        big = np.array([2**62 + 1, 2**62 + 3], np.int64)
        np.testing.assert_array_equal(
            one(edgert, "clamp", [big], {"max": 2**62 + 2}),
            np.array([2**62 + 1, 2**62 + 2], np.int64),
        )


def test_clamp_rejects_bad_bounds(edgert: ModuleType) -> None:
    with pytest.raises(edgert.EdgertError, match="edgert::clamp: attribute min is NaN"):
        one(edgert, "clamp", [np.zeros(3, F32)], {"min": math.nan})
    with pytest.raises(edgert.EdgertError, match="edgert::clamp: attribute max must be a float"):
        one(edgert, "clamp", [np.zeros(3, F32)], {"max": "one"})
    with pytest.raises(edgert.EdgertError, match="edgert::clamp: attribute min must be a float"):
        one(edgert, "clamp", [np.zeros(3, F32)], {"min": [1.0, 2.0]})


def test_clamp_bound_beyond_float_range(edgert: ModuleType) -> None:
    x = np.array([np.inf, -np.inf, 3e38, 1.0], F32)
    np.testing.assert_array_equal(one(edgert, "clamp", [x], {"max": 1e39}), x)  # +inf bound
    np.testing.assert_array_equal(
        one(edgert, "clamp", [x], {"max": 3.4028235e38}),
        np.array([3.4028235e38, -np.inf, 3e38, 1.0], F32),
    )


# ------------------------------------------------------------- binary and ternary

BROADCAST_SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 1, 4), (3, 1)),
    ((), (5,)),
    ((4, 1), ()),
    ((0, 3), (1, 3)),
    ((4, 0), (1,)),
    ((2, 3, 1, 2), (1, 5, 1)),
    ((1, 70001), (1,)),
    ((33, 77), (77,)),
]


def with_nans(array: np.ndarray, seed: int) -> np.ndarray:
    if array.dtype == F32 and array.size:
        array = array.copy()
        flat = array.reshape(-1)
        flat[np.random.RandomState(seed).randint(0, flat.size, size=max(1, flat.size // 10))] = (
            np.nan
        )
    return array


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_broadcast_and_propagate_nan(
    edgert: ModuleType, op: str, dtype: type, shapes: tuple
) -> None:
    a, b = with_nans(values(shapes[0], dtype, 4), 1), with_nans(values(shapes[1], dtype, 5), 2)
    result = one(edgert, op, [a, b])
    expected = getattr(np, op)(a, b)
    assert result.dtype == dtype and result.shape == expected.shape
    np.testing.assert_array_equal(result, expected)


def test_maximum_minimum_order_signed_zeros(edgert: ModuleType) -> None:
    a = np.array([-0.0, 0.0, -0.0, 0.0, np.nan, 1.0], F32)
    b = np.array([0.0, -0.0, -0.0, 0.0, 1.0, np.nan], F32)
    assert_same_floats(
        one(edgert, "maximum", [a, b]), np.array([0.0, 0.0, -0.0, 0.0, np.nan, np.nan], F32)
    )
    assert_same_floats(
        one(edgert, "minimum", [a, b]), np.array([-0.0, -0.0, -0.0, 0.0, np.nan, np.nan], F32)
    )


def test_maximum_agrees_with_torch(edgert: ModuleType) -> None:
    torch = torch_module()
    a, b = np.meshgrid(SPECIAL, SPECIAL)
    for op in ("maximum", "minimum"):
        expected = getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        np.testing.assert_array_equal(one(edgert, op, [a, b]), expected)


def test_pow(edgert: ModuleType) -> None:
    base = np.abs(values((4000,), F32, 6))
    exponent = values((4000,), F32, 7)
    with np.errstate(all="ignore"):
        reference = np.power(base.astype(np.float64), exponent.astype(np.float64))
        assert ulp_errors(one(edgert, "pow", [base, exponent]), reference).max() <= 1.0
    x = np.concatenate([SPECIAL, values((100,), F32, 8)])
    # An exponent of 2 is x·x, one of 0.5 is sqrt: their bytes (pow(-0, 0.5) = -0).
    with np.errstate(over="ignore"):
        assert_same_floats(one(edgert, "pow", [x, np.array(2.0, F32)]), x * x)
    with np.errstate(invalid="ignore"):
        assert_same_floats(one(edgert, "pow", [x, np.array([0.5], F32)]), np.sqrt(x))
    torch = torch_module()
    a, b = np.meshgrid(
        SPECIAL, np.array([0, -0.0, 1, -1, 2, 0.5, 3, -2.5, np.inf, -np.inf, np.nan], F32)
    )
    expected = torch.pow(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    # torch's tensor-exponent pow gives pow(-inf, 0.5) = inf, its scalar one (sqrt) NaN: the
    # contract takes sqrt.
    expected[(a == -np.inf) & (b == 0.5)] = np.nan
    np.testing.assert_allclose(
        one(edgert, "pow", [a, b]), expected, equal_nan=True, **FLOAT_TOLERANCE
    )


COMPARISONS = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", sorted(COMPARISONS))
def test_comparisons(edgert: ModuleType, op: str, dtype: type, shapes: tuple) -> None:
    a = with_nans(values(shapes[0], dtype, 9) // (1 if dtype == F32 else 10), 3)
    b = with_nans(values(shapes[1], dtype, 10) // (1 if dtype == F32 else 10), 4)
    if dtype == F32:
        a, b = np.round(a), np.round(b)  # equal pairs occur
    result = one(edgert, op, [a, b])
    assert result.dtype == np.bool_
    np.testing.assert_array_equal(result, COMPARISONS[op](a, b))


def bools_with_bytes(values_: list[int]) -> np.ndarray:
    """A bool array holding the given bytes (non-zero bytes other than 1 are true too)."""
    return np.array(values_, np.uint8).view(np.bool_)


def assert_bool_bytes(result: np.ndarray, expected: list[bool]) -> None:
    assert result.dtype == np.bool_
    np.testing.assert_array_equal(result.view(np.uint8), np.array(expected, np.uint8))


def test_bool_equality_and_logic_read_any_nonzero_byte_as_true(edgert: ModuleType) -> None:
    a = bools_with_bytes([0, 2, 255, 1, 0, 7])
    b = bools_with_bytes([0, 1, 0, 3, 9, 0])
    assert_bool_bytes(one(edgert, "equal", [a, b]), [1, 1, 0, 1, 0, 0])
    assert_bool_bytes(one(edgert, "not_equal", [a, b]), [0, 0, 1, 0, 1, 1])
    assert_bool_bytes(one(edgert, "logical_and", [a, b]), [0, 1, 0, 1, 0, 0])
    assert_bool_bytes(one(edgert, "logical_or", [a, b]), [0, 1, 1, 1, 1, 1])
    assert_bool_bytes(one(edgert, "logical_xor", [a, b]), [0, 0, 1, 0, 1, 1])
    assert_bool_bytes(one(edgert, "logical_not", [a]), [1, 0, 0, 0, 1, 0])


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_operators_broadcast(edgert: ModuleType, op: str, shapes: tuple) -> None:
    a, b = values(shapes[0], np.bool_, 11), values(shapes[1], np.bool_, 12)
    np.testing.assert_array_equal(one(edgert, op, [a, b]), getattr(np, op)(a, b))


@pytest.mark.parametrize("shape", [(), (0,), (3, 4, 5)])
def test_logical_not(edgert: ModuleType, shape: tuple) -> None:
    x = values(shape, np.bool_, 13)
    np.testing.assert_array_equal(one(edgert, "logical_not", [x]), np.logical_not(x))


WHERE_SHAPES = [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 1, 4), (3, 1), (4,)),
    ((), (5,), (1,)),
    ((4, 1), (), (1, 6)),
    ((0, 3), (1, 3), (3,)),
    ((1, 70001), (1,), (70001,)),
    ((70001,), (70001,), (70001,)),
    ((37, 1), (37, 300), ()),
]


@pytest.mark.parametrize("shapes", WHERE_SHAPES)
@pytest.mark.parametrize("dtype", EVERY_DTYPE)
def test_where_broadcasts_three_ways(edgert: ModuleType, dtype: type, shapes: tuple) -> None:
    condition = values(shapes[0], np.bool_, 14)
    a, b = values(shapes[1], dtype, 15), values(shapes[2], dtype, 16)
    result = one(edgert, "where", [condition, a, b])
    expected = np.where(condition, a, b)
    assert result.dtype == dtype and result.shape == expected.shape
    np.testing.assert_array_equal(result.view(np.uint8), expected.view(np.uint8))


def test_where_reads_nonzero_bytes_and_writes_bools_as_0_or_1(edgert: ModuleType) -> None:
    condition = bools_with_bytes([0, 2, 255, 1])
    a, b = bools_with_bytes([5, 6, 7, 0]), bools_with_bytes([3, 0, 0, 0])
    assert_bool_bytes(one(edgert, "where", [condition, a, b]), [1, 1, 1, 0])
    floats = one(
        edgert, "where", [condition, np.array([-0.0, 1, 2, 3], F32), np.full(4, np.nan, F32)]
    )
    assert_same_floats(floats, np.array([np.nan, 1, 2, 3], F32))


BINARY_DTYPES = {
    "maximum": NUMERIC,
    "minimum": NUMERIC,
    "pow": [F32],
    **{op: [*NUMERIC, np.bool_] for op in ("equal", "not_equal")},
    **{op: NUMERIC for op in ("less", "less_equal", "greater", "greater_equal")},
    **{op: [np.bool_] for op in ("logical_and", "logical_or", "logical_xor")},
}


@pytest.mark.parametrize("op", sorted(BINARY_DTYPES))
def test_binary_operators_reject_bad_inputs(edgert: ModuleType, op: str) -> None:
    accepted = BINARY_DTYPES[op]
    for dtype in EVERY_DTYPE:
        arrays = [np.zeros(3, dtype), np.zeros(3, dtype)]
        if dtype in accepted:
            assert one(edgert, op, arrays).shape == (3,)
        else:
            with pytest.raises(
                edgert.EdgertError, match=rf"edgert::{op}: dtype \w+ is not supported"
            ):
                one(edgert, op, arrays)
    first = accepted[0]
    other = np.int64 if first != np.int64 else F32
    with pytest.raises(edgert.EdgertError, match=rf"edgert::{op}: .*same dtype"):
        one(edgert, op, [np.zeros(3, first), np.zeros(3, other)])
    with pytest.raises(edgert.EdgertError, match=rf"edgert::{op}: .*cannot be broadcast"):
        one(edgert, op, [np.zeros((2, 3), first), np.zeros(4, first)])
    with pytest.raises(edgert.EdgertError, match=rf"edgert::{op}: expected 2 inputs, got 1"):
        one(edgert, op, [np.zeros(3, first)])


def test_where_and_logical_not_reject_bad_inputs(edgert: ModuleType) -> None:
    x = np.zeros(3, F32)
    with pytest.raises(
        edgert.EdgertError, match="edgert::where: condition must be bool, got float32"
    ):
        one(edgert, "where", [x, x, x])
    with pytest.raises(edgert.EdgertError, match="edgert::where: .*same dtype"):
        one(edgert, "where", [np.zeros(3, np.bool_), x, np.zeros(3, np.int32)])
    with pytest.raises(edgert.EdgertError, match="edgert::where: .*cannot be broadcast"):
        one(edgert, "where", [np.zeros(2, np.bool_), x, x])
    with pytest.raises(
        edgert.EdgertError, match="edgert::logical_not: dtype float32 is not supported"
    ):
        one(edgert, "logical_not", [x])


# ------------------------------------------------------------- reductions


def reduced_last(x: np.ndarray, axes: list[int] | None) -> tuple[np.ndarray, list[int]]:
    """x as [kept..., n]: the reduced elements of each output in row-major order, and the
    sorted reduced axes."""
    axes = sorted({a % max(x.ndim, 1) for a in axes}) if axes else list(range(x.ndim))
    moved = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim))) if x.ndim else x
    kept = [x.shape[d] for d in range(x.ndim) if d not in axes]
    return moved.reshape(*kept, -1), axes


def sum_in_order(
    x: np.ndarray, axes: list[int] | None, keepdim: bool, mean: bool = False
) -> np.ndarray:
    """docs/operators.md's float sum: 8 interleaved float64 partials from +0 (element r to
    partial r mod 8), added in order 0..7, rounded once (mean divides in float64 first)."""
    runs, axes = reduced_last(x, axes)
    runs = runs.astype(np.float64)
    partials = [np.zeros(runs.shape[:-1]) for _ in range(8)]
    for r in range(runs.shape[-1]):
        partials[r % 8] = partials[r % 8] + runs[..., r]
    total = partials[0]
    for k in range(1, 8):
        total = total + partials[k]
    if mean:
        with np.errstate(invalid="ignore"):
            total = total / runs.shape[-1]
    shape = [1 if d in axes else x.shape[d] for d in range(x.ndim)] if keepdim else total.shape
    return total.astype(F32).reshape(shape)


REDUCE_CASES = [  # shape, axes, keepdim
    ((5, 37, 19), None, 0),
    ((5, 37, 19), [-1], 0),
    ((5, 37, 19), [0], 1),
    ((5, 37, 19), [1], 0),
    ((5, 37, 19), [0, 2], 1),
    ((5, 37, 19), [2, 1], 0),
    ((4, 1, 6), [0, 2], 0),
    ((300, 700), [0], 0),
    ((3, 100003), [1], 0),
    ((7,), [0], 1),
    ((), None, 0),
    ((), [0], 1),
    ((2, 3, 4, 5), [1, 3], 0),
]


@pytest.mark.parametrize("case", REDUCE_CASES)
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_float_sums_follow_the_documented_order(edgert: ModuleType, op: str, case: tuple) -> None:
    shape, axes, keepdim = case
    x = values(shape, F32, 17) * F32(1000)
    if x.size > 2:
        x.reshape(-1)[1] = F32(3e7)  # large and small terms: the order shows in the bits
    attributes = {"keepdim": keepdim, **({"axes": axes} if axes is not None else {})}
    result = one(edgert, op, [x], attributes)
    assert_same_floats(result, sum_in_order(x, axes, bool(keepdim), mean=op == "mean"))
    reference = getattr(np, op)(
        x.astype(np.float64),
        axis=None if axes is None or not x.ndim else tuple(axes),
        keepdims=bool(keepdim),
    )
    np.testing.assert_allclose(result, reference, rtol=1e-6)


def test_float_sums_edge_values(edgert: ModuleType) -> None:
    assert_same_floats(one(edgert, "sum", [np.array([-0.0, -0.0], F32)]), np.array(0.0, F32))
    assert np.isnan(one(edgert, "sum", [np.array([np.inf, -np.inf, 1], F32)]))
    assert one(edgert, "sum", [np.array([3e38, 3e38, -3e38], F32)]) == F32(3e38)  # float64 partials
    assert one(edgert, "sum", [np.array([3e38, 3e38], F32)]) == np.inf  # one rounding at the end
    assert np.isnan(one(edgert, "mean", [np.array([1, np.nan], F32)]))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_sums_wrap_around(edgert: ModuleType, dtype: type) -> None:
    info = np.iinfo(dtype)
    x = np.array([[info.max, 1, 5], [info.min, -1, -5]], dtype)
    for axes in (None, [0], [1]):
        result = one(edgert, "sum", [x], {"axes": axes} if axes else None)
        assert result.dtype == dtype
        np.testing.assert_array_equal(
            result, np.sum(x, axis=None if axes is None else tuple(axes), dtype=dtype)
        )
    big = values((50, 300), dtype, 18) * dtype(10**6 if dtype == np.int32 else 10**17)
    np.testing.assert_array_equal(
        one(edgert, "sum", [big], {"axes": [1]}), np.sum(big, axis=1, dtype=dtype)
    )


@pytest.mark.parametrize("case", REDUCE_CASES[:10])
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min(edgert: ModuleType, op: str, dtype: type, case: tuple) -> None:
    shape, axes, keepdim = case
    x = with_nans(values(shape, dtype, 19), 5) if op == "max" else values(shape, dtype, 19)
    attributes = {"keepdim": keepdim, **({"axes": axes} if axes is not None else {})}
    result = one(edgert, op, [x], attributes)
    expected = getattr(np, op)(
        x, axis=None if axes is None else tuple(axes), keepdims=bool(keepdim)
    )
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, expected)  # a NaN in the run gives NaN


def test_max_min_of_signed_zeros_and_nan(edgert: ModuleType) -> None:
    zeros = np.array([-0.0, 0.0, -0.0], F32)
    assert_same_floats(one(edgert, "max", [zeros]), np.array(0.0, F32))
    assert_same_floats(one(edgert, "min", [zeros[1:]]), np.array(-0.0, F32))
    assert np.isnan(one(edgert, "min", [np.array([1, np.nan, -5], F32)]))


@pytest.mark.parametrize("dtype", EVERY_DTYPE)
@pytest.mark.parametrize("op", ["any", "all"])
def test_any_all_take_every_dtype(edgert: ModuleType, op: str, dtype: type) -> None:
    x = values((6, 9), dtype, 20)
    if dtype != np.bool_:
        x[x % 3 == 0] = 0
    for axes in (None, [0], [1], [-1, 0]):
        result = one(edgert, op, [x], {"axes": axes} if axes else None)
        assert result.dtype == np.bool_
        np.testing.assert_array_equal(
            result, getattr(np, op)(x, axis=None if axes is None else tuple(axes))
        )
    special = np.array([0.0, -0.0, np.nan], F32)
    assert bool(one(edgert, "any", [special[:2]])) is False  # -0 is zero
    assert bool(one(edgert, "any", [special])) is True  # NaN is not
    assert bool(one(edgert, "all", [special[2:]])) is True


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(edgert: ModuleType, op: str, dtype: type, axis: int | None) -> None:
    torch = torch_module()
    x = values((13, 41), dtype, 21) // (1 if dtype == F32 else 5)  # ties: the first index wins
    if dtype == F32:
        x = np.round(x)
        x[3, 7] = x[5, 2] = x[5, 30] = np.nan  # NaN counts as the extreme of both (as torch)
    for keepdim in (0, 1):
        attributes = {"keepdim": keepdim, **({"axis": axis} if axis is not None else {})}
        result = one(edgert, op, [x], attributes)
        expected = getattr(torch, op)(torch.from_numpy(x), dim=axis, keepdim=bool(keepdim)).numpy()
        assert result.dtype == np.int64 and result.shape == expected.shape
        np.testing.assert_array_equal(result, expected)


def test_reductions_of_empty_tensors(edgert: ModuleType) -> None:
    empty = np.zeros((3, 0), F32)
    assert_same_floats(one(edgert, "sum", [empty], {"axes": [1]}), np.zeros(3, F32))
    assert np.isnan(one(edgert, "mean", [empty], {"axes": [1]})).all()
    np.testing.assert_array_equal(one(edgert, "any", [empty], {"axes": [1]}), np.zeros(3, np.bool_))
    np.testing.assert_array_equal(one(edgert, "all", [empty], {"axes": [1]}), np.ones(3, np.bool_))
    assert one(edgert, "max", [empty], {"axes": [0]}).shape == (0,)  # nothing to reduce is fine
    assert one(edgert, "argmax", [empty], {"axis": 0}).shape == (0,)
    assert one(edgert, "sum", [np.zeros((0, 4), np.int32)], {"axes": [0], "keepdim": 1}).shape == (
        1,
        4,
    )
    for op, attributes in (
        ("max", {"axes": [1]}),
        ("min", None),
        ("argmax", {"axis": 1}),
        ("argmin", None),
    ):
        with pytest.raises(
            edgert.EdgertError, match=rf"edgert::{op}: cannot reduce over an empty dimension"
        ):
            one(edgert, op, [empty], attributes)


REDUCTION_DTYPES = {
    "sum": NUMERIC,
    "mean": [F32],
    "max": NUMERIC,
    "min": NUMERIC,
    "any": EVERY_DTYPE,
    "all": EVERY_DTYPE,
    "argmax": NUMERIC,
    "argmin": NUMERIC,
}


@pytest.mark.parametrize("op", sorted(REDUCTION_DTYPES))
def test_reductions_reject_bad_inputs(edgert: ModuleType, op: str) -> None:
    for dtype in EVERY_DTYPE:
        if dtype not in REDUCTION_DTYPES[op]:
            with pytest.raises(
                edgert.EdgertError, match=rf"edgert::{op}: dtype \w+ is not supported"
            ):
                one(edgert, op, [np.zeros(3, dtype)])
    x = np.zeros((2, 3), F32)
    axis_name = "axis" if op.startswith("arg") else "axes"
    bad_axes = [(5 if op.startswith("arg") else [5]), (-3 if op.startswith("arg") else [0, -3])]
    for bad in bad_axes:
        with pytest.raises(edgert.EdgertError, match=rf"edgert::{op}: axis -?\d+ is out of range"):
            one(edgert, op, [x], {axis_name: bad})
    wrong_type = [0, 1] if op.startswith("arg") else 1.5
    with pytest.raises(edgert.EdgertError, match=rf"edgert::{op}: attribute {axis_name} must be"):
        one(edgert, op, [x], {axis_name: wrong_type})
    with pytest.raises(
        edgert.EdgertError, match=rf"edgert::{op}: attribute keepdim must be 0 or 1"
    ):
        one(edgert, op, [x], {"keepdim": 2})
    if not op.startswith("arg"):
        with pytest.raises(
            edgert.EdgertError, match=rf"edgert::{op}: axis -1 appears more than once"
        ):
            one(edgert, op, [x], {"axes": [1, -1]})


def test_reductions_of_a_scalar(edgert: ModuleType) -> None:
    x = np.array(2.5, F32)
    assert one(edgert, "sum", [x], {"axes": [0]}) == F32(2.5)
    assert one(edgert, "mean", [x], {"axes": [-1], "keepdim": 1}).shape == ()
    assert one(edgert, "argmax", [x], {"axis": 0}) == 0
    assert one(
        edgert, "argmin", [np.array([[1, 0], [3, -4]], np.int32)], {"keepdim": 1}
    ).tolist() == [[3]]


# ------------------------------------------------------------- programs, threads, ISAs


def test_a_dynamic_batch_dimension(edgert: ModuleType) -> None:
    """A program declared for [-1, 6] runs each operator at any batch size, 0 included."""
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    x = builder.input(F32, (-1, 6))
    limit = np.linspace(-1, 1, 6, dtype=F32)
    wired_limit = builder.constant(limit)
    activated = builder.op("edgert::silu", [x])
    top = builder.op("edgert::maximum", [activated, wired_limit])
    positive = builder.op("edgert::greater", [x, wired_limit])
    chosen = builder.op("edgert::where", [positive, top, x])
    builder.output(builder.op("edgert::sum", [chosen], {"axes": [1], "keepdim": 1}))
    builder.output(builder.op("edgert::argmax", [x], {"axis": 1}))
    program = edgert.load(builder.to_bytes())
    program.set_backends([])
    for batch in (1, 5, 0):
        data = values((batch, 6), F32, 22 + batch)
        summed, index = program.run([data])
        silu = data / (1 + np.exp(-data.astype(np.float64)))
        expected = np.where(data > limit, np.maximum(silu, limit), data).sum(axis=1, keepdims=True)
        assert summed.shape == (batch, 1) and index.shape == (batch,)
        np.testing.assert_allclose(summed, expected, **FLOAT_TOLERANCE)
        np.testing.assert_array_equal(index, data.argmax(axis=1))


def isa_cases() -> list[tuple[str, list[np.ndarray], dict | None]]:
    """Every operator, on inputs long enough for every vector width's body and tail and for
    several threads."""
    x = np.concatenate(
        [SPECIAL, values((70001,), F32, 23), np.linspace(-120, 100, 4099, dtype=F32)]
    )
    matrix = values((257, 301), F32, 24)
    cases = [(f"edgert::{op}", [x], None) for op in UNARY_FLOAT + ["abs", "neg"]]
    cases += [("edgert::clamp", [x], {"min": -2.0, "max": 3.5})]
    for op in ("maximum", "minimum", "pow", "less", "equal"):
        cases += [
            (f"edgert::{op}", [matrix, matrix[0]], None),
            (f"edgert::{op}", [x, x[::-1].copy()], None),
        ]
    cases += [
        ("edgert::where", [matrix > 0, matrix, matrix[:, :1].copy()], None),
        ("edgert::where", [x > 0, x, np.array(7.0, F32)], None),
    ]
    for op in ("sum", "mean", "max", "argmax"):
        axis = "axis" if op == "argmax" else "axes"
        cases += [
            (f"edgert::{op}", [matrix], {axis: 0 if op == "argmax" else [0]}),
            (f"edgert::{op}", [matrix], {axis: 1 if op == "argmax" else [1]}),
            (f"edgert::{op}", [x], None),
        ]
    return cases


def run_cases(edgert: ModuleType) -> list[str]:
    return [
        hashlib.sha256(run_op(edgert, op, arrays, attributes)[0].tobytes()).hexdigest()
        for op, arrays, attributes in isa_cases()
    ]


def test_thread_count_does_not_change_results(edgert: ModuleType) -> None:
    previous = edgert.threadpool_size()
    try:
        results = {}
        for threads in (1, 4):
            edgert.set_threadpool_size(threads)
            results[threads] = run_cases(edgert)
    finally:
        edgert.set_threadpool_size(previous)
    for (op, _, _), single, pooled in zip(isa_cases(), results[1], results[4], strict=True):
        assert single == pooled, f"{op}: results differ between 1 and 4 threads"


_HASH_OUTPUTS = """
import ctypes, json
import edgert
from tests.native.test_ops_math import run_cases
library = ctypes.CDLL(str(edgert.lib_dir() / "libedgert_kernels.so"))
library.edgert_kernels_isa.restype = ctypes.c_char_p
print(json.dumps({"isa": library.edgert_kernels_isa().decode(), "hashes": run_cases(edgert)}))
"""


def test_every_instruction_set_gives_the_same_bytes(native_install: NativeInstall) -> None:
    results = {}
    for isa in ("portable", "avx2", "avx512"):
        environment = {"EDGERT_KERNELS_ISA": isa, "PYTHONPATH": f"{native_install.prefix}:{ROOT}"}
        completed = native_install.python(_HASH_OUTPUTS, env=environment)
        assert completed.returncode == 0, completed.stderr
        results[isa] = json.loads(completed.stdout)
    assert results["portable"]["isa"] == "portable"
    cases = isa_cases()
    for result in results.values():
        for (op, _, _), hashed, portable in zip(
            cases, result["hashes"], results["portable"]["hashes"], strict=True
        ):
            assert hashed == portable, f"{op}: {result['isa']} differs from portable"


# ------------------------------------------------------------- C++ checks


def compiler() -> str:
    found = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    assert found, "a C++ compiler is required (the native build needs one too)"
    return found


SIMD_CHECK = (Path(__file__).parent / "programs" / "simd_check.cpp").read_text()


def test_simd_functions_over_a_sample_of_every_float(tmp_path: Path) -> None:
    """simd.hpp on its own: every width gives the same bits, each function keeps its bound,
    over every 4093rd float32 bit pattern. (`simd_check 1` checks every float: docs/kernels.md.)"""
    source = tmp_path / "simd_check.cpp"
    source.write_text(SIMD_CHECK)
    program = tmp_path / "simd_check"
    build = subprocess.run(
        [
            compiler(),
            "-std=c++17",
            "-O2",
            "-ffp-contract=off",
            f"-I{ROOT / 'native' / 'kernels'}",
            str(source),
            "-o",
            str(program),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    completed = subprocess.run(
        [str(program), "4093"], capture_output=True, text=True, timeout=120, check=False
    )
    lines = completed.stdout.splitlines()
    assert completed.returncode == 0 and len(lines) == 19, completed.stdout + completed.stderr
    assert all(line.startswith("OK ") for line in lines), completed.stdout


STRIDED_CHECK = (Path(__file__).parent / "programs" / "math_strided_check.cpp").read_text()


def test_strided_inputs_give_the_bytes_of_contiguous_ones(
    native_install: NativeInstall, tmp_path: Path
) -> None:
    package = native_install.package_dir
    source = tmp_path / "strided_check.cpp"
    source.write_text(STRIDED_CHECK)
    program = tmp_path / "strided_check"
    lib = package / "lib"
    build = subprocess.run(
        [
            compiler(),
            "-std=c++17",
            "-O1",
            str(source),
            "-o",
            str(program),
            f"-I{package / 'include'}",
            f"-L{lib}",
            "-Wl,--no-as-needed",
            "-ledgert_kernels",
            "-Wl,--as-needed",
            "-ledgert",
            f"-Wl,-rpath,{lib}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    completed = subprocess.run(
        [str(program)], capture_output=True, text=True, timeout=60, check=False
    )
    lines = completed.stdout.splitlines()
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert len(lines) == 77 and all(line.startswith("SAME ") for line in lines), completed.stdout
