"""The quantized kernels (libedgert_kernels_quantized), the quantization pass and the shipped
quantized model.

Integer outputs must equal the numpy reference exactly. Float outputs of the quantized
kernels are exact too: the references below repeat the kernels' float32 operations in the
same order (documented in docs/operators.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import NativeInstall
from tests.native.support import run_op as shared_run_op

ROOT = Path(__file__).resolve().parents[2]
QUANTIZED_DTYPES = [np.int8, np.uint8]


run_op = shared_run_op


def scalar(value: float | int, dtype: type) -> np.ndarray:
    return np.array([value], dtype)


# ------------------------------------------------------------------- numpy references


def quantize_reference(
    x: np.ndarray, scale: np.ndarray | float, zero_point: np.ndarray | int, dtype: type
) -> np.ndarray:
    info = np.iinfo(dtype)
    rounded = np.rint(x / np.asarray(scale, np.float32))  # float32, ties to even
    shifted = rounded + np.asarray(zero_point).astype(np.float32)
    return np.clip(shifted, info.min, info.max).astype(dtype)


def dequantize_reference(
    q: np.ndarray, scale: np.ndarray | float, zero_point: np.ndarray | int
) -> np.ndarray:
    return (q.astype(np.int32) - np.asarray(zero_point, np.int32)).astype(np.float32) * np.asarray(
        scale, np.float32
    )


def choose_qparams_reference(x: np.ndarray, dtype: type) -> tuple[np.float32, int]:
    info = np.iinfo(dtype)
    low = min(0.0, float(x.min())) if x.size else 0.0
    high = max(0.0, float(x.max())) if x.size else 0.0
    scale = np.float32((np.float64(high) - np.float64(low)) / (info.max - info.min))
    if scale == 0:
        scale = np.float32(1.0)
    zero_point = int(
        np.clip(info.min - np.rint(np.float64(low) / np.float64(scale)), info.min, info.max)
    )
    return scale, zero_point


def linear_reference(
    x: np.ndarray,
    weight: np.ndarray,
    scales: np.ndarray,
    zero_points: np.ndarray,
    bias: np.ndarray | None,
) -> np.ndarray:
    rows = x.reshape(-1, x.shape[-1])
    centered_weight = weight.astype(np.int64) - zero_points.astype(np.int64)[:, None]
    out = np.zeros((rows.shape[0], weight.shape[0]), np.float32)
    for r, row in enumerate(rows):
        scale, zero = choose_qparams_reference(row, np.int8)
        centered = quantize_reference(row, scale, zero, np.int8).astype(np.int64) - zero
        out[r] = (centered_weight @ centered).astype(np.float32) * (scale * scales)
        if bias is not None:
            out[r] += bias
    return out.reshape(*x.shape[:-1], weight.shape[0])


# ------------------------------------------------------------------- per tensor

HALF_WAY = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, 3.49, 1e9, -1e9], np.float32)


@pytest.mark.parametrize("dtype", QUANTIZED_DTYPES)
@pytest.mark.parametrize("scale, zero_point", [(1.0, 0), (0.05, 3), (0.3, -7), (2.0, 100)])
def test_quantize_per_tensor_rounds_half_to_even_and_clamps(
    edgert: ModuleType, dtype: type, scale: float, zero_point: int
) -> None:
    x = np.concatenate(
        [HALF_WAY, np.random.RandomState(1).standard_normal(50).astype(np.float32) * 5]
    )
    (q,) = run_op(
        edgert,
        "edgert_quantized::quantize_per_tensor",
        [x, scalar(scale, np.float32), scalar(zero_point, np.int32)],
        {"dtype": np.dtype(dtype).name},
    )
    np.testing.assert_array_equal(q, quantize_reference(x, np.float32(scale), zero_point, dtype))
    assert q.dtype == dtype


def test_quantize_rounds_ties_to_even(edgert: ModuleType) -> None:
    (q,) = run_op(
        edgert,
        "edgert_quantized::quantize_per_tensor",
        [HALF_WAY[:6], scalar(1.0, np.float32), scalar(0, np.int32)],
    )
    np.testing.assert_array_equal(q, np.array([0, 2, 2, 0, -2, -2], np.int8))


@pytest.mark.parametrize("dtype", QUANTIZED_DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (0,), ()])
def test_dequantize_per_tensor(edgert: ModuleType, dtype: type, shape: tuple) -> None:
    info = np.iinfo(dtype)
    q = np.random.RandomState(2).randint(info.min, info.max + 1, size=shape).astype(dtype)
    (x,) = run_op(
        edgert,
        "edgert_quantized::dequantize_per_tensor",
        [q, scalar(0.125, np.float32), scalar(5, np.int32)],
    )
    np.testing.assert_array_equal(x, dequantize_reference(q, np.float32(0.125), 5))
    assert x.dtype == np.float32


@pytest.mark.parametrize("bad_scale", [0.0, -1.0, float("inf"), float("nan")])
def test_quantize_rejects_bad_qparams(edgert: ModuleType, bad_scale: float) -> None:
    x = np.ones(3, np.float32)
    with pytest.raises(edgert.EdgertError, match="scale"):
        run_op(
            edgert,
            "edgert_quantized::quantize_per_tensor",
            [x, scalar(bad_scale, np.float32), scalar(0, np.int32)],
        )


def test_quantize_rejects_bad_inputs(edgert: ModuleType) -> None:
    x = np.ones(3, np.float32)
    with pytest.raises(edgert.EdgertError, match="qparams"):
        run_op(
            edgert,
            "edgert_quantized::quantize_per_tensor",
            [x, np.ones(2, np.float32), scalar(0, np.int32)],
        )
    with pytest.raises(edgert.EdgertError, match="qparams"):
        run_op(
            edgert,
            "edgert_quantized::quantize_per_tensor",
            [x, scalar(1, np.float32), scalar(0, np.int64)],
        )
    with pytest.raises(edgert.EdgertError, match="float32"):
        run_op(
            edgert,
            "edgert_quantized::quantize_per_tensor",
            [np.ones(3, np.int32), scalar(1, np.float32), scalar(0, np.int32)],
        )
    with pytest.raises(edgert.EdgertError, match="dtype"):
        run_op(
            edgert,
            "edgert_quantized::quantize_per_tensor",
            [x, scalar(1, np.float32), scalar(0, np.int32)],
            {"dtype": "int16"},
        )
    with pytest.raises(edgert.EdgertError, match="int8 or uint8"):
        run_op(
            edgert,
            "edgert_quantized::dequantize_per_tensor",
            [np.ones(3, np.float32), scalar(1, np.float32), scalar(0, np.int32)],
        )


# ------------------------------------------------------------------- per channel


@pytest.mark.parametrize("dtype", QUANTIZED_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_per_channel_round_trip(edgert: ModuleType, dtype: type, axis: int) -> None:
    x = np.random.RandomState(3).standard_normal((3, 4, 5)).astype(np.float32) * 3
    channels = x.shape[axis]
    scales = np.linspace(0.01, 0.2, channels).astype(np.float32)
    zero_points = np.arange(channels, dtype=np.int32) * (3 if dtype == np.uint8 else -2) + (
        100 if dtype == np.uint8 else 0
    )
    view = [1, 1, 1]
    view[axis] = channels
    (q,) = run_op(
        edgert,
        "edgert_quantized::quantize_per_channel",
        [x, scales, zero_points],
        {"axis": axis, "dtype": np.dtype(dtype).name},
    )
    np.testing.assert_array_equal(
        q, quantize_reference(x, scales.reshape(view), zero_points.reshape(view), dtype)
    )
    (back,) = run_op(
        edgert, "edgert_quantized::dequantize_per_channel", [q, scales, zero_points], {"axis": axis}
    )
    np.testing.assert_array_equal(
        back, dequantize_reference(q, scales.reshape(view), zero_points.reshape(view))
    )


@pytest.mark.parametrize(
    ("scales", "zero_points", "axis", "message"),
    [(3, 3, 0, "scales"), (2, 3, 0, "zero points"), (2, 2, 2, "axis")],
)
def test_per_channel_rejects_bad_qparams(
    edgert: ModuleType, scales: int, zero_points: int, axis: int, message: str
) -> None:
    x = np.ones((2, 3), np.float32)
    qparams = [np.ones(scales, np.float32), np.zeros(zero_points, np.int32)]
    with pytest.raises(edgert.EdgertError, match=message):
        run_op(edgert, "edgert_quantized::quantize_per_channel", [x, *qparams], {"axis": axis})


# ------------------------------------------------------------------- choose_qparams


@pytest.mark.parametrize("dtype", QUANTIZED_DTYPES)
@pytest.mark.parametrize(
    "data",
    [
        np.linspace(-3, 5, 40),
        np.linspace(0.5, 2, 7),
        np.linspace(-4, -1, 9),
        np.zeros(5),
        np.zeros(0),
        np.array([1e-30, -2e-30]),
    ],
)
def test_choose_qparams(edgert: ModuleType, dtype: type, data: np.ndarray) -> None:
    x = data.astype(np.float32)
    scale, zero_point = run_op(
        edgert, "edgert_quantized::choose_qparams", [x], {"dtype": np.dtype(dtype).name}, outputs=2
    )
    expected_scale, expected_zero = choose_qparams_reference(x, dtype)
    assert scale.dtype == np.float32 and zero_point.dtype == np.int32
    assert scale.shape == (1,) and zero_point.shape == (1,)
    assert scale[0] == expected_scale and zero_point[0] == expected_zero
    if x.size:  # the chosen range represents 0 exactly and covers every value
        q = quantize_reference(x, scale[0], zero_point[0], dtype)
        assert np.all(
            np.abs(dequantize_reference(q, scale[0], zero_point[0]) - x) <= scale[0] / 2 * 1.0001
        )


def test_choose_qparams_rejects_non_finite_input(edgert: ModuleType) -> None:
    with pytest.raises(edgert.EdgertError, match="non-finite"):
        run_op(
            edgert,
            "edgert_quantized::choose_qparams",
            [np.array([1, np.inf], np.float32)],
            outputs=2,
        )


# ------------------------------------------------------------------- add, relu


@pytest.mark.parametrize("dtype", QUANTIZED_DTYPES)
def test_quantized_add(edgert: ModuleType, dtype: type) -> None:
    info = np.iinfo(dtype)
    random = np.random.RandomState(4)
    a = random.randint(info.min, info.max + 1, size=(4, 6)).astype(dtype)
    b = random.randint(info.min, info.max + 1, size=(4, 6)).astype(dtype)
    qparams = [(0.02, 3), (0.05, -4 if dtype == np.int8 else 120), (0.06, 1)]
    inputs = [
        a,
        scalar(qparams[0][0], np.float32),
        scalar(qparams[0][1], np.int32),
        b,
        scalar(qparams[1][0], np.float32),
        scalar(qparams[1][1], np.int32),
        scalar(qparams[2][0], np.float32),
        scalar(qparams[2][1], np.int32),
    ]
    (out,) = run_op(edgert, "edgert_quantized::add", inputs)
    total = dequantize_reference(
        a, np.float32(qparams[0][0]), qparams[0][1]
    ) + dequantize_reference(b, np.float32(qparams[1][0]), qparams[1][1])
    np.testing.assert_array_equal(
        out, quantize_reference(total, np.float32(qparams[2][0]), qparams[2][1], dtype)
    )


def test_quantized_add_rejects_mismatched_inputs(edgert: ModuleType) -> None:
    one, zero = scalar(1.0, np.float32), scalar(0, np.int32)
    with pytest.raises(edgert.EdgertError, match="same shape"):
        run_op(
            edgert,
            "edgert_quantized::add",
            [np.zeros(3, np.int8), one, zero, np.zeros(4, np.int8), one, zero, one, zero],
        )
    with pytest.raises(edgert.EdgertError, match="int8"):
        run_op(
            edgert,
            "edgert_quantized::add",
            [np.zeros(3, np.int8), one, zero, np.zeros(3, np.uint8), one, zero, one, zero],
        )


@pytest.mark.parametrize("dtype, zero_point", [(np.int8, -5), (np.uint8, 128), (np.int8, 300)])
def test_quantized_relu(edgert: ModuleType, dtype: type, zero_point: int) -> None:
    info = np.iinfo(dtype)
    q = np.arange(info.min, info.max + 1).astype(dtype)
    (out,) = run_op(edgert, "edgert_quantized::relu", [q, scalar(zero_point, np.int32)])
    np.testing.assert_array_equal(
        out, np.maximum(q, np.clip(zero_point, info.min, info.max)).astype(dtype)
    )


# ------------------------------------------------------------------- linear


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("shape", [(5, 16), (2, 3, 16), (0, 16), (16,)])
def test_quantized_linear(edgert: ModuleType, shape: tuple, with_bias: bool) -> None:
    random = np.random.RandomState(5)
    x = (random.standard_normal(shape) * 2).astype(np.float32)
    weight = random.randint(-127, 128, size=(6, 16)).astype(np.int8)
    scales = random.uniform(0.001, 0.02, 6).astype(np.float32)
    zero_points = np.array([0, 0, 3, -2, 0, 1], np.int32)
    bias = random.standard_normal(6).astype(np.float32) if with_bias else None
    (out,) = run_op(edgert, "edgert_quantized::linear", [x, weight, scales, zero_points, bias])
    np.testing.assert_array_equal(out, linear_reference(x, weight, scales, zero_points, bias))


def test_quantized_linear_rows_are_independent(edgert: ModuleType) -> None:
    """Each row is quantized with its own qparams: a batch gives each row's lone result."""
    random = np.random.RandomState(6)
    x = (random.standard_normal((4, 8)) * np.array([[0.1], [1], [10], [100]])).astype(np.float32)
    weight = random.randint(-127, 128, size=(3, 8)).astype(np.int8)
    scales, zero_points = np.full(3, 0.01, np.float32), np.zeros(3, np.int32)
    (batch,) = run_op(edgert, "edgert_quantized::linear", [x, weight, scales, zero_points])
    for r in range(4):
        (alone,) = run_op(
            edgert, "edgert_quantized::linear", [x[r : r + 1], weight, scales, zero_points]
        )
        assert batch[r].tobytes() == alone[0].tobytes()


