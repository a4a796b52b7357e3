"""The executor's memory plan: a computed value is released as soon as the last step that
reads it has run, measured by the program's own accounting (Program.memory_plan) and by the
resident memory of a process; and no value is released while a later node (or a delegated
step) still reads it."""

from __future__ import annotations

import json
import sys
from types import ModuleType

import numpy as np
import pytest

from tests.native.support import NATIVE, NativeInstall

sys.path.insert(0, str(NATIVE / "python"))
from edgert.export import ProgramBuilder  # noqa: E402

ELEMENTS = 4 << 20            # float32: 16 MiB per tensor
TENSOR_BYTES = ELEMENTS * 4
LINKS = 32


def relu_chain(links: int = LINKS) -> bytes:
    """x -> relu -> relu -> ... (links nodes) -> output; x of any length."""
    builder = ProgramBuilder()
    value = builder.input("float32", (-1,))
    for _ in range(links):
        value = builder.op("edgert::relu", [value])
    builder.output(value)
    return builder.to_bytes()


def test_a_chain_of_relus_holds_two_tensors_by_its_own_accounting(edgert: ModuleType) -> None:
    """Each relu's input is released once the relu has run: at most the value being read and
    the one being written are held (before the plan, all 32 were: 512 MiB)."""
    program = edgert.load(relu_chain())
    x = np.linspace(-1, 1, ELEMENTS, dtype=np.float32)
    (out,) = program.run([x])
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    plan = program.memory_plan
    assert plan.released_values == LINKS - 1
    assert plan.peak_bytes <= 3 * TENSOR_BYTES
    assert plan.peak_bytes == 2 * TENSOR_BYTES   # exactly: the input of a step and its output
    assert (plan.input_bytes, plan.output_bytes) == (TENSOR_BYTES, TENSOR_BYTES)


RESIDENT = """
import json, sys
import numpy as np, edgert

def kib(key):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key))

program = edgert.load(bytes.fromhex(sys.argv[1]))
x = np.full(int(sys.argv[2]), -0.5, np.float32)
x[::7] = 1.0
program.run([x[:1024].copy()])     # first run: code pages, small allocations
with open("/proc/self/clear_refs", "w") as reset:
    reset.write("5")               # the peak resident size (VmHWM) starts again from now
before = kib("VmRSS")
(out,) = program.run([x])
peak = kib("VmHWM")
assert np.array_equal(out, np.maximum(x, 0))
print(json.dumps({"growth": (peak - before) * 1024, "plan": program.memory_plan.peak_bytes}))
"""


def test_the_chain_grows_resident_memory_by_at_most_three_tensors(
        native_install: NativeInstall) -> None:
    """Measured from the process's own peak resident size (VmHWM, reset just before the run):
    its growth over the run includes the allocator's block cache (tensor.cpp keeps freed
    blocks of 64 KiB or more, up to 64 MiB, for the next allocation of the same size; here it
    holds at most one 16 MiB block between two steps), the output array (the output tensor's
    own memory, not a copy) and the interpreter's own noise. It stays within three tensors;
    before the plan it was 36 (32 values, the input's copy, the output's two copies)."""
    completed = native_install.python(RESIDENT, relu_chain().hex(), str(ELEMENTS))
    assert completed.returncode == 0, completed.stderr[-3000:]
    measured = json.loads(completed.stdout)
    assert measured["plan"] == 2 * TENSOR_BYTES
    assert measured["growth"] <= 3 * TENSOR_BYTES, measured


def branching_program() -> bytes:
    """a = relu(x) is a graph output and read by three later nodes; views (reshape, slice)
    of released values stay valid; e feeds a slice that is an output."""
    builder = ProgramBuilder()
    x = builder.input("float32", (4, 8))
    a = builder.op("edgert::relu", [x])
    b = builder.op("edgert::reshape", [a], {"shape": [8, 4]})     # a view of a
    c = builder.op("edgert::relu", [b])
    d = builder.op("edgert::reshape", [c], {"shape": [4, 8]})     # a view of c
    e = builder.op("edgert::add", [d, a])
    f = builder.op("edgert::mul", [e, a])
    g = builder.op("edgert::slice", [e], {"axis": 0, "start": 1, "end": 3})
    for value in (a, f, g):
        builder.output(value)
    return builder.to_bytes()


