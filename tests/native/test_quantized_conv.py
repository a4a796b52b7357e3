"""edgert_quantized::conv2d and the static activation qparams and activation of
edgert_quantized::linear, against numpy integer references: the sums are exact, and the
float32 steps after them (one conversion, one product of the scales, a multiply, an add) are
repeated in the same order, so outputs match bit for bit (docs/operators.md)."""

from __future__ import annotations

import functools
import json
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import ROOT, NativeInstall
from tests.native.support import run_op as shared_run_op
from tests.native.test_quantized import choose_qparams_reference, quantize_reference

F32 = np.float32
run_op = functools.partial(shared_run_op, backends=[])
CONV = "edgert_quantized::conv2d"
LINEAR = "edgert_quantized::linear"


def scalar(value: float | int, dtype: type) -> np.ndarray:
    return np.array([value], dtype)


def integer_conv(
    centered: np.ndarray, weight: np.ndarray, stride, padding, dilation, groups
) -> np.ndarray:
    """Exact int64 sums of a convolution of centered inputs (padding: 0) and weights."""
    n, channels, height, width = centered.shape
    out_channels, group_channels, kernel_h, kernel_w = weight.shape
    out_h = (height + 2 * padding[0] - dilation[0] * (kernel_h - 1) - 1) // stride[0] + 1
    out_w = (width + 2 * padding[1] - dilation[1] * (kernel_w - 1) - 1) // stride[1] + 1
    padded = np.pad(centered, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    per_group = out_channels // groups
    sums = np.zeros((n, out_channels, out_h, out_w), np.int64)
    for o in range(out_channels):
        first = o // per_group * group_channels
        for kh in range(kernel_h):
            for kw in range(kernel_w):
                rows = slice(
                    kh * dilation[0], kh * dilation[0] + stride[0] * (out_h - 1) + 1, stride[0]
                )
                columns = slice(
                    kw * dilation[1], kw * dilation[1] + stride[1] * (out_w - 1) + 1, stride[1]
                )
                patch = padded[:, first : first + group_channels, rows, columns]
                sums[:, o] += np.einsum("nchw,c->nhw", patch, weight[o, :, kh, kw])
    return sums


def conv_reference(
    x,
    weight,
    scales,
    zero_points,
    bias=None,
    stride=(1, 1),
    padding=(0, 0),
    dilation=(1, 1),
    groups=1,
    relu=False,
    static=None,
) -> np.ndarray:
    """Per-image qparams (or the static ones), exact sums, then the documented float32 steps."""
    centered = np.zeros(x.shape, np.int64)
    image_scales = []
    for i, image in enumerate(x):
        scale, zero = static if static else choose_qparams_reference(image, np.int8)
        centered[i] = quantize_reference(image, scale, zero, np.int8).astype(np.int64) - zero
        image_scales.append(F32(scale))
    weights = weight.astype(np.int64) - zero_points.astype(np.int64)[:, None, None, None]
    sums = integer_conv(centered, weights, stride, padding, dilation, groups)
    factors = np.array(image_scales, F32)[:, None] * scales[None, :]  # xs · ws[o] in float32
    out = sums.astype(F32) * factors[:, :, None, None]
    if bias is not None:
        out = out + bias[None, :, None, None]
    return np.where(out > 0, out, F32(0)) if relu else out


def conv_inputs(x_shape, w_shape, seed, zero_points=None):
    random = np.random.RandomState(seed)
    x = (random.standard_normal(x_shape) * 2).astype(F32)
    weight = random.randint(-128, 128, size=w_shape).astype(np.int8)
    scales = random.uniform(0.001, 0.02, w_shape[0]).astype(F32)
    if zero_points is None:
        zero_points = random.randint(-5, 6, size=w_shape[0]).astype(np.int32)
    bias = random.standard_normal(w_shape[0]).astype(F32)
    return x, weight, scales, np.asarray(zero_points, np.int32), bias


CASES = [  # x shape, weight shape, stride, padding, dilation, groups
    ((2, 3, 9, 8), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 6, 11, 9), (4, 3, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((1, 4, 10, 10), (8, 1, 3, 3), (2, 2), (1, 1), (1, 1), 4),  # depthwise, two outputs each
    ((2, 5, 7, 7), (6, 5, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((1, 20, 12, 13), (9, 20, 3, 3), (1, 1), (2, 1), (1, 1), 1),  # 180 taps, 156 positions
    ((1, 2, 3, 2), (3, 2, 2, 3), (1, 2), (1, 36), (1, 1), 1),  # padding far wider than x
    ((1, 3, 6, 5), (3, 1, 2, 3), (2**40, 2**40), (1, 1), (1, 2), 3),  # strides far beyond x
]


def attributes(stride, padding, dilation, groups, **extra) -> dict:
    return {
        "stride": list(stride),
        "padding": list(padding),
        "dilation": list(dilation),
        "groups": groups,
        **extra,
    }


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d_with_per_image_qparams(edgert: ModuleType, case: tuple, with_bias: bool) -> None:
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, weight, scales, zero_points, bias = conv_inputs(x_shape, w_shape, 1)
    bias = bias if with_bias else None
    (out,) = run_op(
        edgert,
        CONV,
        [x, weight, scales, zero_points, bias],
        attributes(stride, padding, dilation, groups),
    )
    expected = conv_reference(
        x, weight, scales, zero_points, bias, stride, padding, dilation, groups
    )
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


def test_images_are_quantized_independently(edgert: ModuleType) -> None:
    x, weight, scales, zero_points, bias = conv_inputs((3, 3, 6, 6), (4, 3, 3, 3), 2)
    x *= np.array([0.01, 1, 100], F32)[:, None, None, None]
    (batch,) = run_op(edgert, CONV, [x, weight, scales, zero_points, bias])
    for i in range(3):
        (alone,) = run_op(edgert, CONV, [x[i : i + 1], weight, scales, zero_points, bias])
        assert batch[i].tobytes() == alone[0].tobytes()


@pytest.mark.parametrize("case", [CASES[0], CASES[2]])
def test_conv2d_with_static_qparams_clamps(edgert: ModuleType, case: tuple) -> None:
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, weight, scales, zero_points, bias = conv_inputs(x_shape, w_shape, 3)
    static = (F32(0.01), 3)  # covers about [-1.3, 1.2]: most of x clamps
    inputs = [x, weight, scales, zero_points, bias, scalar(0.01, F32), scalar(3, np.int32)]
    (out,) = run_op(
        edgert, CONV, inputs, attributes(stride, padding, dilation, groups, activation="relu")
    )
    expected = conv_reference(
        x,
        weight,
        scales,
        zero_points,
        bias,
        stride,
        padding,
        dilation,
        groups,
        relu=True,
        static=static,
    )
    np.testing.assert_array_equal(out, expected)
    dynamic = conv_reference(
        x, weight, scales, zero_points, bias, stride, padding, dilation, groups, relu=True
    )
    assert not np.array_equal(out, dynamic)  # the static qparams were used
    assert (out == 0).any() and (out > 0).any()


def test_zero_points_outside_int8_take_the_int64_path(edgert: ModuleType) -> None:
    x, weight, scales, _, bias = conv_inputs((1, 3, 7, 6), (4, 3, 3, 3), 4)
    zero_points = np.array([0, 300, -(2**31), 2**31 - 1], np.int32)
    (out,) = run_op(edgert, CONV, [x, weight, scales, zero_points, bias], {"padding": [1, 1]})
    np.testing.assert_array_equal(
        out, conv_reference(x, weight, scales, zero_points, bias, padding=(1, 1))
    )
    static = [scalar(0.02, F32), scalar(-1000, np.int32)]
    (out,) = run_op(
        edgert, CONV, [x, weight, scales, zero_points, bias, *static], {"padding": [1, 1]}
    )
    expected = conv_reference(
        x, weight, scales, zero_points, bias, padding=(1, 1), static=(F32(0.02), -1000)
    )
    np.testing.assert_array_equal(out, expected)


def test_conv2d_of_empty_tensors(edgert: ModuleType) -> None:
    x, weight, scales, zero_points, bias = conv_inputs((0, 3, 5, 5), (4, 3, 3, 3), 5)
    (out,) = run_op(edgert, CONV, [x, weight, scales, zero_points, bias])
    assert out.shape == (0, 4, 3, 3)
    x, weight, scales, zero_points, bias = conv_inputs((1, 0, 5, 5), (4, 0, 3, 3), 6)
    (out,) = run_op(edgert, CONV, [x, weight, scales, zero_points, bias])
    np.testing.assert_array_equal(out, np.broadcast_to(bias[None, :, None, None], (1, 4, 3, 3)))


def test_conv2d_with_a_dynamic_batch(edgert: ModuleType) -> None:
    from edgert.export import ProgramBuilder

    _, weight, scales, zero_points, bias = conv_inputs((1, 3, 6, 6), (4, 3, 3, 3), 7)
    builder = ProgramBuilder()
    value = builder.input(F32, (-1, 3, 6, 6))
    constants = [builder.constant(a) for a in (weight, scales, zero_points, bias)]
    builder.output(builder.op(CONV, [value, *constants], {"padding": [1, 1]}))  # type: ignore[arg-type]
    program = edgert.load(builder.to_bytes())
    program.set_backends([])
    for batch in (1, 4):
        x = np.random.RandomState(batch).standard_normal((batch, 3, 6, 6)).astype(F32)
        (out,) = program.run([x])
        np.testing.assert_array_equal(
            out, conv_reference(x, weight, scales, zero_points, bias, padding=(1, 1))
        )


# ------------------------------------------------------------------- depthwise

DEPTHWISE_CASES = [  # x shape, kernel, stride, padding, dilation, outputs per input channel
    ((1, 5, 7, 7), (3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 3, 13, 17), (3, 3), (2, 2), (1, 1), (1, 1), 1),  # odd sizes, two images
    ((1, 4, 12, 12), (3, 3), (2, 2), (0, 0), (1, 1), 1),
    ((1, 3, 33, 35), (5, 5), (1, 1), (2, 2), (1, 1), 1),  # rows past four vectors, tails
    ((1, 3, 14, 15), (5, 5), (2, 2), (2, 2), (1, 1), 1),
    ((1, 2, 11, 19), (3, 3), (1, 1), (2, 2), (2, 2), 1),  # dilation
    ((1, 2, 16, 9), (5, 3), (2, 1), (3, 0), (1, 3), 2),  # stride and dilation per dimension
    ((1, 2, 10, 23), (3, 3), (3, 3), (1, 1), (1, 1), 3),  # stride 3, three outputs each
    ((1, 3, 1, 1), (3, 3), (2, 2), (1, 1), (1, 1), 1),  # a 1x1 input
    ((1, 2, 5, 1), (1, 1), (1, 1), (0, 0), (1, 1), 4),
    ((1, 2, 4, 4), (3, 3), (1, 2), (5, 6), (1, 1), 1),  # padding wider than the input
    ((1, 2, 3, 3), (3, 3), (2**40, 2**40), (1, 1), (1, 1), 1),  # strides far beyond x
    ((1, 2, 16, 20), (16, 16), (1, 1), (8, 8), (1, 1), 1),  # 256 taps: the most it takes
    ((1, 2, 18, 18), (17, 17), (1, 1), (8, 8), (1, 1), 1),  # 289 taps: the int16 path
    ((1, 2, 3, 70), (3, 3), (1, 1), (1, 40), (1, 1), 1),  # padding past the input + 32
]


@pytest.mark.parametrize("case", DEPTHWISE_CASES)
def test_depthwise_conv2d_is_exact(edgert: ModuleType, case: tuple) -> None:
    x_shape, kernel, stride, padding, dilation, multiplier = case
    channels = x_shape[1]
    w_shape = (channels * multiplier, 1, *kernel)
    x, weight, scales, zero_points, bias = conv_inputs(x_shape, w_shape, 12)
    attrs = attributes(stride, padding, dilation, channels)
    (out,) = run_op(edgert, CONV, [x, weight, scales, zero_points, bias], attrs)
    expected = conv_reference(
        x, weight, scales, zero_points, bias, stride, padding, dilation, channels
    )
    assert out.tobytes() == expected.tobytes()
    (out,) = run_op(edgert, CONV, [x, weight, scales, zero_points], attrs)
    expected = conv_reference(x, weight, scales, zero_points, None, stride, padding, dilation,
                              channels)
    assert out.tobytes() == expected.tobytes()


def test_depthwise_conv2d_extremes(edgert: ModuleType) -> None:
    """Weights and inputs at int8's ends (the largest centered products, 255²), static
    qparams that clamp, NaN and infinities in x, and relu."""
    channels = 4
    x, weight, scales, _, bias = conv_inputs((2, channels, 21, 19), (channels, 1, 5, 5), 13)
    weight[:2] = -128
    weight[2:] = 127
    zero_points = np.array([127, 127, -128, -128], np.int32)
    x[:, :2] = 1e6
    x[:, 2:] = -1e6
    x[0, 0, 3, 4], x[1, 2, 0, 0], x[1, 3, 5, 5] = np.nan, np.inf, -np.inf
    finite = np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=-np.inf)  # NaN quantizes as 0
    static = [scalar(0.5, F32), scalar(127, np.int32)]
    attrs = attributes((1, 1), (2, 2), (1, 1), channels, activation="relu")
    (out,) = run_op(edgert, CONV, [x, weight, scales, zero_points, bias, *static], attrs)
    expected = conv_reference(finite, weight, scales, zero_points, bias, (1, 1), (2, 2), (1, 1),
                              channels, relu=True, static=(F32(0.5), 127))
    assert out.tobytes() == expected.tobytes()
    static = [scalar(0.5, F32), scalar(-128, np.int32)]
    attrs = attributes((2, 2), (2, 2), (1, 1), channels)
    (out,) = run_op(edgert, CONV, [x, weight, scales, zero_points, bias, *static], attrs)
    expected = conv_reference(finite, weight, scales, zero_points, bias, (2, 2), (2, 2), (1, 1),
                              channels, static=(F32(0.5), -128))
    assert out.tobytes() == expected.tobytes()


def test_depthwise_conv2d_with_a_dynamic_batch(edgert: ModuleType) -> None:
    from edgert.export import ProgramBuilder

    _, weight, scales, zero_points, bias = conv_inputs((1, 6, 9, 9), (6, 1, 3, 3), 14)
    builder = ProgramBuilder()
    value = builder.input(F32, (-1, 6, 11, 9))
    constants = [builder.constant(a) for a in (weight, scales, zero_points, bias)]
    attrs = attributes((2, 2), (1, 1), (1, 1), 6, activation="relu")
    builder.output(builder.op(CONV, [value, *constants], attrs))  # type: ignore[arg-type]
    program = edgert.load(builder.to_bytes())
    program.set_backends([])
    for batch in (1, 3, 2):
        x = np.random.RandomState(batch).standard_normal((batch, 6, 11, 9)).astype(F32)
        (out,) = program.run([x])
        expected = conv_reference(x, weight, scales, zero_points, bias, (2, 2), (1, 1), (1, 1),
                                  6, relu=True)
        assert out.tobytes() == expected.tobytes()


def test_conv2d_rejects_bad_inputs(edgert: ModuleType) -> None:
    x, weight, scales, zero_points, bias = conv_inputs((1, 3, 5, 5), (4, 3, 3, 3), 8)
    nan = x.copy()
    nan[0, 0, 0, 0] = np.nan
    cases = [
        ([x, weight.astype(F32), scales, zero_points], {}, "weight must be int8"),
        ([x.astype(np.int32), weight, scales, zero_points], {}, "input must be float32"),
        ([x, weight[:, :2], scales, zero_points], {}, "do not match"),
        ([x, weight, scales[:3], zero_points], {}, "scales"),
        ([x, weight, scales, zero_points, bias[:2]], {}, "bias"),
        ([x, weight, scales, zero_points, bias, scalar(0.1, F32), None], {}, "given together"),
        (
            [x, weight, scales, zero_points, None, scalar(0.0, F32), scalar(0, np.int32)],
            {},
            "scale must be",
        ),
        ([nan, weight, scales, zero_points], {}, "non-finite"),
        ([x, weight, scales, zero_points], {"stride": [0, 1]}, "stride must be >= 1"),
        ([x, weight, scales, zero_points], {"activation": "tanh"}, "activation must be"),
        ([x, weight, scales, zero_points], {"padding": [2**62, 0]}, "too large"),
    ]
    for inputs, attrs, message in cases:
        with pytest.raises(edgert.EdgertError, match=f"{CONV}: .*{message}"):
            run_op(edgert, CONV, inputs, attrs)


# ------------------------------------------------------------------- linear


def linear_reference(x, weight, scales, zero_points, bias, static, relu) -> np.ndarray:
    rows = x.reshape(-1, x.shape[-1])
    centered_weight = weight.astype(np.int64) - zero_points.astype(np.int64)[:, None]
    scale, zero = static
    with np.errstate(invalid="ignore"):
        quantized = quantize_reference(
            np.nan_to_num(rows, nan=0.0, posinf=np.inf, neginf=-np.inf), scale, zero, np.int8
        )
    centered = (
        quantized.astype(np.int64) - zero
    )  # NaN quantizes as 0 does: to the (clamped) zero point
    out = (centered @ centered_weight.T).astype(F32) * (F32(scale) * scales)
    if bias is not None:
        out = out + bias
    out = np.where(out > 0, out, F32(0)) if relu else out
    return out.reshape(*x.shape[:-1], weight.shape[0])


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("zero_point", [4, -128, 500])
def test_linear_with_static_qparams(edgert: ModuleType, relu: bool, zero_point: int) -> None:
    random = np.random.RandomState(9)
    x = (random.standard_normal((3, 5, 40)) * 3).astype(F32)
    x[0, 0, :3] = [np.nan, np.inf, -np.inf]  # quantize's semantics: zero point, clamped ends
    weight = random.randint(-127, 128, size=(7, 40)).astype(np.int8)
    scales = random.uniform(0.001, 0.02, 7).astype(F32)
    zero_points = np.array([0, 1, -2, 3, 0, 0, 5], np.int32)
    bias = random.standard_normal(7).astype(F32)
    static = [scalar(0.02, F32), scalar(zero_point, np.int32)]
    (out,) = run_op(
        edgert,
        LINEAR,
        [x, weight, scales, zero_points, bias, *static],
        {"activation": "relu" if relu else "none"},
    )
    expected = linear_reference(x, weight, scales, zero_points, bias, (F32(0.02), zero_point), relu)
    np.testing.assert_array_equal(out, expected)


def test_linear_relu_with_dynamic_qparams(edgert: ModuleType) -> None:
    from tests.native.test_quantized import linear_reference as dynamic_reference

    random = np.random.RandomState(10)
    x = random.standard_normal((6, 24)).astype(F32)
    weight = random.randint(-127, 128, size=(5, 24)).astype(np.int8)
    scales, zero_points = np.full(5, 0.01, F32), np.zeros(5, np.int32)
    (out,) = run_op(edgert, LINEAR, [x, weight, scales, zero_points], {"activation": "relu"})
    expected = dynamic_reference(x, weight, scales, zero_points, None)
    np.testing.assert_array_equal(out, np.where(expected > 0, expected, F32(0)))
    assert (out == 0).any()


def test_linear_rejects_bad_static_qparams(edgert: ModuleType) -> None:
    x, weight = np.ones((2, 4), F32), np.ones((3, 4), np.int8)
    scales, zeros = np.ones(3, F32), np.zeros(3, np.int32)
    for extra, attrs, message in [
        ([None, scalar(0.1, F32)], {}, "given together"),
        ([None, scalar(0.1, F32), None], {}, "given together"),
        ([None, scalar(-1.0, F32), scalar(0, np.int32)], {}, "scale must be"),
        ([None, scalar(0.1, F32), scalar(0, np.int64)], {}, "qparams must be"),
        ([], {"activation": "sigmoid"}, "activation must be"),
    ]:
        with pytest.raises(edgert.EdgertError, match=f"{LINEAR}: .*{message}"):
            run_op(edgert, LINEAR, [x, weight, scales, zeros, *extra], attrs)


# ------------------------------------------------------------------- threads, instruction sets

_HASH_OUTPUTS = """
import hashlib, json
import numpy as np
import edgert
from tests.native.support import run_op
from tests.native.test_quantized_conv import conv_inputs
x, weight, scales, zero_points, bias = conv_inputs((2, 16, 30, 31), (24, 8, 3, 3), 11)
static = [np.array([0.01], np.float32), np.array([2], np.int32)]
dx, dweight, dscales, dzeros, dbias = conv_inputs((2, 16, 29, 31), (32, 1, 5, 5), 12)
cases = [([x, weight, scales, zero_points, bias], {"padding": [1, 1], "groups": 2}),
         ([x, weight, scales, zero_points, bias, *static],
          {"stride": [2, 1], "activation": "relu", "groups": 2}),
         ([dx, dweight[::2, :, 1:4, 1:4].copy(), dscales[::2], dzeros[::2], dbias[::2]],
          {"padding": [1, 1], "groups": 16}),
         ([dx, dweight, dscales, dzeros, dbias, *static],
          {"stride": [2, 2], "padding": [2, 2], "dilation": [1, 2], "groups": 16,
           "activation": "relu"})]
hashes = {}
for threads in (1, 2):
    edgert.set_threadpool_size(threads)
    hashes[threads] = [hashlib.sha256(run_op(edgert, "edgert_quantized::conv2d", inputs, attributes,
                                             backends=[])[0].tobytes()).hexdigest()
                       for inputs, attributes in cases]
print(json.dumps(hashes))
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
    reference = results["portable"]["1"]
    assert len(set(reference)) == 4
    for isa, hashes in results.items():
        assert hashes == {"1": reference, "2": reference}, f"{isa} differs"