def test_quantized_linear_rejects_bad_inputs(edgert: ModuleType) -> None:
    x = np.ones((2, 4), np.float32)
    scales, zeros = np.ones(3, np.float32), np.zeros(3, np.int32)
    with pytest.raises(edgert.EdgertError, match="weight must be int8"):
        run_op(edgert, "edgert_quantized::linear", [x, np.ones((3, 4), np.float32), scales, zeros])
    with pytest.raises(edgert.EdgertError, match="do not match"):
        run_op(edgert, "edgert_quantized::linear", [x, np.ones((3, 5), np.int8), scales, zeros])
    with pytest.raises(edgert.EdgertError, match="scales"):
        run_op(
            edgert,
            "edgert_quantized::linear",
            [x, np.ones((3, 4), np.int8), np.ones(2, np.float32), zeros],
        )
    with pytest.raises(edgert.EdgertError, match="bias"):
        run_op(
            edgert,
            "edgert_quantized::linear",
            [x, np.ones((3, 4), np.int8), scales, zeros, np.ones(2, np.float32)],
        )
    with pytest.raises(edgert.EdgertError, match="non-finite"):
        run_op(
            edgert,
            "edgert_quantized::linear",
            [np.array([[np.nan, 0, 0, 0]], np.float32), np.ones((3, 4), np.int8), scales, zeros],
        )


