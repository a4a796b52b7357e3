"""edgert's CPU kernels against numpy (OpenBLAS) in one process, with one thread and with every
thread; prints the median time of each side and the ratio edgert/numpy against each case's
target: 512×512 float32 linear and matmul (target <= 1.2), softmax, add and relu (<= 1.5),
and batch-1 linear (one row x [1, K] times a weight [N, K], K = N = 512, 1024, 2048; target
<= 1.5).

    python benchmarks/kernels.py [--prefix build/linux-x86_64-cpu/install] [--size 512]

edgert runs each operator inside a program, and a run copies its inputs in and its outputs
out. To time the kernel alone, each operator is timed as a chain of LINKS + 1 nodes and as a
single node, and the difference is divided by LINKS: the cost of one more node, copies
excluded. numpy's side is the plain expression, evaluated LINKS times per timed sample.
With one thread the three take turns sample by sample (other work on the machine falls on
both sides alike); with more, each is timed in its own phase (OpenBLAS's threads spin after
a call and would take a core from edgert's pool).
The batch-1 cases are memory-bound: each link of their chain has its own weight on both
sides ("8 weights": numpy cycles through LINKS weights, as edgert's chain does through its
nodes' packed weights), since a weight repeated in every link would stay in cache on numpy's
side only (each edgert node packs its own copy at prepare). The batch-1 cases with one weight
repeat the same array in every link on both sides, for comparison.
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from the environment (the script runs
itself again without them) so OpenBLAS picks the kernel it would pick for this processor;
threadpoolctl reports which one it runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import threadpoolctl

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PREFIX = ROOT / "build" / "linux-x86_64-cpu" / "install"
OPENBLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
LINKS = 8
TARGET = 1.5  # elementwise and softmax
PRODUCT_TARGET = 1.2  # 512×512 linear and matmul
BATCH_ONE_TARGET = 1.5


@dataclass(frozen=True)
class Case:
    """One operator: how edgert chains it and the numpy expression it is compared with."""

    name: str
    op: str
    # The arrays of one link (chained input first, then constants) for a size and a link
    # number; the link number only matters when every link has its own constants.
    inputs: Callable[[int, int], list[np.ndarray]]
    reference: Callable[[list[np.ndarray]], np.ndarray]
    target: float = TARGET
    size: int | None = None  # None: the --size argument
    distinct: bool = False  # each link has its own constants


def _random(size: int, seed: int, scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((size, size)) * scale).astype(np.float32)


def _softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def _linear_inputs(rows: int, n: int, link: int) -> list[np.ndarray]:
    """x [rows, n], a weight [n, n] scaled by 1/sqrt(n) (keeps a chain's values of the same
    size from link to link) and a bias [n]; the constants' seeds follow the link."""
    return [_random(n, 1)[:rows], _random(n, 2 + 2 * link, n ** -0.5), _random(n, 3 + 2 * link)[0]]


def _batch_one(features: int, distinct: bool) -> Case:
    label = "8 weights" if distinct else "1 weight"
    return Case(f"linear 1x{features}, {label}", "edgert::linear",
                lambda n, link: _linear_inputs(1, n, link), lambda a: a[0] @ a[1].T + a[2],
                target=BATCH_ONE_TARGET, size=features, distinct=distinct)


CASES = [
    Case("linear", "edgert::linear", lambda n, link: _linear_inputs(n, n, 0),
         lambda a: a[0] @ a[1].T + a[2], target=PRODUCT_TARGET),
    Case("matmul", "edgert::matmul",
         lambda n, link: [_random(n, 4), _random(n, 5, n ** -0.5)],
         lambda a: a[0] @ a[1], target=PRODUCT_TARGET),
    Case("softmax", "edgert::softmax", lambda n, link: [_random(n, 6)], lambda a: _softmax(a[0])),
    Case("add", "edgert::add", lambda n, link: [_random(n, 7), _random(n, 8)],
         lambda a: a[0] + a[1]),
    Case("relu", "edgert::relu", lambda n, link: [_random(n, 9)], lambda a: np.maximum(a[0], 0)),
    *[_batch_one(features, True) for features in (512, 1024, 2048)],
    *[_batch_one(features, False) for features in (1024,)],
]


def chain_program(edgert: ModuleType, case: Case, size: int, links: int) -> object:
    """A program applying ``case.op`` ``links`` times, each node reading the previous one's
    output and its constant operands (the same ones for every node, or each node its own);
    the first input is the program's one input."""
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    first = case.inputs(size, 0)
    value = builder.input(first[0].dtype, first[0].shape)
    shared = [builder.constant(array) for array in first[1:]]
    for link in range(links):
        arrays = case.inputs(size, link)[1:] if case.distinct else None
        constants = [builder.constant(a) for a in arrays] if arrays is not None else shared
        produced = builder.op(case.op, [value, *constants])
        assert isinstance(produced, int)
        value = produced
    builder.output(value)
    program = edgert.load(builder.to_bytes())
    program.set_backends([])  # the plain kernels
    return program


def median_seconds(function: Callable[[], object], repetitions: int) -> float:
    return medians_in_turns([function], repetitions)[0]


