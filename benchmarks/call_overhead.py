"""The per-call floor: what one ``Program.run`` costs from Python when the work is nothing,
against numpy's equivalent op, in one process. The program is one ``edgert::relu`` on a
[1, 16] float32 tensor; numpy's side is ``np.maximum(x, 0)``. Prints the median of several
samples of each (µs per call), the ratio edgert/numpy and whether edgert met its target:
3 µs per call where numpy's op takes 1 µs, judged as the ratio (at most 3), since both
times move together with the machine's load.

    python benchmarks/call_overhead.py [--prefix build/linux-x86_64-cpu/install] [--calls 20000]

Also times ``edgert._C.run`` directly (the extension without the Python method around it),
so a regression can be placed on one side of that line.

Then the per-node floor: a program of 1,000 tiny nodes in a chain (``edgert::relu``, then
``edgert::add`` of a value with itself, on [1, 16]: what an unrolled recurrent step looks
like to the interpreter), its run time divided by 1,000, against the same numpy op called
once (a single ufunc call on a tiny array: about what "a function call" costs from Python).
Target: under 1 µs per node, judged as at most 1x numpy's one call.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PREFIX = ROOT / "build" / "linux-x86_64-cpu" / "install"
TARGET_RATIO = 3.0   # 3 µs where numpy's equivalent op takes 1 µs
CHAIN = 1000         # nodes in the per-node floor's program
NODE_TARGET_RATIO = 1.0  # a node at most one numpy call (under 1 µs)
SAMPLES = 7


def per_call_microseconds(function: Callable[[], object], calls: int) -> float:
    """Median over SAMPLES of the mean time of ``calls`` calls, in µs."""
    function()
    times = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX,
                        help="an installed tree holding the edgert package")
    parser.add_argument("--calls", type=int, default=20000, help="calls per sample")
    arguments = parser.parse_args()
    sys.path.insert(0, str(arguments.prefix))
    import edgert
    from edgert.export import ProgramBuilder

    builder = ProgramBuilder()
    builder.output(builder.op("edgert::relu", [builder.input("float32", (1, 16))]))
    program = edgert.load(builder.to_bytes())
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
    inputs = [x]
    np.testing.assert_array_equal(program.run(inputs)[0], np.maximum(x, 0))

    run = program.run
    numpy_time = per_call_microseconds(lambda: np.maximum(x, 0), arguments.calls)
    edgert_time = per_call_microseconds(lambda: run(inputs), arguments.calls)
    direct = getattr(program, "_handle", None)
    extension = edgert._native.extension()
    print(f"numpy  np.maximum(x, 0)     {numpy_time:6.2f} µs")
    print(f"edgert Program.run([x])     {edgert_time:6.2f} µs   "
          f"ratio {edgert_time / numpy_time:.1f}x")
    if direct is not None and hasattr(extension, "run"):
        try:
            extension.run(direct, inputs)
        except Exception:   # an older extension takes another input form: skip that line
            pass
        else:
            direct_time = per_call_microseconds(lambda: extension.run(direct, inputs),
                                                arguments.calls)
            print(f"edgert _C.run(handle, [x])  {direct_time:6.2f} µs")
    met = edgert_time <= TARGET_RATIO * numpy_time
    print(f"target <= {TARGET_RATIO:.0f} x numpy's time (3 µs at numpy's 1 µs): "
          f"{'met' if met else 'NOT met'}")
    return 0 if met and per_node_floor(edgert, ProgramBuilder, x, arguments.calls) else 1


def per_node_floor(edgert: object, builder_type: type, x: np.ndarray, calls: int) -> bool:
    """Times chains of CHAIN tiny nodes against one numpy call of the same op, interleaved
    sample by sample; prints µs per node and the ratio; returns whether both met the
    target."""
    runs = max(1, calls // CHAIN)
    sides = {
        "relu": (lambda builder, value: builder.op("edgert::relu", [value]),
                 lambda: np.maximum(x, 0)),
        "add": (lambda builder, value: builder.op("edgert::add", [value, value]),
                lambda: np.add(x, x)),
    }
    print(f"\nper-node floor: a chain of {CHAIN} nodes on [1, 16], {runs} runs per sample")
    met = True
    for name, (node, numpy_op) in sides.items():
        builder = builder_type()
        value = builder.input("float32", (1, 16))
        for _ in range(CHAIN):
            value = node(builder, value)
        builder.output(value)
        program = edgert.load(builder.to_bytes())  # type: ignore[attr-defined]
        run = functools.partial(program.run, [x])
        run()
        chain_times, numpy_times = [], []
        for _ in range(SAMPLES):  # interleaved: both sides see the same load
            chain_times.append(per_call_microseconds(run, runs)
                               / CHAIN)
            numpy_times.append(per_call_microseconds(numpy_op, runs * 10))
        per_node, numpy_call = statistics.median(chain_times), statistics.median(numpy_times)
        ratio = per_node / numpy_call
        ok = ratio <= NODE_TARGET_RATIO
        met = met and ok
        print(f"  {name:5} {per_node:6.3f} µs per node   numpy one call {numpy_call:6.3f} µs"
              f"   ratio {ratio:.2f}x   target <= {NODE_TARGET_RATIO:.0f}x: "
              f"{'met' if ok else 'NOT met'}")
    return met


if __name__ == "__main__":
    raise SystemExit(main())