# ------------------------------------------------------------------- embedding_byte


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", QUANTIZED_DTYPES)
@pytest.mark.parametrize("with_zero_points", [True, False])
def test_embedding_byte(
    edgert: ModuleType, dtype: type, index_dtype: type, with_zero_points: bool
) -> None:
    info = np.iinfo(dtype)
    random = np.random.RandomState(7)
    weight = random.randint(info.min, info.max + 1, size=(10, 6)).astype(dtype)
    scales = random.uniform(0.01, 0.1, 10).astype(np.float32)
    zero_points = random.randint(-3, 4, 10).astype(np.int32) + (128 if dtype == np.uint8 else 0)
    indices = np.array([[0, 9, 3], [3, 3, 1]], index_dtype)
    (out,) = run_op(
        edgert,
        "edgert_quantized::embedding_byte",
        [weight, scales, zero_points if with_zero_points else None, indices],
    )
    used_zero_points = zero_points if with_zero_points else np.zeros(10, np.int32)
    expected = dequantize_reference(
        weight[indices], scales[indices][..., None], used_zero_points[indices][..., None]
    )
    np.testing.assert_array_equal(out, expected)
    assert out.shape == (2, 3, 6)


def test_embedding_byte_rejects_out_of_range_indices(edgert: ModuleType) -> None:
    weight, scales = np.zeros((4, 2), np.uint8), np.ones(4, np.float32)
    for index in (4, -1):
        with pytest.raises(edgert.EdgertError, match="out of range"):
            run_op(
                edgert,
                "edgert_quantized::embedding_byte",
                [weight, scales, None, np.array([index], np.int64)],
            )
    with pytest.raises(edgert.EdgertError, match="indices"):
        run_op(
            edgert,
            "edgert_quantized::embedding_byte",
            [weight, scales, None, np.array([1.0], np.float32)],
        )


