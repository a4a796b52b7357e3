"""edgert's elementwise and reduction kernels against numpy on 1M-element float32 arrays:
exp, log, tanh, sigmoid, sqrt, abs, maximum, where and sum, with one thread and with two;
prints the median time of each side and the ratio edgert/numpy (target: <= 1.5).

    python benchmarks/elementwise.py [--prefix build/linux-x86_64-cpu/install] [--size 1048576]

The method is benchmarks/kernels.py's: an edgert time is one node of a program, a chain of
LINKS + 1 nodes minus a single node, divided by LINKS, so the run's input and output copies
are excluded; numpy evaluates its expression LINKS times per timed sample. Each node of a
chain reads the previous node's output (the values drift from link to link: the kernels
have no data-dependent branches, so their time does not). sum's nodes all read the program's
input instead, each giving one output. numpy has no sigmoid: its side is 1 / (1 + exp(-x)).
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from the environment as kernels.py does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import (  # noqa: E402  (the sibling script's shared method)
    DEFAULT_PREFIX,
    LINKS,
    TARGET,
    median_seconds,
    rerun_without_openblas_overrides,
)


@dataclass(frozen=True)
class Case:
    """One operator: its inputs (the chained one at `chained`), the numpy expression it is
    compared with (`into`: the same, writing into a given array; None where numpy cannot),
    and whether its nodes chain (sum's do not: its output is a scalar)."""

    name: str
    op: str
    inputs: Callable[[int], list[np.ndarray]]
    reference: Callable[[list[np.ndarray]], object]
    into: Callable[[list[np.ndarray], np.ndarray], object] | None = None
    chained: int = 0
    chains: bool = True


def _sigmoid_into(x: np.ndarray, out: np.ndarray) -> None:
    np.negative(x, out=out)
    np.exp(out, out=out)
    np.add(out, np.float32(1), out=out)
    np.divide(np.float32(1), out, out=out)


def _random(size: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(size).astype(np.float32)


def _positive(size: int, seed: int) -> np.ndarray:
    return np.abs(_random(size, seed)) + np.float32(0.5)


CASES = [
    Case(
        "exp",
        "edgert::exp",
        lambda n: [_random(n, 1)],
        lambda a: np.exp(a[0]),
        lambda a, out: np.exp(a[0], out=out),
    ),
    Case(
        "log",
        "edgert::log",
        lambda n: [_positive(n, 2)],
        lambda a: np.log(a[0]),
        lambda a, out: np.log(a[0], out=out),
    ),
    Case(
        "tanh",
        "edgert::tanh",
        lambda n: [_random(n, 3)],
        lambda a: np.tanh(a[0]),
        lambda a, out: np.tanh(a[0], out=out),
    ),
    Case(
        "sigmoid",
        "edgert::sigmoid",
        lambda n: [_random(n, 4)],
        lambda a: np.float32(1) / (np.float32(1) + np.exp(-a[0])),
        lambda a, out: _sigmoid_into(a[0], out),
    ),
    Case(
        "sqrt",
        "edgert::sqrt",
        lambda n: [_positive(n, 5)],
        lambda a: np.sqrt(a[0]),
        lambda a, out: np.sqrt(a[0], out=out),
    ),
    Case(
        "abs",
        "edgert::abs",
        lambda n: [_random(n, 6)],
        lambda a: np.abs(a[0]),
        lambda a, out: np.abs(a[0], out=out),
    ),
    Case(
        "maximum",
        "edgert::maximum",
        lambda n: [_random(n, 7), _random(n, 8)],
        lambda a: np.maximum(a[0], a[1]),
        lambda a, out: np.maximum(a[0], a[1], out=out),
    ),
    Case(
        "where",
        "edgert::where",
        lambda n: [_random(n, 9) > 0, _random(n, 10), _random(n, 11)],
        lambda a: np.where(a[0], a[1], a[2]),
        chained=1,
    ),
    Case("sum", "edgert::sum", lambda n: [_random(n, 12)], lambda a: np.sum(a[0]), chains=False),
]


def chain_program(edgert: ModuleType, case: Case, arrays: list[np.ndarray], links: int) -> object:
    """``links`` nodes of ``case.op``: each reads the previous node's output in place of input
    ``case.chained`` (or, for a case that does not chain, the program's input, every node's
    output then being a program output). The chained array is the program's one input."""
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    first = builder.input(arrays[case.chained].dtype, arrays[case.chained].shape)
    wired = [first if i == case.chained else builder.constant(a) for i, a in enumerate(arrays)]
    value = first
    for _ in range(links):
        inputs = list(wired)
        inputs[case.chained] = value if case.chains else first
        produced = builder.op(case.op, inputs)
        assert isinstance(produced, int)
        if case.chains:
            value = produced
        else:
            builder.output(produced)
    if case.chains:
        builder.output(value)
    program = edgert.load(builder.to_bytes())
    program.set_backends([])  # the plain kernels
    return program


def edgert_seconds(
    edgert: ModuleType, case: Case, arrays: list[np.ndarray], repetitions: int
) -> float:
    """Median time of one node: (chain of LINKS + 1) - (one node), / LINKS."""
    single = chain_program(edgert, case, arrays, 1)
    chain = chain_program(edgert, case, arrays, LINKS + 1)
    x = arrays[case.chained]
    short = median_seconds(lambda: single.run([x]), repetitions)  # type: ignore[attr-defined]
    long = median_seconds(lambda: chain.run([x]), repetitions)  # type: ignore[attr-defined]
    return max(long - short, 0.0) / LINKS


def numpy_seconds(case: Case, arrays: list[np.ndarray], repetitions: int) -> float:
    """kernels.py's numpy time: LINKS evaluations per sample (each output freed before the
    next is made, so numpy writes into the same memory, warm in the cache, every time)."""

    def evaluate() -> None:
        for _ in range(LINKS):
            case.reference(arrays)

    return median_seconds(evaluate, repetitions) / LINKS


def numpy_outputs_seconds(case: Case, arrays: list[np.ndarray], repetitions: int) -> float | None:
    """numpy writing LINKS distinct outputs per sample, as edgert's chain does (a program
    keeps its node outputs until the next run): at 1M elements they outgrow the L3 cache."""
    if case.into is None:
        return None
    outputs = [np.empty_like(arrays[case.chained], dtype=np.float32) for _ in range(LINKS)]

    def evaluate() -> None:
        for out in outputs:
            case.into(arrays, out)  # type: ignore[misc]

    return median_seconds(evaluate, repetitions) / LINKS


Row = tuple[str, int, float, float, float | None]


def measure(edgert: ModuleType, size: int, repetitions: int, thread_counts: list[int]) -> list[Row]:
    """(case, threads, edgert seconds, numpy seconds, numpy seconds with LINKS outputs);
    numpy's ufuncs use one thread."""
    rows = []
    with np.errstate(all="ignore"):
        for threads in thread_counts:
            edgert.set_threadpool_size(threads)
            for case in CASES:
                arrays = case.inputs(size)
                rows.append(
                    (
                        case.name,
                        threads,
                        edgert_seconds(edgert, case, arrays, repetitions),
                        numpy_seconds(case, arrays, repetitions),
                        numpy_outputs_seconds(case, arrays, repetitions),
                    )
                )
    edgert.set_threadpool_size(0)
    return rows


def print_table(rows: list[Row]) -> bool:
    """The ratio (target <= TARGET) is against kernels.py's numpy time; the last two columns
    give numpy's time and the ratio when numpy too writes LINKS distinct outputs."""
    print(
        f"{'operator':<9} {'threads':>7} {'edgert ms':>10} {'numpy ms':>9} {'ratio':>6} "
        f"{f'numpy ms, {LINKS} outputs':>20} {'ratio':>6}"
    )
    met = True
    for name, threads, ours, theirs, outputs in rows:
        ratio = ours / theirs
        met = met and ratio <= TARGET
        flag = "" if ratio <= TARGET else " *"
        second = (
            f"{outputs * 1e3:>20.3f} {ours / outputs:>6.2f}" if outputs else f"{'-':>20} {'-':>6}"
        )
        times = f"{ours * 1e3:>10.3f} {theirs * 1e3:>9.3f} {ratio:>6.2f}"
        print(f"{name:<9} {threads:>7} {times} {second}{flag}")
    print(f"* over the target ({TARGET})")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--prefix",
        type=Path,
        default=DEFAULT_PREFIX,
        help="folder holding the edgert package to measure (an install tree)",
    )
    parser.add_argument("--size", type=int, default=1 << 20, help="elements of each operand")
    parser.add_argument("--repetitions", type=int, default=21, help="timed runs per measurement")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="pool sizes")
    arguments = parser.parse_args()
    rerun_without_openblas_overrides()
    if arguments.prefix.is_dir():
        sys.path.insert(0, str(arguments.prefix))
    import ctypes

    import edgert

    kernels = ctypes.CDLL(str(Path(edgert.lib_dir()) / "libedgert_kernels.so"))
    kernels.edgert_kernels_isa.restype = ctypes.c_char_p
    print(f"edgert {edgert.__file__}, kernels: {kernels.edgert_kernels_isa().decode()}")
    print(
        f"{arguments.size} float32 elements, median of {arguments.repetitions} runs, numpy "
        f"{np.__version__}; edgert: one node's time from a chain of {LINKS + 1} minus one node"
    )
    rows = measure(edgert, arguments.size, arguments.repetitions, arguments.threads)
    return 0 if print_table(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
