"""The float32 kernels compute exactly the arithmetic docs/kernels.md documents, bit for bit:
linear, matmul and conv2d add rounded products in increasing k from +0 (no FMA), softmax uses
edgert's own exp and sums in index order. numpy repeats that arithmetic step by step, and
every instruction set the kernels can choose (EDGERT_KERNELS_ISA) and every thread count
gives the same bytes. Shapes cross the blocking's edges: partial tiles (16 rows and columns
with AVX-512, 6 × 16 with AVX2, 4 × 8 portable), several row and column blocks, k longer than
one slice (256), batches of 1-4 rows (the strip kernels) and just past them; constant
weights (packed once, at prepare) give the same bytes as the same weights given at run time,
and the CPU delegate the same bytes as the plain kernels."""

from __future__ import annotations

import json
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import NativeInstall, run_op

F32 = np.float32
EXP_LOWEST = F32(-87.33654)  # ln(FLT_MIN), below which exp gives 0
EXP_POLYNOMIAL = [1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
                  5.0000001201e-1]


def values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.RandomState(seed).standard_normal(shape).astype(F32)


def products_in_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a [..., M, K] · b [K, N] as each output's float32 sum from +0, k increasing."""
    total = np.zeros((*a.shape[:-1], b.shape[1]), F32)
    for p in range(a.shape[-1]):
        total = total + a[..., p : p + 1] * b[p]
    return total


def exp_nonpositive(x: np.ndarray) -> np.ndarray:
    """edgert's float32 exp for x <= 0, operation by operation (vector_math.hpp)."""
    low, nan = x < EXP_LOWEST, np.isnan(x)
    reduced = np.where(low | nan, F32(0), x)
    n = np.rint(reduced * F32(1.44269504088896341))
    r = reduced - n * F32(0.693359375)
    r = r - n * F32(-2.12194440e-4)
    p = np.full_like(r, F32(1.9875691500e-4))
    for coefficient in EXP_POLYNOMIAL:
        p = p * r + F32(coefficient)
    e = p * (r * r) + r + F32(1)
    scale = ((n.astype(np.int32) + 127) << 23).view(F32)
    return np.where(nan, x, np.where(low, F32(0), e * scale))


def softmax_in_order(x: np.ndarray, axis: int) -> np.ndarray:
    moved = np.moveaxis(x, axis, -1)
    with np.errstate(invalid="ignore"):
        exps = exp_nonpositive(moved - moved.max(axis=-1, keepdims=True))
    total = np.zeros(moved.shape[:-1], F32)
    for j in range(moved.shape[-1]):
        total = total + exps[..., j]
    return np.moveaxis(exps / total[..., None], -1, axis)


@pytest.mark.parametrize("shape", [(37, 300), (130, 20), (2, 101, 13), (1, 520)])
@pytest.mark.parametrize("features_out", [45, 260])
def test_linear_adds_products_in_order(edgert: ModuleType, shape: tuple, features_out: int) -> None:
    x = values(shape, 1)
    weight = values((features_out, shape[-1]), 2)
    bias = values((features_out,), 3)
    (result,) = run_op(edgert, "edgert::linear", [x, weight, bias], backends=[])
    np.testing.assert_array_equal(result, products_in_order(x, weight.T) + bias)


def run_with_constants(edgert: ModuleType, op: str, x: np.ndarray, constants: list,
                       attributes: dict | None = None,
                       backends: list[str] | None = None) -> np.ndarray:
    """``op`` on the program input x and constant operands (None: absent), which the kernel
    prepares (packs) once; run by the plain kernels unless ``backends`` names delegates."""
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    wired = [builder.input(F32, x.shape)]
    wired += [None if c is None else builder.constant(c) for c in constants]
    builder.output(builder.op(op, wired, attributes))  # type: ignore[arg-type]
    program = edgert.load(builder.to_bytes())
    program.set_backends([] if backends is None else backends)
    (first,) = program.run([x])
    (second,) = program.run([x])  # the prepared state is kept: the same bytes again
    np.testing.assert_array_equal(first, second)
    return first