# ------------------------------------------------------------------- export plugin + pass


def test_plugin_quantizes_weights_per_channel(edgert: ModuleType) -> None:
    from edgert.quantization import quantize_weights_per_channel

    weight = np.random.RandomState(8).standard_normal((5, 7)).astype(np.float32)
    weight[2] = 0.0
    quantized, scales, zero_points = quantize_weights_per_channel(weight)
    largest = np.abs(weight).max(axis=1).astype(np.float64)
    expected_scales = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
    np.testing.assert_array_equal(scales, expected_scales)
    np.testing.assert_array_equal(zero_points, np.zeros(5, np.int32))
    np.testing.assert_array_equal(
        quantized, quantize_reference(weight, expected_scales[:, None], 0, np.int8)
    )
    assert quantized.min() >= -127


def test_plugin_reference_linear_equals_the_runtime_kernel(edgert: ModuleType) -> None:
    from edgert.quantization import quantize_weights_per_channel, reference_linear

    random = np.random.RandomState(9)
    x = random.standard_normal((6, 12)).astype(np.float32)
    quantized, scales, zero_points = quantize_weights_per_channel(
        random.standard_normal((4, 12)).astype(np.float32)
    )
    bias = random.standard_normal(4).astype(np.float32)
    (runtime,) = run_op(
        edgert, "edgert_quantized::linear", [x, quantized, scales, zero_points, bias]
    )
    assert reference_linear(x, quantized, scales, zero_points, bias).tobytes() == runtime.tobytes()


