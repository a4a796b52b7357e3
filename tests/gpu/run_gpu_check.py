"""GPU check of a CUDA wheel (cu12 or cu13): install it into a clean venv, run the example
model on the GPU through the "cuda" delegate and compare with the CPU kernels.

    python tests/gpu/run_gpu_check.py [--wheel dist/edgert_cu12-*.whl]

Needs an NVIDIA GPU and driver; fits in 5 minutes (venv + install + a few runs). Tolerance:
rtol 1e-4, atol 1e-5 (the GPU sums in the same order but may contract into FMAs and uses its
own expf). Exits non-zero with a one-line reason on any failure; prints a JSON summary."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RTOL, ATOL = 1e-4, 1e-5

# Runs inside the clean venv: nothing from the repository is importable there.
INNER = r'''
import json, sys
from pathlib import Path
import numpy as np
import edgert
from edgert.export import ProgramBuilder

RTOL, ATOL = float(sys.argv[1]), float(sys.argv[2])

def example_model():
    path = Path(edgert.__file__).parent / "models" / "mlp.edgert"
    if path.exists():
        return path.read_bytes()
    rng = np.random.RandomState(0)
    b = ProgramBuilder()
    h = b.input("float32", (-1, 16))
    for i, (k, n) in enumerate(((16, 32), (32, 32), (32, 8))):
        h = b.op("edgert::linear", [h, b.constant(rng.randn(n, k).astype(np.float32)),
                                    b.constant(rng.randn(n).astype(np.float32))])
        h = b.op("edgert::softmax", [h], {"axis": -1}) if i == 2 else b.op("edgert::relu", [h])
    b.output(h)
    return b.to_bytes()

def add_model():
    b = ProgramBuilder()
    x, y = b.input("float32", (4, 1, 8)), b.input("float32", (3, 8))
    b.output(b.op("edgert::softmax", [b.op("edgert::add", [x, y])], {"axis": 1}))
    return b.to_bytes()

def compare(data, inputs):
    cpu, gpu = edgert.load(data), edgert.load(data)
    cpu.set_backends([])
    gpu.set_backends(["cuda"])
    expected, got = cpu.run(inputs), gpu.run(inputs)
    delegated = gpu.delegated_nodes("cuda")
    assert delegated > 0, "the cuda backend ran no node"
    worst = 0.0
    for e, g in zip(expected, got):
        assert e.shape == g.shape, f"shape {g.shape} != {e.shape}"
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)
        worst = max(worst, float(np.max(np.abs(g - e))) if e.size else 0.0)
    return {"delegated_nodes": delegated, "max_abs_difference": worst}

def prepared_once(data, inputs):
    """A second run of a prepared program uploads its inputs only, never the weights."""
    import ctypes, time
    library = ctypes.CDLL(str(Path(edgert.lib_dir()) / "libedgert_backend_cuda.so"))
    copied = library.edgert_backend_cuda_copied_bytes
    copied.restype = ctypes.c_ulonglong
    start = time.perf_counter()
    program = edgert.load(data)
    program.set_backends(["cuda"])
    program.run(inputs)
    first = time.perf_counter() - start
    before, before_down = copied(0), copied(1)
    start = time.perf_counter()
    outputs = program.run(inputs)
    second = time.perf_counter() - start
    uploaded, downloaded = copied(0) - before, copied(1) - before_down
    return {"second_run_uploaded_bytes": uploaded, "input_bytes": sum(x.nbytes for x in inputs),
            "second_run_downloaded_bytes": downloaded,
            "output_bytes": sum(y.nbytes for y in outputs),
            "first_run_s": first, "second_run_s": second,
            "speedup": first / second if second else None}

rng = np.random.RandomState(1)
model = example_model()
program = edgert.load(model)
shape = [4 if d < 0 else d for d in program.input_info[0].shape]
summary = {"backends": [b.name for b in edgert.backends()],
           "mlp": compare(model, [rng.randn(*shape).astype(np.float32)]),
           "prepared_once": prepared_once(model, [rng.randn(*shape).astype(np.float32)]),
           "add_softmax": compare(add_model(), [rng.randn(4, 1, 8).astype(np.float32),
                                               rng.randn(3, 8).astype(np.float32)])}
print(json.dumps(summary))
'''


def find_wheel() -> Path:
    wheels = sorted((ROOT / "dist").glob("edgert_cu1*.whl"))
    if not wheels:
        raise SystemExit("no CUDA wheel in dist/: build one with `python -m release build "
                         "--platform linux --variant cu12` or pass --wheel")
    return wheels[-1]


def run(command: list[str], what: str, timeout: float) -> str:
    completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                               check=False)
    if completed.returncode != 0:
        tail = (completed.stdout + completed.stderr).strip().splitlines()[-15:]
        raise SystemExit(f"{what} failed (exit {completed.returncode}):\n" + "\n".join(tail))
    return completed.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path)
    arguments = parser.parse_args()
    wheel = (arguments.wheel or find_wheel()).resolve()
    with tempfile.TemporaryDirectory(prefix="edgert-gpu-") as folder:
        venv = Path(folder) / "venv"
        run([sys.executable, "-m", "venv", str(venv)], "creating the venv", 60)
        python = str(venv / "bin" / "python")
        run([python, "-m", "pip", "install", "--quiet", str(wheel)],
            f"pip install {wheel.name}", 180)
        print(run([python, "-c", INNER, str(RTOL), str(ATOL)], "the GPU comparison", 60).strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
