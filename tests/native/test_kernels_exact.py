"""The float32 kernels compute exactly the arithmetic docs/kernels.md documents, bit for bit:
linear and matmul add rounded products in increasing k from +0 (no FMA), softmax uses
edgert's own exp and sums in index order. numpy repeats that arithmetic step by step, and
every instruction set the kernels can choose (EDGERT_KERNELS_ISA) gives the same bytes.
Shapes cross the blocking's edges: partial micro-kernel tiles, several row and column tiles,
k longer than one packed slice (256), and single rows (read without packing)."""

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
def run(op, arrays, attributes=None):
    builder = ProgramBuilder()
    wired = [builder.input(a.dtype, a.shape) for a in arrays]
    builder.output(builder.op(op, wired, attributes))
    program = edgert.load(builder.to_bytes())
    program.set_backends([])
    return program.run(arrays)[0].tobytes()
cases = [
    run("edgert::linear", [values((101, 300), 1), values((45, 300), 2), values((45,), 3)]),
    run("edgert::linear", [values((1, 300), 1), values((45, 300), 2), values((45,), 3)]),
    run("edgert::matmul", [values((3, 50, 70), 4), values((70, 33), 5)]),
    run("edgert::softmax", [softmax_input()]),
    run("edgert::softmax", [softmax_input()], {"axis": 1}),
    run("edgert::add", [values((33, 77), 6), values((77,), 7)]),
    run("edgert::div", [values((33, 77), 8), values((33, 77), 9)]),
    run("edgert::relu", [softmax_input()]),
]
print(json.dumps({"isa": library.edgert_kernels_isa().decode(),
                  "hashes": [hashlib.sha256(c).hexdigest() for c in cases]}))
"""


def test_every_instruction_set_gives_the_same_bytes(native_install: NativeInstall) -> None:
    results = {}
    for isa in ("portable", "avx2", "avx512"):
        environment = {"EDGERT_KERNELS_ISA": isa, "PYTHONPATH": _python_path(native_install)}
        completed = native_install.python(_HASH_OUTPUTS, env=environment)
        assert completed.returncode == 0, completed.stderr
        results[isa] = json.loads(completed.stdout)
    assert results["portable"]["isa"] == "portable"
    assert {r["isa"] for r in results.values()} <= {"portable", "avx2", "avx512"}
    for isa, result in results.items():
        assert result["hashes"] == results["portable"]["hashes"], f"{isa} differs from portable"


def _python_path(install: NativeInstall) -> str:
    from tests.native.support import ROOT

    return f"{install.prefix}:{ROOT}"

