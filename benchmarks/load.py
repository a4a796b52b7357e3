"""Loading a program with one 256 MiB constant against numpy loading the same bytes, in one
process: ``edgert.load(path)`` (the file is mapped, the constant read in place),
``edgert.load(bytes)`` (the bytes object aliased), ``numpy.load`` of an .npy file,
``numpy.fromfile`` of the raw bytes, and ``numpy.load(mmap_mode="r")`` (numpy's own mapping).
The files are written first, so every reader finds them in the page cache; each is timed as
the median of SAMPLES loads. Prints the times in ms and whether edgert met its target.

    python benchmarks/load.py [--prefix build/linux-x86_64-cpu/install] [--mib 256]

After the timing, the loaded program is run once and its output compared with the constant:
the mapped bytes are what numpy read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PREFIX = ROOT / "build" / "linux-x86_64-cpu" / "install"
TARGET_MS = 50.0
SAMPLES = 5


def median_ms(load: Callable[[], object]) -> float:
    """Median wall time of SAMPLES calls of ``load``, in ms (each result dropped before the
    next call, so none of them finds the previous one's memory)."""
    times = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        result = load()
        times.append((time.perf_counter() - start) * 1e3)
        del result
    return statistics.median(times)


def constant_program(constant: np.ndarray, version: int) -> bytes:
    """out = relu(x) and the constant itself as a second output (x: 16 floats)."""
    from edgert.export import ProgramBuilder, write_program

    builder = ProgramBuilder()
    builder.output(builder.op("edgert::relu", [builder.input("float32", (16,))]))
    builder.output(builder.constant(constant))
    return write_program(builder.program, version=version)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX,
                        help="an installed tree holding the edgert package")
    parser.add_argument("--mib", type=int, default=256, help="size of the constant in MiB")
    parser.add_argument("--format-version", type=int, choices=(1, 2), default=2,
                        help="program format version to write (1: no checksum to check at load)")
    arguments = parser.parse_args()
    sys.path.insert(0, str(arguments.prefix))
    import edgert
    from edgert.export import save_program

    constant = np.arange(arguments.mib << 18, dtype=np.float32)   # 4 bytes per element
    with tempfile.TemporaryDirectory(prefix="edgert-load-") as folder:
        program_file, npy_file, raw_file = (Path(folder) / name for name in
                                            ("constant.edgert", "constant.npy", "constant.raw"))
        data = constant_program(constant, arguments.format_version)
        save_program(data, program_file)
        np.save(npy_file, constant)
        constant.tofile(raw_file)
        del constant
        times = {
            "edgert.load(path)": median_ms(lambda: edgert.load(program_file)),
            "edgert.load(bytes)": median_ms(lambda: edgert.load(data)),
            "numpy.load(.npy)": median_ms(lambda: np.load(npy_file)),
            "numpy.fromfile(raw)": median_ms(lambda: np.fromfile(raw_file, np.float32)),
            "numpy.load(mmap_mode='r')": median_ms(lambda: np.load(npy_file, mmap_mode="r")),
        }
        program = edgert.load(program_file)
        print(f"one {arguments.mib} MiB float32 constant, format version "
              f"{arguments.format_version}; constants: {program.memory_plan.constants}")
        for name, milliseconds in times.items():
            print(f"  {name:28s} {milliseconds:9.2f} ms")
        _, output = program.run([np.ones(16, np.float32)])
        expected = np.fromfile(raw_file, np.float32)
        assert np.array_equal(output, expected), "the mapped constant differs from the file"
    reference = times["numpy.load(.npy)"]
    mapped = times["edgert.load(path)"]
    met = mapped < TARGET_MS
    print(f"edgert.load(path) {mapped:.2f} ms = {mapped / reference:.3f} x numpy.load; "
          f"target < {TARGET_MS:.0f} ms: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
