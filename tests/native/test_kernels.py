"""The CPU kernels (libedgert_kernels) against numpy references.

Tolerances: float32 results use rtol 1e-5 / atol 1e-6 (layer_norm atol 1e-5: its reference
runs in float64); integer results and layout operators (reshape, transpose, concat) are
exact. Every program runs with set_backends([]) so the plain kernels are what is measured.
"""

from __future__ import annotations

import functools
import math
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import run_op as shared_run_op

FLOAT_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
LAYER_NORM_TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
NUMERIC_DTYPES = [np.float32, np.int32, np.int64]


run_op = functools.partial(shared_run_op, backends=[])  # the plain kernels


def values(
    shape: tuple[int, ...], dtype: type, seed: int = 0, *, nonzero: bool = False
) -> np.ndarray:
    random = np.random.RandomState(seed)
    if np.issubdtype(dtype, np.floating):
        return random.standard_normal(shape).astype(dtype)
    data = random.randint(-50, 50, size=shape).astype(dtype)
    if nonzero:
        data[data == 0] = 7
    return data


def assert_matches(actual: np.ndarray, expected: np.ndarray, tolerance: dict | None = None) -> None:
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_allclose(actual, expected, **(tolerance or FLOAT_TOLERANCE))
    else:
        np.testing.assert_array_equal(actual, expected)


# ------------------------------------------------------------------- elementwise

BINARY = {"edgert::add": np.add, "edgert::sub": np.subtract, "edgert::mul": np.multiply}
BROADCAST_SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 1, 4), (3, 1)),
    ((), (5,)),
    ((4, 1), ()),
    ((0, 3), (1, 3)),
    ((4, 0), (1,)),
    ((2, 3, 1, 2), (1, 5, 1)),
]


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcasts_like_numpy(
    edgert: ModuleType, op: str, shapes: tuple, dtype: type
) -> None:
    a, b = values(shapes[0], dtype, 1), values(shapes[1], dtype, 2)
    (result,) = run_op(edgert, op, [a, b])
    assert_matches(result, BINARY[op](a, b))


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
def test_div_is_true_division_for_floats_and_floor_division_for_integers(
    edgert: ModuleType, shapes: tuple, dtype: type
) -> None:
    a, b = values(shapes[0], dtype, 3), values(shapes[1], dtype, 4, nonzero=True)
    (result,) = run_op(edgert, "edgert::div", [a, b])
    expected = a / b if dtype == np.float32 else a // b
    assert_matches(result, expected.astype(dtype))


def test_float_division_by_zero_follows_ieee(edgert: ModuleType) -> None:
    a = np.array([1.0, -1.0, 0.0], np.float32)
    (result,) = run_op(edgert, "edgert::div", [a, np.zeros(3, np.float32)])
    assert result[0] == np.inf and result[1] == -np.inf and np.isnan(result[2])


def test_integer_division_by_zero_is_an_error(edgert: ModuleType) -> None:
    with pytest.raises(edgert.EdgertError, match="division by zero"):
        run_op(edgert, "edgert::div", [np.array([4, 5], np.int32), np.array([2, 0], np.int32)])


def test_integer_arithmetic_wraps_around(edgert: ModuleType) -> None:
    big = np.array([np.iinfo(np.int32).max, np.iinfo(np.int32).min], np.int32)
    (added,) = run_op(edgert, "edgert::add", [big, np.array([1, -1], np.int32)])
    np.testing.assert_array_equal(
        added, np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max], np.int32)
    )


@pytest.mark.parametrize("op", ["edgert::add", "edgert::sub", "edgert::mul", "edgert::div"])
def test_binary_rejects_bad_inputs(edgert: ModuleType, op: str) -> None:
    with pytest.raises(edgert.EdgertError, match="same dtype"):
        run_op(edgert, op, [np.ones(3, np.float32), np.ones(3, np.int32)])
    with pytest.raises(edgert.EdgertError, match="cannot be broadcast"):
        run_op(edgert, op, [np.ones((2, 3), np.float32), np.ones(4, np.float32)])
    with pytest.raises(edgert.EdgertError, match="not supported"):
        run_op(edgert, op, [np.ones(3, np.int8), np.ones(3, np.int8)])


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("shape", [(7,), (2, 3, 4), (), (0, 5)])
def test_relu(edgert: ModuleType, shape: tuple, dtype: type) -> None:
    x = values(shape, dtype, 5)
    (result,) = run_op(edgert, "edgert::relu", [x])
    assert_matches(result, np.maximum(x, 0).astype(dtype))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("shape", [(64,), (3, 5, 2), (0, 4)])
