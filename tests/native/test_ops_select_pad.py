"""The kernels small real models need beside the common layers, each compared with torch's
own CPU result exactly (the same bytes, indices included): topk and sort (torch's order,
NaN the greatest), reflect and replicate padding, adaptive max pooling (any output size,
windows of unequal sizes included) and nearest-exact upsampling (by size and by scale
factor), with their refusals of bad attributes."""

from __future__ import annotations

import functools
from types import ModuleType

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.native.support import run_op as shared_run_op

run_op = functools.partial(shared_run_op, backends=[])  # the plain kernels
F32 = np.float32


def distinct(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Float32 values without ties (a permutation of a spread of values), for orders."""
    count = int(np.prod(shape))
    spread = np.random.RandomState(seed).permutation(count).astype(F32) - count / 3
    return (spread * F32(0.37)).reshape(shape)


def assert_same(got: np.ndarray, want: torch.Tensor) -> None:
    reference = want.numpy()
    assert got.dtype == reference.dtype and got.shape == reference.shape
    np.testing.assert_array_equal(got, reference)


# ---------------------------------------------------------------------- topk, sort


TOPK_CASES = [
    ((4, 9), 3, -1),
    ((4, 9), 9, 1),
    ((3, 7, 5), 2, 1),
    ((2, 300), 4, -1),  # k·64 <= n: torch's partial sort
    ((2, 300), 5, -1),  # k·64 > n: nth_element, then sorted
    ((5, 2, 3), 1, 0),
    ((6,), 0, 0),
]


@pytest.mark.parametrize("shape, k, axis", TOPK_CASES)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("is_sorted", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_topk_is_torchs(
    edgert: ModuleType, shape: tuple, k: int, axis: int, largest: bool, is_sorted: bool, dtype: type
) -> None:
    x = (
        distinct(shape, 1).astype(dtype)
        if dtype == np.float32
        else (
            np.random.RandomState(2).permutation(int(np.prod(shape))).reshape(shape).astype(dtype)
        )
    )
    attributes = {"k": k, "axis": axis, "largest": int(largest), "sorted": int(is_sorted)}
    values, indices = run_op(edgert, "edgert::topk", [x], attributes, outputs=2)
    want = torch.topk(torch.from_numpy(x), k, dim=axis, largest=largest, sorted=is_sorted)
    assert_same(values, want.values)
    assert_same(indices, want.indices)


def test_topk_puts_nan_first_as_torch(edgert: ModuleType) -> None:
    x = np.array([[1.0, np.nan, 3.0, -2.0, np.nan, 0.5]], F32)
    for largest in (1, 0):
        attributes = {"k": 3, "largest": largest}
        values, indices = run_op(edgert, "edgert::topk", [x], attributes, outputs=2)
        want = torch.topk(torch.from_numpy(x), 3, largest=bool(largest))
        np.testing.assert_array_equal(values, want.values.numpy())
        np.testing.assert_array_equal(indices, want.indices.numpy())


@pytest.mark.parametrize(
    "shape, axis", [((4, 9), -1), ((3, 7, 5), 1), ((5, 2, 3), 0), ((1, 1000), 1)]
)
@pytest.mark.parametrize("descending", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_sort_is_torchs(
    edgert: ModuleType, shape: tuple, axis: int, descending: bool, dtype: type
) -> None:
    x = distinct(shape, 3)
    x = x if dtype == np.float32 else np.argsort(x.reshape(-1)).reshape(shape).astype(dtype)
    attributes = {"axis": axis, "descending": int(descending)}
    values, indices = run_op(edgert, "edgert::sort", [x], attributes, outputs=2)
    want = torch.sort(torch.from_numpy(x), dim=axis, descending=descending)
    assert_same(values, want.values)
    assert_same(indices, want.indices)


def test_sort_is_stable_and_puts_nan_last_ascending(edgert: ModuleType) -> None:
    x = np.array([[2.0, np.nan, 1.0, 2.0, -1.0, 1.0, np.nan, 2.0]], F32)
    for descending in (0, 1):
        values, indices = run_op(edgert, "edgert::sort", [x], {"descending": descending}, outputs=2)
        want = torch.sort(torch.from_numpy(x), descending=bool(descending), stable=True)
        np.testing.assert_array_equal(values, want.values.numpy())
        np.testing.assert_array_equal(indices, want.indices.numpy())


def test_topk_and_sort_of_empty_tensors(edgert: ModuleType) -> None:
    x = np.zeros((0, 5), F32)
    values, indices = run_op(edgert, "edgert::topk", [x], {"k": 2}, outputs=2)
    assert values.shape == indices.shape == (0, 2) and indices.dtype == np.int64
    values, indices = run_op(edgert, "edgert::sort", [np.zeros((3, 0), F32)], {}, outputs=2)
    assert values.shape == indices.shape == (3, 0)


@pytest.mark.parametrize(
    "op, attributes, x, message",
    [
        ("edgert::topk", {}, np.ones((2, 3), F32), "attribute k is required"),
        ("edgert::topk", {"k": 4}, np.ones((2, 3), F32), r"k 4 is out of range \[0, 3\]"),
        ("edgert::topk", {"k": -1}, np.ones((2, 3), F32), "out of range"),
        ("edgert::topk", {"k": 1, "axis": 2}, np.ones((2, 3), F32), "axis 2 is out of range"),
        ("edgert::sort", {"axis": -3}, np.ones((2, 3), F32), "axis -3 is out of range"),
        ("edgert::sort", {}, np.ones((2, 3), np.bool_), "dtype bool is not supported"),
        ("edgert::sort", {}, np.float32(1).reshape(()), "out of range"),
    ],
)
def test_topk_and_sort_refuse_bad_attributes(
    edgert: ModuleType, op: str, attributes: dict, x: np.ndarray, message: str
) -> None:
    with pytest.raises(edgert.EdgertError, match=f"{op}: .*{message}"):
        run_op(edgert, op, [x], attributes, outputs=2)


# ---------------------------------------------------------------------- pad


_PAD_CASES = [
    ((2, 3, 7), [2, 3]),
    ((2, 3, 7), [0, 6]),
    ((2, 3, 5, 6), [1, 2, 3, 0]),
    ((2, 3, 5, 6), [5, 5, 4, 4]),
    ((1, 2, 4, 5), [-1, 2, 2, -2]),
    ((2, 2, 3, 4, 5), [1, 1, 2, 0, 1, 2]),
]


@pytest.mark.parametrize(
    "mode, shape, pads",
    # torch refuses a reflect pad as large as the dimension: no reference for those
    [(mode, shape, pads) for mode in ("reflect", "replicate") for shape, pads in _PAD_CASES
     if not (mode == "reflect" and max(pads) >= min(shape[-len(pads) // 2 :]))],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
def test_reflect_and_replicate_pad_are_torchs(
    edgert: ModuleType, mode: str, shape: tuple, pads: list, dtype: type
) -> None:
    x = (np.random.RandomState(4).standard_normal(shape) * 10).astype(dtype)
    (out,) = run_op(edgert, "edgert::pad", [x], {"pads": pads, "mode": mode})
    reference_input = torch.from_numpy(x)
    if dtype != np.float32:  # torch pads integers by reflect/replicate only on floats here
        reference_input = reference_input.double()
    want = F.pad(reference_input, pads, mode=mode)
    np.testing.assert_array_equal(out, want.numpy().astype(dtype))


def test_reflect_pad_reads_strided_input(edgert: ModuleType) -> None:
    from edgert.export import ProgramBuilder

    x = np.arange(2 * 5 * 6, dtype=F32).reshape(2, 5, 6)
    builder = ProgramBuilder()
    source = builder.input(np.float32, x.shape)
    turned = builder.op("edgert::transpose", [source], {"perm": [0, 2, 1]})
    builder.output(builder.op("edgert::pad", [turned], {"pads": [2, 1], "mode": "reflect"}))
    (out,) = edgert.load(builder.to_bytes()).run([x])
    want = F.pad(torch.from_numpy(x).transpose(1, 2), [2, 1], mode="reflect")
    np.testing.assert_array_equal(out, want.numpy())


def test_pad_refuses_bad_modes(edgert: ModuleType) -> None:
    x = np.ones((1, 2, 3), F32)
    with pytest.raises(edgert.EdgertError, match='edgert::pad: .*mode must be "constant"'):
        run_op(edgert, "edgert::pad", [x], {"pads": [1, 1], "mode": "circular"})
    with pytest.raises(edgert.EdgertError, match="reflect padding .* below its size 3"):
        run_op(edgert, "edgert::pad", [x], {"pads": [3, 0], "mode": "reflect"})
    with pytest.raises(edgert.EdgertError, match="is empty and cannot be padded"):
        run_op(edgert, "edgert::pad", [np.ones((1, 0), F32)], {"pads": [1, 0], "mode": "replicate"})


# ---------------------------------------------------------------------- adaptive max pooling


@pytest.mark.parametrize("size", [(5, 4), (1, 1), (13, 11), (3, 7), (26, 1), (4, 22)])
def test_adaptive_max_pool2d_is_torchs(edgert: ModuleType, size: tuple) -> None:
    x = np.random.RandomState(5).standard_normal((2, 3, 13, 11)).astype(F32)
    x[0, 0, 2, 3] = np.nan
    (out,) = run_op(edgert, "edgert::adaptive_max_pool2d", [x], {"output_size": list(size)})
    want = F.adaptive_max_pool2d(torch.from_numpy(x), size)
    np.testing.assert_array_equal(out, want.numpy())


def test_adaptive_max_pool2d_refuses_bad_attributes(edgert: ModuleType) -> None:
    x = np.ones((1, 2, 4, 4), F32)
    with pytest.raises(edgert.EdgertError, match="output_size .* is required"):
        run_op(edgert, "edgert::adaptive_max_pool2d", [x], {})
    with pytest.raises(edgert.EdgertError, match=r"must be \[N, C, H, W\]"):
        run_op(
            edgert,
            "edgert::adaptive_max_pool2d",
            [np.ones((2, 4, 4), F32)],
            {"output_size": [2, 2]},
        )


# ---------------------------------------------------------------------- nearest-exact


@pytest.mark.parametrize("size", [(26, 22), (7, 5), (82, 3), (13, 11), (1, 40), (5, 17)])
def test_nearest_exact_by_size_is_torchs(edgert: ModuleType, size: tuple) -> None:
    x = np.random.RandomState(6).standard_normal((2, 3, 13, 11)).astype(F32)
    (out,) = run_op(edgert, "edgert::upsample_nearest2d", [x], {"size": list(size), "exact": 1})
    want = F.interpolate(torch.from_numpy(x), size=size, mode="nearest-exact")
    np.testing.assert_array_equal(out, want.numpy())


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("scales", [(1.7, 1.7), (2.0, 0.5), (0.3, 3.3), (1.0, 2.6)])
def test_nearest_by_scale_factor_is_torchs(edgert: ModuleType, mode: str, scales: tuple) -> None:
    x = np.random.RandomState(7).standard_normal((1, 2, 13, 11)).astype(F32)
    want = F.interpolate(torch.from_numpy(x), scale_factor=scales, mode=mode)
    attributes = {
        "size": list(want.shape[2:]),
        "scales": [float(s) for s in scales],
        "exact": int(mode == "nearest-exact"),
    }
    (out,) = run_op(edgert, "edgert::upsample_nearest2d", [x], attributes)
    np.testing.assert_array_equal(out, want.numpy())


def test_nearest_refuses_bad_scales(edgert: ModuleType) -> None:
    x = np.ones((1, 1, 4, 4), F32)
    with pytest.raises(edgert.EdgertError, match="scales must be 2 floats"):
        run_op(edgert, "edgert::upsample_nearest2d", [x], {"size": [8, 8], "scales": [2.0]})


# ---------------------------------------------------------------------- threads


def _large_cases() -> list[tuple[str, np.ndarray, dict, int]]:
    """Large enough that each kernel splits its lines or rows across threads."""
    x = distinct((8, 64, 300), 9)
    image = distinct((4, 16, 50, 57), 10)
    return [
        ("edgert::topk", x, {"k": 7, "axis": -1}, 2),
        ("edgert::topk", x, {"k": 3, "axis": 1, "largest": 0, "sorted": 0}, 2),
        ("edgert::sort", x, {"axis": 1, "descending": 1}, 2),
        ("edgert::pad", image, {"pads": [3, 2, 1, 4], "mode": "reflect"}, 1),
        ("edgert::pad", image, {"pads": [5, 0, 2, 2], "mode": "replicate"}, 1),
        ("edgert::adaptive_max_pool2d", image, {"output_size": [7, 9]}, 1),
        ("edgert::upsample_nearest2d", image, {"size": [77, 100], "exact": 1}, 1),
    ]


def test_thread_count_does_not_change_results(edgert: ModuleType) -> None:
    previous = edgert.threadpool_size()
    try:
        results = {}
        for threads in (1, 3):
            edgert.set_threadpool_size(threads)
            results[threads] = [
                [out.tobytes() for out in run_op(edgert, op, [x], attributes, outputs=outputs)]
                for op, x, attributes, outputs in _large_cases()
            ]
    finally:
        edgert.set_threadpool_size(previous)
    for (op, _, _, _), single, pooled in zip(_large_cases(), results[1], results[3], strict=True):
        assert single == pooled, f"{op}: results differ between 1 and 3 threads"