# (K, N): k across the 256-long slices, N across the 16- and 8-wide panels and the small
# batches' strips of 64 columns and units of 128.
LINEAR_SHAPES = [(300, 45), (257, 260), (513, 17), (16, 1100), (1, 1), (256, 16), (64, 2100)]
# Batch rows: the strip kernels (1-4), just past them, the 6- and 16-row tiles' edges and
# more than one 128-row block.
BATCH_ROWS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 130]


@pytest.mark.parametrize("rows", BATCH_ROWS)
@pytest.mark.parametrize("shape", LINEAR_SHAPES)
def test_prepared_linear_weight_is_the_same_arithmetic(edgert: ModuleType, rows: int,
                                                       shape: tuple) -> None:
    features_in, features_out = shape
    x = values((rows, features_in), 11)
    weight, bias = values((features_out, features_in), 12), values((features_out,), 13)
    expected = products_in_order(x, weight.T) + bias
    prepared = run_with_constants(edgert, "edgert::linear", x, [weight, bias])
    np.testing.assert_array_equal(prepared, expected)
    (at_run_time,) = run_op(edgert, "edgert::linear", [x, weight, bias], backends=[])
    np.testing.assert_array_equal(at_run_time, expected)
    no_bias = run_with_constants(edgert, "edgert::linear", x, [weight])
    np.testing.assert_array_equal(no_bias, products_in_order(x, weight.T))


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("columns", [45, 260, 1100])
def test_small_batch_matmul_reads_b_in_place(edgert: ModuleType, rows: int, columns: int) -> None:
    a, b = values((2, rows, 300), 14), values((300, columns), 15)
    (result,) = run_op(edgert, "edgert::matmul", [a, b], backends=[])
    np.testing.assert_array_equal(result, products_in_order(a, b))


@pytest.mark.parametrize("rows", [1, 4, 9, 40])
def test_cpu_delegate_with_constant_weights_is_the_same_arithmetic(edgert: ModuleType,
                                                                   rows: int) -> None:
    from edgert.export import ProgramBuilder

    w1, b1 = values((260, 300), 16), values((260,), 17)
    w2 = values((45, 260), 18)
    builder = ProgramBuilder()
    x = builder.input(F32, (rows, 300))
    first_linear = builder.op("edgert::linear", [x, builder.constant(w1), builder.constant(b1)])
    hidden = builder.op("edgert::relu", [first_linear])  # type: ignore[list-item]
    second_linear = builder.op("edgert::linear", [hidden, builder.constant(w2)])  # type: ignore[list-item]
    out = builder.op("edgert::relu", [second_linear])  # type: ignore[list-item]
    builder.output(out)  # type: ignore[arg-type]
    data = values((rows, 300), 19)
    delegated, plain = edgert.load(builder.to_bytes()), edgert.load(builder.to_bytes())
    plain.set_backends([])
    (with_cpu,), (without,) = delegated.run([data]), plain.run([data])
    assert delegated.delegated_nodes("cpu") == 4 and plain.delegated_nodes("cpu") == 0
    first = np.maximum(products_in_order(data, w1.T) + b1, 0)
    expected = np.maximum(products_in_order(first, w2.T), 0)
    np.testing.assert_array_equal(with_cpu, expected)
    np.testing.assert_array_equal(without, expected)
    np.testing.assert_array_equal(delegated.run([data])[0], expected)  # prepared once, reused


