"""The layout and indexing kernels (docs/operators.md, "Operators of common models"):
reshape, slice, squeeze, unsqueeze, expand, split, pad, full_like, cast, gather,
index_select and embedding, exactly against numpy and torch.

Programs bind inputs as contiguous copies, so strided inputs, the views these kernels
return and the storage those views keep alive are checked from C++ (LAYOUT_CHECK, built
against the installed SDK like test_kernels_strided.py). Everything runs on the plain
kernels (set_backends([])).
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from tests.native.support import NativeInstall
from tests.native.support import run_op as shared_run_op

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
ALL_DTYPES = [np.float32, np.int8, np.uint8, np.int32, np.int64, np.bool_]
PAD_DTYPES = [np.float32, np.int32, np.int64, np.bool_]
DTYPE_NAMES = {np.dtype(dtype): np.dtype(dtype).name for dtype in ALL_DTYPES}

run_op = functools.partial(shared_run_op, backends=[])


def sample(shape: tuple[int, ...], dtype: type, seed: int = 0) -> np.ndarray:
    """Distinct-looking values of `dtype`: floats with fractions, integers over the whole
    range of int8/uint8 and beyond it for the wider types."""
    random = np.random.RandomState(seed)
    if dtype == np.bool_:
        return random.randint(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.floating):
        return (random.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    low, high = max(int(info.min), -(2**40)), min(int(info.max), 2**40)
    return random.randint(low, high, size=shape, dtype=np.int64).astype(dtype)


def assert_exact(actual: np.ndarray, expected: np.ndarray | torch.Tensor) -> None:
    """Same shape, dtype and bytes (NaN bit patterns included)."""
    if isinstance(expected, torch.Tensor):
        expected = expected.numpy()
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.tobytes() == np.ascontiguousarray(expected).tobytes(), (actual, expected)


def run_program(
    edgert: ModuleType, build: object, arrays: list[np.ndarray], shapes: list[tuple] | None = None
) -> list[np.ndarray]:
    """Runs the program `build(builder, *inputs)` makes (it returns the values to output);
    `shapes` declares the inputs' shapes (-1: known at run time)."""
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    declared = shapes or [array.shape for array in arrays]
    inputs = [builder.input(a.dtype, shape) for a, shape in zip(arrays, declared, strict=True)]
    for value in build(builder, *inputs):  # type: ignore[operator]
        builder.output(value)
    program = edgert.load(builder.to_bytes())
    program.set_backends([])
    return program.run(arrays)


def rejects(edgert: ModuleType, op: str, arrays: list[np.ndarray], attributes: dict,
            message: str, outputs: int = 1) -> None:
    """The operator fails with an EdgertError naming it and matching `message`."""
    with pytest.raises(edgert.EdgertError, match=f"{op}.*{message}"):
        run_op(edgert, op, arrays, attributes, outputs=outputs)


# ---------------------------------------------------------------------- reshape


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reshape_every_dtype(edgert: ModuleType, dtype: type) -> None:
    x = sample((2, 3, 4), dtype)
    for shape in ([4, 6], [-1], [2, -1, 2], [24, 1, 1]):
        (result,) = run_op(edgert, "edgert::reshape", [x], {"shape": shape})
        assert_exact(result, x.reshape(shape))


def test_reshape_keep_takes_the_input_size_for_a_dynamic_batch(edgert: ModuleType) -> None:
    def build(builder, x):  # type: ignore[no-untyped-def]
        kept = builder.op("edgert::reshape", [x], {"shape": [0, 12], "keep": [0]})
        inferred = builder.op("edgert::reshape", [x], {"shape": [-1, 0], "keep": [1]})
        both = builder.op("edgert::reshape", [x], {"shape": [-1, -1, 2, 2], "keep": [0]})
        return [kept, inferred, both]

    for batch in (1, 3):
        x = sample((batch, 3, 4), np.float32, batch)
        kept, inferred, both = run_program(edgert, build, [x], [(-1, 3, 4)])
        assert_exact(kept, x.reshape(batch, 12))
        assert_exact(inferred, x.reshape(-1, 3))
        assert_exact(both, x.reshape(batch, 3, 2, 2))
    # An empty batch leaves the remaining -1 ambiguous (as torch): an error, not a guess.
    with pytest.raises(edgert.EdgertError, match="edgert::reshape: cannot reshape"):
        run_program(edgert, build, [np.zeros((0, 3, 4), np.float32)], [(-1, 3, 4)])


def test_reshape_scaled_makes_a_dimension_a_multiple_of_an_input_size(edgert: ModuleType) -> None:
    """[B, 3, L] -> [3·B, L] and back to [B, 3, L] with B and L known only at run time: each
    run-time output size is an input size times a factor (a batch merged with a static
    dimension), the one left inferred."""

    def build(builder, x):  # type: ignore[no-untyped-def]
        rows = builder.op("edgert::reshape", [x], {"shape": [1, 1], "scaled": [0, 0, 3, 1, 2, 1]})
        back = builder.op("edgert::reshape", [rows], {"shape": [-1, 3, 1], "scaled": [2, 1, 1]})
        return [rows, back]

    for batch, length in ((1, 5), (4, 2)):
        x = sample((batch, 3, length), np.float32, batch)
        rows, back = run_program(edgert, build, [x], [(-1, 3, -1)])
        assert_exact(rows, x.reshape(3 * batch, length))
        assert_exact(back, x)


def test_reshape_rejects_bad_keep_and_shapes(edgert: ModuleType) -> None:
    x = sample((2, 3), np.float32)
    for keep in ([2], [-1], [INT64_MAX], [INT64_MIN]):
        rejects(edgert, "edgert::reshape", [x], {"shape": [0, 3], "keep": keep}, "keep")
    rejects(edgert, "edgert::reshape", [x], {"shape": [3], "keep": [1]}, "keep")
    rejects(edgert, "edgert::reshape", [x], {"shape": [0, 3], "keep": 0.5}, "keep")
    rejects(edgert, "edgert::reshape", [x], {"shape": [2**40, 2**40]}, "too large")
    rejects(edgert, "edgert::reshape", [x], {"shape": [-1, -1]}, "shape")
    rejects(edgert, "edgert::reshape", [x], {"shape": 6}, "shape")
    for scaled in ([0, 0], [2, 0, 1], [0, 2, 1], [0, 0, 0], [0, 0, -3], [0, 0, INT64_MAX]):
        rejects(edgert, "edgert::reshape", [x], {"shape": [1, 3], "scaled": scaled}, "scaled")


