"""edgert's int8 kernels against its float32 kernels in one process, with one and two threads:
the quantized linear and conv2d (edgert_quantized::) against edgert::linear and
edgert::conv2d on the same shapes, and a 512-wide quantized MLP against the float MLP and
numpy. Prints the median time of each side and the ratio int8 / float.

    python benchmarks/quantized.py [--prefix build/linux-x86_64-cpu/install] [--repetitions 15]
                                   [--only linear]

Targets: int8 linear at batch 64 at least 1.5x faster than float (ratio <= 0.667) on
512x512 and 1024x1024 weights, faster than float (ratio < 1) from batch 8; the quantized MLP
at batch 1024 at most 1.5x the float MLP; the quantized conv2d of 1x64x56x56 with 64 3x3
filters faster than the float one. Batch 1 is shown without a target.

A kernel's time is benchmarks/kernels.py's: one node's time, from a chain of LINKS + 1 nodes
minus one node, divided by LINKS, so the run's input and output copies are excluded (the
shapes are square, so each node reads the previous one's output). The MLPs are whole
programs (linear, relu, linear, relu, linear, softmax) run with their default backends,
copies included, as a user runs them; numpy evaluates the float MLP in float32. The
quantized nodes use dynamic activation qparams (per row, or per image for conv2d) and
symmetric per-channel int8 weights, as edgert.quantization makes them.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import DEFAULT_PREFIX, LINKS, rerun_without_openblas_overrides  # noqa: E402

THREADS = (1, 2)
F32 = np.float32


@dataclass(frozen=True)
class Pair:
    """One shape measured twice: the float operator and its quantized form."""

    name: str
    float_op: str
    float_inputs: list[np.ndarray]  # the chained input first, then constants
    quantized_op: str
    quantized_inputs: list[np.ndarray]
    attributes: dict
    target: float | None  # the largest ratio int8 / float that meets the target


def _random(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(F32)


def quantize_weight(weight: np.ndarray) -> list[np.ndarray]:
    """Symmetric per-output-channel int8 (edgert.quantization's scheme, computed in numpy):
    the int8 weight, its scales and zero points."""
    flat = weight.reshape(weight.shape[0], -1).astype(np.float64)
    largest = np.abs(flat).max(axis=1)
    scales = np.where(largest > 0, largest / 127.0, 1.0).astype(F32)
    shape = (-1,) + (1,) * (weight.ndim - 1)
    quantized = np.clip(np.rint(weight / scales.reshape(shape)), -127, 127).astype(np.int8)
    return [quantized, scales, np.zeros(weight.shape[0], np.int32)]


def linear_pair(size: int, batch: int) -> Pair:
    x = _random((batch, size), 1)
    weight = _random((size, size), 2, size**-0.5)  # keeps a chain's values in range
    bias = _random((size,), 3, 0.1)
    target = 1 / 1.5 if batch == 64 else (1.0 if batch >= 8 else None)
    return Pair(
        f"linear {size}x{size} batch {batch}",
        "edgert::linear",
        [x, weight, bias],
        "edgert_quantized::linear",
        [x, *quantize_weight(weight), bias],
        {},
        target,
    )


def conv_pair() -> Pair:
    x = _random((1, 64, 56, 56), 4)
    weight = _random((64, 64, 3, 3), 5, (64 * 9) ** -0.5)
    bias = _random((64,), 6, 0.1)
    return Pair(
        "conv2d 1x64x56x56 3x3",
        "edgert::conv2d",
        [x, weight, bias],
        "edgert_quantized::conv2d",
        [x, *quantize_weight(weight), bias],
        {"padding": [1, 1]},
        1.0,
    )


def pairs() -> list[Pair]:
    made = [linear_pair(size, batch) for size in (512, 1024) for batch in (1, 8, 64)]
    return [*made, conv_pair()]


def chain_program(
    edgert: ModuleType, op: str, arrays: list[np.ndarray], attributes: dict, links: int
) -> object:
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    value = builder.input(arrays[0].dtype, arrays[0].shape)
    constants = [builder.constant(array) for array in arrays[1:]]
    for _ in range(links):
        produced = builder.op(op, [value, *constants], attributes)
        assert isinstance(produced, int)
        value = produced
    builder.output(value)
    program = edgert.load(builder.to_bytes())
    program.set_backends([])  # the plain kernels
    return program


def median_seconds(function: Callable[[], object], repetitions: int) -> float:
    function()  # warm-up: first-touch page faults, lazy pool start, the prepare step
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def node_seconds(
    edgert: ModuleType, op: str, arrays: list[np.ndarray], attributes: dict, repetitions: int
) -> float:
    single = chain_program(edgert, op, arrays, attributes, 1)
    chain = chain_program(edgert, op, arrays, attributes, LINKS + 1)
    x = arrays[0]
    short = median_seconds(lambda: single.run([x]), repetitions)  # type: ignore[attr-defined]
    long = median_seconds(lambda: chain.run([x]), repetitions)  # type: ignore[attr-defined]
    return max(long - short, 0.0) / LINKS


# ------------------------------------------------------------------- the MLP

MLP_WIDTH = 512
MLP_BATCH = 1024


def mlp_layers() -> list[tuple[np.ndarray, np.ndarray]]:
    random = np.random.RandomState(20240611)
    bound = 1.0 / np.sqrt(MLP_WIDTH)  # torch.nn.Linear's initialization, as make_models
    return [
        (
            random.uniform(-bound, bound, (MLP_WIDTH, MLP_WIDTH)).astype(F32),
            random.uniform(-bound, bound, MLP_WIDTH).astype(F32),
        )
        for _ in range(3)
    ]


def mlp_program(layers: list[tuple[np.ndarray, np.ndarray]]) -> bytes:
    """edgert/models/mlp.edgert's structure with 512-wide layers."""
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    hidden = builder.input("float32", (-1, MLP_WIDTH))
    for position, (weight, bias) in enumerate(layers):
        hidden = builder.op(
            "edgert::linear", [hidden, builder.constant(weight), builder.constant(bias)]
        )
        last = position == len(layers) - 1
        hidden = (
            builder.op("edgert::softmax", [hidden], {"axis": -1})
            if last
            else builder.op("edgert::relu", [hidden])
        )
    builder.output(hidden)
    return builder.to_bytes()


def numpy_mlp(x: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    hidden = x
    for position, (weight, bias) in enumerate(layers):
        hidden = hidden @ weight.T + bias
        if position < len(layers) - 1:
            hidden = np.maximum(hidden, F32(0))
    shifted = np.exp(hidden - hidden.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def mlp_seconds(edgert: ModuleType, repetitions: int) -> dict[str, float]:
    from edgert.quantization import quantize_linear_layers

    layers = mlp_layers()
    float_data = mlp_program(layers)
    programs = {
        "float": edgert.load(float_data),
        "int8": edgert.load(quantize_linear_layers(float_data)),
    }
    x = _random((MLP_BATCH, MLP_WIDTH), 7)
    times = {
        name: median_seconds(lambda p=program: p.run([x]), repetitions)  # type: ignore[attr-defined]
        for name, program in programs.items()
    }
    times["numpy"] = median_seconds(lambda: numpy_mlp(x, layers), repetitions)
    return times


# ------------------------------------------------------------------- measuring, printing


def instruction_sets(edgert: ModuleType) -> str:
    """The code paths in force: the float kernels' and the quantized kernels'."""
    found = []
    for library, function in (
        ("libedgert_kernels.so", "edgert_kernels_isa"),
        ("libedgert_kernels_quantized.so", "edgert_kernels_quantized_isa"),
    ):
        try:
            loaded = ctypes.CDLL(str(edgert.lib_dir() / library))
            query = getattr(loaded, function)
        except (OSError, AttributeError):
            found.append(f"{function}: not available")
            continue
        query.restype = ctypes.c_char_p
        found.append(f"{function}() = {query().decode()}")
    return ", ".join(found)


def measure(edgert: ModuleType, repetitions: int, only: str) -> bool:
    import threadpoolctl

    met = True
    print(f"{'case':<28} {'threads':>7} {'float ms':>9} {'int8 ms':>9} {'int8/float':>10}")
    selected = [pair for pair in pairs() if only in pair.name]
    for threads in THREADS:
        edgert.set_threadpool_size(threads)
        with threadpoolctl.threadpool_limits(limits=threads):
            for pair in selected:
                ours = node_seconds(
                    edgert, pair.quantized_op, pair.quantized_inputs, pair.attributes, repetitions
                )
                theirs = node_seconds(
                    edgert, pair.float_op, pair.float_inputs, pair.attributes, repetitions
                )
                ratio = ours / theirs
                passed = pair.target is None or ratio <= pair.target
                met = met and passed
                flag = "" if passed else f"  (target <= {pair.target:.3f})"
                print(
                    f"{pair.name:<28} {threads:>7} {theirs * 1e3:>9.3f} {ours * 1e3:>9.3f} "
                    f"{ratio:>10.2f}{flag}"
                )
            if only in "mlp":
                times = mlp_seconds(edgert, repetitions)
                ratio = times["int8"] / times["float"]
                met = met and ratio <= 1.5
                flag = "" if ratio <= 1.5 else "  (target <= 1.5)"
                print(
                    f"{'mlp 512 wide, batch 1024':<28} {threads:>7} {times['float'] * 1e3:>9.3f} "
                    f"{times['int8'] * 1e3:>9.3f} {ratio:>10.2f}{flag}   numpy "
                    f"{times['numpy'] * 1e3:.3f} ms (int8/numpy "
                    f"{times['int8'] / times['numpy']:.2f})"
                )
    edgert.set_threadpool_size(0)
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--prefix",
        type=Path,
        default=DEFAULT_PREFIX,
        help="folder holding the edgert package to measure (an install tree)",
    )
    parser.add_argument("--repetitions", type=int, default=15, help="timed runs per measurement")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this")
    arguments = parser.parse_args()
    rerun_without_openblas_overrides()
    if arguments.prefix.is_dir():
        sys.path.insert(0, str(arguments.prefix))
    import edgert

    print(f"edgert {edgert.__file__}, numpy {np.__version__}")
    print(instruction_sets(edgert))
    print(
        f"median of {arguments.repetitions} runs; a kernel: one node's time from "
        f"{LINKS + 1} nodes minus one node; an MLP: one whole run"
    )
    return 0 if measure(edgert, arguments.repetitions, arguments.only) else 1


if __name__ == "__main__":
    sys.exit(main())