# (x shape, weight shape, stride, padding, dilation, groups): the gemm paths of conv2d
# (im2col, pointwise, grouped), output channels across the 16-row panels, taps across the
# 256-long slices, positions across the 256-wide blocks.
PREPARED_CONV_CASES = [
    ((2, 5, 13, 11), (7, 5, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 6, 17, 9), (4, 3, 3, 2), (2, 1), (1, 0), (1, 2), 2),
    ((1, 30, 19, 17), (100, 30, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 64, 12, 12), (64, 64, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 33, 9, 30), (17, 33, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((2, 6, 7, 7), (9, 6, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((1, 6, 7, 5), (4, 3, 1, 1), (1, 1), (0, 0), (1, 1), 2),
    ((2, 40, 2, 2), (37, 40, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # a plane of 4: as linear
    ((1, 20, 1, 1), (50, 20, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # pointwise on one pixel
    ((3, 17, 1, 3), (9, 17, 1, 1), (1, 1), (0, 0), (1, 1), 1),  # a plane of 3, three images
    ((1, 4, 7, 5), (1, 4, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((1, 2, 3, 2), (3, 2, 2, 3), (1, 2), (1, 36), (1, 1), 1),
    ((1, 8, 10, 10), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 8),  # depthwise: nothing prepared
]


@pytest.mark.parametrize("case", PREPARED_CONV_CASES)
@pytest.mark.parametrize("activation", ["none", "relu"])
def test_prepared_conv2d_weight_is_the_same_arithmetic(edgert: ModuleType, case: tuple,
                                                       activation: str) -> None:
    from tests.native.test_ops_nn import conv_attributes, conv_reference  # it imports this module

    x_shape, w_shape, stride, padding, dilation, groups = case
    x, weight, bias = values(x_shape, 20), values(w_shape, 21), values((w_shape[0],), 22)
    attributes = conv_attributes(stride, padding, dilation, groups, activation=activation)
    relu = activation == "relu"
    expected = conv_reference(x, weight, bias, stride, padding, dilation, groups, relu=relu)
    prepared = run_with_constants(edgert, "edgert::conv2d", x, [weight, bias], attributes)
    np.testing.assert_array_equal(prepared, expected)
    (at_run_time,) = run_op(edgert, "edgert::conv2d", [x, weight, bias], attributes, backends=[])
    np.testing.assert_array_equal(at_run_time, expected)


# Depthwise convolutions (one input channel per group), the direct kernel: its vectors run
# across the rows of an output plane (a 7×7 plane is one step of 64 outputs, wider ones many,
# with partial last vectors), so the cases cross those tails with odd sizes; strides 1, 2 (the
# vectorized column split) and 3, dilation, 3×3, 5×5 and rectangular kernels, asymmetric
# padding, two outputs per channel, a 1×1 image, and padding far wider than the input (the row
# path). (x shape, kernel (KH, KW), stride, padding, dilation, outputs per channel)
DEPTHWISE_CASES = [
    ((1, 3, 7, 7), (3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 5, 14, 14), (3, 3), (2, 2), (1, 1), (1, 1), 1),
    ((2, 4, 13, 17), (5, 5), (1, 1), (2, 2), (1, 1), 1),
    ((1, 3, 23, 29), (5, 5), (2, 2), (2, 2), (1, 1), 1),
    ((1, 2, 19, 11), (3, 3), (1, 1), (2, 2), (2, 2), 1),
    ((1, 2, 17, 21), (3, 5), (2, 1), (0, 3), (1, 2), 2),
    ((1, 3, 31, 33), (3, 3), (3, 3), (1, 0), (1, 1), 1),
    ((1, 2, 1, 1), (3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 2, 5, 4), (5, 5), (2, 2), (2, 2), (1, 1), 1),
    ((1, 16, 35, 35), (3, 3), (2, 2), (0, 0), (1, 1), 1),
    ((1, 3, 71, 67), (3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 2, 3, 2), (3, 3), (1, 1), (3, 40), (1, 1), 1),
]


def depthwise_operands(case: tuple, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    x_shape, kernel, stride, padding, dilation, multiplier = case
    channels = x_shape[1]
    x = values(x_shape, seed)
    weight = values((channels * multiplier, 1, *kernel), seed + 1)
    bias = values((channels * multiplier,), seed + 2)
    return x, weight, bias, conv_attributes_of(stride, padding, dilation, channels)


def conv_attributes_of(stride: tuple, padding: tuple, dilation: tuple, groups: int,
                       **extra: object) -> dict:
    return {"stride": list(stride), "padding": list(padding), "dilation": list(dilation),
            "groups": groups, **extra}


@pytest.mark.parametrize("case", DEPTHWISE_CASES)
@pytest.mark.parametrize("activation", ["none", "relu"])
def test_depthwise_conv2d_adds_products_in_order(edgert: ModuleType, case: tuple,
                                                 activation: str) -> None:
    """The direct kernel's bytes are the contract's in-order sums (numpy), with and without a
    bias, its weights given at run time or as constants; and within rounding of torch."""
    from tests.native.test_ops_nn import TORCH_TOLERANCE, conv_reference, torch_module

    x, weight, bias, attributes = depthwise_operands(case, 30)
    attributes["activation"] = activation
    _, _, stride, padding, dilation, _ = case
    groups = x.shape[1]
    relu = activation == "relu"
    expected = conv_reference(x, weight, bias, stride, padding, dilation, groups, relu=relu)
    (out,) = run_op(edgert, "edgert::conv2d", [x, weight, bias], attributes, backends=[])
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(
        run_with_constants(edgert, "edgert::conv2d", x, [weight, bias], attributes), expected)
    (no_bias,) = run_op(edgert, "edgert::conv2d", [x, weight], attributes, backends=[])
    np.testing.assert_array_equal(
        no_bias, conv_reference(x, weight, None, stride, padding, dilation, groups, relu=relu))
    torch = torch_module()
    reference = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(weight),
                                           torch.from_numpy(bias), stride, padding, dilation,
                                           groups)
    if relu:
        reference = torch.relu(reference)
    np.testing.assert_allclose(out, reference.numpy(), **TORCH_TOLERANCE)


def test_depthwise_conv2d_with_a_dynamic_batch(edgert: ModuleType) -> None:
    """One program, its batch known only at run time: each batch size gives the in-order sums
    (the kernel's buffers are sized per run)."""
    from edgert.export import ProgramBuilder

    from tests.native.test_ops_nn import conv_reference

    case = ((1, 6, 15, 13), (5, 5), (2, 2), (2, 2), (1, 1), 1)
    _, weight, bias, attributes = depthwise_operands(case, 40)
    builder = ProgramBuilder()
    x_value = builder.input(F32, (-1, 6, 15, 13))
    builder.output(builder.op("edgert::conv2d", [x_value, builder.constant(weight),  # type: ignore[arg-type]
                                                 builder.constant(bias)], attributes))
    program = edgert.load(builder.to_bytes())
    program.set_backends([])
    for batch in (1, 3, 2, 5):
        x = values((batch, 6, 15, 13), 41 + batch)
        (out,) = program.run([x])
        np.testing.assert_array_equal(
            out, conv_reference(x, weight, bias, (2, 2), (2, 2), (1, 1), 6))


# An activation fused into conv2d or linear (attribute `activation`, clamp's bounds as
# `activation_min` / `activation_max`) and the separate operator after the unfused node.
FUSED_ACTIVATIONS = [
    ("relu", "edgert::relu", {}),
    ("clamp", "edgert::clamp", {"min": 0.0, "max": 6.0}),
    ("clamp", "edgert::clamp", {"min": -1.5}),
    ("clamp", "edgert::clamp", {"max": 1}),
    ("hardswish", "edgert::hardswish", {}),
    ("hardsigmoid", "edgert::hardsigmoid", {}),
    ("silu", "edgert::silu", {}),
    ("sigmoid", "edgert::sigmoid", {}),
]
# (x shape, weight shape, stride, padding, dilation, groups): im2col, pointwise, grouped,
# depthwise (the direct kernel and its row path).
FUSED_CONV_CASES = [
    ((2, 5, 13, 11), (7, 5, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 6, 7, 5), (4, 3, 1, 1), (1, 1), (0, 0), (1, 1), 2),
    ((2, 6, 9, 9), (9, 6, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ((1, 8, 15, 14), (8, 1, 5, 5), (2, 2), (2, 2), (1, 1), 8),
    ((1, 3, 2, 3), (3, 1, 3, 3), (1, 1), (3, 40), (1, 1), 3),
]


def fused_and_apart(edgert: ModuleType, op: str, x: np.ndarray, constants: list[np.ndarray],
                    attributes: dict, activation: tuple) -> tuple[np.ndarray, np.ndarray]:
    """``op`` with the activation fused, and ``op`` followed by the activation's operator."""
    from edgert.export import ProgramBuilder

    kind, activation_op, bounds = activation
    fused = {**attributes, "activation": kind,
             **{f"activation_{name}": value for name, value in bounds.items()}}
    results = []
    for together in (True, False):
        builder = ProgramBuilder()
        wired = [builder.input(F32, x.shape), *(builder.constant(c) for c in constants)]
        value = builder.op(op, wired, fused if together else attributes)
        if not together:
            value = builder.op(activation_op, [value], bounds)  # type: ignore[list-item]
        builder.output(value)  # type: ignore[arg-type]
        program = edgert.load(builder.to_bytes())
        program.set_backends([])
        results.append(program.run([x])[0])
    return results[0], results[1]


def with_special_values(x: np.ndarray) -> np.ndarray:
    """x scaled to reach every activation's regions (sigmoid's and silu's far tails, clamp's
    bounds), with a NaN, infinities and a -0."""
    x = x * F32(40)
    flat = x.reshape(-1)
    flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return x


@pytest.mark.parametrize("activation", FUSED_ACTIVATIONS)
@pytest.mark.parametrize("case", FUSED_CONV_CASES)
def test_a_fused_conv2d_activation_gives_the_bytes_of_the_separate_operator(
        edgert: ModuleType, case: tuple, activation: tuple) -> None:
    from tests.native.test_ops_nn import conv_attributes

    x_shape, w_shape, stride, padding, dilation, groups = case
    x = with_special_values(values(x_shape, 50))
    constants = [values(w_shape, 51), values((w_shape[0],), 52)]
    attributes = conv_attributes(stride, padding, dilation, groups)
    fused, apart = fused_and_apart(edgert, "edgert::conv2d", x, constants, attributes, activation)
    assert fused.tobytes() == apart.tobytes()


@pytest.mark.parametrize("activation", FUSED_ACTIVATIONS)
@pytest.mark.parametrize("rows", [1, 3, 5, 130])
def test_a_fused_linear_activation_gives_the_bytes_of_the_separate_operator(
        edgert: ModuleType, rows: int, activation: tuple) -> None:
    x = with_special_values(values((rows, 70), 53))
    constants = [values((45, 70), 54), values((45,), 55)]
    fused, apart = fused_and_apart(edgert, "edgert::linear", x, constants, {}, activation)
    assert fused.tobytes() == apart.tobytes()
    (at_run_time,) = run_op(edgert, "edgert::linear", [x, *constants],  # the weight not prepared
                            {"activation": activation[0],
                             **{f"activation_{k}": v for k, v in activation[2].items()}},
                            backends=[])
    assert at_run_time.tobytes() == apart.tobytes()


@pytest.mark.parametrize("op", ["edgert::conv2d", "edgert::linear"])
def test_an_unknown_activation_is_refused(edgert: ModuleType, op: str) -> None:
    x = values((1, 2, 5, 5), 56) if op == "edgert::conv2d" else values((3, 4), 56)
    weight = values((2, 2, 3, 3), 57) if op == "edgert::conv2d" else values((5, 4), 57)
    with pytest.raises(edgert.EdgertError, match="activation must be one of"):
        run_op(edgert, op, [x, weight], {"activation": "tanh"}, backends=[])
    with pytest.raises(edgert.EdgertError, match="activation_min is NaN"):
        run_op(edgert, op, [x, weight], {"activation": "clamp", "activation_min": float("nan")},
               backends=[])


# Broadcasts whose neighbouring dimensions the elementwise kernels merge (a per-channel scale
# over planes, planes over channels, size-1 dimensions anywhere) and ones they cannot.
BROADCAST_SHAPES = [
    ((1, 6, 7, 7), (1, 6, 1, 1)), ((2, 5, 3, 9), (2, 5, 1, 1)), ((1, 4, 5, 6), (1, 1, 5, 6)),
    ((3, 1, 4, 1, 5), (1, 2, 1, 6, 1)), ((2, 3, 1, 4), (2, 1, 1, 4)), ((1, 1, 1), (1, 1, 1)),
    ((4, 1), (1, 5)), ((5,), ()), ((2, 1, 3, 1), (2, 7, 3, 1)),
]


@pytest.mark.parametrize("op", ["edgert::add", "edgert::sub", "edgert::mul", "edgert::div"])
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
def test_broadcast_elementwise_is_numpy_exactly(edgert: ModuleType, op: str,
                                                shapes: tuple) -> None:
    a, b = values(shapes[0], 60), values(shapes[1], 61) + F32(3)
    expected = {"edgert::add": np.add, "edgert::sub": np.subtract, "edgert::mul": np.multiply,
                "edgert::div": np.divide}[op](a, b)
    for first, second, want in ((a, b, expected), (b, a, None)):
        (out,) = run_op(edgert, op, [first, second], backends=[])
        if want is None:
            want = {"edgert::add": np.add, "edgert::sub": np.subtract,
                    "edgert::mul": np.multiply, "edgert::div": np.divide}[op](b, a)
        assert out.shape == want.shape and out.tobytes() == want.astype(F32).tobytes()


def test_fused_linear_relu_is_the_same_arithmetic(edgert: ModuleType) -> None:
    x, weight, bias = values((100, 300), 4), values((70, 300), 5), values((70,), 6)
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    hidden = builder.op("edgert::linear", [builder.input(F32, x.shape), builder.constant(weight),
                                           builder.constant(bias)])
    builder.output(builder.op("edgert::relu", [hidden]))  # type: ignore[arg-type]
    program = edgert.load(builder.to_bytes())
    (result,) = program.run([x])
    assert program.delegated_nodes("cpu") == 2
    np.testing.assert_array_equal(result, np.maximum(products_in_order(x, weight.T) + bias, 0))


MATMUL_SHAPES = [
    ((2, 130, 300), (300, 70)), ((7, 5), (5, 270)), ((3,), (3, 9)), ((1, 300), (300, 70)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_matmul_adds_products_in_order(edgert: ModuleType, shapes: tuple) -> None:
    a, b = values(shapes[0], 7), values(shapes[1], 8)
    (result,) = run_op(edgert, "edgert::matmul", [a, b], backends=[])
    expected = products_in_order(a.reshape(-1, a.shape[-1]) if a.ndim == 1 else a, b)
    np.testing.assert_array_equal(result, expected.reshape(result.shape))


def softmax_input() -> np.ndarray:
    x = values((6, 37, 300), 9) * 30  # exponents far below ln(FLT_MIN) too
    x[0, 0, 5] = -np.inf
    x[1, 2, :] = 0.0
    x[2, 3, 7] = np.nan
    return x


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_is_its_documented_arithmetic(edgert: ModuleType, axis: int) -> None:
    x = softmax_input()
    (result,) = run_op(edgert, "edgert::softmax", [x], {"axis": axis}, backends=[])
    np.testing.assert_array_equal(result, softmax_in_order(x, axis))


def test_exp_is_within_one_ulp_of_float64() -> None:
    """The reference above is the kernels' exp; this bounds it against the true exp."""
    x = -np.linspace(0, 87.3, 2_000_001, dtype=F32)
    exact = np.exp(x.astype(np.float64))
    relative = np.abs(exp_nonpositive(x).astype(np.float64) - exact) / exact
    assert relative.max() < 2.0**-23


_HASH_OUTPUTS = """
import ctypes, hashlib, json, sys
import numpy as np
import edgert
from edgert.export import ProgramBuilder
from tests.native.test_kernels_exact import softmax_input, values
library = ctypes.CDLL(str(edgert.lib_dir() / "libedgert_kernels.so"))
library.edgert_kernels_isa.restype = ctypes.c_char_p
def run(op, arrays, attributes=None, constants=0, backends=()):
    # the last `constants` arrays are constants of the program (prepared), the others inputs
    builder = ProgramBuilder()
    inputs = arrays[:len(arrays) - constants]
    wired = [builder.input(a.dtype, a.shape) for a in inputs]
    wired += [builder.constant(a) for a in arrays[len(inputs):]]
    value = builder.op(op, wired, attributes)
    if backends:
        value = builder.op("edgert::relu", [value])
    builder.output(value)
    program = edgert.load(builder.to_bytes())
    program.set_backends(list(backends))
    return program.run(inputs)[0].tobytes()
conv = {"padding": [1, 1], "stride": [1, 1], "dilation": [1, 1], "groups": 1}
depthwise = {"padding": [2, 2], "stride": [2, 2], "dilation": [1, 1], "groups": 5}
def cases():
    linear_weights = [values((45, 300), 2), values((45,), 3)]
    wide_weights = [values((1100, 64), 10), values((1100,), 11)]
    conv_arrays = [values((1, 30, 19, 17), 13), values((100, 30, 3, 3), 14), values((100,), 15)]
    depthwise_arrays = [values((2, 5, 23, 29), 16), values((5, 1, 5, 5), 17), values((5,), 18)]
    return [
        run("edgert::linear", [values((101, 300), 1), *linear_weights]),
        run("edgert::linear", [values((1, 300), 1), *linear_weights]),
        *[run("edgert::linear", [values((rows, 300), 1), *linear_weights], constants=2)
          for rows in (1, 3, 9, 101)],
        *[run("edgert::linear", [values((rows, 64), 12), *wide_weights], constants=2)
          for rows in (1, 2, 4, 130)],
        run("edgert::linear", [values((9, 300), 1), *linear_weights], constants=2,
            backends=["cpu"]),
        run("edgert::matmul", [values((3, 50, 70), 4), values((70, 33), 5)]),
        run("edgert::matmul", [values((3, 2, 70), 4), values((70, 1100), 5)]),
        run("edgert::conv2d", conv_arrays, conv),
        run("edgert::conv2d", conv_arrays, conv, constants=2),
        run("edgert::conv2d", depthwise_arrays, depthwise),
        run("edgert::conv2d", depthwise_arrays[:2], {**depthwise, "stride": [1, 1]}),
        run("edgert::conv2d", depthwise_arrays, {**depthwise, "activation": "silu"}),
        run("edgert::conv2d", conv_arrays, {**conv, "activation": "hardswish"}, constants=2),
        run("edgert::linear", [values((5, 300), 1), *linear_weights],
            {"activation": "clamp", "activation_min": 0.0, "activation_max": 6.0}, constants=2),
        run("edgert::softmax", [softmax_input()]),
        run("edgert::softmax", [softmax_input()], {"axis": 1}),
        run("edgert::add", [values((33, 77), 6), values((77,), 7)]),
        run("edgert::div", [values((33, 77), 8), values((33, 77), 9)]),
        run("edgert::relu", [softmax_input()]),
    ]
hashes = {}
for threads in (1, 2):
    edgert.set_threadpool_size(threads)
    hashes[threads] = [hashlib.sha256(c).hexdigest() for c in cases()]
print(json.dumps({"isa": library.edgert_kernels_isa().decode(), "hashes": hashes}))
"""


def test_every_instruction_set_and_thread_count_gives_the_same_bytes(
        native_install: NativeInstall) -> None:
    results = {}
    for isa in ("portable", "avx2", "avx512"):
        environment = {"EDGERT_KERNELS_ISA": isa, "PYTHONPATH": _python_path(native_install)}
        completed = native_install.python(_HASH_OUTPUTS, env=environment)
        assert completed.returncode == 0, completed.stderr
        results[isa] = json.loads(completed.stdout)
    assert results["portable"]["isa"] == "portable"
    assert {r["isa"] for r in results.values()} <= {"portable", "avx2", "avx512"}
    reference = results["portable"]["hashes"]["1"]
    for isa, result in results.items():
        for threads, hashes in result["hashes"].items():
            assert hashes == reference, f"{isa} with {threads} threads differs from portable with 1"


def _python_path(install: NativeInstall) -> str:
    from tests.native.support import ROOT

    return f"{install.prefix}:{ROOT}"