def test_gelu(edgert: ModuleType, shape: tuple, approximate: str) -> None:
    x = values(shape, np.float32, 6) * 3
    wide = x.astype(np.float64)
    if approximate == "none":
        expected = (
            0.5 * wide * (1 + np.vectorize(math.erf, otypes=[np.float64])(wide / math.sqrt(2)))
        )
    else:
        expected = 0.5 * wide * (1 + np.tanh(math.sqrt(2 / math.pi) * (wide + 0.044715 * wide**3)))
    (result,) = run_op(edgert, "edgert::gelu", [x], {"approximate": approximate})
    assert_matches(result, expected.astype(np.float32))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_on_a_dense_grid_and_special_values(edgert: ModuleType, approximate: str) -> None:
    """The vectorized erf and tanh (simd.hpp) across the range where they change branches
    (|x/√2| = 1, 2, 4; |2·tanh's argument| = 0.625, 18.2), and the values that stay special."""
    x = np.linspace(-9, 9, 36001, dtype=np.float32)
    wide = x.astype(np.float64)
    if approximate == "none":
        expected = 0.5 * wide * (1 + np.array([math.erf(v / math.sqrt(2)) for v in wide]))
    else:
        expected = 0.5 * wide * (1 + np.tanh(math.sqrt(2 / math.pi) * (wide + 0.044715 * wide**3)))
    (result,) = run_op(edgert, "edgert::gelu", [x], {"approximate": approximate})
    assert_matches(result, expected.astype(np.float32))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)
    (result,) = run_op(edgert, "edgert::gelu", [special], {"approximate": approximate})
    assert result[0] == 0 and not np.signbit(result[0]) and np.signbit(result[1])
    assert result[2] == np.inf and np.isnan(result[3]) and np.isnan(result[4])


def test_gelu_rejects_bad_inputs(edgert: ModuleType) -> None:
    with pytest.raises(edgert.EdgertError, match="approximate"):
        run_op(edgert, "edgert::gelu", [np.ones(2, np.float32)], {"approximate": "fast"})
    with pytest.raises(edgert.EdgertError, match="float32"):
        run_op(edgert, "edgert::gelu", [np.ones(2, np.int32)])


# ------------------------------------------------------------------- linear algebra

MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4,)),
    ((0, 4), (4, 5)),
    ((3, 0), (0, 5)),
    ((0, 3, 4), (2, 1, 4, 2)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_matmul_matches_numpy(edgert: ModuleType, shapes: tuple) -> None:
    a, b = values(shapes[0], np.float32, 7), values(shapes[1], np.float32, 8)
    (result,) = run_op(edgert, "edgert::matmul", [a, b])
    assert_matches(result, np.matmul(a, b))


def test_matmul_rejects_bad_inputs(edgert: ModuleType) -> None:
    with pytest.raises(edgert.EdgertError, match="do not match"):
        run_op(edgert, "edgert::matmul", [np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)])
    with pytest.raises(edgert.EdgertError, match="cannot be broadcast"):
        run_op(
            edgert,
            "edgert::matmul",
            [np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32)],
        )
    with pytest.raises(edgert.EdgertError, match="float32"):
        run_op(edgert, "edgert::matmul", [np.ones((2, 2), np.int32), np.ones((2, 2), np.int32)])
    with pytest.raises(edgert.EdgertError, match="at least one dimension"):
        run_op(edgert, "edgert::matmul", [np.ones((), np.float32), np.ones((2,), np.float32)])


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 8), (8,), (0, 8), (4, 0)])
def test_linear_matches_numpy(edgert: ModuleType, shape: tuple, with_bias: bool) -> None:
    x = values(shape, np.float32, 9)
    weight = values((6, shape[-1]), np.float32, 10)
    bias = values((6,), np.float32, 11) if with_bias else None
    expected = x @ weight.T + (bias if with_bias else 0)
    (result,) = run_op(edgert, "edgert::linear", [x, weight, bias])
    assert_matches(result, expected.astype(np.float32))


