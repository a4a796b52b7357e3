"""The neural-network kernels of libedgert_kernels: conv2d, the pooling operators, nearest
upsampling, batch_norm, rms_norm, log_softmax and scaled_dot_product_attention.

Where docs/operators.md fixes the arithmetic, a numpy reference repeats it step by step and
must match byte for byte: conv2d adds its rounded products over (c, kh, kw) from +0 in that
order, pooling folds each window in row order, the softmaxes use edgert's exp and in-order
sums. torch (when installed) checks the semantics with a tolerance. Shapes cross gemm's
blocking (96-row and 256-column tiles, 256-long k slices); every instruction set and thread
count must give the same bytes; bad input is an EdgertError naming the operator.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import ROOT, NativeInstall
from tests.native.support import run_op as shared_run_op
from tests.native.test_kernels_exact import exp_nonpositive

F32 = np.float32
TORCH_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
run_op = functools.partial(shared_run_op, backends=[])  # the plain kernels


def values(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.RandomState(seed).standard_normal(shape) * scale).astype(F32)


def torch_module() -> ModuleType:
    """torch, a dev requirement (requirements-dev.txt): its absence is a broken setup, which
    fails the tests that compare with it."""
    import torch
    return torch


# ------------------------------------------------------------------- references


def taps(size: int, outputs: int, kernel: int, stride: int, padding: int, dilation: int):
    """For each tap t: the input index each output reads (clipped) and whether it is inside."""
    for t in range(kernel):
        index = np.arange(outputs) * stride - padding + t * dilation
        yield t, np.clip(index, 0, max(size - 1, 0)), (index >= 0) & (index < size)


def conv_reference(
    x, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, relu=False
) -> np.ndarray:
    """Each output: +0, then + x·w for (c, kh, kw) in that order (padding: 0·w), + bias, relu."""
    n, channels, height, width = x.shape
    out_channels, group_channels, kernel_h, kernel_w = weight.shape
    out_h = (height + 2 * padding[0] - dilation[0] * (kernel_h - 1) - 1) // stride[0] + 1
    out_w = (width + 2 * padding[1] - dilation[1] * (kernel_w - 1) - 1) // stride[1] + 1
    per_group = out_channels // groups
    out = np.zeros((n, out_channels, out_h, out_w), F32)
    padded = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    for group in range(groups):
        outputs = slice(group * per_group, (group + 1) * per_group)
        for c in range(group_channels):
            channel = padded[:, group * group_channels + c]
            for kh in range(kernel_h):
                rows = slice(
                    kh * dilation[0], kh * dilation[0] + stride[0] * (out_h - 1) + 1, stride[0]
                )
                for kw in range(kernel_w):
                    columns = slice(
                        kw * dilation[1], kw * dilation[1] + stride[1] * (out_w - 1) + 1, stride[1]
                    )
                    patch = channel[:, rows, columns][:, None]
                    with np.errstate(invalid="ignore"):
                        out[:, outputs] = (
                            out[:, outputs] + patch * weight[outputs, c, kh, kw][:, None, None]
                        )
    if bias is not None:
        out = out + bias[None, :, None, None]
    return np.where(out > 0, out, F32(0)) if relu else out


def output_size(size, kernel, stride, padding, dilation, ceil_mode) -> int:
    room = size + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = room // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def pool_reference(
    x,
    kernel,
    stride,
    padding,
    dilation=(1, 1),
    ceil_mode=False,
    mode="max",
    count_include_pad=True,
    divisor_override=0,
) -> np.ndarray:
    """Each window folded in row order over its in-bounds elements (torch's loops)."""
    n, c, height, width = x.shape
    out_h = output_size(height, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    out_w = output_size(width, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    result = np.full((n, c, out_h, out_w), -np.inf if mode == "max" else 0, F32)
    for _, rows, rows_inside in taps(height, out_h, kernel[0], stride[0], padding[0], dilation[0]):
        for _, columns, columns_inside in taps(
            width, out_w, kernel[1], stride[1], padding[1], dilation[1]
        ):
            inside = rows_inside[:, None] & columns_inside[None, :]
            tap = x[:, :, rows][:, :, :, columns]
            if mode == "max":
                result = np.where(inside & ((tap > result) | np.isnan(tap)), tap, result)
            else:
                result = np.where(inside, result + tap, result)
    if mode == "max":
        return result
    return result / avg_divisors(
        height, width, out_h, out_w, kernel, stride, padding, count_include_pad, divisor_override
    )


def avg_divisors(height, width, out_h, out_w, kernel, stride, padding, include, override):
    if override:
        return F32(override)

    def factors(size, outputs, k, s, p):
        start = np.arange(outputs) * s - p
        end = np.minimum(start + k, size + p)
        return end - start if include else np.minimum(end, size) - np.maximum(start, 0)

    rows = factors(height, out_h, kernel[0], stride[0], padding[0])
    columns = factors(width, out_w, kernel[1], stride[1], padding[1])
    return (rows[:, None] * columns[None, :]).astype(F32)


def adaptive_reference(x, out_h, out_w) -> np.ndarray:
    n, c, height, width = x.shape
    out = np.zeros((n, c, out_h, out_w), F32)
    for i in range(out_h):
        h0, h1 = i * height // out_h, -(-(i + 1) * height // out_h)
        for j in range(out_w):
            w0, w1 = j * width // out_w, -(-(j + 1) * width // out_w)
            total = np.zeros((n, c), F32)
            for h in range(h0, h1):
                for w in range(w0, w1):
                    total = total + x[:, :, h, w]
            out[:, :, i, j] = total / F32(h1 - h0) / F32(w1 - w0)
    return out


def nearest_sources(outputs: int, size: int) -> np.ndarray:
    """torch's nearest index: float32(i) · (float32(size) / float32(outputs)), floored."""
    if outputs == size:
        return np.arange(outputs)
    if outputs == 2 * size:
        return np.arange(outputs) >> 1
    scale = F32(size) / F32(outputs)
    return np.minimum(np.floor(np.arange(outputs).astype(F32) * scale).astype(np.int64), size - 1)


def sum_in_order(x: np.ndarray) -> np.ndarray:
    """Σ over the last axis in float32, from +0, index by index."""
    total = np.zeros(x.shape[:-1], F32)
    for j in range(x.shape[-1]):
        total = total + x[..., j]
    return total


def log_softmax_reference(x: np.ndarray, axis: int) -> np.ndarray:
    moved = np.moveaxis(x, axis, -1)
    maximum = moved.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        exps = exp_nonpositive(moved - maximum)
    log_sum = np.log(sum_in_order(exps).astype(np.float64)).astype(F32)[..., None]
    return np.moveaxis((moved - maximum) - log_sum, -1, axis)


def broadcast_batches(*arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays with their batch dimensions (all but the last two) broadcast together."""
    batch = np.broadcast_shapes(*(array.shape[:-2] for array in arrays))
    return [np.broadcast_to(array, batch + array.shape[-2:]) for array in arrays]


def attention_reference(q, k, v, mask=None, causal=False, scale=None) -> np.ndarray:
    """matmul's in-order sums, · scale, the mask, softmax's arithmetic (all -inf: zeros)."""
    scale = F32(1 / np.sqrt(q.shape[-1])) if scale is None else F32(scale)
    q, k, v = broadcast_batches(q, k, v)
    scores = np.zeros((*q.shape[:-1], k.shape[-2]), F32)
    for e in range(q.shape[-1]):
        scores = scores + q[..., :, e : e + 1] * k[..., None, :, e]
    scores = scores * scale
    if mask is not None and mask.dtype == np.bool_:
        scores = np.where(mask, scores, F32(-np.inf))
    elif mask is not None:
        scores = scores + mask
    if causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], bool)), scores, F32(-np.inf))
    masked = np.all(scores == -np.inf, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        exps = exp_nonpositive(scores - scores.max(axis=-1, keepdims=True))
        weights = np.where(masked, F32(0), exps / sum_in_order(exps)[..., None])
    out = np.zeros((*weights.shape[:-1], v.shape[-1]), F32)
    for s in range(weights.shape[-1]):
        out = out + weights[..., s : s + 1] * v[..., s : s + 1, :]
    return out


# ------------------------------------------------------------------- conv2d

# (x shape, weight shape, stride, padding, dilation, groups)
CONV_CASES = [
    ((2, 5, 13, 11), (7, 5, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 6, 17, 9), (4, 3, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((1, 30, 19, 17), (100, 30, 3, 3), (1, 1), (1, 1), (1, 1), 1),  # 100 rows, k 270, 323 columns
    ((3, 4, 9, 8), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 4),  # depthwise, two outputs per channel
    ((1, 8, 10, 10), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 8),  # depthwise
    ((1, 8, 15, 14), (16, 1, 3, 5), (2, 3), (1, 2), (2, 1), 8),  # depthwise, strided, dilated
    ((1, 3, 2, 3), (3, 1, 3, 3), (1, 1), (3, 40), (1, 1), 3),  # depthwise, padding far wider than x
    ((2, 6, 7, 7), (9, 6, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # pointwise
    ((1, 6, 7, 5), (4, 3, 1, 1), (1, 1), (0, 0), (1, 1), 2),  # pointwise, grouped
    ((2, 40, 2, 2), (37, 40, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # a plane of 4: as linear
    ((1, 20, 1, 1), (50, 20, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # pointwise on one pixel
    ((3, 17, 1, 3), (9, 17, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # a plane of 3, three images
    ((1, 4, 7, 5), (1, 4, 3, 3), (2, 2), (1, 1), (1, 1), 1),  # one output channel (m = 1)
    ((1, 6, 11, 13), (3, 2, 2, 2), (3, 2), (0, 1), (3, 4), 3),  # one output channel per group
    ((1, 3, 30, 40), (70, 3, 5, 5), (1, 1), (2, 2), (1, 1), 1),
    ((1, 2, 3, 2), (3, 2, 2, 3), (1, 2), (1, 36), (1, 1), 1),  # padding far wider than x
    ((1, 3, 6, 5), (3, 1, 2, 3), (2**40, 2**40), (1, 1), (1, 2), 3),  # strides far beyond x
    ((1, 4, 6, 5), (2, 2, 2, 3), (2**40, 2**40), (1, 1), (1, 2), 2),
]


def conv_attributes(stride, padding, dilation, groups, **extra) -> dict:
    return {
        "stride": list(stride),
        "padding": list(padding),
        "dilation": list(dilation),
        "groups": groups,
        **extra,
    }


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d_adds_products_in_order(edgert: ModuleType, case: tuple, with_bias: bool) -> None:
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, weight = values(x_shape, 1), values(w_shape, 2)
    bias = values((w_shape[0],), 3) if with_bias else None
    (out,) = run_op(
        edgert,
        "edgert::conv2d",
        [x, weight, bias],
        conv_attributes(stride, padding, dilation, groups),
    )
    expected = conv_reference(x, weight, bias, stride, padding, dilation, groups)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("case", [CONV_CASES[0], CONV_CASES[5], CONV_CASES[7]])
def test_conv2d_relu_activation(edgert: ModuleType, case: tuple) -> None:
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, weight, bias = values(x_shape, 4), values(w_shape, 5), values((w_shape[0],), 6)
    attributes = conv_attributes(stride, padding, dilation, groups, activation="relu")
    (out,) = run_op(edgert, "edgert::conv2d", [x, weight, bias], attributes)
    expected = conv_reference(x, weight, bias, stride, padding, dilation, groups, relu=True)
    np.testing.assert_array_equal(out, expected)
    assert (out == 0).any() and (out > 0).any()


@pytest.mark.parametrize("case", [CONV_CASES[0], CONV_CASES[1], CONV_CASES[5], CONV_CASES[8]])
def test_conv2d_matches_torch(edgert: ModuleType, case: tuple) -> None:
    torch = torch_module()
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, weight, bias = values(x_shape, 7), values(w_shape, 8), values((w_shape[0],), 9)
    (out,) = run_op(
        edgert,
        "edgert::conv2d",
        [x, weight, bias],
        conv_attributes(stride, padding, dilation, groups),
    )
    expected = torch.nn.functional.conv2d(
        torch.from_numpy(x),
        torch.from_numpy(weight),
        torch.from_numpy(bias),
        stride,
        padding,
        dilation,
        groups,
    )
    np.testing.assert_allclose(out, expected.numpy(), **TORCH_TOLERANCE)


@pytest.mark.parametrize("case", [CONV_CASES[0], CONV_CASES[5], CONV_CASES[6]])
def test_conv2d_padding_contributes_zero_times_weight(edgert: ModuleType, case: tuple) -> None:
    """An infinite weight meets the padding as 0·inf = NaN, on the im2col and depthwise paths."""
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, weight = values(x_shape, 10), values(w_shape, 11)
    weight[0, 0, 0, 0] = np.inf
    (out,) = run_op(
        edgert, "edgert::conv2d", [x, weight], conv_attributes(stride, padding, dilation, groups)
    )
    expected = conv_reference(x, weight, None, stride, padding, dilation, groups)
    assert np.isnan(out[:, 0]).any() and not np.isnan(out[:, 1:]).any()
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    "x_shape, w_shape, groups",
    [
        ((0, 4, 5, 5), (6, 4, 3, 3), 1),  # no images
        ((2, 4, 5, 5), (0, 4, 3, 3), 1),  # no output channels
        ((1, 0, 5, 5), (4, 0, 3, 3), 2),  # no input channels: the sums are empty, out = bias
        ((1, 3, 0, 4), (2, 3, 1, 1), 1),  # no rows (padded to one below)
    ],
)
def test_conv2d_of_empty_tensors(edgert: ModuleType, x_shape, w_shape, groups) -> None:
    x, weight, bias = values(x_shape, 12), values(w_shape, 13), values((w_shape[0],), 14)
    padding = [1, 0] if x_shape[2] == 0 else [1, 1]
    (out,) = run_op(
        edgert, "edgert::conv2d", [x, weight, bias], {"padding": padding, "groups": groups}
    )
    expected = conv_reference(x, weight, bias, (1, 1), padding, (1, 1), groups)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


def test_conv2d_with_a_dynamic_batch(edgert: ModuleType) -> None:
    from edgert.export import ProgramBuilder

    weight, bias = values((5, 3, 3, 3), 15), values((5,), 16)
    builder = ProgramBuilder()
    x = builder.input(F32, (-1, 3, 9, 8))
    out = builder.op(
        "edgert::conv2d",
        [x, builder.constant(weight), builder.constant(bias)],
        {"padding": [1, 1], "stride": [2, 1]},
    )
    builder.output(builder.op("edgert::max_pool2d", [out], {"kernel": [2, 2]}))  # type: ignore[list-item]
    program = edgert.load(builder.to_bytes())
    program.set_backends([])
    for batch in (1, 3, 0):
        data = values((batch, 3, 9, 8), 17 + batch)
        (result,) = program.run([data])
        conv = conv_reference(data, weight, bias, (2, 1), (1, 1))
        np.testing.assert_array_equal(result, pool_reference(conv, (2, 2), (2, 2), (0, 0)))


BAD_CONV = [
    ({"stride": [0, 1]}, "stride must be >= 1"),
    ({"stride": [1]}, "stride must be 2 ints"),
    ({"padding": [-1, 0]}, "padding must be >= 0"),
    ({"dilation": [1, 0]}, "dilation must be >= 1"),
    ({"groups": 0}, "groups must be >= 1"),
    ({"groups": 3}, "do not match for groups=3"),
    ({"activation": "gelu"}, "activation must be"),
    ({"dilation": [9, 1]}, "does not fit"),
    ({"padding": [2**62, 0]}, "too large"),
    ({"dilation": [2**62, 1]}, "too large"),
    ({"stride": [2**62, 2**62]}, "too large"),
    ({"padding": [2**40, 2**40]}, "too large"),  # the output would be beyond 2^48 bytes
]


@pytest.mark.parametrize("attributes, message", BAD_CONV)
def test_conv2d_rejects_bad_attributes(edgert: ModuleType, attributes: dict, message: str) -> None:
    x, weight = values((1, 4, 5, 5), 20), values((2, 4, 3, 3), 21)
    with pytest.raises(edgert.EdgertError, match=f"edgert::conv2d: .*{message}"):
        run_op(edgert, "edgert::conv2d", [x, weight], attributes)


def test_conv2d_rejects_bad_shapes(edgert: ModuleType) -> None:
    x = values((1, 4, 5, 5), 22)
    cases = [
        ([x, values((2, 3, 3, 3), 23)], "do not match"),
        ([x[0], values((2, 4, 3, 3), 24)], r"must be \[N, C, H, W\]"),
        ([x, values((2, 4, 3, 3), 25), values((3,), 26)], r"bias \[3\] must be \[2\]"),
        ([x.astype(np.int32), values((2, 4, 3, 3), 27)], "input must be float32"),
        ([x, values((2, 4, 0, 3), 28)], "at least 1x1"),
    ]
    for inputs, message in cases:
        with pytest.raises(edgert.EdgertError, match=f"edgert::conv2d: .*{message}"):
            run_op(edgert, "edgert::conv2d", inputs)


# ------------------------------------------------------------------- pooling

MAX_POOL_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    ((3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((2, 3), (1, 2), (0, 1), (2, 1), 0),
    ((3, 2), (2, 2), (1, 0), (1, 1), 1),
    ((5, 5), (3, 3), (2, 2), (2, 2), 1),
    ((2, 2), (2, 2), (0, 0), (1, 1), 0),
    ((4, 4), (3, 3), (2, 1), (1, 1), 1),  # ceil_mode: a last window that must be dropped
]


def pool_input() -> np.ndarray:
    x = values((2, 3, 13, 11), 30)
    x[0, 0, 2, 3] = np.nan
    x[1, 2, 5, :] = np.inf
    x[1, 1, 7, 4] = -np.inf
    return x


@pytest.mark.parametrize("kernel, stride, padding, dilation, ceil_mode", MAX_POOL_CASES)
def test_max_pool2d(edgert: ModuleType, kernel, stride, padding, dilation, ceil_mode) -> None:
    x = pool_input()
    attributes = {
        "kernel": list(kernel),
        "stride": list(stride),
        "padding": list(padding),
        "dilation": list(dilation),
        "ceil_mode": ceil_mode,
    }
    (out,) = run_op(edgert, "edgert::max_pool2d", [x], attributes)
    expected = pool_reference(x, kernel, stride, padding, dilation, bool(ceil_mode))
    np.testing.assert_array_equal(out, expected)
    assert np.isnan(out[0, 0]).any() and not np.isnan(out[0, 1:]).any()  # NaN propagates
    torch = torch_module()
    reference = torch.nn.functional.max_pool2d(
        torch.from_numpy(x), kernel, stride, padding, dilation, ceil_mode=bool(ceil_mode)
    )
    np.testing.assert_array_equal(out, reference.numpy())


@pytest.mark.parametrize("op", ["edgert::max_pool2d", "edgert::avg_pool2d"])
def test_pooling_with_strides_far_beyond_the_input(edgert: ModuleType, op: str) -> None:
    x = values((1, 2, 9, 40), 29)
    attributes = {"kernel": [3, 3], "stride": [2**40, 2**40], "padding": [1, 1], "ceil_mode": 1}
    (out,) = run_op(edgert, op, [x], attributes)
    mode = "max" if op == "edgert::max_pool2d" else "avg"
    expected = pool_reference(x, (3, 3), (2**40, 2**40), (1, 1), (1, 1), True, mode)
    assert out.shape == (1, 2, 1, 1)
    np.testing.assert_array_equal(out, expected)


def test_max_pool2d_stride_defaults_to_the_kernel(edgert: ModuleType) -> None:
    x = values((1, 2, 8, 6), 31)
    (out,) = run_op(edgert, "edgert::max_pool2d", [x], {"kernel": [2, 3]})
    np.testing.assert_array_equal(out, x.reshape(1, 2, 4, 2, 2, 3).max(axis=(3, 5)))


AVG_POOL_CASES = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    ((3, 3), (2, 2), (1, 1), 1, 1, 0),
    ((3, 3), (2, 2), (1, 1), 1, 0, 0),
    ((2, 3), (1, 2), (0, 1), 0, 1, 7),
    ((3, 2), (2, 2), (1, 0), 1, 0, 0),
    ((4, 4), (3, 3), (2, 1), 1, 1, 0),
    ((2, 2), (2, 2), (0, 0), 0, 1, -3),
]


@pytest.mark.parametrize("kernel, stride, padding, ceil_mode, include, override", AVG_POOL_CASES)
def test_avg_pool2d(
    edgert: ModuleType, kernel, stride, padding, ceil_mode, include, override
) -> None:
    x = values((2, 3, 13, 11), 32)
    attributes = {
        "kernel": list(kernel),
        "stride": list(stride),
        "padding": list(padding),
        "ceil_mode": ceil_mode,
        "count_include_pad": include,
        "divisor_override": override,
    }
    (out,) = run_op(edgert, "edgert::avg_pool2d", [x], attributes)
    expected = pool_reference(
        x, kernel, stride, padding, (1, 1), bool(ceil_mode), "avg", bool(include), override
    )
    np.testing.assert_array_equal(out, expected)
    torch = torch_module()
    reference = torch.nn.functional.avg_pool2d(
        torch.from_numpy(x),
        kernel,
        stride,
        padding,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(include),
        divisor_override=override or None,
    )
    np.testing.assert_allclose(out, reference.numpy(), **TORCH_TOLERANCE)


def test_avg_pool2d_divisors_differ_with_count_include_pad(edgert: ModuleType) -> None:
    x = np.ones((1, 1, 4, 4), F32)
    attributes = {"kernel": [3, 3], "stride": [1, 1], "padding": [1, 1]}
    (with_padding,) = run_op(edgert, "edgert::avg_pool2d", [x], attributes)
    (without,) = run_op(edgert, "edgert::avg_pool2d", [x], {**attributes, "count_include_pad": 0})
    assert with_padding[0, 0, 0, 0] == F32(4) / F32(9) and without[0, 0, 0, 0] == 1.0
    np.testing.assert_array_equal(without, np.ones_like(without))


@pytest.mark.parametrize("size", [(5, 4), (1, 1), (13, 11), (20, 3), (26, 1)])
def test_adaptive_avg_pool2d(edgert: ModuleType, size: tuple) -> None:
    x = values((2, 3, 13, 11), 33)
    (out,) = run_op(edgert, "edgert::adaptive_avg_pool2d", [x], {"output_size": list(size)})
    np.testing.assert_array_equal(out, adaptive_reference(x, *size))
    torch = torch_module()
    reference = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x), size)
    np.testing.assert_allclose(out, reference.numpy(), **TORCH_TOLERANCE)


@pytest.mark.parametrize("size", [(26, 22), (7, 5), (82, 3), (13, 11), (1, 40)])
def test_upsample_nearest2d(edgert: ModuleType, size: tuple) -> None:
    x = values((2, 3, 13, 11), 34) if size != (82, 3) else values((1, 2, 2, 3), 35)
    (out,) = run_op(edgert, "edgert::upsample_nearest2d", [x], {"size": list(size)})
    rows, columns = nearest_sources(size[0], x.shape[2]), nearest_sources(size[1], x.shape[3])
    np.testing.assert_array_equal(out, x[:, :, rows][:, :, :, columns])
    torch = torch_module()
    reference = torch.nn.functional.interpolate(torch.from_numpy(x), size=size, mode="nearest")
    np.testing.assert_array_equal(out, reference.numpy())  # torch's float index arithmetic


def test_upsample_uses_torchs_float_index(edgert: ModuleType) -> None:
    """floor(41 · 2/82) is 1 exactly, but torch's float32 arithmetic gives 0."""
    x = np.array([[[[10.0], [20.0]]]], F32)
    (out,) = run_op(edgert, "edgert::upsample_nearest2d", [x], {"size": [82, 1]})
    assert out[0, 0, 41, 0] == 10.0 and out[0, 0, 42, 0] == 20.0


def test_pooling_of_empty_tensors(edgert: ModuleType) -> None:
    x = values((0, 3, 8, 8), 36)
    for op, attributes, shape in [
        ("edgert::max_pool2d", {"kernel": [2, 2]}, (0, 3, 4, 4)),
        ("edgert::avg_pool2d", {"kernel": [3, 3], "stride": [1, 1]}, (0, 3, 6, 6)),
        ("edgert::adaptive_avg_pool2d", {"output_size": [2, 5]}, (0, 3, 2, 5)),
        ("edgert::upsample_nearest2d", {"size": [16, 0]}, (0, 3, 16, 0)),
    ]:
        (out,) = run_op(edgert, op, [x], attributes)
        assert out.shape == shape
    (out,) = run_op(
        edgert, "edgert::upsample_nearest2d", [values((1, 2, 3, 3), 37)], {"size": [0, 4]}
    )
    assert out.shape == (1, 2, 0, 4)


BAD_POOLING = [
    ("edgert::max_pool2d", {}, "kernel .* is required"),
    ("edgert::max_pool2d", {"kernel": [0, 2]}, "kernel must be >= 1"),
    ("edgert::max_pool2d", {"kernel": [2, 2], "stride": [2]}, "stride must be 2 ints"),
    ("edgert::max_pool2d", {"kernel": [2, 2], "padding": [2, 0]}, "at most half the kernel"),
    ("edgert::max_pool2d", {"kernel": [9, 2]}, "does not fit"),
    ("edgert::max_pool2d", {"kernel": [2**62, 2], "padding": [2**61, 0]}, "too large"),
    ("edgert::max_pool2d", {"kernel": [2, 2], "dilation": [2**62, 1]}, "too large"),
    ("edgert::avg_pool2d", {"kernel": [2, 2], "dilation": [2, 2]}, "dilation is not supported"),
    ("edgert::avg_pool2d", {"kernel": [2, 2], "stride": [0, 1]}, "stride must be >= 1"),
    ("edgert::adaptive_avg_pool2d", {}, "output_size .* is required"),
    ("edgert::adaptive_avg_pool2d", {"output_size": [-1, 2]}, "output_size must be >= 0"),
    ("edgert::adaptive_avg_pool2d", {"output_size": [2**62, 2]}, "too large"),
    ("edgert::upsample_nearest2d", {"size": [3]}, "size must be 2 ints"),
    ("edgert::upsample_nearest2d", {"size": [2**31, 2**31]}, "too large"),
]


@pytest.mark.parametrize("op, attributes, message", BAD_POOLING)
def test_pooling_rejects_bad_attributes(
    edgert: ModuleType, op: str, attributes: dict, message: str
) -> None:
    with pytest.raises(edgert.EdgertError, match=f"{op}: .*{message}"):
        run_op(edgert, op, [values((1, 2, 8, 8), 38)], attributes)


def test_pooling_rejects_bad_inputs(edgert: ModuleType) -> None:
    for op, attributes in [
        ("edgert::max_pool2d", {"kernel": [2, 2]}),
        ("edgert::avg_pool2d", {"kernel": [2, 2]}),
        ("edgert::adaptive_avg_pool2d", {"output_size": [2, 2]}),
        ("edgert::upsample_nearest2d", {"size": [2, 2]}),
    ]:
        with pytest.raises(edgert.EdgertError, match=rf"{op}: .*must be \[N, C, H, W\]"):
            run_op(edgert, op, [values((2, 8, 8), 39)], attributes)
        with pytest.raises(edgert.EdgertError, match=f"{op}: .*input must be float32"):
            run_op(edgert, op, [np.ones((1, 1, 8, 8), np.int32)], attributes)
    with pytest.raises(edgert.EdgertError, match="empty along a dimension"):
        run_op(edgert, "edgert::upsample_nearest2d", [values((1, 1, 0, 3), 40)], {"size": [2, 2]})


# ------------------------------------------------------------------- normalizations


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(2, 5, 7, 3), (4, 5), (3, 37), (1, 5, 0), (3, 5, 700)])
def test_batch_norm(edgert: ModuleType, shape: tuple, affine: bool) -> None:
    # [N, C] runs along each row with the channels' vectors (37: vectors and a tail)
    x = values(shape, 41)
    channels = (shape[1],)
    weight, bias = (values(channels, 42), values(channels, 43)) if affine else (None, None)
    mean, var = values(channels, 44), np.abs(values(channels, 45))
    (out,) = run_op(edgert, "edgert::batch_norm", [x, weight, bias, mean, var], {"eps": 1e-3})
    factor = (weight if affine else F32(1)) / np.sqrt(var + F32(1e-3))
    channel = (None, slice(None)) + (None,) * (len(shape) - 2)
    expected = (x - mean[channel]) * factor[channel]
    if affine:
        expected = expected + bias[channel]
    np.testing.assert_array_equal(out, expected)
    torch = torch_module()
    reference = torch.nn.functional.batch_norm(
        torch.from_numpy(x),
        torch.from_numpy(mean),
        torch.from_numpy(var),
        None if weight is None else torch.from_numpy(weight),
        None if bias is None else torch.from_numpy(bias),
        eps=1e-3,
    )
    np.testing.assert_allclose(out, reference.numpy(), **TORCH_TOLERANCE)


def test_batch_norm_rejects_bad_inputs(edgert: ModuleType) -> None:
    x, c5 = values((2, 5, 3), 46), values((5,), 47)
    for inputs, message in [
        ([x, None, None, c5], "expected inputs"),
        ([x, None, None, c5, values((4,), 48)], r"var \[4\] must be \[5\]"),
        ([x, values((5, 1), 49), None, c5, c5], r"weight \[5, 1\] must be \[5\]"),
        ([values((5,), 50), None, None, c5, c5], r"must be \[N, C, ...\]"),
    ]:
        with pytest.raises(edgert.EdgertError, match=f"edgert::batch_norm: .*{message}"):
            run_op(edgert, "edgert::batch_norm", inputs)
    with pytest.raises(edgert.EdgertError, match="eps must be finite"):
        run_op(edgert, "edgert::batch_norm", [x, None, None, c5, c5], {"eps": -1.0})


def rms_norm_reference(x: np.ndarray, weight, axis: int, eps: float) -> np.ndarray:
    lines = x.reshape(*x.shape[:axis], -1).astype(np.float64)
    # four partial sums, partial k over elements k, k + 4, ... in index order (cumsum keeps
    # the order), then (s0 + s1) + (s2 + s3)
    partial = [np.cumsum(lines[..., k::4] ** 2, axis=-1)[..., -1:] if lines.shape[-1] > k
               else np.zeros((*lines.shape[:-1], 1)) for k in range(4)]
    squares = (partial[0] + partial[1]) + (partial[2] + partial[3])
    scale = 1.0 / np.sqrt(squares / lines.shape[-1] + eps)
    out = (lines * scale).astype(F32).reshape(x.shape)
    return out * weight if weight is not None else out


@pytest.mark.parametrize("axis, with_weight", [(-1, True), (-2, True), (-1, False), (1, False)])
def test_rms_norm(edgert: ModuleType, axis: int, with_weight: bool) -> None:
    x = values((3, 4, 6, 70), 51)
    normalized = x.shape[axis:]
    weight = values(normalized, 52) if with_weight else None
    (out,) = run_op(edgert, "edgert::rms_norm", [x, weight], {"axis": axis})
    eps = float(np.finfo(F32).eps)
    np.testing.assert_array_equal(out, rms_norm_reference(x, weight, axis % x.ndim, eps))
    torch = torch_module()
    reference = torch.nn.functional.rms_norm(
        torch.from_numpy(x), normalized, None if weight is None else torch.from_numpy(weight)
    )
    np.testing.assert_allclose(out, reference.numpy(), **TORCH_TOLERANCE)
    (custom,) = run_op(edgert, "edgert::rms_norm", [x, weight], {"axis": axis, "eps": 0.5})
    np.testing.assert_array_equal(custom, rms_norm_reference(x, weight, axis % x.ndim, 0.5))


def test_rms_norm_rejects_bad_inputs(edgert: ModuleType) -> None:
    x = values((3, 4), 53)
    with pytest.raises(edgert.EdgertError, match=r"edgert::rms_norm: .*normalized shape \[4\]"):
        run_op(edgert, "edgert::rms_norm", [x, values((3,), 54)])
    with pytest.raises(edgert.EdgertError, match="edgert::rms_norm: axis is out of range"):
        run_op(edgert, "edgert::rms_norm", [x], {"axis": 2})
    (empty,) = run_op(edgert, "edgert::rms_norm", [values((0, 4), 55)])
    assert empty.shape == (0, 4)


def log_softmax_input() -> np.ndarray:
    x = values((6, 37, 300), 56) * 30
    x[0, 0, 5] = -np.inf
    x[1, 2, :] = 0.0
    x[2, 3, 7] = np.nan
    return x


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_log_softmax_is_its_documented_arithmetic(edgert: ModuleType, axis: int) -> None:
    x = log_softmax_input()
    (out,) = run_op(edgert, "edgert::log_softmax", [x], {"axis": axis})
    np.testing.assert_array_equal(out, log_softmax_reference(x, axis))
    torch = torch_module()
    finite = values((5, 7, 9), 57)
    (small,) = run_op(edgert, "edgert::log_softmax", [finite], {"axis": axis})
    reference = torch.nn.functional.log_softmax(torch.from_numpy(finite), axis)
    np.testing.assert_allclose(small, reference.numpy(), **TORCH_TOLERANCE)


def test_log_softmax_of_empty_tensor_and_bad_axis(edgert: ModuleType) -> None:
    (out,) = run_op(edgert, "edgert::log_softmax", [values((3, 0), 58)])
    assert out.shape == (3, 0)
    with pytest.raises(edgert.EdgertError, match="edgert::log_softmax: axis is out of range"):
        run_op(edgert, "edgert::log_softmax", [values((3, 4), 59)], {"axis": 2})


# ------------------------------------------------------------------- attention

SDPA = "edgert::scaled_dot_product_attention"


@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)),
        ((1, 130, 40), (1, 300, 40), (1, 300, 33)),  # crosses gemm's tiles and k slices
        ((2, 1, 4, 6), (1, 3, 9, 6), (1, 3, 9, 5)),  # broadcast batch dimensions
        ((1, 6), (3, 6), (3, 2)),
    ],
)
def test_attention_is_matmul_then_softmax(edgert: ModuleType, shapes: tuple) -> None:
    q, k, v = (values(shape, 60 + i) for i, shape in enumerate(shapes))
    (out,) = run_op(edgert, SDPA, [q, k, v])
    np.testing.assert_array_equal(out, attention_reference(q, k, v))
    torch = torch_module()
    reference = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(np.array(a)) for a in broadcast_batches(q, k, v))
    )
    np.testing.assert_allclose(out, reference.numpy(), **TORCH_TOLERANCE)