# ------------------------------------------------------------------------ slice

SLICES = [
    (0, INT64_MAX, 1),
    (1, 4, 1),
    (-3, -1, 1),
    (-100, 100, 2),
    (5, 2, 1),
    (2, 2, 1),
    (INT64_MIN, INT64_MAX, 3),
    (INT64_MAX, INT64_MAX, 1),
    (1, INT64_MAX, 4),
    (0, 6, 6),
    (0, 6, INT64_MAX),
    (-1, INT64_MAX, 2),
    (7, 8, 1),
]


@pytest.mark.parametrize("start,end,step", SLICES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_slice_follows_python_slicing(edgert: ModuleType, axis: int, start: int, end: int,
                                      step: int) -> None:
    x = sample((6, 6, 5), np.float32, 3)
    attributes = {"axis": axis, "start": start, "end": end, "step": step}
    (result,) = run_op(edgert, "edgert::slice", [x], attributes)
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, end, step)
    assert_exact(result, x[tuple(index)])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_slice_every_dtype_and_defaults(edgert: ModuleType, dtype: type) -> None:
    x = sample((4, 5), dtype, 4)
    (result,) = run_op(edgert, "edgert::slice", [x], {"axis": 1, "start": 1, "step": 2})
    assert_exact(result, x[:, 1::2])
    (result,) = run_op(edgert, "edgert::slice", [x], {"end": -1})
    assert_exact(result, x[:-1])
    (result,) = run_op(edgert, "edgert::slice", [x], {"start": 1, "end": 3})
    assert_exact(result, x[1:3])


def test_slice_of_empty_and_dynamic_inputs(edgert: ModuleType) -> None:
    x = np.zeros((0, 4), np.int64)
    (result,) = run_op(edgert, "edgert::slice", [x], {"axis": 1, "start": 1, "end": 3})
    assert_exact(result, x[:, 1:3])

    def build(builder, x):  # type: ignore[no-untyped-def]
        return [builder.op("edgert::slice", [x], {"axis": 0, "start": 1, "end": INT64_MAX},
                           dtype=np.int32)]

    for batch in (0, 1, 5):
        x = sample((batch, 3), np.int32, batch)
        (result,) = run_program(edgert, build, [x], [(-1, 3)])
        assert_exact(result, x[1:])


def test_slice_rejects_bad_attributes(edgert: ModuleType) -> None:
    x = sample((3, 4), np.float32)
    for step in (0, -1, INT64_MIN):
        rejects(edgert, "edgert::slice", [x], {"axis": 0, "step": step}, "step")
    for axis in (2, -3, INT64_MAX, INT64_MIN):
        rejects(edgert, "edgert::slice", [x], {"axis": axis}, "axis")
    rejects(edgert, "edgert::slice", [x], {"axis": 0.0}, "axis.*int")
    rejects(edgert, "edgert::slice", [x], {"start": [1]}, "start.*int")
    rejects(edgert, "edgert::slice", [np.float32(1.0).reshape(())], {}, "axis")


# ------------------------------------------------------------ squeeze, unsqueeze


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_squeeze_matches_torch(edgert: ModuleType, dtype: type) -> None:
    x = sample((1, 3, 1, 2, 1), dtype, 5)
    cases: list[tuple[dict, tuple]] = [
        ({}, ()),  # absent: every size-1 dimension
        ({"axes": [0]}, (0,)),
        ({"axes": [-1, 2]}, (-1, 2)),
        ({"axes": [1]}, (1,)),  # size 3: kept, as torch does
        ({"axes": []}, ()),  # empty: nothing
    ]
    for attributes, dims in cases:
        (result,) = run_op(edgert, "edgert::squeeze", [x], attributes)
        expected = torch.from_numpy(x).squeeze() if "axes" not in attributes else (
            torch.from_numpy(x).squeeze(dims))
        assert_exact(result, expected)


def test_squeeze_of_empty_and_scalar_results(edgert: ModuleType) -> None:
    (result,) = run_op(edgert, "edgert::squeeze", [np.zeros((1, 0, 1), np.float32)], {})
    assert_exact(result, np.zeros((0,), np.float32))
    (result,) = run_op(edgert, "edgert::squeeze", [np.full((1, 1), 7, np.int64)], {})
    assert_exact(result, np.array(7, np.int64))


def test_squeeze_rejects_bad_axes(edgert: ModuleType) -> None:
    x = sample((1, 3, 1), np.float32)
    for axes in ([3], [-4], [0, 0], [0, -3], [INT64_MAX]):
        rejects(edgert, "edgert::squeeze", [x], {"axes": axes}, "axes")
    rejects(edgert, "edgert::squeeze", [x], {"axes": 0}, "axes.*list")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unsqueeze_every_axis(edgert: ModuleType, dtype: type) -> None:
    x = sample((2, 3), dtype, 6)
    for axis in range(-3, 3):
        (result,) = run_op(edgert, "edgert::unsqueeze", [x], {"axis": axis})
        assert_exact(result, np.expand_dims(x, axis))
    (result,) = run_op(edgert, "edgert::unsqueeze", [np.array(5, dtype)], {"axis": -1})
    assert_exact(result, np.array([5], dtype))


def test_unsqueeze_rejects_bad_axes(edgert: ModuleType) -> None:
    x = sample((2, 3), np.float32)
    for axis in (3, -4, INT64_MAX, INT64_MIN):
        rejects(edgert, "edgert::unsqueeze", [x], {"axis": axis}, "axis")
    rejects(edgert, "edgert::unsqueeze", [x], {}, "axis.*required")
    rejects(edgert, "edgert::unsqueeze", [x], {"axis": [0]}, "axis.*int")