def test_linear_rejects_bad_inputs(edgert: ModuleType) -> None:
    x = np.ones((2, 4), np.float32)
    with pytest.raises(edgert.EdgertError, match="do not match"):
        run_op(edgert, "edgert::linear", [x, np.ones((3, 5), np.float32)])
    with pytest.raises(edgert.EdgertError, match="bias"):
        run_op(edgert, "edgert::linear", [x, np.ones((3, 4), np.float32), np.ones(2, np.float32)])
    with pytest.raises(edgert.EdgertError, match="weight must be float32"):
        run_op(edgert, "edgert::linear", [x, np.ones((3, 4), np.int32)])
    with pytest.raises(edgert.EdgertError, match="inputs"):
        run_op(edgert, "edgert::linear", [x])


# ------------------------------------------------------------------- normalization


def softmax_reference(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    return (shifted / shifted.sum(axis=axis, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_softmax(edgert: ModuleType, axis: int) -> None:
    x = values((3, 4, 5), np.float32, 12) * 4
    (result,) = run_op(edgert, "edgert::softmax", [x], {"axis": axis})
    assert_matches(result, softmax_reference(x, axis))


def test_softmax_of_empty_tensor_and_bad_axis(edgert: ModuleType) -> None:
    (result,) = run_op(edgert, "edgert::softmax", [np.zeros((0, 3), np.float32)], {"axis": 1})
    assert result.shape == (0, 3)
    with pytest.raises(edgert.EdgertError, match="axis"):
        run_op(edgert, "edgert::softmax", [np.zeros((2, 3), np.float32)], {"axis": 2})
    with pytest.raises(edgert.EdgertError, match="float32"):
        run_op(edgert, "edgert::softmax", [np.zeros((2, 3), np.int64)])


def layer_norm_reference(
    x: np.ndarray, axis: int, eps: float, weight: np.ndarray | None, bias: np.ndarray | None
) -> np.ndarray:
    wide = x.astype(np.float64)
    dims = tuple(range(axis % x.ndim, x.ndim))
    mean = wide.mean(axis=dims, keepdims=True)
    variance = ((wide - mean) ** 2).mean(axis=dims, keepdims=True)
    result = (wide - mean) / np.sqrt(variance + eps)
    if weight is not None:
        result = result * weight
    if bias is not None:
        result = result + bias
    return result.astype(np.float32)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm(edgert: ModuleType, axis: int, affine: bool) -> None:
    x = values((2, 3, 4), np.float32, 13) * 2 + 1
    normalized = x.shape[axis % 3 :]
    weight = values(normalized, np.float32, 14) if affine else None
    bias = values(normalized, np.float32, 15) if affine else None
    (result,) = run_op(edgert, "edgert::layer_norm", [x, weight, bias], {"axis": axis, "eps": 1e-3})
    assert_matches(result, layer_norm_reference(x, axis, 1e-3, weight, bias), LAYER_NORM_TOLERANCE)


def test_layer_norm_rejects_bad_inputs(edgert: ModuleType) -> None:
    x = np.ones((2, 4), np.float32)
    with pytest.raises(edgert.EdgertError, match="normalized shape"):
        run_op(edgert, "edgert::layer_norm", [x, np.ones(3, np.float32), None])
    with pytest.raises(edgert.EdgertError, match="axis"):
        run_op(edgert, "edgert::layer_norm", [x], {"axis": 5})
    (empty,) = run_op(edgert, "edgert::layer_norm", [np.zeros((0, 4), np.float32)])
    assert empty.shape == (0, 4)


# ------------------------------------------------------------------- layout


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int32, np.int64])
@pytest.mark.parametrize("shape", [[4, -1], [24], [-1], [2, 2, 3, 2]])
def test_reshape(edgert: ModuleType, shape: list, dtype: type) -> None:
    x = np.arange(24).reshape(2, 3, 4).astype(dtype)
    (result,) = run_op(edgert, "edgert::reshape", [x], {"shape": shape})
    assert_matches(result, x.reshape(shape))


def test_reshape_empty_and_bad_shapes(edgert: ModuleType) -> None:
    (result,) = run_op(edgert, "edgert::reshape", [np.zeros((0, 3), np.float32)], {"shape": [3, 0]})
    assert result.shape == (3, 0)
    x = np.zeros((2, 3), np.float32)
    for shape in ([5, -1], [-1, -1], [4], [-1, 0], [-2, 3]):
        with pytest.raises(edgert.EdgertError, match="reshape|shape"):
            run_op(edgert, "edgert::reshape", [x], {"shape": shape})


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.int64])
@pytest.mark.parametrize("perm", [[2, 0, 1], [0, 1, 2], [1, 2, 0], [-1, 0, 1], None])
def test_transpose(edgert: ModuleType, perm: list | None, dtype: type) -> None:
    x = np.arange(24).reshape(2, 3, 4).astype(dtype)
    (result,) = run_op(edgert, "edgert::transpose", [x], None if perm is None else {"perm": perm})
    assert_matches(result, np.ascontiguousarray(np.transpose(x, perm)))