def test_attention_masks(edgert: ModuleType) -> None:
    torch = torch_module()
    sdpa = torch.nn.functional.scaled_dot_product_attention
    q, k, v = values((2, 3, 5, 8), 64), values((2, 3, 7, 8), 65), values((2, 3, 7, 4), 66)
    keep = np.random.RandomState(67).random_sample((5, 7)) > 0.3
    added = values((3, 1, 7), 68)
    tq, tk, tv = torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v)
    for mask in (keep, added):
        (out,) = run_op(edgert, SDPA, [q, k, v, mask])
        np.testing.assert_array_equal(out, attention_reference(q, k, v, mask))
        np.testing.assert_allclose(
            out, sdpa(tq, tk, tv, attn_mask=torch.from_numpy(mask)).numpy(), **TORCH_TOLERANCE
        )
    (causal,) = run_op(edgert, SDPA, [q, k, v], {"is_causal": 1, "scale": 0.3})
    np.testing.assert_array_equal(causal, attention_reference(q, k, v, causal=True, scale=0.3))
    np.testing.assert_allclose(
        causal, sdpa(tq, tk, tv, is_causal=True, scale=0.3).numpy(), **TORCH_TOLERANCE
    )


def test_fully_masked_rows_give_zeros(edgert: ModuleType) -> None:
    q, k, v = values((2, 4, 6), 69), values((2, 5, 6), 70), values((2, 5, 3), 71)
    keep = np.ones((2, 4, 5), bool)
    keep[0, 1] = False
    added = np.zeros((4, 5), F32)
    added[2] = -np.inf
    for mask, row in ((keep, (0, 1)), (added, (slice(None), 2))):
        (out,) = run_op(edgert, SDPA, [q, k, v, mask])
        assert (out[row] == 0).all() and (out != 0).sum() == out.size - out[row].size
        np.testing.assert_array_equal(out, attention_reference(q, k, v, mask))