def test_values_read_by_later_nodes_are_kept_until_their_last_reader(
        edgert: ModuleType) -> None:
    program = edgert.load(branching_program())
    rng = np.random.default_rng(5)
    for _ in range(3):   # later runs reuse released blocks: results must not change
        x = rng.standard_normal((4, 8)).astype(np.float32)
        a, f, g = program.run([x])
        relu = np.maximum(x, 0)
        e = relu + relu
        np.testing.assert_array_equal(a, relu)
        np.testing.assert_array_equal(f, e * relu)
        np.testing.assert_array_equal(g, e[1:3])
    # b, c, d and e are released during the run; a, f and g are outputs
    assert program.memory_plan.released_values == 4


def delegated_program(square: int = 8) -> tuple[bytes, list[np.ndarray]]:
    """h = relu(x) feeds a linear -> relu -> linear -> relu chain the CPU delegate claims, and
    is read again after it (z = y + h); y is also a graph output. The second linear's weight
    is computed before the chain (relu of a constant), so only the delegated step's third
    node reads it."""
    rng = np.random.default_rng(2)
    weights = [rng.standard_normal(shape).astype(np.float32) / 3
               for shape in ((square, square), (square,), (square, square), (square,))]
    builder = ProgramBuilder()
    x = builder.input("float32", (-1, square))
    h = builder.op("edgert::relu", [x])
    computed_weight = builder.op("edgert::relu", [builder.constant(weights[2])])
    first_weight, first_bias = builder.constant(weights[0]), builder.constant(weights[1])
    y = builder.op("edgert::linear", [h, first_weight, first_bias])
    y = builder.op("edgert::relu", [y])
    y = builder.op("edgert::linear", [y, computed_weight, builder.constant(weights[3])])
    y = builder.op("edgert::relu", [y])
    z = builder.op("edgert::add", [y, h])
    builder.output(z)
    builder.output(y)
    return builder.to_bytes(), weights


def test_a_delegated_step_counts_as_reading_every_input_of_its_nodes(
        edgert: ModuleType) -> None:
    data, (w1, b1, w2, b2) = delegated_program()
    program = edgert.load(data)
    x = np.linspace(-2, 2, 3 * 8, dtype=np.float32).reshape(3, 8)
    h = np.maximum(x, 0)
    expected_y = np.maximum(np.maximum(h @ w1.T + b1, 0) @ np.maximum(w2, 0).T + b2, 0)
    results = {}
    for backends in (["cpu"], []):
        program.set_backends(backends)
        z, y = program.run([x])
        results[tuple(backends)] = (z, y)
        np.testing.assert_allclose(y, expected_y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(z, expected_y + h, rtol=1e-5, atol=1e-6)
    assert program.delegated_nodes("cpu") == 0
    program.set_backends(["cpu"])
    program.run([x])
    assert program.delegated_nodes("cpu") == 4
    # the delegate is bit-identical to the kernels (docs/operators.md)
    np.testing.assert_array_equal(results[("cpu",)][0], results[()][0])


@pytest.mark.parametrize("backends", [["cpu"], []])
def test_the_plan_reports_inputs_outputs_and_constants(edgert: ModuleType,
                                                       backends: list[str]) -> None:
    data, weights = delegated_program()
    program = edgert.load(data)
    program.set_backends(backends)
    assert program.memory_plan.peak_bytes == 0           # no run yet
    x = np.ones((5, 8), np.float32)
    program.run([x])
    plan = program.memory_plan
    assert plan.constant_bytes == sum(weight.nbytes for weight in weights)
    assert plan.input_bytes == x.nbytes
    assert plan.output_bytes == 2 * x.nbytes
    # h, the computed weight (8 x 8 floats) and the two outputs at most
    assert 2 * x.nbytes <= plan.peak_bytes <= 3 * x.nbytes + weights[2].nbytes
    assert plan.constants == "borrowed"
