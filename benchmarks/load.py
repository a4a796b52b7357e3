"""Loading a program with one 256 MiB constant against numpy loading the same bytes, in one
process: ``edgert.load(path)`` (the file is mapped, the constant read in place),
``edgert.load(bytes)`` (the bytes object aliased), ``numpy.load`` of an .npy file,
``numpy.fromfile`` of the raw bytes, and ``numpy.load(mmap_mode="r")`` (numpy's own mapping).
The files are written first, so every reader finds them in the page cache; each is timed as
the median of SAMPLES loads. Prints the times in ms and whether edgert met its target.

    python benchmarks/load.py [--prefix build/linux-x86_64-cpu/install] [--mib 256]

After the timing, the loaded program is run once and its output compared with the constant:
the mapped bytes are what numpy read.

``--scaling`` measures instead, for programs of 64, 128 and 256 MiB (one constant each),
each loaded in a fresh process: the peak resident memory ``edgert.load(path)`` adds (the
process's high-water mark, reset just before the load, less its resident size then) against
the file's size (target at most 1.2x), and the load time per MiB (near-linear: the same at
every size).

    python benchmarks/load.py --scaling [--prefix ...]
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


RSS_TARGET = 1.2
SCALING_MIB = (64, 128, 256)

# Run in a fresh process per file: the peak resident memory of loading it, and the time.
_MEASURE = """
import sys, time
import edgert, numpy

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024

before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # resets VmHWM to the current resident size
start = time.perf_counter()
program = edgert.load(sys.argv[1])
seconds = time.perf_counter() - start
print(status("VmHWM") - before, seconds)
"""


def scaling(prefix: Path) -> int:
    """Peak RSS and time of edgert.load(path) against the file's size, at SCALING_MIB."""
    import os
    import subprocess

    sys.path.insert(0, str(prefix))
    env = {**os.environ, "PYTHONPATH": str(prefix)}
    worst = 0.0
    print("file        peak RSS added   / file size   load time   ms per MiB")
    with tempfile.TemporaryDirectory(prefix="edgert-load-") as folder:
        for mib in SCALING_MIB:
            path = Path(folder) / f"constant-{mib}.edgert"
            path.write_bytes(constant_program(np.arange(mib << 18, dtype=np.float32), 2))
            size = path.stat().st_size
            runs = []
            for _ in range(SAMPLES):
                output = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], env=env,
                                        capture_output=True, text=True, check=True).stdout
                peak, seconds = output.split()
                runs.append((int(peak), float(seconds)))
            peak = statistics.median(run[0] for run in runs)
            seconds = statistics.median(run[1] for run in runs)
            worst = max(worst, peak / size)
            print(f"{size / 2**20:6.0f} MiB {peak / 2**20:10.1f} MiB {peak / size:12.3f}x "
                  f"{seconds * 1e3:9.1f} ms {seconds * 1e3 / (size / 2**20):10.3f}")
    met = worst <= RSS_TARGET
    print(f"worst peak RSS / file size {worst:.3f}x; target <= {RSS_TARGET}x: "
          f"{'met' if met else 'NOT met'}")
    return 0 if met else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX,
                        help="an installed tree holding the edgert package")
    parser.add_argument("--mib", type=int, default=256, help="size of the constant in MiB")
    parser.add_argument("--format-version", type=int, choices=(1, 2), default=2,
                        help="program format version to write (1: no checksum to check at load)")
    parser.add_argument("--scaling", action="store_true",
                        help="peak RSS and load time against the file size, at 3 sizes")
    arguments = parser.parse_args()
    if arguments.scaling:
        return scaling(arguments.prefix)
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