def test_transpose_rejects_bad_permutations(edgert: ModuleType) -> None:
    x = np.zeros((2, 3), np.float32)
    for perm in ([0, 0], [0], [0, 2], [0, 1, 2]):
        with pytest.raises(edgert.EdgertError, match="permutation"):
            run_op(edgert, "edgert::transpose", [x], {"perm": perm})
    (empty,) = run_op(edgert, "edgert::transpose", [np.zeros((0, 3), np.float32)], {"perm": [1, 0]})
    assert empty.shape == (3, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.int64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(edgert: ModuleType, axis: int, dtype: type) -> None:
    pieces = []
    for seed, size in enumerate([2, 0, 3]):
        shape = [2, 3, 4]
        shape[axis] = size
        pieces.append((np.random.RandomState(seed).randint(0, 100, size=shape)).astype(dtype))
    (result,) = run_op(edgert, "edgert::concat", pieces, {"axis": axis})
    assert_matches(result, np.concatenate(pieces, axis=axis))


def test_concat_rejects_bad_inputs(edgert: ModuleType) -> None:
    with pytest.raises(edgert.EdgertError, match="same dtype"):
        run_op(edgert, "edgert::concat", [np.zeros((2, 2), np.float32), np.zeros((2, 2), np.int32)])
    with pytest.raises(edgert.EdgertError, match="differ outside axis"):
        run_op(
            edgert,
            "edgert::concat",
            [np.zeros((2, 2), np.float32), np.zeros((3, 3), np.float32)],
            {"axis": 0},
        )
    with pytest.raises(edgert.EdgertError, match="axis"):
        run_op(edgert, "edgert::concat", [np.zeros((2, 2), np.float32)], {"axis": 2})


# ------------------------------------------------------------------- threads


def test_thread_count_does_not_change_results(edgert: ModuleType) -> None:
    """Large enough that every kernel splits its work; pool sizes 1 and 4 give the same bytes."""
    cases = [
        (
            "edgert::matmul",
            [values((3, 96, 64), np.float32, 1), values((64, 80), np.float32, 2)],
            None,
        ),
        (
            "edgert::linear",
            [
                values((300, 128), np.float32, 3),
                values((96, 128), np.float32, 4),
                values((96,), np.float32, 5),
            ],
            None,
        ),
        ("edgert::add", [values((512, 300), np.float32, 6), values((300,), np.float32, 7)], None),
        ("edgert::gelu", [values((512, 300), np.float32, 8)], None),
        ("edgert::softmax", [values((40, 2000), np.float32, 9)], {"axis": 0}),
        ("edgert::layer_norm", [values((600, 256), np.float32, 10)], None),
    ]
    previous = edgert.threadpool_size()
    try:
        results = {}
        for threads in (1, 4):
            edgert.set_threadpool_size(threads)
            assert edgert.threadpool_size() == threads
            results[threads] = [
                run_op(edgert, op, arrays, attributes)[0].tobytes()
                for op, arrays, attributes in cases
            ]
    finally:
        edgert.set_threadpool_size(previous)
    for (op, _, _), single, pooled in zip(cases, results[1], results[4], strict=True):
        assert single == pooled, f"{op}: results differ between 1 and 4 threads"


def test_non_contiguous_numpy_inputs(edgert: ModuleType) -> None:
    """Strided numpy views are accepted (bound as contiguous copies); kernels that read
    strided tensors directly are covered from C++ in test_kernels_strided.py."""
    base = values((4, 6), np.float32, 20)
    a, b = base.T, base[::2, ::3]
    assert not a.flags.c_contiguous and not b.flags.c_contiguous
    (result,) = run_op(edgert, "edgert::matmul", [a, values((4, 2), np.float32, 21)])
    assert_matches(result, a @ values((4, 2), np.float32, 21))
    (result,) = run_op(edgert, "edgert::mul", [b, b])
    assert_matches(result, b * b)