def medians_in_turns(functions: list[Callable[[], object]], repetitions: int) -> list[float]:
    """The median time of each function; the functions take turns, sample by sample, so that
    other work on the machine falls on all of them alike."""
    for function in functions:
        function()  # warm-up: first-touch page faults, lazy pool start, prepare
    samples: list[list[float]] = [[] for _ in functions]
    for _ in range(repetitions):
        for function, taken in zip(functions, samples, strict=True):
            start = time.perf_counter()
            function()
            taken.append(time.perf_counter() - start)
    return [statistics.median(taken) for taken in samples]


def case_seconds(edgert: ModuleType, case: Case, size: int, repetitions: int,
                 interleaved: bool) -> tuple[float, float]:
    """(edgert, numpy) seconds of one ``case`` operation. edgert: the median time of one node,
    (chain of LINKS + 1) - (one node), / LINKS. numpy: the median time of ``case.reference``
    over samples LINKS evaluations long like edgert's chain (so both sides' samples are
    equally exposed to other work on the machine), each with its link's constants when the
    links have their own, / LINKS. ``interleaved``: the three take turns sample by sample;
    otherwise each is timed in its own phase (OpenBLAS's threads spin for a while after a
    call, which would take a core from edgert's pool)."""
    single = chain_program(edgert, case, size, 1)
    chain = chain_program(edgert, case, size, LINKS + 1)
    x = case.inputs(size, 0)[0]
    links = [case.inputs(size, link if case.distinct else 0) for link in range(LINKS)]

    def evaluate() -> None:
        for arrays in links:
            case.reference(arrays)

    functions = [lambda: single.run([x]), lambda: chain.run([x]), evaluate]  # type: ignore[attr-defined]
    if interleaved:
        short, long, reference = medians_in_turns(functions, repetitions)
    else:
        short, long, reference = (median_seconds(f, repetitions) for f in functions)
    return max(long - short, 0.0) / LINKS, reference / LINKS


def blas_description() -> str:
    found = [info for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
    if not found:
        return "numpy BLAS: not reported by threadpoolctl"
    return "; ".join(
        f"numpy BLAS: {info['internal_api']} {info.get('version')}, kernel "
        f"{info.get('architecture')}, {info['num_threads']} threads" for info in found)


Row = tuple[Case, int, float, float]  # case, threads, edgert seconds, numpy seconds


def measure(edgert: ModuleType, size: int, repetitions: int) -> list[Row]:
    """(case, threads, edgert seconds, numpy seconds) for one thread and every thread."""
    rows = []
    all_threads = os.cpu_count() or 1
    for threads in (1, all_threads):
        edgert.set_threadpool_size(threads)
        with threadpoolctl.threadpool_limits(limits=threads):
            for case in CASES:
                ours, theirs = case_seconds(edgert, case, case.size or size, repetitions,
                                            interleaved=threads == 1)
                rows.append((case, threads, ours, theirs))
    edgert.set_threadpool_size(0)
    return rows


def print_table(rows: list[Row]) -> bool:
    print(f"{'operator':<24} {'threads':>7} {'edgert ms':>10} {'numpy ms':>9} {'ratio':>6}")
    met = True
    for case, threads, ours, theirs in rows:
        ratio = ours / theirs
        met = met and ratio <= case.target
        flag = "" if ratio <= case.target else f"  (target <= {case.target})"
        print(f"{case.name:<24} {threads:>7} {ours * 1e3:>10.3f} {theirs * 1e3:>9.3f} "
              f"{ratio:>6.2f}{flag}")
    return met


def require_peers() -> None:
    """Exits with one line naming the install command when a peer runtime is missing."""
    import importlib.util
    missing = [name for name in ("onnxruntime", "onnx", "onnxscript")
               if importlib.util.find_spec(name) is None]
    if missing:
        raise SystemExit(f"error: {', '.join(missing)} not installed: the comparison needs "
                         "them (fix: pip install -r benchmarks/requirements.txt)")


def rerun_without_openblas_overrides() -> None:
    """OpenBLAS reads its overrides when numpy loads it: run this script again without them."""
    if any(name in os.environ for name in OPENBLAS_OVERRIDES):
        environment = {k: v for k, v in os.environ.items() if k not in OPENBLAS_OVERRIDES}
        os.execve(sys.executable, [sys.executable, *sys.argv], environment)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX,
                        help="folder holding the edgert package to measure (an install tree)")
    parser.add_argument("--size", type=int, default=512, help="rows and columns of each operand")
    parser.add_argument("--repetitions", type=int, default=21, help="timed runs per measurement")
    arguments = parser.parse_args()
    rerun_without_openblas_overrides()
    if arguments.prefix.is_dir():
        sys.path.insert(0, str(arguments.prefix))
    import edgert

    print(f"edgert {edgert.__file__}")
    print(f"{arguments.size}x{arguments.size} float32 (batch-1 linear: its own sizes), median of "
          f"{arguments.repetitions} runs; edgert: one node's time from a chain of {LINKS + 1} "
          f"minus one node")
    rows = measure(edgert, arguments.size, arguments.repetitions)
    print(blas_description())
    return 0 if print_table(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