# ----------------------------------------------------------------------- expand


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_expand_matches_torch(edgert: ModuleType, dtype: type) -> None:
    x = sample((3, 1, 2), dtype, 7)
    for shape in ([3, 4, 2], [-1, 5, -1], [2, 3, 1, 2], [2, 1, -1, 0, -1], [3, 1, 2], [1, 3, 1, 2]):
        (result,) = run_op(edgert, "edgert::expand", [x], {"shape": shape})
        assert_exact(result, torch.from_numpy(x).expand(shape).contiguous())
    (result,) = run_op(edgert, "edgert::expand", [np.array(4, dtype)], {"shape": [2, 3]})
    assert_exact(result, np.broadcast_to(np.array(4, dtype), (2, 3)))


def test_expand_with_a_dynamic_batch(edgert: ModuleType) -> None:
    def build(builder, x):  # type: ignore[no-untyped-def]
        return [builder.op("edgert::expand", [x], {"shape": [-1, 4, -1]})]

    for batch in (0, 1, 3):
        x = sample((batch, 1, 2), np.float32, batch)
        (result,) = run_program(edgert, build, [x], [(-1, 1, 2)])
        assert_exact(result, np.broadcast_to(x, (batch, 4, 2)))


def test_expand_rejects_bad_shapes(edgert: ModuleType) -> None:
    x = sample((3, 1), np.float32)
    rejects(edgert, "edgert::expand", [x], {"shape": [4, 1]}, "expand")
    rejects(edgert, "edgert::expand", [x], {"shape": [1]}, "fewer")
    rejects(edgert, "edgert::expand", [x], {"shape": [-1, 3, 1]}, "new")
    rejects(edgert, "edgert::expand", [x], {"shape": [3, -2]}, "shape")
    rejects(edgert, "edgert::expand", [x], {"shape": [2**30, 3, 2**30]}, "too large")
    rejects(edgert, "edgert::expand", [x], {"shape": [INT64_MAX, 3, INT64_MAX]}, "too large")
    rejects(edgert, "edgert::expand", [x], {}, "shape.*required")


# ------------------------------------------------------------------------ split


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis,sizes", [(0, [1, 3, 0, 2]), (1, [2, 2]), (-1, [3, 0]), (1, [4])])
def test_split_matches_torch(edgert: ModuleType, dtype: type, axis: int, sizes: list) -> None:
    x = sample((6, 4, 3), dtype, 8)
    results = run_op(edgert, "edgert::split", [x], {"axis": axis, "sizes": sizes},
                     outputs=len(sizes))
    expected = torch.split(torch.from_numpy(x), sizes, dim=axis)
    assert len(results) == len(expected)
    for result, part in zip(results, expected, strict=True):
        assert_exact(result, part.contiguous())


def test_split_rejects_bad_sizes(edgert: ModuleType) -> None:
    x = sample((4, 3), np.float32)
    rejects(edgert, "edgert::split", [x], {"axis": 0, "sizes": [1, 2]}, "sum", outputs=2)
    rejects(edgert, "edgert::split", [x], {"axis": 0, "sizes": [5, -1]}, "sizes", outputs=2)
    rejects(edgert, "edgert::split", [x], {"axis": 0, "sizes": [INT64_MAX, 2]}, "sizes", outputs=2)
    rejects(edgert, "edgert::split", [x], {"axis": 0, "sizes": [2, 2]}, "outputs", outputs=3)
    rejects(edgert, "edgert::split", [x], {"axis": 2, "sizes": [4]}, "axis")
    rejects(edgert, "edgert::split", [x], {"axis": 0}, "sizes.*required")


# -------------------------------------------------------------------------- pad


@pytest.mark.parametrize("dtype", PAD_DTYPES)
@pytest.mark.parametrize(
    "pads", [[1, 2], [0, 0, 2, 1], [-1, 1], [1, -2, -1, 0], [-4, 0], [2, 1, 0, 3, 1, 1], [-2, -2]]
)
def test_pad_matches_torch(edgert: ModuleType, dtype: type, pads: list) -> None:
    x = sample((2, 3, 4), dtype, 9)
    value = 1.0 if dtype == np.bool_ else 5.0
    (result,) = run_op(edgert, "edgert::pad", [x], {"pads": pads, "value": value})
    expected = torch.nn.functional.pad(torch.from_numpy(x), pads, value=value)
    assert_exact(result, expected)


def test_pad_value_converts_like_cast_and_defaults_to_zero(edgert: ModuleType) -> None:
    x = sample((2, 2), np.int32, 10)
    (result,) = run_op(edgert, "edgert::pad", [x], {"pads": [1, 0]})
    assert_exact(result, np.pad(x, ((0, 0), (1, 0))))
    for value, expected in ((2.7, 2), (-2.7, -2), (1e20, 2**31 - 1), (math.nan, 0)):
        (result,) = run_op(edgert, "edgert::pad", [x], {"pads": [0, 1], "value": value})
        assert_exact(result, np.pad(x, ((0, 0), (0, 1)), constant_values=expected))
    flags = np.zeros(2, np.bool_)
    (result,) = run_op(edgert, "edgert::pad", [flags], {"pads": [1, 1], "value": 0.25})
    assert_exact(result, np.array([True, False, False, True]))
    (result,) = run_op(edgert, "edgert::pad", [np.float32(3).reshape(())], {"pads": []})
    assert_exact(result, np.array(3, np.float32))


def test_pad_of_empty_and_dynamic_inputs(edgert: ModuleType) -> None:
    (result,) = run_op(edgert, "edgert::pad", [np.zeros((0, 2), np.float32)],
                       {"pads": [1, 1, 1, 0], "value": -1.0})
    assert_exact(result, np.full((1, 4), -1, np.float32))

    def build(builder, x):  # type: ignore[no-untyped-def]
        attributes = {"pads": [0, 0, 1, 1], "value": 9.0}
        return [builder.op("edgert::pad", [x], attributes, dtype=np.int64)]

    for batch in (0, 2):
        x = sample((batch, 2), np.int64, batch)
        (result,) = run_program(edgert, build, [x], [(-1, 2)])
        assert_exact(result, np.pad(x, ((1, 1), (0, 0)), constant_values=9))


