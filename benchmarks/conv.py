"""edgert's convolution and pooling kernels against torch and numpy in one process, with one
and two threads; prints the median time of each side and the ratio edgert/reference.

    python benchmarks/conv.py [--prefix build/linux-x86_64-cpu/install] [--repetitions 21]

Cases (float32): conv2d of 1x64x56x56 with 64 3x3 filters (padding 1) and a depthwise 3x3
on the same input, against torch.nn.functional.conv2d with the same thread count
(torch.set_num_threads; targets: conv2d <= 1.7x torch, depthwise <= 2x); max_pool2d and
avg_pool2d 2x2 on 1x64x112x112 against numpy's reshape-and-reduce (target <= 1.5x numpy).

The method is benchmarks/kernels.py's: an edgert time is one node of a program, the time of
LINKS + 1 nodes minus one node, divided by LINKS, so the run's input and output copies are
excluded. A convolution keeps its input's shape, so its nodes form a chain; a pooling node
does not, so its LINKS + 1 nodes all read the program's input. The reference is evaluated
LINKS times per timed sample; all edgert cases of a thread count are measured before their
references (with one thread the three timed functions of a case take turns sample by
sample instead). OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from the
environment (the script runs itself again without them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernels import (  # noqa: E402  (the sibling script's shared method)
    DEFAULT_PREFIX,
    LINKS,
    medians_in_turns,
    rerun_without_openblas_overrides,
)

THREADS = (1, 2)


@dataclass(frozen=True)
class Case:
    """One operator: its edgert node, the reference it is compared with and the target."""

    name: str
    op: str
    inputs: list[np.ndarray]  # the program's input first, then constants
    attributes: dict
    chained: bool  # the output has the input's shape: each node reads the previous one
    reference: Callable[[], object]
    reference_name: str
    target: float


def _random(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def cases() -> list[Case]:
    import torch

    x = _random((1, 64, 56, 56), 1)
    weight = _random((64, 64, 3, 3), 2, (64 * 9) ** -0.5)  # keeps a chain's values in range
    depthwise = _random((64, 1, 3, 3), 3, 9**-0.5)
    pooled = _random((1, 64, 112, 112), 4)
    tx, tw, td = torch.from_numpy(x), torch.from_numpy(weight), torch.from_numpy(depthwise)
    conv = torch.nn.functional.conv2d
    blocks = pooled.reshape(1, 64, 56, 2, 56, 2)
    return [
        Case(
            "conv2d 3x3",
            "edgert::conv2d",
            [x, weight],
            {"padding": [1, 1]},
            True,
            lambda: conv(tx, tw, padding=1),
            "torch",
            1.7,
        ),
        Case(
            "depthwise 3x3",
            "edgert::conv2d",
            [x, depthwise],
            {"padding": [1, 1], "groups": 64},
            True,
            lambda: conv(tx, td, padding=1, groups=64),
            "torch",
            2.0,
        ),
        Case(
            "max_pool2d 2x2",
            "edgert::max_pool2d",
            [pooled],
            {"kernel": [2, 2]},
            False,
            lambda: blocks.max(axis=(3, 5)),
            "numpy",
            1.5,
        ),
        Case(
            "avg_pool2d 2x2",
            "edgert::avg_pool2d",
            [pooled],
            {"kernel": [2, 2]},
            False,
            lambda: blocks.mean(axis=(3, 5)),
            "numpy",
            1.5,
        ),
    ]


def program_of(edgert: ModuleType, case: Case, nodes: int) -> object:
    """``nodes`` nodes of ``case.op``: a chain, or all reading the input; the last node's
    output is the program's one output."""
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    source = builder.input(case.inputs[0].dtype, case.inputs[0].shape)
    constants = [builder.constant(array) for array in case.inputs[1:]]
    value = source
    for _ in range(nodes):
        produced = builder.op(
            case.op, [value if case.chained else source, *constants], case.attributes
        )
        assert isinstance(produced, int)
        value = produced
    builder.output(value)
    program = edgert.load(builder.to_bytes())
    program.set_backends([])  # the plain kernels
    return program