def test_attention_of_empty_tensors(edgert: ModuleType) -> None:
    (out,) = run_op(
        edgert, SDPA, [values((2, 0, 4), 72), values((2, 3, 4), 73), values((2, 3, 5), 74)]
    )
    assert out.shape == (2, 0, 5)
    (out,) = run_op(
        edgert, SDPA, [values((2, 3, 4), 75), values((2, 0, 4), 76), values((2, 0, 5), 77)]
    )
    np.testing.assert_array_equal(out, np.zeros((2, 3, 5), F32))  # no keys: every row is masked


def test_attention_rejects_bad_inputs(edgert: ModuleType) -> None:
    q, k, v = values((2, 4, 6), 78), values((2, 5, 6), 79), values((2, 5, 3), 80)
    for inputs, attributes, message in [
        ([q, values((2, 5, 7), 81), v], {}, "do not match"),
        ([q, k, values((2, 4, 3), 82)], {}, "do not match"),
        ([q, values((3, 5, 6), 83), v], {}, "cannot be broadcast"),
        ([q, k, v, np.ones((4, 5), np.int32)], {}, "mask must be bool or float32"),
        ([q, k, v, np.ones((3, 4, 5), bool)], {}, "cannot be broadcast"),
        ([q, k, v, np.ones((2, 2, 4, 5), bool)], {}, "does not broadcast to the scores"),
        ([q, k, v, np.ones((4, 5), bool)], {"is_causal": 1}, "cannot both be given"),
        ([q, k, v], {"scale": float("inf")}, "scale must be finite"),
        ([q[0, 0], k, v], {}, "do not match"),
    ]:
        with pytest.raises(edgert.EdgertError, match=f"{SDPA}: .*{message}"):
            run_op(edgert, SDPA, inputs, attributes)


