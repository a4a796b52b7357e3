"""GPU check of a CUDA wheel (cu12 or cu13): install it into a clean venv, run the example
model on the GPU through the "cuda" delegate and compare with the CPU kernels.

    python tests/gpu/run_gpu_check.py [--wheel dist/edgert_cu12-*.whl]

A GPU machine that reaches no package index runs it offline from a wheelhouse prepared on
a machine that does (the CUDA wheels, numpy and NVIDIA's runtime wheels for the GPU
machine's Python, and programs exported from PyTorch to time the delegate on):

    python tests/gpu/run_gpu_check.py --prepare-wheelhouse wheelhouse [--python-version 3.12]
    python tests/gpu/run_gpu_check.py --wheelhouse wheelhouse     # on the GPU machine

The second command checks every CUDA wheel in the folder, installing nothing from the
network, and times each program on the "cuda" delegate against the CPU kernels.

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

def timed(function):
    import time
    function()
    times = []
    for _ in range(20):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]

def exported_programs(folder):
    """Programs exported from PyTorch (prepared with --prepare-wheelhouse): the delegate's
    nodes against the CPU kernels, and the time of a run on each."""
    results = {}
    for path in sorted(Path(folder).glob("*.edgert")):
        data = path.read_bytes()
        inputs = list(np.load(path.with_suffix(".npz")).values())
        cpu, gpu = edgert.load(data), edgert.load(data)
        cpu.set_backends([])
        expected, got = cpu.run(inputs), gpu.run(inputs)
        for e, g in zip(expected, got):
            scale = max(1.0, float(np.abs(e).max()))
            np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL * scale)
        results[path.stem] = {"delegated_nodes": gpu.delegated_nodes("cuda"),
                              "cpu_ms": timed(lambda: cpu.run(inputs)) * 1e3,
                              "default_backends_ms": timed(lambda: gpu.run(inputs)) * 1e3}
    return results

rng = np.random.RandomState(1)
model = example_model()
program = edgert.load(model)
shape = [4 if d < 0 else d for d in program.input_info[0].shape]
summary = {"backends": [b.name for b in edgert.backends()],
           "mlp": compare(model, [rng.randn(*shape).astype(np.float32)]),
           "prepared_once": prepared_once(model, [rng.randn(*shape).astype(np.float32)]),
           "add_softmax": compare(add_model(), [rng.randn(4, 1, 8).astype(np.float32),
                                               rng.randn(3, 8).astype(np.float32)])}
if len(sys.argv) > 3:
    summary["exported"] = exported_programs(sys.argv[3])
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


def check(wheel: Path, *, wheelhouse: Path | None) -> str:
    """Installs ``wheel`` into a fresh venv (from ``wheelhouse`` alone when given) and runs
    the comparison there; returns its JSON line."""
    with tempfile.TemporaryDirectory(prefix="edgert-gpu-") as folder:
        venv = Path(folder) / "venv"
        run([sys.executable, "-m", "venv", str(venv)], "creating the venv", 60)
        python = str(venv / "bin" / "python")
        offline = ["--no-index", "--find-links", str(wheelhouse)] if wheelhouse else []
        run([python, "-m", "pip", "install", "--quiet", *offline, str(wheel)],
            f"pip install {wheel.name}", 180)
        extra = [str(wheelhouse / "programs")] if wheelhouse else []
        return run([python, "-c", INNER, str(RTOL), str(ATOL), *extra],
                   f"the GPU comparison of {wheel.name}", 120).strip()


def requirements(wheel: Path) -> list[str]:
    """The wheel's Requires-Dist lines (numpy, the NVIDIA runtime), markers dropped."""
    import zipfile
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(metadata).decode().splitlines()
    return [line.split(":", 1)[1].split(";")[0].strip() for line in lines
            if line.startswith("Requires-Dist:") and "extra ==" not in line]


def prepare_wheelhouse(folder: Path, python_version: str) -> None:
    """Everything the offline check needs: the CUDA wheels of dist/, their dependencies for
    the GPU machine's Python, and programs exported from PyTorch with example inputs."""
    import shutil
    wheels = sorted((ROOT / "dist").glob("edgert_cu1*.whl"))
    if not wheels:
        find_wheel()  # the one-line error saying how to build one
    folder.mkdir(parents=True, exist_ok=True)
    needed = sorted({r for wheel in wheels for r in requirements(wheel)})
    platforms = [f"--platform=manylinux_2_{n}_x86_64" for n in (17, 27, 28)]
    run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--no-deps",
         f"--python-version={python_version}", "--implementation=cp", *platforms,
         "-d", str(folder), *needed], "downloading " + ", ".join(needed), 300)
    for wheel in wheels:
        shutil.copy2(wheel, folder / wheel.name)
    export_programs(folder / "programs")
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    print(f"wheelhouse {folder}: {len(list(folder.glob('*.whl')))} wheels, "
          f"{size / 2**20:.1f} MiB")


def export_programs(folder: Path) -> None:
    """The models of tests/native/torch_models.py at batch 64, with inputs."""
    import numpy as np
    import torch

    tree = ROOT / "build" / "linux-x86_64-cpu" / "install"
    if not (tree / "edgert").is_dir():
        raise SystemExit(f"{tree} holds no edgert: build it first with `python -m release build "
                         "--platform linux --until install`")
    sys.path[:0] = [str(tree), str(ROOT)]
    from edgert.export import from_torch

    from tests.native.torch_models import CASES
    folder.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        if case.name not in ("mlp", "cnn", "encoder", "decoder"):
            continue
        data = from_torch(case.make(), case.example, dynamic_shapes=case.dynamic)
        (folder / f"{case.name}.edgert").write_bytes(data)
        batch = [torch.cat([t] * (64 // t.shape[0] + 1))[:64] for t in case.example]
        np.savez(folder / f"{case.name}.npz", *[t.numpy() for t in batch])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path)
    parser.add_argument("--wheelhouse", type=Path,
                        help="check every CUDA wheel in this folder, installing from it alone")
    parser.add_argument("--prepare-wheelhouse", type=Path, metavar="FOLDER",
                        help="write the folder --wheelhouse needs (run where the index is)")
    parser.add_argument("--python-version", default="3.12",
                        help="the GPU machine's Python, for --prepare-wheelhouse")
    arguments = parser.parse_args()
    if arguments.prepare_wheelhouse:
        prepare_wheelhouse(arguments.prepare_wheelhouse.resolve(), arguments.python_version)
        return 0
    if arguments.wheelhouse:
        folder = arguments.wheelhouse.resolve()
        wheels = sorted(folder.glob("edgert_cu1*.whl"))
        if not wheels:
            raise SystemExit(f"no CUDA wheel in {folder}: prepare it with --prepare-wheelhouse")
        lines = [check(wheel, wheelhouse=folder) for wheel in wheels]
        print("\n".join(lines))
        return 0
    print(check((arguments.wheel or find_wheel()).resolve(), wheelhouse=None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
