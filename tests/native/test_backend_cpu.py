"""The "cpu" delegate (libedgert_backend_cpu): fused linear→relu chains.

The delegate must give the same bytes as the plain kernels (set_backends([])) and must claim
only chains whose intermediate values nothing else reads.
"""

from __future__ import annotations

import ctypes
import itertools
from types import ModuleType

import numpy as np
import pytest


def mlp(
    sizes: tuple[int, ...],
    *,
    bias: bool = True,
    last_relu: bool = True,
    seed: int = 0,
    extra_output: str | None = None,
) -> bytes:
    """linear→relu layers; extra_output exposes the first "linear" or "relu" output too."""
    from edgert.export import ProgramBuilder

    random = np.random.RandomState(seed)
    builder = ProgramBuilder()
    hidden = builder.input("float32", (-1, sizes[0]))
    for position, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        weight = builder.constant(
            (random.standard_normal((fan_out, fan_in)) / np.sqrt(fan_in)).astype(np.float32)
        )
        bias_value = (
            builder.constant(random.standard_normal(fan_out).astype(np.float32)) if bias else None
        )
        hidden = builder.op("edgert::linear", [hidden, weight, bias_value])
        if position == 0 and extra_output == "linear":
            builder.output(hidden)
        if last_relu or position < len(sizes) - 2:
            hidden = builder.op("edgert::relu", [hidden])
        if position == 0 and extra_output == "relu":
            builder.output(hidden)
    builder.output(hidden)
    return builder.to_bytes()


def run_both(edgert: ModuleType, program_bytes: bytes, x: np.ndarray) -> tuple[list, list, int]:
    """Outputs with the cpu delegate, outputs with plain kernels, and the delegated node count."""
    delegated = edgert.load(program_bytes)
    delegated.set_backends(["cpu"])
    with_cpu = delegated.run([x])
    plain = edgert.load(program_bytes)
    plain.set_backends([])
    without = plain.run([x])
    assert plain.delegated_nodes("cpu") == 0
    return with_cpu, without, delegated.delegated_nodes("cpu")


def assert_same_bytes(first: list, second: list) -> None:
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def inputs(rows: int, features: int, seed: int = 1) -> np.ndarray:
    return np.random.RandomState(seed).standard_normal((rows, features)).astype(np.float32)


def test_cpu_backend_is_registered(edgert: ModuleType) -> None:
    owners = {entry.name: entry.owner for entry in edgert.backends()}
    assert owners.get("cpu", "").endswith("libedgert_backend_cpu.so"), owners


@pytest.mark.parametrize("bias", [True, False])
def test_linear_relu_chain_is_delegated_and_bit_identical(edgert: ModuleType, bias: bool) -> None:
    with_cpu, without, delegated = run_both(edgert, mlp((16, 32, 32, 8), bias=bias), inputs(9, 16))
    assert delegated == 6
    assert_same_bytes(with_cpu, without)
    assert np.all(with_cpu[0] >= 0) and np.any(with_cpu[0] > 0)


def test_shipped_mlp_delegates_its_linear_relu_pairs(edgert: ModuleType) -> None:
    import edgert.models

    program = edgert.load(edgert.models.path("mlp"))  # default backends: every available one
    x = inputs(5, 16)
    with_default = program.run([x])
    assert (
        program.delegated_nodes("cpu") == 4
    )  # two linear→relu pairs; the last linear feeds softmax
    program.set_backends([])
    assert_same_bytes(with_default, program.run([x]))


def test_chain_ending_in_a_plain_linear_leaves_it_to_the_kernel(edgert: ModuleType) -> None:
    with_cpu, without, delegated = run_both(
        edgert, mlp((8, 8, 8, 4), last_relu=False), inputs(3, 8)
    )
    assert delegated == 4
    assert_same_bytes(with_cpu, without)


def test_intermediate_read_elsewhere_is_not_fused(edgert: ModuleType) -> None:
    with_cpu, without, delegated = run_both(
        edgert, mlp((8, 8, 4), extra_output="linear"), inputs(3, 8)
    )
    assert delegated == 2  # only the second pair; the first linear's output is a graph output
    assert_same_bytes(with_cpu, without)


def test_relu_output_read_elsewhere_ends_the_chain(edgert: ModuleType) -> None:
    with_cpu, without, delegated = run_both(
        edgert, mlp((8, 8, 4), extra_output="relu"), inputs(3, 8)
    )
    assert delegated == 4  # two separate chains: the first relu output must be materialized
    assert_same_bytes(with_cpu, without)
    assert len(with_cpu) == 2


def test_empty_batch_and_bad_shapes(edgert: ModuleType) -> None:
    with_cpu, without, delegated = run_both(edgert, mlp((8, 8, 4)), np.zeros((0, 8), np.float32))
    assert delegated == 4 and with_cpu[0].shape == (0, 4)
    assert_same_bytes(with_cpu, without)
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    x = builder.input("float32", (-1, 8))
    hidden = builder.op("edgert::linear", [x, builder.constant(np.ones((4, 6), np.float32))])
    builder.output(builder.op("edgert::relu", [hidden]))
    program = edgert.load(builder.to_bytes())
    program.set_backends(["cpu"])
    with pytest.raises(edgert.EdgertError, match="do not match"):
        program.run([np.ones((2, 8), np.float32)])


def test_thread_count_does_not_change_delegated_results(edgert: ModuleType) -> None:
    program_bytes = mlp((128, 256, 256, 64), seed=3)
    x = inputs(512, 128, seed=4)
    previous = edgert.threadpool_size()
    try:
        results = {}
        for threads in (1, 4):
            edgert.set_threadpool_size(threads)
            with_cpu, without, delegated = run_both(edgert, program_bytes, x)
            assert delegated == 6
            assert_same_bytes(with_cpu, without)
            results[threads] = with_cpu[0].tobytes()
    finally:
        edgert.set_threadpool_size(previous)
    assert results[1] == results[4]


def test_components_share_the_process_thread_pool(edgert: ModuleType) -> None:
    lib = edgert.lib_dir()
    expected = edgert.threadpool_instance()
    for library, marker in (
        ("libedgert_backend_cpu.so", "edgert_backend_cpu"),
        ("libedgert_kernels.so", "edgert_kernels"),
    ):
        loaded = ctypes.CDLL(str(lib / library))
        instance = getattr(loaded, f"{marker}_threadpool_instance")
        instance.restype = ctypes.c_void_p
        component = getattr(loaded, f"{marker}_component")
        component.restype = ctypes.c_char_p
        assert instance() == expected, library
        assert component().decode() == marker.removeprefix("edgert_")