def test_pad_rejects_bad_pads_and_dtypes(edgert: ModuleType) -> None:
    x = sample((2, 3), np.float32)
    rejects(edgert, "edgert::pad", [x], {"pads": [1]}, "pairs")
    rejects(edgert, "edgert::pad", [x], {"pads": [1, 1, 1, 1, 1, 1]}, "pairs")
    rejects(edgert, "edgert::pad", [x], {"pads": [-2, -2]}, "negative size")
    rejects(edgert, "edgert::pad", [x], {"pads": [INT64_MAX, 0]}, "out of range")
    rejects(edgert, "edgert::pad", [x], {"pads": [INT64_MIN, INT64_MAX]}, "out of range")
    rejects(edgert, "edgert::pad", [x], {"pads": [2**40, 0, 2**40, 0]}, "too large")
    rejects(edgert, "edgert::pad", [x], {}, "pads.*required")
    rejects(edgert, "edgert::pad", [x], {"pads": [1, 1], "value": "one"}, "value")
    for dtype in (np.int8, np.uint8):
        rejects(edgert, "edgert::pad", [x.astype(dtype)], {"pads": [1, 1]}, "int8")


# -------------------------------------------------------------------- full_like


@pytest.mark.parametrize("source", ALL_DTYPES)
@pytest.mark.parametrize("target", [None, *ALL_DTYPES])
def test_full_like_every_dtype(edgert: ModuleType, source: type, target: type | None) -> None:
    x = sample((2, 3), source, 11)
    attributes: dict = {"value": 3.0}
    if target is not None:
        attributes["dtype"] = DTYPE_NAMES[np.dtype(target)]
    (result,) = run_op(edgert, "edgert::full_like", [x], attributes)
    assert_exact(result, np.full((2, 3), 3, target or source))


def test_full_like_converts_the_value_like_cast(edgert: ModuleType) -> None:
    x = np.zeros((2,), np.float32)
    cases = [
        ("int32", -3.9, -3), ("int32", 1e20, 2**31 - 1), ("int32", -1e20, -(2**31)),
        ("int8", 300.0, 127), ("uint8", -5.0, 0), ("uint8", 255.9, 255), ("int64", math.nan, 0),
        ("int64", 1e19, INT64_MAX), ("bool", 0.1, True), ("bool", 0.0, False),
        ("float32", 1e300, math.inf), ("float32", 0.1, np.float32(0.1)),
    ]
    for dtype, value, expected in cases:
        (result,) = run_op(edgert, "edgert::full_like", [x], {"value": value, "dtype": dtype})
        assert_exact(result, np.full((2,), expected, dtype))


def test_full_like_of_empty_and_dynamic_inputs(edgert: ModuleType) -> None:
    def build(builder, x):  # type: ignore[no-untyped-def]
        attributes = {"value": 2.0, "dtype": "int64"}
        return [builder.op("edgert::full_like", [x], attributes, dtype=np.int64)]

    for batch in (0, 4):
        (result,) = run_program(edgert, build, [np.zeros((batch, 3), np.float32)], [(-1, 3)])
        assert_exact(result, np.full((batch, 3), 2, np.int64))


def test_full_like_rejects_bad_attributes(edgert: ModuleType) -> None:
    x = np.zeros((2,), np.float32)
    rejects(edgert, "edgert::full_like", [x], {}, "value.*required")
    rejects(edgert, "edgert::full_like", [x], {"value": 1.0, "dtype": "float64"}, "dtype")
    rejects(edgert, "edgert::full_like", [x], {"value": 1.0, "dtype": 5}, "dtype.*string")
    rejects(edgert, "edgert::full_like", [x], {"value": [1.0, 2.0]}, "value")


# ------------------------------------------------------------------------- cast

FLOAT_SPECIALS = [
    0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.5, 100.7, -100.7, 126.9, 127.5, 128.0,
    -128.9, -129.0, 254.6, 255.99, 256.0, -1.0, 1e9, -1e9, 2147483520.0, 2.0**31, -(2.0**31),
    -2147483904.0, 1e18, 2.0**63, -(2.0**63), -1e19, 3.4e38, -3.4e38, math.inf, -math.inf,
    math.nan, 1e-40,
]


def cast_reference(x: np.ndarray, target: type) -> np.ndarray:
    """The contract's conversion: float to integer rounds toward zero, saturates and maps NaN
    to 0; integer to integer wraps; to bool is x != 0; from bool gives 0 or 1."""
    if x.dtype == np.float32 and np.issubdtype(target, np.integer):
        info = np.iinfo(target)
        converted = []
        for value in x.astype(np.float64).ravel().tolist():
            if math.isnan(value):
                converted.append(0)
            elif value >= int(info.max) + 1:
                converted.append(int(info.max))
            elif value <= int(info.min):
                converted.append(int(info.min))
            else:
                converted.append(int(value))  # int() rounds toward zero
        return np.array(converted, dtype=np.int64).astype(target).reshape(x.shape)
    if target == np.bool_:
        return x != 0
    return x.astype(target)  # integer wrap-around, integer to float, bool to 0/1


@pytest.mark.parametrize("source", ALL_DTYPES)
@pytest.mark.parametrize("target", ALL_DTYPES)
def test_cast_every_dtype_pair(edgert: ModuleType, source: type, target: type) -> None:
    x = sample((3, 7), source, 12)
    if source == np.float32:
        x = np.concatenate([x.ravel(), np.array(FLOAT_SPECIALS, np.float32)]).reshape(-1, 3)
    elif np.issubdtype(source, np.integer):
        info = np.iinfo(source)
        edges = [info.min, info.max, 0, -1 if info.min < 0 else 1, 255, 256, 2**31, 2**24 + 1]
        x = np.concatenate([x.ravel(), np.array([e for e in edges if info.min <= e <= info.max],
                                                np.int64).astype(source)])
    (result,) = run_op(edgert, "edgert::cast", [x], {"dtype": DTYPE_NAMES[np.dtype(target)]})
    assert_exact(result, cast_reference(x, target))