def test_quantize_linear_layers_rewrites_every_float_linear(edgert: ModuleType) -> None:
    import edgert.models
    from edgert.export import read_program
    from edgert.quantization import quantize_linear_layers

    original = read_program(edgert.models.path("mlp").read_bytes())
    quantized = read_program(quantize_linear_layers(original))
    assert [node.op for node in original.nodes].count("edgert::linear") == 3
    assert [node.op for node in quantized.nodes] == [
        "edgert_quantized::linear" if node.op == "edgert::linear" else node.op
        for node in original.nodes
    ]
    weights = [
        quantized.values[node.inputs[1]]
        for node in quantized.nodes
        if node.op == "edgert_quantized::linear"
    ]
    assert all(weight.dtype == "int8" and weight.is_constant for weight in weights)
    float_matrices = [
        value
        for value in quantized.values
        if value.is_constant and value.dtype == "float32" and len(value.shape) == 2
    ]
    assert float_matrices == [], "replaced float weights must not stay in the program"


def test_quantized_model_is_within_one_quantization_step_of_the_float_model(
    edgert: ModuleType,
) -> None:
    import edgert.models

    x = np.random.RandomState(7).standard_normal((256, 16)).astype(np.float32)
    (reference,) = edgert.load(edgert.models.path("mlp")).run([x])
    (quantized,) = edgert.load(edgert.models.path("mlp_quantized")).run([x])
    # The step of the output: the scale an 8-bit quantization of the float output would use.
    step, _ = choose_qparams_reference(reference, np.uint8)
    worst = float(np.abs(quantized - reference).max())
    message = (
        f"quantized vs float MLP on 256 inputs: worst |difference| {worst:.6g}, "
        f"output step {step:.6g}"
    )
    print(message)
    assert worst <= step, message
    assert worst > 0, "the quantized model must really run quantized arithmetic"


def test_regenerating_the_models_gives_identical_bytes(
    native_install: NativeInstall, tmp_path: Path
) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "edgert.models.make_models", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=native_install.env(),
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for name in ("mlp.edgert", "mlp_quantized.edgert"):
        committed = ROOT / "native" / "python" / "edgert" / "models" / name
        assert (tmp_path / name).read_bytes() == committed.read_bytes(), (
            f"{name} differs from the committed file"
        )
        assert (native_install.package_dir / "models" / name).read_bytes() == committed.read_bytes()


def test_thread_count_does_not_change_quantized_results(edgert: ModuleType) -> None:
    random = np.random.RandomState(10)
    x = random.standard_normal((400, 96)).astype(np.float32)
    weight = random.randint(-127, 128, size=(80, 96)).astype(np.int8)
    scales, zero_points = np.full(80, 0.01, np.float32), np.zeros(80, np.int32)
    big = random.standard_normal((300, 300)).astype(np.float32)
    previous = edgert.threadpool_size()
    try:
        results = {}
        for threads in (1, 4):
            edgert.set_threadpool_size(threads)
            (linear,) = run_op(edgert, "edgert_quantized::linear", [x, weight, scales, zero_points])
            (quantized,) = run_op(
                edgert,
                "edgert_quantized::quantize_per_tensor",
                [big, scalar(0.01, np.float32), scalar(2, np.int32)],
            )
            results[threads] = (linear.tobytes(), quantized.tobytes())
    finally:
        edgert.set_threadpool_size(previous)
    assert results[1] == results[4]