# ------------------------------------------------------------------- threads and instruction sets


def identical_bytes_cases() -> list[tuple[str, list[np.ndarray | None], dict]]:
    """Large enough that every kernel splits its work across threads."""
    return [
        (
            "edgert::conv2d",
            [values((1, 32, 40, 36), 90), values((48, 32, 3, 3), 91), values((48,), 92)],
            {"padding": [1, 1]},
        ),
        (
            "edgert::conv2d",
            [values((2, 12, 33, 30), 93), values((12, 3, 3, 3), 94), None],
            {"stride": [2, 1], "dilation": [1, 2], "groups": 4, "activation": "relu"},
        ),
        (
            "edgert::conv2d",
            [values((1, 32, 40, 37), 95), values((64, 1, 3, 3), 96), values((64,), 97)],
            {"padding": [1, 1], "groups": 32},
        ),
        (
            "edgert::conv2d",
            [values((1, 16, 33, 31), 98), values((16, 1, 5, 5), 99), None],
            {"padding": [2, 2], "stride": [2, 2], "groups": 16},
        ),
        ("edgert::conv2d", [values((2, 40, 20, 21), 100), values((50, 40, 1, 1), 101), None], {}),
        (
            "edgert::max_pool2d",
            [values((2, 32, 56, 57), 102)],
            {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": 1},
        ),
        ("edgert::avg_pool2d", [values((2, 32, 56, 57), 103)], {"kernel": [2, 2]}),
        ("edgert::adaptive_avg_pool2d", [values((2, 32, 50, 57), 104)], {"output_size": [7, 6]}),
        ("edgert::upsample_nearest2d", [values((2, 32, 50, 57), 105)], {"size": [77, 100]}),
        (
            "edgert::batch_norm",
            [
                values((4, 64, 40, 40), 106),
                values((64,), 107),
                values((64,), 108),
                values((64,), 109),
                np.abs(values((64,), 110)),
            ],
            {},
        ),
        ("edgert::rms_norm", [values((600, 256), 111), values((256,), 112)], {}),
        ("edgert::log_softmax", [log_softmax_input()], {}),
        ("edgert::log_softmax", [log_softmax_input()], {"axis": 1}),
        (
            SDPA,
            [
                values((2, 4, 100, 32), 113),
                values((2, 4, 120, 32), 114),
                values((2, 4, 120, 24), 115),
            ],
            {"is_causal": 1},
        ),
        (
            SDPA,
            [
                values((2, 4, 100, 32), 116),
                values((2, 4, 120, 32), 117),
                values((2, 4, 120, 24), 118),
                values((100, 120), 119),
            ],
            {},
        ),
    ]


_HASH_OUTPUTS = """
import ctypes, hashlib, json
import edgert
from tests.native.support import run_op
from tests.native.test_ops_nn import identical_bytes_cases
library = ctypes.CDLL(str(edgert.lib_dir() / "libedgert_kernels.so"))
library.edgert_kernels_isa.restype = ctypes.c_char_p
hashes = {}
for threads in (1, 2):
    edgert.set_threadpool_size(threads)
    outputs = [run_op(edgert, op, arrays, attributes, backends=[])[0]
               for op, arrays, attributes in identical_bytes_cases()]
    hashes[threads] = [hashlib.sha256(out.tobytes()).hexdigest() for out in outputs]
print(json.dumps({"isa": library.edgert_kernels_isa().decode(), "hashes": hashes}))
"""


def test_every_instruction_set_and_thread_count_gives_the_same_bytes(
    native_install: NativeInstall,
) -> None:
    results = {}
    for isa in ("portable", "avx2", "avx512"):
        environment = {"EDGERT_KERNELS_ISA": isa, "PYTHONPATH": f"{native_install.prefix}:{ROOT}"}
        completed = native_install.python(_HASH_OUTPUTS, env=environment, timeout=300)
        assert completed.returncode == 0, completed.stderr
        results[isa] = json.loads(completed.stdout)
    assert results["portable"]["isa"] == "portable"
    reference = results["portable"]["hashes"]["1"]
    assert len(set(reference)) == len(reference)  # the cases are distinct
    for isa, result in results.items():
        for threads, hashes in result["hashes"].items():
            assert hashes == reference, f"{isa} with {threads} threads differs from portable"


def test_thread_count_does_not_change_results(edgert: ModuleType) -> None:
    previous = edgert.threadpool_size()
    try:
        results = {}
        for threads in (1, 3):
            edgert.set_threadpool_size(threads)
            results[threads] = [
                run_op(edgert, op, arrays, attributes)[0].tobytes()
                for op, arrays, attributes in identical_bytes_cases()
            ]
    finally:
        edgert.set_threadpool_size(previous)
    for (op, _, _), single, pooled in zip(
        identical_bytes_cases(), results[1], results[3], strict=True
    ):
        assert single == pooled, f"{op}: results differ between 1 and 3 threads"


# ------------------------------------------------------------------- strided inputs

STRIDED_CHECK = r"""
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "edgert/runtime.hpp"

using namespace edgert;

Tensor filled(std::vector<int64_t> shape, unsigned seed, bool positive = false) {
  Tensor tensor(DType::Float32, std::move(shape));
  unsigned state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    const int value = static_cast<int>((state >> 8) % 201) - 100;
    tensor.data_as<float>()[i] = positive ? (value + 101) / 64.0f : value / 37.0f;
  }
  return tensor;
}

// The last two dimensions swapped: a view sharing `base`'s storage.
Tensor swapped(const Tensor& base) {
  std::vector<int64_t> shape = base.shape(), strides = base.strides();
  const size_t last = shape.size() - 1;
  std::swap(shape[last], shape[last - 1]);
  std::swap(strides[last], strides[last - 1]);
  return Tensor::view(base.dtype(), shape, strides, const_cast<void*>(base.data()), nullptr);
}

int failures = 0;

void check(const char* op, std::vector<Tensor> inputs, Attributes attributes = {}) {
  std::vector<Tensor> contiguous;
  bool any_strided = false;
  for (const Tensor& t : inputs) {
    any_strided = any_strided || !t.is_contiguous();
    contiguous.push_back(t.contiguous());
  }
  KernelFn kernel = find_operator(op);
  std::vector<Tensor> a(1), b(1);
  auto run = [&](std::vector<Tensor>& values, std::vector<Tensor>& outputs) {
    KernelContext context;
    context.op = op;
    for (const Tensor& t : values) context.inputs.push_back(&t);
    context.attributes = &attributes;
    context.outputs = &outputs;
    return kernel ? kernel(context) : Status(Code::NotFound, "not registered");
  };
  const Status first = run(inputs, a), second = run(contiguous, b);
  const bool same = any_strided && first.ok() && second.ok() && a[0].shape() == b[0].shape() &&
                    a[0].is_contiguous() && a[0].numel() > 0 &&
                    std::memcmp(a[0].data(), b[0].data(), a[0].nbytes()) == 0;
  std::printf("%s %s %s\n", same ? "SAME" : "DIFFERENT", op, first.message().c_str());
  failures += !same;
}

int main() {
  Attributes conv, depthwise, pool, adaptive, upsample, axis0;
  conv.set("padding", std::vector<int64_t>{1, 1});
  depthwise.set("groups", int64_t{4});
  depthwise.set("padding", std::vector<int64_t>{1, 0});
  pool.set("kernel", std::vector<int64_t>{2, 2});
  adaptive.set("output_size", std::vector<int64_t>{3, 2});
  upsample.set("size", std::vector<int64_t>{9, 7});
  axis0.set("axis", int64_t{0});
  check("edgert::conv2d",
        {swapped(filled({2, 4, 6, 7}, 1)), swapped(filled({5, 4, 3, 3}, 2)), filled({5}, 3)}, conv);
  check("edgert::conv2d", {swapped(filled({1, 4, 6, 7}, 4)), filled({8, 1, 3, 2}, 5)}, depthwise);
  check("edgert::max_pool2d", {swapped(filled({2, 3, 6, 8}, 6))}, pool);
  check("edgert::avg_pool2d", {swapped(filled({2, 3, 6, 8}, 7))}, pool);
  check("edgert::adaptive_avg_pool2d", {swapped(filled({2, 3, 6, 8}, 8))}, adaptive);
  check("edgert::upsample_nearest2d", {swapped(filled({2, 3, 6, 8}, 9))}, upsample);
  check("edgert::batch_norm", {swapped(filled({2, 3, 6, 8}, 10)), filled({3}, 11), filled({3}, 12),
                               filled({3}, 13), filled({3}, 14, true)});
  check("edgert::rms_norm", {swapped(filled({3, 6, 8}, 15)), filled({6}, 16)});
  check("edgert::log_softmax", {swapped(filled({3, 6, 8}, 17))}, axis0);
  check("edgert::scaled_dot_product_attention",
        {swapped(filled({2, 6, 5}, 18)), filled({2, 7, 6}, 19), swapped(filled({2, 4, 7}, 20)),
         swapped(filled({7, 5}, 21))});
  check("edgert_quantized::conv2d",
        {swapped(filled({1, 4, 6, 7}, 22)), Tensor(DType::Int8, {3, 4, 3, 3}),
         filled({3}, 23, true), Tensor(DType::Int32, {3})}, conv);
  return failures == 0 ? 0 : 1;
}
"""


def test_kernels_read_strided_inputs(native_install: NativeInstall, tmp_path: Path) -> None:
    """Programs bind contiguous copies, so strided views reach a kernel only from C++: each
    kernel called on views with swapped dimensions gives the bytes of contiguous copies."""
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    assert compiler, "a C++ compiler is required (the native build needs one too)"
    source, program = tmp_path / "strided_nn.cpp", tmp_path / "strided_nn"
    source.write_text(STRIDED_CHECK)
    package = native_install.package_dir
    lib = package / "lib"
    build = subprocess.run(
        [
            compiler,
            "-std=c++17",
            "-O1",
            str(source),
            "-o",
            str(program),
            f"-I{package / 'include'}",
            f"-L{lib}",
            "-Wl,--no-as-needed",
            "-ledgert_kernels",
            "-ledgert_kernels_quantized",
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
    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    assert len(lines) == 11 and all(line.startswith("SAME ") for line in lines), completed.stdout