def test_cast_reads_any_nonzero_bool_byte_as_true_writes_0_or_1(edgert: ModuleType) -> None:
    raw = np.array([0, 1, 2, 128, 255], np.uint8).view(np.bool_)
    (as_int,) = run_op(edgert, "edgert::cast", [raw], {"dtype": "int32"})
    assert_exact(as_int, np.array([0, 1, 1, 1, 1], np.int32))
    (as_float,) = run_op(edgert, "edgert::cast", [raw], {"dtype": "float32"})
    assert_exact(as_float, np.array([0, 1, 1, 1, 1], np.float32))
    (as_bool,) = run_op(edgert, "edgert::cast", [raw], {"dtype": "bool"})
    assert as_bool.view(np.uint8).tolist() == [0, 1, 1, 1, 1]


def test_cast_of_empty_and_dynamic_inputs(edgert: ModuleType) -> None:
    def build(builder, x):  # type: ignore[no-untyped-def]
        return [builder.op("edgert::cast", [x], {"dtype": "int8"}, dtype=np.int8)]

    for batch in (0, 3):
        x = sample((batch, 2), np.float32, batch)
        (result,) = run_program(edgert, build, [x], [(-1, 2)])
        assert_exact(result, cast_reference(x, np.int8))


def test_cast_rejects_bad_dtypes(edgert: ModuleType) -> None:
    x = np.zeros((2,), np.float32)
    rejects(edgert, "edgert::cast", [x], {}, "dtype.*required")
    rejects(edgert, "edgert::cast", [x], {"dtype": "float16"}, "unknown dtype")
    rejects(edgert, "edgert::cast", [x], {"dtype": ""}, "unknown dtype")
    rejects(edgert, "edgert::cast", [x], {"dtype": 3}, "dtype.*string")


# ----------------------------------------------------------------------- gather


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_matches_torch(edgert: ModuleType, dtype: type, index_dtype: type,
                              axis: int) -> None:
    x = sample((4, 5, 3), dtype, 13)
    random = np.random.RandomState(14)
    index_shape = [3, 4, 2]
    index_shape[axis] = 6  # along axis the index may be longer than x
    index = random.randint(0, x.shape[axis], size=index_shape).astype(index_dtype)
    (result,) = run_op(edgert, "edgert::gather", [x, index], {"axis": axis})
    expected = torch.gather(torch.from_numpy(x), axis, torch.from_numpy(index.astype(np.int64)))
    assert_exact(result, expected)


def test_gather_of_empty_indices_and_dynamic_batch(edgert: ModuleType) -> None:
    x = sample((3, 4), np.float32, 15)
    (result,) = run_op(edgert, "edgert::gather", [x, np.zeros((0, 4), np.int64)], {"axis": 0})
    assert_exact(result, np.zeros((0, 4), np.float32))

    def build(builder, x, index):  # type: ignore[no-untyped-def]
        return [builder.op("edgert::gather", [x, index], {"axis": 1})]

    for batch in (0, 2):
        x = sample((batch, 5), np.float32, batch)
        index = (np.arange(batch * 2).reshape(batch, 2) % 5).astype(np.int64)
        (result,) = run_program(edgert, build, [x, index], [(-1, 5), (-1, 2)])
        assert_exact(result, np.take_along_axis(x, index, 1))


def test_gather_rejects_bad_indices(edgert: ModuleType) -> None:
    x = sample((3, 4), np.float32)
    rejects(edgert, "edgert::gather", [x, np.array([[3, 0, 0]])], {"axis": 0}, "index 3 .*size 3")
    rejects(edgert, "edgert::gather", [x, np.array([[0, -1]])], {"axis": 1}, "index -1 .*size 4")
    rejects(edgert, "edgert::gather", [x, np.array([[2**40]])], {"axis": 0}, "index 1099511627776 ")
    rejects(edgert, "edgert::gather", [x, np.zeros((1, 5), np.int64)], {"axis": 0}, "larger")
    rejects(edgert, "edgert::gather", [x, np.zeros((4,), np.int64)], {"axis": 0}, "rank")
    for dtype in (np.float32, np.int8, np.bool_):
        index = np.zeros((1, 1), dtype)
        rejects(edgert, "edgert::gather", [x, index], {"axis": 0}, "int32 or int64")
    rejects(edgert, "edgert::gather", [x, np.zeros((1, 1), np.int64)], {}, "axis.*required")
    rejects(edgert, "edgert::gather", [x, np.zeros((1, 1), np.int64)], {"axis": 2}, "axis 2")
    rejects(edgert, "edgert::gather", [x, np.zeros((1, 1), np.int64)], {"axis": 1.0}, "axis.*int")
    rejects(edgert, "edgert::gather", [np.zeros((0, 2), np.float32), np.zeros((1, 2), np.int64)],
            {"axis": 0}, "index 0 .*size 0")


# ----------------------------------------------------------------- index_select


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_index_select_matches_torch(edgert: ModuleType, dtype: type, index_dtype: type,
                                    axis: int) -> None:
    x = sample((4, 5, 3), dtype, 16)
    index = np.array([2, 0, 2, 1, 0, 0, 1], index_dtype) % x.shape[axis]
    (result,) = run_op(edgert, "edgert::index_select", [x, index], {"axis": axis})
    index_tensor = torch.from_numpy(index.astype(np.int64))
    expected = torch.index_select(torch.from_numpy(x), axis, index_tensor)
    assert_exact(result, expected)
    (result,) = run_op(edgert, "edgert::index_select", [x, index[:0]], {"axis": axis})
    assert_exact(result, np.take(x, index[:0], axis=axis))


def test_index_select_rejects_bad_indices(edgert: ModuleType) -> None:
    x = sample((3, 4), np.float32)
    rejects(edgert, "edgert::index_select", [x, np.array([0, 4])], {"axis": 1}, "index 4 .*size 4")
    rejects(edgert, "edgert::index_select", [x, np.array([-1], np.int32)], {"axis": 0}, "index -1 ")
    rejects(edgert, "edgert::index_select", [x, np.zeros((1, 1), np.int64)], {"axis": 0}, "1-D")
    flags = np.zeros(1, np.bool_)
    rejects(edgert, "edgert::index_select", [x, flags], {"axis": 0}, "int32 or int64")
    rejects(edgert, "edgert::index_select", [x, np.zeros(1, np.int64)], {"axis": -3}, "axis")