def median_seconds(function: Callable[[], object], repetitions: int) -> float:
    function()  # warm-up: first-touch page faults, lazy pool start
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def edgert_seconds(edgert: ModuleType, case: Case, repetitions: int) -> float:
    single = program_of(edgert, case, 1)
    chain = program_of(edgert, case, LINKS + 1)
    x = case.inputs[0]
    short = median_seconds(lambda: single.run([x]), repetitions)  # type: ignore[attr-defined]
    long = median_seconds(lambda: chain.run([x]), repetitions)  # type: ignore[attr-defined]
    return max(long - short, 0.0) / LINKS


def evaluate_reference(case: Case) -> None:
    for _ in range(LINKS):
        case.reference()


def reference_seconds(case: Case, repetitions: int) -> float:
    return median_seconds(lambda: evaluate_reference(case), repetitions) / LINKS


def interleaved_seconds(edgert: ModuleType, case: Case, repetitions: int) -> tuple[float, float]:
    """(edgert, reference) seconds with the three timed functions taking turns sample by
    sample (one thread: no spinning worker threads on either side)."""
    single = program_of(edgert, case, 1)
    chain = program_of(edgert, case, LINKS + 1)
    x = case.inputs[0]
    short, long, reference = medians_in_turns(
        [lambda: single.run([x]), lambda: chain.run([x]), lambda: evaluate_reference(case)],  # type: ignore[attr-defined]
        repetitions,
    )
    return max(long - short, 0.0) / LINKS, reference / LINKS


def measure(
    edgert: ModuleType, repetitions: int, only: str
) -> list[tuple[Case, int, float, float]]:
    import threadpoolctl
    import torch

    rows = []
    selected = [case for case in cases() if only in case.name]
    for threads in THREADS:
        edgert.set_threadpool_size(threads)
        torch.set_num_threads(threads)
        with threadpoolctl.threadpool_limits(limits=threads):
            if threads == 1:
                timed = [interleaved_seconds(edgert, case, repetitions) for case in selected]
                ours, theirs = [t[0] for t in timed], [t[1] for t in timed]
            else:
                # Each side in its own phase: torch's OpenMP threads spin for a while after a
                # call, which would take the second core from edgert's pool.
                ours = [edgert_seconds(edgert, case, repetitions) for case in selected]
                theirs = [reference_seconds(case, repetitions) for case in selected]
        rows += [(case, threads, a, b) for case, a, b in zip(selected, ours, theirs, strict=True)]
    edgert.set_threadpool_size(0)
    return rows


def print_table(rows: list[tuple[Case, int, float, float]]) -> bool:
    print(
        f"{'case':<15} {'threads':>7} {'edgert ms':>10} {'reference':>10} {'ref ms':>8} "
        f"{'ratio':>6}"
    )
    met = True
    for case, threads, ours, theirs in rows:
        ratio = ours / theirs
        met = met and ratio <= case.target
        flag = "" if ratio <= case.target else f"  (target <= {case.target})"
        print(
            f"{case.name:<15} {threads:>7} {ours * 1e3:>10.3f} {case.reference_name:>10} "
            f"{theirs * 1e3:>8.3f} {ratio:>6.2f}{flag}"
        )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--prefix",
        type=Path,
        default=DEFAULT_PREFIX,
        help="folder holding the edgert package to measure (an install tree)",
    )
    parser.add_argument("--repetitions", type=int, default=21, help="timed runs per measurement")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this")
    arguments = parser.parse_args()
    rerun_without_openblas_overrides()
    if arguments.prefix.is_dir():
        sys.path.insert(0, str(arguments.prefix))
    import edgert
    import torch

    print(f"edgert {edgert.__file__}, torch {torch.__version__}, numpy {np.__version__}")
    print(
        f"median of {arguments.repetitions} runs; edgert: one node's time from "
        f"{LINKS + 1} nodes minus one node"
    )
    return 0 if print_table(measure(edgert, arguments.repetitions, arguments.only)) else 1


if __name__ == "__main__":
    sys.exit(main())