# -------------------------------------------------------------------- embedding


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_embedding_rows(edgert: ModuleType, dtype: type, index_dtype: type) -> None:
    weight = sample((10, 6), dtype, 17)
    for shape in ((3, 5), (7,), (), (2, 0), (2, 2, 2)):
        indices = np.random.RandomState(18).randint(0, 10, size=shape).astype(index_dtype)
        (result,) = run_op(edgert, "edgert::embedding", [weight, indices])
        assert_exact(result, weight[indices])


def test_embedding_of_tokens_with_a_dynamic_batch(edgert: ModuleType) -> None:
    weight = sample((1000, 64), np.float32, 19)

    def build(builder, tokens):  # type: ignore[no-untyped-def]
        return [builder.op("edgert::embedding", [builder.constant(weight), tokens])]

    for batch in (1, 4, 0):
        tokens = np.random.RandomState(batch).randint(0, 1000, size=(batch, 128)).astype(np.int64)
        (result,) = run_program(edgert, build, [tokens], [(-1, 128)])
        assert_exact(result, weight[tokens])
    zero_width = np.zeros((5, 0), np.int32)
    (result,) = run_op(edgert, "edgert::embedding", [zero_width, np.array([4, 0])])
    assert_exact(result, np.zeros((2, 0), np.int32))


def test_embedding_rejects_bad_indices(edgert: ModuleType) -> None:
    weight = sample((5, 3), np.float32)
    rejects(edgert, "edgert::embedding", [weight, np.array([[0, 5]])], {}, "index 5 .*size 5")
    negative = np.array([-1], np.int32)
    rejects(edgert, "edgert::embedding", [weight, negative], {}, "index -1 .*size 5")
    rejects(edgert, "edgert::embedding", [weight, np.array([INT64_MIN])], {}, f"index {INT64_MIN} ")
    rejects(edgert, "edgert::embedding", [weight.ravel(), np.array([0])], {}, r"\[V, D\]")
    floats = np.array([0.0], np.float32)
    rejects(edgert, "edgert::embedding", [weight, floats], {}, "int32 or int64")
    empty = np.zeros((0, 3), np.float32)
    rejects(edgert, "edgert::embedding", [empty, np.array([0])], {}, "size 0")


# ------------------------------------------------------------ views in programs


def test_views_stay_intact_while_later_nodes_run(edgert: ModuleType) -> None:
    """Views (reshape, squeeze, unsqueeze, an expand that adds nothing, contiguous slices and
    splits) read after other nodes have run, and after views of views, keep their values;
    the growing expand and the strided slice are copies."""

    def build(builder, x):  # type: ignore[no-untyped-def]
        flat = builder.op("edgert::reshape", [x], {"shape": [0, 24], "keep": [0]})
        front, back = builder.op("edgert::split", [flat], {"axis": 1, "sizes": [10, 14]}, outputs=2)
        rows = builder.op("edgert::slice", [flat], {"axis": 0, "start": 1})
        wide = builder.op("edgert::unsqueeze", [flat], {"axis": 1})
        grown = builder.op("edgert::expand", [wide], {"shape": [-1, 3, -1]})
        same = builder.op("edgert::expand", [wide], {"shape": [1, -1, 1, -1]})
        doubled = builder.op("edgert::add", [flat, flat])
        narrow = builder.op("edgert::squeeze", [same], {"axes": [0, 2]})
        product = builder.op("edgert::mul", [narrow, doubled])
        strided = builder.op("edgert::slice", [x], {"axis": 2, "step": 2})
        later = builder.op("edgert::slice", [doubled], {"start": 1})
        summed = builder.op("edgert::add", [rows, later])
        return [flat, front, back, rows, wide, grown, same, doubled, narrow, product, strided,
                summed]

    for batch in (3, 1, 4):
        x = sample((batch, 4, 6), np.float32, 20 + batch)
        flat = x.reshape(batch, 24)
        results = run_program(edgert, build, [x], [(-1, 4, 6)])
        expected = [flat, flat[:, :10], flat[:, 10:], flat[1:], flat[:, None],
                    np.broadcast_to(flat[:, None], (batch, 3, 24)), flat[None, :, None],
                    flat + flat, flat, flat * (flat + flat), x[:, :, ::2],
                    flat[1:] + (flat + flat)[1:]]
        for result, reference in zip(results, expected, strict=True):
            assert_exact(result, reference)


def test_graph_outputs_that_are_views_of_inputs_and_constants(edgert: ModuleType) -> None:
    """A graph output viewing a program input or a constant is returned intact, run after run."""
    table = sample((4, 3), np.int64, 30)

    def build(builder, x):  # type: ignore[no-untyped-def]
        constant = builder.constant(table)
        return [
            builder.op("edgert::reshape", [x], {"shape": [-1]}, dtype=np.int64),
            builder.op("edgert::slice", [constant], {"start": 2}, dtype=np.int64),
            builder.op("edgert::squeeze", [x], {}, dtype=np.int64),
        ]

    for seed in (1, 2):
        x = sample((2, 1, 3), np.int64, seed)
        flat, rows, squeezed = run_program(edgert, build, [x])
        assert_exact(flat, x.ravel())
        assert_exact(rows, table[2:])
        assert_exact(squeezed, x[:, 0])


# -------------------------------------------------- C++: strided inputs, views

LAYOUT_CHECK = r"""
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "edgert/runtime.hpp"

using namespace edgert;

// Deterministic values, every byte of every element meaningful; with `modulo`, integers in
// [0, modulo) (valid indices).
Tensor filled(DType dtype, std::vector<int64_t> shape, unsigned seed, int modulo = 0) {
  Tensor tensor(dtype, std::move(shape));
  unsigned state = seed * 2654435761u + 1;
  unsigned char* bytes = static_cast<unsigned char*>(tensor.data());
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    const int value = modulo ? static_cast<int>((state >> 8) % unsigned(modulo))
                             : static_cast<int>((state >> 8) % 2001) - 1000;
    switch (dtype) {
      case DType::Float32: tensor.data_as<float>()[i] = value / 7.0f; break;
      case DType::Int8: tensor.data_as<int8_t>()[i] = static_cast<int8_t>(value); break;
      case DType::UInt8: tensor.data_as<uint8_t>()[i] = static_cast<uint8_t>(value); break;
      case DType::Int32: tensor.data_as<int32_t>()[i] = modulo ? value : value * 100003; break;
      case DType::Int64:
        tensor.data_as<int64_t>()[i] = modulo ? value : int64_t{value} * (int64_t{1} << 33);
        break;
      case DType::Bool: bytes[i] = value > 0; break;
    }
  }
  return tensor;
}

// Dimensions 0 and 1 swapped, or every other entry along dimension 0: views of `base`.
Tensor swapped(const Tensor& base) {
  std::vector<int64_t> shape = base.shape(), strides = base.strides();
  std::swap(shape[0], shape[1]);
  std::swap(strides[0], strides[1]);
  return Tensor::view(base.dtype(), shape, strides, const_cast<void*>(base.data()), nullptr);
}
Tensor every_other(const Tensor& base) {
  std::vector<int64_t> shape = base.shape(), strides = base.strides();
  shape[0] = (shape[0] + 1) / 2;
  strides[0] *= 2;
  return Tensor::view(base.dtype(), shape, strides, const_cast<void*>(base.data()), nullptr);
}

Status run(const char* op, const std::vector<Tensor>& inputs, const Attributes* attributes,
           std::vector<Tensor>& outputs) {
  KernelFn kernel = find_operator(op);
  if (!kernel) return Status(Code::NotFound, "not registered");
  KernelContext context;
  context.op = op;
  for (const Tensor& t : inputs) context.inputs.push_back(&t);
  context.attributes = attributes;
  context.outputs = &outputs;
  return kernel(context);
}

int failures = 0;

void report(bool passed, const std::string& what) {
  std::printf("%s %s\n", passed ? "PASS" : "FAIL", what.c_str());
  failures += !passed;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.is_contiguous() &&
         b.is_contiguous() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// Strided inputs give the bytes their contiguous copies give, in contiguous outputs.
void strided(const char* op, std::vector<Tensor> inputs, const Attributes& attributes,
             size_t outputs = 1) {
  bool any_strided = false;
  std::vector<Tensor> contiguous;
  for (const Tensor& t : inputs) {
    any_strided = any_strided || !t.is_contiguous();
    contiguous.push_back(t.contiguous());
  }
  std::vector<Tensor> a(outputs), b(outputs);
  const Status first = run(op, inputs, &attributes, a);
  const Status second = run(op, contiguous, &attributes, b);
  bool same = any_strided && first.ok() && second.ok();
  for (size_t i = 0; same && i < outputs; ++i) same = same_bytes(a[i], b[i]) && a[i].numel() > 0;
  report(same, std::string("strided ") + op + " " + first.message() + " " + second.message());
}

// Whether `out` reads memory inside `base`'s elements.
bool shares(const Tensor& out, const Tensor& base) {
  const char* begin = static_cast<const char*>(base.data());
  const char* data = static_cast<const char*>(out.data());
  return out.numel() > 0 && data >= begin && data < begin + base.nbytes();
}

// The kernel's outputs for a contiguous input: views (or not), each contiguous and equal
// to the copy the same kernel makes of a strided twin of the input.
void views(const char* op, const Attributes& attributes, bool expect_view, size_t outputs = 1) {
  const Tensor base = filled(DType::Int32, {4, 1, 6}, 40);
  std::vector<Tensor> out(outputs);
  const Status status = run(op, {base}, &attributes, out);
  bool passed = status.ok();
  for (size_t i = 0; passed && i < outputs; ++i) {
    passed = out[i].is_contiguous() && shares(out[i], base) == expect_view;
  }
  report(passed, std::string(expect_view ? "view " : "copy ") + op + " " + status.message());
}

// A view outlives its input: the storage stays alive and unchanged when the input tensor
// is gone and its memory could be handed out again.
void outlives(const char* op, const Attributes& attributes) {
  std::vector<Tensor> out(1);
  Tensor expected;
  {
    const Tensor base = filled(DType::Int64, {64, 1, 512}, 41);  // 256 KiB: the block cache's
    const Status status = run(op, {base}, &attributes, out);
    if (!status.ok() || !shares(out[0], base)) {
      report(false, std::string("outlives ") + op + " (no view) " + status.message());
      return;
    }
    expected = Tensor(out[0].dtype(), out[0].shape());
    std::memcpy(expected.data(), out[0].data(), out[0].nbytes());
  }
  std::vector<Tensor> reuse;  // blocks of base's size, overwritten
  for (int i = 0; i < 8; ++i) {
    reuse.push_back(Tensor::uninitialized(DType::Int64, {64, 1, 512}));
    std::memset(reuse.back().data(), 0xA5, reuse.back().nbytes());
  }
  report(same_bytes(out[0], expected), std::string("outlives ") + op);
}

// No kernel crashes without attributes or with missing inputs: it succeeds or reports
// InvalidArgument.
void tolerates_missing(const char* op) {
  const Tensor x = filled(DType::Float32, {2, 3}, 42), index = filled(DType::Int64, {2, 3}, 43, 2);
  std::vector<Tensor> out(1);
  const Status without = run(op, {x, index}, nullptr, out);
  const Status one = run(op, {x}, nullptr, out);
  const Status none = run(op, {}, nullptr, out);
  KernelContext context;
  context.op = op;
  context.inputs = {nullptr, nullptr};
  context.outputs = &out;
  const Status null_input = find_operator(op)(context);
  std::vector<Tensor> no_outputs;
  const Status no_output = run(op, {x, index}, nullptr, no_outputs);
  auto handled = [](const Status& s) { return s.ok() || s.code() == Code::InvalidArgument; };
  const bool rejected = none.code() == Code::InvalidArgument &&
                        null_input.code() == Code::InvalidArgument &&
                        no_output.code() == Code::InvalidArgument;
  report(handled(without) && handled(one) && rejected, std::string("missing ") + op);
}

Attributes make(std::initializer_list<std::pair<const char*, AttributeValue>> entries) {
  Attributes attributes;
  for (const auto& [name, value] : entries) attributes.set(name, value);
  return attributes;
}

int main() {
  using Ints = std::vector<int64_t>;
  const DType dtypes[] = {DType::Float32, DType::Int8,  DType::UInt8,
                          DType::Int32,   DType::Int64, DType::Bool};
  for (DType dtype : dtypes) {
    const Tensor cube = filled(dtype, {6, 4, 3}, 1 + static_cast<unsigned>(dtype));
    strided("edgert::reshape", {swapped(cube)}, make({{"shape", Ints{0, -1}}, {"keep", Ints{0}}}));
    strided("edgert::slice", {swapped(cube)},
            make({{"axis", int64_t{1}}, {"start", int64_t{1}}, {"step", int64_t{2}}}));
    strided("edgert::slice", {every_other(cube)},
            make({{"axis", int64_t{0}}, {"start", int64_t{-2}}}));
    strided("edgert::squeeze", {every_other(filled(dtype, {4, 1, 3}, 2))}, {});
    strided("edgert::unsqueeze", {swapped(cube)}, make({{"axis", int64_t{2}}}));
    strided("edgert::expand", {swapped(filled(dtype, {2, 4, 1}, 3))},
            make({{"shape", Ints{3, 4, 2, 5}}}));
    strided("edgert::expand", {every_other(cube)}, make({{"shape", Ints{1, -1, -1, -1}}}));
    strided("edgert::split", {swapped(cube)},
            make({{"axis", int64_t{2}}, {"sizes", Ints{2, 1}}}), 2);
    strided("edgert::split", {every_other(cube)},
            make({{"axis", int64_t{0}}, {"sizes", Ints{1, 2}}}), 2);
    strided("edgert::full_like", {swapped(cube)}, make({{"value", 1.5}}));
    strided("edgert::cast", {swapped(cube)}, make({{"dtype", std::string("int8")}}));
    strided("edgert::cast", {every_other(cube)}, make({{"dtype", std::string("float32")}}));
    strided("edgert::gather", {swapped(cube), swapped(filled(DType::Int64, {3, 2, 3}, 4, 6))},
            make({{"axis", int64_t{1}}}));
    strided("edgert::gather", {every_other(cube), filled(DType::Int32, {3, 4, 2}, 5, 3)},
            make({{"axis", int64_t{2}}}));
    strided("edgert::index_select", {swapped(cube), every_other(filled(DType::Int32, {9}, 6, 6))},
            make({{"axis", int64_t{1}}}));
    strided("edgert::embedding",
            {swapped(filled(dtype, {5, 7}, 7)), swapped(filled(DType::Int64, {3, 2}, 8, 7))}, {});
    strided("edgert::embedding",
            {every_other(filled(dtype, {9, 5}, 9)), filled(DType::Int32, {4}, 10, 5)}, {});
    if (dtype != DType::Int8 && dtype != DType::UInt8) {
      strided("edgert::pad", {swapped(cube)}, make({{"pads", Ints{1, -1, 0, 2}}, {"value", 1.0}}));
      strided("edgert::pad", {every_other(cube)}, make({{"pads", Ints{-1, 0, 1, 1, 2, 0}}}));
    }
  }
  // Views for contiguous inputs where the contract says so; copies elsewhere.
  views("edgert::reshape", make({{"shape", Ints{-1}}}), true);
  views("edgert::squeeze", {}, true);
  views("edgert::unsqueeze", make({{"axis", int64_t{-1}}}), true);
  views("edgert::expand", make({{"shape", Ints{1, 4, 1, 6}}}), true);
  views("edgert::expand", make({{"shape", Ints{4, 2, 6}}}), false);
  views("edgert::slice",
        make({{"axis", int64_t{0}}, {"start", int64_t{1}}, {"end", int64_t{3}}}), true);
  views("edgert::slice", make({{"axis", int64_t{2}}, {"start", int64_t{1}}}), false);
  views("edgert::slice", make({{"axis", int64_t{0}}, {"step", int64_t{2}}}), false);
  views("edgert::split", make({{"axis", int64_t{0}}, {"sizes", Ints{1, 3}}}), true, 2);
  views("edgert::split", make({{"axis", int64_t{2}}, {"sizes", Ints{3, 3}}}), false, 2);
  views("edgert::cast", make({{"dtype", std::string("int32")}}), false);
  views("edgert::pad", make({{"pads", Ints{0, 0}}}), false);
  views("edgert::transpose", {}, false);
  outlives("edgert::reshape", make({{"shape", Ints{-1}}}));
  outlives("edgert::slice",
           make({{"axis", int64_t{0}}, {"start", int64_t{5}}, {"end", int64_t{9}}}));
  outlives("edgert::squeeze", make({{"axes", Ints{1}}}));
  outlives("edgert::unsqueeze", make({{"axis", int64_t{0}}}));
  outlives("edgert::expand", make({{"shape", Ints{1, 64, 1, 512}}}));
  for (const char* op :
       {"edgert::reshape", "edgert::slice", "edgert::squeeze", "edgert::unsqueeze",
        "edgert::expand", "edgert::split", "edgert::pad", "edgert::full_like", "edgert::cast",
        "edgert::gather", "edgert::index_select", "edgert::embedding"}) {
    tolerates_missing(op);
  }
  return failures == 0 ? 0 : 1;
}
"""


def test_strided_inputs_views_and_missing_arguments_from_cpp(
    native_install: NativeInstall, tmp_path: Path
) -> None:
    package = native_install.package_dir
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    assert compiler, "a C++ compiler is required (the native build needs one too)"
    source = tmp_path / "layout_check.cpp"
    source.write_text(LAYOUT_CHECK)
    program = tmp_path / "layout_check"
    lib = package / "lib"
    build = subprocess.run(
        [compiler, "-std=c++17", "-O1", str(source), "-o", str(program),
         f"-I{package / 'include'}", f"-L{lib}", "-Wl,--no-as-needed", "-ledgert_kernels",
         "-Wl,--as-needed", "-ledgert", f"-Wl,-rpath,{lib}"],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr
    completed = subprocess.run([str(program)], capture_output=True, text=True, timeout=120)
    lines = completed.stdout.splitlines()
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert lines and all(line.startswith("PASS ") for line in lines), completed.stdout
    assert sum(line.startswith("PASS strided ") for line in lines) == 6 * 17 + 4 * 2
    assert sum(line.startswith("PASS view ") for line in lines) == 6
    assert sum(line.startswith("PASS outlives ") for line in lines) == 5
